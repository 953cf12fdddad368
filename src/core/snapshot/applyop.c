/* SPDX-License-Identifier: MIT */
#include "core/snapshot/applyop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "core/snapshot/applyfs.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/applycheck.h"
#include "core/store/jsonutil.h"

static int applyop_chmod_at(struct dryrun_dir *d, const char *path, mode_t mode)
{
	/* fchmodat() has no AT_SYMLINK_NOFOLLOW on Linux; the change set only
	 * holds mode changes of files and directories. */
	cleanup_close int target = applycheck_open_in_place(d, path);
	if (target < 0)
		return target;
	return applyfs_mode_set_fd(target, mode);
}

/* The object itself, never a symlink's target. */
static int applyop_chown_at(struct dryrun_dir *d, const char *path, uid_t uid, gid_t gid)
{
	cleanup_close int target = applycheck_open_in_place(d, path);
	if (target < 0)
		return target;
	return fchownat(target, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static const char *const applyop_kinds[_APPLYOP_KIND_MAX] = {
	[APPLYOP_RENAME] = "rename",	 [APPLYOP_BACKUP] = "backup", [APPLYOP_CREATE] = "create",
	[APPLYOP_EXCHANGE] = "exchange", [APPLYOP_CHMOD] = "chmod",   [APPLYOP_XATTRS] = "xattrs",
	[APPLYOP_CHOWN] = "chown",
};

const char *applyop_kind_name(enum applyop_kind kind)
{
	return (unsigned)kind < _APPLYOP_KIND_MAX ? applyop_kinds[kind] : NULL;
}

static int applyop_strdup(json_t *o, const char *key, char **ret)
{
	const char *s = jsonutil_str(o, key);

	*ret = s ? strdup(s) : NULL;
	return !s || *ret ? 0 : -ENOMEM;
}

/* A list the journal's check accepted (dryrun_dir_meta_valid(): a name
 * and a base64 value each), names decoded: taken as it is. */
static int applyop_xattrs_from_json(json_t *list, struct changeset_xattr_list *ret)
{
	size_t i;
	json_t *x;

	if (!list)
		return 0;
	ret->items = calloc(json_array_size(list) + 1, sizeof(*ret->items));
	if (!ret->items)
		return -ENOMEM;
	json_array_foreach(list, i, x) {
		struct changeset_xattr *a = &ret->items[ret->n++];
		if (applyop_strdup(x, "name", &a->name.bytes) < 0 ||
		    applyop_strdup(x, "base64", &a->base64) < 0)
			return -ENOMEM;
	}
	return 0;
}

int applyop_from_json(json_t *o, struct applyop *ret)
{
	const char *kind = jsonutil_str(o, "op");
	const char *mode = jsonutil_str(o, "mode");
	size_t k;

	*ret = (struct applyop){ 0 };
	for (k = 0; k < _APPLYOP_KIND_MAX && (!kind || strcmp(kind, applyop_kinds[k])); k++)
		;
	if (k == _APPLYOP_KIND_MAX)
		return -EINVAL;
	ret->kind = (enum applyop_kind)k;
	ret->has_mode = mode != NULL;
	ret->mode = applyfs_parse_mode(mode);
	ret->old_mode = applyfs_parse_mode(jsonutil_str(o, "old_mode"));
	ret->uid = dryrun_dir_id(o, "uid");
	ret->gid = dryrun_dir_id(o, "gid");
	ret->old_uid = dryrun_dir_id(o, "old_uid");
	ret->old_gid = dryrun_dir_id(o, "old_gid");
	ret->new_ino = json_integer_value(json_object_get(o, "new_ino"));
	if (applyop_strdup(o, "path", &ret->path) < 0 || applyop_strdup(o, "from", &ret->from) < 0 ||
	    applyop_strdup(o, "staged", &ret->staged) < 0 ||
	    applyop_strdup(o, "backup", &ret->backup) < 0 ||
	    applyop_xattrs_from_json(json_object_get(o, "xattrs"), &ret->xattrs) < 0 ||
	    applyop_xattrs_from_json(json_object_get(o, "old_xattrs"), &ret->old_xattrs) < 0)
		return -ENOMEM;
	return 0;
}

static int applyop_set_str(json_t *o, const char *key, const char *bytes)
{
	/* exact bytes, unchecked (json_pack would refuse one that is not
	 * UTF-8): the journal encodes them (changeset_encode_bytes) */
	return bytes && json_object_set_new(o, key, json_stringn_nocheck(bytes, strlen(bytes))) == 0
		       ? 0
		       : -ENOMEM;
}

static int applyop_set_mode(json_t *o, const char *key, mode_t mode)
{
	char text[16];

	snprintf(text, sizeof(text), "%04o", (unsigned)(mode & 07777));
	return json_object_set_new(o, key, json_string(text)) == 0 ? 0 : -ENOMEM;
}

/* The keys after "op" and "path", in the order the journal has always
 * written them. */
static int applyop_set_rest(json_t *o, const struct applyop *op)
{
	switch (op->kind) {
	case APPLYOP_BACKUP:
		return applyop_set_str(o, "backup", op->backup);
	case APPLYOP_CREATE:
		return applyop_set_str(o, "staged", op->staged);
	case APPLYOP_EXCHANGE:
		return applyop_set_str(o, "staged", op->staged) < 0 ||
				       applyop_set_str(o, "backup", op->backup) < 0 ||
				       json_object_set_new(o, "new_ino", json_integer(op->new_ino)) < 0
			       ? -ENOMEM
			       : 0;
	case APPLYOP_CHOWN:
		return json_object_set_new(o, "uid", json_integer(op->uid)) < 0 ||
				       json_object_set_new(o, "gid", json_integer(op->gid)) < 0 ||
				       json_object_set_new(o, "old_uid", json_integer(op->old_uid)) < 0 ||
				       json_object_set_new(o, "old_gid", json_integer(op->old_gid)) < 0
			       ? -ENOMEM
			       : 0;
	case APPLYOP_XATTRS:
		if (op->has_mode && applyop_set_mode(o, "mode", op->mode) < 0)
			return -ENOMEM;
		return json_object_set_new(o, "xattrs", changeset_xattr_list_to_json(&op->xattrs)) < 0 ||
				       json_object_set_new(o, "old_xattrs",
							   changeset_xattr_list_to_json(
								   &op->old_xattrs)) < 0
			       ? -ENOMEM
			       : 0;
	case APPLYOP_CHMOD:
		return applyop_set_mode(o, "mode", op->mode) < 0 ||
				       applyop_set_mode(o, "old_mode", op->old_mode) < 0
			       ? -ENOMEM
			       : 0;
	default:
		return 0;
	}
}

json_t *applyop_to_json(const struct applyop *op)
{
	const char *kind = applyop_kind_name(op->kind);
	cleanup_with(json_decrefp) json_t *o = kind ? json_pack("{s:s}", "op", kind) : NULL;

	if (!o)
		return NULL;
	if (op->kind == APPLYOP_RENAME && applyop_set_str(o, "from", op->from) < 0)
		return NULL;
	if (applyop_set_str(o, "path", op->path) < 0 || applyop_set_rest(o, op) < 0)
		return NULL;
	/* the mode a lift recorded, last where the planner noted it */
	bool lift_last = op->kind == APPLYOP_RENAME || op->kind == APPLYOP_BACKUP ||
			 op->kind == APPLYOP_CREATE;
	if (lift_last && op->has_mode && applyop_set_mode(o, "mode", op->mode) < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct applyop *applyop_list_add(struct applyop_list *list, enum applyop_kind kind)
{
	struct applyop *items = realloc(list->items, (list->n + 1) * sizeof(*items));

	if (!items)
		return NULL;
	list->items = items;
	items[list->n] = (struct applyop){ .kind = kind };
	return &items[list->n++];
}

void applyop_list_release(struct applyop_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		struct applyop *op = &list->items[i];
		free(op->path);
		free(op->from);
		free(op->staged);
		free(op->backup);
		changeset_xattr_list_release(&op->xattrs);
		changeset_xattr_list_release(&op->old_xattrs);
	}
	free(list->items);
	*list = (struct applyop_list){ 0 };
}

int applyop_do(struct dryrun_dir *d, const struct applyop *op)
{
	const char *path = op->path;

	switch (op->kind) {
	case APPLYOP_RENAME:
		return applyfs_move_lifted(d->ws_fd, op->from, d->ws_fd, path, RENAME_NOREPLACE);
	case APPLYOP_BACKUP:
		return applyfs_move_lifted(d->ws_fd, path, d->fd, op->backup, RENAME_NOREPLACE);
	case APPLYOP_CHMOD:
		return applyop_chmod_at(d, path, op->mode);
	case APPLYOP_XATTRS:
		return applycheck_xattrs_set_at(d, path, &op->xattrs);
	case APPLYOP_CHOWN:
		return applyop_chown_at(d, path, op->uid, op->gid);
	default:
		break;
	}
	const char *staged_name;
	cleanup_close int staged_dir = fd_open_parent(d->fd, op->staged, O_PATH, &staged_name);
	if (staged_dir < 0)
		return staged_dir;
	applyfs_strip_overlay_xattrs(staged_dir, staged_name, 0);
	if (op->kind == APPLYOP_CREATE)
		return applyfs_move_lifted(d->fd, op->staged, d->ws_fd, path, RENAME_NOREPLACE);
	/* exchange: the new object in, the old one out to the backup */
	int r = applyfs_move_at(d->fd, op->staged, d->ws_fd, path, RENAME_EXCHANGE);
	if (r == 0)
		r = applyfs_move_at(d->fd, op->staged, d->fd, op->backup, RENAME_NOREPLACE);
	return r;
}

static bool applyop_exists_at(int dir_fd, const char *path, struct stat *st)
{
	struct stat ignored;

	return applyfs_stat_at(dir_fd, path, st ? st : &ignored) == 0;
}

/* The mode a lift recorded, for applyfs_lift_repair(); NULL when none. */
static const mode_t *applyop_lift(const struct applyop *op)
{
	return op->has_mode ? &op->mode : NULL;
}

/* Undoing an operation that moved an object (rename, backup, create). */
static int applyop_undo_move(struct dryrun_dir *d, const struct applyop *op)
{
	const char *path = op->path;
	int r = 0;

	switch (op->kind) {
	case APPLYOP_RENAME:
		if (applyop_exists_at(d->ws_fd, path, NULL) &&
		    !applyop_exists_at(d->ws_fd, op->from, NULL)) {
			r = applyfs_lift_repair(d->ws_fd, path, applyop_lift(op));
			if (r == 0)
				r = applyfs_move_lifted(d->ws_fd, path, d->ws_fd, op->from,
							RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->ws_fd, op->from, applyop_lift(op));
	case APPLYOP_BACKUP:
		if (applyop_exists_at(d->fd, op->backup, NULL)) {
			r = applyfs_lift_repair(d->fd, op->backup, applyop_lift(op));
			if (r == 0)
				r = applyfs_move_lifted(d->fd, op->backup, d->ws_fd, path,
							RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->ws_fd, path, applyop_lift(op));
	default: /* create */
		if (!applyop_exists_at(d->fd, op->staged, NULL) &&
		    applyop_exists_at(d->ws_fd, path, NULL)) {
			r = applyfs_lift_repair(d->ws_fd, path, applyop_lift(op));
			if (r == 0)
				r = applyfs_move_lifted(d->ws_fd, path, d->fd, op->staged,
							RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->fd, op->staged, applyop_lift(op));
	}
}

int applyop_undo(struct dryrun_dir *d, const struct applyop *op)
{
	const char *path = op->path;
	struct stat st;
	int r = 0;

	switch (op->kind) {
	case APPLYOP_RENAME:
	case APPLYOP_BACKUP:
	case APPLYOP_CREATE:
		return applyop_undo_move(d, op);
	case APPLYOP_CHMOD:
		return applyop_exists_at(d->ws_fd, path, NULL)
			       ? applyop_chmod_at(d, path, op->old_mode)
			       : 0;
	case APPLYOP_XATTRS:
		if (!applyop_exists_at(d->ws_fd, path, NULL))
			return 0;
		r = applyfs_lift_repair(d->ws_fd, path, applyop_lift(op));
		return r < 0 ? r : applycheck_xattrs_set_at(d, path, &op->old_xattrs);
	case APPLYOP_CHOWN:
		if (!applyop_exists_at(d->ws_fd, path, &st))
			return 0;
		r = applyop_chown_at(d, path, op->old_uid, op->old_gid);
		/* The chown back clears set-id bits: the mode before it (the
		 * later ops already undone) is the workspace's. */
		if (r == 0 && !S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)))
			r = applyop_chmod_at(d, path, st.st_mode & 07777);
		return r;
	default:
		break;
	}
	/* exchange: bring the old object back to staged, then swap again */
	if (applyop_exists_at(d->fd, op->backup, NULL))
		r = applyfs_move_at(d->fd, op->backup, d->fd, op->staged, RENAME_NOREPLACE);
	if (r == 0 && applyop_exists_at(d->ws_fd, path, &st) && (int64_t)st.st_ino == op->new_ino)
		r = applyfs_move_at(d->fd, op->staged, d->ws_fd, path, RENAME_EXCHANGE);
	return r;
}

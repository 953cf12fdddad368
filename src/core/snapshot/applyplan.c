/* SPDX-License-Identifier: MIT */
#include "core/snapshot/applyplan.h"

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
#include "core/store/jsonutil.h"

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A created or type-changed directory: what lies below it moves with it. */
static bool applyplan_new_dir(const struct changeset_entry *e)
{
	return e->type == CHANGESET_TYPE_DIR &&
	       (e->change == CHANGESET_CREATED || e->change == CHANGESET_TYPE_CHANGED);
}

int applyplan_cover_build(struct dryrun_dir *d)
{
	size_t n = 0;

	d->new_dirs = calloc(d->cs->n_entries + 1, sizeof(*d->new_dirs));
	if (!d->new_dirs)
		return -ENOMEM;
	for (size_t i = 0; i < d->cs->n_entries; i++)
		if (applyplan_new_dir(&d->cs->entries[i]))
			d->new_dirs[n++] = d->cs->entries[i].path.bytes;
	qsort(d->new_dirs, n, sizeof(*d->new_dirs), compare_strings);
	d->n_new_dirs = n;
	return 0;
}

struct applyplan_cover_key {
	const char *s;
	size_t n;
};

/* A prefix of a path (s, n bytes) against a whole path, in strcmp order. */
static int compare_prefix(const void *key, const void *elem)
{
	const struct applyplan_cover_key *k = key;
	const char *p = *(const char *const *)elem;
	int r = strncmp(k->s, p, k->n);

	if (r != 0)
		return r;
	return p[k->n] == '\0' ? 0 : -1; /* p is longer: the prefix sorts first */
}

bool applyplan_covered(const struct dryrun_dir *d, const char *path)
{
	for (const char *slash = strchr(path, '/'); slash && d->n_new_dirs;
	     slash = strchr(slash + 1, '/')) {
		struct applyplan_cover_key k = { path, (size_t)(slash - path) };
		if (bsearch(&k, d->new_dirs, d->n_new_dirs, sizeof(*d->new_dirs), compare_prefix))
			return true;
	}
	return false;
}

/* An operation {"op": kind, key: value, ...} (NULL-terminated pairs). The
 * values are paths, kept as their exact bytes (json_pack would refuse one
 * that is not UTF-8); the journal encodes them (changeset_encode_bytes). */
static json_t *applyplan_op_new(const char *kind, ...)
{
	json_t *op = json_object();
	va_list ap;
	const char *key;

	if (!op || json_object_set_new(op, "op", json_string(kind)) < 0) {
		json_decref(op);
		return NULL;
	}
	va_start(ap, kind);
	while ((key = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		if (!value ||
		    json_object_set_new(op, key, json_stringn_nocheck(value, strlen(value))) < 0) {
			json_decref(op);
			op = NULL;
			break;
		}
	}
	va_end(ap);
	return op;
}

static int applyplan_op_append(json_t *ops, json_t *op)
{
	return op && json_array_append_new(ops, op) == 0 ? 0 : -ENOMEM;
}

/* Records in op the mode of dir_fd/path where the operation may lift the
 * owner's write bit on it (struct applyfs_lift): a directory it moves (dirs_only),
 * or an object whose attributes it sets, that the owner cannot write. */
static json_t *applyplan_op_note_mode(json_t *op, int dir_fd, const char *path, bool dirs_only)
{
	struct stat st;
	char mode[16];

	if (!op || applyfs_stat_at(dir_fd, path, &st) < 0 || (st.st_mode & S_IWUSR) ||
	    S_ISLNK(st.st_mode) || (dirs_only && !S_ISDIR(st.st_mode)))
		return op;
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	if (json_object_set_new(op, "mode", json_string(mode)) < 0)
		return json_decref(op), NULL;
	return op;
}

/* Deepest first, and the workspace root last of all. */
static int compare_path_desc(const void *a, const void *b)
{
	const char *x = jsonutil_str(*(json_t *const *)a, "path"),
		   *y = jsonutil_str(*(json_t *const *)b, "path");

	if (dryrun_dir_is_root(x) || dryrun_dir_is_root(y))
		return dryrun_dir_is_root(x) - dryrun_dir_is_root(y);
	return -strcmp(x, y);
}

static json_t *applyplan_op_set_id(json_t *op, const char *key, uint32_t id)
{
	if (op && json_object_set_new(op, key, json_integer(id)) < 0)
		return json_decref(op), NULL;
	return op;
}

/* Renames whose destination is not covered. */
static int applyplan_renames(struct dryrun_dir *d, json_t *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (e->change != CHANGESET_RENAMED || applyplan_covered(d, e->path.bytes))
			continue;
		int r = applyplan_op_append(ops,
					    applyplan_op_note_mode(applyplan_op_new("rename", "from",
										    e->from.bytes, "path",
										    e->path.bytes, NULL),
								   d->ws_fd, e->from.bytes, true));
		if (r < 0)
			return r;
	}
	return 0;
}

/* The old objects that go: into backup/N. */
static int applyplan_removals(struct dryrun_dir *d, json_t *ops, size_t *backups)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		const char *path = e->change == CHANGESET_RENAMED ? e->from.bytes : e->path.bytes;
		bool renamed_into_new_dir =
			e->change == CHANGESET_RENAMED && applyplan_covered(d, e->path.bytes);
		if (applyplan_covered(d, path))
			continue;
		if (e->change != CHANGESET_DELETED && e->change != CHANGESET_TYPE_CHANGED &&
		    !renamed_into_new_dir)
			continue;
		char backup[64];
		snprintf(backup, sizeof(backup), "backup/%zu", (*backups)++);
		int r = applyplan_op_append(ops,
					    applyplan_op_note_mode(applyplan_op_new("backup", "path",
										    path, "backup",
										    backup, NULL),
								   d->ws_fd, path, true));
		if (r < 0)
			return r;
	}
	return 0;
}

/* The new objects, sorted by path: parents first. */
static int applyplan_creations(struct dryrun_dir *d, json_t *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		const char *path = e->path.bytes;
		if (applyplan_covered(d, path) ||
		    (e->change != CHANGESET_CREATED && e->change != CHANGESET_TYPE_CHANGED))
			continue;
		char staged[PATH_MAX];
		snprintf(staged, sizeof(staged), "upper/%s", path);
		int r = applyplan_op_append(ops,
					    applyplan_op_note_mode(applyplan_op_new("create", "path",
										    path, "staged",
										    staged, NULL),
								   d->fd, staged, true));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Content swaps: the staged object exchanged in, the old one kept. */
static int applyplan_exchanges(struct dryrun_dir *d, json_t *ops, size_t *backups)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		const char *path = e->path.bytes;
		if (e->change != CHANGESET_MODIFIED)
			continue;
		char staged[PATH_MAX], backup[64];
		snprintf(staged, sizeof(staged), "upper/%s", path);
		snprintf(backup, sizeof(backup), "backup/%zu", (*backups)++);
		struct stat st;
		if (applyfs_stat_at(d->fd, staged, &st) < 0)
			return -ENOENT;
		json_t *op = applyplan_op_new("exchange", "path", path, "staged", staged, "backup",
					      backup, NULL);
		if (op && json_object_set_new(op, "new_ino", json_integer((json_int_t)st.st_ino)) < 0)
			op = (json_decref(op), NULL);
		int r = applyplan_op_append(ops, op);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Owners in place first: a chown clears set-id bits and file
 * capabilities, so the attributes and modes are set after it. */
static int applyplan_chowns(struct dryrun_dir *d, json_t *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (!changeset_entry_has(e, CHANGESET_KEY_OLD_UID) ||
		    !changeset_change_is_meta(e->change))
			continue;
		json_t *op = applyplan_op_new("chown", "path", e->path.bytes, NULL);
		op = applyplan_op_set_id(op, "uid", e->uid);
		op = applyplan_op_set_id(op, "gid", e->gid);
		op = applyplan_op_set_id(op, "old_uid", e->old_uid);
		op = applyplan_op_set_id(op, "old_gid", e->old_gid);
		int r = applyplan_op_append(ops, op);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Attributes in place, before any mode change (setting one needs write
 * access to the object). */
static int applyplan_xattrs(struct dryrun_dir *d, json_t *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		/* A created or modified object's `xattrs` came in with it; a
		 * meta change's unchanged ones are listed alone (version 4). */
		if (!changeset_entry_has(e, CHANGESET_KEY_OLD_XATTRS) ||
		    !changeset_change_is_meta(e->change))
			continue;
		json_t *op =
			applyplan_op_note_mode(applyplan_op_new("xattrs", "path", e->path.bytes, NULL),
					       d->ws_fd, e->path.bytes, false);
		if (op &&
		    (json_object_set_new(op, "xattrs", changeset_xattr_list_to_json(&e->xattrs)) < 0 ||
		     json_object_set_new(op, "old_xattrs",
					 changeset_xattr_list_to_json(&e->old_xattrs)) < 0))
			op = (json_decref(op), NULL);
		int r = applyplan_op_append(ops, op);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Mode changes, deepest first (a directory made read-only last). */
static int applyplan_chmods(struct dryrun_dir *d, json_t *ops)
{
	cleanup_with(json_decrefp) json_t *chmods = json_array();
	size_t i;
	json_t *c;

	if (!chmods)
		return -ENOMEM;
	for (i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		char mode[16], old_mode[16];
		if (e->change != CHANGESET_MODE_CHANGED)
			continue;
		snprintf(mode, sizeof(mode), "%04o", (unsigned)(e->mode & 07777));
		snprintf(old_mode, sizeof(old_mode), "%04o", (unsigned)(e->old_mode & 07777));
		int r = applyplan_op_append(chmods,
					    applyplan_op_new("chmod", "path", e->path.bytes, "mode",
							     mode, "old_mode", old_mode, NULL));
		if (r < 0)
			return r;
	}
	if (jsonutil_array_sort(chmods, compare_path_desc) < 0)
		return -ENOMEM;
	json_array_foreach(chmods, i, c)
		if (json_array_append(ops, c) < 0)
			return -ENOMEM;
	return 0;
}

int applyplan_ops(struct dryrun_dir *d, json_t **ret_ops)
{
	cleanup_with(json_decrefp) json_t *ops = json_array();
	size_t backups = 0;
	int r = ops ? 0 : -ENOMEM;

	if (r == 0)
		r = applyplan_renames(d, ops);
	if (r == 0)
		r = applyplan_removals(d, ops, &backups);
	if (r == 0)
		r = applyplan_creations(d, ops);
	if (r == 0)
		r = applyplan_exchanges(d, ops, &backups);
	if (r == 0)
		r = applyplan_chowns(d, ops);
	if (r == 0)
		r = applyplan_xattrs(d, ops);
	if (r == 0)
		r = applyplan_chmods(d, ops);
	if (r < 0)
		return r;
	*ret_ops = TAKE_PTR(ops);
	return 0;
}

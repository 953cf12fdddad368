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

int applyplan_cover_build(struct dryrun_dir *d)
{
	size_t i, n = 0;
	json_t *c;

	d->new_dirs = calloc(json_array_size(d->changes) + 1, sizeof(*d->new_dirs));
	if (!d->new_dirs)
		return -ENOMEM;
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		if (!strcmp(jsonutil_str(c, "type"), "dir") &&
		    (!strcmp(change, "created") || !strcmp(change, "type_changed")))
			d->new_dirs[n++] = jsonutil_str(c, "path");
	}
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
	for (const char *slash = strchr(path, '/'); slash && d->n_new_dirs; slash = strchr(slash + 1, '/')) {
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
		if (!value || json_object_set_new(op, key, json_stringn_nocheck(value, strlen(value))) < 0) {
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

/* Deepest first, and the workspace root last of all. */
/* Records in op the mode of dir_fd/path where the operation may lift the
 * owner's write bit on it (struct applyfs_lift): a directory it moves (dirs_only),
 * or an object whose attributes it sets, that the owner cannot write. */
static json_t *applyplan_op_note_mode(json_t *op, int dir_fd, const char *path, bool dirs_only)
{
	struct stat st;
	char mode[16];

	if (!op || applyfs_stat_at(dir_fd, path, &st) < 0 || (st.st_mode & S_IWUSR) || S_ISLNK(st.st_mode) ||
	    (dirs_only && !S_ISDIR(st.st_mode)))
		return op;
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	if (json_object_set_new(op, "mode", json_string(mode)) < 0)
		return json_decref(op), NULL;
	return op;
}

static int compare_path_desc(const void *a, const void *b)
{
	const char *x = jsonutil_str(*(json_t *const *)a, "path"), *y = jsonutil_str(*(json_t *const *)b, "path");

	if (dryrun_dir_is_root(x) || dryrun_dir_is_root(y))
		return dryrun_dir_is_root(x) - dryrun_dir_is_root(y);
	return -strcmp(x, y);
}

int applyplan_ops(struct dryrun_dir *d, json_t **ret_ops)
{
	cleanup_with(json_decrefp) json_t *ops = json_array();
	cleanup_with(json_decrefp) json_t *chmods = json_array();
	size_t i, backups = 0;
	json_t *c;
	int r = ops && chmods ? 0 : -ENOMEM;

	json_array_foreach(d->changes, i, c) { /* renames whose destination is not covered */
		if (r == 0 && !strcmp(jsonutil_str(c, "change"), "renamed") && !applyplan_covered(d, jsonutil_str(c, "path")))
			r = applyplan_op_append(ops, applyplan_op_note_mode(applyplan_op_new("rename", "from", jsonutil_str(c, "from"), "path",
								       jsonutil_str(c, "path"), NULL),
							d->ws_fd, jsonutil_str(c, "from"), true));
	}
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		const char *path = !strcmp(change, "renamed") ? jsonutil_str(c, "from") : jsonutil_str(c, "path");
		bool renamed_into_new_dir = !strcmp(change, "renamed") && applyplan_covered(d, jsonutil_str(c, "path"));
		if (r < 0 || applyplan_covered(d, path))
			continue;
		if (!strcmp(change, "deleted") || !strcmp(change, "type_changed") || renamed_into_new_dir) {
			char backup[64];
			snprintf(backup, sizeof(backup), "backup/%zu", backups++);
			r = applyplan_op_append(ops, applyplan_op_note_mode(applyplan_op_new("backup", "path", path, "backup", backup, NULL),
							d->ws_fd, path, true));
		}
	}
	json_array_foreach(d->changes, i, c) { /* sorted by path: parents first */
		const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
		if (r < 0 || applyplan_covered(d, path))
			continue;
		if (!strcmp(change, "created") || !strcmp(change, "type_changed")) {
			char staged[PATH_MAX];
			snprintf(staged, sizeof(staged), "upper/%s", path);
			r = applyplan_op_append(ops, applyplan_op_note_mode(applyplan_op_new("create", "path", path, "staged", staged, NULL),
							d->fd, staged, true));
		}
	}
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
		if (r < 0 || strcmp(change, "modified") != 0)
			continue;
		char staged[PATH_MAX], backup[64];
		snprintf(staged, sizeof(staged), "upper/%s", path);
		snprintf(backup, sizeof(backup), "backup/%zu", backups++);
		struct stat st;
		if (applyfs_stat_at(d->fd, staged, &st) < 0)
			return -ENOENT;
		json_t *op = applyplan_op_new("exchange", "path", path, "staged", staged, "backup", backup, NULL);
		if (op && json_object_set_new(op, "new_ino", json_integer((json_int_t)st.st_ino)) < 0)
			op = (json_decref(op), NULL);
		r = applyplan_op_append(ops, op);
	}
	/* Owners in place first: a chown clears set-id bits and file
	 * capabilities, so the attributes and modes are set after it. */
	json_array_foreach(d->changes, i, c) {
		json_t *op;
		if (r < 0 || !json_object_get(c, "old_uid") || !dryrun_dir_is_meta(jsonutil_str(c, "change")))
			continue;
		op = applyplan_op_new("chown", "path", jsonutil_str(c, "path"), NULL);
		if (op && (json_object_set(op, "uid", json_object_get(c, "uid")) < 0 ||
			   json_object_set(op, "gid", json_object_get(c, "gid")) < 0 ||
			   json_object_set(op, "old_uid", json_object_get(c, "old_uid")) < 0 ||
			   json_object_set(op, "old_gid", json_object_get(c, "old_gid")) < 0))
			op = (json_decref(op), NULL);
		r = applyplan_op_append(ops, op);
	}
	/* Attributes in place, before any mode change (setting one needs
	 * write access to the object). */
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		json_t *op;
		/* A created or modified object's `xattrs` came in with it; a
		 * meta change's unchanged ones are listed alone (version 4). */
		if (r < 0 || !json_object_get(c, "old_xattrs") || !dryrun_dir_is_meta(change))
			continue;
		op = applyplan_op_note_mode(applyplan_op_new("xattrs", "path", jsonutil_str(c, "path"), NULL), d->ws_fd,
				  jsonutil_str(c, "path"), false);
		if (op && (json_object_set(op, "xattrs", json_object_get(c, "xattrs")) < 0 ||
			   json_object_set(op, "old_xattrs", json_object_get(c, "old_xattrs")) < 0))
			op = (json_decref(op), NULL);
		r = applyplan_op_append(ops, op);
	}
	json_array_foreach(d->changes, i, c)
		if (r == 0 && !strcmp(jsonutil_str(c, "change"), "mode_changed"))
			r = applyplan_op_append(chmods, applyplan_op_new("chmod", "path", jsonutil_str(c, "path"), "mode",
						       jsonutil_str(c, "mode"), "old_mode",
						       jsonutil_str(c, "old_mode"), NULL));
	if (r == 0)
		r = jsonutil_array_sort(chmods, compare_path_desc);
	json_array_foreach(chmods, i, c)
		if (r == 0)
			r = json_array_append(ops, c) == 0 ? 0 : -ENOMEM;
	if (r < 0)
		return r;
	*ret_ops = TAKE_PTR(ops);
	return 0;
}

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
#include "core/store/statepath.h"

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

/* A new operation on path (and from, staged, backup where given: exact
 * bytes), or NULL when out of memory. */
static struct applyop *applyplan_op_new(struct applyop_list *ops, enum applyop_kind kind,
					const char *path, const char *from, const char *staged,
					const char *backup)
{
	struct applyop *op = applyop_list_add(ops, kind);

	if (!op)
		return NULL;
	op->path = strdup(path);
	op->from = from ? strdup(from) : NULL;
	op->staged = staged ? strdup(staged) : NULL;
	op->backup = backup ? strdup(backup) : NULL;
	if (!op->path || (from && !op->from) || (staged && !op->staged) || (backup && !op->backup))
		return NULL;
	return op;
}

/* Records in op the mode of dir_fd/path where the operation may lift the
 * owner's write bit on it (struct applyfs_lift): a directory it moves (dirs_only),
 * or an object whose attributes it sets, that the owner cannot write. */
static int applyplan_op_note_mode(struct applyop *op, int dir_fd, const char *path, bool dirs_only)
{
	struct stat st;

	if (!op)
		return -ENOMEM;
	if (applyfs_stat_at(dir_fd, path, &st) < 0 || (st.st_mode & S_IWUSR) ||
	    S_ISLNK(st.st_mode) || (dirs_only && !S_ISDIR(st.st_mode)))
		return 0;
	op->has_mode = true;
	op->mode = st.st_mode & 07777;
	return 0;
}

/* Deepest first, and the workspace root last of all. */
static int compare_path_desc(const void *a, const void *b)
{
	const char *x = ((const struct applyop *)a)->path, *y = ((const struct applyop *)b)->path;

	if (dryrun_dir_is_root(x) || dryrun_dir_is_root(y))
		return dryrun_dir_is_root(x) - dryrun_dir_is_root(y);
	return -strcmp(x, y);
}

/* Renames whose destination is not covered. */
static int applyplan_renames(struct dryrun_dir *d, struct applyop_list *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (e->change != CHANGESET_RENAMED || applyplan_covered(d, e->path.bytes))
			continue;
		int r = applyplan_op_note_mode(applyplan_op_new(ops, APPLYOP_RENAME, e->path.bytes,
								e->from.bytes, NULL, NULL),
					       d->ws_fd, e->from.bytes, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The old objects that go: into backup/N. */
static int applyplan_removals(struct dryrun_dir *d, struct applyop_list *ops, size_t *backups)
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
		snprintf(backup, sizeof(backup), STATEPATH_BACKUP "/%zu", (*backups)++);
		int r = applyplan_op_note_mode(applyplan_op_new(ops, APPLYOP_BACKUP, path, NULL,
								NULL, backup),
					       d->ws_fd, path, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The new objects, sorted by path: parents first. */
static int applyplan_creations(struct dryrun_dir *d, struct applyop_list *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		const char *path = e->path.bytes;
		if (applyplan_covered(d, path) ||
		    (e->change != CHANGESET_CREATED && e->change != CHANGESET_TYPE_CHANGED))
			continue;
		char staged[PATH_MAX];
		snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", path);
		int r = applyplan_op_note_mode(applyplan_op_new(ops, APPLYOP_CREATE, path, NULL,
								staged, NULL),
					       d->fd, staged, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Content swaps: the staged object exchanged in, the old one kept. */
static int applyplan_exchanges(struct dryrun_dir *d, struct applyop_list *ops, size_t *backups)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		const char *path = e->path.bytes;
		if (e->change != CHANGESET_MODIFIED)
			continue;
		char staged[PATH_MAX], backup[64];
		snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", path);
		snprintf(backup, sizeof(backup), STATEPATH_BACKUP "/%zu", (*backups)++);
		struct stat st;
		if (applyfs_stat_at(d->fd, staged, &st) < 0)
			return -ENOENT;
		struct applyop *op =
			applyplan_op_new(ops, APPLYOP_EXCHANGE, path, NULL, staged, backup);
		if (!op)
			return -ENOMEM;
		op->new_ino = (int64_t)st.st_ino;
	}
	return 0;
}

/* Owners in place first: a chown clears set-id bits and file
 * capabilities, so the attributes and modes are set after it. */
static int applyplan_chowns(struct dryrun_dir *d, struct applyop_list *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (!changeset_entry_has(e, CHANGESET_KEY_OLD_UID) ||
		    !changeset_change_is_meta(e->change))
			continue;
		struct applyop *op =
			applyplan_op_new(ops, APPLYOP_CHOWN, e->path.bytes, NULL, NULL, NULL);
		if (!op)
			return -ENOMEM;
		op->uid = e->uid;
		op->gid = e->gid;
		op->old_uid = e->old_uid;
		op->old_gid = e->old_gid;
	}
	return 0;
}

/* Attributes in place, before any mode change (setting one needs write
 * access to the object). */
static int applyplan_xattrs(struct dryrun_dir *d, struct applyop_list *ops)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		/* A created or modified object's `xattrs` came in with it; a
		 * meta change's unchanged ones are listed alone (version 4). */
		if (!changeset_entry_has(e, CHANGESET_KEY_OLD_XATTRS) ||
		    !changeset_change_is_meta(e->change))
			continue;
		struct applyop *op =
			applyplan_op_new(ops, APPLYOP_XATTRS, e->path.bytes, NULL, NULL, NULL);
		if (applyplan_op_note_mode(op, d->ws_fd, e->path.bytes, false) < 0)
			return -ENOMEM;
		if (changeset_xattr_list_copy(&e->xattrs, &op->xattrs) < 0 ||
		    changeset_xattr_list_copy(&e->old_xattrs, &op->old_xattrs) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Mode changes, deepest first (a directory made read-only last). */
static int applyplan_chmods(struct dryrun_dir *d, struct applyop_list *ops)
{
	size_t first = ops->n;

	for (size_t i = 0; i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (e->change != CHANGESET_MODE_CHANGED)
			continue;
		struct applyop *op =
			applyplan_op_new(ops, APPLYOP_CHMOD, e->path.bytes, NULL, NULL, NULL);
		if (!op)
			return -ENOMEM;
		op->has_mode = true;
		op->mode = e->mode & 07777;
		op->old_mode = e->old_mode & 07777;
	}
	qsort(ops->items + first, ops->n - first, sizeof(*ops->items), compare_path_desc);
	return 0;
}

int applyplan_ops(struct dryrun_dir *d, struct applyop_list *ret)
{
	struct applyop_list ops = { 0 };
	size_t backups = 0;
	int r = applyplan_renames(d, &ops);

	if (r == 0)
		r = applyplan_removals(d, &ops, &backups);
	if (r == 0)
		r = applyplan_creations(d, &ops);
	if (r == 0)
		r = applyplan_exchanges(d, &ops, &backups);
	if (r == 0)
		r = applyplan_chowns(d, &ops);
	if (r == 0)
		r = applyplan_xattrs(d, &ops);
	if (r == 0)
		r = applyplan_chmods(d, &ops);
	if (r < 0) {
		applyop_list_release(&ops);
		return r;
	}
	*ret = ops;
	return 0;
}

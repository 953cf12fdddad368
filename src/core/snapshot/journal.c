/* SPDX-License-Identifier: MIT */
#include "core/snapshot/journal.h"

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
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/applyfs.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/applyop.h"
#include "core/store/jsonutil.h"

#define JOURNAL_SCHEMA "airlock.journal/4"
#define JOURNAL_MAX    (256 << 20)

int journal_append(int dir_fd, const char *text, struct error *err)
{
	cleanup_close int fd = openat(dir_fd, "journal", O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return error_set_errno(err, errno, "open the journal");
	int r = fd_write_all(fd, text, strlen(text));
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

int journal_write(struct dryrun_dir *d, const struct applyop_list *ops, struct error *err)
{
	cleanup_with(json_decrefp) json_t *head =
		json_pack("{s:s, s:I, s:s, s:I}", "schema", JOURNAL_SCHEMA, "dryrun", (json_int_t)d->id,
			  "workspace", d->workspace, "started_ns", (json_int_t)clock_realtime_ns());
	cleanup_free char *first = head ? jsonutil_dump_line(head) : NULL;
	if (!first)
		return error_set(err, ENOMEM, "out of memory");
	if (faccessat(d->fd, "journal", F_OK, 0) == 0)
		(void)renameat(d->fd, "journal", d->fd, "journal.previous");
	int fd = openat(d->fd, "journal", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "create the journal");
	int r = fd_write_all(fd, first, strlen(first));
	for (size_t i = 0; i < ops->n; i++) {
		json_t *op = applyop_to_json(&ops->items[i]);
		json_t *encoded = op ? changeset_encode_bytes(op) : NULL;
		cleanup_free char *line = encoded ? jsonutil_dump_line(encoded) : NULL;
		json_decref(encoded);
		json_decref(op);
		if (r == 0)
			r = line ? fd_write_all(fd, line, strlen(line)) : -ENOMEM;
	}
	/* One sync for the whole journal, before the first operation. */
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && fsync(d->fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

int journal_read(struct dryrun_dir *d, struct applyop_list *ret_ops, char *mark, size_t mark_size,
		 struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(d->fd, "journal", JOURNAL_MAX, &text, &n, err);
	if (r < 0)
		return r;
	return journal_parse(text, ret_ops, mark, mark_size, err);
}

int journal_parse(char *text, struct applyop_list *ret_ops, char *mark, size_t mark_size,
		  struct error *err)
{
	static const char *const kinds[] = { "rename", "backup", "create", "exchange",
					     "chmod",  "xattrs", "chown",  NULL };
	cleanup_with(applyop_list_release) struct applyop_list ops = { 0 };
	mark[0] = '\0';
	char *save = NULL;
	bool first = true, ok_owner;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		if (!o)
			continue; /* a torn last line: the operation it names never ran */
		if (first) {
			first = false;
			json_decref(o);
			continue;
		}
		if (jsonutil_str(o, "mark")) {
			snprintf(mark, mark_size, "%s", jsonutil_str(o, "mark"));
			json_decref(o);
		} else if (json_is_object(o) && dryrun_dir_one_of(jsonutil_str(o, "op"), kinds)) {
			/* An operation apply did not write is no operation to undo:
			 * the journal is damaged. */
			const char *kind = jsonutil_str(o, "op");
			bool meta = !strcmp(kind, "chmod") || !strcmp(kind, "xattrs") ||
				    !strcmp(kind, "chown");
			ok_owner = strcmp(kind, "chown") != 0 || dryrun_dir_owner_valid(o, true);
			bool ok = changeset_decode_bytes(o) == 0; /* replaces "path": read it after */
			const char *path = jsonutil_str(o, "path");
			ok = ok &&
			     (dryrun_dir_path_is_clean(path) || (meta && dryrun_dir_is_root(path)));
			if (ok && !strcmp(kind, "rename"))
				ok = dryrun_dir_path_is_clean(jsonutil_str(o, "from"));
			if (ok && (!strcmp(kind, "backup") || !strcmp(kind, "exchange")))
				ok = dryrun_dir_path_is_clean(jsonutil_str(o, "backup"));
			if (ok && (!strcmp(kind, "create") || !strcmp(kind, "exchange")))
				ok = dryrun_dir_path_is_clean(jsonutil_str(o, "staged"));
			if (ok && !strcmp(kind, "chmod"))
				ok = jsonutil_str(o, "mode") && jsonutil_str(o, "old_mode");
			else if (ok && json_object_get(o, "mode")) /* a lift's mode (struct applyfs_lift) */
				ok = jsonutil_str(o, "mode") != NULL;
			if (ok && !strcmp(kind, "xattrs"))
				ok = dryrun_dir_meta_valid(o, true, CHANGESET_XATTRS_ALL,
							   false); /* names checked when planned */
			if (!ok || !ok_owner) {
				json_decref(o);
				return error_set(err, EINVAL, "the journal is damaged");
			}
			struct applyop *op = applyop_list_add(&ops, APPLYOP_RENAME);
			int r = op ? applyop_from_json(o, op) : -ENOMEM;
			json_decref(o);
			if (r < 0)
				return error_set(err, -r, "%s",
						 r == -ENOMEM ? "out of memory"
							      : "the journal is damaged");
		} else {
			json_decref(o);
		}
	}
	*ret_ops = ops;
	ops = (struct applyop_list){ 0 };
	return 0;
}

/* The most names journal_sync() fsyncs one by one; past it (a change set
 * of thousands of files), one syncfs() of the workspace's file system is
 * cheaper. */
#define JOURNAL_SYNC_EXACT_MAX 64

/* One object or directory journal_sync() fsyncs: a name below fd. */
struct journal_sync_name {
	int fd;
	const char *path;
	size_t n; /* bytes of path that name it (a parent: up to its last '/') */
};

struct journal_sync_set {
	struct journal_sync_name names[4 * JOURNAL_SYNC_EXACT_MAX];
	size_t n;
};

/* Adds the name, once; a parent of path when parent ("." for a top-level
 * one). */
static void journal_sync_add(struct journal_sync_set *set, int fd, const char *path, bool parent)
{
	size_t n = strlen(path);

	if (parent) {
		const char *slash = strrchr(path, '/');
		n = slash ? (size_t)(slash - path) : 0;
	}
	for (size_t i = 0; i < set->n; i++)
		if (set->names[i].fd == fd && set->names[i].n == n &&
		    memcmp(set->names[i].path, path, n) == 0)
			return;
	if (set->n < ARRAY_SIZE(set->names))
		set->names[set->n++] = (struct journal_sync_name){ fd, path, n };
}

/* fsync of the regular file or directory at the name, opened beneath its
 * fd without following a symlink (the workspace is the agent's). Anything
 * else (a symlink, a fifo, a device) cannot be fsynced and is never
 * opened: -EOPNOTSUPP, for journal_sync() to sync the whole file system.
 * 0 when synced or gone; -errno. */
static int journal_sync_one(const struct journal_sync_name *name)
{
	char path[PATH_MAX], proc[64];
	struct stat st;

	if (name->n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, name->path, name->n);
	path[name->n] = '\0';
	cleanup_close int pfd = name->n ? fd_open_beneath(name->fd, path, O_PATH | O_NOFOLLOW)
					: fcntl(name->fd, F_DUPFD_CLOEXEC, 3);
	if (pfd == -ENOENT)
		return 0; /* moved away meanwhile: an undo's created object */
	if (pfd < 0)
		return pfd == -1 ? -errno : pfd;
	if (fstat(pfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return -EOPNOTSUPP;
	/* The very inode looked at, opened to be synced. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	cleanup_close int fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	return fsync(fd) < 0 ? -errno : 0;
}

int journal_sync(struct dryrun_dir *d, const struct applyop_list *ops, struct error *err)
{
	cleanup_free struct journal_sync_set *set = NULL;
	int r = 0;

	/* The objects the change set placed or changed (the new objects'
	 * bytes were written unsynced by the dry run; a created directory's
	 * whole tree is in the change set), then every directory a name was
	 * moved into or out of: the workspace's, the staged copies', the
	 * backups'. */
	if (d->cs && d->cs->n_entries + ops->n <= JOURNAL_SYNC_EXACT_MAX)
		set = calloc(1, sizeof(*set));
	for (size_t i = 0; set && i < d->cs->n_entries; i++) {
		const struct changeset_entry *e = &d->cs->entries[i];
		if (e->change != CHANGESET_DELETED)
			journal_sync_add(set, d->ws_fd, e->path.bytes, false);
		journal_sync_add(set, d->ws_fd, e->path.bytes, true);
		if (e->from.bytes)
			journal_sync_add(set, d->ws_fd, e->from.bytes, true);
	}
	for (size_t i = 0; set && i < ops->n; i++) {
		const struct applyop *op = &ops->items[i];
		journal_sync_add(set, d->ws_fd, op->path,
				 op->kind == APPLYOP_RENAME || op->kind == APPLYOP_BACKUP ||
					 op->kind == APPLYOP_CREATE || op->kind == APPLYOP_EXCHANGE);
		if (op->from)
			journal_sync_add(set, d->ws_fd, op->from, true);
		if (op->staged)
			journal_sync_add(set, d->fd, op->staged, true);
		if (op->backup)
			journal_sync_add(set, d->fd, op->backup, true);
	}
	for (size_t i = 0; set && r == 0 && i < set->n; i++)
		r = journal_sync_one(&set->names[i]);
	if (set && r == 0)
		return 0;
	/* Too many names, or one that could not be synced exactly (a symlink,
	 * a special file: only its directory's fsync names it, which POSIX
	 * does not say makes its inode durable). */
	if (syncfs(d->ws_fd) < 0)
		return error_set_errno(err, errno, "sync the workspace");
	return 0;
}

int journal_undo_all(struct dryrun_dir *d, const struct applyop_list *ops, size_t *ret_ops,
		     struct error *err)
{
	for (size_t i = ops->n; i-- > 0;) {
		int r = applyop_undo(d, &ops->items[i]);
		if (r < 0)
			return error_set_errno(err, -r, "undo %s of %s",
					       applyop_kind_name(ops->items[i].kind),
					       ops->items[i].path);
		(*ret_ops)++;
	}
	int r = journal_sync(d, ops, err);
	return r < 0 ? r : journal_append(d->fd, "{\"mark\":\"rolled_back\"}\n", err);
}

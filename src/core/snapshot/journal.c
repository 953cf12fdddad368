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
#include "basic/faultpoint.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/applyfs.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/applyop.h"
#include "core/snapshot/applymark.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

#define JOURNAL_SCHEMA "airlock.journal/4"
#define JOURNAL_MAX    (256 << 20)

int journal_append(int dir_fd, const char *text, bool sync, struct error *err)
{
	cleanup_close int fd = openat(dir_fd, STATEPATH_JOURNAL, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return error_set_errno(err, errno, "open the journal");
	int r = fd_write_all(fd, text, strlen(text));
	if (r == 0 && sync && fdatasync(fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

int journal_append_marked(struct dryrun_dir *d, const char *text, int mark_fd, struct error *err)
{
	cleanup_close int fd = openat(d->fd, STATEPATH_JOURNAL, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return error_set_errno(err, errno, "open the journal");
	int r = applymark_link(d->fd, STATEPATH_JOURNAL, mark_fd, d->id, err);
	if (r < 0)
		return r;
	r = fd_write_all(fd, text, strlen(text));
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	/* The marker's name, durable before the first operation: a file's
	 * fsync does not make a second link to it durable everywhere (ext4
	 * without a journal syncs a new file's first parent only). */
	if (r == 0 && fsync(mark_fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

int journal_write(struct dryrun_dir *d, const struct applyop_list *ops, int mark_fd, struct error *err)
{
	cleanup_with(json_decrefp) json_t *head =
		json_pack("{s:s, s:I, s:s, s:I}", "schema", JOURNAL_SCHEMA, "dryrun", (json_int_t)d->id,
			  "workspace", d->workspace, "started_ns", (json_int_t)clock_realtime_ns());
	cleanup_free char *first = head ? jsonutil_dump_line(head) : NULL;
	if (!first)
		return error_set(err, ENOMEM, "out of memory");
	/* The empty journal the dry run made (dryrun_prepare()), whose name its
	 * change set's commit made durable: only it needs a sync. A
	 * journal of an earlier apply is kept as journal.previous and a new
	 * one made, its name synced too. */
	bool fresh = false;
	struct stat st;
	int fd = openat(d->fd, STATEPATH_JOURNAL, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		if (faccessat(d->fd, STATEPATH_JOURNAL, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			(void)renameat(d->fd, STATEPATH_JOURNAL, d->fd, STATEPATH_JOURNAL_PREVIOUS);
		fd = openat(d->fd, STATEPATH_JOURNAL, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		fresh = true;
	}
	if (fd < 0)
		return error_set_errno(err, errno, "create the journal");
	int r = applymark_link(d->fd, STATEPATH_JOURNAL, mark_fd, d->id, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	FAULT_POINT("apply.marked"); /* a crash between the name and the journal */
	r = fd_write_all(fd, first, strlen(first));
	for (size_t i = 0; i < ops->n; i++) {
		json_t *op = applyop_to_json(&ops->items[i]);
		json_t *encoded = op ? changeset_encode_bytes(op) : NULL;
		cleanup_free char *line = encoded ? jsonutil_dump_line(encoded) : NULL;
		json_decref(encoded);
		json_decref(op);
		if (r == 0)
			r = line ? fd_write_all(fd, line, strlen(line)) : -ENOMEM;
	}
	/* One sync for the whole journal, before the first operation, and
	 * one of dryruns/.applying for the marker's name (a file's fsync does
	 * not make a second link to it durable everywhere: ext4 without a
	 * journal syncs a new file's first parent only). */
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && fresh && fsync(d->fd) < 0)
		r = -errno;
	if (r == 0 && fsync(mark_fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

int journal_read(struct dryrun_dir *d, struct applyop_list *ret_ops, char *mark, size_t mark_size,
		 struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(d->fd, STATEPATH_JOURNAL, JOURNAL_MAX, &text, &n, err);
	if (r < 0)
		return r;
	if (n == 0) /* the dry run's empty journal: no apply began */
		return error_set(err, ENOENT, "no journal");
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
	if (syncfs(d->ws_fd) < 0)
		return error_set_errno(err, errno, "sync the workspace");
	return journal_append(d->fd, "{\"mark\":\"rolled_back\"}\n", true, err);
}

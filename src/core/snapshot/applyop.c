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

static int applyop_chmod_at(int dir_fd, const char *path, mode_t mode)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	/* fchmodat() has no AT_SYMLINK_NOFOLLOW on Linux; the change set only
	 * holds mode changes of files and directories. */
	cleanup_close int target = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return -errno;
	return applyfs_mode_set_fd(target, mode);
}

/* The object itself, never a symlink's target. */
static int applyop_chown_at(int dir_fd, const char *path, uid_t uid, gid_t gid)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	return fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int applyop_do(struct dryrun_dir *d, json_t *op)
{
	const char *kind = jsonutil_str(op, "op"), *path = jsonutil_str(op, "path");

	if (!strcmp(kind, "rename"))
		return applyfs_move_lifted(d->ws_fd, jsonutil_str(op, "from"), d->ws_fd, path,
					   RENAME_NOREPLACE);
	if (!strcmp(kind, "backup"))
		return applyfs_move_lifted(d->ws_fd, path, d->fd, jsonutil_str(op, "backup"),
					   RENAME_NOREPLACE);
	if (!strcmp(kind, "chmod"))
		return applyop_chmod_at(d->ws_fd, path, applyfs_parse_mode(jsonutil_str(op, "mode")));
	if (!strcmp(kind, "xattrs"))
		return applycheck_xattrs_set_at(d->ws_fd, path, d->xattrs,
						json_object_get(op, "xattrs"));
	if (!strcmp(kind, "chown"))
		return applyop_chown_at(d->ws_fd, path, dryrun_dir_id(op, "uid"),
					dryrun_dir_id(op, "gid"));
	const char *staged_name;
	cleanup_close int staged_dir =
		fd_open_parent(d->fd, jsonutil_str(op, "staged"), O_PATH, &staged_name);
	if (staged_dir < 0)
		return staged_dir;
	applyfs_strip_overlay_xattrs(staged_dir, staged_name, 0);
	if (!strcmp(kind, "create"))
		return applyfs_move_lifted(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path,
					   RENAME_NOREPLACE);
	/* exchange: the new object in, the old one out to the backup */
	int r = applyfs_move_at(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path, RENAME_EXCHANGE);
	if (r == 0)
		r = applyfs_move_at(d->fd, jsonutil_str(op, "staged"), d->fd,
				    jsonutil_str(op, "backup"), RENAME_NOREPLACE);
	return r;
}

static bool applyop_exists_at(int dir_fd, const char *path, struct stat *st)
{
	struct stat ignored;

	return applyfs_stat_at(dir_fd, path, st ? st : &ignored) == 0;
}

int applyop_undo(struct dryrun_dir *d, json_t *op)
{
	const char *kind = jsonutil_str(op, "op"), *path = jsonutil_str(op, "path");
	struct stat st;

	int r = 0;

	if (!strcmp(kind, "rename")) {
		if (applyop_exists_at(d->ws_fd, path, NULL) &&
		    !applyop_exists_at(d->ws_fd, jsonutil_str(op, "from"), NULL)) {
			r = applyfs_lift_repair(d->ws_fd, path, op);
			if (r == 0)
				r = applyfs_move_lifted(d->ws_fd, path, d->ws_fd,
							jsonutil_str(op, "from"), RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->ws_fd, jsonutil_str(op, "from"), op);
	}
	if (!strcmp(kind, "backup")) {
		if (applyop_exists_at(d->fd, jsonutil_str(op, "backup"), NULL)) {
			r = applyfs_lift_repair(d->fd, jsonutil_str(op, "backup"), op);
			if (r == 0)
				r = applyfs_move_lifted(d->fd, jsonutil_str(op, "backup"), d->ws_fd,
							path, RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->ws_fd, path, op);
	}
	if (!strcmp(kind, "chmod"))
		return applyop_exists_at(d->ws_fd, path, NULL)
			       ? applyop_chmod_at(d->ws_fd, path,
						  applyfs_parse_mode(jsonutil_str(op, "old_mode")))
			       : 0;
	if (!strcmp(kind, "xattrs")) {
		if (!applyop_exists_at(d->ws_fd, path, NULL))
			return 0;
		r = applyfs_lift_repair(d->ws_fd, path, op);
		return r < 0 ? r
			     : applycheck_xattrs_set_at(d->ws_fd, path, d->xattrs,
							json_object_get(op, "old_xattrs"));
	}
	if (!strcmp(kind, "chown")) {
		if (!applyop_exists_at(d->ws_fd, path, &st))
			return 0;
		r = applyop_chown_at(d->ws_fd, path, dryrun_dir_id(op, "old_uid"),
				     dryrun_dir_id(op, "old_gid"));
		/* The chown back clears set-id bits: the mode before it (the
		 * later ops already undone) is the workspace's. */
		if (r == 0 && !S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)))
			r = applyop_chmod_at(d->ws_fd, path, st.st_mode & 07777);
		return r;
	}
	if (!strcmp(kind, "create")) {
		if (!applyop_exists_at(d->fd, jsonutil_str(op, "staged"), NULL) &&
		    applyop_exists_at(d->ws_fd, path, NULL)) {
			r = applyfs_lift_repair(d->ws_fd, path, op);
			if (r == 0)
				r = applyfs_move_lifted(d->ws_fd, path, d->fd,
							jsonutil_str(op, "staged"), RENAME_NOREPLACE);
		}
		return r < 0 ? r : applyfs_lift_repair(d->fd, jsonutil_str(op, "staged"), op);
	}
	/* exchange: bring the old object back to staged, then swap again */
	if (applyop_exists_at(d->fd, jsonutil_str(op, "backup"), NULL))
		r = applyfs_move_at(d->fd, jsonutil_str(op, "backup"), d->fd,
				    jsonutil_str(op, "staged"), RENAME_NOREPLACE);
	if (r == 0 && applyop_exists_at(d->ws_fd, path, &st) &&
	    (json_int_t)st.st_ino == json_integer_value(json_object_get(op, "new_ino")))
		r = applyfs_move_at(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path, RENAME_EXCHANGE);
	return r;
}

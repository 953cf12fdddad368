/* SPDX-License-Identifier: MIT */
#include "core/snapshot/applyfs.h"

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
#include "basic/sha256.h"
#include "core/snapshot/changeset.h"

mode_t applyfs_parse_mode(const char *s)
{
	return s ? (mode_t)strtoul(s, NULL, 8) : 0;
}

int applyfs_stat_at(int dir_fd, const char *path, struct stat *st)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	return fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int applyfs_hash_at(int dir_fd, const char *path, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = fd_open_beneath(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_NOCTTY);

	return fd < 0 ? fd : sha256_fd_hex(fd, hex);
}

int applyfs_readlink_at(int dir_fd, const char *path, char *buf, size_t size)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, name, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int applyfs_move_at(int from_fd, const char *from, int to_fd, const char *to, unsigned flags)
{
	const char *from_name, *to_name;
	cleanup_close int a = fd_open_parent(from_fd, from, O_PATH, &from_name);
	cleanup_close int b = a < 0 ? -1 : fd_open_parent(to_fd, to, O_PATH, &to_name);

	if (a < 0)
		return a;
	if (b < 0)
		return b;
	return renameat2(a, from_name, b, to_name, flags) < 0 ? -errno : 0;
}

int applyfs_mode_set_fd(int target, mode_t mode)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", target);
	return chmod(proc, mode) < 0 ? -errno : 0;
}

int applyfs_lift_on(struct applyfs_lift *l)
{
	struct stat st;

	if (l->lifted || l->target < 0 || fstat(l->target, &st) < 0 || (st.st_mode & S_IWUSR) ||
	    S_ISLNK(st.st_mode) || st.st_uid != geteuid())
		return 0;
	l->mode = st.st_mode & 07777;
	if (applyfs_mode_set_fd(l->target, l->mode | S_IWUSR) < 0)
		return 0;
	l->lifted = true;
	return 1;
}

int applyfs_lift_off(struct applyfs_lift *l)
{
	if (!l->lifted)
		return 0;
	l->lifted = false;
	return applyfs_mode_set_fd(l->target, l->mode);
}

int applyfs_lift_repair(int dir_fd, const char *path, const mode_t *recorded)
{
	const char *name;
	struct stat st;

	if (!recorded)
		return 0;
	mode_t mode = *recorded;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);
	cleanup_close int target = fd < 0 ? -1 : openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0 || fstat(target, &st) < 0 || S_ISLNK(st.st_mode))
		return 0; /* not there: nothing to put back */
	if ((mode & S_IWUSR) || (st.st_mode & 07777) != (mode | S_IWUSR))
		return 0;
	return applyfs_mode_set_fd(target, mode);
}

int applyfs_move_lifted(int from_fd, const char *from, int to_fd, const char *to, unsigned flags)
{
	int r = applyfs_move_at(from_fd, from, to_fd, to, flags);
	if (r != -EACCES)
		return r;
	const char *name;
	cleanup_close int fd = fd_open_parent(from_fd, from, O_PATH, &name);
	cleanup_close int target = fd < 0 ? -1 : openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct applyfs_lift l = { .target = target };
	struct stat st;
	if (target >= 0 && fstat(target, &st) == 0 && S_ISDIR(st.st_mode) && applyfs_lift_on(&l) == 1) {
		r = applyfs_move_at(from_fd, from, to_fd, to, flags);
		int q = applyfs_lift_off(&l); /* the descriptor follows the object */
		r = r < 0 ? r : q;
	}
	return r;
}

long applyfs_count_entries_at(int dir_fd, const char *path)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	return fd < 0 ? -1 : changeset_count_entries(fd, name);
}

/* The overlay's own attributes must not reach the real tree: removed from
 * dir_fd/name and everything below it, by descriptor (no path grows with
 * the depth), never following a symlink. */
static __attribute__((noinline)) void applyfs_strip_overlay_xattrs_one(int dir_fd, const char *name)
{
	char path[PATH_MAX + 32];
	/* The kernel's largest list, so no list is too long to be read. */
	cleanup_free char *names = malloc(XATTR_LIST_MAX);

	if (!names || (size_t)snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name) >=
			      sizeof(path))
		return;
	ssize_t n = llistxattr(path, names, XATTR_LIST_MAX);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		if (strncmp(names + i, "user.overlay.", 13) == 0 ||
		    strncmp(names + i, "trusted.overlay.", 16) == 0)
			(void)lremovexattr(path, names + i);
}

void applyfs_strip_overlay_xattrs(int dir_fd, const char *name, int depth)
{
	struct stat st;

	applyfs_strip_overlay_xattrs_one(dir_fd, name); /* its buffers off the recursion */
	if (depth > CHANGESET_MAX_DEPTH || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return;
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			applyfs_strip_overlay_xattrs(dirfd(d), de->d_name, depth + 1);
	closedir(d);
}

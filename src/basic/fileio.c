/* SPDX-License-Identifier: MIT */
#include "basic/fileio.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"

int fd_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int fd_wait_readable_until(int fd, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = clock_monotonic_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t wait_ms = (deadline_ns - now + 999999) / 1000000;
		int n = poll(&p, 1, (int)MIN(wait_ms, (uint64_t)INT_MAX));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int fd_read_capped_until(int fd, size_t max_bytes, uint64_t deadline_ns, char **ret_data,
			 size_t *ret_size, struct error *err)
{
	size_t cap = 4096, size = 0;
	cleanup_free char *data = malloc(cap + 1);
	if (!data)
		return error_set(err, ENOMEM, "out of memory");

	for (;;) {
		if (size == cap) {
			if (cap > max_bytes)
				return error_set(err, EFBIG, "larger than %zu bytes", max_bytes);
			size_t new_cap = MIN(cap * 2, max_bytes + 1);
			char *grown = realloc(data, new_cap + 1);
			if (!grown)
				return error_set(err, ENOMEM, "out of memory");
			data = grown;
			cap = new_cap;
		}
		if (deadline_ns != FD_NO_DEADLINE) {
			int r = fd_wait_readable_until(fd, deadline_ns);
			if (r == -ETIMEDOUT)
				return error_set(err, ETIMEDOUT, "no end by the deadline");
			if (r < 0)
				return error_set_errno(err, -r, "poll");
		}
		ssize_t n = read(fd, data + size, cap - size);
		if (n < 0) {
			/* EAGAIN: a non-blocking fd that another reader drained
			 * since the poll; it is polled again. */
			if (errno == EINTR || (errno == EAGAIN && deadline_ns != FD_NO_DEADLINE))
				continue;
			return error_set_errno(err, errno, "read");
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > max_bytes)
			return error_set(err, EFBIG, "larger than %zu bytes", max_bytes);
	}
	data[size] = '\0';
	*ret_data = TAKE_PTR(data);
	if (ret_size)
		*ret_size = size;
	return 0;
}

int fd_read_capped(int fd, size_t max_bytes, char **ret_data, size_t *ret_size, struct error *err)
{
	return fd_read_capped_until(fd, max_bytes, FD_NO_DEADLINE, ret_data, ret_size, err);
}

int file_read_capped(int dir_fd, const char *path, size_t max_bytes, char **ret_data,
		     size_t *ret_size, struct error *err)
{
	cleanup_close int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot open '%s'", path);

	struct stat st;
	if (fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "cannot stat '%s'", path);
	if (S_ISDIR(st.st_mode))
		return error_set(err, EISDIR, "'%s' is a directory", path);

	int r = fd_read_capped(fd, max_bytes, ret_data, ret_size, err);
	if (r < 0)
		return error_prefix(err, "cannot read '%s'", path);
	return 0;
}

int file_write_atomic(int dir_fd, const char *name, const void *data, size_t n, mode_t mode,
		      bool durable, struct error *err)
{
	char tmp[NAME_MAX + 1];

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid()) >= sizeof(tmp))
		return error_set(err, ENAMETOOLONG, "file name '%s' too long", name);

	cleanup_close int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot create '%s'", tmp);

	int r = fd_write_all(fd, data, n);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat2(dir_fd, tmp, dir_fd, name, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dir_fd, tmp, 0);
		return error_set_errno(err, -r, "cannot write '%s'", name);
	}
	if (durable && fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "cannot sync directory of '%s'", name);
	return 0;
}

int mkdir_parents(const char *path, mode_t mode)
{
	cleanup_free char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;

	for (char *p = copy + 1;; p++) {
		bool last = *p == '\0';
		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return -errno;
		if (last)
			break;
		*p = '/';
	}
	return 0;
}

static int remove_tree_depth(int dir_fd, const char *name, int depth)
{
	struct stat st;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (depth > 4096)
		return -ELOOP;
	/* Searchable again if it was not; if that fails, the open says why. */
	ignore_result(fchmodat(dir_fd, name, 0700, 0));
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int q = remove_tree_depth(dirfd(d), de->d_name, depth + 1);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int remove_tree_at(int dir_fd, const char *name)
{
	return remove_tree_depth(dir_fd, name, 0);
}

int fd_open_beneath(int dir_fd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

int fd_open_parent(int dir_fd, const char *path, int flags, const char **ret_name)
{
	const char *slash = strrchr(path, '/');

	*ret_name = slash ? slash + 1 : path;
	if (!slash)
		return fd_open_beneath(dir_fd, ".", flags | O_DIRECTORY);
	char parent[PATH_MAX];
	if ((size_t)(slash - path) >= sizeof(parent))
		return -ENAMETOOLONG;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	return fd_open_beneath(dir_fd, parent, flags | O_DIRECTORY);
}

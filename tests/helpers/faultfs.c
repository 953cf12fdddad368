/* SPDX-License-Identifier: MIT */
/* A test-only LD_PRELOAD shim that injects storage faults into writes to a
 * ledger's log (a descriptor whose path ends in /ledger/log), and nothing
 * else:
 *   FAULTFS_FDATASYNC_EIO=1     fdatasync() and fsync() fail with EIO
 *   FAULTFS_SHORT_WRITE=N       the first write() stores N bytes, every
 *                               later one fails with ENOSPC
 * Built by tests/meson.build; used by tests/cli/ledger.bats. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool faultfs_is_log(int fd)
{
	char link[64], target[PATH_MAX];

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	size_t k = strlen("/ledger/log");
	return (size_t)n >= k && strcmp(target + n - k, "/ledger/log") == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	static int writes;
	const char *short_write = getenv("FAULTFS_SHORT_WRITE");

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "write");
	if (short_write && faultfs_is_log(fd)) {
		size_t k = (size_t)atol(short_write);
		if (writes++ > 0) {
			errno = ENOSPC;
			return -1;
		}
		return real(fd, buf, k < n ? k : n);
	}
	return real(fd, buf, n);
}

static int faultfs_sync(const char *name, int fd)
{
	int (*real)(int);

	*(void **)&real = dlsym(RTLD_NEXT, name);
	if (getenv("FAULTFS_FDATASYNC_EIO") && faultfs_is_log(fd)) {
		errno = EIO;
		return -1;
	}
	return real(fd);
}

int fdatasync(int fd)
{
	return faultfs_sync("fdatasync", fd);
}

int fsync(int fd)
{
	return faultfs_sync("fsync", fd);
}

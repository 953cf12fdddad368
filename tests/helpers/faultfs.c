/* SPDX-License-Identifier: MIT */
/* A test-only LD_PRELOAD shim that injects storage faults into writes to a
 * ledger's log (a descriptor whose path ends in /ledger/log), and nothing
 * else:
 *   FAULTFS_FDATASYNC_EIO=1     fdatasync() and fsync() fail with EIO
 *   FAULTFS_SHORT_WRITE=N       the first write() stores N bytes, every
 *                               later one fails with ENOSPC
 * and crashes (SIGKILL of the process itself) at a chosen point, to land a
 * kill between two steps of a commit or an apply:
 *   FAULTFS_KILL_AFTER_RENAME=NAME[:N]  after the Nth (default 1st)
 *                               successful rename whose new name's last
 *                               component is NAME
 *   FAULTFS_KILL_AFTER_WRITE=TEXT       after a successful write() whose
 *                               bytes contain TEXT
 * and removes a path at a chosen point, as another process of the host
 * would at that moment:
 *   FAULTFS_REMOVE_AFTER_STAT=PATH      after the first successful stat(),
 *                               lstat() or fstatat(AT_FDCWD) of exactly
 *                               PATH: removes it (a file, or an empty
 *                               directory)
 * Built by tests/meson.build; used by tests/cli/ledger.bats,
 * tests/cli/permit.bats and tests/cli/secrets.bats. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	ssize_t r = real(fd, buf, n);
	const char *kill_text = getenv("FAULTFS_KILL_AFTER_WRITE");
	if (r > 0 && kill_text && *kill_text && memmem(buf, (size_t)r, kill_text, strlen(kill_text)))
		kill(getpid(), SIGKILL);
	return r;
}

/* After a rename to a name whose last component is the one asked for, the
 * Nth time: SIGKILL. */
static void faultfs_rename_done(const char *to)
{
	static int seen;
	const char *spec = getenv("FAULTFS_KILL_AFTER_RENAME");
	if (!spec || !*spec)
		return;
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	int nth = colon ? atoi(colon + 1) : 1;
	const char *base = strrchr(to, '/');
	base = base ? base + 1 : to;
	if (strlen(base) == len && strncmp(base, spec, len) == 0 && ++seen == nth)
		kill(getpid(), SIGKILL);
}

int rename(const char *from, const char *to)
{
	int (*real)(const char *, const char *);
	*(void **)&real = dlsym(RTLD_NEXT, "rename");
	int r = real(from, to);
	if (r == 0)
		faultfs_rename_done(to);
	return r;
}

int renameat(int a, const char *from, int b, const char *to)
{
	int (*real)(int, const char *, int, const char *);
	*(void **)&real = dlsym(RTLD_NEXT, "renameat");
	int r = real(a, from, b, to);
	if (r == 0)
		faultfs_rename_done(to);
	return r;
}

int renameat2(int a, const char *from, int b, const char *to, unsigned flags)
{
	int (*real)(int, const char *, int, const char *, unsigned);
	*(void **)&real = dlsym(RTLD_NEXT, "renameat2");
	int r = real(a, from, b, to, flags);
	if (r == 0)
		faultfs_rename_done(to);
	return r;
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

/* After the first stat that found the path asked for: it goes. */
static int faultfs_stat_done(int dfd, const char *path, int r)
{
	static bool removed;
	const char *want = getenv("FAULTFS_REMOVE_AFTER_STAT");
	int saved = errno;

	if (r == 0 && !removed && want && *want && dfd == AT_FDCWD && strcmp(path, want) == 0) {
		removed = true;
		if (rmdir(path) < 0)
			(void)unlink(path);
	}
	errno = saved;
	return r;
}

int stat64(const char *path, struct stat64 *st)
{
	int (*real)(const char *, struct stat64 *);
	*(void **)&real = dlsym(RTLD_NEXT, "stat64");
	return faultfs_stat_done(AT_FDCWD, path, real(path, st));
}

int lstat64(const char *path, struct stat64 *st)
{
	int (*real)(const char *, struct stat64 *);
	*(void **)&real = dlsym(RTLD_NEXT, "lstat64");
	return faultfs_stat_done(AT_FDCWD, path, real(path, st));
}

int fstatat64(int dfd, const char *path, struct stat64 *st, int flags)
{
	int (*real)(int, const char *, struct stat64 *, int);
	*(void **)&real = dlsym(RTLD_NEXT, "fstatat64");
	return faultfs_stat_done(dfd, path, real(dfd, path, st, flags));
}

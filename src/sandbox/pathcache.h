/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <sys/stat.h>

/* What a run's plan reads of the host's paths, read once. The plan (the
 * host view, the read-only and hidden paths, the quarantine's mounts) asks
 * realpath() and lstat() of the same ancestors hundreds of times: /root,
 * /root/.config, each parent of the workspace. While a cache is open
 * (pathcache_open() .. pathcache_close()) each answer is kept, and
 * realpath() resolves a path from its parent's kept answer with one
 * readlink(); outside one, these are the libc calls.
 *
 * A cache is only open while the supervisor plans a run, before the command
 * starts, and while nothing of the run writes to the host: an answer is
 * exactly what the call would have said at the moment it was first asked,
 * as a plan computed without the cache would have used it.
 *
 * paths: how many paths the plan is expected to ask about; the table is
 * made for that many (zeroed at once, ~180 bytes a path) and grows past it. */
void pathcache_open(size_t paths);
void pathcache_close(void);
/* As realpath(path, NULL): a malloc'd path, or NULL with errno set. */
char *pathcache_realpath(const char *path);
/* As lstat(): 0, or -1 with errno set. */
int pathcache_lstat(const char *path, struct stat *st);

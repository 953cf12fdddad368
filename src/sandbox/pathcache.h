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
 * readlink(), or, in a directory many names are asked of (the hide list's
 * in a home), from the directory's names read once, where a listing holds
 * exactly what a lookup finds (pathcache.c: not a case-folding directory);
 * outside one, these are the libc calls.
 *
 * A cache is only open while the supervisor plans a run, before the command
 * starts, and while nothing of the run writes to the host: an answer is
 * exactly what the call would have said at the moment it was first asked
 * (or, from a listing, when the directory was read, earlier in the same
 * plan), as a plan computed without the cache would have used it.
 *
 * paths: how many paths the plan is expected to ask about; the table is
 * made for that many (zeroed at once, ~180 bytes a path) and grows past it. */
void pathcache_open(size_t paths);
/* The most names a directory's listing holds ("." and ".." are none of
 * them): a directory with more is asked name by name. */
#define PATHCACHE_LIST_MAX_NAMES 4096
void pathcache_close(void);
/* Drops every answer for dir and the paths below it, spelled as asked,
 * and the listings of those directories: for a caller that has made
 * paths there while the cache is open (a dry run's snapshot, in the state
 * directory), which then reads them as they are now. A path made there is
 * asked again by each spelling the caller forgets (the state directory as
 * opened and as resolved); an answer elsewhere is unchanged by making a
 * name there (a name that existed could not have been made). */
void pathcache_forget_below(const char *dir);
/* As realpath(path, NULL): a malloc'd path, or NULL with errno set. */
char *pathcache_realpath(const char *path);
/* As lstat(): 0, or -1 with errno set. */
int pathcache_lstat(const char *path, struct stat *st);

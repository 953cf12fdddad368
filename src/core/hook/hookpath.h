/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Paths as a file tool's write will reach them (the hook's checks,
 * core/hook/hook.c): what a path names once the tool has created what is
 * missing. */

/* The directories (and what else) the walks of one hook call looked at;
 * NULL: none kept, every walk looks for itself. */
struct hookpath_cache;

/* NULL without memory. */
struct hookpath_cache *hookpath_cache_new(void);
void hookpath_cache_free(struct hookpath_cache *c);

/* dir (resolved, as the walks spell it) is one many names will be looked
 * up in (the home, by the hide list): where it may be read whole
 * (struct hookpath_cache in hookpath.c), it is read at its first lookup,
 * not after the 16th (at its next, when walked already). At most 8; an
 * answer is the same either way. */
void hookpath_cache_hint(struct hookpath_cache *c, const char *dir);
/* The most names of a directory a cache reads whole ("." and ".." are none
 * of them); one that holds more is looked up name by name. */
#define HOOKPATH_LIST_MAX_NAMES 64

/* path as the kernel will resolve it once the tool has created what is
 * missing: every symlink followed (a dangling one too: writing it creates
 * its target; a ".." after a symlink goes to its target's parent) but a
 * link in a process's directory in /proc (hookpath_proc_parse(): fd/N,
 * map_files/, root, cwd, exe, ns/, the same below task/TID/: kept as
 * named, a file; what it reaches is what that process holds, in its mount
 * namespace, maybe by no name, and it moves at will), a component that
 * does not exist taken as a directory the tool makes, as a plain one, and
 * everything below it as text, until a ".." drops it: from there on,
 * lookups go on (x/../link follows link). A relative path is relative to
 * base (the process's cwd when NULL, or below it when base is relative).
 * cache (may be NULL) holds what earlier walks of the same call found:
 * the check of one tool call takes the host's paths as they were when
 * first looked at. NULL: out of memory, more than 40 symlinks, a
 * component lstat() cannot tell of (one deeper than PATH_MAX, reached
 * through links: the kernel follows what is there), /proc/self (or
 * thread-self): the hook's own, not the tool's, or a ".." that leaves a
 * process's link in /proc (its parent is that of what the link reaches,
 * which its name does not tell). */
char *hookpath_resolve(const char *base, const char *path, struct hookpath_cache *cache);

/* hookpath_resolve() of a path an agent's tool names, in both readings a
 * tool may use: *ret the kernel's (hookpath_resolve()), *ret_lexical that
 * of a tool that first drops each ".." with the component before it as
 * text (Node's path.resolve(), Python's os.path.normpath()), then lets the
 * kernel resolve the rest; NULL when it is the same place (always so
 * without a ".."). A check holds the path to both: the stricter wins.
 * 0, -ENOMEM, or -ELOOP (hookpath_resolve() returned NULL). */
int hookpath_resolve_both(const char *base, const char *path, struct hookpath_cache *cache,
			  char **ret, char **ret_lexical);

/* What a path in /proc names (proc(5)), read as text by the one parser
 * both the walk (which links it keeps as named) and the hook (which
 * entries it hides) use, so their edge rules cannot drift. Empty and "."
 * components are skipped, as the kernel does. */
enum hookpath_proc_who {
	HOOKPATH_PROC_NONE, /* no process's directory: not below /proc, /proc itself, /proc/cpuinfo */
	HOOKPATH_PROC_SELF, /* /proc/self: the process that looks (the hook's, not the tool's) */
	HOOKPATH_PROC_THREAD_SELF, /* /proc/thread-self */
	HOOKPATH_PROC_PID, /* /proc/PID: any name of digits only */
	HOOKPATH_PROC_UNKNOWN, /* a ".." in the path: where it leads is the kernel's to tell */
};

struct hookpath_proc {
	enum hookpath_proc_who who;
	/* HOOKPATH_PROC_PID: PID's digits in the path (the kernel takes
	 * none with a leading 0 or past 32 bits, or a thread's id, as the
	 * thread's own directory: more taken is only more hidden) */
	const char *pid;
	size_t pid_len;
	/* task/TID below /proc/PID or /proc/self: TID's digits; NULL: none */
	const char *tid;
	size_t tid_len;
	/* what follows the process's directory (task/TID when there is one)
	 * in the path, from its first component on: "" for none; a trailing
	 * "/" kept */
	const char *rest;
};

/* Parses the absolute path into *ret (its pointers into path). */
void hookpath_proc_parse(const char *path, struct hookpath_proc *ret);

/* Whether the path (resolved) is hidden from a file tool as a process's
 * own in /proc (core/hook/hook.c): /proc/PID/NAME or /proc/PID/task/TID/NAME
 * (and below), NAME none of its name, state, usage and limits (comm, stat,
 * status, ...): environ holds the host's API keys; cmdline, mem, auxv,
 * maps, fd/ and the links out of it (root, cwd, exe: hookpath_resolve()
 * keeps them as named) what else it holds. Also /proc/self and
 * thread-self, and a path with a "..". When root (a directory the tool
 * reads below), also one that holds such: "/", /proc, /proc/PID, its
 * task/ and task/TID. */
bool hookpath_proc_hidden(const char *path, bool root);

/* Whether the path (resolved; for one that is not there, the nearest
 * directory that is) is on a procfs the text does not name /proc: one
 * mounted elsewhere or a bind mount of part of one, which holds every
 * process's environ and links (hookpath_proc_hidden() reads only the text
 * "/proc"). A path below /proc: false (that is hookpath_proc_hidden()'s). */
bool hookpath_on_procfs(const char *path);

/* Whether a procfs is mounted at or below one of the directories dirs (in
 * the hook's mount namespace, /proc/self/mountinfo, read once): a tool
 * that reads below it reads that. 1 with *ret_index, 0, or -errno of
 * reading mountinfo. */
int hookpath_procfs_below(char *const *dirs, size_t *ret_index);

/* SPDX-License-Identifier: MIT */
#pragma once

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

/* path as the kernel will resolve it once the tool has created what is
 * missing: every symlink followed (a dangling one too: writing it creates
 * its target; a ".." after a symlink goes to its target's parent) but a
 * process's open file in /proc (/proc/PID/fd/N, map_files/: kept as
 * named, a file; what opening it reaches may have no name), a
 * component that does not exist taken as a directory the tool makes, as a
 * plain one, and everything below it as text, until a ".." drops it: from
 * there on, lookups go on (x/../link follows link). A relative path is
 * relative to base (the process's cwd when NULL, or below it when base is
 * relative). cache (may be NULL) holds what earlier walks of the same call
 * found: the check of one tool call takes the host's paths as they were
 * when first looked at. NULL: out of memory, more than 40 symlinks, a
 * component lstat() cannot tell of (one deeper than PATH_MAX, reached
 * through links: the kernel follows what is there), or /proc/self (or
 * thread-self): the hook's own, not the tool's. */
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

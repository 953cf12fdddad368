/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The symlinks below the directories a tool reads that follows them (a
 * host's link_tools, core/agents/agenthost.h): each is a path the tool
 * reaches, checked like one it names (core/hook/hook.c). */

/* Entries one hook call looks through at most: past them the call is
 * refused, not passed unlooked at. */
#define HOOKLINKS_MAX 20000

struct hooklinks {
	size_t entries; /* read so far, over all of the call's walks */
	size_t max; /* past this many, a walk fails with -E2BIG */
	struct hooklinks_seen {
		dev_t dev;
		ino_t ino;
		bool pruned; /* walked with prune (hooklinks_walk()) only */
	} * seen; /* the directories walks started at */
	size_t n_seen, cap_seen;
};

void hooklinks_release(struct hooklinks *w);

/* The names of the directories a walk with prune set does not list when it
 * meets one below its start: those Gemini CLI's globs never descend below
 * their cwd (COMMON_IGNORE_PATTERNS: docs/gate.md, "Links below a
 * directory"). Matched exactly, and only in a directory whose names are
 * exact (dirread_exact(): no case-folding): a name differing in case, or
 * one a lookup of a name differing in case finds, is listed. */
extern const char *const hooklinks_pruned[];

/* Appends to *links (a strv) the path (dir/...) of every symlink in the
 * directory dir (absolute, resolved) and in every directory below it,
 * found by listing, never following one (d_type, else
 * fstatat(AT_SYMLINK_NOFOLLOW)); with prune, a directory named in
 * hooklinks_pruned strictly below dir is not listed (a symlink so named
 * is one of *links). A dir w started a walk at before (its device and
 * inode) is not walked again, unless that walk pruned and this one does
 * not: a link to a directory above walks it once. dir missing, no directory or not readable holds none, as
 * does a directory below it the tool cannot read either (EACCES) or that
 * is gone since it was listed; one that is a symlink since is one of
 * *links. 0; -E2BIG: more than w->max entries over w's walks (those past
 * them not looked at); -ENOMEM; -errno: a listing failed (its names not
 * all read). */
int hooklinks_walk(struct hooklinks *w, const char *dir, bool prune, char ***links);

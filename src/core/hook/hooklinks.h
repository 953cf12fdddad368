/* SPDX-License-Identifier: MIT */
#pragma once

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
	} * seen; /* the directories walks started at */
	size_t n_seen, cap_seen;
};

void hooklinks_release(struct hooklinks *w);

/* Appends to *links (a strv) the path (dir/...) of every symlink in the
 * directory dir (absolute, resolved) and in every directory below it,
 * found by listing, never following one (d_type, else
 * fstatat(AT_SYMLINK_NOFOLLOW)). A dir w started a walk at before (its
 * device and inode) is not walked again: a link to a directory above
 * walks it once. dir missing, no directory or not readable holds none, as
 * does a directory below it the tool cannot read either (EACCES) or that
 * is gone since it was listed; one that is a symlink since is one of
 * *links. 0; -E2BIG: more than w->max entries over w's walks (those past
 * them not looked at); -ENOMEM; -errno: a listing failed (its names not
 * all read). */
int hooklinks_walk(struct hooklinks *w, const char *dir, char ***links);

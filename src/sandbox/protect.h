/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

/* Paths kept read-only inside the writable workspace, planned in the parent
 * before clone() (docs/sandbox.md, "Read-only paths in the workspace").
 *
 * Each path is walked from "/" the way the kernel resolves it, one component
 * at a time with lstat() and readlink(). Below the workspace:
 *   - the path itself gets a read-only mount;
 *   - every directory and symlink on the way to it is pinned (mounted on
 *     itself, writable), so it cannot be renamed or removed to plant a
 *     replacement: mountpoints are EBUSY;
 *   - a symlink is followed, so the file it points to is what is protected;
 *   - the first component that does not exist yet gets a placeholder on the
 *     host, an empty directory (if more components follow) or file, created
 *     only to have something to mount on. Placeholders carry the xattr
 *     user.airlock.placeholder, are shared by concurrent runs under a shared
 *     flock, and are removed by the last run that used them. */

#define PROTECT_MAX_MOUNTS 128

struct protect_mount {
	char *path; /* host path; no symlink in its directories */
	bool read_only; /* false: a pin, as writable as the workspace */
};

struct protect_placeholder {
	char *path;
	int fd; /* holds LOCK_SH while this run may use it */
	int dir_fd; /* its directory, for removing it by name */
	bool ours; /* created by this run */
};

struct protect_plan {
	const char *workspace;
	bool no_pins; /* plan read-only mounts only (a snapshot's workspace) */
	struct protect_mount mounts[PROTECT_MAX_MOUNTS]; /* parents before children */
	size_t n_mounts;
	struct protect_placeholder *placeholders;
	size_t n_placeholders;
	char **enforced; /* the requested paths that are now protected */
};

/* Plans protection for an absolute, normalized path. A path that cannot be
 * protected without making the workspace itself read-only, or whose
 * placeholder the caller has no permission to create (so neither has the
 * command), is left out of plan->enforced. */
int protect_plan_add(struct protect_plan *plan, const char *path, struct error *err);
/* Orders the mounts so that parents are mounted first, and makes a pin below
 * a read-only mount read-only too. */
void protect_plan_finish(struct protect_plan *plan);
/* Whether path is a placeholder some run put there (and will remove): it
 * stands for a path that does not exist. */
bool protect_path_is_placeholder(const char *path);

/* Removes the placeholders no other run still uses, then frees. */
void protect_plan_release(struct protect_plan *plan);

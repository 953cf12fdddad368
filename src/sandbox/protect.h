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
 *   - a path (or one of its directories) that does not exist gets no
 *     mount and nothing on the host: the host's tree stays exactly as it
 *     is. The run's caller moves aside what the command created there
 *     (core/host/hostsafety.h), so such a path counts as enforced too. */

#define PROTECT_MAX_MOUNTS 128

struct protect_mount {
	char *path; /* host path; no symlink in its directories */
	bool read_only; /* false: a pin, as writable as the workspace */
};

struct protect_plan {
	const char *workspace;
	bool no_pins; /* plan read-only mounts only (a snapshot's workspace) */
	struct protect_mount mounts[PROTECT_MAX_MOUNTS]; /* parents before children */
	size_t n_mounts;
	char **enforced; /* the requested paths that are now protected */
};

/* Plans protection for an absolute, normalized path. A path that cannot be
 * protected without making the workspace itself read-only is left out of
 * plan->enforced. */
int protect_plan_add(struct protect_plan *plan, const char *path, struct error *err);
/* Orders the mounts so that parents are mounted first, and makes a pin below
 * a read-only mount read-only too. */
void protect_plan_finish(struct protect_plan *plan);
/* Frees the plan. */
void protect_plan_release(struct protect_plan *plan);

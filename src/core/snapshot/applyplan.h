/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "core/snapshot/applyop.h"
#include "core/snapshot/dryrun_dir.h"

/* Planning an apply: the operations that carry out a change set, in order. */

/* Collects d->new_dirs: the directories whose one move brings everything
 * below them. */
int applyplan_cover_build(struct dryrun_dir *d);
/* Under a created (or type-changed) directory, the directory's one move
 * brings everything below it: nothing below needs its own operation. One
 * binary search per parent of path: O(depth x log n), not a scan of the
 * change set (which made apply quadratic). */
bool applyplan_covered(const struct dryrun_dir *d, const char *path);
/* The operations, in order: renames, then removals (old objects into
 * backup/), then creations parents first, then content swaps, then mode
 * changes deepest first (a directory made read-only last). */
int applyplan_ops(struct dryrun_dir *d, struct applyop_list *ret);

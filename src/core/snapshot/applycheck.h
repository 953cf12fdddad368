/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_dir.h"

/* Checking the tree against the change set: the workspace still as the
 * dry run saw it, the staged objects as the change set lists them. */

/* The workspace's path opened as an object of its own (O_PATH, never a
 * symlink's target) for a change made in place (mode, attributes, owner)
 * or its undo: the descriptor, or -EMLINK when that change would reach a
 * name the dry run did not show, or a negative errno. The names shown are
 * its path, its entry's also_names and also_outside, and the names of its
 * group the command removed or replaced (wherever the apply has them then);
 * any other was linked since (a file outside the workspace made the
 * path's). */
int applycheck_open_in_place(struct dryrun_dir *d, const char *path);
/* Sets the carried attributes of the workspace's path to exactly want (the
 * change set's kinds of attributes), touching only
 * those that differ: those not in it removed, the others set, the ACLs last
 * (setting one sets the mode's bits too). Setting or removing a user.*
 * attribute needs write access to the object, which its owner may lack (a
 * read-only file): then the owner's write bit is lifted for those calls and
 * put back before the ACLs (struct applyfs_lift). Through an O_PATH descriptor of
 * the object itself (never a symlink's target), refused (-EMLINK) where it
 * would reach a name not shown (applycheck_open_in_place()). */
int applycheck_xattrs_set_at(struct dryrun_dir *d, const char *path,
			     const struct changeset_xattr_list *want);
/* Whether the workspace holds at path what the change says was there before
 * (after == false) or what the apply put there (after == true). */
bool applycheck_matches(struct dryrun_dir *d, const struct changeset_entry *e, const char *path,
			bool after, char *why, size_t why_size);
/* A second look at what would move in (docs/dryrun.md, "Set-id files"):
 * whatever the change set says, no staged object with a set-id bit or a
 * file capability reaches the real tree. The reason, or NULL. */
const char *applycheck_staged_privilege(struct dryrun_dir *d, const struct changeset_entry *e);
/* What was reviewed is what lands: the staged object of every change that
 * is not a deletion must still be exactly what its entry says (type, mode,
 * size and SHA-256 of a file, target of a symlink, the whole list of
 * carried attributes): the upper layer lies in the state directory and may
 * be edited after the dry run. From version 4 that includes the copied-up
 * object of a mode or attribute change (apply changes the real one in place
 * from the entry, but a staged copy that differs is an edit all the same);
 * the root's is not checked (the upper's root is the dry run's own
 * directory, its mode and attributes recorded at the end of the run).
 * false with why set (the path and what differs) when it is not. */
bool applycheck_staged_matches(struct dryrun_dir *d, const struct changeset_entry *e, char *why,
			       size_t why_size);

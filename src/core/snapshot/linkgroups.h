/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "core/snapshot/changeset_json.h"
#include "sandbox/sandbox.h"

/* The workspace's hard-link groups in a dry run's change set (docs/dryrun.md,
 * "Hard links of the tree"). In a user namespace the overlay has no inode
 * index: writing to one name of a lower group copies that name up as a new
 * inode, the others keep the old one, and a copy-up of a linked file gets no
 * origin, so the upper cannot tell an in-place change (the real run changes
 * every name) from a replacement (the real run splits the group). The
 * supervisor's trace of the command's calls on paths inside the workspace
 * (struct sandbox_path_event) tells them apart:
 *   - a name replaced (renamed over, removed and made again) splits off: its
 *     entry is `modified` with `link_split: true`, even with the same bytes,
 *     mode and attributes, so apply exchanges the new inode in under that
 *     name alone;
 *   - one name changed in place (`modified`: new bytes, or linked to a new
 *     name) with every other name of the group in the workspace: each other
 *     name still holding the old object gets a `modified` entry with
 *     `link_to` (the changed name) and `hard_link: true`, and is linked in
 *     the upper to the changed name's object, so apply moves that one inode
 *     in under every name; a mode or attribute changed in place is set in
 *     place on the shared inode by apply already, and its entry lists
 *     the other names the group keeps (`also_names`, stored like `path`)
 *     and the count of names outside the workspace (`also_outside`), to
 *     be shown for review;
 *   - anything else (two names changed in place, a name outside the
 *     workspace when the object changed in place, a name changed in place
 *     and then replaced or removed, a renamed directory above a name, a
 *     change the trace does not show, an incomplete trace) is a problem
 *     {"link_group": PATH, "reason": TEXT}: the verdict LINK_GROUP.
 * Only regular files of the workspace with st_nlink > 1 that the upper
 * holds under a name of theirs are looked at; their other names are found
 * by a walk of the workspace, made only then. */
struct linkgroups_trace {
	const struct sandbox_path_event *events;
	size_t n_events;
	bool overflow; /* incomplete: every touched group is a problem */
	/* The opens that only read were traced (struct
	 * sandbox_result.reads_traced). Not: a group the workspace holds now
	 * was linked after the dry run's scan found none, and a read of
	 * another name after an in-place change cannot be ruled out, so any
	 * name changed in place is a problem. */
	bool reads_traced;
};

/* Rewrites the change set (read from changeset_compute()'s sorted array)
 * as above, links the upper's names for `link_to` entries, and sets
 * *ret_problems (an array, empty when every group is reproduced). */
int linkgroups_judge(const char *upper, const char *workspace, struct changeset *cs,
		     const struct linkgroups_trace *trace, json_t **ret_problems, struct error *err);

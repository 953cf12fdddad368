/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/linkgroups.h"

/* The producer of a dry run's change set: the upper read against the
 * workspace (changeset_compute()), the document's header added, read by
 * the change set's one reader (changeset_from_json()), then its hard-link
 * groups judged on the struct (linkgroups_judge()). The walk's JSON stays
 * inside; what leaves is the struct, verdict DRY_RUN_OK until judged. */
struct changeset_collect_request {
	const char *upper, *workspace;
	mode_t root_mode; /* dryrun_settle(); 0: read the upper's root */
	bool owners; /* the quarantine mapped every id: owners are carried */
	/* The supervisor's trace for the hard-link groups; NULL: the groups
	 * are not judged (the command failed, nothing will be applied). */
	const struct linkgroups_trace *trace;
	uint64_t receipt;
	/* "scratch": what the command left in its private /tmp, when counted */
	bool scratch_counted;
	uint64_t scratch_entries, scratch_bytes;
};

/* ret_link_problems: the hard-link groups apply cannot reproduce
 * ([{link_group, reason}], linkgroups.h), empty when none. */
int changeset_collect(const struct changeset_collect_request *req, struct changeset **ret,
		      json_t **ret_link_problems, struct error *err);

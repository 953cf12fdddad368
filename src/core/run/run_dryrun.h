/* SPDX-License-Identifier: MIT */
#pragma once

/* Internal to core/run: a dry run's share of a run (run.c). The run builds
 * the quarantine; this part gives it the snapshot's overlay, keeps what the
 * quarantine saw of the command, and turns the snapshot into the receipt's
 * change set and verdict (core/snapshot/dryrun.h). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"
#include "core/snapshot/dryrun.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"

struct run_dryrun {
	char *upper, *work; /* the snapshot's overlay directories */
	bool ran; /* the snapshot was built and the command started in it */
	mode_t root_mode; /* the mode the command left on the workspace root */
	json_t *outside_writes; /* what the command tried to write outside */
	unsigned outside_writes_dropped;
	bool owners; /* every id mapped: the change set carries owners */
	unsigned device_nodes; /* device nodes root's real run would have made */
	unsigned privileged_xattrs; /* trusted.*, file capabilities: likewise */
	unsigned setid_refused; /* set-id requests the filter refused */
	char setid_syscall[24]; /* the first one's system call */
	/* the traced calls on paths inside the workspace (heap) */
	struct sandbox_path_event *path_events;
	size_t n_path_events;
	bool path_events_overflow;
	bool reads_traced;
	/* what the command left in the private /tmp */
	bool scratch_counted;
	uint64_t scratch_entries, scratch_bytes;
};

void run_dryrun_release(struct run_dryrun *dr);

/* Creates the snapshot's overlay for receipt id and points iso at it. */
int run_dryrun_prepare(struct run_dryrun *dr, struct store *store, uint64_t id, uint64_t permit_id,
		       const char *workspace, struct sandbox_isolation *iso, struct error *err);

/* Once the quarantine is gone (its overlay with it): settles the snapshot
 * and keeps what res says of the command (it takes res's path events). */
int run_dryrun_collect(struct run_dryrun *dr, struct sandbox_result *res, struct error *err);

/* The change set and verdict, for the receipt: base carries the run's side
 * (workspace, succeeded, expect, expect_delete, host_code), doc the receipt
 * so far, for the hints its output gives. A dry run whose snapshot was never
 * built (a refusal, a setup failure) has none. */
int run_dryrun_finish(const struct run_dryrun *dr, const struct dryrun_request *base,
		      struct store *store, uint64_t id, json_t *doc, json_t **ret_summary,
		      enum dryrun_verdict *ret_verdict, struct error *err);

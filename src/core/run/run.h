/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/snapshot/dryrun.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/record/receipt.h"
#include "core/record/request.h"

/* What became of one attempt, for the front end to print and turn into an
 * exit status. */
struct run_outcome {
	uint64_t id;
	enum receipt_status status;
	int exit_code; /* valid for RECEIPT_EXITED */
	int signal; /* valid for RECEIPT_SIGNALED, and a timeout's last signal */
	bool timed_out;
	bool match_expected;
	uint64_t output_bytes; /* stdout + stderr */
	unsigned descendants_killed;
	/* Files that would run code on the host were found (and, but in a dry
	 * run, moved aside), or the workspace could not be checked. */
	bool host_code_failed;
	char message[1024]; /* why it did not run or finish; empty for exited/signaled */
	json_t *receipt; /* the document written */
	char warning[1024]; /* a non-fatal problem (index not updated); may be empty */
	/* What the receipt did to the gate (core/gate/gate.h) */
	bool failure_opened;
	uint64_t closes[16];
	size_t n_closes;
	char gate_note[256]; /* why --fixes closed nothing, if it did not */
	/* A --fixes run that passed: its re-run of the failure (docs/gate.md),
	 * whose outcome is in rerun (NULL if it could not be recorded). */
	uint64_t rerun_id;
	struct run_outcome *rerun;
	enum dryrun_verdict verdict; /* dry runs: the receipt's; DRYRUN_VERDICT_NONE otherwise */
};

void run_outcome_release(struct run_outcome *outcome);

struct session;
struct run_context {
	/* The command's (core/session/session.h): the state directory (created
	 * when missing; a run sets its policy's fsync_receipts on the store
	 * only while it runs) and the caller's environment, where allowlisted
	 * values come from. */
	struct session *session;
	/* This run's policy, NULL: the built-in one (a re-run takes the failed
	 * attempt's, not the session's) */
	const char *policy_path;
	/* A dry run's change set judged, before its syncs (dryrun_finish()):
	 * a permit starts `git ls-files` there. {NULL}: none. */
	struct dryrun_judged_hook dryrun_judged;
};

/* Runs req and writes its receipt, or records why it did not run (invalid
 * input, policy denial, command not found). Returns 0 when a receipt was
 * written, else a negative errno with err set (no state directory, disk
 * full); *ret is then partly filled at most. */
int run_execute(const struct run_context *ctx, const struct run_request *req,
		struct run_outcome *ret, struct error *err);

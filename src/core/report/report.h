/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* What `airlock report` shows (docs/report.md), gathered from the state
 * directory as typed structs: the runs from the index, the gate's open and
 * closed failures, the permits with their dry runs' change sets as diffs,
 * and the ledger with a verification made now. Read-only: nothing here
 * writes to the state directory or the workspaces.
 *
 * Every string is as recorded: the command, the model or the workspace
 * chose it (argv, output, paths, reasons, labels), so whoever writes it out
 * escapes it. Numbers (ids, counts, risks) are the only values a writer may
 * put into a link or an attribute unescaped. */

struct store;
struct ledger_vkey;

/* The timeline keeps the newest runs in detail; the rest are counted. */
#define REPORT_TIMELINE_DEFAULT 2000
/* A file of a change set is diffed when both sides are at most this big. */
#define REPORT_DIFF_MAX_BYTES (256 * 1024)
/* At most this many files of one change set are read for diffs. */
#define REPORT_DIFF_MAX_FILES 200

struct report_options {
	const char *since; /* RFC 3339 UTC with milliseconds: runs started at or after; NULL: all */
	const char *workspace; /* an absolute, resolved directory: runs whose cwd is in it; NULL: all */
	size_t timeline_max; /* 0: REPORT_TIMELINE_DEFAULT */
	/* The key the ledger is verified with; NULL: the state directory's
	 * own (which shows the log is whole, not who signed it). */
	const struct ledger_vkey *vkey;
};

struct report_run {
	uint64_t id;
	char *started_at, *status, *cwd;
	char **argv; /* NULL-terminated */
	bool has_exit;
	int64_t exit_code;
	int64_t duration_ms;
	bool failed; /* did not match its expected exit, or left code for the host */
};

struct report_count {
	char *name;
	size_t n;
};

struct report_failure {
	uint64_t receipt;
	bool open;
	char *scope, *argv_text; /* argv joined by spaces, from the index or the open entry */
	char *opened_at; /* the failed run's start */
	/* closed: how */
	char *move, *reason, *approver, *closed_at;
	uint64_t by_receipt; /* rerun, fixes: the receipt that closed it; 0 for acks */
	uint64_t fix_receipt; /* fixes: the `--fixes` run the re-run followed; 0: none */
	char *rejected; /* open: why its close record does not hold, or NULL */
	char *output; /* the end of what the failed command wrote (its receipt's, or the open entry's tail) */
};
/* How much of a failed command's output the report shows, per stream. */
#define REPORT_OUTPUT_TAIL 2048

struct report_event {
	char *at, *from, *to, *event, *detail; /* detail: what the step added, as JSON */
};

/* One file of a change set. */
struct report_file {
	char *path, *change, *type;
	int64_t size, old_size; /* -1: none */
	char *diff; /* the unified diff's body (diff.h), or NULL */
	char *summary; /* when there is no diff: why (binary, too big, not kept, ...) */
};

struct report_permit {
	uint64_t id;
	char *label, *reason, *state, *workspace, *argv_text, *created_at;
	bool via_shell;
	int risk, risk_declared, risk_classified, risk_observed;
	char *classify_rule, *observed_why;
	uint64_t dryrun_id; /* 0: none */
	const char *dryrun_state; /* dryrun_state_name(): NULL when none is recorded, or gone */
	char *verdict;
	char *approver_key; /* the approval's public key (hex), or NULL */
	struct report_event *history;
	size_t n_history;
	struct report_file *files;
	size_t n_files, files_total;
	char *files_error; /* the change set could not be read: why */
};

struct report_ledger {
	bool present; /* the state directory has a ledger */
	bool own_key; /* verified with the state directory's own key */
	char *error; /* verification could not run: why */
	uint64_t size, checkpoint_size, unsigned_entries;
	char *root_b64;
	char *checkpoint; /* the latest signed checkpoint's text */
	char *verdict; /* OK, TAMPERED, RECORDS_DIFFER, TORN_TAIL */
	char **findings; /* "KIND what", at most REPORT_FINDINGS_MAX, NULL-terminated */
	size_t n_findings;
};
#define REPORT_FINDINGS_MAX 100

struct report {
	char *state_dir, *generated_at;
	bool no_state; /* the state directory does not exist yet */
	size_t index_skipped; /* damaged index lines */
	/* The runs the filters keep: how many, failed, by status, and the
	 * newest of them in detail, newest first. */
	size_t runs_total, runs_failed;
	struct report_count *statuses;
	size_t n_statuses;
	char **workspaces; /* the distinct cwds of the kept runs, sorted, at most REPORT_WORKSPACES_MAX */
	size_t n_workspaces;
	struct report_run *runs;
	size_t n_runs;
	struct report_failure *failures; /* open first, then closed; newest first */
	size_t n_failures;
	struct report_permit *permits; /* newest first */
	size_t n_permits, permits_damaged;
	struct report_ledger ledger;
};
#define REPORT_WORKSPACES_MAX 200

/* Gathers the report of store (NULL: no state directory yet, an empty
 * report) at state_dir. */
int report_gather(struct store *store, const char *state_dir, const struct report_options *o,
		  struct report *ret, struct error *err);
void report_release(struct report *r);

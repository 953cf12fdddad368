/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "core/permit/record.h"
#include "core/record/receipt.h"
#include "core/snapshot/dryrun_verdict.h"

/* airlock's own exit statuses (docs/exit-codes.md). For run and job, a
 * command that exited returns its own status and a signal 128+N, like a
 * shell; these are the statuses airlock chooses itself. */
enum {
	EXIT_OK = 0,
	EXIT_NOT_FOUND_ITEM = 1, /* show: no such receipt */
	/* hook: a broken invocation with no failure open: the host warns and
	 * runs the tool; install --check: the hooks are missing or differ */
	EXIT_HOOK_MISCONFIGURED = 1,
	EXIT_GATE_BLOCKED = 2, /* gate: a failure is open; hook: block */
	EXIT_DRYRUN_NO_EFFECT = 10, /* dryrun verdicts other than DRY_RUN_OK and DRY_RUN_FAILED */
	EXIT_DRYRUN_UNEXPECTED_PATH = 11,
	EXIT_DRYRUN_EXPECTED_PATH_MISSING = 12,
	EXIT_DRYRUN_PRIVILEGED_FILE = 13, /* a set-id file or file capability: never applied */
	/* run: the command succeeded but left code for the host, moved aside;
	 * dryrun: verdict HOST_CODE */
	EXIT_HOST_CODE = 14,
	EXIT_DRYRUN_OUTSIDE_WRITE = 15, /* the command attempted writes outside the workspace */
	/* root's real run would have done what the quarantine cannot (a device node) */
	EXIT_DRYRUN_NEEDS_PRIVILEGE = 18,
	EXIT_DRYRUN_ATTRS_LOST = 17, /* a copy in the snapshot lost attributes a rename keeps */
	EXIT_DRYRUN_LINK_GROUP = 16, /* a hard-link group the snapshot cannot reproduce */
	/* a directory rename the snapshot's copy could not finish: the source remains */
	EXIT_DRYRUN_RENAME_INCOMPLETE = 19,
	EXIT_CONFLICT = 20, /* apply, rollback: the tree changed since; nothing was changed */
	EXIT_REFUSED = 21, /* apply, rollback, discard: the verdict or state does not allow it */
	/* permit: the state a step ended in (docs/exit-codes.md) */
	EXIT_PERMIT_INVALID = 30,
	EXIT_PERMIT_NO_EFFECT = 31,
	EXIT_PERMIT_UNEXPECTED_PATH = 32,
	EXIT_PERMIT_EXPECTED_PATH_MISSING = 33,
	EXIT_PERMIT_DRY_RUN_FAILED = 34,
	EXIT_PERMIT_REJECTED = 35,
	EXIT_PERMIT_NOT_APPROVED = 36, /* REJECTED_WITHOUT_APPROVAL */
	EXIT_PERMIT_ROLLED_BACK = 37,
	EXIT_LEDGER_TAMPERED = 1, /* ledger verify, verify-proof: the log was rewritten */
	EXIT_LEDGER_RECORDS_DIFFER = 2, /* ledger verify: a record differs from the log */
	EXIT_LEDGER_TORN_TAIL = 3, /* ledger verify: only a torn tail, for `ledger recover` */
	EXIT_LEDGER_NO_QUORUM = 4, /* ledger verify --policy: too few valid cosignatures */
	EXIT_NOT_APPROVED = 77, /* ack: the approver's passphrase was needed and not given */
	EXIT_TIMEOUT = 124,
	EXIT_AIRLOCK_ERROR = 125, /* airlock failed or the input was invalid: nothing ran */
	EXIT_CANNOT_EXECUTE = 126, /* found but not executable, or denied by policy */
	EXIT_COMMAND_NOT_FOUND = 127,
};

int exit_status_for_receipt(enum receipt_status status, int exit_code, int signal);

/* The status for a core step's negative errno, as apply, rollback, discard
 * and the permit steps share it: -ENOENT no such item, -EBUSY CONFLICT,
 * -EPERM refused, anything else airlock's own error; 0 is EXIT_OK. */
int exit_status_for_error(int r);

/* Every other mapping of a core outcome to a status lives here too, so that
 * docs/exit-codes.md has one table to match. */
/* A permit's state after a step (docs/exit-codes.md, "airlock permit"). */
int exit_status_for_permit_state(enum permit_state s);
/* A permit step's error: exit_status_for_error(), and -EACCES, a missing
 * approval (ack's status when approving, REJECTED_WITHOUT_APPROVAL's at exec). */
int exit_status_for_permit_error(int r, bool approving);
/* dryrun: one status per verdict; the run's status (run_status, else
 * airlock's error) when the command failed or there is no verdict. */
int exit_status_for_dryrun_verdict(enum dryrun_verdict verdict, int run_status);
/* ledger verify: the worst finding's status, EXIT_OK for none. */
int exit_status_for_ledger_verify(bool tampered, bool differs, bool torn);
/* ledger key, checkpoint, prove, consistency: -EBADMSG the log was
 * rewritten, -ENOENT no such entry or checkpoint, else airlock's error. */
int exit_status_for_ledger_error(int r);

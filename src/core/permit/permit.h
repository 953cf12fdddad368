/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/permit/proposal.h"
#include "core/permit/record.h"
#include "core/permit/storage.h"
#include "core/policy/rules.h"
#include "core/run/run.h"
#include "core/store/store.h"

/* Permits (docs/permit-format.md): a model's proposed command earns
 * execution. The proposal is parsed strictly, classified, dry-run on a
 * snapshot, judged by what the dry run changed, approved by the human where
 * its risk asks for it, and executed by applying the dry run's change set
 * (core/snapshot/apply.h), never by running the command again. Every state change is
 * committed by permit_commit_transition(), the one place the ledger is to be
 * wired in. A permit lives in permits/<id>.json in the state directory. */

/* Records a proposal; p->state is PROPOSED, or REJECTED when the declared or
 * classified risk is 5, or INVALID when parse_error is set (then proposal
 * may be NULL and text is the raw input, kept by its digest). */
int permit_propose(struct store *store, const struct rules *rules,
		   const struct permit_proposal *proposal, const char *text, size_t n,
		   const char *parse_error, const char *workspace, struct permit *ret,
		   struct error *err);

/* permit_dryrun, _approve, _deny and _exec lock the permit
 * (permits/<id>.lock) for their whole course. -ENOENT: no such permit;
 * -EPERM: its state does not allow the step (the message says which). */

/* Dry-runs the permit's argv on a snapshot with its expected paths and
 * judges it; p is the permit afterwards. */
int permit_dryrun(const struct run_context *ctx, struct store *store, const struct rules *rules,
		  uint64_t id, struct permit *ret, struct error *err);

/* What the approver signs, for the front end to show: -EPERM when the
 * permit cannot be approved, or what is on disk no longer matches it. */
int permit_approval_message(struct store *store, const struct rules *rules, uint64_t id,
			    char **ret_message, struct error *err);
/* -EACCES: the passphrase is not the approver's, or none is enrolled
 * (-ENOENT from the approver). */
int permit_approve(struct store *store, const struct rules *rules, uint64_t id,
		   const char *passphrase, struct permit *ret, struct error *err);
/* Commits APPROVED with an approval made elsewhere (an approver's
 * `airlock fleet approve`, fetched from the mirror): only when it is the
 * approver in effect's signature (approver_load_in_effect()) over
 * permit_message_for_origin() of the permit as it is now and this host's
 * log origin (its ledger key's name, never the mirror's word), after the checks
 * permit_approve() makes. The history's "approve" event names where it came
 * from ("via": via). -EACCES with the one-line reason, nothing committed,
 * when the approval is not that. */
int permit_approve_signed(struct store *store, const struct rules *rules, uint64_t id,
			  json_t *approval, const char *via, struct permit *ret, struct error *err);
int permit_deny(struct store *store, uint64_t id, const char *reason, struct permit *ret,
		struct error *err);

struct permit_exec_result {
	uint64_t verify_receipt; /* 0: no verify ran */
	int verify_exit; /* the verify's exit code, -1 when it did not exit */
	size_t ops;
	char note[1024];
};
/* Whether permit_exec() takes p from PROPOSED itself (dry run, then
 * apply): risk 3 or less. A PROPOSED permit of risk 4 keeps its steps:
 * dryrun, the approver, exec. */
bool permit_exec_dry_runs(const struct permit *p);

/* Applies the dry run's change set (APPLIED), runs verify (verify, else the
 * proposal's) on a snapshot of the result, and rolls back when it fails
 * (ROLLED_BACK). -EACCES: risk 4 without a valid approval
 * (REJECTED_WITHOUT_APPROVAL); -EBUSY: CONFLICT. A dry run found applied
 * (an exec that crashed before its commit) is recorded APPLIED and goes on
 * to verify: the earlier exec applied it after the same checks. A PROPOSED
 * permit of risk 3 or less is dry-run first (permit_dryrun's transition,
 * committed), and applied only when that dry run is DRY_RUN_OK: p is then
 * in the dry run's state when it is not (r == 0); a PROPOSED permit of risk
 * 4 is -EPERM. Fault points
 * (basic/faultpoint.h): apply's "apply.operation", and
 * "permit.exec.applied" after the apply, before APPLIED is committed. */
int permit_exec(const struct run_context *ctx, struct store *store, const struct rules *rules,
		uint64_t id, char *const *verify, struct permit *ret,
		struct permit_exec_result *res, struct error *err);

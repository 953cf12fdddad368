/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/sha256.h"
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

#define PERMIT_SCHEMA		 "airlock.permit/1"
#define PERMIT_APPROVAL_SCHEMA	 "airlock.permit-approval/1"
#define PERMIT_PROPOSAL_MAX	 (1 << 20)
#define PERMIT_TIMEOUT_DEFAULT	 20
#define PERMIT_TIMEOUT_MAX	 3600
#define PERMIT_MAX_PATHS	 256
#define PERMIT_LABEL_MAX	 128 /* bytes of the proposer's label */

enum permit_state {
	PERMIT_INVALID, /* the proposal did not parse: recorded, never runs */
	PERMIT_PROPOSED,
	PERMIT_DRY_RUN_FAILED,
	PERMIT_NO_EFFECT, /* final: nothing to apply (risk 1 and 2 end here) */
	PERMIT_UNEXPECTED_PATH,
	PERMIT_EXPECTED_PATH_MISSING,
	PERMIT_REJECTED, /* risk 5: never executed */
	PERMIT_DRY_RUN_OK,
	PERMIT_REJECTED_WITHOUT_APPROVAL, /* exec of a risk-4 permit without a valid approval */
	PERMIT_APPROVED,
	PERMIT_DENIED,
	PERMIT_CONFLICT, /* the tree changed since the dry run; nothing was changed */
	PERMIT_APPLIED,
	PERMIT_ROLLED_BACK, /* applied, verify failed, the journal undid it */
	_PERMIT_STATE_MAX,
};

const char *permit_state_to_string(enum permit_state s);
int permit_state_from_string(const char *s); /* -EINVAL when unknown */

/* What the model proposed. argv is what runs: the proposal's argv, or
 * {"sh", "-c", candidate} when it gave a shell string (via_shell). */
struct permit_proposal {
	char *label; /* the proposer's own name for it (the seed's "id"), or NULL */
	char **argv;
	char *candidate; /* the shell string as given, or NULL */
	bool via_shell;
	char *reason;
	char **expected_paths; /* clean relative patterns */
	char *rollback; /* recorded; a shell string, or NULL */
	char **verify; /* an argv run after exec on a snapshot, or NULL */
	unsigned timeout_seconds;
	int declared_risk; /* 0: none declared */
	bool has_confidence;
	double confidence;
};
void permit_proposal_release(struct permit_proposal *p);

/* The model's JSON (docs/permit-format.md, "The proposal"): unknown keys,
 * wrong types, an empty candidate or argv, absolute or ".." expected paths
 * are -EINVAL with a message naming what was wrong. */
int permit_parse_proposal(const char *text, size_t n, struct permit_proposal *ret,
			  struct error *err);

struct permit {
	uint64_t id;
	enum permit_state state;
	struct permit_proposal p;
	char *workspace;
	char *created_at;
	char *invalid_reason; /* PERMIT_INVALID: why; the proposal's digest is kept */
	char proposal_sha256[SHA256_HEX_SIZE];
	/* Risk: the highest of declared, classified and observed (0: not yet). */
	int risk, risk_classified, risk_observed, rollback_risk;
	char classify_rule[64];
	char classify_reason[256]; /* the rules' reason, naming the deciding commands */
	char observed_why[512];
	uint64_t dryrun_id; /* 0: no dry run yet */
	char changeset_sha256[SHA256_HEX_SIZE];
	json_t *approval; /* the approver's signature object, or NULL */
	json_t *history; /* [{at, from, to, event, ...}], append-only */
};
void permit_release(struct permit *p);

/* The record's parser (permits/<id>.json), strict like the proposal's. */
int permit_parse(const char *text, size_t n, struct permit *ret, struct error *err);
json_t *permit_to_json(const struct permit *p);

/* The one commit path of a permit: sets p's state to `to`, appends
 * {at, from, to, event} and the members of detail (may be NULL) to its
 * history, and writes permits/<id>.json atomically (a temporary file,
 * fsync, rename over the old record, fsync of the directory). A transition
 * the state machine does not allow is -EPERM and writes nothing. */
int permit_commit_transition(struct store *store, struct permit *p, enum permit_state to,
			     const char *event, json_t *detail, struct error *err);

/* Records a proposal; p->state is PROPOSED, or REJECTED when the declared or
 * classified risk is 5, or INVALID when parse_error is set (then proposal
 * may be NULL and text is the raw input, kept by its digest). */
int permit_propose(struct store *store, const struct rules *rules,
		   const struct permit_proposal *proposal, const char *text, size_t n,
		   const char *parse_error, const char *workspace, struct permit *ret,
		   struct error *err);

int permit_load(struct store *store, uint64_t id, struct permit *ret, struct error *err);
/* Every permit's record, oldest first; a damaged record is counted. */
int permit_list(struct store *store, struct permit **ret, size_t *ret_n, size_t *ret_damaged,
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
int permit_deny(struct store *store, uint64_t id, const char *reason, struct permit *ret,
		struct error *err);

struct permit_exec_result {
	uint64_t verify_receipt; /* 0: no verify ran */
	int verify_exit; /* the verify's exit code, -1 when it did not exit */
	size_t ops;
	char note[1024];
};
/* Applies the dry run's change set (APPLIED), runs verify (verify, else the
 * proposal's) on a snapshot of the result, and rolls back when it fails
 * (ROLLED_BACK). -EACCES: risk 4 without a valid approval
 * (REJECTED_WITHOUT_APPROVAL); -EBUSY: CONFLICT. A dry run found applied
 * (an exec that crashed before its commit) is recorded APPLIED and goes on
 * to verify: the earlier exec applied it after the same checks. Fault points
 * (basic/faultpoint.h): apply's "apply.operation", and
 * "permit.exec.applied" after the apply, before APPLIED is committed. */
int permit_exec(const struct run_context *ctx, struct store *store, const struct rules *rules,
		uint64_t id, char *const *verify, struct permit *ret,
		struct permit_exec_result *res, struct error *err);

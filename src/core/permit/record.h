/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/permit/proposal.h"

/* A permit's record (permits/<id>.json): its states, its parser and writer. */

#define PERMIT_SCHEMA	       "airlock.permit/1"
#define PERMIT_APPROVAL_SCHEMA "airlock.permit-approval/1"

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

/* The state machine (docs/permit-format.md, "States"). from == to happens
 * for a repeated REJECTED_WITHOUT_APPROVAL, and APPLIED to APPLIED records
 * a verify that passed. */
bool permit_transition_allowed(enum permit_state from, enum permit_state to);
/* What the approver signs: the permit's id and the SHA-256 of its covered
 * fields (sorted keys, compact), which include the change set's digest. */
int permit_message(const struct permit *p, char **ret, struct error *err);
/* What an approval made away from the host signs (`airlock fleet approve`,
 * fetched through the mirror): permit_message() and one more line,
 * "origin=<the host's log origin>\n", so that a signature over one host's
 * permit is no approval of another host's permit alike in every covered
 * field. -EINVAL for an origin that is empty or holds a line break. */
int permit_message_for_origin(const struct permit *p, const char *origin, char **ret,
			      struct error *err);
/* The value of an approval message's last line when it is an origin line,
 * or NULL (none: permit_message()'s last line is its digest); points into
 * message, its length in *ret_n. */
const char *permit_message_origin(const char *message, size_t *ret_n);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/policy/policy.h"
#include "core/store/store.h"

/* The approver's approvals of policy files (docs/policy-format.md, "Widening
 * needs the approver"). A --policy file that widens the built-in policy
 * (policy_widenings()) applies only once the approver has signed its
 * SHA-256: the record policies/<sha256>.json in the state directory,
 * committed through store_commit() as a policy-approval entry whose id is
 * the digest. The signature is over "airlock.policy-approval/1\nsha256=<hex>\n":
 * it approves those bytes wherever they lie, and nothing else. A widening
 * marked never (sandbox.profile "none") is not approved at all. */
#define POLICYAPPROVAL_SCHEMA "airlock.policy-approval/1"

/* A policy file as the approver is shown it, read once: what is approved
 * is the digest of these bytes, not of the file as it is later. */
struct policyapproval_review {
	struct policy *policy;
	struct policy_widening widenings[POLICY_MAX_WIDENINGS];
	size_t n_widenings;
};
void policyapproval_review_release(struct policyapproval_review *r);
int policyapproval_review(const char *path, struct policyapproval_review *ret, struct error *err);

/* Signs the reviewed digest with the approver in effect and commits the
 * record (replacing an earlier one of that digest). -EPERM when a widening
 * is never approvable, -EACCES when no approver is in effect or the
 * passphrase is not the approver's. With a NULL passphrase it only checks
 * all else (0: the approver may sign). *ret_fingerprint: the approver's.
 * store may be NULL in policyapproval_check(): nothing is approved. */
int policyapproval_approve(struct store *store, const struct policyapproval_review *review,
			   const char *passphrase, char ret_fingerprint[static 20], struct error *err);

/* 0 when the approver approved the digest: its record exists, the ledger's
 * last entry for it is a policy-approval of that digest with the record's
 * bytes, the record names the digest and carries a signature over it that
 * verifies under a key approver_trusts(). Else a negative errno, and why. */
int policyapproval_check(struct store *store, const char sha256[SHA256_HEX_SIZE], struct error *why);

/* Whether a policy file is refused for a run: it widens the built-in
 * policy and its digest is not approved, or it widens what is never taken
 * from a file. Fills *ret_denial (rule "policy_widens", the first widening
 * field as its value). Whatever stops the comparison or the check (no
 * memory, an unreadable ledger) refuses too. */
bool policyapproval_denies(struct store *store, const struct policy *policy,
			   struct policy_denial *ret_denial);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/permit/permit.h"

/* Approvals made away from the permit's host (docs/fleet.md, "Approving from
 * one place"): `airlock fleet approve` puts the approver's signature in the
 * mirror (schema version 3's airlock.approvals); the host fetches its own
 * permits' approvals as its pusher role (airlock.approvals_for()) and commits
 * one through permit_approve_signed(), which checks it against the permit as
 * it is now, this host's own log origin and the approver in effect here.
 * The database is never trusted for an approval. */

enum mirrorapproval_outcome {
	MIRRORAPPROVAL_NONE, /* not asked (no mirror, the permit needs none), or none held */
	MIRRORAPPROVAL_UNREACHABLE, /* the mirror could not be read: why says so */
	MIRRORAPPROVAL_APPROVED, /* one verified and is committed: p is the permit */
	MIRRORAPPROVAL_REFUSED, /* the mirror holds approvals and none verifies: why */
};

struct mirrorapproval_result {
	enum mirrorapproval_outcome outcome;
	size_t held; /* approvals the mirror holds for the permit */
	char why[1024];
};

/* For permit id, when a mirror is configured and the permit awaits an
 * approval (DRY_RUN_OK or REJECTED_WITHOUT_APPROVAL, risk 4, none recorded):
 * the mirror's approvals of it, newest first, each tried with
 * permit_approve_signed(..., "mirror") until one is committed. Never blocks
 * on a mirror that is down (libpq's connect_timeout) and never fails for
 * it: res says what happened. A negative errno only for a local error. */
int mirrorapproval_fetch(struct store *store, const struct rules *rules, uint64_t id,
			 struct permit *ret, struct mirrorapproval_result *res, struct error *err);

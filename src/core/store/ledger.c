/* SPDX-License-Identifier: MIT */
#include "core/store/ledger.h"
#include "core/store/statepath.h"

#include <errno.h>

static const char *const ledger_kinds[LEDGER_KIND_MAX] = {
	[LEDGER_RECEIPT] = "receipt",
	[LEDGER_GATE_OPEN] = "gate-open",
	[LEDGER_GATE_CLOSE] = "gate-close",
	[LEDGER_DRYRUN] = "dryrun",
	[LEDGER_APPLY] = "apply",
	[LEDGER_ROLLBACK] = "rollback",
	[LEDGER_APPROVER_ENROL] = "approver-enrol",
	[LEDGER_APPROVER_CHANGE] = "approver-change",
	[LEDGER_PERMIT_TRANSITION] = "permit-transition",
	[LEDGER_RECOVERED] = "recovered",
	[LEDGER_DISCARD] = "discard",
	[LEDGER_POLICY_APPROVAL] = "policy-approval",
	[LEDGER_MIRROR_RESOLVE] = "mirror-resolve",
};

/* The records verify walks, in this order. */
static const char *const ledger_json[] = { "*.json", NULL };
static const char *const ledger_approver[] = { STATEPATH_APPROVER, NULL };
static const char *const ledger_dryrun[] = { STATEPATH_CHANGESET, STATEPATH_STATE, NULL };
static const struct ledger_records ledger_records[] = {
	{ STATEPATH_RECEIPTS, ledger_json },
	{ STATEPATH_GATE_CLOSED, ledger_json },
	/* Permit records, when they are kept as permits/<id>.json. */
	{ STATEPATH_PERMITS, ledger_json },
	/* Policy approvals (core/gate/policyapproval.h): a forged one is reported. */
	{ STATEPATH_POLICIES, ledger_json },
	{ "", ledger_approver },
	{ STATEPATH_GATE_OPEN "/*", ledger_json },
	{ STATEPATH_DRYRUNS "/*", ledger_dryrun },
};

const struct ledger_schema ledger_state_schema = {
	.kinds = ledger_kinds,
	.n_kinds = LEDGER_KIND_MAX,
	.absolute_path = LEDGER_SYSTEM_APPROVER_PATH,
	.kind_recovered = LEDGER_RECOVERED,
	/* The open failures: a gate-open entry until a gate-close names its
	 * id; an open failure no entry backs is adopted, so the gate stays
	 * closed rather than open to anything. */
	.kind_open = LEDGER_GATE_OPEN,
	.kind_close = LEDGER_GATE_CLOSE,
	.adopt_dir = STATEPATH_GATE_OPEN "/",
	/* A discarded dry run's files may be gone. */
	.kind_retire = LEDGER_DISCARD,
	.records = ledger_records,
	.n_records = sizeof(ledger_records) / sizeof(ledger_records[0]),
};

const char *ledger_kind_name(enum ledger_kind kind)
{
	return ledger_schema_kind_name(&ledger_state_schema, (int)kind);
}

int ledger_kind_from_name(const char *name)
{
	return ledger_schema_kind(&ledger_state_schema, name);
}

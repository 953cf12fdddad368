/* SPDX-License-Identifier: MIT */
/* For tests that link the ledger (src/ledger) without core: a schema with
 * the kinds airlock's state directory uses, a copy of
 * src/core/store/ledger.c's table (the fuzz corpora hold their names). */
#pragma once

#include "ledger/ledger.h"

enum ledger_kind {
	LEDGER_RECEIPT,
	LEDGER_GATE_OPEN,
	LEDGER_GATE_CLOSE,
	LEDGER_DRYRUN,
	LEDGER_APPLY,
	LEDGER_ROLLBACK,
	LEDGER_APPROVER_ENROL,
	LEDGER_APPROVER_CHANGE,
	LEDGER_PERMIT_TRANSITION,
	LEDGER_RECOVERED,
	LEDGER_DISCARD,
	LEDGER_POLICY_APPROVAL,
	LEDGER_KIND_MAX,
};

static const char *const test_ledger_kinds[LEDGER_KIND_MAX] = {
	"receipt",	  "gate-open",	     "gate-close",
	"dryrun",	  "apply",	     "rollback",
	"approver-enrol", "approver-change", "permit-transition",
	"recovered",	  "discard",	     "policy-approval",
};
static const char *const test_ledger_json[] = { "*.json", NULL };
static const struct ledger_records test_ledger_records[] = { { "receipts", test_ledger_json } };

static const struct ledger_schema test_ledger_schema = {
	.kinds = test_ledger_kinds,
	.n_kinds = LEDGER_KIND_MAX,
	.absolute_path = "/etc/airlock/approver.json",
	.kind_recovered = LEDGER_RECOVERED,
	.kind_open = LEDGER_GATE_OPEN,
	.kind_close = LEDGER_GATE_CLOSE,
	.adopt_dir = "gate/open/",
	.kind_retire = LEDGER_DISCARD,
	.records = test_ledger_records,
	.n_records = 1,
};

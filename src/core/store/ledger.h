/* SPDX-License-Identifier: MIT */
#pragma once

#include "ledger/ledger.h"

/* What airlock's records mean to its ledger (src/ledger, docs/ledger.md):
 * the kinds of the records store_commit() commits, and the schema that
 * tells the ledger their names, which kinds the open-failure index follows
 * and which records of the state directory verify expects it to back. */

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
	LEDGER_MIRROR_RESOLVE, /* the approver closed a conflict with the mirror */
	LEDGER_KIND_MAX, /* as a kind asked for: any */
};
const char *ledger_kind_name(enum ledger_kind kind);
/* -EINVAL for an unknown name. */
int ledger_kind_from_name(const char *name);

/* The system approver's record: the one absolute path an entry may name
 * (core/gate/approver.h). */
#define LEDGER_SYSTEM_APPROVER_PATH "/etc/airlock/approver.json"

/* The schema of the state directory's ledger. */
extern const struct ledger_schema ledger_state_schema;

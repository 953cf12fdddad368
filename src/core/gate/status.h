/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/error.h"
#include "core/gate/approver.h"
#include "core/gate/gate.h"

struct session;

/* What `airlock gate` reports for one workspace: the same for every front
 * end, assembled here so that none of them rebuilds it. */
struct gate_status {
	char *scope; /* the workspace: cwd's git root, else cwd */
	/* The open failures in scope, as gate_list_open() gives them; one
	 * whose close record did not hold says why (close_rejected). */
	struct gate_failures open;
	/* The approver against its pin; all zero without a state directory. */
	struct approver_check approver;
	/* A push the ledger's mirror refused, open until the approver resolves
	 * it (core/store/remotes.h): "" when none. It blocks like a failure. */
	char mirror_conflict[512];
};

/* The gate's status for cwd (NULL: the current directory). Never creates
 * the state directory: without one nothing is open. */
int gate_status(struct session *s, const char *cwd, struct gate_status *ret, struct error *err);
void gate_status_release(struct gate_status *st);
/* The document `airlock gate --json` prints (docs/state-dir.md): scope,
 * open (a count), failures, rejected, approver. NULL when out of memory. */
json_t *gate_status_to_json(const struct gate_status *st);

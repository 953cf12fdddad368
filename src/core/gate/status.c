/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "core/gate/gate.h"
#include "core/gate/status.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "core/store/statepath.h"
#include "core/store/store.h"

/* Close records that did not hold: { receipt, record, why } each. */
static json_t *gate_status_rejected(const struct gate_failures *open)
{
	json_t *rejected = json_array();

	for (size_t k = 0; rejected && k < open->n; k++) {
		const struct gate_failure *e = &open->v[k];
		struct statepath record = statepath_gate_closed(e->receipt);
		if (e->close_rejected)
			json_array_append_new(rejected, json_pack("{s:I, s:s, s:s}", "receipt",
								  (json_int_t)e->receipt, "record",
								  record.s, "why", e->close_rejected));
	}
	return rejected;
}

/* The open failures as the entries are stored. */
static json_t *gate_status_failures(const struct gate_failures *open)
{
	json_t *failures = json_array();

	for (size_t k = 0; failures && k < open->n; k++)
		if (json_array_append_new(failures, gate_failure_to_json(&open->v[k])) < 0) {
			json_decref(failures);
			return NULL;
		}
	return failures;
}

int gate_status(struct session *s, const char *cwd, struct gate_status *ret, struct error *err)
{
	struct store *store = NULL;

	*ret = (struct gate_status){ 0 };
	int r = session_store(s, false, &store, err);
	if (r == -ENOENT) {
		error_clear(err);
		store = NULL;
	} else if (r < 0) {
		return r;
	}
	cleanup_free char *here = cwd ? NULL : getcwd(NULL, 0);
	r = gate_scope(cwd ? cwd : here ? here : ".", &ret->scope, err);
	if (r == 0) {
		if (store)
			r = gate_list_open(store, ret->scope, &ret->open, err);
	}
	/* An approver changed behind airlock's back: a fact the human who
	 * reads the gate should see (so are close records that did not hold:
	 * the open failures carry them). */
	if (r == 0 && store)
		r = approver_check(store, &ret->approver, err);
	struct remotes_status mirror;
	struct error ignored = { 0 };
	if (r == 0 && store && remotes_status(store, &mirror, &ignored) == 0)
		snprintf(ret->mirror_conflict, sizeof(ret->mirror_conflict), "%s", mirror.conflict);
	if (r < 0)
		gate_status_release(ret);
	return r;
}

void gate_status_release(struct gate_status *st)
{
	free(st->scope);
	gate_failures_release(&st->open);
	*st = (struct gate_status){ 0 };
}

json_t *gate_status_to_json(const struct gate_status *st)
{
	const struct approver_check *check = &st->approver;
	json_t *failures = gate_status_failures(&st->open);

	if (!failures)
		return NULL;
	json_t *doc = json_pack("{s:s, s:I, s:o, s:o, s:{s:s, s:b, s:s?, s:s?, s:s?}}", "scope",
				st->scope, "open", (json_int_t)st->open.n, "failures", failures,
				"rejected", gate_status_rejected(&st->open), "approver", "state",
				approver_state_to_string(check->state), "changed", check->changed,
				"pinned", check->pinned[0] ? check->pinned : NULL, "current",
				check->current[0] ? check->current : NULL, "message",
				check->changed ? check->message : NULL);
	/* only when one is open: the document is otherwise what it was */
	if (doc && st->mirror_conflict[0] &&
	    json_object_set_new(doc, "mirror_conflict", json_string(st->mirror_conflict)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

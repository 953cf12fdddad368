/* SPDX-License-Identifier: MIT */
/* Approving from one place (core/fleet/fleetapprove.h). */
#include "core/fleet/fleetapprove.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/parse.h"
#include "core/store/ledger.h"
#include "core/store/statepath.h"
#include "ledger/ledger.h"
#include "ledger/pgmirror.h"

void fleetapprove_release(struct fleetapprove_request *q)
{
	free(q->origin);
	free(q->message);
	permit_release(&q->permit);
	*q = (struct fleetapprove_request){ 0 };
}

struct fleetapprove_reader {
	struct fleetapprove_request *q;
	uint64_t id;
	char *record; /* the permit's last carried record; NULL: none */
	size_t record_n;
	bool seen; /* a transition of the permit */
	/* the host's head: its origin, checkpoint and the mirror's vkey */
	char *checkpoint, *vkey;
	struct fleet_log log;
	/* what fleet_log_add() said of the permit's last transition and of
	 * the approver's pin */
	enum fleet_line_state permit_line, approver_line;
};

/* The host's head in airlock.log_heads: origin, checkpoint, vkey. */
static int fleetapprove_on_head(void *arg, int n, const char *const *v, struct error *err)
{
	struct fleetapprove_reader *rd = arg;
	if (n != 3 || !v[0] || !v[2] || rd->q->origin)
		return error_set(err, EPROTO, "the mirror's log_heads is not as expected");
	rd->q->origin = strdup(v[0]);
	rd->checkpoint = v[1] ? strdup(v[1]) : NULL;
	rd->vkey = strdup(v[2]);
	if (!rd->q->origin || (v[1] && !rd->checkpoint) || !rd->vkey)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* A row of the host's log: origin, seq, leaf (hex), line. Every line
 * makes the tree; the line's own parse says what each is (the database's
 * kind and id columns are not read). */
static int fleetapprove_on_entry(void *arg, int n, const char *const *v, struct error *err)
{
	struct fleetapprove_reader *rd = arg;
	if (n != 4 || !v[0] || !v[3] || strcmp(v[0], rd->q->origin) != 0)
		return error_set(err, EPROTO, "the mirror's entries are not as expected");
	size_t len = strlen(v[3]);
	enum fleet_line_state state = fleet_log_add(&rd->log, v[1], v[2], v[3], len);
	struct ledger_entry e;
	struct error ignored = { 0 };
	uint64_t id = 0;
	if (ledger_entry_parse(&ledger_state_schema, v[3], len, &e, &ignored) < 0)
		return 0;
	if (e.kind == LEDGER_APPROVER_ENROL || e.kind == LEDGER_APPROVER_CHANGE) {
		if (strcmp(e.path, STATEPATH_APPROVER) != 0 &&
		    strcmp(e.path, LEDGER_SYSTEM_APPROVER_PATH) != 0)
			return 0; /* the pin, not the approver */
		snprintf(rd->q->approver_path, sizeof(rd->q->approver_path), "%s", e.path);
		memcpy(rd->q->approver_sha256, e.sha256, sizeof(e.sha256));
		rd->approver_line = state;
		return 0;
	}
	if (e.kind != LEDGER_PERMIT_TRANSITION || parse_u64(e.id, &id) < 0 || id != rd->id)
		return 0;
	rd->seen = true;
	rd->permit_line = state;
	free(rd->record);
	rd->record = NULL;
	/* The record's bytes, checked against the digest the entry names. */
	if (e.has_record && ledger_entry_record(&ledger_state_schema, v[3], len, &rd->record,
						&rd->record_n, &ignored) < 0)
		rd->record = NULL;
	return 0;
}

/* Refuses a line the host's signed tree does not hold as it is. */
static int fleetapprove_line_check(const struct fleetapprove_reader *rd, enum fleet_line_state added,
				   const char *what, const char *host, struct error *err)
{
	enum fleet_line_state s = fleet_log_state(&rd->log, added);
	if (s == FLEET_LINE_VERIFIED)
		return 0;
	if (s == FLEET_LINE_FORGED)
		return error_set(err, EKEYREJECTED,
				 "%s of host %s in the mirror is FORGED: not the line the host's signed checkpoint holds",
				 what, host);
	if (s == FLEET_LINE_UNCOVERED)
		return error_set(err, EKEYREJECTED,
				 "%s of host %s in the mirror is not covered by its signed checkpoint yet (size %llu): push on the host",
				 what, host, (unsigned long long)rd->log.checkpoint.size);
	return error_set(err, EKEYREJECTED, "%s of host %s in the mirror is unverified: %s", what,
			 host, rd->log.failure);
}

int fleetapprove_load(const char *conninfo, const char *host, uint64_t id,
		      const struct fleet_keys *keys, struct fleetapprove_request *ret,
		      struct error *err)
{
	*ret = (struct fleetapprove_request){ 0 };
	char sid[24];
	snprintf(sid, sizeof(sid), "%llu", (unsigned long long)id);
	const char *const head_params[] = { host };
	struct fleetapprove_reader rd = { .q = ret, .id = id };
	int r = pgmirror_query(conninfo,
			       "SELECT origin, checkpoint, vkey FROM airlock.log_heads WHERE host = $1",
			       1, head_params, fleetapprove_on_head, &rd, err);
	if (r == 0 && !ret->origin)
		r = error_set(err, ENOENT, "the mirror holds nothing of host %s", host);
	/* The host's log, pinned here: its key is the console's, not the
	 * mirror's. */
	if (r == 0) {
		fleet_log_begin(&rd.log, ret->origin, rd.checkpoint, rd.vkey, keys, NULL);
		if (rd.log.key_source != FLEET_KEY_PINNED)
			r = error_set(err, EKEYREJECTED,
				      "host %s: its log %s is not among the console's --keys", host,
				      ret->origin);
	}
	/* Every line of the log, for its tree. */
	const char *const params[] = { ret->origin };
	if (r == 0)
		r = pgmirror_query(conninfo,
				   "SELECT origin, seq, encode(leaf, 'hex'), line FROM airlock.entries"
				   " WHERE origin = $1 ORDER BY seq",
				   1, params, fleetapprove_on_entry, &rd, err);
	if (r == 0)
		fleet_log_finish(&rd.log);
	if (r == 0 && !rd.seen)
		r = error_set(err, ENOENT, "the mirror holds no permit %s of host %s", sid, host);
	/* Its last transition and the approver's pin: lines of the tree the
	 * host signed, as they are, before anything of them is believed. */
	char what[64];
	snprintf(what, sizeof(what), "permit %s", sid);
	if (r == 0)
		r = fleetapprove_line_check(&rd, rd.permit_line, what, host, err);
	if (r == 0 && ret->approver_sha256[0])
		r = fleetapprove_line_check(&rd, rd.approver_line, "the approver's pin", host, err);
	if (r == 0 && !rd.record)
		r = error_set(err, ENOENT,
			      "the mirror holds no record of permit %s of host %s (its entry carries none)",
			      sid, host);
	ret->signed_size = rd.log.checkpoint.size;
	if (r == 0) {
		r = permit_parse(rd.record, rd.record_n, &ret->permit, err);
		if (r < 0)
			r = error_prefix(err, "permit %s of host %s as the mirror holds it", sid, host);
	}
	if (r == 0 && ret->permit.id != id)
		r = error_set(err, EPROTO, "the mirror's record of permit %s names permit %llu",
			      sid, (unsigned long long)ret->permit.id);
	if (r == 0 && ret->permit.state != PERMIT_DRY_RUN_OK &&
	    ret->permit.state != PERMIT_REJECTED_WITHOUT_APPROVAL)
		r = error_set(err, EPERM, "permit %s of host %s is %s: there is nothing to approve",
			      sid, host, permit_state_to_string(ret->permit.state));
	/* The origin the host's log has in the mirror: a mirror that names
	 * another makes an approval the host refuses (it checks its own). */
	if (r == 0)
		r = permit_message_for_origin(&ret->permit, ret->origin, &ret->message, err);
	free(rd.record);
	free(rd.checkpoint);
	free(rd.vkey);
	fleet_log_release(&rd.log);
	if (r < 0)
		fleetapprove_release(ret);
	return r < 0 ? error_prefix(err, "fleet approve") : 0;
}

int fleetapprove_approver(const struct fleetapprove_request *q, const char *text, size_t n,
			  struct approver *ret, struct error *err)
{
	char hex[SHA256_HEX_SIZE];
	*ret = (struct approver){ 0 };
	if (!q->approver_sha256[0])
		return error_set(err, EACCES,
				 "the mirror holds no approver of this host (no approver-enrol entry)");
	sha256_hex(text, n, hex);
	if (strcmp(hex, q->approver_sha256) != 0)
		return error_set(err, EACCES,
				 "this approver document is not the host's: its ledger pins %s with sha256 %.16s…",
				 q->approver_path, q->approver_sha256);
	return approver_parse_document(text, n, q->approver_path, ret, err);
}

static int fleetapprove_on_id(void *arg, int n, const char *const *v, struct error *err)
{
	if (n != 1 || !v[0] || parse_u64(v[0], arg) < 0)
		return error_set(err, EPROTO, "the mirror answered no row id");
	return 0;
}

int fleetapprove_send(const char *conninfo, const char *host, uint64_t id, json_t *approval,
		      uint64_t *ret_row, struct error *err)
{
	cleanup_free char *text = json_dumps(approval, JSON_COMPACT | JSON_SORT_KEYS);
	char sid[24];
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	snprintf(sid, sizeof(sid), "%llu", (unsigned long long)id);
	const char *const params[] = { host, sid, text };
	*ret_row = 0;
	int r = pgmirror_call(conninfo, "SELECT airlock.approve($1, $2::bigint, $3)", 3, params,
			      fleetapprove_on_id, ret_row, err);
	return r < 0 ? error_prefix(err, "fleet approve") : 0;
}

/* SPDX-License-Identifier: MIT */
/* Many hosts, one place (core/fleet/fleet.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/cleanup.h"
#include "basic/parse.h"
#include "core/fleet/fleet.h"
#include "core/store/jsonutil.h"
#include "core/store/ledger.h"
#include "ledger/ledger.h"
#include "ledger/pgmirror.h"

/* Room for one more element of an array of n: its capacity is 8 below 8
 * elements, else the power of two at or above n, doubled as it fills. */
static int fleet_reserve(void **array, size_t n, size_t size)
{
	if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
		return 0;
	void *a = realloc(*array, (n ? 2 * n : 8) * size);
	if (!a)
		return -ENOMEM;
	*array = a;
	return 0;
}

#define FLEET_PUSH(array, n) \
	(fleet_reserve((void **)&(array), (n), sizeof(*(array))) < 0 ? NULL : &(array)[(n)++])

static char *fleet_strdup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void fleet_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char **fleet_strv_copy(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **c = calloc(n + 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			fleet_strv_free(c);
			return NULL;
		}
	return c;
}

/* argv as a record holds it: an array of strings (anything else: empty). */
static char **fleet_argv(json_t *doc)
{
	json_t *a = json_object_get(doc, "argv");
	char **v = json_is_array(a) ? jsonutil_strv_from_array(a) : NULL;
	return v ? v : calloc(1, sizeof(char *));
}

static const char *fleet_string(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

/* docs/permit-format.md, "States": not final, and not applied. */
static bool fleet_permit_pending(const char *state)
{
	static const char *const pending[] = { "PROPOSED",   "DRY_RUN_FAILED",
					       "DRY_RUN_OK", "REJECTED_WITHOUT_APPROVAL",
					       "APPROVED",   "CONFLICT" };
	for (size_t i = 0; i < sizeof(pending) / sizeof(pending[0]); i++)
		if (state && strcmp(state, pending[i]) == 0)
			return true;
	return false;
}

static int fleet_on_host(void *arg, int n, const char *const *v, struct error *err)
{
	struct fleet *f = arg;
	uint64_t size = 0;
	if (n != 6 || !v[0] || !v[1] || !v[2] || !v[5] || parse_u64(v[2], &size) < 0)
		return error_set(err, EPROTO, "the mirror's log_heads is not as expected");
	struct fleet_host *h = FLEET_PUSH(f->hosts, f->n_hosts);
	if (!h)
		return error_set(err, ENOMEM, "out of memory");
	*h = (struct fleet_host){ .origin = strdup(v[0]),
				  .host = strdup(v[1]),
				  .size = size,
				  .checkpoint = fleet_strdup0(v[3]),
				  .pushed = fleet_strdup0(v[4]),
				  .vkey = strdup(v[5]) };
	if (!h->origin || !h->host || !h->vkey || (v[3] && !h->checkpoint) || (v[4] && !h->pushed))
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

static int fleet_on_version(void *arg, int n, const char *const *v, struct error *err)
{
	uint64_t *version = arg;
	if (n != 1 || !v[0] || parse_u64(v[0], version) < 0)
		return error_set(err, EPROTO, "the mirror's schema_version is not as expected");
	return 0;
}

/* A row of airlock.cosigned_heads: origin, size, checkpoint, witness, line. */
static int fleet_on_cosignature(void *arg, int n, const char *const *v, struct error *err)
{
	struct fleet *f = arg;
	uint64_t size = 0;
	if (n != 5 || !v[0] || !v[1] || !v[2] || !v[3] || !v[4] || parse_u64(v[1], &size) < 0)
		return error_set(err, EPROTO, "the mirror's cosigned_heads is not as expected");
	struct fleet_host *h = NULL;
	for (size_t i = 0; i < f->n_hosts && !h; i++)
		if (strcmp(f->hosts[i].origin, v[0]) == 0)
			h = &f->hosts[i];
	if (!h)
		return 0; /* a host the query left out, or pushed since */
	if (!h->cosigned_checkpoint) {
		h->cosigned_size = size;
		if (!(h->cosigned_checkpoint = strdup(v[2])))
			return error_set(err, ENOMEM, "out of memory");
	}
	if (size != h->cosigned_size)
		return 0; /* one checkpoint per host: the view's rows are of one */
	struct fleet_cosignature *c = FLEET_PUSH(h->cosignatures, h->n_cosignatures);
	if (!c)
		return error_set(err, ENOMEM, "out of memory");
	*c = (struct fleet_cosignature){ .witness = strdup(v[3]), .line = strdup(v[4]) };
	return c->witness && c->line ? 0 : error_set(err, ENOMEM, "out of memory");
}

/* Each cosignature of h checked against the policy's witnesses, and the
 * quorum with the host's own log key as the log: the console's pin of it
 * when keys names its origin, else the policy's when its log line is this
 * host's origin, else the key the mirror pinned at the host's first push. */
static int fleet_verify_host(struct fleet_host *h, const struct witness_policy *policy,
			     const struct fleet_keys *keys)
{
	const char *cp = h->cosigned_checkpoint;
	const char *split = cp ? strstr(cp, "\n\n") : NULL;
	size_t body_n = split ? (size_t)(split - cp) + 1 : 0;
	for (size_t i = 0; i < h->n_cosignatures; i++) {
		struct fleet_cosignature *c = &h->cosignatures[i];
		c->state = FLEET_COSIG_UNKNOWN;
		for (size_t k = 0; split && k < policy->n_witnesses; k++) {
			int q = witness_cosignature_verify(&policy->witnesses[k], cp, body_n,
							   c->line, NULL);
			if (q == -ENOENT)
				continue;
			c->state = q == 0 ? FLEET_COSIG_VERIFIED : FLEET_COSIG_INVALID;
			if (q == 0 && !(c->policy_name = strdup(policy->witness_names[k])))
				return -ENOMEM;
			break;
		}
	}
	cleanup_free struct witness_policy *p = malloc(sizeof(*p));
	cleanup_free char **lines = calloc(h->n_cosignatures + 1, sizeof(*lines));
	if (!p || !lines)
		return -ENOMEM;
	*p = *policy;
	struct error err = { 0 };
	size_t n_valid;
	/* The console's pin, or the policy's own log when it is this host's:
	 * its key, not the mirror's pin, must have signed the checkpoint. */
	const struct ledger_vkey *pinned = NULL;
	for (size_t i = 0; keys && i < keys->n && !pinned; i++)
		if (strcmp(keys->keys[i].name, h->origin) == 0)
			pinned = &keys->keys[i];
	if (pinned)
		p->log = *pinned;
	int r = pinned || strcmp(policy->log.name, h->origin) == 0
			? 0
			: ledger_vkey_parse(h->vkey, &p->log, &err);
	if (r == 0) {
		p->has_log = true;
		for (size_t i = 0; i < h->n_cosignatures; i++)
			lines[i] = h->cosignatures[i].line;
		r = cp ? witness_policy_check(p, cp, strlen(cp), lines, h->n_cosignatures, &n_valid,
					      &err)
		       : error_set(&err, EBADMSG, "no checkpoint of this host is cosigned");
	}
	if (r < 0 && !(h->quorum_failure = strdup(err.msg)))
		return -ENOMEM;
	return 0;
}

struct fleet_reader {
	struct fleet *f;
	/* each host's log being checked, by its index in f->hosts */
	struct fleet_log *logs;
	size_t current; /* the host of the rows being read */
	/* every receipt, before --since and the count cut them */
	struct fleet_run *runs;
	size_t n_runs;
};

static int fleet_add_run(struct fleet_reader *rd, size_t log, const struct ledger_entry *e,
			 const char *record, size_t n, enum fleet_line_state line)
{
	cleanup_with(json_decrefp) json_t *doc = json_loadb(record, n, 0, NULL);
	uint64_t id = 0;
	if (!json_is_object(doc) || parse_u64(e->id, &id) < 0) {
		rd->f->n_unreadable++;
		return 0;
	}
	struct fleet_run *r = FLEET_PUSH(rd->runs, rd->n_runs);
	if (!r)
		return -ENOMEM;
	json_t *code = json_object_get(doc, "exit_code");
	json_t *ok = json_object_get(doc, "match_expected");
	*r = (struct fleet_run){ .host = strdup(rd->f->hosts[log].host),
				 .log = log,
				 .id = id,
				 .time = strdup(e->time),
				 .source = fleet_strdup0(fleet_string(doc, "source")),
				 .status = fleet_strdup0(fleet_string(doc, "status")),
				 .has_exit = json_is_integer(code),
				 .exit_code = json_integer_value(code),
				 .ok = json_is_true(ok),
				 .argv = fleet_argv(doc),
				 .line = line };
	return r->host && r->time && r->argv ? 0 : -ENOMEM;
}

static struct fleet_permit *fleet_permit_find(struct fleet *f, size_t log, uint64_t id)
{
	for (size_t i = 0; i < f->n_permits; i++)
		if (f->permits[i].id == id && f->permits[i].log == log)
			return &f->permits[i];
	return NULL;
}

static void fleet_permit_clear(struct fleet_permit *p)
{
	free(p->state);
	free(p->time);
	fleet_strv_free(p->argv);
	p->state = p->time = NULL;
	p->argv = NULL;
}

static int fleet_add_permit(struct fleet_reader *rd, size_t log, const struct ledger_entry *e,
			    const char *record, size_t n, enum fleet_line_state line)
{
	struct fleet *f = rd->f;
	const char *host = f->hosts[log].host;
	uint64_t id = 0;
	if (parse_u64(e->id, &id) < 0) {
		f->n_unreadable++;
		return 0;
	}
	struct fleet_permit *p = fleet_permit_find(f, log, id);
	/* A transition past the signed size does not replace one the
	 * checkpoint covers: a row written past airlock.push() would take a
	 * verified pending permit off the list, or its approval with it. */
	if (p && line == FLEET_LINE_UNCOVERED && p->line != FLEET_LINE_UNCOVERED)
		return 0;
	if (!p) {
		p = FLEET_PUSH(f->permits, f->n_permits);
		if (!p)
			return -ENOMEM;
		*p = (struct fleet_permit){ .host = strdup(host), .log = log, .id = id };
		if (!p->host)
			return -ENOMEM;
	}
	fleet_permit_clear(p);
	p->time = strdup(e->time);
	p->line = line;
	cleanup_with(json_decrefp) json_t *doc = record ? json_loadb(record, n, 0, NULL) : NULL;
	if (record && !json_is_object(doc))
		f->n_unreadable++;
	const char *state = fleet_string(doc, "state");
	p->state = strdup(state ? state : "not recorded");
	p->risk = json_integer_value(json_object_get(doc, "risk"));
	p->argv = fleet_argv(doc);
	p->pending = fleet_permit_pending(state);
	json_t *approval = json_object_get(doc, "approval");
	p->approved = json_is_object(approval);
	if (!p->time || !p->state || !p->argv)
		return -ENOMEM;
	if (!p->approved)
		return 0;
	/* The approval: one per permit (a new dry run drops it; the permit's
	 * last record says which holds). */
	const char *at = NULL;
	json_t *ev;
	size_t i;
	json_array_foreach(json_object_get(doc, "history"), i, ev)
		if (json_is_object(ev) && json_is_string(json_object_get(ev, "event")) &&
		    strcmp(fleet_string(ev, "event"), "approve") == 0)
			at = fleet_string(ev, "at");
	struct fleet_approval *a = NULL;
	for (size_t k = 0; k < f->n_approvals && !a; k++)
		if (f->approvals[k].permit == id && f->approvals[k].log == log)
			a = &f->approvals[k];
	if (!a) {
		a = FLEET_PUSH(f->approvals, f->n_approvals);
		if (!a)
			return -ENOMEM;
		*a = (struct fleet_approval){ .host = strdup(host), .log = log, .permit = id };
		if (!a->host)
			return -ENOMEM;
	}
	free(a->approver);
	free(a->public_key);
	free(a->at);
	a->approver = fleet_strdup0(fleet_string(approval, "approver"));
	a->public_key = fleet_strdup0(fleet_string(approval, "public_key"));
	a->at = fleet_strdup0(at);
	a->line = line;
	return 0;
}

static int fleet_add_gate(struct fleet_reader *rd, size_t log, const struct ledger_entry *e,
			  enum fleet_line_state line)
{
	struct fleet *f = rd->f;
	uint64_t id = 0;
	if (parse_u64(e->id, &id) < 0) {
		f->n_unreadable++;
		return 0;
	}
	/* A close is weighed once the tree is checked (fleet_resolve()). */
	if (e->kind == LEDGER_GATE_CLOSE) {
		for (size_t i = 0; i < f->n_failures; i++)
			if (f->failures[i].receipt == id && f->failures[i].log == log &&
			    !f->failures[i].closed) {
				f->failures[i].closed = true;
				f->failures[i].close_line = line;
				break;
			}
		return 0;
	}
	struct fleet_failure *x = FLEET_PUSH(f->failures, f->n_failures);
	if (!x)
		return -ENOMEM;
	*x = (struct fleet_failure){ .host = strdup(f->hosts[log].host),
				     .log = log,
				     .receipt = id,
				     .time = strdup(e->time),
				     .line = line };
	return x->host && x->time ? 0 : -ENOMEM;
}

static int fleet_on_entry(void *arg, int n, const char *const *v, struct error *err)
{
	struct fleet_reader *rd = arg;
	struct fleet *f = rd->f;
	if (n != 4 || !v[0] || !v[3])
		return error_set(err, EPROTO, "the mirror's entries are not as expected");
	const char *line = v[3];
	size_t len = strlen(line);
	/* The rows come by log: the host of this one, by its origin (a log
	 * the heads did not list, pushed since, is left out). */
	if (rd->current >= f->n_hosts || strcmp(f->hosts[rd->current].origin, v[0]) != 0) {
		rd->current = f->n_hosts;
		for (size_t i = 0; i < f->n_hosts && rd->current == f->n_hosts; i++)
			if (strcmp(f->hosts[i].origin, v[0]) == 0)
				rd->current = i;
		if (rd->current == f->n_hosts)
			return 0;
	}
	size_t log = rd->current;
	enum fleet_line_state state = fleet_log_add(&rd->logs[rd->current], v[1], v[2], line, len);
	struct ledger_entry e;
	struct error ignored = { 0 };
	if (ledger_entry_parse(&ledger_state_schema, line, len, &e, &ignored) < 0) {
		rd->f->n_unreadable++;
		return 0;
	}
	/* The record's bytes, checked against the digest the entry names. */
	cleanup_free char *record = NULL;
	size_t record_n = 0;
	if (e.has_record &&
	    ledger_entry_record(&ledger_state_schema, line, len, &record, &record_n, &ignored) < 0) {
		rd->f->n_unreadable++;
		return 0;
	}
	int r = 0;
	switch (e.kind) {
	case LEDGER_RECEIPT:
		if (record)
			r = fleet_add_run(rd, log, &e, record, record_n, state);
		break;
	case LEDGER_GATE_OPEN:
	case LEDGER_GATE_CLOSE:
		r = fleet_add_gate(rd, log, &e, state);
		break;
	case LEDGER_PERMIT_TRANSITION:
		r = fleet_add_permit(rd, log, &e, record, record_n, state);
		break;
	default:
		break;
	}
	return r < 0 ? error_set(err, -r, "out of memory") : 0;
}

static void fleet_run_release(struct fleet_run *r)
{
	free(r->host);
	free(r->time);
	free(r->source);
	free(r->status);
	fleet_strv_free(r->argv);
}

/* Runs across hosts by time (the entries' clocks: each host's own), then
 * host and id. */
static int fleet_run_compare(const void *a, const void *b)
{
	const struct fleet_run *x = a, *y = b;
	int c = strcmp(x->time, y->time);
	if (!c)
		c = strcmp(x->host, y->host);
	if (!c)
		c = (x->log > y->log) - (x->log < y->log);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The state of a line of log's, from what fleet_log_add() said: by the
 * log's own tree (two logs the mirror labels with one host name are two). */
static enum fleet_line_state fleet_line(const struct fleet_reader *rd, size_t log,
					enum fleet_line_state added)
{
	return log < rd->f->n_hosts ? fleet_log_state(&rd->logs[log], added) : FLEET_LINE_UNVERIFIED;
}

/* Of two lines' states, the one that says less for what both show. */
static enum fleet_line_state fleet_line_worse(enum fleet_line_state a, enum fleet_line_state b)
{
	if (a == FLEET_LINE_FORGED || b == FLEET_LINE_FORGED)
		return FLEET_LINE_FORGED;
	return a > b ? a : b;
}

/* Each host's log checked to its end, and each line's state from it. */
static int fleet_resolve(struct fleet_reader *rd)
{
	struct fleet *f = rd->f;
	for (size_t i = 0; i < f->n_hosts; i++) {
		struct fleet_host *h = &f->hosts[i];
		struct fleet_log *l = &rd->logs[i];
		fleet_log_finish(l);
		h->key_source = l->key_source;
		h->log_verified = l->tree_ok;
		h->signed_size = l->checkpoint_ok ? l->checkpoint.size : 0;
		h->n_forged = l->tree_ok ? l->n_mismatched : 0;
		if (!l->tree_ok && !(h->log_failure = strdup(l->failure)))
			return -ENOMEM;
	}
	for (size_t k = 0; k < rd->n_runs; k++)
		rd->runs[k].line = fleet_line(rd, rd->runs[k].log, rd->runs[k].line);
	/* A gate-close closes its failure when its line says as much as the
	 * gate-open's: one forged, not covered by the signed checkpoint or
	 * unverified leaves a verified failure open. */
	for (size_t k = 0; k < f->n_failures;) {
		struct fleet_failure *x = &f->failures[k];
		x->line = fleet_line(rd, x->log, x->line);
		enum fleet_line_state close = fleet_line(rd, x->log, x->close_line);
		if (!x->closed || close == FLEET_LINE_FORGED || close > x->line) {
			k++;
			continue;
		}
		free(x->host);
		free(x->time);
		*x = f->failures[--f->n_failures];
	}
	for (size_t k = 0; k < f->n_permits; k++) {
		struct fleet_permit *p = &f->permits[k];
		p->line = fleet_line(rd, p->log, p->line);
	}
	for (size_t k = 0; k < f->n_approvals; k++)
		f->approvals[k].line = fleet_line(rd, f->approvals[k].log, f->approvals[k].line);
	return 0;
}

/* Each open failure with its receipt's argv and end; the runs the query
 * asks for moved into f (the newest runs_max at or after since). */
static int fleet_finish(struct fleet_reader *rd, const struct fleet_query *q)
{
	struct fleet *f = rd->f;
	int r = fleet_resolve(rd);
	if (r < 0)
		return r;
	for (size_t i = 0; i < f->n_failures; i++) {
		struct fleet_failure *x = &f->failures[i];
		const struct fleet_run *run = NULL;
		for (size_t k = 0; k < rd->n_runs && !run; k++)
			if (rd->runs[k].id == x->receipt && rd->runs[k].log == x->log)
				run = &rd->runs[k];
		x->argv = run ? fleet_strv_copy(run->argv) : calloc(1, sizeof(char *));
		if (!x->argv || (run && run->status && !(x->status = strdup(run->status))))
			return -ENOMEM;
		x->has_exit = run && run->has_exit;
		if (run)
			x->line = fleet_line_worse(x->line, run->line);
		x->exit_code = run ? run->exit_code : 0;
	}
	if (rd->n_runs)
		qsort(rd->runs, rd->n_runs, sizeof(*rd->runs), fleet_run_compare);
	size_t first = 0;
	if (q->since)
		while (first < rd->n_runs && strcmp(rd->runs[first].time, q->since) < 0)
			first++;
	if (q->runs_max && rd->n_runs - first > q->runs_max)
		first = rd->n_runs - q->runs_max;
	f->runs = calloc(rd->n_runs - first + 1, sizeof(*f->runs));
	if (!f->runs)
		return -ENOMEM;
	for (size_t k = 0; k < rd->n_runs; k++) {
		if (k >= first)
			f->runs[f->n_runs++] = rd->runs[k];
		else
			fleet_run_release(&rd->runs[k]);
	}
	free(rd->runs);
	rd->runs = NULL;
	rd->n_runs = 0;
	return 0;
}

int fleet_load(const struct fleet_query *q, struct fleet *ret, struct error *err)
{
	*ret = (struct fleet){ 0 };
	const char *const params[] = { q->host };
	uint64_t version = 0;
	int r = pgmirror_query(q->conninfo, "SELECT max(version) FROM airlock.schema_version", 0,
			       NULL, fleet_on_version, &version, err);
	if (r == 0)
		r = pgmirror_query(q->conninfo,
				   "SELECT origin, host, size, checkpoint, pushed::text, vkey FROM airlock.log_heads"
				   " WHERE $1::text IS NULL OR host = $1 ORDER BY host",
				   1, params, fleet_on_host, ret, err);
	/* Cosignatures from schema version 2 on (a mirror not migrated yet
	 * has none to show). */
	if (r == 0 && version >= 2)
		r = pgmirror_query(q->conninfo,
				   "SELECT origin, size, checkpoint, witness, line FROM airlock.cosigned_heads"
				   " ORDER BY origin, witness, line",
				   0, NULL, fleet_on_cosignature, ret, err);
	for (size_t i = 0; r == 0 && q->policy && i < ret->n_hosts; i++)
		if (fleet_verify_host(&ret->hosts[i], q->policy, q->keys) < 0)
			r = error_set(err, ENOMEM, "out of memory");
	struct fleet_reader rd = { .f = ret };
	/* Each host's log checked against its latest checkpoint, with the
	 * key the console pins (or the policy names) for its origin, else the
	 * mirror's. */
	if (r == 0 && ret->n_hosts && !(rd.logs = calloc(ret->n_hosts, sizeof(*rd.logs))))
		r = error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < ret->n_hosts; i++)
		fleet_log_begin(&rd.logs[i], ret->hosts[i].origin, ret->hosts[i].checkpoint,
				ret->hosts[i].vkey, q->keys,
				q->policy && q->policy->has_log ? &q->policy->log : NULL);
	/* By log and sequence: a record's last entry is its state. Every
	 * line, whatever the database's kind column says: the tree is made of
	 * them all. Both reads see what the mirror held at each; a push
	 * between them adds entries (beyond the checkpoint read: not covered),
	 * never changes one. */
	if (r == 0)
		r = pgmirror_query(q->conninfo,
				   "SELECT e.origin, e.seq, encode(e.leaf, 'hex'), e.line FROM airlock.entries e"
				   " JOIN airlock.logs l ON l.origin = e.origin"
				   " WHERE $1::text IS NULL OR l.host = $1"
				   " ORDER BY e.origin, e.seq",
				   1, params, fleet_on_entry, &rd, err);
	if (r == 0) {
		r = fleet_finish(&rd, q);
		if (r < 0)
			error_set(err, -r, "out of memory");
	}
	for (size_t k = 0; k < rd.n_runs; k++)
		fleet_run_release(&rd.runs[k]);
	free(rd.runs);
	for (size_t i = 0; rd.logs && i < ret->n_hosts; i++)
		fleet_log_release(&rd.logs[i]);
	free(rd.logs);
	if (r < 0)
		fleet_release(ret);
	return r < 0 ? error_prefix(err, "fleet") : 0;
}

void fleet_release(struct fleet *f)
{
	for (size_t i = 0; i < f->n_hosts; i++) {
		free(f->hosts[i].host);
		free(f->hosts[i].origin);
		free(f->hosts[i].checkpoint);
		free(f->hosts[i].pushed);
		free(f->hosts[i].vkey);
		free(f->hosts[i].cosigned_checkpoint);
		free(f->hosts[i].quorum_failure);
		free(f->hosts[i].log_failure);
		for (size_t k = 0; k < f->hosts[i].n_cosignatures; k++) {
			free(f->hosts[i].cosignatures[k].witness);
			free(f->hosts[i].cosignatures[k].line);
			free(f->hosts[i].cosignatures[k].policy_name);
		}
		free(f->hosts[i].cosignatures);
	}
	for (size_t i = 0; i < f->n_runs; i++)
		fleet_run_release(&f->runs[i]);
	for (size_t i = 0; i < f->n_failures; i++) {
		free(f->failures[i].host);
		free(f->failures[i].time);
		free(f->failures[i].status);
		fleet_strv_free(f->failures[i].argv);
	}
	for (size_t i = 0; i < f->n_permits; i++) {
		free(f->permits[i].host);
		fleet_permit_clear(&f->permits[i]);
	}
	for (size_t i = 0; i < f->n_approvals; i++) {
		free(f->approvals[i].host);
		free(f->approvals[i].approver);
		free(f->approvals[i].public_key);
		free(f->approvals[i].at);
	}
	free(f->hosts);
	free(f->runs);
	free(f->failures);
	free(f->permits);
	free(f->approvals);
	*f = (struct fleet){ 0 };
}

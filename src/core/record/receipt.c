/* SPDX-License-Identifier: MIT */
#include "core/record/receipt.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/strv.h"
#include "basic/macro.h"
#include "basic/text.h"
#include "core/host/hostsafety.h"
#include "core/host/hostview.h"
#include "version.h"

static const char *const status_names[_RECEIPT_STATUS_MAX] = {
	[RECEIPT_EXITED] = "exited",
	[RECEIPT_SIGNALED] = "signaled",
	[RECEIPT_TIMEOUT] = "timeout",
	[RECEIPT_NOT_FOUND] = "not_found",
	[RECEIPT_NOT_EXECUTABLE] = "not_executable",
	[RECEIPT_DENIED] = "denied",
	[RECEIPT_SETUP_ERROR] = "setup_error",
	[RECEIPT_INVALID] = "invalid",
	[RECEIPT_UNKNOWN] = "unknown",
	[RECEIPT_CANCELLED] = "cancelled",
};

const char *receipt_status_to_string(enum receipt_status status)
{
	if ((unsigned)status >= _RECEIPT_STATUS_MAX)
		return "unknown";
	return status_names[status];
}

/* A JSON string of arbitrary bytes: ill-formed UTF-8 becomes U+FFFD. */
static json_t *json_text(const char *data, size_t n)
{
	size_t len;
	cleanup_free char *clean = utf8_sanitize(data, n, &len);

	return clean ? json_stringn(clean, len) : NULL;
}

static json_t *json_string_or_null(const char *s)
{
	return s ? json_text(s, strlen(s)) : json_null();
}

/* argv as strings, and, only when some element is not UTF-8, argv_b64 with
 * every element in base64 so the exact bytes are kept. */
static int receipt_add_argv(json_t *root, char *const *argv)
{
	json_t *list = json_array(), *b64 = NULL;
	bool lossy = false;

	if (!list)
		return -ENOMEM;
	json_object_set_new(root, "argv", list);
	for (size_t i = 0; argv && argv[i]; i++) {
		json_array_append_new(list, json_text(argv[i], strlen(argv[i])));
		lossy = lossy || !utf8_is_valid(argv[i], strlen(argv[i]));
	}
	if (!lossy)
		return 0;
	b64 = json_array();
	if (!b64)
		return -ENOMEM;
	json_object_set_new(root, "argv_b64", b64);
	for (size_t i = 0; argv[i]; i++) {
		cleanup_free char *enc = base64_encode(argv[i], strlen(argv[i]));
		json_array_append_new(b64, enc ? json_string(enc) : json_null());
	}
	return 0;
}

/* The seed's clipped text: the head, a marker naming the bytes left out, the
 * tail. */
static json_t *receipt_stream_text(const struct capture *c)
{
	if (!c)
		return json_string("");
	size_t tail_cap = c->tail_cap ? c->tail_cap : 1;
	cleanup_free char *buf = malloc(c->head_len + c->tail_len + 96);
	cleanup_free char *tail = malloc(tail_cap);
	if (!buf || !tail)
		return NULL;
	size_t n = c->head_len;
	memcpy(buf, c->head, c->head_len);
	if (capture_is_truncated(c))
		n += (size_t)snprintf(buf + n, 96, "\n...[airlock: %llu bytes omitted]...\n",
				      (unsigned long long)capture_omitted_bytes(c));
	size_t t = capture_copy_tail(c, tail);
	memcpy(buf + n, tail, t);
	return json_text(buf, n + t);
}

/* The clipped text of s, from its capture or as read back. */
static json_t *receipt_stream_recorded_text(const struct receipt_stream *s)
{
	if (s->capture)
		return receipt_stream_text(s->capture);
	return s->text ? json_text(s->text, s->text_len) : json_string("");
}

static json_t *receipt_stream_json(const struct receipt_stream *s)
{
	const struct capture *c = s->capture;
	json_t *o = json_object();

	if (!o)
		return NULL;
	uint64_t bytes = c ? c->total_bytes : s->bytes;
	uint64_t head = c ? c->head_len : s->head_bytes, tail = c ? c->tail_len : s->tail_bytes;
	uint64_t omitted = c ? capture_omitted_bytes(c) : s->omitted_bytes;
	const char *sha256 = c ? c->sha256 : s->sha256;
	json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(o, "sha256", sha256 ? json_string(sha256) : json_null());
	json_object_set_new(o, "truncated", json_boolean(c ? capture_is_truncated(c) : s->truncated));
	json_object_set_new(o, "head_bytes", json_integer((json_int_t)head));
	json_object_set_new(o, "tail_bytes", json_integer((json_int_t)tail));
	json_object_set_new(o, "omitted_bytes", json_integer((json_int_t)omitted));
	if (s->spilled) {
		json_t *spill = json_object();
		json_object_set_new(spill, "bytes", json_integer((json_int_t)s->spill_bytes));
		json_object_set_new(spill, "truncated", json_boolean(s->spill_truncated));
		json_object_set_new(spill, "error", json_string_or_null(s->spill_error));
		json_object_set_new(o, "spill", spill);
	} else {
		json_object_set_new(o, "spill", json_null());
	}
	return o;
}

static json_t *json_int_or_null(bool present, json_int_t v)
{
	return present ? json_integer(v) : json_null();
}

static json_t *json_strv(char *const *strv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && strv && strv[i]; i++)
		json_array_append_new(a, json_text(strv[i], strlen(strv[i])));
	return a;
}

static void receipt_add_times(json_t *o, const struct receipt *r)
{
	char started[32], ended[32];

	clock_format_rfc3339(r->started_ns, started, sizeof(started));
	clock_format_rfc3339(r->ended_ns, ended, sizeof(ended));
	json_object_set_new(o, "started_at", json_string(started));
	json_object_set_new(o, "ended_at", json_string(ended));
	json_object_set_new(o, "duration_ms", json_integer((json_int_t)r->duration_ms));
}

static void receipt_add_outcome(json_t *o, const struct receipt *r)
{
	json_object_set_new(o, "status", json_string(receipt_status_to_string(r->status)));
	json_object_set_new(o, "exit_code", json_int_or_null(r->has_exit_code, r->exit_code));
	json_object_set_new(o, "signal", json_int_or_null(r->signal != 0, r->signal));
	json_object_set_new(o, "signal_name",
			    r->signal ? json_string_or_null(sigabbrev_np(r->signal)) : json_null());
	json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	json_object_set_new(o, "match_expected", json_boolean(r->match_expected));
	json_object_set_new(o, "error", json_string_or_null(r->error));
	if (r->denied_rule) {
		json_t *d = json_object();
		json_object_set_new(d, "rule", json_string(r->denied_rule));
		json_object_set_new(d, "value", json_string_or_null(r->denied_value));
		json_object_set_new(o, "denied", d);
	} else {
		json_object_set_new(o, "denied", json_null());
	}
	if (r->setup_stage) {
		json_t *s = json_object();
		json_object_set_new(s, "stage", json_string(r->setup_stage));
		json_object_set_new(s, "errno", json_integer(r->setup_errno));
		json_object_set_new(s, "errno_name",
				    json_string_or_null(strerrorname_np(r->setup_errno)));
		json_object_set_new(o, "setup", s);
	} else {
		json_object_set_new(o, "setup", json_null());
	}
	json_object_set_new(o, "descendants_killed", json_integer(r->descendants_killed));
	json_t *res = json_object();
	json_object_set_new(res, "max_rss_kib", json_integer((json_int_t)r->max_rss_kib));
	json_object_set_new(res, "user_cpu_ms", json_integer((json_int_t)r->user_cpu_ms));
	json_object_set_new(res, "system_cpu_ms", json_integer((json_int_t)r->system_cpu_ms));
	json_object_set_new(o, "resources", res);
}

static json_t *receipt_sandbox_enforced(const struct receipt_sandbox *sb)
{
	json_t *e = json_object();
	if (!e)
		return NULL;
	json_t *ns = json_array();
	static const char *const isolated_ns[] = { "user", "mount", "pid", "ipc", "uts", "cgroup" };
	for (size_t i = 0; ns && i < ARRAY_SIZE(isolated_ns); i++)
		json_array_append_new(ns, json_string(isolated_ns[i]));
	if (ns && !sb->share_net)
		json_array_append_new(ns, json_string("net"));
	json_object_set_new(e, "namespaces", ns);
	json_object_set_new(e, "network", json_string(sb->share_net ? "host" : "loopback"));
	json_object_set_new(e, "root", json_string("read-only"));
	json_object_set_new(e, "workspace", json_string_or_null(sb->workspace));
	json_object_set_new(e, "writable", json_strv(sb->writable));
	json_object_set_new(e, "tmp_bytes", json_integer((json_int_t)sb->tmp_bytes));
	json_object_set_new(e, "hidden", json_strv(sb->hidden));
	json_object_set_new(e, "exposed", json_strv(sb->exposed));
	json_object_set_new(e, "read_only", json_strv(sb->read_only));
	json_object_set_new(e, "capabilities", json_string("none"));
	json_object_set_new(e, "no_new_privs", json_true());
	json_t *ll = json_object();
	json_object_set_new(ll, "abi", json_integer(sb->landlock_abi));
	json_t *scoped = json_array();
	if (sb->landlock_scoped & 1)
		json_array_append_new(scoped, json_string("abstract_unix_socket"));
	if (sb->landlock_scoped & 2)
		json_array_append_new(scoped, json_string("signal"));
	json_object_set_new(ll, "scoped", scoped);
	json_object_set_new(e, "landlock", ll);
	json_t *sc = json_object();
	json_object_set_new(sc, "rules", json_integer(sb->seccomp_rules));
	json_object_set_new(sc, "action",
			    json_string("errno EPERM (EAFNOSUPPORT, EPROTONOSUPPORT for a refused socket family or netlink protocol), reported"));
	json_object_set_new(sc, "foreign_arch", json_string("kill"));
	json_object_set_new(e, "seccomp", sc);
	/* who keeps pathname Unix sockets to the workspace and /tmp */
	json_object_set_new(e, "unix_sockets",
			    json_string(sb->connect_mediated ? "supervisor" : "landlock"));
	/* Only what held is claimed: a limit in force that does not bound what
	 * its name says is in limits_partial, and every one says what held it. */
	static const char *const scopes[] = {
		[RECEIPT_LIMIT_RUN] = "run",
		[RECEIPT_LIMIT_PROCESS] = "process",
		[RECEIPT_LIMIT_FILE] = "file",
	};
	json_t *limits = json_object(), *partial = json_object(), *mechanisms = json_object();
	for (size_t i = 0; i < sb->n_limits; i++) {
		const struct receipt_limit *l = &sb->limits[i];
		json_object_set_new(l->partial ? partial : limits, l->name,
				    json_integer((json_int_t)l->value));
		json_object_set_new(mechanisms, l->name,
				    json_pack("{s:s, s:s, s:o}", "mechanism", l->mechanism, "scope",
					      scopes[l->scope], "not_counted",
					      json_string_or_null(l->not_counted)));
	}
	json_object_set_new(e, "limits", limits);
	json_object_set_new(e, "limits_partial", partial);
	json_object_set_new(e, "limit_mechanisms", mechanisms);
	json_t *cgroup = json_array();
	if (sb->cgroup_memory)
		json_array_append_new(cgroup, json_string("memory"));
	if (sb->cgroup_pids)
		json_array_append_new(cgroup, json_string("pids"));
	json_object_set_new(e, "cgroup_controllers", cgroup);
	return e;
}

static json_t *receipt_sandbox_json(const struct receipt_sandbox *sb)
{
	json_t *o = json_object();
	if (!o || !sb)
		return o;
	json_object_set_new(o, "profile", json_string(sb->profile));
	json_object_set_new(o, "enforced", sb->enforced ? receipt_sandbox_enforced(sb) : json_null());
	const char *allowed[3];
	hostview_allow_names(sb->allow_workspace, allowed);
	json_t *allow = json_array();
	for (size_t i = 0; allow && allowed[i]; i++)
		json_array_append_new(allow, json_string(allowed[i]));
	json_object_set_new(o, "allow_workspace", allow);
	json_t *denials = json_array();
	for (size_t i = 0; denials && i < sb->n_denials; i++) {
		json_t *d = json_object();
		json_object_set_new(d, "syscall", json_string_or_null(sb->denials[i].syscall));
		json_object_set_new(d, "nr", json_integer(sb->denials[i].nr));
		json_object_set_new(d, "count", json_integer(sb->denials[i].count));
		json_array_append_new(denials, d);
	}
	json_object_set_new(o, "denials", denials);
	json_object_set_new(o, "denials_dropped", json_integer(sb->denials_dropped));
	json_t *sockets = json_array();
	for (size_t i = 0; sockets && i < sb->n_socket_denials; i++)
		json_array_append_new(sockets,
				      json_pack("{s:s, s:i}", "path", sb->socket_denials[i].path,
						"count", (int)sb->socket_denials[i].count));
	json_object_set_new(o, "socket_denials", sockets);
	json_object_set_new(o, "socket_denials_dropped", json_integer(sb->socket_denials_dropped));
	json_object_set_new(o, "killed_by", json_string_or_null(sb->killed_by));
	json_object_set_new(o, "network", sb->network ? json_incref(sb->network) : json_null());
	json_t *hit = json_array();
	if (sb->memory_limit_hit)
		json_array_append_new(hit, json_string("memory"));
	if (sb->pids_limit_hit)
		json_array_append_new(hit, json_string("processes"));
	json_object_set_new(o, "limits_hit", hit);
	return o;
}

static json_t *receipt_host_code_json(const struct hostsafety_report *hc)
{
	if (!hc)
		return json_null();
	/* Each item or no document: one left out would make a run that left
	 * code for the host read as clean (gate_receipt_succeeded()). A path
	 * is the workspace's bytes: sanitized, as "to". */
	json_t *moved = json_array();
	for (size_t i = 0; moved && i < hc->n_items; i++) {
		const struct hostsafety_item *it = &hc->items[i];
		json_t *m = json_pack("{s:o, s:s, s:o}", "path", json_string_or_null(it->path),
				      "kind", hostsafety_kind_to_string(it->kind), "to",
				      json_string_or_null(it->moved_to));
		if (m && it->move_errno)
			json_object_set_new(m, "error", json_string(strerror(it->move_errno)));
		if (json_array_append_new(moved, m) < 0) {
			json_decref(moved);
			moved = NULL;
		}
	}
	return json_pack("{s:b, s:o, s:I, s:o}", "complete", !hc->incomplete, "reason",
			 json_string_or_null(hc->incomplete ? hc->reason : NULL), "entries",
			 (json_int_t)hc->entries, "moved_aside", moved);
}

static json_t *receipt_exec_identity_json(const struct receipt_exec_identity *id)
{
	if (!id)
		return json_null();
	json_t *o = json_pack("{s:I, s:I, s:I, s:o}", "dev", (json_int_t)id->dev, "ino",
			      (json_int_t)id->ino, "size", (json_int_t)id->size, "sha256",
			      id->sha256[0] ? json_string(id->sha256) : json_null());
	if (o && id->changed_during_run)
		json_object_set_new(o, "changed_during_run", json_true());
	return o;
}

static json_t *receipt_host_json(const struct receipt_host *h)
{
	return json_pack("{s:s, s:s?, s:s?, s:s?, s:b, s:b, s:s?, s:s, s:s?, s:s?}", "agent",
			 h->agent, "session_id", h->session_id, "tool_use_id", h->tool_use_id,
			 "event", h->event, "exit_code_reported", h->exit_code_reported, "verified",
			 h->verified, "masking", h->masking, "exit_status", h->exit_status,
			 "unknown_reason", h->unknown_reason, "interpretation", h->interpretation);
}

json_t *receipt_gate_to_json(const struct receipt_gate *g)
{
	if (g->error)
		return json_pack("{s:s}", "error", g->error);
	json_t *closes = json_array();
	for (size_t i = 0; closes && i < g->n_closes; i++)
		json_array_append_new(closes, json_pack("{s:I, s:s}", "receipt",
							(json_int_t)g->closes[i], "move", g->moves[i]));
	json_t *o = json_pack("{s:s, s:b, s:b, s:o?, s:o, s:s?}", "scope", g->scope, "opened",
			      g->opened, "verified", g->verified, "fixes",
			      g->fixes ? json_integer((json_int_t)g->fixes) : NULL, "closes",
			      closes, "note", g->note && g->note[0] ? g->note : NULL);
	/* The fix and its re-run name each other. */
	const struct {
		const char *key;
		uint64_t id;
	} links[] = { { "rerun", g->rerun }, { "rerun_of", g->rerun_of }, { "fix", g->fix } };
	for (size_t i = 0; o && i < ARRAY_SIZE(links); i++)
		json_object_set_new(o, links[i].key,
				    links[i].id ? json_integer((json_int_t)links[i].id) : json_null());
	return o;
}

json_t *receipt_to_json(const struct receipt *r)
{
	json_t *o = json_object();
	if (!o)
		return NULL;

	json_object_set_new(o, "schema", json_string(RECEIPT_SCHEMA));
	json_object_set_new(o, "id", json_integer((json_int_t)r->id));
	json_object_set_new(o, "source", json_string(r->source));
	json_object_set_new(o, "job_id", json_string_or_null(r->job_id));
	if (receipt_add_argv(o, r->argv) < 0) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "cwd", json_string_or_null(r->cwd));
	json_object_set_new(o, "exec_path", json_string_or_null(r->exec_path));
	json_object_set_new(o, "exec_identity", receipt_exec_identity_json(r->exec_identity));
	json_object_set_new(o, "rationale", json_string_or_null(r->rationale));
	json_object_set_new(o, "job_sha256", json_string_or_null(r->job_sha256));
	json_object_set_new(o, "timeout_sec", json_real((double)r->timeout_ms / 1000.0));
	json_object_set_new(o, "timeout_ms", json_integer((json_int_t)r->timeout_ms));
	json_object_set_new(o, "kill_after_ms", json_integer((json_int_t)r->kill_after_ms));
	json_object_set_new(o, "expected_exit", json_integer(r->n_expected ? r->expected[0] : 0));
	json_t *expected = json_array();
	for (size_t i = 0; expected && i < r->n_expected; i++)
		json_array_append_new(expected, json_integer(r->expected[i]));
	json_object_set_new(o, "expected_exits", expected);
	receipt_add_outcome(o, r);
	receipt_add_times(o, r);
	json_object_set_new(o, "env_keys", json_strv(r->env_keys));
	json_object_set_new(o, "stdout", receipt_stream_recorded_text(&r->out));
	json_object_set_new(o, "stderr", receipt_stream_recorded_text(&r->err));
	json_t *output = json_object();
	json_object_set_new(output, "stdout", receipt_stream_json(&r->out));
	json_object_set_new(output, "stderr", receipt_stream_json(&r->err));
	json_object_set_new(o, "output", output);
	json_object_set_new(o, "sandbox", receipt_sandbox_json(r->sandbox));
	json_object_set_new(o, "host_code", receipt_host_code_json(r->host_code));
	json_object_set_new(o, "policy", json_string_or_null(r->policy_origin));
	json_object_set_new(o, "policy_sha256", json_string_or_null(r->policy_sha256));
	json_object_set_new(o, "airlock_version", json_string(AIRLOCK_VERSION));
	if (r->shell)
		json_object_set_new(o, "shell", json_string(r->shell));
	if (r->host)
		json_object_set_new(o, "host", receipt_host_json(r->host));
	if (r->dryrun)
		json_object_set_new(o, "dryrun", json_incref(r->dryrun));
	if (r->gate)
		json_object_set_new(o, "gate", receipt_gate_to_json(r->gate));

	/* jansson drops a NULL value silently: check that nothing went missing. */
	static const char *const required[] = { "argv",	     "stdout",	       "stderr",
						"output",    "expected_exits", "env_keys",
						"resources", "sandbox",	       "host_code" };
	for (size_t i = 0; i < ARRAY_SIZE(required); i++)
		if (!json_object_get(o, required[i])) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* The index holds enough of argv to list and grep; the receipt has it all. */
#define INDEX_ARGV_MAX	    16
#define INDEX_ARG_MAX_BYTES 256

static json_t *receipt_index_argv(json_t *argv)
{
	json_t *out = json_array();
	size_t i;
	json_t *arg;

	json_array_foreach(argv, i, arg) {
		if (i == INDEX_ARGV_MAX || !out)
			break;
		const char *s = json_string_value(arg);
		size_t n = s ? json_string_length(arg) : 0;
		json_array_append_new(out, json_text(s ? s : "", MIN(n, INDEX_ARG_MAX_BYTES)));
	}
	return out;
}

json_t *receipt_index_entry(json_t *receipt_json)
{
	static const char *const keys[] = { "id",     "started_at", "status",	      "exit_code",
					    "signal", "timed_out",  "match_expected", "duration_ms",
					    "job_id", "cwd" };
	json_t *entry = json_object();
	if (!entry)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(receipt_json, keys[i]);
		json_object_set_new(entry, keys[i], v ? json_incref(v) : json_null());
	}
	/* So that `receipts --failed` lists a run that left code for the host
	 * even when the command itself succeeded. */
	json_t *hc = json_object_get(receipt_json, "host_code");
	bool hc_failed =
		json_is_object(hc) && (!json_is_true(json_object_get(hc, "complete")) ||
				       json_array_size(json_object_get(hc, "moved_aside")) > 0);
	json_object_set_new(entry, "host_code_failed", json_boolean(hc_failed));
	json_t *argv = receipt_index_argv(json_object_get(receipt_json, "argv"));
	if (!argv || json_object_set_new(entry, "argv", argv) < 0) {
		json_decref(entry);
		return NULL;
	}
	return entry;
}

void receipt_rerun_release(struct receipt_rerun *r)
{
	strv_free(r->argv);
	strv_free(r->env_keys);
	free(r->cwd);
	free(r->workspace);
	free(r->policy);
	free(r->policy_sha256);
	free(r->exec_path);
	*r = (struct receipt_rerun){ 0 };
}

static int receipt_dup_string(json_t *v, char **ret)
{
	*ret = NULL;
	if (!json_is_string(v))
		return 0;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/* The exact argv: argv_b64 when some element was not UTF-8, else argv. */
static int receipt_rerun_argv(json_t *doc, char ***ret, struct error *err)
{
	json_t *b64 = json_object_get(doc, "argv_b64");
	json_t *list = json_is_array(b64) ? b64 : json_object_get(doc, "argv");
	size_t i;
	json_t *w;

	if (!json_is_array(list) || json_array_size(list) == 0)
		return error_set(err, EINVAL, "it records no argv");
	json_array_foreach(list, i, w) {
		if (!json_is_string(w))
			return error_set(err, EINVAL, "its argv is damaged");
		char *word = NULL;
		size_t n = json_string_length(w);
		if (list == b64) {
			word = base64_decode(json_string_value(w), &n);
			if (word && strlen(word) != n) {
				free(word);
				word = NULL;
			}
			if (!word)
				return error_set(err, EINVAL, "its argv_b64 is damaged");
		} else if (!(word = strdup(json_string_value(w)))) {
			return error_set(err, ENOMEM, "out of memory");
		}
		if (strv_consume(ret, word) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int receipt_rerun_from_json(json_t *doc, struct receipt_rerun *ret, struct error *err)
{
	struct receipt_rerun r = { 0 };
	json_t *sandbox = json_object_get(doc, "sandbox");
	json_t *enforced = json_object_get(sandbox, "enforced");
	json_t *identity = json_object_get(doc, "exec_identity");
	size_t i;
	json_t *v;
	int e = receipt_rerun_argv(doc, &r.argv, err);

	if (e < 0)
		goto fail;
	if (!json_is_string(json_object_get(doc, "cwd"))) {
		e = error_set(err, EINVAL, "it records no cwd");
		goto fail;
	}
	json_array_foreach(json_object_get(doc, "expected_exits"), i, v)
		if (json_is_integer(v) && r.n_expected < ARRAY_SIZE(r.expected))
			r.expected[r.n_expected++] = (int)json_integer_value(v);
	if (r.n_expected == 0)
		r.expected[r.n_expected++] = 0; /* a host's command: 0 was wanted */
	r.timeout_ms = (uint64_t)json_integer_value(json_object_get(doc, "timeout_ms"));
	r.kill_after_ms = (uint64_t)json_integer_value(json_object_get(doc, "kill_after_ms"));
	json_array_foreach(json_object_get(doc, "env_keys"), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), "AIRLOCK_RECEIPT_ID") != 0 &&
		    strv_push(&r.env_keys, json_string_value(v)) < 0)
			goto oom;
	/* A command the host ran unconfined is re-run in the quarantine. */
	const char *profile = json_string_value(json_object_get(sandbox, "profile"));
	r.sandbox_profile = profile && strcmp(profile, "none") == 0 ? "none" : "default";
	r.share_net = json_is_string(json_object_get(enforced, "network")) &&
		      strcmp(json_string_value(json_object_get(enforced, "network")), "host") == 0;
	json_array_foreach(json_object_get(sandbox, "allow_workspace"), i, v) {
		unsigned flag = 0;
		if (json_is_string(v) && hostview_parse_allow(json_string_value(v), &flag) == 0)
			r.allow_workspace |= flag;
	}
	if (receipt_dup_string(json_object_get(doc, "cwd"), &r.cwd) < 0 ||
	    receipt_dup_string(json_object_get(enforced, "workspace"), &r.workspace) < 0 ||
	    receipt_dup_string(json_object_get(doc, "policy"), &r.policy) < 0 ||
	    receipt_dup_string(json_object_get(doc, "policy_sha256"), &r.policy_sha256) < 0 ||
	    receipt_dup_string(json_object_get(doc, "exec_path"), &r.exec_path) < 0)
		goto oom;
	if (json_is_object(identity)) {
		r.has_identity = true;
		r.identity.dev = (uint64_t)json_integer_value(json_object_get(identity, "dev"));
		r.identity.ino = (uint64_t)json_integer_value(json_object_get(identity, "ino"));
		r.identity.size = (uint64_t)json_integer_value(json_object_get(identity, "size"));
		snprintf(r.identity.sha256, sizeof(r.identity.sha256), "%s",
			 json_is_string(json_object_get(identity, "sha256"))
				 ? json_string_value(json_object_get(identity, "sha256"))
				 : "");
		r.identity.changed_during_run =
			json_is_true(json_object_get(identity, "changed_during_run"));
	}
	*ret = r;
	return 0;
oom:
	e = error_set(err, ENOMEM, "out of memory");
fail:
	receipt_rerun_release(&r);
	return e;
}

/* The reader: each helper checks the type of key in o, fails with -EINVAL
 * naming it, and leaves its output alone when the key is null and may be. */

static int receipt_read_error(struct error *err, const char *key, const char *what)
{
	return error_set(err, EINVAL, "%s: %s", key, what);
}

static json_t *receipt_read_key(json_t *o, const char *key, bool required, struct error *err, int *ret)
{
	json_t *v = json_object_get(o, key);

	*ret = 0;
	if (!v && required)
		*ret = receipt_read_error(err, key, "missing");
	return v;
}

/* A string, or null when nullable; *ret points into the document. */
static int receipt_read_str(json_t *o, const char *key, bool nullable, const char **ret,
			    struct error *err)
{
	*ret = NULL;
	int r;
	json_t *v = receipt_read_key(o, key, true, err, &r);

	if (r < 0)
		return r;
	if (json_is_null(v) && nullable) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return receipt_read_error(err, key, nullable ? "not a string or null" : "not a string");
	*ret = json_string_value(v);
	return 0;
}

static int receipt_read_int(json_t *o, const char *key, json_int_t min, json_int_t max,
			    json_int_t *ret, struct error *err)
{
	*ret = 0;
	int r;
	json_t *v = receipt_read_key(o, key, true, err, &r);

	if (r < 0)
		return r;
	if (!json_is_integer(v))
		return receipt_read_error(err, key, "not an integer");
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return receipt_read_error(err, key, "out of range");
	*ret = json_integer_value(v);
	return 0;
}

/* The writer stores a uint64_t as its two's complement json_int_t. */
static int receipt_read_u64(json_t *o, const char *key, uint64_t *ret, struct error *err)
{
	*ret = 0;
	json_int_t v;
	int r = receipt_read_int(o, key, INT64_MIN, INT64_MAX, &v, err);

	if (r == 0)
		*ret = (uint64_t)v;
	return r;
}

static int receipt_read_unsigned(json_t *o, const char *key, unsigned *ret, struct error *err)
{
	json_int_t v;
	int r = receipt_read_int(o, key, 0, UINT_MAX, &v, err);

	if (r == 0)
		*ret = (unsigned)v;
	return r;
}

static int receipt_read_bool(json_t *o, const char *key, bool *ret, struct error *err)
{
	int r;
	json_t *v = receipt_read_key(o, key, true, err, &r);

	if (r < 0)
		return r;
	if (!json_is_boolean(v))
		return receipt_read_error(err, key, "not a boolean");
	*ret = json_is_true(v);
	return 0;
}

static int receipt_read_type(json_t *o, const char *key, json_type type, bool nullable,
			     json_t **ret, struct error *err)
{
	*ret = NULL;
	int r;
	json_t *v = receipt_read_key(o, key, true, err, &r);

	if (r < 0)
		return r;
	if (nullable && json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (json_typeof(v) != type && !(type == JSON_REAL && json_is_number(v)))
		return receipt_read_error(err, key, "of the wrong type");
	*ret = v;
	return 0;
}

/* An array of strings, as a NULL-terminated list (NULL when empty). */
static int receipt_read_strv(json_t *o, const char *key, char ***ret, struct error *err)
{
	json_t *list, *v;
	size_t i;
	int r = receipt_read_type(o, key, JSON_ARRAY, false, &list, err);

	if (r < 0)
		return r;
	json_array_foreach(list, i, v) {
		if (!json_is_string(v))
			return receipt_read_error(err, key, "holds a non-string");
		if (strv_push(ret, json_string_value(v)) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int receipt_read_argv(json_t *doc, char ***ret, struct error *err)
{
	json_t *b64 = json_object_get(doc, "argv_b64"), *v;
	size_t i;
	int r = receipt_read_strv(doc, "argv", ret, err);

	if (r < 0 || !b64)
		return r;
	if (!json_is_array(b64) || json_array_size(b64) != strv_length(*ret))
		return receipt_read_error(err, "argv_b64", "not an array as long as argv");
	strv_free(*ret);
	*ret = NULL;
	json_array_foreach(b64, i, v) {
		size_t n;
		char *word = json_is_string(v) ? base64_decode(json_string_value(v), &n) : NULL;
		if (!word || strlen(word) != n) {
			free(word);
			return receipt_read_error(err, "argv_b64", "not base64 of an argument");
		}
		if (strv_consume(ret, word) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* "2026-01-02T03:04:05.678Z", as clock_format_rfc3339() writes it. */
static int receipt_read_time(json_t *o, const char *key, uint64_t *ret, struct error *err)
{
	const char *s;
	struct tm tm = { 0 };
	unsigned ms;
	int n = 0;
	int r = receipt_read_str(o, key, false, &s, err);

	if (r < 0)
		return r;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3uZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &n) != 7 ||
	    (size_t)n != strlen(s) || strlen(s) != 24 || tm.tm_year < 1970 || tm.tm_mon < 1 ||
	    tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 59 || ms > 999)
		return receipt_read_error(err, key, "not a time as airlock writes it");
	int day = tm.tm_mday;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t secs = timegm(&tm);
	/* A receipt's times are nanoseconds since 1970 in 64 bits: a time past
	 * 2554 would come back as another one (fuzz_receipt's round trip). */
	if (secs < 0 || tm.tm_mday != day || (uint64_t)secs >= UINT64_MAX / 1000000000ULL)
		return receipt_read_error(err, key, "not a time as airlock writes it");
	*ret = (uint64_t)secs * 1000000000ULL + (uint64_t)ms * 1000000ULL;
	return 0;
}

static int receipt_read_stream(json_t *doc, const char *key, struct receipt_stream *s, struct error *err)
{
	json_t *text, *meta, *spill;
	int r = receipt_read_type(doc, key, JSON_STRING, false, &text, err);

	if (r < 0 || (r = receipt_read_type(json_object_get(doc, "output"), key, JSON_OBJECT, false,
					    &meta, err)) < 0)
		return r;
	s->text = json_string_value(text);
	s->text_len = json_string_length(text);
	if ((r = receipt_read_u64(meta, "bytes", &s->bytes, err)) < 0 ||
	    (r = receipt_read_str(meta, "sha256", true, &s->sha256, err)) < 0 ||
	    (r = receipt_read_bool(meta, "truncated", &s->truncated, err)) < 0 ||
	    (r = receipt_read_u64(meta, "head_bytes", &s->head_bytes, err)) < 0 ||
	    (r = receipt_read_u64(meta, "tail_bytes", &s->tail_bytes, err)) < 0 ||
	    (r = receipt_read_u64(meta, "omitted_bytes", &s->omitted_bytes, err)) < 0 ||
	    (r = receipt_read_type(meta, "spill", JSON_OBJECT, true, &spill, err)) < 0)
		return error_prefix(err, "output.%s", key);
	if (!spill)
		return 0;
	const char *spill_error;
	s->spilled = true;
	if ((r = receipt_read_u64(spill, "bytes", &s->spill_bytes, err)) < 0 ||
	    (r = receipt_read_bool(spill, "truncated", &s->spill_truncated, err)) < 0 ||
	    (r = receipt_read_str(spill, "error", true, &spill_error, err)) < 0)
		return error_prefix(err, "output.%s.spill", key);
	s->spill_error = (char *)spill_error;
	return 0;
}

static int receipt_read_outcome(json_t *doc, struct receipt *rc, struct error *err)
{
	const char *status;
	json_t *v, *res;
	json_int_t n;
	int r = receipt_read_str(doc, "status", false, &status, err);

	if (r < 0)
		return r;
	for (rc->status = 0; rc->status < _RECEIPT_STATUS_MAX; rc->status++)
		if (strcmp(status_names[rc->status], status) == 0)
			break;
	if (rc->status == _RECEIPT_STATUS_MAX)
		return receipt_read_error(err, "status", "not a status");
	if ((r = receipt_read_type(doc, "exit_code", JSON_INTEGER, true, &v, err)) < 0)
		return r;
	if (v && (r = receipt_read_int(doc, "exit_code", INT_MIN, INT_MAX, &n, err)) < 0)
		return r;
	rc->has_exit_code = v;
	rc->exit_code = v ? (int)n : 0;
	if ((r = receipt_read_type(doc, "signal", JSON_INTEGER, true, &v, err)) < 0)
		return r;
	if (v && (r = receipt_read_int(doc, "signal", INT_MIN, INT_MAX, &n, err)) < 0)
		return r;
	rc->signal = v ? (int)n : 0;
	if ((r = receipt_read_type(doc, "signal_name", JSON_STRING, true, &v, err)) < 0 ||
	    (r = receipt_read_bool(doc, "timed_out", &rc->timed_out, err)) < 0 ||
	    (r = receipt_read_bool(doc, "match_expected", &rc->match_expected, err)) < 0 ||
	    (r = receipt_read_str(doc, "error", true, &rc->error, err)) < 0 ||
	    (r = receipt_read_type(doc, "denied", JSON_OBJECT, true, &v, err)) < 0)
		return r;
	if (v && ((r = receipt_read_str(v, "rule", false, &rc->denied_rule, err)) < 0 ||
		  (r = receipt_read_str(v, "value", true, &rc->denied_value, err)) < 0))
		return error_prefix(err, "denied");
	if ((r = receipt_read_type(doc, "setup", JSON_OBJECT, true, &v, err)) < 0)
		return r;
	if (v && ((r = receipt_read_str(v, "stage", false, &rc->setup_stage, err)) < 0 ||
		  (r = receipt_read_int(v, "errno", INT_MIN, INT_MAX, &n, err)) < 0 ||
		  (r = receipt_read_type(v, "errno_name", JSON_STRING, true, &res, err)) < 0))
		return error_prefix(err, "setup");
	rc->setup_errno = v ? (int)n : 0;
	if ((r = receipt_read_unsigned(doc, "descendants_killed", &rc->descendants_killed, err)) < 0 ||
	    (r = receipt_read_type(doc, "resources", JSON_OBJECT, false, &res, err)) < 0)
		return r;
	if ((r = receipt_read_u64(res, "max_rss_kib", &rc->max_rss_kib, err)) < 0 ||
	    (r = receipt_read_u64(res, "user_cpu_ms", &rc->user_cpu_ms, err)) < 0 ||
	    (r = receipt_read_u64(res, "system_cpu_ms", &rc->system_cpu_ms, err)) < 0)
		return error_prefix(err, "resources");
	return 0;
}

static int receipt_read_limits(json_t *e, struct receipt_sandbox *sb, struct error *err)
{
	static const char *const scopes[] = {
		[RECEIPT_LIMIT_RUN] = "run",
		[RECEIPT_LIMIT_PROCESS] = "process",
		[RECEIPT_LIMIT_FILE] = "file",
	};
	json_t *limits, *partial, *mechanisms, *m;
	const char *name;
	int r;

	if ((r = receipt_read_type(e, "limits", JSON_OBJECT, false, &limits, err)) < 0 ||
	    (r = receipt_read_type(e, "limits_partial", JSON_OBJECT, false, &partial, err)) < 0 ||
	    (r = receipt_read_type(e, "limit_mechanisms", JSON_OBJECT, false, &mechanisms, err)) < 0)
		return r;
	if (json_object_size(limits) + json_object_size(partial) != json_object_size(mechanisms))
		return receipt_read_error(err, "limit_mechanisms", "not one per limit");
	json_object_foreach(mechanisms, name, m) {
		if (sb->n_limits == ARRAY_SIZE(sb->limits))
			return receipt_read_error(err, "limits", "too many");
		struct receipt_limit *l = &sb->limits[sb->n_limits++];
		const char *scope;
		l->name = name;
		l->partial = json_object_get(partial, name);
		if ((r = receipt_read_u64(l->partial ? partial : limits, name, &l->value, err)) < 0 ||
		    (r = receipt_read_str(m, "mechanism", false, &l->mechanism, err)) < 0 ||
		    (r = receipt_read_str(m, "scope", false, &scope, err)) < 0 ||
		    (r = receipt_read_str(m, "not_counted", true, &l->not_counted, err)) < 0)
			return error_prefix(err, "limits");
		if (l->partial && json_object_get(limits, name))
			return receipt_read_error(err, "limits", "a limit both held and partial");
		for (l->scope = 0; l->scope < ARRAY_SIZE(scopes); l->scope++)
			if (strcmp(scopes[l->scope], scope) == 0)
				break;
		if (l->scope == ARRAY_SIZE(scopes))
			return receipt_read_error(err, "limit_mechanisms", "an unknown scope");
	}
	return 0;
}

static int receipt_read_enforced(json_t *e, struct receipt_parsed *p, struct error *err)
{
	struct receipt_sandbox *sb = &p->sandbox;
	const char *network, *unix_sockets;
	json_t *v, *ll, *sc;
	size_t i;
	json_int_t abi;
	int r;

	sb->enforced = true;
	if ((r = receipt_read_type(e, "namespaces", JSON_ARRAY, false, &v, err)) < 0 ||
	    (r = receipt_read_str(e, "network", false, &network, err)) < 0 ||
	    (r = receipt_read_type(e, "root", JSON_STRING, false, &v, err)) < 0 ||
	    (r = receipt_read_str(e, "workspace", true, &sb->workspace, err)) < 0 ||
	    (r = receipt_read_strv(e, "writable", &p->writable, err)) < 0 ||
	    (r = receipt_read_u64(e, "tmp_bytes", &sb->tmp_bytes, err)) < 0 ||
	    (r = receipt_read_strv(e, "hidden", &p->hidden, err)) < 0 ||
	    (r = receipt_read_strv(e, "exposed", &p->exposed, err)) < 0 ||
	    (r = receipt_read_strv(e, "read_only", &p->read_only, err)) < 0 ||
	    (r = receipt_read_type(e, "capabilities", JSON_STRING, false, &v, err)) < 0 ||
	    (r = receipt_read_type(e, "no_new_privs", JSON_TRUE, false, &v, err)) < 0 ||
	    (r = receipt_read_type(e, "landlock", JSON_OBJECT, false, &ll, err)) < 0 ||
	    (r = receipt_read_type(e, "seccomp", JSON_OBJECT, false, &sc, err)) < 0 ||
	    (r = receipt_read_str(e, "unix_sockets", false, &unix_sockets, err)) < 0 ||
	    (r = receipt_read_limits(e, sb, err)) < 0 ||
	    (r = receipt_read_type(e, "cgroup_controllers", JSON_ARRAY, false, &v, err)) < 0)
		return r;
	sb->writable = p->writable;
	sb->hidden = p->hidden;
	sb->exposed = p->exposed;
	sb->read_only = p->read_only;
	if (strcmp(network, "host") != 0 && strcmp(network, "loopback") != 0)
		return receipt_read_error(err, "network", "neither host nor loopback");
	sb->share_net = strcmp(network, "host") == 0;
	if (strcmp(unix_sockets, "supervisor") != 0 && strcmp(unix_sockets, "landlock") != 0)
		return receipt_read_error(err, "unix_sockets", "neither supervisor nor landlock");
	sb->connect_mediated = strcmp(unix_sockets, "supervisor") == 0;
	json_t *c;
	json_array_foreach(v, i, c) {
		const char *name = json_string_value(c);
		if (name && strcmp(name, "memory") == 0)
			sb->cgroup_memory = true;
		else if (name && strcmp(name, "pids") == 0)
			sb->cgroup_pids = true;
		else
			return receipt_read_error(err, "cgroup_controllers", "an unknown controller");
	}
	if ((r = receipt_read_int(ll, "abi", INT_MIN, INT_MAX, &abi, err)) < 0 ||
	    (r = receipt_read_type(ll, "scoped", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "landlock");
	sb->landlock_abi = (int)abi;
	json_array_foreach(v, i, c) {
		const char *name = json_string_value(c);
		if (name && strcmp(name, "abstract_unix_socket") == 0)
			sb->landlock_scoped |= 1;
		else if (name && strcmp(name, "signal") == 0)
			sb->landlock_scoped |= 2;
		else
			return receipt_read_error(err, "landlock.scoped", "an unknown scope");
	}
	if ((r = receipt_read_unsigned(sc, "rules", &sb->seccomp_rules, err)) < 0 ||
	    (r = receipt_read_type(sc, "action", JSON_STRING, false, &v, err)) < 0 ||
	    (r = receipt_read_type(sc, "foreign_arch", JSON_STRING, false, &v, err)) < 0)
		return error_prefix(err, "seccomp");
	return 0;
}

static int receipt_read_sandbox(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct receipt_sandbox *sb = &p->sandbox;
	json_t *o, *e, *v, *c;
	size_t i;
	int r = receipt_read_type(doc, "sandbox", JSON_OBJECT, false, &o, err);

	if (r < 0)
		return r;
	p->receipt.sandbox = sb;
	if ((r = receipt_read_str(o, "profile", false, &sb->profile, err)) < 0 ||
	    (r = receipt_read_type(o, "enforced", JSON_OBJECT, true, &e, err)) < 0 ||
	    (e && (r = receipt_read_enforced(e, p, err)) < 0) ||
	    (r = receipt_read_type(o, "allow_workspace", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "sandbox");
	json_array_foreach(v, i, c) {
		unsigned flag = 0;
		if (!json_is_string(c) || strchr(json_string_value(c), ',') ||
		    hostview_parse_allow(json_string_value(c), &flag) < 0)
			return receipt_read_error(err, "sandbox.allow_workspace", "an unknown name");
		sb->allow_workspace |= flag;
	}
	if ((r = receipt_read_type(o, "denials", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "sandbox");
	if (json_array_size(v) > ARRAY_SIZE(sb->denials))
		return receipt_read_error(err, "sandbox.denials", "too many");
	json_array_foreach(v, i, c) {
		struct receipt_denial *d = &sb->denials[sb->n_denials++];
		json_int_t nr;
		if (!json_is_object(c) ||
		    (r = receipt_read_str(c, "syscall", true, &d->syscall, err)) < 0 ||
		    (r = receipt_read_int(c, "nr", INT_MIN, INT_MAX, &nr, err)) < 0 ||
		    (r = receipt_read_unsigned(c, "count", &d->count, err)) < 0)
			return r < 0 ? error_prefix(err, "sandbox.denials")
				     : receipt_read_error(err, "sandbox.denials", "not an object");
		d->nr = (int)nr;
	}
	if ((r = receipt_read_unsigned(o, "denials_dropped", &sb->denials_dropped, err)) < 0 ||
	    (r = receipt_read_type(o, "socket_denials", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "sandbox");
	if (json_array_size(v) > ARRAY_SIZE(sb->socket_denials))
		return receipt_read_error(err, "sandbox.socket_denials", "too many");
	json_array_foreach(v, i, c) {
		struct receipt_socket_denial *d = &sb->socket_denials[sb->n_socket_denials++];
		const char *path = NULL;
		json_int_t count;
		/* The writer packs the count as an int. */
		if (!json_is_object(c) || (r = receipt_read_str(c, "path", false, &path, err)) < 0 ||
		    (r = receipt_read_int(c, "count", 0, INT_MAX, &count, err)) < 0)
			return r < 0 ? error_prefix(err, "sandbox.socket_denials")
				     : receipt_read_error(err, "sandbox.socket_denials",
							  "not an object");
		d->path = (char *)path;
		d->count = (unsigned)count;
	}
	if ((r = receipt_read_unsigned(o, "socket_denials_dropped", &sb->socket_denials_dropped,
				       err)) < 0 ||
	    (r = receipt_read_str(o, "killed_by", true, &sb->killed_by, err)) < 0 ||
	    (r = receipt_read_type(o, "limits_hit", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "sandbox");
	/* The allowlist proxy's object, kept as written (absent in receipts
	 * written before it, null when none). */
	v = json_object_get(o, "network");
	if (v && !json_is_null(v) && !json_is_object(v))
		return receipt_read_error(err, "sandbox.network", "not an object");
	sb->network = json_is_object(v) ? v : NULL;
	if ((r = receipt_read_type(o, "limits_hit", JSON_ARRAY, false, &v, err)) < 0)
		return error_prefix(err, "sandbox");
	json_array_foreach(v, i, c) {
		const char *name = json_string_value(c);
		if (name && strcmp(name, "memory") == 0)
			sb->memory_limit_hit = true;
		else if (name && strcmp(name, "processes") == 0)
			sb->pids_limit_hit = true;
		else
			return receipt_read_error(err, "sandbox.limits_hit", "an unknown limit");
	}
	return 0;
}

/* The errno strerror() names so; 0 when none does. */
static int receipt_errno_of(const char *message)
{
	for (int e = 1; e < 4096; e++)
		if (strcmp(strerror(e), message) == 0)
			return e;
	return 0;
}

static int receipt_read_host_code(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct hostsafety_report *hc = &p->host_code;
	json_t *o, *moved, *m;
	const char *reason;
	bool complete = false;
	size_t i;
	int r = receipt_read_type(doc, "host_code", JSON_OBJECT, true, &o, err);

	if (r < 0 || !o)
		return r;
	if ((r = receipt_read_bool(o, "complete", &complete, err)) < 0 ||
	    (r = receipt_read_str(o, "reason", true, &reason, err)) < 0 ||
	    (r = receipt_read_u64(o, "entries", &hc->entries, err)) < 0 ||
	    (r = receipt_read_type(o, "moved_aside", JSON_ARRAY, false, &moved, err)) < 0)
		return error_prefix(err, "host_code");
	hc->incomplete = !complete;
	if (!complete) /* the writer keeps a reason only for an incomplete walk */
		snprintf(hc->reason, sizeof(hc->reason), "%s", reason ? reason : "");
	hc->items = calloc(json_array_size(moved) + 1, sizeof(*hc->items));
	if (!hc->items)
		return error_set(err, ENOMEM, "out of memory");
	json_array_foreach(moved, i, m) {
		struct hostsafety_item *it = &hc->items[hc->n_items++];
		const char *path = NULL, *kind = NULL, *to = NULL, *error = NULL;
		if (!json_is_object(m) || (r = receipt_read_str(m, "path", false, &path, err)) < 0 ||
		    (r = receipt_read_str(m, "kind", false, &kind, err)) < 0 ||
		    (r = receipt_read_str(m, "to", true, &to, err)) < 0 ||
		    (json_object_get(m, "error") &&
		     (r = receipt_read_str(m, "error", false, &error, err)) < 0))
			return r < 0 ? error_prefix(err, "host_code.moved_aside")
				     : receipt_read_error(err, "host_code.moved_aside",
							  "not an object");
		it->path = (char *)path;
		it->moved_to = (char *)to;
		for (it->kind = 0; it->kind <= HOSTSAFETY_HOST_CONFIG; it->kind++)
			if (strcmp(hostsafety_kind_to_string(it->kind), kind) == 0)
				break;
		if (it->kind > HOSTSAFETY_HOST_CONFIG)
			return receipt_read_error(err, "host_code.moved_aside", "an unknown kind");
		if (error && !(it->move_errno = receipt_errno_of(error)))
			return receipt_read_error(err, "host_code.moved_aside", "an unknown error");
	}
	p->receipt.host_code = hc;
	return 0;
}

static int receipt_read_host(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct receipt_host *h = &p->host;
	json_t *o;
	int r = receipt_read_type(doc, "host", JSON_OBJECT, false, &o, err);

	if (r < 0)
		return r;
	if ((r = receipt_read_str(o, "agent", false, &h->agent, err)) < 0 ||
	    (r = receipt_read_str(o, "session_id", true, &h->session_id, err)) < 0 ||
	    (r = receipt_read_str(o, "tool_use_id", true, &h->tool_use_id, err)) < 0 ||
	    (r = receipt_read_str(o, "event", true, &h->event, err)) < 0 ||
	    (r = receipt_read_bool(o, "exit_code_reported", &h->exit_code_reported, err)) < 0 ||
	    (r = receipt_read_bool(o, "verified", &h->verified, err)) < 0 ||
	    (r = receipt_read_str(o, "masking", true, &h->masking, err)) < 0 ||
	    (r = receipt_read_str(o, "exit_status", false, &h->exit_status, err)) < 0 ||
	    (r = receipt_read_str(o, "unknown_reason", true, &h->unknown_reason, err)) < 0 ||
	    (r = receipt_read_str(o, "interpretation", true, &h->interpretation, err)) < 0)
		return error_prefix(err, "host");
	p->receipt.host = h;
	return 0;
}

static int receipt_read_link(json_t *o, const char *key, uint64_t *ret, struct error *err)
{
	json_t *v;
	int r = receipt_read_type(o, key, JSON_INTEGER, true, &v, err);

	*ret = 0;
	return r < 0 || !v ? r : receipt_read_u64(o, key, ret, err);
}

static int receipt_read_gate(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct receipt_gate *g = &p->gate;
	json_t *o, *closes, *c;
	size_t i;
	int r = receipt_read_type(doc, "gate", JSON_OBJECT, false, &o, err);

	if (r < 0)
		return r;
	p->receipt.gate = g;
	if (json_object_get(o, "error"))
		return receipt_read_str(o, "error", false, &g->error, err) < 0
			       ? error_prefix(err, "gate")
			       : 0;
	if ((r = receipt_read_str(o, "scope", false, &g->scope, err)) < 0 ||
	    (r = receipt_read_bool(o, "opened", &g->opened, err)) < 0 ||
	    (r = receipt_read_bool(o, "verified", &g->verified, err)) < 0 ||
	    (r = receipt_read_link(o, "fixes", &g->fixes, err)) < 0 ||
	    (r = receipt_read_type(o, "closes", JSON_ARRAY, false, &closes, err)) < 0 ||
	    (r = receipt_read_str(o, "note", true, &g->note, err)) < 0 ||
	    (r = receipt_read_link(o, "rerun", &g->rerun, err)) < 0 ||
	    (r = receipt_read_link(o, "rerun_of", &g->rerun_of, err)) < 0 ||
	    (r = receipt_read_link(o, "fix", &g->fix, err)) < 0)
		return error_prefix(err, "gate");
	if (g->note && !g->note[0])
		g->note = NULL; /* the writer drops an empty note */
	if (json_array_size(closes) > ARRAY_SIZE(g->closes))
		return receipt_read_error(err, "gate.closes", "too many");
	json_array_foreach(closes, i, c) {
		if (!json_is_object(c) || (r = receipt_read_u64(c, "receipt", &g->closes[i], err)) < 0 ||
		    (r = receipt_read_str(c, "move", false, &g->moves[i], err)) < 0)
			return r < 0 ? error_prefix(err, "gate.closes")
				     : receipt_read_error(err, "gate.closes", "not an object");
		g->n_closes++;
	}
	return 0;
}

static int receipt_read_identity(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct receipt_exec_identity *id = &p->exec_identity;
	const char *sha256;
	json_t *o, *changed;
	int r = receipt_read_type(doc, "exec_identity", JSON_OBJECT, true, &o, err);

	if (r < 0 || !o)
		return r;
	if ((r = receipt_read_u64(o, "dev", &id->dev, err)) < 0 ||
	    (r = receipt_read_u64(o, "ino", &id->ino, err)) < 0 ||
	    (r = receipt_read_u64(o, "size", &id->size, err)) < 0 ||
	    (r = receipt_read_str(o, "sha256", true, &sha256, err)) < 0)
		return error_prefix(err, "exec_identity");
	changed = json_object_get(o, "changed_during_run");
	if (changed && !json_is_true(changed))
		return receipt_read_error(err, "exec_identity.changed_during_run", "not true");
	if (sha256 && strlen(sha256) >= sizeof(id->sha256))
		return receipt_read_error(err, "exec_identity.sha256", "too long for a SHA-256 digest");
	snprintf(id->sha256, sizeof(id->sha256), "%s", sha256 ? sha256 : "");
	id->changed_during_run = changed;
	p->receipt.exec_identity = id;
	return 0;
}

void receipt_parsed_release(struct receipt_parsed *p)
{
	strv_free(p->argv);
	strv_free(p->env_keys);
	strv_free(p->writable);
	strv_free(p->hidden);
	strv_free(p->read_only);
	strv_free(p->exposed);
	free(p->expected);
	free(p->host_code.items); /* their strings are the document's */
	json_decref(p->doc);
	*p = (struct receipt_parsed){ 0 };
}

static int receipt_read(json_t *doc, struct receipt_parsed *p, struct error *err)
{
	struct receipt *rc = &p->receipt;
	json_t *v, *e;
	size_t i;
	int r;

	if (!json_is_object(doc))
		return error_set(err, EINVAL, "not an object");
	if ((r = receipt_read_type(doc, "schema", JSON_STRING, false, &v, err)) < 0 ||
	    (r = receipt_read_u64(doc, "id", &rc->id, err)) < 0 ||
	    (r = receipt_read_str(doc, "source", false, &rc->source, err)) < 0 ||
	    (r = receipt_read_str(doc, "job_id", true, &rc->job_id, err)) < 0 ||
	    (r = receipt_read_argv(doc, &p->argv, err)) < 0 ||
	    (r = receipt_read_str(doc, "cwd", true, &rc->cwd, err)) < 0 ||
	    (r = receipt_read_str(doc, "exec_path", true, &rc->exec_path, err)) < 0 ||
	    (r = receipt_read_identity(doc, p, err)) < 0 ||
	    (r = receipt_read_str(doc, "rationale", true, &rc->rationale, err)) < 0 ||
	    (r = receipt_read_str(doc, "job_sha256", true, &rc->job_sha256, err)) < 0 ||
	    (r = receipt_read_type(doc, "timeout_sec", JSON_REAL, false, &v, err)) < 0 ||
	    (r = receipt_read_u64(doc, "timeout_ms", &rc->timeout_ms, err)) < 0 ||
	    (r = receipt_read_u64(doc, "kill_after_ms", &rc->kill_after_ms, err)) < 0 ||
	    (r = receipt_read_type(doc, "expected_exit", JSON_INTEGER, false, &v, err)) < 0 ||
	    (r = receipt_read_type(doc, "expected_exits", JSON_ARRAY, false, &v, err)) < 0)
		return r;
	rc->argv = p->argv;
	p->expected = calloc(json_array_size(v) + 1, sizeof(int));
	if (!p->expected)
		return error_set(err, ENOMEM, "out of memory");
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) < INT_MIN ||
		    json_integer_value(e) > INT_MAX)
			return receipt_read_error(err, "expected_exits", "holds a non-int");
		p->expected[rc->n_expected++] = (int)json_integer_value(e);
	}
	rc->expected = p->expected;
	if ((r = receipt_read_outcome(doc, rc, err)) < 0 ||
	    (r = receipt_read_time(doc, "started_at", &rc->started_ns, err)) < 0 ||
	    (r = receipt_read_time(doc, "ended_at", &rc->ended_ns, err)) < 0 ||
	    (r = receipt_read_u64(doc, "duration_ms", &rc->duration_ms, err)) < 0 ||
	    (r = receipt_read_strv(doc, "env_keys", &p->env_keys, err)) < 0 ||
	    (r = receipt_read_type(doc, "output", JSON_OBJECT, false, &v, err)) < 0 ||
	    (r = receipt_read_stream(doc, "stdout", &rc->out, err)) < 0 ||
	    (r = receipt_read_stream(doc, "stderr", &rc->err, err)) < 0 ||
	    (r = receipt_read_sandbox(doc, p, err)) < 0 ||
	    (r = receipt_read_host_code(doc, p, err)) < 0 ||
	    (r = receipt_read_str(doc, "policy", true, &rc->policy_origin, err)) < 0 ||
	    (r = receipt_read_str(doc, "policy_sha256", true, &rc->policy_sha256, err)) < 0 ||
	    (r = receipt_read_type(doc, "airlock_version", JSON_STRING, false, &v, err)) < 0)
		return r;
	rc->env_keys = p->env_keys;
	if (json_object_get(doc, "shell") &&
	    (r = receipt_read_str(doc, "shell", false, &rc->shell, err)) < 0)
		return r;
	if (json_object_get(doc, "host") && (r = receipt_read_host(doc, p, err)) < 0)
		return r;
	/* null, as the gate reads it: not a dry run */
	rc->dryrun = json_is_null(json_object_get(doc, "dryrun")) ? NULL
								  : json_object_get(doc, "dryrun");
	if (rc->dryrun && !json_is_object(rc->dryrun))
		return receipt_read_error(err, "dryrun", "not an object");
	if (json_object_get(doc, "gate") && (r = receipt_read_gate(doc, p, err)) < 0)
		return r;
	return 0;
}

int receipt_from_json(json_t *doc, struct receipt_parsed *ret, struct error *err)
{
	*ret = (struct receipt_parsed){ .doc = json_incref(doc) };
	int r = receipt_read(doc, ret, err);
	if (r < 0) {
		receipt_parsed_release(ret);
		return error_prefix(err, "receipt");
	}
	return 0;
}

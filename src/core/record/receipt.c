/* SPDX-License-Identifier: MIT */
#include "core/record/receipt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static json_t *receipt_stream_json(const struct receipt_stream *s)
{
	const struct capture *c = s->capture;
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "bytes", json_integer(c ? (json_int_t)c->total_bytes : 0));
	json_object_set_new(o, "sha256", c ? json_string(c->sha256) : json_null());
	json_object_set_new(o, "truncated", json_boolean(c && capture_is_truncated(c)));
	json_object_set_new(o, "head_bytes", json_integer(c ? (json_int_t)c->head_len : 0));
	json_object_set_new(o, "tail_bytes", json_integer(c ? (json_int_t)c->tail_len : 0));
	json_object_set_new(o, "omitted_bytes",
			    json_integer(c ? (json_int_t)capture_omitted_bytes(c) : 0));
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
	json_object_set_new(sc, "action", json_string("errno EPERM (EAFNOSUPPORT, EPROTONOSUPPORT for a refused socket family or netlink protocol), reported"));
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
	json_t *moved = json_array();
	for (size_t i = 0; moved && i < hc->n_items; i++) {
		const struct hostsafety_item *it = &hc->items[i];
		json_t *m = json_pack("{s:s, s:s, s:o}", "path", it->path, "kind",
				      hostsafety_kind_to_string(it->kind), "to",
				      json_string_or_null(it->moved_to));
		if (m && it->move_errno)
			json_object_set_new(m, "error", json_string(strerror(it->move_errno)));
		json_array_append_new(moved, m);
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
	json_object_set_new(o, "expected_exit",
			    json_integer(r->n_expected ? r->expected[0] : 0));
	json_t *expected = json_array();
	for (size_t i = 0; expected && i < r->n_expected; i++)
		json_array_append_new(expected, json_integer(r->expected[i]));
	json_object_set_new(o, "expected_exits", expected);
	receipt_add_outcome(o, r);
	receipt_add_times(o, r);
	json_object_set_new(o, "env_keys", json_strv(r->env_keys));
	json_object_set_new(o, "stdout", receipt_stream_text(r->out.capture));
	json_object_set_new(o, "stderr", receipt_stream_text(r->err.capture));
	json_t *output = json_object();
	json_object_set_new(output, "stdout", receipt_stream_json(&r->out));
	json_object_set_new(output, "stderr", receipt_stream_json(&r->err));
	json_object_set_new(o, "output", output);
	json_object_set_new(o, "sandbox", receipt_sandbox_json(r->sandbox));
	json_object_set_new(o, "host_code", receipt_host_code_json(r->host_code));
	json_object_set_new(o, "policy", json_string_or_null(r->policy_origin));
	json_object_set_new(o, "policy_sha256", json_string_or_null(r->policy_sha256));
	json_object_set_new(o, "airlock_version", json_string(AIRLOCK_VERSION));

	/* jansson drops a NULL value silently: check that nothing went missing. */
	static const char *const required[] = { "argv",	     "stdout",	 "stderr",   "output",
						"expected_exits", "env_keys", "resources", "sandbox",
						"host_code" };
	for (size_t i = 0; i < ARRAY_SIZE(required); i++)
		if (!json_object_get(o, required[i])) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* The index holds enough of argv to list and grep; the receipt has it all. */
#define INDEX_ARGV_MAX	   16
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
	static const char *const keys[] = { "id",	 "started_at", "status",     "exit_code",
					    "signal",	 "timed_out",  "match_expected",
					    "duration_ms", "job_id",   "cwd" };
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
	bool hc_failed = json_is_object(hc) &&
			 (!json_is_true(json_object_get(hc, "complete")) ||
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

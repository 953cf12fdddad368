/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "core/gate/status.h"
#include "core/hook/hook.h"
#include "core/permit/permit.h"
#include "core/policy/rules.h"
#include "core/run/run.h"
#include "core/session/session.h"
#include "core/store/jsonutil.h"
#include "core/store/store.h"
#include "ledger/ledger.h"
#include "mcp/tools.h"

/* One tool: its name, description, and the JSON Schemas of its arguments
 * and of its structured result (JSON Schema 2020-12, as MCP's tools/list
 * carries them), and the function that answers it. */
struct mcp_tool {
	const char *name, *title, *description, *input_schema, *output_schema;
	bool read_only;
	json_t *(*call)(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd);
};

#define SCHEMA_ARGV                                                                    \
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1," \
	"\"description\":\"the command and its arguments, not a shell string (use [\\\"sh\\\",\\\"-c\\\",SCRIPT] for one)\"}"
#define SCHEMA_RUN_COMMON                                                                                                                    \
	SCHEMA_ARGV                                                                                                                          \
	","                                                                                                                                  \
	"\"cwd\":{\"type\":\"string\",\"description\":\"where it runs, relative to the workspace and inside it (default: the workspace)\"}," \
	"\"timeout\":{\"type\":\"string\",\"description\":\"a duration like 30s or 500ms (default: the policy's)\"},"                        \
	"\"env\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"names of the server's environment variables to pass in, besides the policy's allowlist\"}"
#define SCHEMA_ID(what) "{\"type\":\"integer\",\"minimum\":1,\"description\":\"" what "\"}"

/* The receipt's summary, run's and dryrun's structured result. */
#define SCHEMA_OUTCOME_PROPS                                                                                         \
	"\"receipt\":{\"type\":\"integer\"},\"status\":{\"type\":\"string\"},"                                       \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"integer\",\"null\"]},"              \
	"\"timed_out\":{\"type\":\"boolean\"},\"match_expected\":{\"type\":\"boolean\"},"                            \
	"\"output_bytes\":{\"type\":\"integer\"},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"}," \
	"\"message\":{\"type\":[\"string\",\"null\"]},\"failure_opened\":{\"type\":\"boolean\"},"                    \
	"\"closes\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"                                          \
	"\"host_code_failed\":{\"type\":\"boolean\"}"
#define SCHEMA_OUTCOME_REQUIRED \
	"\"receipt\",\"status\",\"exit_code\",\"timed_out\",\"stdout\",\"stderr\""

/* The text part of a result; also carried as structured content's text. */
static json_t *tool_text(const char *text)
{
	return json_pack("[{s:s, s:s}]", "type", "text", "text", text);
}

/* A tool's error (isError), text for the model: a refusal, bad arguments,
 * or what kept airlock from answering. */
static json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *tool_error(const char *fmt, ...)
{
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return json_pack("{s:o, s:b}", "content", tool_text(text), "isError", 1);
}

/* A result: text for the model, structured (stolen) for programs. */
static json_t *tool_result(const char *text, json_t *structured)
{
	if (!structured)
		return NULL;
	return json_pack("{s:o, s:o, s:b}", "content", tool_text(text), "structuredContent",
			 structured, "isError", 0);
}

/* A result whose text is the structured content itself, as JSON. */
static json_t *tool_result_json(json_t *structured)
{
	if (!structured)
		return NULL;
	cleanup_free char *text = json_dumps(structured, JSON_INDENT(2) | JSON_SORT_KEYS);
	return text ? tool_result(text, structured) : (json_decref(structured), NULL);
}

static int args_check(json_t *args, const char *const *allowed, struct error *err)
{
	return jsonutil_check_keys(args, "arguments", allowed, err);
}

/* An optional positive id at key (0 when absent). */
static int args_id(json_t *args, const char *key, bool required, uint64_t *ret, struct error *err)
{
	json_t *v = json_object_get(args, key);

	*ret = 0;
	if (!v)
		return required ? error_set(err, EINVAL, "'%s' is required", key) : 0;
	return jsonutil_get_u64(v, key, 1, INT64_MAX, ret, err);
}

static int args_strv(json_t *args, const char *key, char ***ret, struct error *err)
{
	json_t *v = json_object_get(args, key);

	return v ? jsonutil_get_strv(v, key, false, ret, err) : 0;
}

/* The session's store; without a state directory yet, NULL (nothing
 * recorded) unless create. */
static int tools_store(const struct mcp_tools_ctx *ctx, bool create, struct store **ret,
		       struct error *err)
{
	int r = session_store(ctx->session, create, ret, err);
	if (r == -ENOENT && !create) {
		*ret = NULL;
		return 0;
	}
	return r;
}

/* cwd relative to the workspace, absolute; NULL for the workspace itself. */
static char *tools_cwd(const struct mcp_tools_ctx *ctx, const char *cwd)
{
	char *path = NULL;

	if (!cwd || !*cwd)
		return strdup(ctx->workspace);
	if (cwd[0] == '/')
		return strdup(cwd);
	return asprintf(&path, "%s/%s", ctx->workspace, cwd) < 0 ? NULL : path;
}

/* run and dryrun's arguments into req; a bad one marks it invalid, so the
 * attempt is recorded as the CLI records a bad option. */
static void tools_fill_request(const struct mcp_tools_ctx *ctx, json_t *args,
			       struct run_request *req, struct error *err)
{
	const char *timeout = jsonutil_str(args, "timeout");
	struct error e = { 0 };
	uint64_t ms;

	if (args_strv(args, "argv", &req->argv, &e) < 0 || !req->argv || !req->argv[0])
		run_request_set_invalid(req, "argv: %s", e.msg[0] ? e.msg : "no command given");
	if (json_object_get(args, "cwd") && !json_is_string(json_object_get(args, "cwd")))
		run_request_set_invalid(req, "'cwd' must be a string");
	req->cwd = tools_cwd(ctx, jsonutil_str(args, "cwd"));
	req->workspace = strdup(ctx->workspace);
	req->cwd_in_workspace = true;
	if (!req->cwd || !req->workspace)
		run_request_set_invalid(req, "out of memory");
	if (json_object_get(args, "timeout")) {
		if (!timeout || parse_duration_ms(timeout, &ms) < 0 || ms == 0)
			run_request_set_invalid(req,
						"'timeout' must be a positive duration (e.g. 30s, 500ms)");
		else {
			req->timeout_ms = ms;
			req->has_timeout = true;
		}
	}
	if (args_strv(args, "env", &req->env_allow, &e) < 0)
		run_request_set_invalid(req, "%s", e.msg);
	if (args_id(args, "fixes", false, &req->fixes, &e) < 0)
		run_request_set_invalid(req, "%s", e.msg);
	if (json_object_get(args, "why")) {
		const char *why = jsonutil_str(args, "why");
		if (!why || !(req->rationale = strdup(why)))
			run_request_set_invalid(req, "'why' must be a string");
	}
	(void)err;
}

static json_t *outcome_json(const struct run_outcome *o)
{
	json_t *closes = json_array();
	for (size_t i = 0; closes && i < o->n_closes; i++)
		json_array_append_new(closes, json_integer((json_int_t)o->closes[i]));
	json_t *rc = o->receipt;
	json_t *s =
		json_pack("{s:I, s:s, s:o, s:o, s:b, s:b, s:I, s:s, s:s, s:o, s:b, s:o, s:b}",
			  "receipt", (json_int_t)o->id, "status",
			  receipt_status_to_string(o->status), "exit_code",
			  o->status == RECEIPT_EXITED ? json_integer(o->exit_code) : json_null(),
			  "signal", o->signal ? json_integer(o->signal) : json_null(), "timed_out",
			  o->timed_out, "match_expected", o->match_expected, "output_bytes",
			  (json_int_t)o->output_bytes, "stdout",
			  jsonutil_str(rc, "stdout") ? jsonutil_str(rc, "stdout") : "", "stderr",
			  jsonutil_str(rc, "stderr") ? jsonutil_str(rc, "stderr") : "", "message",
			  o->message[0] ? json_string(o->message) : json_null(), "failure_opened",
			  o->failure_opened, "closes", closes ? closes : json_array(),
			  "host_code_failed", o->host_code_failed);
	if (s && o->gate_note[0])
		json_object_set_new(s, "gate_note", json_string(o->gate_note));
	if (s && o->warning[0])
		json_object_set_new(s, "warning", json_string(o->warning));
	return s;
}

/* The model's text of a run: one line of facts, then the output as the
 * receipt bounds it. */
static void outcome_text(const struct run_outcome *o, json_t *rc, char **buf)
{
	char *text = NULL;
	char exit_text[64] = "";

	if (o->status == RECEIPT_EXITED)
		snprintf(exit_text, sizeof(exit_text), " %d%s", o->exit_code,
			 o->match_expected ? "" : " (not the expected exit status)");
	if (asprintf(&text, "%sreceipt %" PRIu64 ": %s%s%s%s%s%s\n--- stdout ---\n%s--- stderr ---\n%s",
		     *buf ? *buf : "", o->id, receipt_status_to_string(o->status), exit_text,
		     o->message[0] ? ": " : "", o->message,
		     o->failure_opened ? "; this failure is now open: mutating commands are refused until it closes (gate tool)"
				       : "",
		     o->gate_note[0] ? "; closes no failure" : "",
		     jsonutil_str(rc, "stdout") ? jsonutil_str(rc, "stdout") : "",
		     jsonutil_str(rc, "stderr") ? jsonutil_str(rc, "stderr") : "") < 0)
		text = NULL;
	free(*buf);
	*buf = text;
}

static json_t *tool_run_or_dryrun(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd,
				  bool dryrun)
{
	static const char *const run_keys[] = { "argv",	 "cwd", "timeout", "env",
						"fixes", "why", NULL };
	static const char *const dry_keys[] = { "argv",	  "cwd",	   "timeout", "env",
						"expect", "expect_delete", "why",     NULL };
	struct error err = { 0 };
	struct run_request req;
	struct run_outcome o = { 0 };

	run_request_init(&req);
	req.source = dryrun ? "dryrun" : "mcp";
	req.dryrun = dryrun;
	req.cancel_fd = cancel_fd;
	if (args_check(args, dryrun ? dry_keys : run_keys, &err) < 0)
		run_request_set_invalid(&req, "%s", err.msg);
	tools_fill_request(ctx, args, &req, &err);
	if (dryrun && (args_strv(args, "expect", &req.expect_paths, &err) < 0 ||
		       args_strv(args, "expect_delete", &req.expect_delete, &err) < 0))
		run_request_set_invalid(&req, "%s", err.msg);

	/* The gate, as the hooks apply it to a shell tool: a mutating command
	 * does not run while a failure is open (a dry run changes nothing).
	 * At the cwd's scope and at the workspace's: the run writes the
	 * workspace whatever its cwd, and a cwd outside it, or in a nested
	 * repository older than the failure, sees none of its failures. */
	const char *const gate_dirs[] = { req.cwd, req.workspace };
	for (size_t i = 0; !dryrun && !run_request_is_invalid(&req) && i < ARRAY_SIZE(gate_dirs); i++) {
		struct hook_outcome gate;
		if (i > 0 && strcmp(gate_dirs[i], gate_dirs[0]) == 0)
			break;
		if (hook_gate_argv(ctx->session, gate_dirs[i], req.argv, req.fixes, &gate, &err) < 0) {
			run_request_release(&req);
			return tool_error("airlock: the gate could not be read: %s", err.msg);
		}
		if (gate.decision == HOOK_BLOCK) {
			run_request_release(&req);
			json_t *ret = tool_error("%s", gate.message);
			hook_outcome_release(&gate);
			return ret;
		}
		hook_outcome_release(&gate);
	}

	int r = run_execute(&(struct run_context){ .session = ctx->session,
						   .policy_path = ctx->session->policy_path },
			    &req, &o, &err);
	run_request_release(&req);
	if (r < 0)
		return tool_error("airlock: %s", err.msg);

	json_t *s = outcome_json(&o);
	cleanup_free char *text = NULL;
	outcome_text(&o, o.receipt, &text);
	if (s && dryrun) {
		const char *verdict = dryrun_verdict_name(o.verdict);
		json_object_set_new(s, "verdict", json_string(verdict ? verdict : "none"));
		json_t *dr = json_object_get(o.receipt, "dryrun");
		json_object_set(s, "dryrun", dr ? dr : json_null());
		cleanup_free char *changes = dr ? json_dumps(dr, JSON_INDENT(2)) : NULL;
		char *more = NULL;
		if (asprintf(&more, "%s\n--- dry run: %s ---\n%s\n", text ? text : "",
			     verdict ? verdict : "none", changes ? changes : "null") >= 0) {
			free(text);
			text = more;
		}
	}
	if (s && o.rerun) {
		json_t *re = outcome_json(o.rerun);
		json_object_set_new(s, "rerun", re ? re : json_null());
		char *more = text ? strdup(text) : NULL;
		if (more) {
			char *sep = NULL;
			if (asprintf(&sep, "%s\nthe failure's re-run: ", more) >= 0) {
				free(more);
				more = sep;
				outcome_text(o.rerun, o.rerun->receipt, &more);
				free(text);
				text = more;
			} else {
				free(more);
			}
		}
	}
	run_outcome_release(&o);
	return text ? tool_result(text, s) : (json_decref(s), NULL);
}

static json_t *tool_run(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	return tool_run_or_dryrun(ctx, args, cancel_fd, false);
}

static json_t *tool_dryrun(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	return tool_run_or_dryrun(ctx, args, cancel_fd, true);
}

static json_t *tool_gate(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "cwd", NULL };
	cleanup_with(gate_status_release) struct gate_status st = { 0 };
	struct error err = { 0 };

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0)
		return tool_error("%s", err.msg);
	cleanup_free char *cwd = tools_cwd(ctx, jsonutil_str(args, "cwd"));
	if (!cwd)
		return NULL;
	if (gate_status(ctx->session, cwd, &st, &err) < 0)
		return tool_error("airlock: gate: %s", err.msg);
	json_t *doc = gate_status_to_json(&st);
	if (!doc)
		return NULL;
	char *text = NULL;
	if (asprintf(&text, "%zu failure%s open in %s.%s", st.open.n, st.open.n == 1 ? "" : "s", st.scope,
		     st.open.n ? " Each closes when the same command succeeds again, when a run with fixes=ID exits 0 and the failed command, which airlock then re-runs, succeeds, or when the human acknowledges it (airlock ack ID, in their terminal). Mutating commands are refused until then."
			       : "") < 0)
		return json_decref(doc), NULL;
	cleanup_free char *dump = json_dumps(doc, JSON_INDENT(2));
	char *all = NULL;
	if (asprintf(&all, "%s\n%s", text, dump ? dump : "") < 0)
		all = NULL;
	free(text);
	json_t *ret = all ? tool_result(all, doc) : (json_decref(doc), NULL);
	free(all);
	return ret;
}

static json_t *tool_list_receipts(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "failed", "last", NULL };
	struct error err = { 0 };
	struct store *store = NULL;
	uint64_t last = 20;
	bool failed = false;
	json_t *entries = NULL;
	size_t skipped = 0;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0 ||
	    (json_object_get(args, "last") &&
	     jsonutil_get_u64(json_object_get(args, "last"), "last", 1, 1000, &last, &err) < 0) ||
	    (json_object_get(args, "failed") &&
	     jsonutil_get_bool(json_object_get(args, "failed"), "failed", &failed, &err) < 0))
		return tool_error("%s", err.msg);
	if (tools_store(ctx, false, &store, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	if (!store)
		entries = json_array();
	else if (store_list(store, failed, last, &entries, &skipped, &err) < 0)
		return tool_error("airlock: receipts: %s", err.msg);
	return tool_result_json(
		json_pack("{s:o, s:I}", "receipts", entries, "skipped", (json_int_t)skipped));
}

static json_t *tool_show_receipt(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "id", NULL };
	struct error err = { 0 };
	struct store *store = NULL;
	uint64_t id;
	cleanup_free char *text = NULL;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0 || args_id(args, "id", true, &id, &err) < 0)
		return tool_error("%s", err.msg);
	if (tools_store(ctx, false, &store, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	if (!store)
		return tool_error("no receipt %" PRIu64 ": nothing is recorded yet", id);
	if (store_read_receipt(store, id, &text, &err) < 0)
		return tool_error("receipt %" PRIu64 ": %s", id, err.msg);
	json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(doc))
		return json_decref(doc), tool_error("receipt %" PRIu64 " is not a JSON object", id);
	return tool_result(text, json_pack("{s:o}", "receipt", doc));
}

static json_t *tool_classify(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "argv", NULL };
	struct error err = { 0 };
	struct rules *rules = NULL;
	cleanup_strv char **argv = NULL;
	struct rules_verdict v;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0 || args_strv(args, "argv", &argv, &err) < 0)
		return tool_error("%s", err.msg);
	if (!argv || !argv[0])
		return tool_error("'argv' is required: the command and its arguments");
	if (session_rules(ctx->session, &rules, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	rules_classify(rules, argv, &v);
	char text[512];
	snprintf(text, sizeof(text), "risk %d (%s), rule %s: %s", v.risk, v.level ? v.level : "?",
		 v.rule, v.reason);
	return tool_result(text, json_pack("{s:i, s:s, s:s, s:s}", "risk", v.risk, "level",
					   v.level ? v.level : "", "rule", v.rule, "reason", v.reason));
}

/* What the human runs in their terminal for permit p next. */
static const char *permit_next(const struct permit *p)
{
	switch (p->state) {
	case PERMIT_PROPOSED:
		return permit_exec_dry_runs(p)
			       ? "permit_exec (risk 3 or less: it dry-runs, then applies)"
			       : "the human: airlock permit dryrun ID, then airlock permit approve ID in their terminal";
	case PERMIT_DRY_RUN_OK:
		return p->risk >= 4
			       ? "the human: airlock permit approve ID in their terminal; then permit_exec"
			       : "permit_exec";
	case PERMIT_APPROVED:
		return "permit_exec";
	default:
		return "nothing: the permit is settled";
	}
}

static json_t *permit_result(const struct permit *p, const char *what)
{
	json_t *doc = permit_to_json(p);
	if (!doc)
		return NULL;
	char text[1024];
	snprintf(text, sizeof(text),
		 "permit %" PRIu64
		 " %s: %s, risk %d. Next: %s. Approval is the human's, in their terminal; no tool approves.",
		 p->id, what, permit_state_to_string(p->state), p->risk, permit_next(p));
	json_object_set_new(doc, "next", json_string(permit_next(p)));
	return tool_result(text, json_pack("{s:o}", "permit", doc));
}

static json_t *tool_permit_propose(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "proposal", NULL };
	struct error err = { 0 }, parse_err = { 0 };
	struct store *store = NULL;
	struct rules *rules = NULL;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0)
		return tool_error("%s", err.msg);
	json_t *proposal_doc = json_object_get(args, "proposal");
	if (!json_is_object(proposal_doc))
		return tool_error("'proposal' must be an object (docs/permit-format.md)");
	cleanup_free char *text = json_dumps(proposal_doc, JSON_COMPACT);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	if (n > PERMIT_PROPOSAL_MAX)
		return tool_error("the proposal is over %d bytes", PERMIT_PROPOSAL_MAX);
	if (tools_store(ctx, true, &store, &err) < 0 || session_rules(ctx->session, &rules, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	struct permit_proposal proposal = { 0 };
	bool valid = permit_parse_proposal(text, n, &proposal, &parse_err) == 0;
	struct permit p;
	int r = permit_propose(store, rules, valid ? &proposal : NULL, text, n,
			       valid ? NULL : parse_err.msg, ctx->workspace, &p, &err);
	permit_proposal_release(&proposal);
	if (r < 0)
		return tool_error("airlock: permit propose: %s", err.msg);
	json_t *ret = store_checkpoint_flush(store, &err) < 0
			      ? tool_error("airlock: permit %" PRIu64 ": %s", p.id, err.msg)
			      : permit_result(&p, "proposed");
	if (!valid)
		json_object_set_new(ret, "isError", json_true());
	permit_release(&p);
	return ret;
}

static json_t *tool_permit_status(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "id", NULL };
	struct error err = { 0 };
	struct store *store = NULL;
	uint64_t id;
	struct permit p;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0 || args_id(args, "id", true, &id, &err) < 0)
		return tool_error("%s", err.msg);
	if (tools_store(ctx, false, &store, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	if (!store || permit_load(store, id, &p, &err) < 0)
		return tool_error("permit %" PRIu64 ": %s", id, store ? err.msg : "no such permit");
	json_t *ret = permit_result(&p, "is");
	permit_release(&p);
	return ret;
}

static json_t *tool_permit_exec(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { "id", NULL };
	struct error err = { 0 };
	struct store *store = NULL;
	struct rules *rules = NULL;
	uint64_t id;
	struct permit p;
	struct permit_exec_result res = { 0 };

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0 || args_id(args, "id", true, &id, &err) < 0)
		return tool_error("%s", err.msg);
	if (tools_store(ctx, false, &store, &err) < 0 || session_rules(ctx->session, &rules, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	if (!store)
		return tool_error("permit %" PRIu64 ": no such permit", id);
	struct hook_outcome gate;
	if (hook_gate_permit(ctx->session, store, id, &gate, &err) < 0)
		return tool_error("airlock: the gate could not be read: %s", err.msg);
	if (gate.decision == HOOK_BLOCK) {
		json_t *refused = tool_error("%s", gate.message);
		hook_outcome_release(&gate);
		return refused;
	}
	hook_outcome_release(&gate);
	int r = permit_exec(&(struct run_context){ .session = ctx->session,
						   .policy_path = ctx->session->policy_path },
			    store, rules, id, NULL, &p, &res, &err);
	if (r < 0)
		return tool_error("permit %" PRIu64
				  ": %s. Approval is the human's, in their terminal (airlock permit approve %" PRIu64
				  "); no tool approves.",
				  id, err.msg, id);
	json_t *ret = permit_result(&p, "executed");
	if (ret && res.note[0])
		json_object_set_new(json_object_get(json_object_get(ret, "structuredContent"), "permit"),
				    "note", json_string(res.note));
	permit_release(&p);
	return ret;
}

static json_t *tool_ledger_status(const struct mcp_tools_ctx *ctx, json_t *args, int cancel_fd)
{
	static const char *const keys[] = { NULL };
	struct error err = { 0 };
	struct store *store = NULL;
	cleanup_free char *text = NULL;
	size_t n = 0;

	(void)cancel_fd;
	if (args_check(args, keys, &err) < 0)
		return tool_error("%s", err.msg);
	if (tools_store(ctx, false, &store, &err) < 0)
		return tool_error("airlock: %s", err.msg);
	if (!store)
		return tool_result("no ledger yet: nothing is recorded",
				   json_pack("{s:n, s:I, s:n}", "checkpoint", "size", (json_int_t)0,
					     "root_hash"));
	if (ledger_checkpoint_text(store_ledger(store), &text, &n, &err) < 0)
		return tool_error("airlock: ledger: %s", err.msg);
	/* A signed note: origin, tree size, root hash, then the signatures. */
	char *size_line = strchr(text, '\n');
	char *hash_line = size_line ? strchr(size_line + 1, '\n') : NULL;
	char *hash_end = hash_line ? strchr(hash_line + 1, '\n') : NULL;
	uint64_t size = 0;
	if (!hash_end)
		return tool_error("airlock: ledger: the checkpoint is not a signed note");
	cleanup_free char *origin = strndup(text, (size_t)(size_line - text));
	cleanup_free char *size_text = strndup(size_line + 1, (size_t)(hash_line - size_line - 1));
	cleanup_free char *hash = strndup(hash_line + 1, (size_t)(hash_end - hash_line - 1));
	if (!origin || !size_text || !hash)
		return NULL;
	if (parse_u64(size_text, &size) < 0)
		return tool_error("airlock: ledger: the checkpoint's size is not a number");
	json_t *s = json_pack("{s:s, s:s, s:I, s:s}", "checkpoint", text, "origin", origin, "size",
			      (json_int_t)size, "root_hash", hash);
	return tool_result(text, s);
}

static const struct mcp_tool tools[] = {
	{ "run", "Run a command in the quarantine",
	  "Runs argv in airlock's quarantine (only the workspace writable, no network but loopback) and returns its receipt: exit status, the head and tail of its output, the receipt id. While a failure is open in the workspace, a command that is not read-only is refused until the failure closes: run the failed command again, or pass fixes=ID with the fixing command.",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_RUN_COMMON ","
	  "\"fixes\":" SCHEMA_ID(
		  "the open failure's receipt id this run fixes; once it exits 0, airlock re-runs the failed command, and its success closes the failure") ","
																			   "\"why\":{\"type\":\"string\",\"description\":\"the reason, kept in the receipt\"}},\"required\":[\"argv\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_OUTCOME_PROPS
	  ",\"rerun\":{\"type\":[\"object\",\"null\"]}},\"required\":[" SCHEMA_OUTCOME_REQUIRED "]}",
	  false, tool_run },
	{ "gate", "Open failures",
	  "Lists the failures open in the workspace (or cwd's) and how each can close.",
	  "{\"type\":\"object\",\"properties\":{\"cwd\":{\"type\":\"string\"}},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"scope\":{\"type\":\"string\"},\"open\":{\"type\":\"integer\"},\"failures\":{\"type\":\"array\"}},\"required\":[\"scope\",\"open\",\"failures\"]}",
	  true, tool_gate },
	{ "show_receipt", "Show a receipt", "Returns receipt ID as airlock recorded it.",
	  "{\"type\":\"object\",\"properties\":{\"id\":" SCHEMA_ID(
		  "the receipt id") "},\"required\":[\"id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"receipt\":{\"type\":\"object\"}},\"required\":[\"receipt\"]}",
	  true, tool_show_receipt },
	{ "list_receipts", "List receipts",
	  "Lists the last receipts (20 unless last says), only the failed ones with failed=true.",
	  "{\"type\":\"object\",\"properties\":{\"last\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},\"failed\":{\"type\":\"boolean\"}},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"receipts\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},\"skipped\":{\"type\":\"integer\"}},\"required\":[\"receipts\"]}",
	  true, tool_list_receipts },
	{ "classify", "Classify a command",
	  "Returns a command's risk level 1-5 and the rule that decided; nothing runs.",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_ARGV
	  "},\"required\":[\"argv\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"risk\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5},\"level\":{\"type\":\"string\"},\"rule\":{\"type\":\"string\"},\"reason\":{\"type\":\"string\"}},\"required\":[\"risk\",\"rule\"]}",
	  true, tool_classify },
	{ "dryrun", "Dry-run a command",
	  "Runs argv on a snapshot of the workspace and returns what it would change (the change set) and its verdict; the workspace is not touched.",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_RUN_COMMON ","
	  "\"expect\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"path patterns it may create or modify\"},"
	  "\"expect_delete\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"path patterns it may delete\"},"
	  "\"why\":{\"type\":\"string\"}},\"required\":[\"argv\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_OUTCOME_PROPS
	  ",\"verdict\":{\"type\":\"string\"},\"dryrun\":{\"type\":[\"object\",\"null\"]}},\"required\":[" SCHEMA_OUTCOME_REQUIRED
	  ",\"verdict\"]}",
	  false, tool_dryrun },
	{ "permit_propose", "Propose a permit",
	  "Records a proposed mutating command as a permit (docs/permit-format.md: argv, expected paths, verify, declared risk). Approval stays with the human in their terminal; the result says what comes next.",
	  "{\"type\":\"object\",\"properties\":{\"proposal\":{\"type\":\"object\",\"description\":\"the permit proposal, as airlock permit propose reads it\"}},\"required\":[\"proposal\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"permit\":{\"type\":\"object\"}},\"required\":[\"permit\"]}",
	  false, tool_permit_propose },
	{ "permit_status", "A permit's state",
	  "Returns permit ID: its state, risk, history and what comes next.",
	  "{\"type\":\"object\",\"properties\":{\"id\":" SCHEMA_ID(
		  "the permit id") "},\"required\":[\"id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"permit\":{\"type\":\"object\"}},\"required\":[\"permit\"]}",
	  true, tool_permit_status },
	{ "permit_exec", "Execute a permit",
	  "Applies permit ID's dry-run change set (risk 3 or less is dry-run first; risk 4 needs the human's approval, given in their terminal) and runs its verify; rolls back when verify fails. Waits for no one: without approval it is refused.",
	  "{\"type\":\"object\",\"properties\":{\"id\":" SCHEMA_ID(
		  "the permit id") "},\"required\":[\"id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"permit\":{\"type\":\"object\"}},\"required\":[\"permit\"]}",
	  false, tool_permit_exec },
	{ "ledger_status", "The ledger's checkpoint",
	  "Returns the ledger's latest signed checkpoint: tree size and root hash over every receipt and decision.",
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"checkpoint\":{\"type\":[\"string\",\"null\"]},\"origin\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"root_hash\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"checkpoint\",\"size\"]}",
	  true, tool_ledger_status },
};

static const struct mcp_tool *tools_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

bool mcp_tools_known(const char *name)
{
	return tools_find(name) != NULL;
}

json_t *mcp_tools_list(void)
{
	cleanup_with(json_decrefp) json_t *list = json_array();

	for (size_t i = 0; list && i < ARRAY_SIZE(tools); i++) {
		const struct mcp_tool *t = &tools[i];
		json_t *in = json_loads(t->input_schema, JSON_REJECT_DUPLICATES, NULL);
		json_t *out = json_loads(t->output_schema, JSON_REJECT_DUPLICATES, NULL);
		json_t *tool = in && out
				       ? json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b}}",
						   "name", t->name, "title", t->title, "description",
						   t->description, "inputSchema", in, "outputSchema",
						   out, "annotations", "readOnlyHint", t->read_only,
						   "destructiveHint", 0, "openWorldHint", 0)
				       : (json_decref(in), json_decref(out), NULL);
		if (!tool || json_array_append_new(list, tool) < 0)
			return NULL;
	}
	return TAKE_PTR(list);
}

json_t *mcp_tools_call(const struct mcp_tools_ctx *ctx, const char *name, json_t *args, int cancel_fd)
{
	const struct mcp_tool *t = tools_find(name);
	cleanup_with(json_decrefp) json_t *empty = args ? NULL : json_object();

	if (!t)
		return tool_error("unknown tool '%.100s'", name);
	return t->call(ctx, args ? args : empty, cancel_fd);
}

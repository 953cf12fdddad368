/* SPDX-License-Identifier: MIT */
#include "core/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/capture.h"
#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/gate.h"
#include "core/jsonutil.h"
#include "core/policy.h"
#include "core/receipt.h"
#include "core/rules.h"
#include "core/shellwords.h"
#include "core/store.h"

/* Everything one hook invocation needs, released in one place. */
struct hook_state {
	const struct hook_context *ctx;
	enum hook_dialect dialect;
	json_t *payload;
	struct store *store;
	struct rules *rules;
	struct policy *policy;
	char *scope;
	json_t *open; /* the scope's open failures, newest first */
};

static void hook_state_release(struct hook_state *st)
{
	json_decref(st->payload);
	json_decref(st->open);
	store_free(st->store);
	rules_free(st->rules);
	policy_free(st->policy);
	free(st->scope);
}

/* The string at key, or fallback when there is none. */
static const char *jstr_or(json_t *obj, const char *key, const char *fallback)
{
	const char *s = jsonutil_str(obj, key);

	return s ? s : fallback;
}

/* The host shows the message in its terminal, and it quotes what the
 * command chose (its output's last lines, its argv, paths): it goes through
 * text_for_terminal(), cut at a character boundary to fit. Without memory,
 * every byte that is not printable ASCII becomes '?'. */
static void hook_message_for_terminal(char *msg, size_t size)
{
	size_t len;
	cleanup_free char *safe = text_for_terminal(msg, strlen(msg), &len);

	if (!safe) {
		for (char *c = msg; *c; c++)
			if (((unsigned char)*c < 0x20 && *c != '\n' && *c != '\t') ||
			    (unsigned char)*c >= 0x7f)
				*c = '?';
		return;
	}
	if (len >= size) {
		len = size - 1;
		while (len > 0 && ((unsigned char)safe[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(msg, safe, len);
	msg[len] = '\0';
}

static void outcome_set(struct hook_outcome *ret, enum hook_decision d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void outcome_set(struct hook_outcome *ret, enum hook_decision d, const char *fmt, ...)
{
	va_list ap;

	ret->decision = d;
	va_start(ap, fmt);
	vsnprintf(ret->message, sizeof(ret->message), fmt, ap);
	va_end(ap);
	hook_message_for_terminal(ret->message, sizeof(ret->message));
}

static bool hook_is_shell_tool(enum hook_dialect dialect, const char *tool)
{
	static const char *const claude[] = { "Bash", NULL };
	static const char *const codex[] = { "Bash", "shell", "exec_command", "local_shell",
					     "container.exec", "unified_exec", NULL };
	static const char *const gemini[] = { "run_shell_command", NULL };
	const char *const *names = dialect == HOOK_CLAUDE ? claude
				   : dialect == HOOK_CODEX ? codex
							   : gemini;

	for (size_t i = 0; tool && names[i]; i++)
		if (strcmp(names[i], tool) == 0)
			return true;
	return false;
}

/* The command string a shell tool was given; Codex may send an argv array,
 * which is joined with single quotes so the shell reading finds it plain. */
static char *hook_command(json_t *input)
{
	json_t *cmd = json_object_get(input, "command");

	if (json_is_string(cmd))
		return strdup(json_string_value(cmd));
	if (!json_is_array(cmd) || json_array_size(cmd) == 0)
		return NULL;
	size_t len = 1, i;
	json_t *w;
	json_array_foreach(cmd, i, w) {
		if (!json_is_string(w))
			return NULL;
		len += 4 * json_string_length(w) + 3;
	}
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	json_array_foreach(cmd, i, w) {
		const char *t = json_string_value(w);
		if (i)
			*p++ = ' ';
		*p++ = '\'';
		for (; *t; t++) {
			if (*t == '\'') {
				memcpy(p, "'\\''", 4);
				p += 4;
			} else {
				*p++ = *t;
			}
		}
		*p++ = '\'';
	}
	*p = '\0';
	return s;
}

static int hook_open_state(struct hook_state *st, bool create, struct error *err)
{
	cleanup_free char *default_dir = st->ctx->state_dir ? NULL : store_default_path();
	const char *dir = st->ctx->state_dir ? st->ctx->state_dir : default_dir;

	if (!dir)
		return error_set(err, ENOENT, "no state directory (set AIRLOCK_STATE_DIR or HOME)");
	int r = store_open(dir, create, &st->store, err);
	if (r == -ENOENT && !create)
		return 0; /* nothing recorded yet: nothing is open */
	return r;
}

static int hook_load_gate(struct hook_state *st, struct error *err)
{
	const char *cwd = jsonutil_str(st->payload, "cwd");
	cleanup_free char *here = cwd ? NULL : getcwd(NULL, 0);

	if (!cwd && !here)
		return error_set_errno(err, errno, "the payload has no cwd and neither has airlock");
	int r = gate_scope(cwd ? cwd : here, &st->scope, err);
	if (r < 0)
		return r;
	if (!st->store) {
		st->open = json_array();
		return st->open ? 0 : error_set(err, ENOMEM, "out of memory");
	}
	return gate_list_open(st->store, st->scope, &st->open, err);
}

static void hook_describe_open(struct hook_state *st, char *buf, size_t size)
{
	json_t *e = json_array_get(st->open, 0);
	json_t *code = json_object_get(e, "exit_code");
	const char *shell = jsonutil_str(e, "shell");
	cleanup_free char *argv = shell ? NULL : json_dumps(json_object_get(e, "argv"), JSON_COMPACT);
	char exit_text[32] = "";
	size_t n = json_array_size(st->open);

	if (json_is_integer(code))
		snprintf(exit_text, sizeof(exit_text), " exit %lld", (long long)json_integer_value(code));
	snprintf(buf, size,
		 "airlock receipt %lld is an open failure in %s: %s%s (%s%s). %s%.1200s%s"
		 "It closes when the same command succeeds again, when `airlock run --fixes %lld -- CMD` "
		 "exits 0 with a command that is not a trivial success, or when it is acknowledged "
		 "(`airlock gate` lists the ways).%s",
		 (long long)json_integer_value(json_object_get(e, "receipt")), st->scope,
		 shell ? shell : argv ? argv : "?", "", jstr_or(e, "status", "failed"), exit_text,
		 jsonutil_str(e, "tail") && *jsonutil_str(e, "tail") ? "Its last output lines: \"" : "",
		 jstr_or(e, "tail", ""), jsonutil_str(e, "tail") && *jsonutil_str(e, "tail") ? "\". " : "",
		 (long long)json_integer_value(json_object_get(e, "receipt")),
		 n > 1 ? " Other failures are open too; `airlock gate` lists them." : "");
}

/* `airlock run ... --fixes ID ...` or `airlock ack ID ...`, alone, for an
 * open failure: the one kind of command that may pass while it is open. */
static bool hook_names_open_failure(struct hook_state *st, const struct shell_script *s)
{
	if (!s->plain || s->n_commands != 1)
		return false;
	char *const *argv = s->commands[0].argv;
	const char *base = strrchr(argv[0], '/');
	if (strcmp(base ? base + 1 : argv[0], "airlock") != 0 || !argv[1])
		return false;
	const char *id_text = NULL;
	if (strcmp(argv[1], "ack") == 0)
		id_text = argv[2];
	else if (strcmp(argv[1], "run") == 0)
		for (size_t i = 2; argv[i] && strcmp(argv[i], "--") != 0; i++) {
			if (strcmp(argv[i], "--fixes") == 0)
				id_text = argv[i + 1];
			else if (strncmp(argv[i], "--fixes=", 8) == 0)
				id_text = argv[i] + 8;
		}
	if (!id_text)
		return false;
	char *end;
	unsigned long long id = strtoull(id_text, &end, 10);
	if (*end || id == 0)
		return false;
	size_t i;
	json_t *e;
	json_array_foreach(st->open, i, e)
		if ((unsigned long long)json_integer_value(json_object_get(e, "receipt")) == id)
			return true;
	return false;
}

static void hook_masking_text(unsigned mask, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned bit = 1; bit <= SHELL_MASK_UNPARSED; bit <<= 1)
		if (mask & bit)
			used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s",
						 used ? ", " : "", shell_mask_to_string(bit));
}

/* A file tool aimed at the state directory is refused whatever else holds:
 * receipts and the gate's state are airlock's, not the agent's. */
static bool hook_targets_state_dir(struct hook_state *st, json_t *input)
{
	static const char *const keys[] = { "file_path", "notebook_path", "path", "absolute_path",
					    "dir_path", NULL };
	if (!st->store)
		return false;
	cleanup_free char *state = realpath(st->store->path, NULL);
	if (!state)
		return false;
	for (size_t i = 0; keys[i]; i++) {
		const char *p = jsonutil_str(input, keys[i]);
		if (!p)
			continue;
		cleanup_free char *dir = path_dirname(p);
		cleanup_free char *real = dir ? realpath(dir, NULL) : NULL;
		if ((real && path_is_under(real, state)) || path_is_under(p, state))
			return true;
	}
	return false;
}

static int hook_pre_tool_use(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	const char *tool = jsonutil_str(st->payload, "tool_name");
	json_t *input = json_object_get(st->payload, "tool_input");

	if (!hook_is_shell_tool(st->dialect, tool)) {
		if (json_is_object(input) && hook_targets_state_dir(st, input))
			outcome_set(ret, HOOK_BLOCK,
				    "airlock: %s would write into airlock's state directory %s; receipts and the gate's state are only written by airlock itself.",
				    tool ? tool : "the tool", st->store->path);
		return 0;
	}
	cleanup_free char *command = hook_command(input);
	if (!command)
		return error_set(err, EINVAL, "tool_input.command is missing or not a string");

	struct rules_verdict v;
	rules_classify_shell(st->rules, command, &v);
	struct shell_script s;
	int r = shell_script_parse(command, strlen(command), &s);
	unsigned mask = shell_script_masking(&s);
	bool names = r == 0 && hook_names_open_failure(st, &s);
	shell_script_release(&s);
	char masking[128];
	hook_masking_text(mask, masking, sizeof(masking));

	if (json_array_size(st->open) > 0 && v.risk > 1 && !names) {
		char open[3000];
		hook_describe_open(st, open, sizeof(open));
		outcome_set(ret, HOOK_BLOCK,
			    "%s This command is risk %d (%s, rule %s) and does not name that failure, so it does not run while the failure is open.",
			    open, v.risk, v.level, v.rule);
		return 0;
	}
	if (v.risk == 5) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: this command is risk 5 (%s, rule %s: %s); airlock refuses risk 5.",
			    v.level, v.rule, v.reason);
		return 0;
	}
	outcome_set(ret, HOOK_PASS, "airlock: risk %d (%s), rule %s.%s%s%s", v.risk, v.level, v.rule,
		    mask ? " Its exit status can hide a failure (" : "", masking,
		    mask ? "); a success is recorded as unverified." : "");
	return 0;
}

static int hook_exit_code(json_t *payload, bool *ret_reported, int *ret_code)
{
	json_t *resp = json_object_get(payload, "tool_response");
	static const char *const keys[] = { "exit_code", "exitCode", "returncode", NULL };

	for (size_t i = 0; keys[i]; i++) {
		json_t *v = json_object_get(resp, keys[i]);
		if (!v)
			v = json_object_get(payload, keys[i]);
		if (json_is_integer(v)) {
			*ret_reported = true;
			*ret_code = (int)json_integer_value(v);
			return 0;
		}
	}
	/* Claude's PostToolUseFailure: "Exit code N" on the first line. */
	const char *error = jsonutil_str(payload, "error");
	if (!error)
		error = jsonutil_str(resp, "error");
	int code;
	if (error && sscanf(error, "Exit code %d", &code) == 1) {
		*ret_reported = true;
		*ret_code = code;
		return 0;
	}
	const char *event = jsonutil_str(payload, "hook_event_name");
	*ret_reported = false;
	*ret_code = event && strstr(event, "Failure") ? 1 : 0;
	return 0;
}

static void hook_feed(struct capture *c, json_t *payload, const char *const *keys)
{
	json_t *resp = json_object_get(payload, "tool_response");

	if (json_is_string(resp) && keys == NULL) {
		capture_feed(c, json_string_value(resp), json_string_length(resp));
		return;
	}
	for (size_t i = 0; keys && keys[i]; i++) {
		json_t *v = json_object_get(resp, keys[i]);
		if (json_is_string(v)) {
			capture_feed(c, json_string_value(v), json_string_length(v));
			return;
		}
	}
}

/* Claude reports exit 1 of these as a success: a status not reported for
 * them is not known to be 0. */
static bool hook_exit_one_is_success(const char *command)
{
	static const char *const names[] = { "grep", "egrep", "fgrep", "rg", "find", "diff",
					     "test", "[", "git", NULL };
	struct shell_script s;
	bool found = false;

	if (shell_script_parse(command, strlen(command), &s) == 0 && s.n_commands > 0) {
		const char *w = s.commands[s.n_commands - 1].argv[0];
		const char *base = strrchr(w, '/');
		for (size_t i = 0; names[i] && !found; i++)
			found = strcmp(base ? base + 1 : w, names[i]) == 0;
	}
	shell_script_release(&s);
	return found;
}

static int hook_post_tool_use(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	static const char *const sources[] = { "claude-post-tool-use", "codex-post-tool-use",
					       "gemini-after-tool" };
	static const char *const agents[] = { "claude-code", "codex", "gemini-cli" };
	static const char *const out_keys[] = { "stdout", "output", "aggregated_output",
						"llmContent", NULL };
	static const char *const err_keys[] = { "stderr", NULL };
	const char *tool = jsonutil_str(st->payload, "tool_name");

	if (!hook_is_shell_tool(st->dialect, tool))
		return 0;
	cleanup_free char *command = hook_command(json_object_get(st->payload, "tool_input"));
	if (!command)
		return error_set(err, EINVAL, "tool_input.command is missing or not a string");
	bool reported;
	int code;
	hook_exit_code(st->payload, &reported, &code);
	json_t *resp = json_object_get(st->payload, "tool_response");
	bool interrupted = json_is_true(json_object_get(resp, "interrupted")) ||
			   json_is_true(json_object_get(st->payload, "is_interrupt"));
	struct shell_script s;
	int pr = shell_script_parse(command, strlen(command), &s);
	unsigned mask = pr == 0 ? shell_script_masking(&s) : SHELL_MASK_UNPARSED;
	shell_script_release(&s);
	bool verified = mask == 0 && !interrupted &&
			(reported || code != 0 || !hook_exit_one_is_success(command));

	struct capture out, errc;
	if (capture_init(&out, st->policy->keep_bytes) < 0 ||
	    capture_init(&errc, st->policy->keep_bytes) < 0)
		return error_set(err, ENOMEM, "out of memory");
	hook_feed(&out, st->payload, out_keys);
	hook_feed(&errc, st->payload, err_keys);
	if (!json_object_get(resp, "stdout") && !json_object_get(resp, "stderr") &&
	    jsonutil_str(st->payload, "error"))
		capture_feed(&out, jsonutil_str(st->payload, "error"), strlen(jsonutil_str(st->payload, "error")));
	capture_finish(&out);
	capture_finish(&errc);

	char *argv[] = { (char *)"bash", (char *)"-c", command, NULL };
	static const int expected[] = { 0 };
	uint64_t now = clock_realtime_ns();
	json_t *duration = json_object_get(st->payload, "duration_ms");
	uint64_t dur_ms = json_is_integer(duration) && json_integer_value(duration) > 0
				  ? (uint64_t)json_integer_value(duration)
				  : 0;
	struct receipt_sandbox sandbox = { .profile = "host" };
	struct receipt rc = {
		.source = sources[st->dialect],
		.argv = argv,
		.cwd = jsonutil_str(st->payload, "cwd"),
		.expected = expected,
		.n_expected = 1,
		.status = interrupted ? RECEIPT_SIGNALED : RECEIPT_EXITED,
		.has_exit_code = !interrupted,
		.exit_code = code,
		.signal = interrupted ? 2 : 0,
		.match_expected = !interrupted && code == 0,
		.started_ns = now - dur_ms * 1000000,
		.ended_ns = now,
		.duration_ms = dur_ms,
		.out = { .capture = &out },
		.err = { .capture = &errc },
		.error = interrupted ? "interrupted in the host" : NULL,
		.policy_origin = st->policy->origin,
		.sandbox = &sandbox,
	};
	int r = store_allocate_id(st->store, &rc.id, err);
	cleanup_with(json_decrefp) json_t *doc = r < 0 ? NULL : receipt_to_json(&rc);
	capture_release(&out);
	capture_release(&errc);
	if (r < 0)
		return r;
	if (!doc)
		return error_set(err, ENOMEM, "out of memory");
	char masking[128];
	hook_masking_text(mask, masking, sizeof(masking));
	json_object_set_new(doc, "shell", json_string(command));
	json_object_set_new(doc, "host",
			    json_pack("{s:s, s:s?, s:s?, s:s?, s:b, s:b, s:s?}", "agent",
				      agents[st->dialect], "session_id",
				      jsonutil_str(st->payload, "session_id"), "tool_use_id",
				      jsonutil_str(st->payload, "tool_use_id"), "event",
				      jsonutil_str(st->payload, "hook_event_name"), "exit_code_reported",
				      reported, "verified", verified, "masking",
				      mask ? masking : NULL));

	/* The scope as it was when the host's run began: a .git the command
	 * made itself does not scope its failure. */
	char *began_scope = NULL;
	struct error scope_err = { 0 };
	if (rc.cwd && gate_scope_before(rc.cwd, clock_realtime_coarse_ns() - dur_ms * 1000000,
					&began_scope, &scope_err) == 0) {
		free(st->scope);
		st->scope = began_scope;
	}
	struct gate_effect effect = { 0 };
	struct error gate_err = { 0 };
	int gate_r = gate_prepare(st->store, doc, st->rules, st->scope, 0, false, verified,
				  &effect, &gate_err);
	json_object_set_new(doc, "gate",
			    gate_r < 0 ? json_pack("{s:s}", "error", gate_err.msg)
				       : gate_effect_to_json(&effect));
	/* The one commit path for receipts (receipt_commit), as for airlock's
	 * own runs: the receipt is kept even when the gate could not decide. */
	char warning[1024];
	r = receipt_commit(st->store, doc, gate_r < 0 ? NULL : &effect, warning, sizeof(warning),
			   err);
	if (r == 0 && gate_r < 0) {
		*err = gate_err;
		r = error_prefix(err, "receipt %llu was written but the gate is not updated",
				 (unsigned long long)rc.id);
	}
	ret->receipt = rc.id;
	if (r == 0)
		outcome_set(ret, HOOK_PASS, "airlock receipt %llu recorded the host's run: %s%s%s%s%s.%s%.300s",
			    (unsigned long long)rc.id, interrupted ? "interrupted" : "exit ",
			    interrupted ? "" : (code == 0 ? "0" : "non-zero"),
			    effect.opened ? "; it opened a failure in " : "",
			    effect.opened ? st->scope : "",
			    !verified && !effect.opened ? " (unverified: the status may be masked)"
							: "",
			    warning[0] ? " Warning: " : "", warning);
	gate_effect_release(&effect);
	return r;
}

/* gate/stop/<session key>.json remembers how often this session's stop was
 * blocked for its newest open failure. */
static int hook_stop(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	if (json_array_size(st->open) == 0)
		return 0;
	json_int_t newest = json_integer_value(json_object_get(json_array_get(st->open, 0), "receipt"));
	const char *session = jsonutil_str(st->payload, "session_id");
	char hex[SHA256_HEX_SIZE], name[128];
	sha256_hex(session ? session : "", session ? strlen(session) : 0, hex);
	snprintf(name, sizeof(name), "gate/stop/%.32s.json", hex);

	json_int_t blocks = 0;
	cleanup_free char *text = NULL;
	size_t n;
	struct error ignored;
	if (file_read_capped(st->store->dir_fd, name, 4096, &text, &n, &ignored) == 0) {
		cleanup_with(json_decrefp) json_t *prev = json_loads(text, 0, NULL);
		if (json_integer_value(json_object_get(prev, "failure")) == newest)
			blocks = json_integer_value(json_object_get(prev, "blocks"));
	}
	bool active = json_is_true(json_object_get(st->payload, "stop_hook_active"));
	char open[3000];
	hook_describe_open(st, open, sizeof(open));
	/* The loop guard: a host that keeps asking to stop for the same failure
	 * gets through after two blocks, with the facts repeated. */
	if (active && blocks >= 2) {
		outcome_set(ret, HOOK_PASS, "%s (Stopping was blocked twice for it.)", open);
		return 0;
	}
	if (mkdirat(st->store->dir_fd, "gate", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create gate directory");
	if (mkdirat(st->store->dir_fd, "gate/stop", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create gate/stop");
	cleanup_close int dir_fd =
		openat(st->store->dir_fd, "gate/stop", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open gate/stop");
	cleanup_with(json_decrefp) json_t *rec =
		json_pack("{s:I, s:I}", "failure", newest, "blocks", blocks + 1);
	cleanup_free char *line = rec ? jsonutil_dump_line(rec) : NULL;
	const char *base = name + strlen("gate/stop/");
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.%d.new", base, (int)getpid());
	(void)unlinkat(dir_fd, tmp, 0);
	/* Best effort: losing a count only lets one more block through. */
	if (line && file_write_atomic(dir_fd, tmp, line, strlen(line), 0600, false, &ignored) == 0)
		(void)renameat(dir_fd, tmp, dir_fd, base);
	outcome_set(ret, HOOK_BLOCK, "%s", open);
	return 0;
}

int hook_handle(const struct hook_context *ctx, enum hook_dialect dialect, enum hook_event event,
		const char *payload, size_t n, struct hook_outcome *ret, struct error *err)
{
	cleanup_with(hook_state_release) struct hook_state st = { .ctx = ctx, .dialect = dialect };
	json_error_t jerr;

	*ret = (struct hook_outcome){ .decision = HOOK_PASS };
	st.payload = json_loadb(payload, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(st.payload))
		return error_set(err, EINVAL, "the hook payload is not a JSON object (%s at byte %d)",
				 st.payload ? "not an object" : jerr.text, jerr.position);
	snprintf(ret->event_name, sizeof(ret->event_name), "%s",
		 jstr_or(st.payload, "hook_event_name", ""));
	int r = policy_load_default(&st.policy, err);
	if (r == 0)
		r = rules_load_default(&st.rules, err);
	if (r == 0)
		r = hook_open_state(&st, event == HOOK_POST_TOOL_USE, err);
	if (r == 0)
		r = hook_load_gate(&st, err);
	if (r < 0)
		return r;
	switch (event) {
	case HOOK_PRE_TOOL_USE:
		return hook_pre_tool_use(&st, ret, err);
	case HOOK_POST_TOOL_USE:
		return hook_post_tool_use(&st, ret, err);
	case HOOK_STOP:
		return hook_stop(&st, ret, err);
	}
	return error_set(err, EINVAL, "unknown hook event");
}

int hook_open_failures(const struct hook_context *ctx, const char *payload, size_t n,
		       size_t *ret, char *ret_describe, size_t size, struct error *err)
{
	cleanup_with(hook_state_release) struct hook_state st = { .ctx = ctx };
	json_t *doc = json_loadb(payload ? payload : "", n, 0, NULL);

	*ret = 0;
	st.payload = json_is_object(doc) ? doc : json_object();
	if (doc && st.payload != doc)
		json_decref(doc);
	if (!st.payload)
		return error_set(err, ENOMEM, "out of memory");
	int r = hook_open_state(&st, false, err);
	if (r == 0)
		r = hook_load_gate(&st, err);
	if (r < 0)
		return r;
	*ret = json_array_size(st.open);
	if (*ret > 0) {
		hook_describe_open(&st, ret_describe, size);
		hook_message_for_terminal(ret_describe, size);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "core/hook/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/capture.h"
#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/gate/gate.h"
#include "core/gate/status.h"
#include "core/permit/permit.h"
#include "core/host/hostview.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "core/hook/hooklinks.h"
#include "core/hook/hookpath.h"
#include "core/hook/patchpaths.h"
#include "core/policy/policy.h"
#include "core/record/receipt.h"
#include "core/session/session.h"
#include "core/policy/rules.h"
#include "core/policy/shellwords.h"
#include "core/store/store.h"
#include "sandbox/sandbox.h"

/* Everything one hook invocation needs, released in one place. */
struct hook_state {
	struct session *session;
	const struct hook_route *route; /* never NULL: a NULL airlock never routes */
	const struct agent_host *host;
	json_t *payload;
	struct store *store; /* the session's; NULL: the state directory does not exist */
	struct rules *rules; /* the session's, once loaded */
	const struct policy *policy; /* the session's, once loaded */
	char *scope;
	struct gate_failures open; /* the scope's open failures, newest first */
	struct hookpath_cache *walk; /* what the paths' walks looked at (hookpath_resolve()) */
	struct hostview_caller caller; /* hook_caller(), once asked */
	char *scope_of, *scope_for; /* hook_path_scope()'s last path and answer */
	bool scope_of_dir; /* scope_of is a directory */
	char *scope_dir, *scope_dir_for; /* what scope was asked of, and scope */
	bool have_caller;
	bool hinted; /* hook_walk_hint() done */
};

static void hook_state_release(struct hook_state *st)
{
	hookpath_cache_free(st->walk);
	free(st->scope_of);
	free(st->scope_for);
	free(st->scope_dir);
	free(st->scope_dir_for);
	strv_free(st->caller.homes);
	hostview_cache_free(st->caller.cache);
	json_decref(st->payload);
	gate_failures_release(&st->open);
	free(st->scope);
}

/* The policy and the rules, loaded when an answer first needs them: a
 * shell call's routing needs its command's rules and no policy, a file
 * tool's check the policy and no rules, a routed command's post-tool-use
 * neither. A --policy FILE is loaded up front (hook_handle()), so that a
 * broken one blocks every call, as it always did. */
static int hook_load_policy(struct hook_state *st, struct error *err)
{
	return st->policy ? 0 : session_policy(st->session, &st->policy, err);
}

static int hook_load_rules(struct hook_state *st, struct error *err)
{
	return st->rules ? 0 : session_rules(st->session, &st->rules, err);
}

/* The caller the paths are judged for (hostview_caller_from_env()), with
 * its homes (hostview_caller_keep_homes()), found once per call: the hide
 * list and the configuration each asked. Without memory for the homes,
 * each list finds them itself. Its cache (hostview_resolve_in()) holds
 * what the call's lists resolved: the homes, the state directories and
 * the system directories each readlink()ed once, not once a list. */
static const struct hostview_caller *hook_caller(struct hook_state *st)
{
	if (!st->have_caller) {
		st->caller = hostview_caller_from_env(st->session->environ_);
		/* one cache for the call's lists (without memory: none) */
		st->caller.cache = hostview_cache_new();
		(void)hostview_caller_keep_homes(&st->caller);
		st->have_caller = true;
	}
	return &st->caller;
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

static bool hook_is_shell_tool(const struct agent_host *host, const char *tool)
{
	return agenthost_tool_in(host->shell_tools, tool);
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
	if (!st->session->state_dir)
		return error_set(err, ENOENT, "no state directory (set AIRLOCK_STATE_DIR or HOME)");
	int r = session_store(st->session, create, &st->store, err);
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
	/* the answer for that directory, for hook_path_scope() (a file in
	 * the cwd); without memory, it asks again */
	if (r == 0 && (st->scope_dir = strdup(cwd ? cwd : here)) &&
	    !(st->scope_dir_for = strdup(st->scope))) {
		free(st->scope_dir);
		st->scope_dir = NULL;
	}
	return r;
}

/* The scope's open failures, for the answers that depend on them: a shell
 * command's or a writing tool's pre-tool-use, and stop. A read tool passes
 * whatever is open, and post-tool-use records (gate_prepare() reads the
 * gate itself): neither lists them, a third of their cost. */
static int hook_list_open(struct hook_state *st, struct error *err)
{
	if (!st->store)
		return 0; /* nothing is open */
	return gate_list_open(st->store, st->scope, &st->open, err);
}

/* argv as a JSON array, compact; NULL without one. */
static char *hook_argv_text(const char *const *argv)
{
	if (!argv)
		return NULL;
	cleanup_with(json_decrefp) json_t *a = json_array();
	for (size_t i = 0; a && argv[i]; i++)
		if (json_array_append_new(a, json_string(argv[i])) < 0)
			return NULL;
	return a ? json_dumps(a, JSON_COMPACT) : NULL;
}

static void hook_describe_open(struct hook_state *st, char *buf, size_t size)
{
	const struct gate_failure *e = &st->open.v[0];
	const char *shell = e->shell;
	cleanup_free char *argv = shell ? NULL : hook_argv_text(e->argv);
	const char *tail = e->tail ? e->tail : "";
	char exit_text[32] = "";
	size_t n = st->open.n;

	if (e->has_exit_code)
		snprintf(exit_text, sizeof(exit_text), " exit %lld", (long long)e->exit_code);
	snprintf(buf, size,
		 "airlock receipt %lld is an open failure in %s: %s%s (%s%s). %s%.1200s%s"
		 "It closes when the same command succeeds again, when `airlock run --fixes %lld -- CMD` "
		 "exits 0 and the failed command, which airlock then re-runs exactly, succeeds, or when it is acknowledged "
		 "(`airlock gate` lists the ways).%s",
		 (long long)e->receipt, st->scope,
		 shell	? shell
		 : argv ? argv
			: "?",
		 "", e->status ? e->status : "failed", exit_text,
		 *tail ? "Its last output lines: \"" : "", tail, *tail ? "\". " : "",
		 (long long)e->receipt,
		 n > 1 ? " Other failures are open too; `airlock gate` lists them." : "");
}

/* Whether id_text is the id of an open failure of the scope. */
static bool hook_is_open_id(struct hook_state *st, const char *id_text)
{
	char *end;

	if (!id_text || id_text[0] < '1' || id_text[0] > '9')
		return false;
	errno = 0;
	unsigned long long id = strtoull(id_text, &end, 10);
	if (errno || *end)
		return false;
	for (size_t i = 0; i < st->open.n; i++)
		if (st->open.v[i].receipt == id)
			return true;
	return false;
}

/* The payload's cwd, where the host's shell runs the command. */
static const char *hook_cwd(struct hook_state *st, char **buf)
{
	const char *cwd = jsonutil_str(st->payload, "cwd");

	return cwd ? cwd : (*buf = getcwd(NULL, 0));
}

/* argv0 is this airlock binary: found as the host's shell finds it (the
 * hook's PATH, the payload's cwd), it is the file /proc/self/exe is, by
 * device and inode. A script that is called airlock is not. */
static bool hook_is_this_airlock(struct hook_state *st, const char *argv0)
{
	cleanup_free char *here = NULL, *path = NULL;
	const char *cwd = hook_cwd(st, &here);
	struct stat self, found;

	if (!cwd || stat("/proc/self/exe", &self) < 0 ||
	    sandbox_resolve_command(argv0, strv_env_get(st->session->environ_, "PATH"), cwd, &path) < 0)
		return false;
	cleanup_close int cwd_fd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return cwd_fd >= 0 && fstatat(cwd_fd, path, &found, 0) == 0 && S_ISREG(found.st_mode) &&
	       found.st_dev == self.st_dev && found.st_ino == self.st_ino;
}

/* --workspace DIR or --cwd DIR for a --fixes run: inside the scope,
 * resolved from the payload's cwd (a narrower writable tree weakens
 * nothing). Judged by path now: a symlink swapped before the run starts
 * moves it (docs/gate.md, the threat model). */
static bool hook_workspace_in_scope(struct hook_state *st, const char *dir)
{
	cleanup_free char *here = NULL, *joined = NULL, *real = NULL;
	const char *cwd = hook_cwd(st, &here);

	if (!cwd || !*dir)
		return false;
	joined = dir[0] == '/' ? strdup(dir) : path_join(cwd, dir);
	real = joined ? realpath(joined, NULL) : NULL;
	return real && path_is_under(real, st->scope);
}

/* The options of `airlock run` that cannot weaken the quarantine, the gate
 * or the record, by exact name: GNU abbreviations (--sand=none) are refused
 * rather than resolved. Missing here, so refused: --sandbox none,
 * --policy, --state-dir, --allow-workspace, --env-force, --net host,
 * --expect-delete. */
static const struct {
	const char *name;
	bool value;
} hook_fix_options[] = {
	{ "cwd", true },    { "timeout", true },     { "kill-after", true }, { "env", true },
	{ "expect", true }, { "expect-exit", true }, { "job-id", true },     { "why", true },
	{ "json", false },  { "tee", false },	     { "spill", false },     { "sandbox", true },
	{ "net", true },    { "workspace", true },   { "fixes", true },
};

/* One option word (and its value) of a --fixes run: 1 and *ret_used words
 * when it is harmless, 0 when not. */
static bool hook_fix_option(struct hook_state *st, char *const *argv, size_t *ret_used,
			    const char **ret_fixes)
{
	const char *word = argv[0] + 2, *eq = strchr(word, '=');
	size_t len = eq ? (size_t)(eq - word) : strlen(word);

	for (size_t i = 0; i < ARRAY_SIZE(hook_fix_options); i++) {
		const char *name = hook_fix_options[i].name;
		if (strlen(name) != len || strncmp(word, name, len) != 0)
			continue;
		if (!hook_fix_options[i].value) {
			*ret_used = 1;
			return !eq;
		}
		const char *value = eq ? eq + 1 : argv[1];
		*ret_used = eq ? 1 : 2;
		if (!value)
			return false;
		if (strcmp(name, "sandbox") == 0)
			return strcmp(value, "default") == 0;
		if (strcmp(name, "net") == 0)
			return strcmp(value, "none") == 0;
		/* Either would take the fix's workspace (the cwd by default)
		 * past the project: from a parent directory that is not a
		 * repository the failure, nested below, is still visible. */
		if (strcmp(name, "workspace") == 0 || strcmp(name, "cwd") == 0)
			return hook_workspace_in_scope(st, value);
		if (strcmp(name, "fixes") == 0) {
			if (*ret_fixes)
				return false; /* named twice: which one counts is getopt's call */
			*ret_fixes = value;
		}
		return true;
	}
	return false;
}

/* `airlock run [HARMLESS OPTIONS] --fixes ID ... -- CMD` or `airlock ack ID
 * --reason TEXT` (argv, run by this airlock binary), for a failure open in
 * the scope: the one kind of command that may pass while it is open. */
static bool hook_names_open_failure(struct hook_state *st, char *const *argv)
{
	if (!argv[1])
		return false;
	if (strcmp(argv[1], "ack") == 0) {
		/* ack ID --reason TEXT, in any order; nothing else. */
		const char *id = NULL;
		for (size_t i = 2; argv[i]; i++) {
			if (strcmp(argv[i], "--reason") == 0 && argv[i + 1])
				i++;
			else if (strncmp(argv[i], "--reason=", 9) == 0)
				continue;
			else if (argv[i][0] == '-' || id)
				return false;
			else
				id = argv[i];
		}
		return hook_is_open_id(st, id);
	}
	if (strcmp(argv[1], "run") != 0)
		return false;
	const char *fixes = NULL;
	for (size_t i = 2, used; argv[i] && strcmp(argv[i], "--") != 0; i += used) {
		if (argv[i][0] != '-')
			break; /* the command: getopt stops here ("+") */
		if (argv[i][1] != '-' || !hook_fix_option(st, argv + i, &used, &fixes))
			return false;
	}
	return hook_is_open_id(st, fixes);
}

/* airlock's read-only commands, with the options that choose nothing but
 * what is printed (by exact name: abbreviations are refused, not resolved).
 * Missing, so refused: --state-dir (another gate, another record), --policy,
 * --rules (a file of the agent's choosing), ledger key and checkpoint
 * (which create), and every other command. */
struct hook_read_option {
	const char *name;
	bool value;
};

static const struct hook_read_option hook_gate_options[] = { { "json", false }, { "cwd", true }, { 0 } };
static const struct hook_read_option hook_receipts_options[] = {
	{ "failed", false }, { "last", true }, { "json", false }, { 0 }
};
static const struct hook_read_option hook_show_options[] = {
	{ "stdout", false }, { "stderr", false }, { "offset", true }, { "limit", true }, { 0 }
};
static const struct hook_read_option hook_classify_options[] = { { "json", false },
								 { "shell", true },
								 { 0 } };
static const struct hook_read_option hook_doctor_options[] = { { "workspace", true }, { 0 } };
static const struct hook_read_option hook_ledger_options[] = { { "key", true },
							       { "checkpoint", true },
							       { 0 } };
static const struct hook_read_option hook_no_options[] = { { 0 } };
static const char *const hook_ledger_reads[] = { "verify", "prove", "consistency", NULL };

static const struct hook_read_verb {
	const char *verb;
	const struct hook_read_option *options;
	bool stop_at_operand; /* its getopt is "+": options end at the first operand */
	bool no_operands;
	const char *const *subs; /* the first operand is one of these */
} hook_read_verbs[] = {
	{ "gate", hook_gate_options, true, false, NULL },
	{ "receipts", hook_receipts_options, true, false, NULL },
	{ "show", hook_show_options, false, false, NULL },
	{ "classify", hook_classify_options, true, false, NULL },
	{ "doctor", hook_doctor_options, false, false, NULL },
	{ "ledger", hook_ledger_options, false, false, hook_ledger_reads },
	{ "help", hook_no_options, false, true, NULL },
	{ "--help", hook_no_options, false, true, NULL },
	{ "-h", hook_no_options, false, true, NULL },
	{ "version", hook_no_options, false, true, NULL },
	{ "--version", hook_no_options, false, true, NULL },
};

/* Whether argv (airlock's, argv[1] the command) is a read-only command of
 * the table; *ret_bad names the first word that is not. */
static bool hook_read_only(char *const *argv, const char **ret_bad)
{
	const struct hook_read_verb *v = NULL;

	*ret_bad = argv[1];
	for (size_t i = 0; argv[1] && i < ARRAY_SIZE(hook_read_verbs); i++)
		if (strcmp(argv[1], hook_read_verbs[i].verb) == 0)
			v = &hook_read_verbs[i];
	if (!v)
		return false;
	bool operands = false, first = true;
	for (size_t i = 2; argv[i]; i++) {
		const char *w = argv[i];
		bool operand = operands || w[0] != '-' || w[1] == '\0';
		if (!operands && strcmp(w, "--") == 0) {
			operands = true;
			continue;
		}
		if (operand) {
			*ret_bad = w;
			if (v->no_operands || (first && v->subs && !agenthost_tool_in(v->subs, w)))
				return false;
			first = false;
			operands = operands || v->stop_at_operand;
			continue;
		}
		if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0)
			continue;
		*ret_bad = w;
		if (w[1] != '-')
			return false; /* no short option but -h is read-only */
		const char *eq = strchr(w + 2, '=');
		size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
		const struct hook_read_option *o = v->options;
		while (o->name && (strlen(o->name) != len || strncmp(o->name, w + 2, len) != 0))
			o++;
		if (!o->name || (!o->value && eq) || (o->value && !eq && !argv[++i]))
			return false;
	}
	return true;
}

/* How the hook takes a command that names airlock (docs/gate.md,
 * "Routing"). */
enum hook_airlock {
	HOOK_AIRLOCK_NONE, /* no airlock of its own: judged and routed like any command */
	HOOK_AIRLOCK_READ, /* this airlock, a read-only command: runs unrouted, as this binary */
	HOOK_AIRLOCK_FIXES, /* this airlock naming an open failure (run --fixes, ack): the same */
	HOOK_AIRLOCK_REFUSED, /* this airlock, anything else: refused */
	HOOK_AIRLOCK_IMPOSTOR, /* a program called airlock that is not this binary */
};

/* argv0 is called airlock: its last path component, the way a reader of the
 * command would take it. */
static bool hook_named_airlock(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	return strcmp(base ? base + 1 : argv0, "airlock") == 0;
}

/* Whether any command of s, past its wrappers (env, nice, ...) and inside
 * `sh -c SCRIPT`, is a program called airlock that is not this binary. */
static bool hook_has_impostor(struct hook_state *st, const struct shell_script *s, unsigned depth)
{
	for (size_t i = 0; i < s->n_commands; i++) {
		char *const *argv = rules_strip_wrappers(st->rules, s->commands[i].argv);
		if (!argv)
			continue;
		if (hook_named_airlock(argv[0]) && !hook_is_this_airlock(st, argv[0]))
			return true;
		const char *script = depth < 4 ? rules_shell_script(st->rules, argv) : NULL;
		if (!script)
			continue;
		struct shell_script inner;
		bool found = shell_script_parse(script, strlen(script), &inner) == 0 &&
			     hook_has_impostor(st, &inner, depth + 1);
		shell_script_release(&inner);
		if (found)
			return true;
	}
	return false;
}

/* Only this very airlock binary, asked for something harmless, runs outside
 * the quarantine: a single plain command, no assignments, whose first word
 * is called airlock and is found (through the hook's PATH, from the
 * payload's cwd) to be the file /proc/self/exe is. *ret_bad: the word that
 * made this airlock's command refused. */
static enum hook_airlock hook_judge_airlock(struct hook_state *st, const struct shell_script *s,
					    const char **ret_bad)
{
	*ret_bad = NULL;
	if (s->plain && s->n_commands == 1 && !s->commands[0].assignments &&
	    hook_named_airlock(s->commands[0].argv[0])) {
		char *const *argv = s->commands[0].argv;
		if (!hook_is_this_airlock(st, argv[0]))
			return HOOK_AIRLOCK_IMPOSTOR;
		if (hook_read_only(argv, ret_bad))
			return HOOK_AIRLOCK_READ;
		if (hook_names_open_failure(st, argv))
			return HOOK_AIRLOCK_FIXES;
		return HOOK_AIRLOCK_REFUSED;
	}
	return hook_has_impostor(st, s, 0) ? HOOK_AIRLOCK_IMPOSTOR : HOOK_AIRLOCK_NONE;
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

/* Where the host ran the command: in its shell tool's shell_dir_key
 * (Gemini's dir_path; relative to the payload's cwd), else in cwd. NULL:
 * the payload's cwd. */
static char *hook_run_cwd(struct hook_state *st)
{
	const char *cwd = jsonutil_str(st->payload, "cwd");
	const char *key = st->host->shell_dir_key;
	const char *dir = key ? jsonutil_str(json_object_get(st->payload, "tool_input"), key) : NULL;

	if (!dir || !*dir || (!cwd && dir[0] != '/'))
		return NULL;
	cleanup_free char *joined = dir[0] == '/' ? strdup(dir) : path_join(cwd, dir);
	char *real = joined ? realpath(joined, NULL) : NULL;
	return real ? real : TAKE_PTR(joined);
}

/* The call's cache (core/hook/hookpath.h), made when first needed; NULL
 * without memory (every walk then looks for itself). */
static struct hookpath_cache *hook_walk_cache(struct hook_state *st)
{
	if (!st->walk)
		st->walk = hookpath_cache_new();
	return st->walk;
}

/* Before the hide list's and the configuration's walks: the caller's
 * homes and their .config are where most of them look (credentials, the
 * hosts' settings), so the cache reads them whole at once
 * (hookpath_cache_hint()). */
static void hook_walk_hint(struct hook_state *st)
{
	const struct hostview_caller *caller = hook_caller(st);
	struct hookpath_cache *c = hook_walk_cache(st);

	if (st->hinted)
		return;
	st->hinted = true;
	for (size_t i = 0; c && caller->homes && caller->homes[i]; i++) {
		cleanup_free char *home = hostview_resolve_in(caller->cache, caller->homes[i]);
		cleanup_free char *config = home ? path_join(home, ".config") : NULL;
		if (home)
			hookpath_cache_hint(c, home);
		if (config)
			hookpath_cache_hint(c, config);
	}
}

/* The file tools that write, by host: always refused into the state
 * directory, and refused like a mutating command while a failure is open. */
static bool hook_is_file_tool(const struct agent_host *host, const char *tool)
{
	return agenthost_tool_in(host->write_tools, tool);
}

static bool hook_is_read_tool(const struct agent_host *host, const char *tool)
{
	return agenthost_tool_in(host->read_tools, tool);
}

/* The paths one tool call names, as named and resolved (hookpath_resolve())
 * from where the tool works (Gemini's shell tool: tool_input.dir_path; else the
 * payload's cwd). A path with a ".." that a tool dropping it as text
 * (hookpath_resolve_both()) takes elsewhere is in named and resolved
 * twice, once for each place: every check holds the tool to both. */
struct hook_targets {
	char **named;
	char **resolved;
	char **roots; /* resolved directories the tool reads below: a search or a listing */
	char *run_dir; /* a shell tool's own directory (Gemini's dir_path), resolved */
	char *run_dir_lexical; /* its other reading (hookpath_resolve_both()), or NULL */
	/* a tool that follows symlinks below its roots: the directories to
	 * look through for them (hook_targets_links()); NULL: none */
	char **link_dirs;
	bool *link_prune; /* for each of link_dirs: walked with prune (hooklinks_walk()) */
};

static void hook_targets_release(struct hook_targets *t)
{
	strv_free(t->named);
	strv_free(t->resolved);
	strv_free(t->roots);
	strv_free(t->link_dirs);
	free(t->link_prune);
	free(t->run_dir);
	free(t->run_dir_lexical);
}

/* Appends named, resolved from base in both readings (one entry, or two
 * when they differ), to t's named and resolved, and to its roots when
 * root. */
static int hook_targets_push(struct hook_state *st, struct hook_targets *t, const char *base,
			     const char *named, bool root, struct error *err)
{
	char *p[2] = { NULL, NULL };
	int r = hookpath_resolve_both(base, named, hook_walk_cache(st), &p[0], &p[1]);

	if (r < 0)
		return error_set(err, -r,
				 "cannot resolve '%.300s' (out of memory, a symlink loop, deeper than PATH_MAX, /proc/self, or a .. after a process's link in /proc)",
				 named);
	for (size_t k = 0; k < 2; k++) {
		if (!p[k])
			continue;
		if (r == 0 && root && strv_push(&t->roots, p[k]) < 0)
			r = -ENOMEM;
		if (r == 0 && strv_push(&t->named, named) < 0)
			r = -ENOMEM;
		if (r == 0)
			r = strv_consume(&t->resolved, p[k]);
		else
			free(p[k]);
	}
	return r < 0 ? error_set(err, ENOMEM, "out of memory") : 0;
}

/* Keys that name a file, and keys that name a directory the tool reads
 * below, in any tool's input at any depth (MCP servers use the same
 * words); the text keys whose strings are contents, not paths. */
static const char *const hook_file_keys[] = { "file_path", "notebook_path", "absolute_path",
					      "file",	   "filename",	    "target_file",
					      "pattern",   "include",	    NULL };
static const char *const hook_root_keys[] = { "path", "paths", "dir_path",   "directory",
					      "dir",  "root",  "file_paths", NULL };
static const char *const hook_text_keys[] = { "content",    "new_string",  "old_string",
					      "new_source", "description", "old_str",
					      "new_str",    NULL };

/* "~user" or "~user/..." (path) in that user's home: 1 with *ret, 0 when
 * path is no such name (or the user has no absolute home), -errno. */
static int hook_tilde_user(const char *path, char **ret)
{
	size_t n = path[0] == '~' ? strcspn(path + 1, "/") : 0;
	struct passwd pw, *found = NULL;
	char buf[16384];

	*ret = NULL;
	if (n == 0)
		return 0;
	cleanup_free char *user = strndup(path + 1, n);
	if (!user)
		return -ENOMEM;
	int r = getpwnam_r(user, &pw, buf, sizeof(buf), &found);
	if (r != 0 && r != ENOENT && r != ESRCH && r != EBADF && r != EPERM)
		return -r; /* not known: not taken for no user */
	if (!found || !pw.pw_dir || pw.pw_dir[0] != '/')
		return 0;
	return asprintf(ret, "%s%s", pw.pw_dir, path + 1 + n) < 0 ? -ENOMEM : 1;
}

/* Appends path as written, and before it expanded (taken; NULL: none),
 * that user's home for a "~user" path (hook_tilde_user()). */
static int hook_targets_add_user(char ***list, const char *path, char *expanded)
{
	int r = expanded ? strv_consume(list, expanded) : 0;

	return r < 0 ? r : strv_push(list, path);
}

/* Appends path with "~" and "~/" in the caller's home; "~user" and
 * "~user/..." twice, in that user's home (a tool that expands them:
 * Python's os.path.expanduser(), a shell) and as written (one that does
 * not: a name in its directory). */
static int hook_targets_add(struct hook_state *st, char ***list, const char *path)
{
	const char *home = hook_caller(st)->home;

	if (!*path)
		return 0;
	if ((path[0] == '~' && (path[1] == '/' || !path[1])) && home && home[0] == '/') {
		cleanup_free char *joined = NULL;
		if (asprintf(&joined, "%s%s", home, path + 1) < 0)
			return -ENOMEM;
		return strv_push(list, joined);
	}
	char *expanded = NULL;
	int r = hook_tilde_user(path, &expanded);
	return r < 0 ? r : hook_targets_add_user(list, path, expanded);
}

/* Appends the n bytes of a file: URL's path at q, percent-decoded, with
 * each backslash a slash as a URL reader takes it (WHATWG URL). */
static int hook_targets_url_path(const char *q, size_t n, char ***list)
{
	cleanup_free char *path = malloc(n + 1);
	size_t len = 0;

	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (q[i] == '%' && i + 2 < n + 1 && sscanf(q + i + 1, "%2x", &v) == 1 && v) {
			path[len++] = (char)v;
			i += 2;
		} else {
			path[len++] = q[i] == '\\' ? '/' : q[i];
		}
	}
	path[len] = '\0';
	return strv_push(list, path);
}

/* Every file: URL in text (file:///p, file://localhost/p, file:/p; the
 * scheme in any case, a backslash for a slash), its path percent-decoded,
 * up to the first byte no URL holds unescaped: once with its query and
 * fragment (a reader that takes the rest as a path), once without (a URL
 * reader). */
static int hook_targets_urls(const char *text, char ***list)
{
	for (const char *p = strcasestr(text, "file:"); p; p = strcasestr(p + 1, "file:")) {
		const char *q = p + 5;
		if ((q[0] == '/' || q[0] == '\\') && (q[1] == '/' || q[1] == '\\')) {
			q += 2;
			while (*q && *q != '/' && *q != '\\' && !strchr(" \t\n\"'<>`", *q))
				q++; /* the host: a path on this machine whatever it says */
		}
		if (*q != '/' && *q != '\\')
			continue;
		size_t n = strcspn(q, " \t\r\n\"'<>`()[]{}|^");
		size_t path_n = strcspn(q, "?#");
		int r = hook_targets_url_path(q, n, list);
		if (r == 0 && path_n < n)
			r = hook_targets_url_path(q, path_n, list);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Levels of a tool's input hook_targets_walk() reads: input nested deeper
 * is refused (-E2BIG), as a path below them would pass unread. */
#define HOOK_INPUT_DEPTH 32

/* A tool's input, walked: the strings under a file or directory key, every
 * other string that is an absolute or "~/" path (not under a text key), and
 * every file: URL anywhere. */
static int hook_targets_walk(struct hook_state *st, json_t *v, const char *key, unsigned depth,
			     char ***named, char ***roots)
{
	if (depth > HOOK_INPUT_DEPTH)
		return -E2BIG;
	if (json_is_object(v)) {
		const char *k;
		json_t *e;
		json_object_foreach(v, k, e) {
			int r = hook_targets_walk(st, e, k, depth + 1, named, roots);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			int r = hook_targets_walk(st, e, key, depth + 1, named, roots);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (!json_is_string(v))
		return 0;
	const char *s = json_string_value(v);
	int r = hook_targets_urls(s, named);
	if (r < 0)
		return r;
	if (key && agenthost_tool_in(hook_root_keys, key)) {
		r = hook_targets_add(st, named, s);
		return r < 0 ? r : hook_targets_add(st, roots, s);
	}
	if ((key && agenthost_tool_in(hook_file_keys, key)) ||
	    ((!key || !agenthost_tool_in(hook_text_keys, key)) &&
	     (s[0] == '/' || (s[0] == '~' && (s[1] == '/' || !s[1])))))
		return hook_targets_add(st, named, s);
	if ((!key || !agenthost_tool_in(hook_text_keys, key)) && s[0] == '~') {
		char *expanded = NULL;
		r = hook_tilde_user(s, &expanded); /* "~user/...": a path */
		return r <= 0 ? r : hook_targets_add_user(named, s, expanded);
	}
	return 0;
}

/* How many directories above the one it starts in a pattern's glob part
 * (tail: from its first component with a glob character) may lead: node-
 * glob walks a ".." it meets (as the parent of the path it has), and a
 * brace expansion or a "\\" escape (read_many_files also turns "\\" into
 * "/") may make one ("{..,x}", "{.,x}.", "\\.\\."). Only where two dots can
 * meet: a ".." or a dot next to brace or escape syntax; then at most one
 * ".." per two dots (an expansion takes each character once). SIZE_MAX:
 * it may become absolute (a leading "\\", or a leading brace with an
 * alternative that starts with "/"). */
static size_t hook_link_ups(const char *tail)
{
	size_t dots = 0;
	bool meet = strstr(tail, "..") != NULL;

	if (tail[0] == '\\' || (tail[0] == '{' && (strstr(tail, "{/") || strstr(tail, ",/"))))
		return SIZE_MAX;
	for (const char *c = strchr(tail, '.'); c; c = strchr(c + 1, '.')) {
		dots++;
		meet = meet || (c[1] && strchr(",{}\\", c[1])) || (c > tail && strchr(",{}\\", c[-1]));
	}
	return meet && (strchr(tail, '{') || strchr(tail, '\\') || strstr(tail, "..")) ? dots / 2 : 0;
}

/* The directories a link tool (agent_host.link_tools) reads below for a
 * root it names, from base: named up to its first component with a glob
 * character (read_many_files takes a path that is no file as node-glob's
 * pattern: * ? [ ] { } ( ) ! + @ and \ escapes), below lit when not NULL
 * (a directory taken as text, not as a pattern: a search's dir_path, its
 * glob's cwd), resolved in both readings (hookpath_resolve_both(): Node's
 * path.resolve() and node-glob take a ".." after a symlink as text), and
 * from each up to the nearest directory that exists (its matching ignores
 * case: a name that is not there may match one that is). 0 with ret[0],
 * ret[1] (NULL: a file, read as named, nothing below it; or ret[1] the
 * same place), -ENOMEM, -ELOOP (not resolved). */
static int hook_link_root(struct hook_state *st, const char *base, const char *lit,
			  const char *named, char *ret[2])
{
	cleanup_free char *prefix = strdup(named);
	cleanup_free char *joined = NULL;
	char *dirs[2] = { NULL, NULL };
	struct stat sb;

	ret[0] = ret[1] = NULL;
	if (!prefix)
		return -ENOMEM;
	size_t ups = 0;
	for (char *c = prefix; *c;) {
		size_t n = strcspn(c, "/");
		if (strcspn(c, "*?[]{}()!+@\\") < n) {
			ups = hook_link_ups(named + (c - prefix));
			*c = '\0';
			break;
		}
		c += n;
		while (*c == '/')
			c++;
	}
	const char *path = prefix[0] ? prefix : ".";
	if (ups == SIZE_MAX) {
		path = "/"; /* "{/elsewhere,x}/k": anywhere */
	} else if (lit || ups > 0) {
		/* below lit, then up as far as the pattern's ".."s may go */
		joined = lit ? path_join(lit, path) : strdup(path);
		for (size_t i = 0; joined && i < ups; i++) {
			char *up = path_join(joined, "..");
			free(joined);
			joined = up;
		}
		if (!joined)
			return -ENOMEM;
		path = joined;
	}
	int r = hookpath_resolve_both(base, path, hook_walk_cache(st), &dirs[0], &dirs[1]);
	if (r < 0)
		return r;
	for (size_t i = 0; i < 2; i++) {
		char *dir = dirs[i];
		while (dir && lstat(dir, &sb) < 0) {
			char *up = path_dirname(dir); /* "/" is there */
			free(dir);
			dir = up;
			if (!dir) {
				free(i == 0 ? dirs[1] : ret[0]);
				ret[0] = NULL;
				return -ENOMEM;
			}
		}
		if (dir && S_ISDIR(sb.st_mode))
			ret[i] = dir;
		else
			free(dir);
	}
	return 0;
}

/* Whether Gemini's tool never reads below a directory hooklinks_pruned
 * names under its glob's cwd, for this input: node-glob's ignore of
 * COMMON_IGNORE_PATTERNS (a node_modules, .git, bower_components, .svn or
 * .hg at any depth) in the JavaScript fallback of search_file_content /
 * grep_search (getGlobExcludes(), always) and in read_many_files (its
 * default excludes, unless useDefaultExcludes is anything but absent or
 * true: the tool tests it as a JavaScript truth value). Every release
 * since 0.12 (docs/gate.md, "Links below a directory"). */
static bool hook_link_prunes(const struct hook_state *st, const char *tool, json_t *input)
{
	if (strcmp(st->host->name, "gemini") != 0)
		return false;
	if (strcmp(tool, "read_many_files") == 0) {
		json_t *defaults = json_object_get(input, "useDefaultExcludes");
		return !defaults || json_is_true(defaults);
	}
	return strcmp(tool, "search_file_content") == 0 || strcmp(tool, "grep_search") == 0;
}

/* Whether every path the glob pattern p (relative to the glob's cwd)
 * matches lies below that cwd and has no "..": then the ignore, which
 * matches the path relative to the cwd, holds for it (one leaving the
 * cwd, "../w/node_modules/k" or "/w/node_modules/k", is not ignored). Not
 * so: an absolute p, a "\" (read_many_files turns it into "/"), a "..",
 * two dots with only glob syntax between them, a leading "{" or "!", and
 * two dots with a "{" anywhere (a brace expansion may join them). */
static bool hook_link_plain(const char *p)
{
	const char *dot = strchr(p, '.');

	if (p[0] == '/' || p[0] == '{' || p[0] == '!' || strchr(p, '\\') || strstr(p, ".."))
		return false;
	if (strchr(p, '{') && dot && strchr(dot + 1, '.'))
		return false;
	for (const char *c = dot; c; c = strchr(c + 1, '.'))
		if (c[1 + strspn(c + 1, "[](){}|@!+*?,")] == '.')
			return false;
	return true;
}

/* For a tool that follows the symlinks below a directory it reads (a
 * host's link_tools): the directory each root it names (roots, from base;
 * read_many_files's include patterns; a search's include filter below its
 * dir_path; none: the workspace) leads it to (hook_link_root()), appended
 * to t as roots and kept as t->link_dirs for hook_targets_links(), each
 * pruned where hook_link_prunes() and every pattern leading there is
 * plain (hook_link_plain(); a search's dir_path is its glob's cwd). */
static int hook_targets_link_roots(struct hook_state *st, struct hook_targets *t, const char *tool,
				   const char *base, char **roots, json_t *input, struct error *err)
{
	cleanup_strv char **dirs = NULL, **patterns = NULL;
	cleanup_free bool *plain = NULL;
	cleanup_free bool *prune = NULL;
	cleanup_free const char **lit = NULL; /* what patterns[i] is below, as text */
	const char *dir_path = jsonutil_str(input, "dir_path");
	json_t *include = json_object_get(input, "include");
	size_t n_include = json_is_array(include) ? json_array_size(include) : 1;
	/* read_many_files globs its include from the workspace, never a dir_path */
	bool below = dir_path && *dir_path && strcmp(tool, "read_many_files") != 0;
	bool prunes = hook_link_prunes(st, tool, input);
	size_t n = strv_length(roots) + n_include + 1, n_patterns = 0, n_dirs = 0;
	int r = 0;

	plain = calloc(n, sizeof(*plain));
	prune = calloc(2 * n, sizeof(*prune)); /* a pattern's two readings */
	lit = calloc(n, sizeof(*lit));
	if (!plain || !prune || !lit)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && roots && roots[i]; i++) {
		/* a search's dir_path is its glob's cwd, named as text */
		bool cwd = below && strcmp(roots[i], dir_path) == 0;
		lit[n_patterns] = cwd ? dir_path : NULL;
		plain[n_patterns++] = cwd || hook_link_plain(roots[i]);
		r = strv_push(&patterns, cwd ? "." : roots[i]);
	}
	for (size_t i = 0; r == 0 && i < n_include; i++) {
		const char *s = json_string_value(json_is_array(include) ? json_array_get(include, i)
									 : include);
		if (!s || !*s)
			continue;
		lit[n_patterns] = s[0] != '/' && below ? dir_path : NULL;
		plain[n_patterns++] = hook_link_plain(s);
		r = strv_push(&patterns, s);
	}
	if (r == 0 && !patterns) {
		plain[n_patterns++] = true;
		r = strv_push(&patterns, ".");
	}
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; patterns[i]; i++) {
		char *found[2];
		r = hook_link_root(st, base, lit[i], patterns[i], found);
		if (r == -ELOOP)
			return error_set(err, ELOOP,
					 "cannot resolve '%.300s%s%.300s' (out of memory, a symlink loop, deeper than PATH_MAX, /proc/self, or a .. after a process's link in /proc)",
					 lit[i] ? lit[i] : "", lit[i] ? "/" : "", patterns[i]);
		if (r < 0)
			return error_set(err, ENOMEM, "out of memory");
		for (size_t j = 0; j < 2; j++) {
			char *dir = found[j];
			size_t k = 0;
			if (!dir)
				continue;
			/* pruned only where every pattern leading there may be */
			while (k < n_dirs && strcmp(dirs[k], dir) != 0)
				k++;
			if (k < n_dirs) {
				prune[k] = prune[k] && prunes && plain[i];
				free(dir);
				continue;
			}
			prune[n_dirs++] = prunes && plain[i];
			if (strv_consume(&dirs, dir) < 0) {
				if (j == 0)
					free(found[1]); /* not taken yet */
				return error_set(err, ENOMEM, "out of memory");
			}
		}
	}
	/* what a glob's directory holds is read */
	for (size_t i = 0; dirs && dirs[i]; i++) {
		r = hook_targets_push(st, t, NULL, dirs[i], true, err);
		if (r < 0)
			return r;
	}
	t->link_dirs = TAKE_PTR(dirs);
	t->link_prune = TAKE_PTR(prune);
	return 0;
}

/* Appends dir to *dirs and pruned to *prune (*cap flags held). */
static int hook_links_push_dir(char ***dirs, bool **prune, size_t *cap, const char *dir,
			       bool pruned, struct error *err)
{
	size_t n = strv_length(*dirs);

	if (n == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 8;
		bool *grown = realloc(*prune, grown_cap * sizeof(*grown));
		if (!grown)
			return error_set(err, ENOMEM, "out of memory");
		*prune = grown;
		*cap = grown_cap;
	}
	(*prune)[n] = pruned;
	if (strv_push(dirs, dir) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* Every symlink below t->link_dirs (pruned as t->link_prune says),
 * appended to t as a root, resolved (where the tool reads through it),
 * named "LINK (a symlink to TARGET)"; a directory a link leads to is
 * walked in turn, pruned as the walk that found the link (the tool reads
 * it through that link's path, below the glob's cwd). At most
 * HOOKLINKS_MAX entries over the call: past them, -E2BIG (refused, not
 * passed unlooked at). After the checks of the paths named: a call
 * refused for those walks nothing. */
static int hook_targets_links(struct hook_state *st, struct hook_targets *t, struct error *err)
{
	struct hooklinks w = { .max = HOOKLINKS_MAX };
	size_t n_roots = strv_length(t->link_dirs), n_resolved = strv_length(t->resolved);
	cleanup_strv char **dirs = TAKE_PTR(t->link_dirs);
	cleanup_free bool *prune = TAKE_PTR(t->link_prune);
	size_t cap = n_roots;
	int r = 0;

	for (size_t i = 0; r == 0 && dirs && dirs[i]; i++) {
		cleanup_strv char **links = NULL;
		r = hooklinks_walk(&w, dirs[i], prune[i], &links);
		if (r == -E2BIG) {
			r = error_set(err, E2BIG,
				      "the tool reads below %.300s: more than %d entries there to look through for symlinks to hidden paths; name a smaller directory",
				      dirs[i < n_roots ? i : 0], HOOKLINKS_MAX);
			break;
		}
		if (r < 0) {
			r = error_set(err, -r, "cannot list '%.300s' for symlinks", dirs[i]);
			break;
		}
		for (size_t k = 0; r == 0 && links && links[k]; k++) {
			struct stat sb;
			r = hook_targets_push(st, t, NULL, links[k], true, err);
			for (; r == 0 && t->resolved[n_resolved]; n_resolved++) {
				const char *to = t->resolved[n_resolved];
				char *label = NULL;
				if (asprintf(&label, "%s (a symlink to %s)", links[k], to) < 0) {
					r = error_set(err, ENOMEM, "out of memory");
					break;
				}
				free(t->named[n_resolved]);
				t->named[n_resolved] = label;
				if (stat(to, &sb) == 0 && S_ISDIR(sb.st_mode))
					r = hook_links_push_dir(&dirs, &prune, &cap, to, prune[i], err);
			}
		}
	}
	hooklinks_release(&w);
	return r;
}

/* The paths a tool call names. A shell tool: the path keys of its input, the
 * paths of an apply_patch text it feeds (and Codex's apply_patch's own), and
 * Gemini's dir_path as run_dir; its command runs in the quarantine. Any
 * other tool: its whole input, walked (hook_targets_walk()), and the
 * paths of an apply_patch text. */
static int hook_targets_collect(struct hook_state *st, const char *tool, json_t *input,
				struct hook_targets *t, struct error *err)
{
	static const char *const keys[] = { "file_path", "notebook_path", "path", "absolute_path",
					    NULL };
	static const char *const texts[] = { "command", "input", "patch", NULL };
	const char *cwd = jsonutil_str(st->payload, "cwd");
	bool shell = hook_is_shell_tool(st->host, tool);
	/* A shell tool's paths are its command's, in its directory; any other
	 * tool's dir_path is one of its paths, relative to the cwd. */
	cleanup_free char *base = shell ? hook_run_cwd(st) : NULL;
	cleanup_strv char **roots = NULL;
	int r = 0;

	t->named = calloc(1, sizeof(char *));
	if (!t->named)
		return error_set(err, ENOMEM, "out of memory");
	if (shell) {
		for (size_t i = 0; r == 0 && keys[i]; i++) {
			const char *p = jsonutil_str(input, keys[i]);
			if (p && *p)
				r = strv_push(&t->named, p);
		}
	} else {
		r = hook_targets_walk(st, input, NULL, 0, &t->named, &roots);
	}
	if (r == -E2BIG)
		return error_set(err, E2BIG, "the tool's input nests deeper than %d levels",
				 HOOK_INPUT_DEPTH);
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; texts[i]; i++) {
		json_t *v = json_object_get(input, texts[i]);
		if (!json_is_string(v) || !strstr(json_string_value(v), "***"))
			continue;
		cleanup_strv char **found = NULL;
		r = patchpaths_parse(json_string_value(v), json_string_length(v), &found, err);
		if (r < 0)
			return r;
		for (size_t j = 0; found[j]; j++)
			if (strv_push(&t->named, found[j]) < 0)
				return error_set(err, ENOMEM, "out of memory");
	}
	/* Gemini's shell tool runs in dir_path: a command run inside the state
	 * directory writes there with any relative path. */
	const char *dir_path = jsonutil_str(input, "dir_path");
	if (shell && dir_path && *dir_path) {
		r = hookpath_resolve_both(cwd, dir_path, NULL, &t->run_dir, &t->run_dir_lexical);
		if (r < 0)
			return error_set(err, -r,
					 "cannot resolve '%.300s' (out of memory, a symlink loop, deeper than PATH_MAX, /proc/self, or a .. after a process's link in /proc)",
					 dir_path);
	}
	cleanup_strv char **named = TAKE_PTR(t->named);
	t->named = calloc(1, sizeof(char *));
	t->resolved = calloc(1, sizeof(char *));
	t->roots = calloc(1, sizeof(char *));
	if (!t->named || !t->resolved || !t->roots)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; named[i]; i++) {
		r = hook_targets_push(st, t, base ? base : cwd, named[i],
				      strv_contains(roots, named[i]), err);
		if (r < 0)
			return r;
	}
	/* the walk only for a tool that follows links below its roots: never
	 * for a Read, an Edit or a shell command */
	if (!shell && agenthost_tool_in(st->host->link_tools, tool))
		return hook_targets_link_roots(st, t, tool, cwd, roots, input, err);
	return 0;
}

/* A tool aimed at the state directory is refused whatever else holds:
 * receipts, the gate's state and the approver are airlock's, not the
 * agent's. Compared resolved (symlinks, "..", relative to the tool's
 * directory), and also when the directory does not exist yet: an agent
 * that created it first could enrol itself as the approver. ret_path gets
 * the offending path. */
static int hook_targets_state_dir(struct hook_state *st, const struct hook_targets *t,
				  const char **ret_path, struct error *err)
{
	const char *dir = st->session->state_dir;

	*ret_path = NULL;
	if (!dir)
		return 0;
	/* through the call's cache when it has one (a file tool's: the hide
	 * list walks it again); a shell call makes none for one walk */
	cleanup_free char *state = hookpath_resolve(NULL, dir, st->walk);
	if (!state)
		return error_set(err, ENOMEM, "out of memory");
	if (t->run_dir && path_is_under(t->run_dir, state)) {
		*ret_path = t->run_dir;
		return 1;
	}
	if (t->run_dir_lexical && path_is_under(t->run_dir_lexical, state)) {
		*ret_path = t->run_dir_lexical;
		return 1;
	}
	for (size_t i = 0; t->resolved[i]; i++)
		if (path_is_under(t->resolved[i], state) ||
		    (strv_contains(t->roots, t->resolved[i]) && path_is_under(state, t->resolved[i]))) {
			*ret_path = t->named[i];
			return 1;
		}
	return 0;
}

/* Whether one of roots is a directory: a procfs is mounted only on one, so
 * below a file (a key that names a file or a directory, such as Copilot's
 * `path`, naming a file) or below nothing there is none, and mountinfo
 * is not read for it. */
static bool hook_roots_any_dir(char *const *roots)
{
	struct stat sb;

	for (size_t i = 0; roots && roots[i]; i++)
		if (stat(roots[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			return true;
	return false;
}

/* A process's own in /proc (hookpath_proc_hidden()) is no tool's to
 * reach, the shell's included: its patch (which Codex applies itself) and
 * its directory (where the host starts the command) are the host's, and
 * a process's links there (root, cwd, fd/N) lead to what that process
 * holds (the state directory, the project's policy) by a name that is
 * neither. Returns 1 with *ret_path. */
static int hook_targets_proc(const struct hook_targets *t, const char **ret_path)
{
	const char *run[] = { t->run_dir, t->run_dir_lexical };

	*ret_path = NULL;
	for (size_t i = 0; i < 2; i++)
		if (run[i] && hookpath_proc_hidden(run[i], false)) {
			*ret_path = run[i];
			return 1;
		}
	for (size_t i = 0; t->resolved[i]; i++) {
		const char *p = t->resolved[i];
		/* a procfs elsewhere than /proc holds the same */
		if (hookpath_proc_hidden(p, strv_contains(t->roots, p)) || hookpath_on_procfs(p)) {
			*ret_path = t->named[i];
			return 1;
		}
	}
	/* a directory the tool reads below, one mounted there (mountinfo not
	 * read: one) */
	size_t k = 0;
	if (hook_roots_any_dir(t->roots) && hookpath_procfs_below(t->roots, &k) != 0) {
		*ret_path = t->roots[k];
		for (size_t i = 0; t->resolved[i]; i++)
			if (strcmp(t->resolved[i], t->roots[k]) == 0)
				*ret_path = t->named[i];
		return 1;
	}
	return 0;
}

/* What a run never sees (hostview_build(): every state directory, the
 * policy's hide list, other users' homes and in "hidden" home mode the
 * caller's, but what a mask leaves visible and the workspace) no tool
 * reaches either: a path in it, or a directory the tool reads below that
 * holds one. Returns 1 with *ret_path. */
static int hook_targets_hidden(struct hook_state *st, const struct hook_targets *t,
			       const char **ret_path, struct error *err)
{
	const struct hostview_caller *caller = hook_caller(st);
	const char *in_use = st->session->state_dir;
	cleanup_strv char **state_dirs = NULL, **hidden = NULL;
	struct hostview hv = { 0 };

	*ret_path = NULL;
	if (!t->resolved[0])
		return 0;
	hook_walk_hint(st);
	int r = hook_load_policy(st, err);
	if (r == 0)
		r = hostview_state_dirs(in_use, st->session->environ_, caller, &state_dirs, err);
	if (r == 0)
		r = hostview_build(st->policy, caller, st->scope, state_dirs, &hv, err);
	if (r < 0)
		return r;
	/* sized once: an append each, which measured the list each time, was
	 * quadratic in the ~140 paths */
	hidden = calloc(strv_length(hv.hide) + 1, sizeof(char *));
	for (size_t i = 0; hv.hide && hv.hide[i]; i++) {
		char *g = hidden ? hookpath_resolve(NULL, hv.hide[i], hook_walk_cache(st)) : NULL;
		if (!g) {
			hostview_release(&hv);
			return error_set(err, ENOMEM, "out of memory");
		}
		hidden[i] = g;
	}
	for (size_t i = 0; t->resolved[i] && !*ret_path; i++) {
		const char *p = t->resolved[i];
		bool root = strv_contains(t->roots, p);
		if (hookpath_proc_hidden(p, root))
			*ret_path = t->named[i];
		for (size_t k = 0; hidden && hidden[k] && !*ret_path; k++)
			if (path_is_under(p, hidden[k]) || (root && path_is_under(hidden[k], p)))
				*ret_path = t->named[i];
		for (size_t m = 0; m < hv.n_masks && !*ret_path; m++) {
			const char *mask = hv.mask_paths[m];
			bool shown = path_is_under(p, st->scope);
			for (size_t k = 0; hv.expose[m] && hv.expose[m][k] && !shown; k++)
				shown = path_is_under(p, hv.expose[m][k]);
			if ((path_is_under(p, mask) && !shown) || (root && path_is_under(mask, p)))
				*ret_path = t->named[i];
		}
	}
	hostview_release(&hv);
	return *ret_path ? 1 : 0;
}

/* The scope (gate_scope()) of the nearest directory that exists at or
 * above the resolved path p: the workspace whose gate a write to p answers
 * to; *ret_dir (may be NULL): whether that directory is p itself. The last
 * answer is kept for the call: the configuration check and the gate ask it
 * of the same file, and the call takes the host's paths as they were when
 * first looked at. */
static int hook_path_scope(struct hook_state *st, const char *p, char **ret_scope, bool *ret_dir,
			   struct error *err)
{
	if (st->scope_of && strcmp(st->scope_of, p) == 0) {
		if (ret_dir)
			*ret_dir = st->scope_of_dir;
		*ret_scope = strdup(st->scope_for);
		return *ret_scope ? 0 : error_set(err, ENOMEM, "out of memory");
	}
	cleanup_free char *dir = strdup(p);
	struct stat sb;

	while (dir && (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) && strcmp(dir, "/") != 0) {
		char *up = path_dirname(dir);
		free(dir);
		dir = up;
	}
	if (!dir)
		return error_set(err, ENOMEM, "out of memory");
	bool is_dir = strcmp(dir, p) == 0;
	if (ret_dir)
		*ret_dir = is_dir;
	int r;
	if (st->scope_dir && strcmp(dir, st->scope_dir) == 0) /* the payload's cwd */
		r = (*ret_scope = strdup(st->scope_dir_for))
			    ? 0
			    : error_set(err, ENOMEM, "out of memory");
	else
		r = gate_scope(dir, ret_scope, err);
	if (r < 0)
		return r;
	/* only a memory: without one, the next ask looks again */
	char *of = strdup(p), *scope = strdup(*ret_scope);
	if (!of || !scope) {
		free(of);
		free(scope);
		return r;
	}
	free(st->scope_of);
	free(st->scope_for);
	st->scope_of = of;
	st->scope_for = scope;
	st->scope_of_dir = is_dir;
	return r;
}

/* airlock's configuration (hostview_config_files()): .airlock/ (the policy
 * of every routed command) and the files that hold airlock's hooks for each
 * host, in the payload's scope and in the scope of each file the tool names
 * (from a nested repository, the parent project's are its too) and in every
 * directory from that scope down to the file (a host started in sub/ reads
 * sub/.claude/, whatever the payload's cwd is now), in the user's home and
 * in $CODEX_HOME. A file tool never writes them: an agent that could would
 * unconfine its own routed commands, or remove the hooks. The shell tool's
 * commands run in the quarantine, where they are read-only or moved aside.
 * Returns 1 with *ret_path. */
/* Appends the policy's read-only paths of a workspace (sandbox.read_only:
 * .git/config, .git/hooks, .envrc, ...) below scope and below every
 * directory from it down to path's: what the quarantine keeps from the
 * agent's commands because git, direnv or a host runs it on the host (a
 * core.fsmonitor runs on the host's own next `git status`), and a nested
 * repository's. */
static int hook_push_read_only(struct hook_state *st, const char *scope, const char *path,
			       char ***configs)
{
	const char *p = path + strlen(scope);

	if (!path_is_under(path, scope))
		return 0;
	for (;;) {
		cleanup_free char *dir = strndup(path, (size_t)(p - path));
		if (!dir)
			return -ENOMEM;
		for (size_t k = 0; st->policy->read_only && st->policy->read_only[k]; k++) {
			const char *ro = st->policy->read_only[k];
			char *joined = ro[0] == '/' || ro[0] == '~' ? NULL : path_join(dir, ro);
			if (joined && strv_consume(configs, joined) < 0)
				return -ENOMEM;
		}
		if (!*p || !(p = strchr(p + 1, '/')))
			return 0;
	}
}

static int hook_targets_config(struct hook_state *st, const struct hook_targets *t,
			       const char **ret_path, struct error *err)
{
	const struct hostview_caller *caller = hook_caller(st);

	*ret_path = NULL;
	if (t->resolved[0])
		hook_walk_hint(st);
	for (size_t i = 0; t->resolved[i]; i++) {
		cleanup_free char *scope = NULL, *parent = NULL;
		cleanup_strv char **configs = NULL;
		bool is_dir = false;
		int r = hook_load_policy(st, err);
		if (r == 0)
			r = hook_path_scope(st, t->resolved[i], &scope, &is_dir, err);
		/* the payload's scope's own entries, when the file's scope is
		 * it, are in the second list too: walked once */
		bool once = r == 0 && strcmp(scope, st->scope) == 0 &&
			    hostview_config_in_workspace_covers(scope);
		if (r == 0)
			r = hostview_config_files(once ? NULL : st->scope, caller, &configs, err);
		/* The settings of the directories from the scope down to the
		 * file's: the file's own (file/.claude, ...) only where it is a
		 * directory. Below a file, or below nothing, each is a path
		 * that does not exist, resolved as written (hookpath_resolve()),
		 * which the file, a prefix of it, never lies in. */
		if (r == 0 && !is_dir && !(parent = path_dirname(t->resolved[i])))
			r = error_set(err, ENOMEM, "out of memory");
		if (r == 0) {
			cleanup_strv char **more = NULL;
			r = hostview_config_in_workspace(scope, parent ? parent : t->resolved[i],
							 caller, &more, err);
			for (size_t k = 0; r == 0 && more && more[k]; k++)
				if (strv_push(&configs, more[k]) < 0)
					r = error_set(err, ENOMEM, "out of memory");
		}
		if (r == 0 && hook_push_read_only(st, scope, t->resolved[i], &configs) < 0)
			r = error_set(err, ENOMEM, "out of memory");
		if (r < 0)
			return r;
		/* A gitfile ("gitdir: DIR") sends git wherever it says, to a
		 * config of the agent's: no file tool writes one. */
		const char *base = strrchr(t->resolved[i], '/');
		if (base && strcmp(base + 1, ".git") == 0) {
			*ret_path = t->named[i];
			return 1;
		}
		for (size_t k = 0; configs && configs[k]; k++) {
			cleanup_free char *g = hookpath_resolve(NULL, configs[k], hook_walk_cache(st));
			if (!g)
				return error_set(err, ENOMEM, "out of memory");
			if (path_is_under(t->resolved[i], g)) {
				*ret_path = t->named[i];
				return 1;
			}
		}
	}
	return 0;
}

/* A mutating tool answers to the gate of every workspace it writes in, not
 * only the payload's: the open failures of the first file's scope that has
 * any go into *ret_open (NULL: none), its scope into *ret_scope. */
static int hook_targets_open(struct hook_state *st, const struct hook_targets *t,
			     struct gate_failures *ret_open, char **ret_scope, struct error *err)
{
	*ret_open = (struct gate_failures){ 0 };
	*ret_scope = NULL;
	for (size_t i = 0; st->store && t->resolved && t->resolved[i]; i++) {
		cleanup_free char *scope = NULL;
		int r = hook_path_scope(st, t->resolved[i], &scope, NULL, err);
		if (r < 0)
			return r;
		if (strcmp(scope, st->scope) == 0)
			continue;
		struct gate_failures open = { 0 };
		r = gate_list_open(st->store, scope, &open, err);
		if (r < 0)
			return r;
		if (open.n > 0) {
			*ret_open = open;
			*ret_scope = TAKE_PTR(scope);
			return 0;
		}
		gate_failures_release(&open);
	}
	return 0;
}

/* The files a read-only airlock command reads besides the state directory
 * (ledger's --key and --checkpoint), as targets: airlock runs it on the host,
 * so they are held to what any tool may reach. */
static int hook_read_targets(struct hook_state *st, char *const *argv, struct hook_targets *t,
			     struct error *err)
{
	static const char *const options[] = { "--key", "--checkpoint", NULL };
	const char *cwd = jsonutil_str(st->payload, "cwd");

	t->named = calloc(1, sizeof(char *));
	t->resolved = calloc(1, sizeof(char *));
	t->roots = calloc(1, sizeof(char *));
	if (!t->named || !t->resolved || !t->roots)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 1; argv[i] && strcmp(argv[i], "--") != 0; i++)
		for (size_t k = 0; options[k]; k++) {
			size_t n = strlen(options[k]);
			const char *value = strncmp(argv[i], options[k], n) != 0 ? NULL
					    : argv[i][n] == '='			 ? argv[i] + n + 1
					    : argv[i][n] == '\0'		 ? argv[i + 1]
										 : NULL;
			if (!value || !*value)
				continue;
			int r = hook_targets_push(st, t, cwd, value, false, err);
			if (r < 0)
				return r;
		}
	return 0;
}

/* The words of command when it is made of words separated by single
 * spaces, each bare (letters, digits, `_-./=,:+@%`) or quoted the way
 * hook_quote() writes them, so that no operator, expansion or glob is left
 * for bash to act on; else NULL. */
static char **hook_plain_words(const char *command)
{
	static const char bare[] = "_-./=,:+@%";
	cleanup_free char *word = malloc(strlen(command) + 1);
	cleanup_strv char **words = calloc(1, sizeof(char *));
	const char *p = command;

	if (!word || !words)
		return NULL;
	while (*p) {
		size_t len = 0;
		if (*p == '\'') {
			for (;;) {
				const char *q = strchr(p + 1, '\'');
				if (!q)
					return NULL;
				memcpy(word + len, p + 1, (size_t)(q - p - 1));
				len += (size_t)(q - p - 1);
				p = q + 1;
				if (strncmp(p, "\\''", 3) != 0)
					break;
				word[len++] = '\'';
				p += 2; /* onto the reopening quote */
			}
		} else {
			while (*p && (('a' <= (*p | 0x20) && (*p | 0x20) <= 'z') ||
				      ('0' <= *p && *p <= '9') || strchr(bare, *p)))
				word[len++] = *p++;
			if (len == 0)
				return NULL;
		}
		word[len] = '\0';
		if ((*p && *p != ' ') || strv_push(&words, word) < 0)
			return NULL;
		if (*p == ' ' && !*++p)
			return NULL;
	}
	return TAKE_PTR(words);
}

/* Appends s as one bash word at p: inside single quotes every byte but NUL
 * is literal, and a single quote becomes '\'' (close, quoted quote,
 * reopen). hook_quoted_size() is the room it takes. */
static size_t hook_quoted_size(const char *s, size_t n)
{
	size_t size = 2;

	for (size_t i = 0; i < n; i++)
		size += s[i] == '\'' ? 4 : 1;
	return size;
}

static char *hook_quote(char *p, const char *s, size_t n)
{
	*p++ = '\'';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = s[i];
		}
	}
	*p++ = '\'';
	return p;
}

/* The airlock a routed command names; NULL: never route. */
static const char *hook_airlock(const struct hook_state *st)
{
	return st->route->find ? st->route->find() : st->route->airlock;
}

/* `AIRLOCK run --routed HOST [--state-dir DIR] [--policy FILE] --workspace
 * SCOPE -- bash -c 'COMMAND'`: the same shell text, byte for byte, run by
 * airlock in the quarantine, its output passed through and its exit status
 * airlock's own (docs/gate.md, "Routing"). The one writer of the routed
 * form: pre-tool-use routes with it, and post-tool-use takes as routed only
 * what it writes. NULL when out of memory. */
static char *hook_routed_text(struct hook_state *st, const char *scope, const char *policy,
			      const char *command, size_t n)
{
	/* word i is quoted when quote[i], else literal */
	const char *words[] = { hook_airlock(st),
				"run",
				"--routed",
				st->host->name,
				st->route->state_dir ? "--state-dir" : NULL,
				st->route->state_dir ? st->session->state_dir : NULL,
				policy ? "--policy" : NULL,
				policy,
				"--workspace",
				scope,
				"--",
				"bash",
				"-c" };
	static const bool quote[] = { true, false, false, false, false, true, false,
				      true, false, true,  false, false, false };
	size_t size = hook_quoted_size(command, n) + 1;

	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (words[i])
			size += (quote[i] ? hook_quoted_size(words[i], strlen(words[i]))
					  : strlen(words[i])) +
				1;
	char *text = malloc(size);
	if (!text)
		return NULL;
	char *p = text;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		if (!words[i])
			continue;
		if (quote[i]) {
			p = hook_quote(p, words[i], strlen(words[i]));
		} else {
			memcpy(p, words[i], strlen(words[i]));
			p += strlen(words[i]);
		}
		*p++ = ' ';
	}
	p = hook_quote(p, command, n);
	*p = '\0';
	return text;
}

/* The tool's whole input with its command replaced by text. */
static int hook_set_command(json_t *input, const char *text, struct hook_outcome *ret, struct error *err)
{
	json_t *updated = json_deep_copy(input);

	if (!updated || json_object_set_new(updated, "command", json_string(text)) < 0) {
		json_decref(updated);
		return error_set(err, ENOMEM, "out of memory");
	}
	ret->updated_input = updated;
	return 0;
}

static int hook_route(struct hook_state *st, json_t *input, const char *command, size_t n,
		      struct hook_outcome *ret, struct error *err)
{
	cleanup_free char *policy = policy_route_path(st->scope);
	cleanup_free char *text = hook_routed_text(st, st->scope, policy, command, n);

	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	return hook_set_command(input, text, ret, err);
}

/* Whether command is exactly what hook_route() writes for this hook (its
 * airlock, host and state directory) and a scope of the payload's cwd (now,
 * or when the run began: began_scope), with or without that scope's
 * policy: the routed form, byte for byte, and nothing else. */
static bool hook_is_own_routed(struct hook_state *st, const char *command, const char *began_scope)
{
	cleanup_strv char **words = hook_airlock(st) ? hook_plain_words(command) : NULL;
	const char *scope = NULL;
	bool policy = false;
	size_t n = words ? strv_length(words) : 0;

	for (size_t i = 0; i + 1 < n && strcmp(words[i], "--") != 0; i++) {
		if (strcmp(words[i], "--workspace") == 0 && !scope)
			scope = words[i + 1];
		else if (strcmp(words[i], "--policy") == 0)
			policy = true;
	}
	if (!scope ||
	    (strcmp(scope, st->scope) != 0 && (!began_scope || strcmp(scope, began_scope) != 0)))
		return false;
	cleanup_free char *policy_path = policy ? path_join(scope, ".airlock/policy.json") : NULL;
	cleanup_free char *text = policy && !policy_path
					  ? NULL
					  : hook_routed_text(st, scope, policy_path, words[n - 1],
							     strlen(words[n - 1]));
	return text && strcmp(text, command) == 0;
}

/* This airlock's own command, run unrouted: the same words with the first
 * replaced by this binary's absolute path, so what runs is the file the
 * hook checked, not whatever that name finds by the time the host's shell
 * looks (a routed command still running could plant one in PATH). A word
 * is written bare when it is made of letters, digits and `_-./=,:+@%`
 * only, else single-quoted. */
static int hook_run_as_self(struct hook_state *st, json_t *input, char *const *argv,
			    struct hook_outcome *ret, struct error *err)
{
	static const char bare[] = "_-./=,:+@%";
	const char *self = hook_airlock(st);
	size_t size = hook_quoted_size(self, strlen(self)) + 1;

	for (size_t i = 1; argv[i]; i++)
		size += hook_quoted_size(argv[i], strlen(argv[i])) + 1;
	cleanup_free char *text = malloc(size);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	char *p = hook_quote(text, self, strlen(self));
	for (size_t i = 1; argv[i]; i++) {
		const char *w = argv[i];
		bool plain = *w != '\0';
		for (const char *c = w; *c && plain; c++)
			plain = ('a' <= (*c | 0x20) && (*c | 0x20) <= 'z') ||
				('0' <= *c && *c <= '9') || strchr(bare, *c);
		*p++ = ' ';
		if (plain) {
			memcpy(p, w, strlen(w));
			p += strlen(w);
		} else {
			p = hook_quote(p, w, strlen(w));
		}
	}
	*p = '\0';
	return hook_set_command(input, text, ret, err);
}

/* The checks of t's paths. 1: refused (ret says why), 0: none is
 * refused. */
static int hook_pre_check(struct hook_state *st, const char *tool, bool shell, bool reads,
			  const struct hook_targets *t, struct hook_outcome *ret, struct error *err)
{
	const char *target = NULL;
	int r = hook_targets_state_dir(st, t, &target, err);

	if (r < 0)
		return r;
	if (target) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: %s would reach %s, inside airlock's state directory; receipts, the gate's state and the approver are airlock's alone, neither read nor written by the agent.",
			    tool ? tool : "the tool", target);
		return 1;
	}
	if (hook_targets_proc(t, &target)) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: %s would reach %s, which is hidden from the agent: a process's own in /proc (its environment, command line, memory, open files, root or cwd, which lead where its name does not tell); no tool reaches it.",
			    tool ? tool : "the tool", target);
		return 1;
	}
	/* File tools' paths, a patch's fed to apply_patch by the shell, and any
	 * tool airlock does not know (it may write). */
	r = !reads ? hook_targets_config(st, t, &target, err) : 0;
	if (r < 0)
		return r;
	if (target) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: %s would write %s, which is airlock's configuration or runs code on the host (the routed commands' policy in .airlock/, a host's hook settings, the policy's read-only paths: .git/config, .git/hooks, .envrc); only a person changes it, outside the agent.",
			    tool ? tool : "the tool", target);
		return 1;
	}
	/* Any tool but the shell's (whose command runs in the quarantine, where
	 * they are not there) is refused what a run does not see. */
	r = !shell ? hook_targets_hidden(st, t, &target, err) : 0;
	if (r < 0)
		return r;
	if (target) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: %s would reach %s, which is hidden from the agent (a state directory, a credential on the policy's hide list, another user's home, or a process's environment, command line or memory in /proc: what no quarantined command sees); no tool reads it.",
			    tool ? tool : "the tool", target);
		return 1;
	}
	return 0;
}

/* pre-tool-use, first step: the tool's paths (every tool's, when its input
 * is an object), and then, for a tool that follows symlinks below the
 * directories it reads, the paths those lead to. 1: refused (ret says
 * why), 0: none is refused. */
static int hook_pre_paths(struct hook_state *st, const char *tool, json_t *input, bool shell,
			  bool reads, struct hook_targets *t, struct hook_outcome *ret,
			  struct error *err)
{
	if (!json_is_object(input))
		return 0;
	int r = hook_targets_collect(st, tool, input, t, err);
	if (r == 0)
		r = hook_pre_check(st, tool, shell, reads, t, ret, err);
	if (r != 0 || !t->link_dirs)
		return r;
	r = hook_targets_links(st, t, err);
	return r < 0 ? r : hook_pre_check(st, tool, shell, reads, t, ret, err);
}

/* A conflict with the ledger's mirror is open (core/store/remotes.h): it
 * blocks like an open failure until the approver resolves it. */
static bool hook_mirror_conflict(const struct hook_state *st, char *msg, size_t size)
{
	if (!st->store || faccessat(store_dir_fd(st->store), STATEPATH_MIRROR_CONFLICT, F_OK,
				    AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	snprintf(msg, size,
		 "airlock: the ledger's mirror refused a push (`airlock gate` says why): the record of this machine conflicts with the one kept off it, and nothing that changes anything runs until the approver resolves it (`airlock ledger mirror resolve`).");
	return true;
}

/* pre-tool-use of a file tool, or of a tool airlock does not know (taken
 * as one that writes): it writes the workspace, risk 4 (tracked files),
 * which does not run while a failure is open, in the payload's scope or in
 * the scope of a file it writes. */
static int hook_pre_file_tool(struct hook_state *st, const char *tool, const struct hook_targets *t,
			      struct hook_outcome *ret, struct error *err)
{
	cleanup_with(gate_failures_release) struct gate_failures other = { 0 };
	cleanup_free char *other_scope = NULL;
	int r = hook_targets_open(st, t, &other, &other_scope, err);

	if (r < 0)
		return r;
	char open[3000];
	if (st->open.n == 0 && other.n == 0 && hook_mirror_conflict(st, open, sizeof(open))) {
		outcome_set(ret, HOOK_BLOCK, "%s %s does not run.", open, tool ? tool : "the tool");
		return 0;
	}
	if (st->open.n == 0 && other.n == 0)
		return 0;
	if (st->open.n == 0) {
		struct gate_failures own = st->open;
		char *own_scope = st->scope;
		st->open = other;
		st->scope = other_scope;
		hook_describe_open(st, open, sizeof(open));
		st->open = own;
		st->scope = own_scope;
	} else {
		hook_describe_open(st, open, sizeof(open));
	}
	outcome_set(ret, HOOK_BLOCK,
		    "%s %s %s, which is a mutating command, so it does not run while the failure is open.",
		    open, tool ? tool : "the tool",
		    hook_is_file_tool(st->host, tool) ? "writes files"
						      : "is not a tool airlock knows to only read");
	return 0;
}

/* What pre-tool-use makes of a shell command: its rules verdict, how it
 * names airlock, and for this airlock's own command its words. */
struct hook_shell {
	struct rules_verdict v;
	enum hook_airlock own;
	unsigned mask; /* SHELL_MASK_ bits: how its exit status can hide a failure */
	char **argv; /* this airlock's command (read, fixes, refused); NULL else */
	const char *bad; /* refused: the word that made it so (in argv); NULL none */
};

static void hook_shell_release(struct hook_shell *sh)
{
	strv_free(sh->argv);
	sh->argv = NULL;
}

static int hook_shell_judge(struct hook_state *st, const char *command, struct hook_shell *ret,
			    struct error *err)
{
	int r = hook_load_rules(st, err);

	if (r < 0)
		return r;
	rules_classify_shell(st->rules, command, &ret->v);
	struct shell_script s;
	r = shell_script_parse(command, strlen(command), &s);
	ret->mask = shell_script_masking(&s);
	const char *bad = NULL;
	ret->own = r == 0 ? hook_judge_airlock(st, &s, &bad) : HOOK_AIRLOCK_NONE;
	if (ret->own == HOOK_AIRLOCK_REFUSED || ret->own == HOOK_AIRLOCK_READ ||
	    ret->own == HOOK_AIRLOCK_FIXES) {
		for (size_t i = 0; s.commands[0].argv[i]; i++) {
			if (strv_push(&ret->argv, s.commands[0].argv[i]) < 0) {
				shell_script_release(&s);
				return error_set(err, ENOMEM, "out of memory");
			}
			/* bad is one of the script's words: the copy's outlives it. */
			if (s.commands[0].argv[i] == bad)
				ret->bad = ret->argv[i];
		}
	}
	shell_script_release(&s);
	if (ret->own == HOOK_AIRLOCK_IMPOSTOR && ret->v.risk < 4) {
		/* Its name says nothing of what it does: an unknown program. */
		ret->v.risk = 4;
		ret->v.level = "unknown program";
		snprintf(ret->v.rule, sizeof(ret->v.rule), "not-this-airlock");
		snprintf(ret->v.reason, sizeof(ret->v.reason),
			 "a program called airlock that is not this airlock binary");
	}
	return 0;
}

/* A refusal of the judged command, by what it is and what is open: 1 when
 * refused (ret says why), 0 when it may run. */
static int hook_shell_refuse(struct hook_state *st, const struct hook_shell *sh, bool exempt,
			     struct hook_outcome *ret, struct error *err)
{
	if (sh->own == HOOK_AIRLOCK_REFUSED) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: `airlock %.100s` is not run from the agent's shell tool (at '%.100s'): only airlock's read-only commands (gate, receipts, show, classify, doctor, ledger verify|prove|consistency, help, version) with options that choose nothing else (no --state-dir, --policy or --rules) run outside the quarantine, and `airlock run --fixes ID -- CMD` or `airlock ack ID --reason TEXT` for a failure that is open. Run the command itself: the hook routes it through `airlock run`.",
			    sh->argv[1] ? sh->argv[1] : "", sh->bad ? sh->bad : "");
		return 1;
	}
	if (st->open.n > 0 && sh->v.risk > 1 && !exempt) {
		char open[3000];
		hook_describe_open(st, open, sizeof(open));
		outcome_set(ret, HOOK_BLOCK,
			    "%s This command is risk %d (%s, rule %s) and does not name that failure, so it does not run while the failure is open.",
			    open, sh->v.risk, sh->v.level, sh->v.rule);
		return 1;
	}
	char conflict[400];
	if (sh->v.risk > 1 && !exempt && hook_mirror_conflict(st, conflict, sizeof(conflict))) {
		outcome_set(ret, HOOK_BLOCK, "%s This command is risk %d (%s, rule %s).", conflict,
			    sh->v.risk, sh->v.level, sh->v.rule);
		return 1;
	}
	if (sh->v.risk == 5) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: this command is risk 5 (%s, rule %s: %s); airlock refuses risk 5.",
			    sh->v.level, sh->v.rule, sh->v.reason);
		return 1;
	}
	if (sh->own != HOOK_AIRLOCK_READ)
		return 0;
	cleanup_with(hook_targets_release) struct hook_targets files = { 0 };
	const char *file = NULL;
	int r = hook_read_targets(st, sh->argv, &files, err);
	if (r == 0)
		r = hook_targets_state_dir(st, &files, &file, err);
	if (r == 0 && !file)
		r = hook_targets_hidden(st, &files, &file, err);
	if (r < 0)
		return r;
	if (!file)
		return 0;
	outcome_set(ret, HOOK_BLOCK,
		    "airlock: `airlock %.100s` would read %s, which is airlock's state directory or hidden from the agent; it does not run.",
		    sh->argv[1], file);
	return 1;
}

/* Whether the host would run the command (in Gemini's dir_path) outside
 * the payload cwd's scope, and so it is refused: a routed run's failure
 * would file in a scope this one's gate does not see, and the --fixes
 * exception's workspace (its cwd) would reach beyond the project. A
 * directory that cannot be resolved now cannot be judged either. */
static bool hook_run_cwd_outside(struct hook_state *st, struct hook_outcome *ret)
{
	cleanup_free char *dir = hook_run_cwd(st);
	if (!dir || !st->scope)
		return false;
	cleanup_free char *real = realpath(dir, NULL);
	if (real && path_is_under(real, st->scope))
		return false;
	outcome_set(ret, HOOK_BLOCK,
		    "airlock: the command would run in %.300s, outside the project (%.300s): its receipt and any failure belong to the project's gate, so it runs in the project or below.",
		    real ? real : dir, st->scope);
	return true;
}

/* pre-tool-use of a shell tool: refused, run as this airlock (its own
 * harmless commands), routed through `airlock run`, or passed. */
static int hook_pre_shell(struct hook_state *st, json_t *input, struct hook_outcome *ret,
			  struct error *err)
{
	cleanup_free char *command = hook_command(input);
	if (!command)
		return error_set(err, EINVAL, "tool_input.command is missing or not a string");

	json_t *cmd = json_object_get(input, "command");
	if (json_is_string(cmd) && memchr(json_string_value(cmd), '\0', json_string_length(cmd))) {
		outcome_set(ret, HOOK_BLOCK,
			    "airlock: the command holds a NUL byte, which no shell word can carry; it is not run.");
		return 0;
	}
	cleanup_with(hook_shell_release) struct hook_shell sh = { 0 };
	int r = hook_shell_judge(st, command, &sh, err);
	if (r < 0)
		return r;
	bool exempt = sh.own == HOOK_AIRLOCK_READ || sh.own == HOOK_AIRLOCK_FIXES;
	r = hook_shell_refuse(st, &sh, exempt, ret, err);
	if (r != 0)
		return r < 0 ? r : 0;
	if (hook_run_cwd_outside(st, ret))
		return 0;
	if (exempt) {
		outcome_set(ret, HOOK_PASS,
			    "airlock: airlock's own %s, run unrouted by this airlock binary.",
			    sh.own == HOOK_AIRLOCK_READ ? "read-only command"
							: "command for the open failure");
		return hook_airlock(st) && json_is_string(cmd)
			       ? hook_run_as_self(st, input, sh.argv, ret, err)
			       : 0;
	}
	if (hook_airlock(st) && json_is_string(cmd)) {
		outcome_set(ret, HOOK_PASS,
			    "airlock: risk %d (%s), rule %s; routed through `airlock run` (receipt, exit status and gate from airlock's own run).",
			    sh.v.risk, sh.v.level, sh.v.rule);
		return hook_route(st, input, json_string_value(cmd), json_string_length(cmd), ret, err);
	}
	char masking[128];
	hook_masking_text(sh.mask, masking, sizeof(masking));
	outcome_set(ret, HOOK_PASS, "airlock: risk %d (%s), rule %s.%s%s%s", sh.v.risk, sh.v.level,
		    sh.v.rule, sh.mask ? " Its exit status can hide a failure (" : "", masking,
		    sh.mask ? "); a success is recorded as unverified." : "");
	return 0;
}

static int hook_pre_tool_use(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	const char *tool = jsonutil_str(st->payload, "tool_name");
	json_t *input = json_object_get(st->payload, "tool_input");
	cleanup_with(hook_targets_release) struct hook_targets t = { 0 };
	bool shell = hook_is_shell_tool(st->host, tool);
	bool reads = !shell && hook_is_read_tool(st->host, tool);

	int r = hook_pre_paths(st, tool, input, shell, reads, &t, ret, err);
	if (r != 0 || reads)
		return r < 0 ? r : 0; /* refused, or a read tool: passes whatever is open */
	r = hook_list_open(st, err);
	if (r < 0)
		return r;
	return shell ? hook_pre_shell(st, input, ret, err)
		     : hook_pre_file_tool(st, tool, &t, ret, err);
}

/* The receipt's exit_status word for each enum agent_exit_kind. */
static const char *const hook_exit_status_names[] = { "reported", "implied", "unknown", "interpreted" };

static void hook_feed(struct capture *c, json_t *payload, const char *const *keys)
{
	json_t *resp = json_object_get(payload, "tool_response");

	if (json_is_string(resp)) {
		if (keys && strcmp(keys[0], "stdout") == 0)
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
	static const char *const names[] = { "grep", "egrep", "fgrep", "rg",  "find",
					     "diff", "test",  "[",     "git", NULL };
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

/* How post-tool-use takes the host's report of a run. */
struct hook_post {
	struct agent_exit hs;
	bool known; /* the status was reported, or implied */
	bool verified; /* known, not masked, not interrupted, not a success in name only */
	unsigned mask; /* SHELL_MASK_ bits */
	char masking[128]; /* mask in words */
};

static void hook_post_status(struct hook_state *st, const char *command, struct hook_post *ret)
{
	const struct agent_exit *hs = &ret->hs;
	struct shell_script s;

	st->host->exit_status(st->payload, &ret->hs);
	ret->known = hs->kind == AGENT_EXIT_REPORTED || hs->kind == AGENT_EXIT_IMPLIED;
	int pr = shell_script_parse(command, strlen(command), &s);
	ret->mask = pr == 0 ? shell_script_masking(&s) : SHELL_MASK_UNPARSED;
	shell_script_release(&s);
	ret->verified = ret->known && ret->mask == 0 && !hs->interrupted &&
			(hs->kind == AGENT_EXIT_REPORTED || hs->code != 0 ||
			 !hook_exit_one_is_success(command));
	hook_masking_text(ret->mask, ret->masking, sizeof(ret->masking));
}

/* The run's output, as the host reported it, kept as a run's is. */
static int hook_post_output(struct hook_state *st, struct capture *out, struct capture *errc,
			    struct error *err)
{
	static const char *const out_keys[] = { "stdout", "output", "aggregated_output",
						"llmContent", NULL };
	static const char *const err_keys[] = { "stderr", NULL };
	json_t *resp = json_object_get(st->payload, "tool_response");

	if (capture_init(out, st->policy->keep_bytes) < 0 ||
	    capture_init(errc, st->policy->keep_bytes) < 0)
		return error_set(err, ENOMEM, "out of memory");
	hook_feed(out, st->payload, out_keys);
	hook_feed(errc, st->payload, err_keys);
	if (!json_object_get(resp, "stdout") && !json_object_get(resp, "stderr") &&
	    jsonutil_str(st->payload, "error"))
		capture_feed(out, jsonutil_str(st->payload, "error"),
			     strlen(jsonutil_str(st->payload, "error")));
	capture_finish(out);
	capture_finish(errc);
	return 0;
}

/* The receipt rc (its id allocated) committed, through the gate when its
 * status may open or close a failure; ret says what was recorded. */
static int hook_post_commit(struct hook_state *st, struct receipt *rc, const struct hook_post *p,
			    struct hook_outcome *ret, struct error *err)
{
	const struct agent_exit *hs = &p->hs;
	/* An unknown status is never a success and closes nothing; it opens a
	 * failure when it is known not to be a success, or by policy, and
	 * never when the host called it no error. */
	bool opens = p->known || hs->known_failed ||
		     (hs->kind == AGENT_EXIT_UNKNOWN && st->policy->hooks_unknown_opens_failure);
	struct gate_effect effect = { 0 };
	struct error gate_err = { 0 };
	int gate_r = 0;
	if (opens) {
		gate_r = gate_prepare(st->store, rc, st->rules, st->scope, 0, 0, false, p->verified,
				      false, &effect, &gate_err);
	} else {
		effect.scope = strdup(st->scope);
		if (!effect.scope)
			gate_r = error_set(&gate_err, ENOMEM, "out of memory");
	}
	/* The one commit path for receipts (gate_commit_receipt), as for airlock's
	 * own runs: the receipt is kept even when the gate could not decide. */
	char warning[1024];
	int r = gate_commit_receipt(st->store, rc, gate_r < 0 ? NULL : &effect, gate_err.msg, NULL,
				    warning, sizeof(warning), err);
	if (r == 0 && gate_r < 0) {
		*err = gate_err;
		r = error_prefix(err, "receipt %llu was written but the gate is not updated",
				 (unsigned long long)rc->id);
	}
	ret->receipt = rc->id;
	if (r == 0 && !p->known)
		outcome_set(ret, HOOK_PASS,
			    "airlock receipt %llu recorded the host's run with its exit status unknown (%s)%s%s; it closes nothing.%s%.300s",
			    (unsigned long long)rc->id,
			    hs->kind == AGENT_EXIT_INTERPRETED ? hs->interpretation : hs->why,
			    effect.opened ? "; it opened a failure in " : "",
			    effect.opened ? st->scope : "", warning[0] ? " Warning: " : "", warning);
	else if (r == 0)
		outcome_set(ret, HOOK_PASS,
			    "airlock receipt %llu recorded the host's run: %s%s%s%s%s.%s%.300s",
			    (unsigned long long)rc->id, hs->interrupted ? "interrupted" : "exit ",
			    hs->interrupted ? "" : (hs->code == 0 ? "0" : "non-zero"),
			    effect.opened ? "; it opened a failure in " : "",
			    effect.opened ? st->scope : "",
			    !p->verified && !effect.opened ? " (unverified: the status may be masked)"
							   : "",
			    warning[0] ? " Warning: " : "", warning);
	gate_effect_release(&effect);
	return r;
}

/* The host's run of command recorded as a receipt: in rc_cwd, dur_ms long,
 * for the scope as it was when it began (*began_scope, taken). */
static int hook_post_record(struct hook_state *st, char *command, const char *rc_cwd, uint64_t dur_ms,
			    char **began_scope, struct hook_outcome *ret, struct error *err)
{
	struct hook_post p;
	struct capture out, errc;

	hook_post_status(st, command, &p);
	int r = hook_post_output(st, &out, &errc, err);
	if (r < 0)
		return r;
	const struct agent_exit *hs = &p.hs;
	bool known = p.known, interrupted = hs->interrupted;
	char *argv[] = { (char *)"bash", (char *)"-c", command, NULL };
	static const int expected[] = { 0 };
	uint64_t now = clock_realtime_ns();
	struct receipt_sandbox sandbox = { .profile = "host" };
	struct receipt rc = {
		.source = st->host->post_source,
		.argv = argv,
		.cwd = rc_cwd,
		.expected = expected,
		.n_expected = 1,
		.status = !known	? RECEIPT_UNKNOWN
			  : interrupted ? RECEIPT_SIGNALED
					: RECEIPT_EXITED,
		.has_exit_code = known && !interrupted,
		.exit_code = hs->code,
		.signal = known && interrupted ? 2 : 0,
		.match_expected = known && !interrupted && hs->code == 0,
		.started_ns = now - dur_ms * 1000000,
		.ended_ns = now,
		.duration_ms = dur_ms,
		.out = { .capture = &out },
		.err = { .capture = &errc },
		.error = !known	       ? (hs->kind == AGENT_EXIT_INTERPRETED
						  ? "the host called its exit status no error, without giving it"
						  : hs->why)
			 : interrupted ? "interrupted in the host"
				       : NULL,
		.policy_origin = st->policy->origin,
		.policy_sha256 = st->policy->sha256,
		.sandbox = &sandbox,
	};
	struct receipt_host host = {
		.agent = st->host->agent,
		.session_id = jsonutil_str(st->payload, "session_id"),
		.tool_use_id = jsonutil_str(st->payload, "tool_use_id"),
		.event = jsonutil_str(st->payload, "hook_event_name"),
		.exit_code_reported = hs->kind == AGENT_EXIT_REPORTED,
		.verified = p.verified,
		.masking = p.mask ? p.masking : NULL,
		.exit_status = hook_exit_status_names[hs->kind],
		.unknown_reason = hs->kind == AGENT_EXIT_UNKNOWN ? hs->why : NULL,
		.interpretation = hs->interpretation,
	};
	rc.shell = command;
	rc.host = &host;
	r = store_allocate_id(st->store, &rc.id, err);
	if (r == 0 && *began_scope) {
		free(st->scope);
		st->scope = TAKE_PTR(*began_scope);
	}
	if (r == 0)
		r = hook_post_commit(st, &rc, &p, ret, err);
	capture_release(&out);
	capture_release(&errc);
	return r;
}

static int hook_post_tool_use(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	const char *tool = jsonutil_str(st->payload, "tool_name");

	if (!hook_is_shell_tool(st->host, tool))
		return 0;
	cleanup_free char *command = hook_command(json_object_get(st->payload, "tool_input"));
	if (!command)
		return error_set(err, EINVAL, "tool_input.command is missing or not a string");
	json_t *duration = json_object_get(st->payload, "duration_ms");
	uint64_t dur_ms = json_is_integer(duration) && json_integer_value(duration) > 0
				  ? (uint64_t)json_integer_value(duration)
				  : 0;
	cleanup_free char *run_cwd = hook_run_cwd(st);
	const char *rc_cwd = run_cwd ? run_cwd : jsonutil_str(st->payload, "cwd");
	/* The scope as it was when the host's run began: a .git the command
	 * made itself does not scope its failure. */
	cleanup_free char *began_scope = NULL;
	struct error scope_err = { 0 };
	if (rc_cwd)
		(void)gate_scope_before(rc_cwd, clock_realtime_coarse_ns() - dur_ms * 1000000,
					&began_scope, &scope_err);
	/* A routed command: its own `airlock run` wrote the receipt. Only the
	 * exact text pre-tool-use writes counts (this airlock, this state
	 * directory, the scope), so anything else records here. */
	if (hook_is_own_routed(st, command, began_scope)) {
		ret->routed_skip = true;
		outcome_set(ret, HOOK_PASS, "airlock: routed; its `airlock run` recorded it.");
		return 0;
	}
	int r = hook_load_policy(st, err);
	if (r == 0)
		r = hook_load_rules(st, err);
	if (r < 0)
		return r;
	return hook_post_record(st, command, rc_cwd, dur_ms, &began_scope, ret, err);
}

/* gate/stop/<session key>.json remembers how often this session's stop was
 * blocked for its newest open failure. */
static int hook_stop(struct hook_state *st, struct hook_outcome *ret, struct error *err)
{
	if (st->open.n == 0)
		return 0;
	json_int_t newest = (json_int_t)st->open.v[0].receipt;
	const char *session = jsonutil_str(st->payload, "session_id");
	struct statepath name = statepath_gate_stop(session ? session : "");

	json_int_t blocks = 0;
	cleanup_free char *text = NULL;
	size_t n;
	struct error ignored;
	if (file_read_capped(store_dir_fd(st->store), name.s, 4096, &text, &n, &ignored) == 0) {
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
	if (mkdirat(store_dir_fd(st->store), STATEPATH_GATE, 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create gate directory");
	if (mkdirat(store_dir_fd(st->store), STATEPATH_GATE_STOP, 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create " STATEPATH_GATE_STOP);
	cleanup_close int dir_fd = openat(store_dir_fd(st->store), STATEPATH_GATE_STOP,
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open " STATEPATH_GATE_STOP);
	cleanup_with(json_decrefp) json_t *rec =
		json_pack("{s:I, s:I}", "failure", newest, "blocks", blocks + 1);
	cleanup_free char *line = rec ? jsonutil_dump_line(rec) : NULL;
	const char *base = name.s + strlen(STATEPATH_GATE_STOP "/");
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.%d.new", base, (int)getpid());
	(void)unlinkat(dir_fd, tmp, 0);
	/* Best effort: losing a count only lets one more block through. */
	if (line && file_write_atomic(dir_fd, tmp, line, strlen(line), 0600, false, &ignored) == 0)
		(void)renameat(dir_fd, tmp, dir_fd, base);
	outcome_set(ret, HOOK_BLOCK, "%s", open);
	return 0;
}

void hook_outcome_release(struct hook_outcome *o)
{
	json_decref(o->updated_input);
	o->updated_input = NULL;
}

int hook_handle(struct session *s, const struct hook_route *route, const struct agent_host *host,
		enum hook_event event, const char *payload, size_t n, struct hook_outcome *ret,
		struct error *err)
{
	static const struct hook_route never = { 0 };
	cleanup_with(hook_state_release) struct hook_state st = { .session = s,
								  .route = route ? route : &never,
								  .host = host };
	json_error_t jerr;

	*ret = (struct hook_outcome){ .decision = HOOK_PASS };
	cleanup_with(json_decrefp) json_t *doc = json_loadb(payload, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc))
		return error_set(err, EINVAL, "the hook payload is not a JSON object (%s at byte %d)",
				 doc ? "not an object" : jerr.text, jerr.position);
	int r = agenthost_read_payload(host, doc, &st.payload, err);
	if (r < 0)
		return r;
	snprintf(ret->event_name, sizeof(ret->event_name), "%s",
		 jstr_or(st.payload, "hook_event_name", ""));
	r = s->policy_path ? hook_load_policy(&st, err) : 0;
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
		r = hook_list_open(&st, err);
		return r < 0 ? r : hook_stop(&st, ret, err);
	}
	return error_set(err, EINVAL, "unknown hook event");
}

int hook_open_failures(struct session *s, const char *payload, size_t n, size_t *ret,
		       char *ret_describe, size_t size, struct error *err)
{
	static const struct hook_route never = { 0 };
	cleanup_with(hook_state_release) struct hook_state st = { .session = s, .route = &never };
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
	if (r == 0)
		r = hook_list_open(&st, err);
	if (r < 0)
		return r;
	*ret = st.open.n;
	if (*ret > 0) {
		hook_describe_open(&st, ret_describe, size);
		hook_message_for_terminal(ret_describe, size);
	}
	return 0;
}

int hook_report_status(const struct agent_host *host, const char *payload, size_t n, int *ret_kind,
		       int *ret_code, struct error *err)
{
	json_error_t jerr;
	cleanup_with(json_decrefp) json_t *doc = json_loadb(payload, n, JSON_REJECT_DUPLICATES, &jerr);
	cleanup_with(json_decrefp) json_t *read = NULL;
	struct agent_exit hs;

	if (!json_is_object(doc))
		return error_set(err, EINVAL, "the hook payload is not a JSON object");
	int r = agenthost_read_payload(host, doc, &read, err);
	if (r < 0)
		return r;
	host->exit_status(read, &hs);
	*ret_kind = (int)hs.kind;
	*ret_code = hs.code;
	return 0;
}

int hook_gate_argv(struct session *s, const char *cwd, char *const *argv, uint64_t fixes,
		   struct hook_outcome *ret, struct error *err)
{
	static const struct hook_route never = { 0 };
	cleanup_with(hook_state_release) struct hook_state st = { .session = s, .route = &never };
	cleanup_with(hook_shell_release) struct hook_shell sh = { 0 };
	char id_text[24];

	*ret = (struct hook_outcome){ .decision = HOOK_PASS };
	st.payload = json_object();
	if (!st.payload || (cwd && json_object_set_new(st.payload, "cwd", json_string(cwd)) < 0))
		return error_set(err, ENOMEM, "out of memory");
	int r = s->policy_path ? hook_load_policy(&st, err) : 0;
	if (r == 0)
		r = hook_open_state(&st, false, err);
	if (r == 0)
		r = hook_load_gate(&st, err);
	if (r == 0)
		r = hook_list_open(&st, err);
	if (r == 0)
		r = hook_load_rules(&st, err);
	if (r < 0)
		return r;
	rules_classify(st.rules, argv, &sh.v);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)fixes);
	bool exempt = fixes && hook_is_open_id(&st, id_text);
	r = hook_shell_refuse(&st, &sh, exempt, ret, err);
	return r < 0 ? r : 0;
}

int hook_gate_permit(struct session *s, struct store *store, uint64_t id, struct hook_outcome *ret,
		     struct error *err)
{
	cleanup_with(gate_status_release) struct gate_status st = { 0 };
	struct error ignored = { 0 };
	struct permit p;

	*ret = (struct hook_outcome){ .decision = HOOK_PASS };
	if (permit_load(store, id, &p, &ignored) < 0)
		return 0; /* permit_exec's to refuse, with its own words */
	int r = p.approval ? 0 : gate_status(s, p.workspace, &st, err);
	if (r == 0 && !p.approval && st.open.n > 0)
		outcome_set(ret, HOOK_BLOCK,
			    "airlock receipt %" PRIu64 " is an open failure in %s: permit %" PRIu64
			    " changes that workspace, so it is not applied while the failure is open. It closes when the same command succeeds again, when a run with fixes=%" PRIu64
			    " exits 0 and the failed command, which airlock then re-runs, succeeds, or when the human acknowledges it (airlock ack %" PRIu64
			    ", in their terminal).",
			    st.open.v[0].receipt, st.scope, id, st.open.v[0].receipt,
			    st.open.v[0].receipt);
	else if (r == 0 && !p.approval && st.mirror_conflict[0])
		outcome_set(ret, HOOK_BLOCK, "airlock: permit %" PRIu64 " is not applied: %s", id,
			    st.mirror_conflict);
	permit_release(&p);
	return r;
}

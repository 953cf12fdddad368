/* SPDX-License-Identifier: MIT */
/* `airlock run [OPTIONS] -- CMD [ARG...]` and `airlock job [OPTIONS] FILE|-`:
 * translate the command line into a struct run_request, hand it to core, and
 * print the outcome. Bad input is not an early exit: it becomes an invalid
 * request, so the attempt still leaves a receipt. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/agents/agenthost.h"
#include "core/host/hostview.h"
#include "core/run/job.h"
#include "core/run/run.h"
#include "core/session/session.h"
#include "core/store/remotes.h"

#define JOB_MAX_BYTES (4 << 20)

extern char **environ;

/* What the command line says beyond the request itself. */
struct run_cli {
	struct run_request req;
	const char *state_dir, *policy_path; /* for the session */
	bool json;
	bool tee;
	bool dryrun; /* --expect takes path patterns, not exit statuses */
	bool routed; /* --routed: the host's shell tool shows the output as is */
};

enum {
	OPT_CWD = 0x100,
	OPT_TIMEOUT,
	OPT_KILL_AFTER,
	OPT_ENV,
	OPT_ENV_FORCE,
	OPT_EXPECT,
	OPT_JOB_ID,
	OPT_WHY,
	OPT_JSON,
	OPT_TEE,
	OPT_SPILL,
	OPT_STATE_DIR,
	OPT_POLICY,
	OPT_SANDBOX,
	OPT_WORKSPACE,
	OPT_NET,
	OPT_FIXES,
	OPT_EXPECT_EXIT,
	OPT_EXPECT_DELETE,
	OPT_ALLOW_WORKSPACE,
	OPT_ROUTED,
	OPT_HELP,
};

static const struct option run_options[] = {
	{ "cwd", required_argument, NULL, OPT_CWD },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "env-force", required_argument, NULL, OPT_ENV_FORCE },
	{ "expect", required_argument, NULL, OPT_EXPECT },
	{ "job-id", required_argument, NULL, OPT_JOB_ID },
	{ "why", required_argument, NULL, OPT_WHY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "tee", no_argument, NULL, OPT_TEE },
	{ "spill", no_argument, NULL, OPT_SPILL },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "sandbox", required_argument, NULL, OPT_SANDBOX },
	{ "workspace", required_argument, NULL, OPT_WORKSPACE },
	{ "net", required_argument, NULL, OPT_NET },
	{ "fixes", required_argument, NULL, OPT_FIXES },
	{ "expect-exit", required_argument, NULL, OPT_EXPECT_EXIT },
	{ "expect-delete", required_argument, NULL, OPT_EXPECT_DELETE },
	{ "allow-workspace", required_argument, NULL, OPT_ALLOW_WORKSPACE },
	{ "routed", required_argument, NULL, OPT_ROUTED },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

/* Options that only make sense with an argv on the command line. */
static bool option_is_run_only(int opt)
{
	return opt == OPT_CWD || opt == OPT_TIMEOUT || opt == OPT_KILL_AFTER || opt == OPT_ENV ||
	       opt == OPT_EXPECT || opt == OPT_EXPECT_EXIT || opt == OPT_JOB_ID || opt == OPT_WHY ||
	       opt == OPT_ROUTED;
}

static int parse_expect(struct run_request *req, const char *arg)
{
	cleanup_free char *copy = strdup(arg);
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	req->n_expected = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (req->n_expected == RUN_MAX_EXPECTED)
			return -E2BIG;
		int r = parse_int(tok, 0, 255, &req->expected[req->n_expected]);
		if (r < 0)
			return r;
		req->n_expected++;
	}
	return req->n_expected ? 0 : -EINVAL;
}

static int replace_string(char **slot, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

/* run_cli_apply(): the options whose values are parsed; a bad value marks
 * the request invalid. */
static int run_cli_apply_parsed(struct run_cli *cli, int opt, const char *arg)
{
	struct run_request *req = &cli->req;
	const struct agent_host *routed_host;
	uint64_t ms;
	int r = 0;

	switch (opt) {
	case OPT_TIMEOUT:
		if (parse_duration_ms(arg, &ms) < 0 || ms == 0)
			run_request_set_invalid(req,
						"--timeout '%.100s' is not a positive duration (e.g. 30s, 500ms)",
						arg);
		req->timeout_ms = ms;
		req->has_timeout = true;
		break;
	case OPT_KILL_AFTER:
		if (parse_duration_ms(arg, &ms) < 0)
			run_request_set_invalid(req,
						"--kill-after '%.100s' is not a duration (e.g. 2s)",
						arg);
		req->kill_after_ms = ms;
		req->has_kill_after = true;
		break;
	case OPT_EXPECT:
		if (cli->dryrun) {
			r = strv_push(&req->expect_paths, arg);
			break;
		}
		/* in run and job, --expect names exit statuses */
		__attribute__((fallthrough));
	case OPT_EXPECT_EXIT:
		if (parse_expect(req, arg) < 0)
			run_request_set_invalid(req,
						"--expect '%.100s' must list exit statuses 0-255, like 0 or 0,1",
						arg);
		break;
	case OPT_ROUTED:
		/* A host's pre-tool-use hook put this run in place of its shell
		 * tool's (docs/gate.md, "Routing"): the output goes through as it
		 * comes, and stdout carries nothing of airlock's. */
		if (agenthost_from_string(arg, &routed_host, &(struct error){ 0 }) == 0)
			req->source = routed_host->routed_source;
		else
			run_request_set_invalid(req, "--routed '%.100s' must be %s", arg,
						agenthost_names(false));
		cli->routed = true;
		cli->tee = true;
		/* The hook judged the scope of its cwd: a run directory
		 * swapped since then (Gemini's dir_path) is refused here. */
		req->cwd_in_workspace = true;
		break;
	case OPT_SANDBOX:
		if (strcmp(arg, "default") == 0)
			req->sandbox_profile = "default";
		else if (strcmp(arg, "none") == 0)
			req->sandbox_profile = "none";
		else
			run_request_set_invalid(req, "--sandbox '%.100s' must be default or none", arg);
		break;
	case OPT_ALLOW_WORKSPACE:
		if (hostview_parse_allow(arg, &req->allow_workspace) < 0)
			run_request_set_invalid(req,
						"--allow-workspace '%.100s' must be home, system or home,system",
						arg);
		break;
	case OPT_EXPECT_DELETE:
		if (!cli->dryrun)
			run_request_set_invalid(req,
						"--expect-delete is for dry runs: airlock dryrun --expect-delete PATTERN -- CMD");
		else
			r = strv_push(&req->expect_delete, arg);
		break;
	case OPT_FIXES:
		if (parse_u64(arg, &req->fixes) < 0 || req->fixes == 0)
			run_request_set_invalid(req, "--fixes '%.100s' must be a receipt id", arg);
		break;
	case OPT_NET:
		if (strcmp(arg, "host") != 0 && strcmp(arg, "none") != 0)
			run_request_set_invalid(req,
						"--net '%.100s' must be none (loopback only) or host",
						arg);
		req->share_net = strcmp(arg, "host") == 0;
		break;
	}
	return r;
}

/* Applies one option; a bad value marks the request invalid. */
static void run_cli_apply(struct run_cli *cli, int opt, const char *arg)
{
	struct run_request *req = &cli->req;
	int r = 0;

	switch (opt) {
	case OPT_CWD:
		r = replace_string(&req->cwd, arg);
		break;
	case OPT_ENV:
		r = strv_push(&req->env_allow, arg);
		break;
	case OPT_ENV_FORCE:
		r = strv_push(&req->env_force, arg);
		break;
	case OPT_JOB_ID:
		r = replace_string(&req->job_id, arg);
		break;
	case OPT_WHY:
		r = replace_string(&req->rationale, arg);
		break;
	case OPT_JSON:
		cli->json = true;
		break;
	case OPT_TEE:
		cli->tee = true;
		break;
	case OPT_SPILL:
		req->spill = true;
		break;
	case OPT_STATE_DIR:
		cli->state_dir = arg;
		break;
	case OPT_POLICY:
		cli->policy_path = arg;
		break;
	case OPT_WORKSPACE:
		r = replace_string(&req->workspace, arg);
		break;
	default:
		r = run_cli_apply_parsed(cli, opt, arg);
		break;
	}
	if (r < 0)
		run_request_set_invalid(req, "out of memory");
}

static void print_run_usage(FILE *f, const char *name)
{
	if (strcmp(name, "dryrun") == 0)
		fputs("usage: airlock dryrun [RUN OPTIONS] [--expect PATTERN]... [--expect-delete PATTERN]...\n"
		      "                      [--expect-exit N[,N...]] -- CMD [ARG...]\n"
		      "runs CMD on a snapshot of the workspace and prints what it changed\n",
		      f);
	else if (strcmp(name, "job") == 0)
		fputs("usage: airlock job [--json] [--tee] [--spill] [--env-force NAME] [--state-dir DIR]\n"
		      "                   [--policy FILE] [--sandbox default|none] [--workspace DIR]\n"
		      "                   [--net none|host] [--allow-workspace home|system] FILE|-\n",
		      f);
	else
		fprintf(f,
			"usage: airlock run [--cwd DIR] [--timeout DUR] [--kill-after DUR] [--env NAME]...\n"
			"                   [--env-force NAME]... [--expect N[,N...]] [--job-id ID] [--why TEXT]\n"
			"                   [--json] [--tee] [--spill] [--state-dir DIR] [--policy FILE]\n"
			"                   [--sandbox default|none] [--workspace DIR] [--net none|host]\n"
			"                   [--allow-workspace home|system] [--fixes ID]\n"
			"                   [--routed %s] -- CMD [ARG...]\n",
			agenthost_names(true));
}

/* Parses options up to the command; returns the index of its first word,
 * or -1 when --help was asked for. */
static int run_cli_parse(struct run_cli *cli, int argc, char **argv, bool is_job)
{
	opterr = 0;
	optind = 1;
	for (;;) {
		int prev = optind;
		int opt = getopt_long(argc, argv, "+h", run_options, NULL);
		if (opt == -1)
			break;
		if (opt == 'h' || opt == OPT_HELP)
			return -1;
		if (opt == '?' || opt == ':') {
			const char *word = argv[prev] ? argv[prev] : "?";
			if (optopt && optopt < 0x100)
				run_request_set_invalid(&cli->req, "unknown option '-%c'", optopt);
			else
				run_request_set_invalid(&cli->req,
							"bad option '%.100s' (unknown, or missing its value)",
							word);
			continue;
		}
		if (is_job && option_is_run_only(opt)) {
			run_request_set_invalid(&cli->req,
						"option '%.100s' does not apply to a job file; put it in the job",
						argv[prev]);
			continue;
		}
		run_cli_apply(cli, opt, optarg ? optarg : "");
	}
	return optind;
}

static void print_outcome(const struct run_cli *cli, const struct run_outcome *o, int status)
{
	if (o->message[0])
		cli_error("receipt %llu: %s: %s", (unsigned long long)o->id,
			  receipt_status_to_string(o->status), o->message);
	if (o->warning[0])
		cli_error("warning: %s", o->warning);
	if (o->gate_note[0])
		cli_error("receipt %llu closes no failure: %s", (unsigned long long)o->id,
			  o->gate_note);
	if (cli->routed) {
		/* nothing: the agent reads stdout as the command's own */
	} else if (cli->json) {
		json_dumpf(o->receipt, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		/* The seed logger's line, extended: one JSON object, fixed keys. */
		printf("{\"receipt\":%llu,\"exit\":%d,\"bytes\":%llu,\"timed_out\":%s,"
		       "\"match_expected\":%s,\"status\":\"%s\",\"failure_opened\":%s,\"closes\":[",
		       (unsigned long long)o->id, status, (unsigned long long)o->output_bytes,
		       o->timed_out ? "true" : "false", o->match_expected ? "true" : "false",
		       receipt_status_to_string(o->status), o->failure_opened ? "true" : "false");
		for (size_t i = 0; i < o->n_closes; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)o->closes[i]);
		printf("]}\n");
	}
	fflush(stdout);
}

static const char *change_label(const char *change)
{
	static const struct {
		const char *change, *label;
	} labels[] = {
		{ "created", "new" },
		{ "modified", "modified" },
		{ "deleted", "deleted" },
		{ "renamed", "renamed" },
		{ "type_changed", "typechange" },
		{ "mode_changed", "mode" },
		{ "xattrs_changed", "xattrs" },
		{ "owner_changed", "owner" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++)
		if (strcmp(labels[i].change, change) == 0)
			return labels[i].label;
	return change;
}

/* An octal mode as a reviewer reads it: "644", "4755". */
static const char *mode_shown(const char *mode)
{
	return mode && strlen(mode) == 4 && mode[0] == '0' ? mode + 1 : mode;
}

/* " (OLD -> NEW bytes, mode OLD -> NEW)": the sizes of a file, and a mode
 * that changed with the content or the type, so that every mode change is
 * shown for review. A symlink has no mode of its own to show. */
static void print_size_and_mode(json_t *c)
{
	json_t *size = json_object_get(c, "size"), *old_size = json_object_get(c, "old_size");
	const char *mode = json_string_value(json_object_get(c, "mode"));
	const char *old_mode = json_string_value(json_object_get(c, "old_mode"));
	const char *type = json_string_value(json_object_get(c, "type"));
	const char *old_type = json_string_value(json_object_get(c, "old_type"));
	bool sized = json_is_integer(size);

	if (sized && json_is_integer(old_size))
		cli_print(" (%lld -> %lld bytes", (long long)json_integer_value(old_size),
			  (long long)json_integer_value(size));
	else if (sized)
		cli_print(" (%lld bytes", (long long)json_integer_value(size));
	if (mode && old_mode && !(type && !strcmp(type, "symlink")) &&
	    !(old_type && !strcmp(old_type, "symlink"))) {
		cli_print("%smode %s -> %s", sized ? ", " : " (", mode_shown(old_mode),
			  mode_shown(mode));
		sized = true;
	}
	if (sized)
		cli_print(")");
}

/* " [also b, d/c, 2 names outside the workspace]": the other names of a
 * hard-link group whose shared inode a mode or attribute change reaches
 * (also_names, also_outside), so that every mode change is shown for
 * review under every name it changes. */
static void print_also(json_t *c)
{
	json_t *names = json_object_get(c, "also_names"),
	       *outside = json_object_get(c, "also_outside");
	size_t k;
	json_t *name;

	if (json_array_size(names) == 0 && !json_is_integer(outside))
		return;
	cli_print(" [also");
	json_array_foreach(names, k, name)
		cli_print("%s %s", k ? "," : "", json_string_value(json_object_get(name, "path")));
	if (json_is_integer(outside))
		cli_print("%s %lld name%s outside the workspace", json_array_size(names) ? "," : "",
			  (long long)json_integer_value(outside),
			  json_integer_value(outside) == 1 ? "" : "s");
	cli_print("]");
}

/* One line of print_dryrun(): change c. */
static void print_dryrun_change(json_t *c)
{
	const char *change = json_string_value(json_object_get(c, "change"));
	const char *path = json_string_value(json_object_get(c, "path"));
	const char *type = json_string_value(json_object_get(c, "type"));
	cli_print("  %-11s %s%s", change_label(change), path,
		  type && strcmp(type, "dir") == 0 ? "/" : "");
	if (strcmp(change, "renamed") == 0)
		cli_print(" (from %s)", json_string_value(json_object_get(c, "from")));
	else if (strcmp(change, "mode_changed") == 0)
		cli_print(" (%s -> %s)", json_string_value(json_object_get(c, "old_mode")),
			  json_string_value(json_object_get(c, "mode")));
	else if (strcmp(change, "xattrs_changed") != 0 && strcmp(change, "owner_changed") != 0)
		print_size_and_mode(c);
	if (json_is_integer(json_object_get(c, "old_uid")))
		cli_print(" (owner %lld:%lld -> %lld:%lld)",
			  (long long)json_integer_value(json_object_get(c, "old_uid")),
			  (long long)json_integer_value(json_object_get(c, "old_gid")),
			  (long long)json_integer_value(json_object_get(c, "uid")),
			  (long long)json_integer_value(json_object_get(c, "gid")));
	if (json_is_string(json_object_get(c, "link_to")))
		cli_print(" [hard link of %s]", json_string_value(json_object_get(c, "link_to")));
	else if (json_is_true(json_object_get(c, "link_split")))
		cli_print(" [a new inode: leaves its hard-link group]");
	print_also(c);
	if (json_is_string(json_object_get(c, "refused")))
		cli_print(" [mode %s, %s: never applied]",
			  json_string_value(json_object_get(c, "mode")),
			  json_string_value(json_object_get(c, "refused")));
	cli_print("\n");
}

/* One problem of print_dryrun(), c, as its line. */
static void print_dryrun_problem(json_t *c)
{
	const char *unexpected = json_string_value(json_object_get(c, "unexpected"));
	const char *refused = json_string_value(json_object_get(c, "refused"));
	const char *host_code = json_string_value(json_object_get(c, "host_code"));
	const char *unchecked = json_string_value(json_object_get(c, "host_code_unchecked"));
	const char *hint = json_string_value(json_object_get(c, "hint"));
	const char *cs_error = json_string_value(json_object_get(c, "changeset_error"));
	const char *needs = json_string_value(json_object_get(c, "needs_privilege"));
	const char *setid = json_string_value(json_object_get(c, "refused_setid"));
	if (setid)
		cli_print("  refused set-id request: %s (%lld times); the real run may have made a set-id file, never applied\n",
			  setid, (long long)json_integer_value(json_object_get(c, "count")));
	else if (needs)
		cli_print("  root's real run would do what the quarantine cannot: %s (%lld times); not applied\n",
			  strcmp(needs, "device_node") == 0 ? "make a device node"
			  : strcmp(needs, "xattr") == 0 ? "set a trusted.* attribute or a file capability"
							: needs,
			  (long long)json_integer_value(json_object_get(c, "count")));
	else if (refused)
		cli_print("  refused, %s: %s (%s)\n", json_string_value(json_object_get(c, "reason")),
			  refused, json_string_value(json_object_get(c, "change")));
	else if (unexpected)
		cli_print("  not declared: %s (%s)\n", unexpected,
			  json_string_value(json_object_get(c, "change")));
	else if (host_code)
		cli_print("  would run code on the host: %s (%s)\n", host_code,
			  json_string_value(json_object_get(c, "kind")));
	else if (unchecked)
		cli_print("  not checked for code for the host: %s\n", unchecked);
	else if (hint)
		cli_print("  %s\n", hint);
	else if (cs_error)
		cli_print("  the change set could not be read: %s\n", cs_error);
	else if (json_is_string(json_object_get(c, "link_group")))
		cli_print("  hard-link group not reproduced: %s (%s)\n",
			  json_string_value(json_object_get(c, "link_group")),
			  json_string_value(json_object_get(c, "reason")));
	else if (json_object_get(c, "outside_write"))
		return; /* listed above, with the other attempts */
	else if (json_is_string(json_object_get(c, "setid_written")))
		cli_print("  set-id file written, then removed or moved: %s (root's real run keeps the "
			  "bit on a write, the snapshot cannot); never applied\n",
			  json_string_value(json_object_get(c, "setid_written")));
	else if (json_is_string(json_object_get(c, "rename_incomplete")))
		cli_print("  directory rename not finished: %s is still there (the snapshot copies a "
			  "renamed directory and could not remove the source; the real rename leaves "
			  "only the new name)\n",
			  json_string_value(json_object_get(c, "rename_incomplete")));
	else if (json_object_get(c, "dropped") && json_object_get(c, "attrs_lost"))
		cli_print("  attributes lost: %lld more copies\n",
			  (long long)json_integer_value(json_object_get(c, "dropped")));
	else if (json_object_get(c, "attrs_lost")) {
		cli_print("  attributes lost: %s, a copy of %s without",
			  json_string_value(json_object_get(c, "attrs_lost")),
			  json_string_value(json_object_get(c, "from")));
		size_t k;
		json_t *name;
		json_array_foreach(json_object_get(c, "names"), k, name)
			cli_print("%s %s", k ? "," : "", json_string_value(name));
		cli_print(" (the snapshot copies a renamed directory; the real rename keeps them)\n");
	} else
		cli_print("  declared, but nothing changed there: %s\n",
			  json_string_value(json_object_get(c, "missing")));
}

/* Like `git status`: one line per change, then the problems. */
static void print_dryrun(const struct run_outcome *o)
{
	json_t *dr = json_object_get(o->receipt, "dryrun");
	json_t *changes = json_object_get(dr, "changes");
	size_t i;
	json_t *c;

	const char *verdict = dryrun_verdict_name(o->verdict);
	cli_print("dry run %llu: %s\n", (unsigned long long)o->id, verdict ? verdict : "?");
	json_array_foreach(changes, i, c)
		print_dryrun_change(c);
	if (json_is_true(json_object_get(dr, "truncated")))
		cli_print("  ... %lld changes in all: the receipt's dryrun.changes has the first %zu\n",
			  (long long)json_integer_value(json_object_get(dr, "total")),
			  json_array_size(changes));
	json_int_t scratch =
		json_integer_value(json_object_get(json_object_get(dr, "scratch"), "entries"));
	if (scratch > 0)
		cli_print("  scratch space: %lld objects left in the private /tmp (%lld bytes), gone with the snapshot\n",
			  (long long)scratch,
			  (long long)json_integer_value(
				  json_object_get(json_object_get(dr, "scratch"), "bytes")));
	json_array_foreach(json_object_get(dr, "outside_writes"), i, c)
		cli_print("  outside the workspace, refused: %s (%s, %lld times)\n",
			  json_string_value(json_object_get(c, "path")),
			  json_string_value(json_object_get(c, "syscall")),
			  (long long)json_integer_value(json_object_get(c, "count")));
	json_array_foreach(json_object_get(dr, "problems"), i, c)
		print_dryrun_problem(c);
}

static int run_cli_execute(struct run_cli *cli)
{
	struct run_outcome outcome = { 0 };
	struct error err = { 0 };

	cleanup_with(session_free) struct session session = { 0 };
	if (session_open(&session,
			 &(struct session_options){ .state_dir = cli->state_dir, .environ_ = environ },
			 &err) < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (cli->tee) {
		cli->req.tee_stdout_fd = STDOUT_FILENO;
		cli->req.tee_stderr_fd = STDERR_FILENO;
		fflush(stdout);
	}
	int r = run_execute(&(struct run_context){ .session = &session, .policy_path = cli->policy_path },
			    &cli->req, &outcome, &err);
	if (r < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	int status = exit_status_for_receipt(outcome.status, outcome.exit_code, outcome.signal);
	if (cli->dryrun) {
		status = exit_status_for_dryrun_verdict(outcome.verdict, status);
		if (outcome.message[0])
			cli_error("receipt %llu: %s: %s", (unsigned long long)outcome.id,
				  receipt_status_to_string(outcome.status), outcome.message);
		if (cli->json) {
			json_dumpf(outcome.receipt, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
		} else {
			print_dryrun(&outcome);
		}
		fflush(stdout);
	} else {
		/* A success that left code for the host is not one (docs/exit-codes.md). */
		if (outcome.host_code_failed && status == EXIT_OK)
			status = EXIT_HOST_CODE;
		print_outcome(cli, &outcome, status);
		/* A fix that passed is followed by the re-run of the failure it
		 * names; the re-run's status is the answer (docs/gate.md). */
		if (outcome.rerun) {
			const struct run_outcome *re = outcome.rerun;
			int rerun_status =
				exit_status_for_receipt(re->status, re->exit_code, re->signal);
			if (re->host_code_failed && rerun_status == EXIT_OK)
				rerun_status = EXIT_HOST_CODE;
			print_outcome(cli, re, rerun_status);
			if (status == EXIT_OK)
				status = rerun_status;
		}
	}
	run_outcome_release(&outcome);
	/* The receipt is committed: a configured mirror gets it from a
	 * detached pusher; the run does not wait for the network. */
	if (session.store) {
		fflush(NULL);
		remotes_push_background(session.store);
	}
	return status;
}

/* run and dryrun: options, then the command. */
static int run_cli_main(int argc, char **argv, const char *name, bool dryrun)
{
	struct run_cli cli = { .dryrun = dryrun };
	run_request_init(&cli.req);
	if (dryrun) {
		cli.req.source = "dryrun";
		cli.req.dryrun = true;
	}

	int first = run_cli_parse(&cli, argc, argv, false);
	if (first < 0) {
		print_run_usage(stdout, name);
		run_request_release(&cli.req);
		return EXIT_OK;
	}
	for (int i = first; i < argc; i++)
		if (strv_push(&cli.req.argv, argv[i]) < 0)
			run_request_set_invalid(&cli.req, "out of memory");
	if (first >= argc)
		run_request_set_invalid(&cli.req,
					"no command given: airlock %s [OPTIONS] -- CMD [ARG...]",
					name);

	int status = run_cli_execute(&cli);
	run_request_release(&cli.req);
	return status;
}

int cmd_dryrun(int argc, char **argv)
{
	return run_cli_main(argc, argv, "dryrun", true);
}

int cmd_run(int argc, char **argv)
{
	return run_cli_main(argc, argv, "run", false);
}

static void job_read(struct run_request *req, const char *path)
{
	cleanup_free char *text = NULL;
	size_t n = 0;
	struct error err = { 0 };
	int r = strcmp(path, "-") == 0
			? fd_read_capped(STDIN_FILENO, JOB_MAX_BYTES, &text, &n, &err)
			: file_read_capped(AT_FDCWD, path, JOB_MAX_BYTES, &text, &n, &err);

	req->source = "job";
	if (r < 0) {
		run_request_set_invalid(req, "job file '%.200s': %s", path, err.msg);
		return;
	}
	if (job_parse(text, n, req, &err) < 0)
		run_request_set_invalid(req, "%s", err.msg);
}

int cmd_job(int argc, char **argv)
{
	struct run_cli cli = { 0 };
	run_request_init(&cli.req);
	cli.req.source = "job";

	int first = run_cli_parse(&cli, argc, argv, true);
	if (first < 0) {
		print_run_usage(stdout, "job");
		run_request_release(&cli.req);
		return EXIT_OK;
	}
	if (argc - first != 1)
		run_request_set_invalid(&cli.req,
					"expected one job file (or - for stdin), got %d arguments",
					argc - first);
	else
		job_read(&cli.req, argv[first]);

	int status = run_cli_execute(&cli);
	run_request_release(&cli.req);
	return status;
}

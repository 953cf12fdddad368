/* SPDX-License-Identifier: MIT */
/* `airlock hook DIALECT EVENT`: the front end of core/hook/hook.c. Hosts let the
 * tool run when a hook exits with anything but 2, times out, crashes or
 * prints bad JSON, so every failure of airlock's own here becomes an
 * explicit block: exit 2 with the reason on stderr, never exit 1. A broken
 * invocation is not airlock's failure but its configuration's: see
 * hook_usage_error(). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/hook/hook.h"

#define HOOK_DEADLINE_SECONDS 8 /* under every host's hook timeout */

static const char crash_message[] =
	"airlock hook: internal failure (crash or deadline); blocking, because the host would "
	"otherwise run the tool unchecked\n";

/* Async-signal-safe: a fixed message and _exit(2). */
static void hook_fatal_signal(int sig)
{
	(void)sig;
	(void)!write(STDERR_FILENO, crash_message, sizeof(crash_message) - 1);
	_exit(EXIT_GATE_BLOCKED);
}

static void hook_arm_fail_closed(void)
{
	static const int signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM };
	struct sigaction sa = { .sa_handler = hook_fatal_signal };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		sigaction(signals[i], &sa, NULL);
	alarm(HOOK_DEADLINE_SECONDS);
}

static int hook_block(const char *what, const char *detail)
{
	fflush(stdout);
	fprintf(stderr, "airlock hook: %s%s", what, detail);
	fputs("; blocking, because the host would otherwise run the tool unchecked\n", stderr);
	return EXIT_GATE_BLOCKED;
}

static void print_json(json_t *doc)
{
	if (doc)
		json_dumpf(doc, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(doc);
}

static int hook_reply(enum agenthost host, enum hook_event event,
		      const struct hook_outcome *o)
{
	const char *event_name = o->event_name[0] ? o->event_name
				 : event == HOOK_PRE_TOOL_USE  ? "PreToolUse"
				 : event == HOOK_POST_TOOL_USE ? "PostToolUse"
							       : "Stop";
	if (o->decision == HOOK_BLOCK && event != HOOK_STOP) {
		/* Exit 2 with the reason on stderr blocks in all three hosts. */
		fprintf(stderr, "%s\n", o->message);
		return EXIT_GATE_BLOCKED;
	}
	if (o->decision == HOOK_BLOCK) {
		print_json(json_pack("{s:s, s:s}", "decision", host == AGENTHOST_GEMINI ? "deny" : "block",
				     "reason", o->message));
		return EXIT_OK;
	}
	/* A routed command: the tool's input replaced (docs/gate.md, "Routing").
	 * Claude Code takes updatedInput as is; Codex 0.171 only with
	 * permissionDecision "allow" (else it fails the hook); Gemini CLI merges
	 * tool_input into the call's arguments. */
	if (o->updated_input) {
		json_t *input = json_incref(o->updated_input);
		if (host == AGENTHOST_CLAUDE)
			print_json(json_pack("{s:{s:s, s:o, s:s}}", "hookSpecificOutput", "hookEventName",
					     event_name, "updatedInput", input, "additionalContext",
					     o->message));
		else if (host == AGENTHOST_CODEX)
			print_json(json_pack("{s:{s:s, s:s, s:o}}", "hookSpecificOutput", "hookEventName",
					     "PreToolUse", "permissionDecision", "allow", "updatedInput",
					     input));
		else
			print_json(json_pack("{s:{s:s, s:o}}", "hookSpecificOutput", "hookEventName",
					     "BeforeTool", "tool_input", input));
		return EXIT_OK;
	}
	/* A pass. Codex treats any field it does not know as a failed hook, so
	 * it gets nothing; Gemini expects an object. */
	if (host == AGENTHOST_CODEX)
		return EXIT_OK;
	if (host == AGENTHOST_GEMINI || !o->message[0] || event == HOOK_STOP) {
		print_json(json_object());
		return EXIT_OK;
	}
	print_json(json_pack("{s:{s:s, s:s}}", "hookSpecificOutput", "hookEventName", event_name,
			     "additionalContext", o->message));
	return EXIT_OK;
}

/* A broken invocation: a bad option, a dialect or event airlock does not
 * know. The hook's configuration is wrong, and a block (exit 2) would stop
 * every tool call until a human fixes it, while exit 1 lets the tool run
 * in every host (with stderr shown as a warning). So: with no failure open
 * in the payload's scope, warn in one line and let it run (exit 1); while
 * one is open, block (exit 2), so that a broken hook never lets a command
 * through an open failure. Not knowing whether one is open is a block. */
static int hook_usage_error(const struct hook_context *ctx, const char *what, const char *detail)
{
	static const char usage[] =
		"airlock hook claude|codex|gemini pre-tool-use|post-tool-use|stop [--state-dir DIR] [--policy FILE]";
	cleanup_free char *payload = NULL;
	size_t n = 0, open = 0;
	struct error err = { 0 };
	char describe[4096] = "";

	if (fd_read_capped(STDIN_FILENO, HOOK_MAX_PAYLOAD, &payload, &n, &err) < 0 ||
	    hook_open_failures(ctx, payload, n, &open, describe, sizeof(describe), &err) < 0) {
		fprintf(stderr, "airlock hook: %s%s (usage: %s), and whether a failure is open is not known (%s); blocking\n",
			what, detail, usage, err.msg);
		return EXIT_GATE_BLOCKED;
	}
	if (open > 0) {
		fprintf(stderr, "airlock hook: %s%s (usage: %s); blocking, because a failure is open: %s\n",
			what, detail, usage, describe);
		return EXIT_GATE_BLOCKED;
	}
	fprintf(stderr, "airlock hook: %s%s (usage: %s); no failure is open, so the tool runs unchecked: fix the hook (`airlock install --check HOST`)\n",
		what, detail, usage);
	return EXIT_HOOK_MISCONFIGURED;
}

int cmd_hook(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "no-route", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct hook_context ctx = { .environ_ = environ };
	bool route = true;
	int opt;

	hook_arm_fail_closed();
	opterr = 0;
	optind = 1;
	/* Options anywhere (the documented order puts --state-dir last);
	 * getopt_long() permutes the operands to the end. */
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctx.state_dir = optarg;
			break;
		case 'p':
			ctx.policy_path = optarg;
			break;
		case 'n':
			route = false;
			break;
		case 'h':
			puts("usage: airlock hook claude|codex|gemini pre-tool-use|post-tool-use|stop [--state-dir DIR] [--policy FILE] [--no-route]\n"
			     "reads the host's hook payload (JSON) on stdin");
			return EXIT_OK;
		default:
			/* getopt stopped at the bad word: a --state-dir after it
			 * still names the directory to look in. */
			for (int i = optind; i < argc; i++) {
				if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
					ctx.state_dir = argv[i + 1];
				else if (strncmp(argv[i], "--state-dir=", 12) == 0)
					ctx.state_dir = argv[i] + 12;
			}
			return hook_usage_error(&ctx, "bad option ", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return hook_usage_error(&ctx, "wrong number of operands", "");
	const char *d = argv[optind], *e = argv[optind + 1];
	enum agenthost host;
	enum hook_event event;
	struct error err = { 0 };
	if (agenthost_from_string(d, &host, &err) < 0)
		return hook_usage_error(&ctx, "unknown dialect (claude, codex or gemini): ", d);
	if (strcmp(e, "pre-tool-use") == 0 || strcmp(e, "before-tool") == 0)
		event = HOOK_PRE_TOOL_USE;
	else if (strcmp(e, "post-tool-use") == 0 || strcmp(e, "after-tool") == 0)
		event = HOOK_POST_TOOL_USE;
	else if (strcmp(e, "stop") == 0 || strcmp(e, "after-agent") == 0)
		event = HOOK_STOP;
	else
		return hook_usage_error(&ctx, "unknown event (pre-tool-use, post-tool-use or stop): ", e);

	/* Routing names this very program by its absolute path, so the routed
	 * command does not depend on the agent's PATH. */
	cleanup_free char *self = route ? realpath("/proc/self/exe", NULL) : NULL;
	if (route && !self)
		return hook_block("cannot find airlock's own path to route commands: ", strerror(errno));
	ctx.route_airlock = self;
	cleanup_free char *payload = NULL;
	size_t n = 0;
	if (fd_read_capped(STDIN_FILENO, HOOK_MAX_PAYLOAD, &payload, &n, &err) < 0)
		return hook_block("cannot read the payload: ", err.msg);
	struct hook_outcome outcome;
	if (hook_handle(&ctx, host, event, payload, n, &outcome, &err) < 0)
		return hook_block("", err.msg);
	int status = hook_reply(host, event, &outcome);
	hook_outcome_release(&outcome);
	fflush(stdout);
	if (ferror(stdout))
		return hook_block("cannot write the reply", "");
	return status;
}

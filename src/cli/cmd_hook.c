/* SPDX-License-Identifier: MIT */
/* `airlock hook DIALECT EVENT`: the front end of core/hook.c. Hosts let the
 * tool run when a hook exits with anything but 2, times out, crashes or
 * prints bad JSON, so every failure of airlock's own here becomes an
 * explicit block: exit 2 with the reason on stderr, never exit 1. */
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
#include "core/hook.h"

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

static int hook_reply(enum hook_dialect dialect, enum hook_event event,
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
		print_json(json_pack("{s:s, s:s}", "decision", dialect == HOOK_GEMINI ? "deny" : "block",
				     "reason", o->message));
		return EXIT_OK;
	}
	/* A pass. Codex treats any field it does not know as a failed hook, so
	 * it gets nothing; Gemini expects an object. */
	if (dialect == HOOK_CODEX)
		return EXIT_OK;
	if (dialect == HOOK_GEMINI || !o->message[0] || event == HOOK_STOP) {
		print_json(json_object());
		return EXIT_OK;
	}
	print_json(json_pack("{s:{s:s, s:s}}", "hookSpecificOutput", "hookEventName", event_name,
			     "additionalContext", o->message));
	return EXIT_OK;
}

int cmd_hook(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct hook_context ctx = { .environ_ = environ };
	int opt;

	hook_arm_fail_closed();
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctx.state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock hook claude|codex|gemini pre-tool-use|post-tool-use|stop [--state-dir DIR]\n"
			     "reads the host's hook payload (JSON) on stdin");
			return EXIT_OK;
		default:
			return hook_block("bad option ", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return hook_block("usage: airlock hook DIALECT EVENT", "");
	const char *d = argv[optind], *e = argv[optind + 1];
	enum hook_dialect dialect;
	enum hook_event event;
	if (strcmp(d, "claude") == 0)
		dialect = HOOK_CLAUDE;
	else if (strcmp(d, "codex") == 0)
		dialect = HOOK_CODEX;
	else if (strcmp(d, "gemini") == 0)
		dialect = HOOK_GEMINI;
	else
		return hook_block("unknown dialect (claude, codex or gemini): ", d);
	if (strcmp(e, "pre-tool-use") == 0 || strcmp(e, "before-tool") == 0)
		event = HOOK_PRE_TOOL_USE;
	else if (strcmp(e, "post-tool-use") == 0 || strcmp(e, "after-tool") == 0)
		event = HOOK_POST_TOOL_USE;
	else if (strcmp(e, "stop") == 0 || strcmp(e, "after-agent") == 0)
		event = HOOK_STOP;
	else
		return hook_block("unknown event (pre-tool-use, post-tool-use or stop): ", e);

	cleanup_free char *payload = NULL;
	size_t n = 0;
	struct error err = { 0 };
	if (fd_read_capped(STDIN_FILENO, HOOK_MAX_PAYLOAD, &payload, &n, &err) < 0)
		return hook_block("cannot read the payload: ", err.msg);
	struct hook_outcome outcome;
	if (hook_handle(&ctx, dialect, event, payload, n, &outcome, &err) < 0)
		return hook_block("", err.msg);
	int status = hook_reply(dialect, event, &outcome);
	fflush(stdout);
	if (ferror(stdout))
		return hook_block("cannot write the reply", "");
	return status;
}

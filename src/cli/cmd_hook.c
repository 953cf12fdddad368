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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/hook/hook.h"
#include "core/session/session.h"

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

/* Routing names this very program by its absolute path, so the routed
 * command does not depend on the agent's PATH. Found when a command is
 * first routed (struct hook_route's find), not for every call: realpath()
 * of /proc/self/exe is seven readlink()s. Not found, the call blocks. */
static const char *hook_self(void)
{
	static char *self;

	if (!self && !(self = realpath("/proc/self/exe", NULL)))
		exit(hook_block("cannot find airlock's own path to route commands: ", strerror(errno)));
	return self;
}

/* The outcome in the host's dialect (its reply writer): stdout, stderr and
 * the exit status. */
static int hook_reply(const struct agent_host *host, enum hook_event event,
		      const struct hook_outcome *o)
{
	const struct agent_decision d = {
		.event = (enum agent_event)event,
		.block = o->decision == HOOK_BLOCK,
		.message = o->message,
		.event_name = o->event_name,
		.updated_input = o->updated_input,
	};
	struct agent_reply reply = { 0 };

	if (host->reply(&d, &reply) < 0)
		return hook_block("cannot write the reply", ": out of memory");
	if (reply.stderr_text)
		fprintf(stderr, "%s\n", reply.stderr_text);
	if (reply.print) {
		/* One write() of the line, not stdio: stdout's buffer would be
		 * set up (an allocation, fstat(), ioctl()) for this one line.
		 * Errors ignored, as stdio's were: the host reads what it gets. */
		cleanup_free char *text = reply.doc ? json_dumps(reply.doc, JSON_COMPACT) : strdup("");
		cleanup_free char *line = text ? malloc(strlen(text) + 2) : NULL;
		if (!line) {
			json_decref(reply.doc);
			return hook_block("cannot write the reply", ": out of memory");
		}
		size_t n = strlen(text);
		memcpy(line, text, n);
		line[n++] = '\n';
		(void)!fd_write_all(STDOUT_FILENO, line, n);
	}
	json_decref(reply.doc);
	return reply.exit_status;
}

/* A broken invocation: a bad option, a dialect or event airlock does not
 * know. The hook's configuration is wrong, and a block (exit 2) would stop
 * every tool call until a human fixes it, while exit 1 lets the tool run
 * in every host (with stderr shown as a warning). So: with no failure open
 * in the payload's scope, warn in one line and let it run (exit 1); while
 * one is open, block (exit 2), so that a broken hook never lets a command
 * through an open failure. Not knowing whether one is open is a block. */
static int hook_usage_error(const struct session_options *so, const char *what, const char *detail)
{
	cleanup_with(session_free) struct session s = { 0 };
	char usage[512];
	cleanup_free char *payload = NULL;
	size_t n = 0, open = 0;
	struct error err = { 0 };
	char describe[4096] = "";

	snprintf(usage, sizeof(usage),
		 "airlock hook %s pre-tool-use|post-tool-use|stop [--state-dir DIR] [--policy FILE]",
		 agenthost_names(true));

	if (fd_read_capped(STDIN_FILENO, HOOK_MAX_PAYLOAD, &payload, &n, &err) < 0 ||
	    session_open(&s, so, &err) < 0 ||
	    hook_open_failures(&s, payload, n, &open, describe, sizeof(describe), &err) < 0) {
		fprintf(stderr,
			"airlock hook: %s%s (usage: %s), and whether a failure is open is not known (%s); blocking\n",
			what, detail, usage, err.msg);
		return EXIT_GATE_BLOCKED;
	}
	if (open > 0) {
		fprintf(stderr,
			"airlock hook: %s%s (usage: %s); blocking, because a failure is open: %s\n",
			what, detail, usage, describe);
		return EXIT_GATE_BLOCKED;
	}
	fprintf(stderr,
		"airlock hook: %s%s (usage: %s); no failure is open, so the tool runs unchecked: fix the hook (`airlock install --check HOST`)\n",
		what, detail, usage);
	return EXIT_HOOK_MISCONFIGURED;
}

/* The options into *so and *route: -1 to go on (the operands from optind),
 * else the exit status. */
static int hook_parse(int argc, char **argv, struct session_options *so, bool *route)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "no-route", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	opterr = 0;
	optind = 1;
	/* Options anywhere (the documented order puts --state-dir last);
	 * getopt_long() permutes the operands to the end. */
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			so->state_dir = optarg;
			break;
		case 'p':
			so->policy_path = optarg;
			break;
		case 'n':
			*route = false;
			break;
		case 'h':
			printf("usage: airlock hook %s pre-tool-use|post-tool-use|stop [--state-dir DIR] [--policy FILE] [--no-route]\n"
			       "reads the host's hook payload (JSON) on stdin\n",
			       agenthost_names(true));
			return EXIT_OK;
		default:
			/* getopt stopped at the bad word: a --state-dir after it
			 * still names the directory to look in. */
			for (int i = optind; i < argc; i++) {
				if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
					so->state_dir = argv[i + 1];
				else if (strncmp(argv[i], "--state-dir=", 12) == 0)
					so->state_dir = argv[i] + 12;
			}
			return hook_usage_error(so, "bad option ", argv[optind - 1]);
		}
	}
	return -1;
}

int cmd_hook(int argc, char **argv)
{
	struct session_options so = { .environ_ = environ };
	bool route = true;

	hook_arm_fail_closed();
	int status = hook_parse(argc, argv, &so, &route);
	if (status >= 0)
		return status;
	if (argc - optind != 2)
		return hook_usage_error(&so, "wrong number of operands", "");
	const char *d = argv[optind], *e = argv[optind + 1];
	const struct agent_host *host = agenthost_find(d);
	enum hook_event event;
	struct error err = { 0 };
	char unknown[300];
	if (!host) {
		snprintf(unknown, sizeof(unknown), "unknown dialect (%s): ", agenthost_names(false));
		return hook_usage_error(&so, unknown, d);
	}
	if (strcmp(e, "pre-tool-use") == 0 || strcmp(e, "before-tool") == 0)
		event = HOOK_PRE_TOOL_USE;
	else if (strcmp(e, "post-tool-use") == 0 || strcmp(e, "after-tool") == 0)
		event = HOOK_POST_TOOL_USE;
	else if (strcmp(e, "stop") == 0 || strcmp(e, "after-agent") == 0)
		event = HOOK_STOP;
	else
		return hook_usage_error(&so,
					"unknown event (pre-tool-use, post-tool-use or stop): ", e);

	const struct hook_route rt = { .find = route ? hook_self : NULL,
				       .state_dir = so.state_dir != NULL };
	cleanup_free char *payload = NULL;
	size_t n = 0;
	if (fd_read_capped(STDIN_FILENO, HOOK_MAX_PAYLOAD, &payload, &n, &err) < 0)
		return hook_block("cannot read the payload: ", err.msg);
	cleanup_with(session_free) struct session s = { 0 };
	if (session_open(&s, &so, &err) < 0)
		return hook_block("", err.msg);
	struct hook_outcome outcome;
	if (hook_handle(&s, &rt, host, event, payload, n, &outcome, &err) < 0)
		return hook_block("", err.msg);
	status = hook_reply(host, event, &outcome);
	hook_outcome_release(&outcome);
	fflush(stdout);
	if (ferror(stdout))
		return hook_block("cannot write the reply", "");
	return status;
}

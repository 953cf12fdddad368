/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/text.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/agents/agenthost.h"
#include "version.h"

/* Prints fmt's text on f through text_for_terminal(); nothing when memory
 * runs out, rather than the text unchecked. */
static void cli_vprint(FILE *f, const char *fmt, va_list ap) _printf_(2, 0);
static void cli_vprint(FILE *f, const char *fmt, va_list ap)
{
	cleanup_free char *text = NULL;
	int n = vasprintf(&text, fmt, ap);

	if (n < 0)
		return;
	size_t len;
	cleanup_free char *safe = text_for_terminal(text, (size_t)n, &len);
	if (safe)
		fwrite(safe, 1, len, f);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("airlock: ", stderr);
	va_start(ap, fmt);
	cli_vprint(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_print(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vprint(stdout, fmt, ap);
	va_end(ap);
}

int cli_option(int argc, char **argv, const char *shortopts, const struct option *options)
{
	static char **parsing;

	if (argv != parsing) {
		parsing = argv;
		optind = 1;
	}
	opterr = 0;
	int opt = getopt_long(argc, argv, shortopts, options, NULL);
	if (opt == '?')
		cli_error("%s: bad option '%s'", argv[0], argv[optind - 1]);
	return opt;
}

bool cli_no_operands(int argc, char **argv)
{
	if (optind >= argc)
		return true;
	cli_error("%s: unexpected argument '%s'", argv[0], argv[optind]);
	return false;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* "{hosts}": the hosts' display names (the agenthost table) */
} commands[] = {
	{ "run", cmd_run, "run a command in quarantine and leave a receipt" },
	{ "job", cmd_job, "run a job file (JSON) and leave a receipt" },
	{ "dryrun", cmd_dryrun, "run a command on a snapshot of the workspace; print its change set" },
	{ "apply", cmd_apply, "put a dry run's change set into the real workspace" },
	{ "rollback", cmd_rollback, "undo an applied dry run" },
	{ "discard", cmd_discard, "drop a dry run that was not applied" },
	{ "gc", cmd_gc, "remove old dry runs and their backups" },
	{ "receipts", cmd_receipts, "list receipts" },
	{ "show", cmd_show, "print a receipt, or page through its output" },
	{ "doctor", cmd_doctor, "check every layer of the quarantine on this host" },
	{ "gate", cmd_gate, "exit 2 while a failure is open in this workspace" },
	{ "ack", cmd_ack, "acknowledge an open failure (read-only, or with the approver)" },
	{ "approver", cmd_approver, "enrol the human approver (init) or show it" },
	{ "policy", cmd_policy, "approve a policy file that widens the built-in one, or check one" },
	{ "classify", cmd_classify, "print a command's risk level 1-5 and the rule that decided" },
	{ "hook", cmd_hook, "answer a {hosts} hook on stdin" },
	{ "permit", cmd_permit,
	  "a model's proposed command earns execution: propose, dryrun, approve, exec" },
	{ "ledger", cmd_ledger, "verify the signed record of every receipt and decision; prove entries" },
	{ "install", cmd_install, "put airlock's hooks into the settings of {hosts}" },
	{ "witness", cmd_witness, "serve a witness that cosigns ledger checkpoints" },
	{ "report", cmd_report, "write the runs, failures, permits and ledger as one HTML page" },
	{ "fleet", cmd_fleet,
	  "list runs, open failures, permits and approvals of every host of a mirror" },
	{ "mcp", cmd_mcp, "serve the Model Context Protocol on stdin/stdout (docs/mcp.md)" },
};

static void print_usage(FILE *f)
{
	fputs("usage: airlock COMMAND [OPTIONS]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const char *s = commands[i].summary, *hosts = strstr(s, "{hosts}");
		fprintf(f, "  %-10s %.*s%s%s\n", commands[i].name,
			hosts ? (int)(hosts - s) : (int)strlen(s), s,
			hosts ? agenthost_displays() : "", hosts ? hosts + strlen("{hosts}") : "");
	}
	fputs("\n'airlock COMMAND --help' shows a command's options; man airlock has the rest.\n", f);
}

/* Descriptors 0-2 must exist before any file is opened, or a pipe could land
 * on one of them and be clobbered when the command's stdio is set up. */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
			_exit(EXIT_AIRLOCK_ERROR);
}

/* jansson seeds its hash tables (against collisions an input could force)
 * when it first makes an object, from /dev/urandom: an open, a read and a
 * close in every command (a hook's call among them). One getrandom() reads
 * the same kernel generator; when it cannot, jansson seeds itself. */
static void seed_json(void)
{
	uint32_t seed = 0;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed) && seed)
		json_object_seed(seed);
}

int main(int argc, char **argv)
{
	ensure_std_fds();
	seed_json();
	/* A closed reader of --tee output must not kill the supervisor. */
	signal(SIGPIPE, SIG_IGN);

	if (argc < 2) {
		print_usage(stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		print_usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("airlock %s\n", AIRLOCK_VERSION);
		if (AIRLOCK_TEST_HOOKS)
			printf("test hooks: AIRLOCK_TEST_CRASH_AFTER, AIRLOCK_TEST_PERMIT_CRASH (not a release build)\n");
		return EXIT_OK;
	}
	if (strcmp(argv[1], "__netproxy") == 0) /* a run's own helper, not in the usage */
		return cmd_netproxy(argc - 1, argv + 1);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	cli_error("unknown command '%s' (try 'airlock --help')", argv[1]);
	return EXIT_AIRLOCK_ERROR;
}

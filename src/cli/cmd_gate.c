/* SPDX-License-Identifier: MIT */
/* `airlock gate`, `ack`, `approver` and `classify`: the front ends of
 * core/gate/gate.c, core/gate/approver.c and core/policy/rules.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/parse.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/gate/approver.h"
#include "core/gate/gate.h"
#include "core/gate/status.h"
#include "core/policy/rules.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "core/store/store.h"

extern char **environ;

#define GATE_SHOW_MAX 10

int cli_read_secret(const char *prompt, char *buf, size_t size)
{
	cleanup_close int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios saved, quiet;

	if (fd < 0)
		return -ENXIO;
	bool echo_off = tcgetattr(fd, &saved) == 0;
	if (echo_off) {
		quiet = saved;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		/* TCSANOW: input typed ahead of the prompt is kept, not flushed. */
		echo_off = tcsetattr(fd, TCSANOW, &quiet) == 0;
	}
	(void)!write(fd, prompt, strlen(prompt));
	size_t n = 0;
	int r = 0;
	for (;;) {
		char c;
		ssize_t got = read(fd, &c, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || c == '\n' || c == '\r')
			break;
		if (n + 1 >= size) {
			r = -E2BIG;
			continue;
		}
		buf[n++] = c;
	}
	buf[n] = '\0';
	if (echo_off)
		tcsetattr(fd, TCSANOW, &saved);
	(void)!write(fd, "\n", 1);
	return r;
}

static void print_words(const char *const *argv)
{
	for (size_t i = 0; argv && argv[i]; i++) {
		const char *s = argv[i];
		bool plain = *s && strpbrk(s, " \t\n'\"\\$`*?;&|<>()") == NULL;
		cli_print(i ? " %s%s%s" : "%s%s%s", plain ? "" : "'", s, plain ? "" : "'");
	}
}

static void print_failure(const struct gate_failure *e)
{
	unsigned long long id = (unsigned long long)e->receipt;
	const char *status = e->status;
	const char *cwd = e->cwd;
	const char *shell = e->shell;
	const char *tail = e->tail;

	cli_print("receipt %llu is an open failure\n  command: ", id);
	if (shell)
		cli_print("%s (a shell string the host ran)", shell);
	else
		print_words(e->argv);
	cli_print("\n  cwd:     %s\n  status:  %s", cwd ? cwd : "?", status ? status : "?");
	if (e->has_exit_code)
		cli_print(", exit %lld", (long long)e->exit_code);
	cli_print(", expected ");
	for (size_t i = 0; i < e->n_expected_exits; i++)
		cli_print(i ? ",%lld" : "%lld", (long long)e->expected_exits[i]);
	if (e->damaged)
		cli_print("\n  (its gate entry is damaged: %s)", e->damaged);
	const char *rejected = e->close_rejected;
	if (rejected)
		cli_print("\n  close record gate/closed/%llu.json was rejected: %s", id, rejected);
	cli_print("\n");
	if (tail && *tail) {
		cli_print("  last lines:\n");
		for (const char *line = tail; line && *line;) {
			const char *nl = strchr(line, '\n');
			int len = nl ? (int)(nl - line) : (int)strlen(line);
			cli_print("    | %.*s\n", len, line);
			line = nl ? nl + 1 : NULL;
		}
	}
	cli_print("  it closes when:\n");
	if (!shell) {
		cli_print("    - the same command succeeds again in the same cwd: airlock run -- ");
		print_words(e->argv);
		cli_print("\n");
	} else {
		cli_print("    - the host runs the same command string again and it succeeds, unmasked\n");
	}
	cli_print("    - a run naming it exits 0, and then the failed command, re-run exactly, succeeds:\n"
		  "      airlock run --fixes %llu -- CMD ...\n",
		  id);
	int64_t risk = e->risk;
	if (risk == 1)
		cli_print("    - it is acknowledged: airlock ack %llu --reason TEXT (the command is read-only)\n",
			  id);
	else if (risk > 1)
		cli_print("    - the approver acknowledges it in their own terminal: airlock ack %llu --reason TEXT\n",
			  id);
	else /* an entry without its risk: airlock ack says which applies */
		cli_print("    - it is acknowledged: airlock ack %llu --reason TEXT (with the approver unless the command was read-only)\n",
			  id);
}

int cmd_gate(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL, *cwd = NULL;
	bool json = false;
	int opt;

	while ((opt = cli_option(argc, argv, "+h", options)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'C':
			cwd = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock gate [--json] [--cwd DIR] [--state-dir DIR]\n"
			     "exits 0 when no failure is open in DIR's workspace (its git root, else DIR),\n"
			     "2 when one is, and prints the open failures");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL; /* opened here for its own message; gate_status() reuses it */
	int status = cli_session_open(&session, state_dir);
	if (status == EXIT_OK)
		status = cli_open_store(&session, &store);
	if (status != EXIT_OK)
		return status;
	struct error err = { 0 };
	cleanup_with(gate_status_release) struct gate_status st = { 0 };
	if (gate_status(&session, cwd, &st, &err) < 0) {
		cli_error("gate: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	size_t n = st.open.n;
	if (json) {
		json_t *doc = gate_status_to_json(&st);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
	} else if (n == 0) {
		cli_print("no open failure in %s\n", st.scope);
	} else {
		cli_print("%zu open failure%s in %s\n", n, n == 1 ? "" : "s", st.scope);
		for (size_t i = 0; i < n && i < GATE_SHOW_MAX; i++) {
			cli_print("\n");
			print_failure(&st.open.v[i]);
		}
		if (n > GATE_SHOW_MAX)
			cli_print("\n... and %zu more (airlock gate --json lists all)\n",
				  n - GATE_SHOW_MAX);
	}
	if (!json && st.approver.changed)
		cli_print("\napprover: %s\n", st.approver.message);
	struct remotes_status mirror;
	if (!json && store && remotes_status(store, &mirror, &err) == 0 && mirror.configured &&
	    !mirror.conflict[0] && (mirror.last_error[0] || mirror.pushed < mirror.signed_size))
		cli_print("\nledger mirror: %llu of %llu signed entries pushed%s%s\n",
			  (unsigned long long)mirror.pushed, (unsigned long long)mirror.signed_size,
			  mirror.last_error[0] ? "; last push failed: " : "", mirror.last_error);
	if (!json && st.mirror_conflict[0])
		cli_print("\nthe ledger's mirror refused a push: %s\n(the approver resolves it: `airlock ledger mirror resolve`)\n",
			  st.mirror_conflict);
	fflush(stdout);
	return n || st.mirror_conflict[0] ? EXIT_GATE_BLOCKED : EXIT_OK;
}

int cmd_ack(int argc, char **argv)
{
	static const struct option options[] = {
		{ "reason", required_argument, NULL, 'r' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL, *reason = NULL;
	uint64_t id = 0;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'r':
			reason = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock ack ID --reason TEXT [--state-dir DIR]");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind + 1 != argc || parse_u64(argv[optind], &id) < 0 || id == 0) {
		cli_error("ack: give one receipt id: airlock ack ID --reason TEXT");
		return EXIT_AIRLOCK_ERROR;
	}
	if (!reason || !*reason) {
		cli_error("ack: --reason TEXT is required: it is recorded with the close");
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	int status = cli_session_open(&session, state_dir);
	if (status == EXIT_OK)
		status = cli_open_store(&session, &store);
	if (status != EXIT_OK)
		return status;
	if (!store) {
		cli_error("ack: receipt %llu is not an open failure (no state directory)",
			  (unsigned long long)id);
		return EXIT_NOT_FOUND_ITEM;
	}
	struct rules *rules = NULL;
	struct error err = { 0 };
	if (session_rules(&session, &rules, &err) < 0) {
		cli_error("ack: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	struct gate_ack_result res;
	int r = gate_ack(store, rules, id, reason, NULL, &res, &err);
	if (r == -EACCES && res.needs_approval) {
		char passphrase[1024];
		char prompt[256];
		snprintf(prompt, sizeof(prompt),
			 "approver passphrase to acknowledge receipt %llu: ", (unsigned long long)id);
		int t = cli_read_secret(prompt, passphrase, sizeof(passphrase));
		if (t == -ENXIO) {
			cli_error("ack: %s; the passphrase is read from a terminal and there is none here",
				  err.msg);
			return EXIT_NOT_APPROVED;
		}
		err = (struct error){ 0 };
		r = t < 0 ? error_set(&err, EACCES, "the passphrase is too long")
			  : gate_ack(store, rules, id, reason, passphrase, &res, &err);
		explicit_bzero(passphrase, sizeof(passphrase));
	}
	if (r == -ENOENT) {
		cli_error("ack: %s", err.msg);
		return EXIT_NOT_FOUND_ITEM;
	}
	if (r == -EACCES) {
		cli_error("ack: %s", err.msg);
		return EXIT_NOT_APPROVED;
	}
	if (r < 0) {
		cli_error("ack: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (res.fingerprint[0])
		printf("receipt %llu closed (%s, approver %s)\n", (unsigned long long)id, res.move,
		       res.fingerprint);
	else
		printf("receipt %llu closed (%s)\n", (unsigned long long)id, res.move);
	return EXIT_OK;
}

static int approver_read_new(char *pass, size_t size)
{
	char again[1024];
	int r = cli_read_secret("new approver passphrase: ", pass, size);

	if (r == 0)
		r = cli_read_secret("the same passphrase again: ", again, sizeof(again));
	if (r == 0 && strcmp(pass, again) != 0)
		r = -EINVAL;
	explicit_bzero(again, sizeof(again));
	return r;
}

int cmd_approver(int argc, char **argv)
{
	static const struct option options[] = {
		{ "system", no_argument, NULL, 'S' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL;
	bool system = false;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'S':
			system = true;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock approver init [--system] [--state-dir DIR]\n"
			     "       airlock approver show [--state-dir DIR]");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	const char *action = optind < argc ? argv[optind] : NULL;
	if (!action || (strcmp(action, "init") != 0 && strcmp(action, "show") != 0) ||
	    optind + 1 != argc) {
		cli_error("approver: say init or show");
		return EXIT_AIRLOCK_ERROR;
	}
	struct error err = { 0 };
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	int status = cli_session_open(&session, state_dir);
	if (status != EXIT_OK)
		return status;
	if (!session.state_dir ||
	    session_store(&session, strcmp(action, "init") == 0, &store, &err) < 0) {
		cli_error("approver: %s", session.state_dir ? err.msg : "no state directory");
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(approver_release) struct approver approver = { 0 };
	char fp[20];
	if (strcmp(action, "show") == 0) {
		int r = approver_load(store, &approver, &err);
		if (r == -ENOENT) {
			printf("no approver is enrolled\n");
			return EXIT_NOT_FOUND_ITEM;
		}
		if (r < 0) {
			cli_error("approver: %s", err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		const char *created = json_string_value(json_object_get(approver.doc, "created_at"));
		printf("approver %s in %s, enrolled %s\n", approver_fingerprint(&approver, fp),
		       approver.origin, created ? created : "?");
		return EXIT_OK;
	}

	char old[1024] = "", pass[1024] = "";
	bool replacing = approver_load(store, &approver, &err) == 0 || approver_enrolled(store);
	approver_release(&approver);
	int r = 0;
	if (replacing)
		r = cli_read_secret("current approver passphrase: ", old, sizeof(old));
	if (r == 0)
		r = approver_read_new(pass, sizeof(pass));
	if (r == -ENXIO) {
		cli_error("approver: the passphrase is read from a terminal and there is none here");
		return EXIT_NOT_APPROVED;
	}
	if (r < 0) {
		cli_error("approver: %s", r == -EINVAL ? "the two passphrases differ"
						       : "the passphrase is too long");
		return EXIT_AIRLOCK_ERROR;
	}
	r = approver_enroll(store, system, pass, replacing ? old : NULL, &approver, &err);
	explicit_bzero(old, sizeof(old));
	explicit_bzero(pass, sizeof(pass));
	if (r < 0) {
		cli_error("approver: %s", err.msg);
		return r == -EACCES || r == -EEXIST ? EXIT_NOT_APPROVED : EXIT_AIRLOCK_ERROR;
	}
	printf("approver %s enrolled in %s\n", approver_fingerprint(&approver, fp), approver.origin);
	return EXIT_OK;
}

int cmd_classify(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "rules", required_argument, NULL, 'r' },
		{ "shell", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *rules_path = NULL, *shell = NULL;
	bool json = false;
	int opt;

	while ((opt = cli_option(argc, argv, "+h", options)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'r':
			rules_path = optarg;
			break;
		case 'c':
			shell = optarg;
			break;
		case 'h':
			puts("usage: airlock classify [--json] [--rules FILE] -- CMD [ARG...]\n"
			     "       airlock classify [--json] [--rules FILE] --shell 'STRING'");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!shell && optind >= argc) {
		cli_error("classify: give a command after --, or --shell STRING");
		return EXIT_AIRLOCK_ERROR;
	}
	if (shell && optind < argc) {
		cli_error("classify: give either a command or --shell, not both");
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(session_free) struct session session = { 0 };
	struct rules *rules = NULL;
	struct error err = { 0 };
	int r = session_open(&session,
			     &(struct session_options){ .rules_path = rules_path, .environ_ = environ },
			     &err);
	if (r == 0)
		r = session_rules(&session, &rules, &err);
	if (r < 0) {
		cli_error("classify: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	struct rules_verdict v;
	if (shell)
		rules_classify_shell(rules, shell, &v);
	else
		rules_classify(rules, argv + optind, &v);
	if (json) {
		json_t *doc = json_pack("{s:i, s:s, s:s, s:s}", "risk", v.risk, "level", v.level,
					"rule", v.rule, "reason", v.reason);
		json_dumpf(doc, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(doc);
	} else {
		cli_print("risk %d (%s): rule %s: %s\n", v.risk, v.level, v.rule, v.reason);
	}
	return EXIT_OK;
}

/* SPDX-License-Identifier: MIT */
/* `airlock receipts` lists attempts from the index; `airlock show` prints one
 * receipt or pages through its output. Read-only: they never create state
 * (but a receipt's missing file, a cache of the bytes its ledger entry
 * carries, is written back where it can be: docs/ledger.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/text.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/net/netdecide.h"
#include "core/session/session.h"
#include "core/store/store.h"

extern char **environ;

int cli_session_open(struct session *s, const char *state_dir)
{
	struct error err = { 0 };

	if (session_open(s, &(struct session_options){ .state_dir = state_dir, .environ_ = environ },
			 &err) < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

int cli_open_store(struct session *s, struct store **ret)
{
	struct error err = { 0 };

	int r = session_store(s, false, ret, &err);
	if (r == -ENOENT)
		return EXIT_OK;
	if (r < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

static void print_entry_row(json_t *e)
{
	json_t *exit_code = json_object_get(e, "exit_code");
	json_t *argv = json_object_get(e, "argv");
	char exit_text[16] = "-";

	if (json_is_integer(exit_code))
		snprintf(exit_text, sizeof(exit_text), "%lld",
			 (long long)json_integer_value(exit_code));
	const char *started = json_string_value(json_object_get(e, "started_at"));
	const char *status = json_string_value(json_object_get(e, "status"));
	cli_print("%-7lld %-24s %-14s %-5s %8lld  ",
		  (long long)json_integer_value(json_object_get(e, "id")), started ? started : "-",
		  status ? status : "-", exit_text,
		  (long long)json_integer_value(json_object_get(e, "duration_ms")));
	size_t i;
	json_t *arg;
	json_array_foreach(argv, i, arg) {
		const char *s = json_string_value(arg);
		bool plain = s && *s && strpbrk(s, " \t\n'\"\\$`*?;&|<>()") == NULL;
		cli_print(i ? " %s%s%s" : "%s%s%s", plain ? "" : "'", s ? s : "", plain ? "" : "'");
	}
	cli_print("\n");
}

int cmd_receipts(int argc, char **argv)
{
	static const struct option options[] = {
		{ "failed", no_argument, NULL, 'f' }, { "last", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },   { "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },   { 0 },
	};
	const char *state_dir = NULL;
	bool failed_only = false, json = false;
	uint64_t last = 0;
	int opt;

	while ((opt = cli_option(argc, argv, "+h", options)) != -1) {
		switch (opt) {
		case 'f':
			failed_only = true;
			break;
		case 'n':
			if (parse_u64(optarg, &last) < 0 || last == 0) {
				cli_error("--last '%s' must be a positive count", optarg);
				return EXIT_AIRLOCK_ERROR;
			}
			break;
		case 'j':
			json = true;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock receipts [--failed] [--last N] [--json] [--state-dir DIR]");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;

	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	int status = cli_session_open(&session, state_dir);
	if (status == EXIT_OK)
		status = cli_open_store(&session, &store);
	if (status != EXIT_OK)
		return status;
	cleanup_with(json_decrefp) json_t *list = NULL;
	size_t skipped = 0;
	struct error err = { 0 };
	if (!store)
		list = json_array(); /* no state directory yet: nothing was recorded */
	else if (store_list(store, failed_only, last, &list, &skipped, &err) < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!list) {
		cli_error("out of memory");
		return EXIT_AIRLOCK_ERROR;
	}
	if (!json)
		printf("%-7s %-24s %-14s %-5s %8s  %s\n", "ID", "STARTED", "STATUS", "EXIT", "MS",
		       "ARGV");
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		if (json) {
			json_dumpf(e, stdout, JSON_COMPACT);
			putchar('\n');
		} else {
			print_entry_row(e);
		}
	}
	if (skipped)
		cli_error("warning: skipped %zu damaged index line(s)", skipped);
	return EXIT_OK;
}

struct show_args {
	const char *state_dir;
	const char *stream; /* NULL: the whole receipt */
	uint64_t id, offset, limit;
	bool has_range;
	bool tty; /* stdout is a terminal: what is shown goes through text_for_terminal() */
};

/* Writes n bytes on stdout: as they are to a pipe or a file, so that
 * `show --stdout` gives back the exact bytes; through text_for_terminal()
 * to a terminal, which the command's output must not drive. */
static int show_write(const struct show_args *a, const char *data, size_t n)
{
	if (!a->tty)
		return fd_write_all(STDOUT_FILENO, data, n);
	size_t len;
	cleanup_free char *safe = text_for_terminal(data, n, &len);
	if (!safe)
		return -ENOMEM;
	return fd_write_all(STDOUT_FILENO, safe, len);
}

/* Pages the spilled file of a stream: bytes [offset, offset + limit). */
static int show_spill(struct store *store, const struct show_args *a, int fd)
{
	char buf[64 * 1024];
	uint64_t pos = a->offset, end = a->limit ? a->offset + a->limit : UINT64_MAX;

	while (pos < end) {
		size_t want = (size_t)MIN((uint64_t)sizeof(buf), end - pos);
		ssize_t n = pread(fd, buf, want, (off_t)pos);
		if (n < 0) {
			cli_error("cannot read spilled %s of receipt %llu in '%s': %s", a->stream,
				  (unsigned long long)a->id, store_path(store), strerror(errno));
			return EXIT_AIRLOCK_ERROR;
		}
		if (n == 0)
			break;
		/* To a terminal, a chunk ends after a newline when it has one:
		 * no escape sequence spans one, so pages read as the whole would. */
		size_t take = (size_t)n;
		const char *nl =
			a->tty && take == want && pos + take < end ? memrchr(buf, '\n', take) : NULL;
		if (nl)
			take = (size_t)(nl - buf) + 1;
		if (show_write(a, buf, take) < 0)
			return EXIT_AIRLOCK_ERROR;
		pos += (uint64_t)take;
	}
	return EXIT_OK;
}

/* Without a spill, the receipt's own text is all there is. */
static int show_kept_text(json_t *receipt, const struct show_args *a)
{
	json_t *meta = json_object_get(json_object_get(receipt, "output"), a->stream);
	const char *text = json_string_value(json_object_get(receipt, a->stream));
	size_t n = json_string_length(json_object_get(receipt, a->stream));

	if (a->has_range && json_is_true(json_object_get(meta, "truncated"))) {
		cli_error("receipt %llu kept only the head and tail of %s (%lld bytes in all); run with --spill to page through all of it",
			  (unsigned long long)a->id, a->stream,
			  (long long)json_integer_value(json_object_get(meta, "bytes")));
		return EXIT_AIRLOCK_ERROR;
	}
	if (!text)
		return EXIT_OK;
	size_t from = (size_t)MIN(a->offset, (uint64_t)n);
	size_t len = a->limit ? (size_t)MIN(a->limit, (uint64_t)(n - from)) : n - from;
	return show_write(a, text + from, len) < 0 ? EXIT_AIRLOCK_ERROR : EXIT_OK;
}

static int show_parse(int argc, char **argv, struct show_args *a)
{
	static const struct option options[] = {
		{ "stdout", no_argument, NULL, 'o' },
		{ "stderr", no_argument, NULL, 'e' },
		{ "offset", required_argument, NULL, 'f' },
		{ "limit", required_argument, NULL, 'l' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'o':
		case 'e':
			a->stream = opt == 'o' ? "stdout" : "stderr";
			break;
		case 'f':
		case 'l':
			if (parse_u64(optarg, opt == 'f' ? &a->offset : &a->limit) < 0) {
				cli_error("--%s '%s' must be a byte count",
					  opt == 'f' ? "offset" : "limit", optarg);
				return EXIT_AIRLOCK_ERROR;
			}
			a->has_range = true;
			break;
		case 's':
			a->state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock show ID [--stdout|--stderr] [--offset B] [--limit B] [--state-dir DIR]");
			return -1;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind != argc - 1 || parse_u64(argv[optind], &a->id) < 0 || a->id == 0) {
		cli_error("show: expected one receipt id (a positive number)");
		return EXIT_AIRLOCK_ERROR;
	}
	if (a->has_range && !a->stream) {
		cli_error("show: --offset and --limit page a stream; add --stdout or --stderr");
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

/* The hosts the network allowlist refused (docs/network.md), on stderr:
 * stdout is the receipt, byte for byte. */
static void show_net_denied(const char *text)
{
	cleanup_with(json_decrefp) json_t *receipt = json_loads(text, 0, NULL);
	cleanup_free char *denied =
		netdecide_denied_text(json_object_get(json_object_get(receipt, "sandbox"), "network"),
				      20);

	for (char *line = denied, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cli_error("%s", line);
	}
}

int cmd_show(int argc, char **argv)
{
	struct show_args a = { 0 };
	int status = show_parse(argc, argv, &a);
	if (status != EXIT_OK)
		return status < 0 ? EXIT_OK : status;

	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	status = cli_session_open(&session, a.state_dir);
	if (status == EXIT_OK)
		status = cli_open_store(&session, &store);
	if (status != EXIT_OK)
		return status;
	cleanup_free char *text = NULL;
	struct error err = { 0 };
	if (!store || store_read_receipt(store, a.id, &text, &err) < 0) {
		cli_error("no receipt %llu", (unsigned long long)a.id);
		return EXIT_NOT_FOUND_ITEM;
	}
	a.tty = isatty(STDOUT_FILENO);
	if (!a.stream) {
		show_net_denied(text);
		return show_write(&a, text, strlen(text)) < 0 ? EXIT_AIRLOCK_ERROR : EXIT_OK;
	}
	cleanup_close int spill_fd = -1;
	if (store_open_spill(store, a.id, a.stream, false, &spill_fd, &err) == 0)
		return show_spill(store, &a, spill_fd);
	cleanup_with(json_decrefp) json_t *receipt = json_loads(text, 0, NULL);
	if (!receipt) {
		cli_error("receipt %llu in '%s' is damaged", (unsigned long long)a.id,
			  store_path(store));
		return EXIT_AIRLOCK_ERROR;
	}
	return show_kept_text(receipt, &a);
}

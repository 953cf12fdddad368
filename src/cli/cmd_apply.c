/* SPDX-License-Identifier: MIT */
/* `airlock apply`, `rollback`, `discard` and `gc`: the front end of
 * core/snapshot/apply.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/faultpoint.h"
#include "basic/parse.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/snapshot/apply.h"
#include "core/session/session.h"
#include "core/store/store.h"

enum apply_action { APPLY, ROLLBACK, DISCARD };

/* A test build's fault point for crash safety: AIRLOCK_TEST_CRASH_AFTER=N
 * stops the process before the apply's operation N, after N of them;
 * =marked once the dry run is named under way (dryruns/.applying), before
 * its journal; =committed once its state is committed, before that name is
 * removed. A release build reads no such variable. */
static void apply_arm_faultpoints(void)
{
#if AIRLOCK_TEST_HOOKS
	const char *s = getenv("AIRLOCK_TEST_CRASH_AFTER");
	int n;
	if (s && !strcmp(s, "marked"))
		faultpoint_arm("apply.marked", 0);
	else if (s && !strcmp(s, "committed"))
		faultpoint_arm("apply.committed", 0);
	else if (s && parse_int(s, 0, 1 << 30, &n) == 0)
		faultpoint_arm("apply.operation", (unsigned)n);
#endif
}

static int apply_main(int argc, char **argv, enum apply_action action)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "allow-outside-writes", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL;
	uint64_t id = 0;
	unsigned flags = 0;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		if (opt == 's') {
			state_dir = optarg;
		} else if (opt == 'o' && action == APPLY) {
			flags |= APPLY_ALLOW_OUTSIDE_WRITES;
		} else if (opt == 'h') {
			printf("usage: airlock %s ID [--state-dir DIR]%s\n", argv[0],
			       action == APPLY ? " [--allow-outside-writes]" : "");
			return EXIT_OK;
		} else if (opt == 'o') {
			cli_error("%s: --allow-outside-writes is an option of apply", argv[0]);
			return EXIT_AIRLOCK_ERROR;
		} else {
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind + 1 != argc || parse_u64(argv[optind], &id) < 0 || id == 0) {
		cli_error("%s: give one dry run's receipt id: airlock %s ID", argv[0], argv[0]);
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
		cli_error("%s: no dry run %llu (no state directory)", argv[0], (unsigned long long)id);
		return EXIT_NOT_FOUND_ITEM;
	}
	struct error err = { 0 };
	struct apply_outcome out = { 0 };
	int r;
	if (action == APPLY) {
		apply_arm_faultpoints();
		r = apply_changes(store, id, flags, &out, &err);
	} else if (action == ROLLBACK) {
		r = apply_rollback(store, id, &out, &err);
	} else {
		r = apply_discard(store, id, &err);
	}
	if (r < 0) {
		cli_error("%s: %s", argv[0], err.msg);
		return exit_status_for_error(r);
	}
	if (action == APPLY)
		printf("dry run %llu applied: %zu operations\n", (unsigned long long)id, out.ops);
	else if (action == ROLLBACK)
		printf("dry run %llu rolled back: %zu operations undone\n", (unsigned long long)id,
		       out.ops);
	else
		printf("dry run %llu discarded\n", (unsigned long long)id);
	return EXIT_OK;
}

int cmd_apply(int argc, char **argv)
{
	return apply_main(argc, argv, APPLY);
}

int cmd_rollback(int argc, char **argv)
{
	return apply_main(argc, argv, ROLLBACK);
}

int cmd_discard(int argc, char **argv)
{
	return apply_main(argc, argv, DISCARD);
}

int cmd_gc(int argc, char **argv)
{
	static const struct option options[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "include-applied", no_argument, NULL, 'a' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL;
	uint64_t older_than_ms = 7ULL * 24 * 3600 * 1000;
	bool include_applied = false;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'o':
			if (parse_duration_ms(optarg, &older_than_ms) < 0) {
				cli_error("gc: --older-than '%s' is not a duration (e.g. 7d, 12h)",
					  optarg);
				return EXIT_AIRLOCK_ERROR;
			}
			break;
		case 'a':
			include_applied = true;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock gc [--older-than DUR] [--include-applied] [--state-dir DIR]");
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
	if (status != EXIT_OK || !store)
		return status;
	struct error err = { 0 };
	size_t removed;
	if (apply_gc(store, older_than_ms, include_applied, &removed, &err) < 0) {
		cli_error("gc: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	printf("%zu dry run%s removed\n", removed, removed == 1 ? "" : "s");
	return EXIT_OK;
}

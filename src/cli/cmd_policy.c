/* SPDX-License-Identifier: MIT */
/* `airlock policy approve|check FILE`: the front end of core/gate/policyapproval.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "basic/cleanup.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/gate/policyapproval.h"
#include "core/session/session.h"
#include "core/store/store.h"

static void policy_print_review(const struct policyapproval_review *review)
{
	size_t shown = MIN(review->n_widenings, (size_t)POLICY_MAX_WIDENINGS);

	cli_print("policy %s (sha256 %s) widens the built-in policy:\n", review->policy->origin,
		  review->policy->sha256);
	for (size_t i = 0; i < shown; i++)
		cli_print("  %s: %s%s\n", review->widenings[i].field, review->widenings[i].detail,
			  review->widenings[i].never ? " (never taken from a file)" : "");
	fflush(stdout);
}

/* check: 0 the file applies as it is (it only narrows, or is approved);
 * 1 it widens and does not apply. */
static int policy_check(struct store *store, const struct policyapproval_review *review)
{
	struct policy_denial denial;

	if (review->n_widenings == 0) {
		cli_print("policy %s only narrows the built-in policy: it applies as it is\n",
			  review->policy->origin);
		return EXIT_OK;
	}
	policy_print_review(review);
	if (!policyapproval_denies(store, review->policy, &denial)) {
		printf("approved\n");
		return EXIT_OK;
	}
	cli_print("refused: %s\n", denial.message);
	return EXIT_NOT_FOUND_ITEM;
}

static int policy_approve(struct store *store, const struct policyapproval_review *review)
{
	char fingerprint[20];
	struct error err = { 0 };

	if (review->n_widenings == 0) {
		cli_print("policy %s only narrows the built-in policy: it needs no approval\n",
			  review->policy->origin);
		return EXIT_OK;
	}
	policy_print_review(review);
	int r = policyapproval_approve(store, review, NULL, fingerprint, &err);
	if (r == 0) {
		char passphrase[1024];
		int t = cli_read_secret("approver passphrase to approve this policy: ", passphrase,
					sizeof(passphrase));
		if (t == -ENXIO) {
			cli_error("policy: approving it needs the approver (%s); the passphrase is read from a terminal and there is none here",
				  fingerprint);
			return EXIT_NOT_APPROVED;
		}
		r = t < 0 ? error_set(&err, EACCES, "the passphrase is too long")
			  : policyapproval_approve(store, review, passphrase, fingerprint, &err);
		explicit_bzero(passphrase, sizeof(passphrase));
	}
	if (r == -EACCES) {
		cli_error("policy: %s", err.msg);
		return EXIT_NOT_APPROVED;
	}
	/* -EPERM: never approvable, like an invalid file. */
	if (r < 0) {
		cli_error("policy: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cli_print("approved policy %s (sha256 %s, approver %s)\n", review->policy->origin,
		  review->policy->sha256, fingerprint);
	return EXIT_OK;
}

int cmd_policy(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			puts("usage: airlock policy approve FILE [--state-dir DIR]\n"
			     "       airlock policy check FILE [--state-dir DIR]");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	const char *action = optind < argc ? argv[optind] : NULL;
	bool approve = action && strcmp(action, "approve") == 0;
	if (!action || (!approve && strcmp(action, "check") != 0) || optind + 2 != argc) {
		cli_error("policy: say approve FILE or check FILE");
		return EXIT_AIRLOCK_ERROR;
	}
	struct error err = { 0 };
	cleanup_with(policyapproval_review_release) struct policyapproval_review review = { 0 };
	if (policyapproval_review(argv[optind + 1], &review, &err) < 0) {
		cli_error("policy: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	int status = cli_session_open(&session, state_dir);
	if (status != EXIT_OK)
		return status;
	const char *dir = session.state_dir;
	if (!dir || session_store(&session, approve, &store, &err) < 0) {
		if (!approve && dir && err.code == ENOENT)
			return policy_check(NULL, &review);
		cli_error("policy: %s", dir ? err.msg : "no state directory");
		return EXIT_AIRLOCK_ERROR;
	}
	return approve ? policy_approve(store, &review) : policy_check(store, &review);
}

/* SPDX-License-Identifier: MIT */
/* airlock ledger push|mirror init|set|show|unset|resolve (docs/ledger.md,
 * "The mirror"). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/cleanup.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/gate/approver.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "core/store/store.h"
#include "ledger/pgmirror.h"

static const char mirror_usage[] =
	"usage: airlock ledger push [--state-dir DIR]\n"
	"       airlock ledger mirror init CONNINFO\n"
	"       airlock ledger mirror set CONNINFO [--host NAME] [--state-dir DIR]\n"
	"       airlock ledger mirror show|unset|resolve [--state-dir DIR]\n";

struct mirror_options {
	const char *state_dir, *host;
	bool background;
};

static int mirror_store(struct session *session, const struct mirror_options *o, bool create,
			struct store **ret)
{
	struct error err = { 0 };
	int status = cli_session_open(session, o->state_dir);
	if (status != EXIT_OK)
		return status;
	if (!session->state_dir) {
		cli_error("no state directory: set AIRLOCK_STATE_DIR, XDG_STATE_HOME or HOME, or pass --state-dir");
		return EXIT_AIRLOCK_ERROR;
	}
	int r = session_store(session, create, ret, &err);
	if (r == -ENOENT) {
		*ret = NULL; /* no state directory: nothing configured, nothing to push */
		return EXIT_OK;
	}
	if (r < 0) {
		cli_error("ledger: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

static int mirror_push(struct store *store, bool background)
{
	struct error err = { 0 };
	int r = background ? remotes_push_pending(store, &err) : remotes_push(store, &err);
	if (r < 0) {
		cli_error("%s", err.msg);
		return r == -EEXIST || r == -EBADMSG ? EXIT_LEDGER_TAMPERED : EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

static int mirror_show(struct store *store)
{
	struct remotes_status st;
	struct remotes_mirror cfg = { 0 };
	struct error err = { 0 };

	if (remotes_status(store, &st, &err) < 0) {
		cli_error("ledger mirror show: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (st.configured && remotes_mirror_get(store, &cfg, &err) < 0) {
		cli_error("ledger mirror show: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	json_t *doc =
		json_pack("{s:b, s:s?, s:s?, s:I, s:I, s:s?, s:s?, s:s?}", "configured",
			  st.configured, "conninfo", cfg.conninfo, "host", cfg.host, "signed_size",
			  (json_int_t)st.signed_size, "pushed", (json_int_t)st.pushed, "last_push",
			  st.last_time[0] ? st.last_time : NULL, "last_error",
			  st.last_error[0] ? st.last_error : NULL, "conflict",
			  st.conflict[0] ? st.conflict : NULL);
	remotes_mirror_release(&cfg);
	cleanup_free char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!text)
		return EXIT_AIRLOCK_ERROR;
	puts(text);
	return EXIT_OK;
}

/* The approver closes a conflict: its passphrase, like any approval. */
static int mirror_resolve(struct store *store)
{
	struct remotes_status st;
	struct error err = { 0 };
	if (remotes_status(store, &st, &err) < 0) {
		cli_error("ledger mirror resolve: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!st.conflict[0]) {
		cli_error("ledger mirror resolve: no conflict with the mirror is open");
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(approver_release) struct approver approver = { 0 };
	if (approver_load_in_effect(store, &approver, &err) < 0) {
		cli_error("ledger mirror resolve: %s", err.msg);
		return EXIT_NOT_APPROVED;
	}
	char pass[1024];
	int t = cli_read_secret("approver passphrase to resolve the conflict with the mirror: ", pass,
				sizeof(pass));
	if (t == -ENXIO) {
		cli_error("ledger mirror resolve: the passphrase is read from a terminal and there is none here");
		return EXIT_NOT_APPROVED;
	}
	json_t *approval = NULL;
	char message[700];
	snprintf(message, sizeof(message), "airlock.mirror-resolve/1 %s", st.conflict);
	int r = t < 0 ? error_set(&err, EACCES, "the passphrase is too long")
		      : approver_sign(&approver, pass, message, &approval, &err);
	explicit_bzero(pass, sizeof(pass));
	json_decref(approval);
	if (r < 0) {
		cli_error("ledger mirror resolve: %s", err.msg);
		return EXIT_NOT_APPROVED;
	}
	if (remotes_conflict_resolve(store, &err) < 0) {
		cli_error("ledger mirror resolve: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cli_print("the conflict with the mirror is resolved: %s\n", st.conflict);
	return EXIT_OK;
}

static int mirror_main(const char *sub, char **operand, int operands, struct mirror_options *o)
{
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	struct error err = { 0 };
	bool known = strcmp(sub, "init") == 0 || strcmp(sub, "set") == 0 || strcmp(sub, "show") == 0 ||
		     strcmp(sub, "unset") == 0 || strcmp(sub, "resolve") == 0;
	bool wants =
		strcmp(sub, "init") == 0 || strcmp(sub, "set") == 0 ? operands == 1 : operands == 0;
	if (!known || !wants) {
		cli_error("ledger mirror: %s '%s'",
			  known ? "wrong operands for" : "unknown subcommand", sub);
		fputs(mirror_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	if (strcmp(sub, "init") == 0) {
		int from;
		if (pgmirror_init(operand[0], &from, &err) < 0) {
			cli_error("ledger %s", err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		if (from > 0)
			printf("mirror schema version %d applied (migrated from version %d)\n",
			       PGMIRROR_SCHEMA_VERSION, from);
		else
			printf("mirror schema version %d %s\n", PGMIRROR_SCHEMA_VERSION,
			       from < 0 ? "applied" : "present already");
		return EXIT_OK;
	}
	int status = mirror_store(&session, o, strcmp(sub, "set") == 0, &store);
	if (status != EXIT_OK)
		return status;
	if (!store && strcmp(sub, "show") == 0) {
		puts("{\"configured\":false}");
		return EXIT_OK;
	}
	if (!store && strcmp(sub, "resolve") == 0) {
		cli_error("ledger mirror resolve: no conflict with the mirror is open");
		return EXIT_AIRLOCK_ERROR;
	}
	if (!store)
		return EXIT_OK; /* unset: nothing was set */
	if (strcmp(sub, "show") == 0)
		return mirror_show(store);
	if (strcmp(sub, "resolve") == 0)
		return mirror_resolve(store);
	int r = strcmp(sub, "set") == 0 ? remotes_mirror_set(store, operand[0], o->host, &err)
					: remotes_mirror_unset(store, &err);
	if (r < 0) {
		cli_error("ledger mirror %s: %s", sub, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

int cmd_ledger_remote(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "host", required_argument, NULL, 'H' },
		{ "background", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct mirror_options o = { 0 };
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 's':
			o.state_dir = optarg;
			break;
		case 'H':
			o.host = optarg;
			break;
		case 'b':
			o.background = true;
			break;
		case 'h':
			fputs(mirror_usage, stdout);
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind >= argc) {
		fputs(mirror_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	const char *sub = argv[optind++];
	if (strcmp(sub, "push") == 0) {
		if (!cli_no_operands(argc, argv))
			return EXIT_AIRLOCK_ERROR;
		cleanup_with(session_free) struct session session = { 0 };
		struct store *store = NULL;
		int status = mirror_store(&session, &o, false, &store);
		return status != EXIT_OK || !store ? status : mirror_push(store, o.background);
	}
	if (strcmp(sub, "mirror") != 0 || optind >= argc) {
		fputs(mirror_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	sub = argv[optind++];
	return mirror_main(sub, argv + optind, argc - optind, &o);
}

/* SPDX-License-Identifier: MIT */
/* airlock ledger key|checkpoint|verify|recover|prove|consistency|verify-proof
 * (docs/ledger.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/store/ledger.h"
#include "core/store/remotes.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "core/store/store.h"
#include "ledger/witness.h"

#define LEDGER_FILE_MAX (1 << 20)

static const char ledger_usage[] =
	"usage: airlock ledger key [--state-dir DIR]\n"
	"       airlock ledger checkpoint [--state-dir DIR]\n"
	"       airlock ledger verify --key FILE|--policy FILE [--checkpoint FILE] [--state-dir DIR]\n"
	"       airlock ledger push [--state-dir DIR]\n"
	"       airlock ledger witness add NAME URL VKEY | list | remove NAME [--state-dir DIR]\n"
	"       airlock ledger recover [--state-dir DIR]\n"
	"       airlock ledger prove INDEX|KIND:ID [--state-dir DIR]\n"
	"       airlock ledger consistency OLD [NEW] [--state-dir DIR]\n"
	"       airlock ledger verify-proof --key FILE [--old FILE] [--record FILE] PROOF|-\n"
	"       airlock ledger mirror init|set|show|unset|resolve ... (`airlock ledger mirror --help`)\n";

static int ledger_read_file(const char *path, char **ret, size_t *ret_n)
{
	struct error err = { 0 };
	int r = strcmp(path, "-") == 0
			? fd_read_capped(STDIN_FILENO, LEDGER_FILE_MAX, ret, ret_n, &err)
			: file_read_capped(AT_FDCWD, path, LEDGER_FILE_MAX, ret, ret_n, &err);
	if (r < 0)
		cli_error("ledger: %s: %s", path, err.msg);
	return r;
}

/* The verifier key, from a file that is not inside the state directory:
 * whoever can rewrite the state directory could replace a key kept there. */
static int ledger_load_vkey(const char *path, const char *state_dir, struct ledger_vkey *ret)
{
	cleanup_free char *text = NULL;
	size_t n;
	struct error err = { 0 };

	if (state_dir) {
		cleanup_free char *real_key = realpath(path, NULL);
		cleanup_free char *real_state = realpath(state_dir, NULL);
		size_t k = real_state ? strlen(real_state) : 0;
		if (real_key && real_state && strncmp(real_key, real_state, k) == 0 &&
		    (real_key[k] == '/' || real_key[k] == '\0')) {
			cli_error("ledger: the key %s is inside the state directory; give a copy kept elsewhere (`airlock ledger key > FILE`)",
				  path);
			return -EPERM;
		}
	}
	if (ledger_read_file(path, &text, &n) < 0)
		return -EINVAL;
	if (ledger_vkey_parse(text, ret, &err) < 0) {
		cli_error("ledger: %s: %s", path, err.msg);
		return -EINVAL;
	}
	return 0;
}

static const char *const finding_names[] = {
	[LEDGER_FINDING_TAMPERED] = "TAMPERED", [LEDGER_FINDING_DIFFERS] = "DIFFERS",
	[LEDGER_FINDING_MISSING] = "MISSING",	[LEDGER_FINDING_UNBACKED] = "UNBACKED",
	[LEDGER_FINDING_TORN] = "TORN",
};

/* The policy file (kept outside the state directory, as the key), parsed. */
static int ledger_load_policy(const char *path, const char *state_dir, struct witness_policy *ret)
{
	cleanup_free char *real_path = realpath(path, NULL);
	cleanup_free char *real_state = realpath(state_dir, NULL);
	size_t k = real_state ? strlen(real_state) : 0;
	if (real_path && real_state && strncmp(real_path, real_state, k) == 0 &&
	    (real_path[k] == '/' || real_path[k] == '\0')) {
		cli_error("ledger verify: the policy %s is inside the state directory; keep it elsewhere",
			  path);
		return -EPERM;
	}
	cleanup_free char *text = NULL;
	size_t n;
	struct error err = { 0 };
	if (ledger_read_file(path, &text, &n) < 0)
		return -EINVAL;
	if (witness_policy_parse(text, n, ret, &err) < 0) {
		cli_error("ledger verify: %s: %s", path, err.msg);
		return -EINVAL;
	}
	return 0;
}

/* The latest checkpoint and the cosignatures kept beside it against the
 * policy: true when its quorum is met; the one-line reason printed when not. */
static bool ledger_check_quorum(struct store *store, const struct witness_policy *p, size_t *ret_n_valid)
{
	cleanup_free char *cp = NULL;
	cleanup_strv char **lines = NULL;
	size_t cp_n, n_lines;
	struct error err = { 0 };

	struct ledger_checkpoint parsed = { 0 };

	*ret_n_valid = 0;
	if (ledger_checkpoint_text(store_ledger(store), &cp, &cp_n, &err) < 0 ||
	    ledger_checkpoint_parse(cp, cp_n, NULL, &parsed, &err) < 0 ||
	    (ledger_checkpoint_release(&parsed),
	     ledger_remote_cosignatures(store_ledger(store), parsed.size, &lines, &n_lines, &err) < 0) ||
	    witness_policy_check(p, cp, cp_n, lines, n_lines, ret_n_valid, &err) < 0) {
		cli_error("ledger verify: refused: %s", err.msg);
		return false;
	}
	return true;
}

static int ledger_verify_main(struct store *store, const char *key_path, const char *old_path,
			      const char *policy_path)
{
	struct ledger_vkey vkey;
	struct witness_policy *policy = NULL;
	if (!key_path && !policy_path) {
		cli_error("ledger verify: give the public key with --key FILE, kept outside the state directory (`airlock ledger key` prints it), or a policy naming it with --policy FILE");
		return EXIT_AIRLOCK_ERROR;
	}
	if (key_path && ledger_load_vkey(key_path, store_path(store), &vkey) < 0)
		return EXIT_AIRLOCK_ERROR;
	cleanup_free struct witness_policy *policy_buf = policy_path ? malloc(sizeof(*policy)) : NULL;
	if (policy_path) {
		if (!policy_buf || ledger_load_policy(policy_path, store_path(store), policy_buf) < 0)
			return EXIT_AIRLOCK_ERROR;
		policy = policy_buf;
		if (key_path && memcmp(vkey.key, policy->log.key, sizeof(vkey.key)) != 0) {
			cli_error("ledger verify: --key is not the policy's log key");
			return EXIT_AIRLOCK_ERROR;
		}
		vkey = policy->log;
	}
	size_t n_cosigned = 0;
	bool quorum = !policy || ledger_check_quorum(store, policy, &n_cosigned);
	cleanup_free char *old = NULL;
	size_t old_n = 0;
	if (old_path && ledger_read_file(old_path, &old, &old_n) < 0)
		return EXIT_AIRLOCK_ERROR;

	struct ledger_report rep;
	struct error err = { 0 };
	if (ledger_verify(store_ledger(store), &vkey, old, old_n, &rep, &err) < 0) {
		cli_error("ledger verify: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	bool tampered = false, differs = false, torn = false;
	for (size_t i = 0; i < rep.n_findings; i++) {
		const struct ledger_finding *f = &rep.findings[i];
		cli_print("%s %s\n", finding_names[f->type], f->what);
		tampered |= f->type == LEDGER_FINDING_TAMPERED;
		differs |= f->type == LEDGER_FINDING_DIFFERS || f->type == LEDGER_FINDING_MISSING ||
			   f->type == LEDGER_FINDING_UNBACKED;
		torn |= f->type == LEDGER_FINDING_TORN;
	}
	cleanup_free char *root = base64_encode(rep.root, MERKLE_HASH_BYTES);
	char cosigned[48] = "";
	if (policy)
		snprintf(cosigned, sizeof(cosigned), ",\"cosigned_by\":%zu", n_cosigned);
	printf("{\"size\":%llu,\"root\":\"%s\",\"checkpoint_size\":%llu,\"unsigned_entries\":%llu,\"findings\":%zu%s,\"verdict\":\"%s\"}\n",
	       (unsigned long long)rep.size, root ? root : "", (unsigned long long)rep.checkpoint_size,
	       (unsigned long long)rep.unsigned_entries, rep.n_findings, cosigned,
	       tampered	 ? "TAMPERED"
	       : !quorum ? "NO_QUORUM"
	       : differs ? "RECORDS_DIFFER"
	       : torn	 ? "TORN_TAIL"
			 : "OK");
	ledger_report_release(&rep);
	if (!tampered && !quorum)
		return EXIT_LEDGER_NO_QUORUM;
	return exit_status_for_ledger_verify(tampered, differs, torn);
}

static int ledger_verify_proof_main(const char *key_path, const char *old_path,
				    const char *record_path, const char *proof_path)
{
	struct ledger_vkey vkey;
	if (!key_path) {
		cli_error("ledger verify-proof: give the public key with --key FILE");
		return EXIT_AIRLOCK_ERROR;
	}
	if (ledger_load_vkey(key_path, NULL, &vkey) < 0)
		return EXIT_AIRLOCK_ERROR;
	cleanup_free char *proof = NULL, *old = NULL, *record = NULL;
	size_t proof_n, old_n = 0, record_n = 0;
	if (ledger_read_file(proof_path, &proof, &proof_n) < 0 ||
	    (old_path && ledger_read_file(old_path, &old, &old_n) < 0))
		return EXIT_AIRLOCK_ERROR;
	char hex[SHA256_HEX_SIZE];
	if (record_path) {
		struct error rerr = { 0 };
		if (file_read_capped(AT_FDCWD, record_path, 1 << 30, &record, &record_n, &rerr) < 0) {
			cli_error("ledger verify-proof: %s", rerr.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		sha256_hex(record, record_n, hex);
	}
	struct ledger_entry e = { 0 };
	struct error err = { 0 };
	if (ledger_verify_proof(&ledger_state_schema, proof, proof_n, &vkey, old, old_n,
				record_path ? hex : NULL, &e, &err) < 0) {
		cli_error("ledger verify-proof: %s", err.msg);
		return err.code == EINVAL ? EXIT_AIRLOCK_ERROR : EXIT_LEDGER_TAMPERED;
	}
	if (e.path[0])
		cli_print("entry %llu (%s %s, %s) is in the log signed by %s\n",
			  (unsigned long long)e.seq, ledger_kind_name(e.kind), e.id, e.path,
			  vkey.name);
	else
		cli_print("the log signed by %s extends the old checkpoint\n", vkey.name);
	return EXIT_OK;
}

/* airlock ledger witness add NAME URL VKEY | list | remove NAME */
static int ledger_witness_main(struct store *store, char **operand, int operands)
{
	struct error err = { 0 };
	int r;
	const char *op = operand[0];

	if (strcmp(op, "add") == 0 && operands == 4) {
		r = remotes_witness_add(store, operand[1], operand[2], operand[3], &err);
	} else if (strcmp(op, "remove") == 0 && operands == 2) {
		r = remotes_witness_remove(store, operand[1], &err);
	} else if (strcmp(op, "list") == 0 && operands == 1) {
		json_t *list = NULL;
		r = remotes_witness_list(store, &list, &err);
		size_t i;
		json_t *w;
		json_array_foreach(r == 0 ? list : NULL, i, w)
			cli_print("%s %s %s\n", json_string_value(json_object_get(w, "name")),
				  json_string_value(json_object_get(w, "url")),
				  json_string_value(json_object_get(w, "vkey")));
		json_decref(list);
	} else {
		cli_error("ledger witness: add NAME URL VKEY, list, or remove NAME");
		return EXIT_AIRLOCK_ERROR;
	}
	if (r < 0) {
		cli_error("ledger witness %s: %s", op, err.msg);
		return r == -ENOENT ? EXIT_NOT_FOUND_ITEM : EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

struct ledger_options {
	const char *state_dir, *key, *checkpoint, *old, *record, *policy;
};

/* cmd_ledger()'s options into o; true when the command is done then, with
 * *ret_status its exit status (--help, a bad option). */
static bool ledger_parse_options(int argc, char **argv, struct ledger_options *o, int *ret_status)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "key", required_argument, NULL, 'k' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "old", required_argument, NULL, 'o' },
		{ "record", required_argument, NULL, 'r' },
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 's':
			o->state_dir = optarg;
			break;
		case 'k':
			o->key = optarg;
			break;
		case 'c':
			o->checkpoint = optarg;
			break;
		case 'o':
			o->old = optarg;
			break;
		case 'r':
			o->record = optarg;
			break;
		case 'p':
			o->policy = optarg;
			break;
		case 'h':
			fputs(ledger_usage, stdout);
			*ret_status = EXIT_OK;
			return true;
		default:
			*ret_status = EXIT_AIRLOCK_ERROR;
			return true;
		}
	}
	return false;
}

/* `airlock ledger SUB` for key, checkpoint, recover, prove and consistency,
 * on store: what it prints, and its exit status. */
static int ledger_run_sub(struct store *store, const char *sub, char **operand, int operands)
{
	struct error err = { 0 };
	int r;
	cleanup_free char *text = NULL;

	if (strcmp(sub, "key") == 0) {
		r = ledger_public_key(store_ledger(store), true, &text, &err);
	} else if (strcmp(sub, "checkpoint") == 0) {
		r = ledger_checkpoint(store_ledger(store), &err);
		if (r == 0)
			remotes_push_background(store);
		if (r == 0) {
			size_t n;
			r = ledger_checkpoint_text(store_ledger(store), &text, &n, &err);
		}
	} else if (strcmp(sub, "recover") == 0) {
		r = ledger_recover(store_ledger(store), &err);
		if (r == 0)
			text = strdup("ledger recovered");
	} else if (strcmp(sub, "prove") == 0) {
		r = ledger_prove(store_ledger(store), operand[0], &text, &err);
	} else {
		uint64_t from, to = 0;
		r = parse_u64(operand[0], &from);
		if (r == 0 && operands == 2)
			r = parse_u64(operand[1], &to);
		if (r < 0) {
			cli_error("ledger consistency: sizes are numbers");
			return EXIT_AIRLOCK_ERROR;
		}
		if (r == 0 && operands == 2 && to == 0) {
			cli_error("ledger consistency: the new size is a kept checkpoint's, at least 1");
			return EXIT_AIRLOCK_ERROR;
		}
		r = ledger_prove_consistency(store_ledger(store), from, to, &text, &err);
	}
	if (r < 0) {
		cli_error("ledger %s: %s", sub, err.msg);
		return exit_status_for_ledger_error(r);
	}
	size_t n = strlen(text);
	fputs(text, stdout);
	if (n == 0 || text[n - 1] != '\n')
		fputc('\n', stdout);
	return EXIT_OK;
}

int cmd_ledger(int argc, char **argv)
{
	struct ledger_options o = { 0 };
	int opt_status;

	/* The first operand, past the options (and their values), names it. */
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-') {
			i += strchr(argv[i], '=') == NULL && strcmp(argv[i], "--help") != 0 &&
			     strcmp(argv[i], "-h") != 0;
		} else {
			if (strcmp(argv[i], "push") == 0 || strcmp(argv[i], "mirror") == 0)
				return cmd_ledger_remote(argc, argv);
			break;
		}
	if (ledger_parse_options(argc, argv, &o, &opt_status))
		return opt_status;
	if (optind >= argc) {
		fputs(ledger_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	const char *sub = argv[optind++];
	int operands = argc - optind;
	if (strcmp(sub, "verify-proof") == 0) {
		if (operands != 1) {
			cli_error("ledger verify-proof: give one proof file (or -)");
			return EXIT_AIRLOCK_ERROR;
		}
		return ledger_verify_proof_main(o.key, o.old, o.record, argv[optind]);
	}
	bool witness = strcmp(sub, "witness") == 0;
	bool wants = witness			       ? operands >= 1
		     : strcmp(sub, "prove") == 0       ? operands == 1
		     : strcmp(sub, "consistency") == 0 ? operands == 1 || operands == 2
						       : operands == 0;
	bool known = strcmp(sub, "key") == 0 || strcmp(sub, "checkpoint") == 0 ||
		     strcmp(sub, "verify") == 0 || strcmp(sub, "recover") == 0 ||
		     strcmp(sub, "prove") == 0 || strcmp(sub, "consistency") == 0 || witness;
	if (!known || !wants) {
		cli_error("ledger: %s '%s'", known ? "wrong operands for" : "unknown subcommand", sub);
		fputs(ledger_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	struct error err = { 0 };
	int status = cli_session_open(&session, o.state_dir);
	if (status != EXIT_OK)
		return status;
	if (!session.state_dir) {
		cli_error("no state directory: set AIRLOCK_STATE_DIR, XDG_STATE_HOME or HOME, or pass --state-dir");
		return EXIT_AIRLOCK_ERROR;
	}
	/* key and checkpoint make what they need; the others only read. */
	bool create = strcmp(sub, "key") == 0 || strcmp(sub, "checkpoint") == 0 || witness;
	if (session_store(&session, create, &store, &err) < 0) {
		cli_error("ledger %s: %s", sub, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (strcmp(sub, "verify") == 0)
		return ledger_verify_main(store, o.key, o.checkpoint, o.policy);
	if (witness)
		return ledger_witness_main(store, argv + optind, operands);
	return ledger_run_sub(store, sub, argv + optind, operands);
}

/* SPDX-License-Identifier: MIT */
/* airlock fleet (docs/fleet.md): many hosts, one place. The mirror's
 * contents come from core/fleet; this only prints them. Every string is a
 * host's, and partly its agent's (argv): through cli_print() for a
 * terminal, jansson's escaping for --json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/fleet/fleet.h"
#include "core/fleet/fleetapprove.h"
#include "core/session/session.h"
#include "core/store/remotes.h"

static const char fleet_usage[] =
	"usage: airlock fleet [--mirror CONNINFO] [--host NAME] [--since TIME] [--runs N] [--json]\n"
	"                     [--policy FILE] [--keys KEYS] [--state-dir DIR]\n"
	"  CONNINFO defaults to the configured mirror's (`airlock ledger mirror set`);\n"
	"  a role that may read the mirror (airlock_reader) is needed.\n"
	"  TIME is a date, a UTC time (2026-12-05T14:00:00Z) or an age (2h, 7d).\n"
	"  FILE is a tlog-policy file (`ledger verify --policy`): each host's cosignatures\n"
	"  are verified against its witnesses and quorum; without it, \"unverified\".\n"
	"  Every line shown is checked against its host's signed checkpoint; KEYS pins the\n"
	"  hosts' log keys (one `airlock ledger key` a line), else the mirror's are used.\n"
	"       airlock fleet approve HOST PERMIT-ID --keys KEYS [--mirror CONNINFO] [--approver FILE]\n"
	"                     [--state-dir DIR]\n"
	"  signs HOST's pending permit from here: CONNINFO's role must be airlock_approver;\n"
	"  FILE is a copy of HOST's approver.json (default: /etc/airlock/approver.json, else\n"
	"  the state directory's), which HOST's ledger must pin; the passphrase from a terminal;\n"
	"  KEYS must pin HOST's log key, and the permit's lines must verify under it.\n";

#define FLEET_RUNS_DEFAULT 20

static char *fleet_join(char *const *argv)
{
	size_t n = 1;
	for (size_t i = 0; argv && argv[i]; i++)
		n += strlen(argv[i]) + 1;
	char *s = calloc(1, n), *p = s;
	for (size_t i = 0; s && argv && argv[i]; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	return s;
}

static json_t *fleet_json_argv(char *const *argv)
{
	json_t *a = json_array();
	for (size_t i = 0; a && argv && argv[i]; i++)
		json_array_append_new(a, json_string(argv[i]));
	return a;
}

static json_t *fleet_json_exit(bool has, int64_t code)
{
	return has ? json_integer(code) : json_null();
}

static const char *const fleet_cosig_states[] = {
	[FLEET_COSIG_UNVERIFIED] = "unverified",
	[FLEET_COSIG_VERIFIED] = "verified",
	[FLEET_COSIG_UNKNOWN] = "not in policy",
	[FLEET_COSIG_INVALID] = "invalid",
};

/* null, or {size, checkpoint, witnesses: [{witness, status, policy_name, line}]} */
static json_t *fleet_json_cosigned(const struct fleet_host *h)
{
	if (!h->cosigned_checkpoint)
		return json_null();
	json_t *ws = json_array();
	for (size_t i = 0; ws && i < h->n_cosignatures; i++) {
		const struct fleet_cosignature *c = &h->cosignatures[i];
		json_array_append_new(ws, json_pack("{s:s, s:s, s:s?, s:s}", "witness", c->witness,
						    "status", fleet_cosig_states[c->state],
						    "policy_name", c->policy_name, "line", c->line));
	}
	return json_pack("{s:I, s:s, s:o}", "size", (json_int_t)h->cosigned_size, "checkpoint",
			 h->cosigned_checkpoint, "witnesses", ws);
}

static int fleet_print_json(const struct fleet *f, bool policy)
{
	json_t *hosts = json_array(), *runs = json_array(), *failures = json_array(),
	       *permits = json_array(), *approvals = json_array();
	for (size_t i = 0; i < f->n_hosts; i++) {
		const struct fleet_host *h = &f->hosts[i];
		json_t *log = json_pack("{s:s, s:b, s:I, s:s?, s:I}", "key",
					fleet_key_source_name(h->key_source), "verified",
					h->log_verified, "signed_size", (json_int_t)h->signed_size,
					"failure", h->log_failure, "forged", (json_int_t)h->n_forged);
		json_array_append_new(hosts,
				      json_pack("{s:s, s:s, s:I, s:s?, s:s?, s:o, s:o, s:s?, s:o}",
						"host", h->host, "origin", h->origin,
						"verified_size", (json_int_t)h->size, "checkpoint",
						h->checkpoint, "pushed", h->pushed, "cosigned",
						fleet_json_cosigned(h), "quorum_met",
						policy ? json_boolean(!h->quorum_failure) : json_null(),
						"quorum_failure", h->quorum_failure, "log", log));
	}
	for (size_t i = 0; i < f->n_runs; i++) {
		const struct fleet_run *r = &f->runs[i];
		json_array_append_new(runs,
				      json_pack("{s:s, s:I, s:s, s:s?, s:s?, s:o, s:b, s:o, s:s}",
						"host", r->host, "id", (json_int_t)r->id, "time",
						r->time, "source", r->source, "status", r->status,
						"exit", fleet_json_exit(r->has_exit, r->exit_code),
						"ok", r->ok, "argv", fleet_json_argv(r->argv),
						"line", fleet_line_state_name(r->line)));
	}
	for (size_t i = 0; i < f->n_failures; i++) {
		const struct fleet_failure *x = &f->failures[i];
		json_array_append_new(failures,
				      json_pack("{s:s, s:I, s:s, s:s?, s:o, s:o, s:s}", "host",
						x->host, "receipt", (json_int_t)x->receipt,
						"opened", x->time, "status", x->status, "exit",
						fleet_json_exit(x->has_exit, x->exit_code), "argv",
						fleet_json_argv(x->argv), "line",
						fleet_line_state_name(x->line)));
	}
	for (size_t i = 0; i < f->n_permits; i++) {
		const struct fleet_permit *p = &f->permits[i];
		if (!p->pending)
			continue;
		json_array_append_new(permits, json_pack("{s:s, s:I, s:s, s:I, s:s, s:b, s:o, s:s}",
							 "host", p->host, "id", (json_int_t)p->id,
							 "state", p->state, "risk", (json_int_t)p->risk,
							 "time", p->time, "approved", p->approved,
							 "argv", fleet_json_argv(p->argv), "line",
							 fleet_line_state_name(p->line)));
	}
	for (size_t i = 0; i < f->n_approvals; i++) {
		const struct fleet_approval *a = &f->approvals[i];
		json_array_append_new(approvals,
				      json_pack("{s:s, s:I, s:s?, s:s?, s:s?, s:s}", "host",
						a->host, "permit", (json_int_t)a->permit, "approver",
						a->approver, "public_key", a->public_key, "at",
						a->at, "line", fleet_line_state_name(a->line)));
	}
	json_t *doc = json_pack("{s:o, s:o, s:o, s:o, s:o, s:I}", "hosts", hosts, "runs", runs,
				"open_failures", failures, "pending_permits", permits, "approvals",
				approvals, "unreadable", (json_int_t)f->n_unreadable);
	cleanup_free char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!text) {
		cli_error("fleet: out of memory");
		return EXIT_AIRLOCK_ERROR;
	}
	puts(text);
	return EXIT_OK;
}

static void fleet_print_exit(const char *status, bool has, int64_t code)
{
	if (has)
		cli_print("exit %-4lld", (long long)code);
	else
		cli_print("%-9s", status ? status : "-");
}

/* A line not the host's signed log's is marked first, in capitals for a
 * forged one. */
static void fleet_print_line_state(enum fleet_line_state s)
{
	if (s == FLEET_LINE_FORGED)
		cli_print("  FORGED (not the host's signed line):");
	else if (s != FLEET_LINE_VERIFIED)
		cli_print("  (%s)", fleet_line_state_name(s));
}

static int fleet_print_table(const struct fleet *f, bool policy)
{
	cli_print("hosts (%zu)\n", f->n_hosts);
	for (size_t i = 0; i < f->n_hosts; i++) {
		const struct fleet_host *h = &f->hosts[i];
		cli_print("  %s  origin %s  verified size %llu  last checkpoint %s\n", h->host,
			  h->origin, (unsigned long long)h->size, h->pushed ? h->pushed : "none");
		if (!h->cosigned_checkpoint)
			cli_print("    cosigned: none");
		else
			cli_print("    cosigned: size %llu by", (unsigned long long)h->cosigned_size);
		for (size_t k = 0; k < h->n_cosignatures; k++) {
			const struct fleet_cosignature *c = &h->cosignatures[k];
			cli_print("%s %s (%s%s%s)", k ? "," : "", c->witness,
				  fleet_cosig_states[c->state], c->policy_name ? " as " : "",
				  c->policy_name ? c->policy_name : "");
		}
		if (policy)
			cli_print("%s%s\n", h->quorum_failure ? "; quorum NOT met: " : "; quorum met",
				  h->quorum_failure ? h->quorum_failure : "");
		else
			cli_print("\n");
		if (h->log_verified)
			cli_print("    log: verified to size %llu with %s key%s\n",
				  (unsigned long long)h->signed_size,
				  fleet_key_source_name(h->key_source),
				  h->key_source == FLEET_KEY_MIRROR ? " (not pinned here: --keys)"
								    : "");
		else
			cli_print("    log: NOT verified (%s key): %s\n",
				  fleet_key_source_name(h->key_source),
				  h->log_failure ? h->log_failure : "?");
		if (h->n_forged)
			cli_print("    %llu FORGED lines\n", (unsigned long long)h->n_forged);
	}
	cli_print("\nrecent runs (%zu)\n", f->n_runs);
	for (size_t i = 0; i < f->n_runs; i++) {
		const struct fleet_run *r = &f->runs[i];
		cleanup_free char *argv = fleet_join(r->argv);
		fleet_print_line_state(r->line);
		cli_print("  %s  #%llu  %s  %s  ", r->host, (unsigned long long)r->id, r->time,
			  r->ok ? "ok    " : "FAILED");
		fleet_print_exit(r->status, r->has_exit, r->exit_code);
		cli_print("  %s\n", argv ? argv : "");
	}
	cli_print("\nopen failures (%zu)\n", f->n_failures);
	for (size_t i = 0; i < f->n_failures; i++) {
		const struct fleet_failure *x = &f->failures[i];
		cleanup_free char *argv = fleet_join(x->argv);
		fleet_print_line_state(x->line);
		cli_print("  %s  receipt %llu  opened %s  ", x->host,
			  (unsigned long long)x->receipt, x->time);
		fleet_print_exit(x->status, x->has_exit, x->exit_code);
		cli_print("  %s\n", argv ? argv : "");
	}
	size_t pending = 0;
	for (size_t i = 0; i < f->n_permits; i++)
		pending += f->permits[i].pending;
	cli_print("\npending permits (%zu)\n", pending);
	for (size_t i = 0; i < f->n_permits; i++) {
		const struct fleet_permit *p = &f->permits[i];
		if (!p->pending)
			continue;
		cleanup_free char *argv = fleet_join(p->argv);
		fleet_print_line_state(p->line);
		cli_print("  %s  permit %llu  %s  risk %lld  %s  %s\n", p->host,
			  (unsigned long long)p->id, p->state, (long long)p->risk, p->time,
			  argv ? argv : "");
	}
	cli_print("\napprovals (%zu)\n", f->n_approvals);
	for (size_t i = 0; i < f->n_approvals; i++) {
		const struct fleet_approval *a = &f->approvals[i];
		fleet_print_line_state(a->line);
		cli_print("  %s  permit %llu  approved by %s  at %s\n", a->host,
			  (unsigned long long)a->permit, a->approver ? a->approver : "?",
			  a->at ? a->at : "?");
	}
	if (f->n_unreadable)
		cli_print("\n%zu entries of the mirror could not be read\n", f->n_unreadable);
	return EXIT_OK;
}

/* The console's pins of the hosts' log keys (--keys FILE): EXIT_OK, or
 * the error said. */
static int fleet_read_keys(const char *verb, const char *path, struct fleet_keys *ret)
{
	cleanup_free char *text = NULL;
	size_t n = 0;
	struct error err = { 0 };
	int r = file_read_capped(AT_FDCWD, path, 1 << 20, &text, &n, &err);
	if (r == 0)
		r = fleet_keys_parse(text, n, ret, &err);
	if (r < 0) {
		cli_error("%s: %s: %s", verb, path, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

/* The conninfo of --mirror, else the configured mirror's (into cfg). */
static int fleet_conninfo(struct session *session, struct remotes_mirror *cfg, const char *verb)
{
	struct store *store = NULL;
	struct error err = { 0 };
	int status = cli_open_store(session, &store);
	if (status != EXIT_OK)
		return status;
	int g = store ? remotes_mirror_get(store, cfg, &err) : -ENOENT;
	if (g < 0 && g != -ENOENT) {
		cli_error("%s: %s", verb, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!cfg->conninfo) {
		cli_error("%s: no mirror is configured here: pass --mirror CONNINFO", verb);
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

/* What the approver is about to sign, from the mirror's record: every
 * string is the host's (and partly its agent's), through cli_print(). */
static void fleet_print_request(const char *host, const struct fleetapprove_request *q)
{
	const struct permit *p = &q->permit;
	cleanup_free char *argv = fleet_join(p->p.argv);
	cli_print("permit %llu of host %s (log %s), as its ledger in the mirror records it,\n"
		  "verified against its checkpoint of size %llu signed by its pinned key:\n",
		  (unsigned long long)p->id, host, q->origin, (unsigned long long)q->signed_size);
	cli_print("  state      %s\n", permit_state_to_string(p->state));
	cli_print("  risk       %d (%s)\n", p->risk, p->classify_reason);
	if (p->p.label)
		cli_print("  label      %s\n", p->p.label);
	cli_print("  command    %s\n", argv ? argv : "");
	cli_print("  workspace  %s\n", p->workspace ? p->workspace : "");
	cli_print("  reason     %s\n", p->p.reason ? p->p.reason : "");
	cli_print("  changes    expected paths:");
	for (size_t i = 0; p->p.expected_paths && p->p.expected_paths[i]; i++)
		cli_print(" %s", p->p.expected_paths[i]);
	cli_print("\n             dry run %llu: %s\n", (unsigned long long)p->dryrun_id,
		  p->observed_why[0] ? p->observed_why : "as expected");
	cli_print("  change set sha256 %s\n", p->changeset_sha256);
	cli_print("  origin     %s (signed: an approval for this host's log only)\n", q->origin);
	cli_print("the approver's signature is asked over:\n%s", q->message);
}

/* airlock fleet approve HOST PERMIT-ID (docs/fleet.md, "Approving from one
 * place"). */
static int fleet_approve_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "mirror", required_argument, NULL, 'm' },
		{ "approver", required_argument, NULL, 'a' },
		{ "keys", required_argument, NULL, 'k' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *conninfo = NULL, *approver_path = NULL, *state_dir = NULL, *keys_path = NULL;
	int opt;
	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'm':
			conninfo = optarg;
			break;
		case 'a':
			approver_path = optarg;
			break;
		case 'k':
			keys_path = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			fputs(fleet_usage, stdout);
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	uint64_t id = 0;
	if (argc - optind != 2 || parse_u64(argv[optind + 1], &id) < 0 || id == 0) {
		cli_error("fleet approve: give a host and a permit id: airlock fleet approve HOST PERMIT-ID");
		return EXIT_AIRLOCK_ERROR;
	}
	const char *host = argv[optind];
	/* The host's log key, pinned here: the mirror's own pin is a database
	 * superuser's to replace, with a whole log signed by a key of its own. */
	if (!keys_path) {
		cli_error("fleet approve: pass --keys FILE naming the host's log key (`airlock ledger key` on it): its permit is checked against the checkpoint it signed");
		return EXIT_NOT_APPROVED;
	}
	cleanup_with(fleet_keys_release) struct fleet_keys keys = { 0 };
	int kstatus = fleet_read_keys("fleet approve", keys_path, &keys);
	if (kstatus != EXIT_OK)
		return kstatus;
	cleanup_with(session_free) struct session session = { 0 };
	struct remotes_mirror cfg = { 0 };
	struct error err = { 0 };
	if (!conninfo || !approver_path) {
		int status = cli_session_open(&session, state_dir);
		if (status != EXIT_OK)
			return status;
	}
	if (!conninfo) {
		int status = fleet_conninfo(&session, &cfg, "fleet approve");
		if (status != EXIT_OK) {
			remotes_mirror_release(&cfg);
			return status;
		}
		conninfo = cfg.conninfo;
	}
	/* The approver document: a copy of the host's (public: salt, scrypt
	 * parameters, key), or the one installed here. */
	cleanup_free char *state_approver = NULL;
	if (!approver_path) {
		if (access(APPROVER_SYSTEM_PATH, F_OK) == 0)
			approver_path = APPROVER_SYSTEM_PATH;
		else if (session.state_dir &&
			 asprintf(&state_approver, "%s/approver.json", session.state_dir) > 0)
			approver_path = state_approver;
	}
	struct fleetapprove_request q;
	int r = fleetapprove_load(conninfo, host, id, &keys, &q, &err);
	if (r < 0) {
		cli_error("%s", err.msg);
		remotes_mirror_release(&cfg);
		return r == -ENOENT	    ? EXIT_NOT_FOUND_ITEM
		       : r == -EPERM	    ? EXIT_REFUSED
		       : r == -EKEYREJECTED ? EXIT_NOT_APPROVED
					    : EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *doc = NULL;
	size_t doc_n = 0;
	cleanup_with(approver_release) struct approver a = { 0 };
	r = approver_path ? file_read_capped(AT_FDCWD, approver_path, 65536, &doc, &doc_n, &err)
			  : error_set(&err, ENOENT, "no approver document: pass --approver FILE");
	if (r < 0) {
		cli_error("fleet approve: %s: %s", approver_path ? approver_path : "approver", err.msg);
		fleetapprove_release(&q);
		remotes_mirror_release(&cfg);
		return EXIT_AIRLOCK_ERROR;
	}
	r = fleetapprove_approver(&q, doc, doc_n, &a, &err);
#if AIRLOCK_TEST_HOOKS
	/* A test build signs with an approver the host does not pin, for the
	 * host's own refusal to be tested (tests/cli/fleet.bats). */
	if (r == -EACCES && getenv("AIRLOCK_TEST_FLEET_ANY_APPROVER")) {
		approver_release(&a);
		r = approver_parse_document(doc, doc_n, approver_path, &a, &err);
	}
#endif
	if (r < 0) {
		cli_error("fleet approve: host %s: %s", host, err.msg);
		fleetapprove_release(&q);
		remotes_mirror_release(&cfg);
		return r == -EACCES ? EXIT_NOT_APPROVED : EXIT_AIRLOCK_ERROR;
	}
	fleet_print_request(host, &q);
	fflush(stdout);
	char passphrase[1024], prompt[160];
	snprintf(prompt, sizeof(prompt),
		 "approver passphrase to approve permit %llu of %s: ", (unsigned long long)id, host);
	int t = cli_read_secret(prompt, passphrase, sizeof(passphrase));
	json_t *approval = NULL;
	if (t == -ENXIO) {
		cli_error("fleet approve: the passphrase is read from a terminal and there is none here");
		r = -EACCES;
	} else {
		r = t < 0 ? error_set(&err, EACCES, "the passphrase is too long")
			  : approver_sign(&a, passphrase, q.message, &approval, &err);
		if (r < 0)
			cli_error("fleet approve: %s", err.msg);
	}
	explicit_bzero(passphrase, sizeof(passphrase));
	uint64_t row = 0;
	if (r == 0) {
		r = fleetapprove_send(conninfo, host, id, approval, &row, &err);
		if (r < 0)
			cli_error("%s", err.msg);
	}
	json_decref(approval);
	fleetapprove_release(&q);
	remotes_mirror_release(&cfg);
	if (r < 0)
		return r == -EACCES ? EXIT_NOT_APPROVED : EXIT_AIRLOCK_ERROR;
	json_t *line = json_pack("{s:s, s:I, s:s, s:I}", "host", host, "permit", (json_int_t)id,
				 "state", "APPROVAL_SENT", "approval", (json_int_t)row);
	cleanup_free char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	if (text)
		puts(text);
	return EXIT_OK;
}

int cmd_fleet(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "approve") == 0)
		return fleet_approve_main(argc - 1, argv + 1);

	static const struct option options[] = {
		{ "mirror", required_argument, NULL, 'm' },
		{ "host", required_argument, NULL, 'H' },
		{ "since", required_argument, NULL, 'S' },
		{ "runs", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "keys", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fleet_query q = { .runs_max = FLEET_RUNS_DEFAULT };
	const char *state_dir = NULL, *policy_path = NULL, *keys_path = NULL;
	char since[32];
	bool json = false;
	uint64_t n;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'm':
			q.conninfo = optarg;
			break;
		case 'H':
			q.host = optarg;
			break;
		case 'S':
			if (report_parse_since(optarg, since, sizeof(since)) < 0) {
				cli_error("fleet: --since takes a date, a UTC time or an age (2h, 7d)");
				return EXIT_AIRLOCK_ERROR;
			}
			q.since = since;
			break;
		case 'n':
			if (parse_u64(optarg, &n) < 0 || n > 1000000) {
				cli_error("fleet: --runs takes a count (0: all)");
				return EXIT_AIRLOCK_ERROR;
			}
			q.runs_max = (size_t)n;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'p':
			policy_path = optarg;
			break;
		case 'k':
			keys_path = optarg;
			break;
		case 'h':
			fputs(fleet_usage, stdout);
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;

	cleanup_with(session_free) struct session session = { 0 };
	struct remotes_mirror cfg = { 0 };
	struct error err = { 0 };
	cleanup_free struct witness_policy *policy = policy_path ? malloc(sizeof(*policy)) : NULL;
	if (policy_path) {
		cleanup_free char *text = NULL;
		size_t text_n;
		int r = policy ? file_read_capped(AT_FDCWD, policy_path, WITNESS_POLICY_MAX, &text,
						  &text_n, &err)
			       : error_set(&err, ENOMEM, "out of memory");
		if (r == 0)
			r = witness_policy_parse(text, text_n, policy, &err);
		if (r < 0) {
			cli_error("fleet: %s: %s", policy_path, err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		q.policy = policy;
	}
	cleanup_with(fleet_keys_release) struct fleet_keys keys = { 0 };
	if (keys_path) {
		int status = fleet_read_keys("fleet", keys_path, &keys);
		if (status != EXIT_OK)
			return status;
		q.keys = &keys;
	}
	if (!q.conninfo) {
		struct store *store = NULL;
		int status = cli_session_open(&session, state_dir);
		if (status == EXIT_OK)
			status = cli_open_store(&session, &store);
		if (status != EXIT_OK)
			return status;
		int g = store ? remotes_mirror_get(store, &cfg, &err) : -ENOENT;
		if (g < 0 && g != -ENOENT) {
			cli_error("fleet: %s", err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		if (!cfg.conninfo) {
			cli_error("fleet: no mirror is configured here: pass --mirror CONNINFO");
			remotes_mirror_release(&cfg);
			return EXIT_AIRLOCK_ERROR;
		}
		q.conninfo = cfg.conninfo;
	}
	struct fleet f;
	int r = fleet_load(&q, &f, &err);
	remotes_mirror_release(&cfg);
	if (r < 0) {
		cli_error("%s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	int status = json ? fleet_print_json(&f, policy) : fleet_print_table(&f, policy);
	fleet_release(&f);
	return status;
}

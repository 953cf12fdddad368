/* SPDX-License-Identifier: MIT */
/* `airlock permit propose|list|show|dryrun|approve|deny|exec`: the front
 * end of core/permit/permit.c. Each step prints one JSON line (the permit's id,
 * state and risk) and exits with the state's status (docs/exit-codes.md). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/faultpoint.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/permit/mirrorapproval.h"
#include "core/permit/permit.h"
#include "core/policy/rules.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "core/store/store.h"

extern char **environ;

struct permit_cli {
	const char *action;
	const char *state_dir, *workspace, *reason, *operand;
	bool json;
	bool exec; /* propose --exec: then exec, in this process */
	char **verify; /* points into argv, after --verify -- */
	struct session *session; /* the command's, over state_dir */
};

/* A test build's fault points for crash safety: AIRLOCK_TEST_PERMIT_CRASH=apply
 * stops exec after the apply, before its commit; =N inside the apply, after
 * N operations. A release build reads no such variable. */
static void permit_arm_faultpoints(void)
{
#if AIRLOCK_TEST_HOOKS
	const char *s = getenv("AIRLOCK_TEST_PERMIT_CRASH");
	int n;
	if (s && !strcmp(s, "apply"))
		faultpoint_arm("permit.exec.applied", 0);
	else if (s && parse_int(s, 0, 1 << 30, &n) == 0)
		faultpoint_arm("apply.operation", (unsigned)n);
#endif
}

static void permit_usage(FILE *f)
{
	fputs("usage: airlock permit propose [--exec] [--workspace DIR] [--state-dir DIR] FILE|-\n"
	      "       airlock permit list [--json] [--state-dir DIR]\n"
	      "       airlock permit show ID [--state-dir DIR]\n"
	      "       airlock permit dryrun ID [--state-dir DIR]\n"
	      "       airlock permit approve ID [--state-dir DIR]   (the approver's passphrase, from a terminal)\n"
	      "       airlock permit deny ID [--reason TEXT] [--state-dir DIR]\n"
	      "       airlock permit exec ID [--state-dir DIR] [--verify -- CMD [ARG...]]\n"
	      "         (with a mirror configured, exec first fetches an approval made with\n"
	      "          `airlock fleet approve` and commits it when it verifies here)\n",
	      f);
}

static void permit_print_line(const struct permit *p, uint64_t extra_receipt)
{
	json_t *o = json_pack("{s:I, s:s, s:i}", "permit", (json_int_t)p->id, "state",
			      permit_state_to_string(p->state), "risk", p->risk);
	if (!o)
		return;
	if (p->p.label) /* the proposer's name for it; the permit is "permit" */
		json_object_set_new(o, "label", json_string(p->p.label));
	if (p->dryrun_id)
		json_object_set_new(o, "dryrun", json_integer((json_int_t)p->dryrun_id));
	if (extra_receipt)
		json_object_set_new(o, "verify_receipt", json_integer((json_int_t)extra_receipt));
	if (p->state == PERMIT_DRY_RUN_OK)
		json_object_set_new(o, "needs", json_string(p->risk >= 4 ? "approval" : "nothing"));
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	fflush(stdout);
	json_decref(o);
}

static int permit_parse_args(struct permit_cli *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			permit_usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--state-dir"))
			slot = &c->state_dir;
		else if (!strcmp(a, "--workspace") && !strcmp(c->action, "propose"))
			slot = &c->workspace;
		else if (!strcmp(a, "--reason") && !strcmp(c->action, "deny"))
			slot = &c->reason;
		if (slot) {
			if (i + 1 >= argc) {
				cli_error("permit %s: %s needs a value", c->action, a);
				return -1;
			}
			*slot = argv[++i];
		} else if (!strcmp(a, "--json") && !strcmp(c->action, "list")) {
			c->json = true;
		} else if (!strcmp(a, "--exec") && !strcmp(c->action, "propose")) {
			c->exec = true;
		} else if (!strcmp(a, "--verify") && !strcmp(c->action, "exec")) {
			if (i + 2 >= argc || strcmp(argv[i + 1], "--") != 0) {
				cli_error("permit exec: --verify takes a command after --: --verify -- CMD [ARG...]");
				return -1;
			}
			c->verify = argv + i + 2;
			break;
		} else if (!strcmp(a, "-") || a[0] != '-') {
			if (c->operand) {
				cli_error("permit %s: unexpected argument '%s'", c->action, a);
				return -1;
			}
			c->operand = a;
		} else {
			cli_error("permit %s: bad option '%s'", c->action, a);
			return -1;
		}
	}
	bool wants = strcmp(c->action, "list") != 0;
	if (wants && !c->operand) {
		cli_error("permit %s: give %s", c->action,
			  strcmp(c->action, "propose") ? "a permit id"
						       : "a proposal file, or - for stdin");
		return -1;
	}
	if (!wants && c->operand) {
		cli_error("permit list: unexpected argument '%s'", c->operand);
		return -1;
	}
	return 0;
}

static int permit_open(const struct permit_cli *c, bool create, struct store **ret)
{
	struct error err = { 0 };
	if (!create)
		return cli_open_store(c->session, ret);
	const char *dir = c->session->state_dir;
	if (!dir || session_store(c->session, true, ret, &err) < 0) {
		cli_error("permit: %s", dir ? err.msg : "no state directory ($HOME is not set)");
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

static int permit_step_main(const struct permit_cli *c, const struct rules *rules);

static int permit_propose_main(const struct permit_cli *c, const struct rules *rules)
{
	cleanup_free char *text = NULL;
	cleanup_free char *ws = realpath(c->workspace ? c->workspace : ".", NULL);
	size_t n = 0;
	struct error err = { 0 };

	if (!ws) {
		cli_error("permit propose: workspace '%s': %s", c->workspace ? c->workspace : ".",
			  strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	int r = strcmp(c->operand, "-") == 0
			? fd_read_capped(STDIN_FILENO, PERMIT_PROPOSAL_MAX, &text, &n, &err)
			: file_read_capped(AT_FDCWD, c->operand, PERMIT_PROPOSAL_MAX, &text, &n, &err);
	if (r < 0) {
		cli_error("permit propose: '%s': %s", c->operand, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	struct store *store = NULL;
	int status = permit_open(c, true, &store);
	if (status != EXIT_OK)
		return status;
	struct permit_proposal proposal = { 0 };
	struct error parse_err = { 0 };
	bool valid = permit_parse_proposal(text, n, &proposal, &parse_err) == 0;
	struct permit p;
	/* With --exec the proposal is signed with the exec's commits, by the
	 * exec's one checkpoint (store_checkpoint_defer). */
	if (c->exec) {
		store_checkpoint_defer(store);
		/* ... and made durable with the dry run's receipt, the exec's
		 * first synced commit (store_sync_defer); the checkpoint flush
		 * before any line is printed syncs it where no exec follows. */
		store_sync_defer(store);
	}
	r = permit_propose(store, rules, valid ? &proposal : NULL, text, n,
			   valid ? NULL : parse_err.msg, ws, &p, &err);
	permit_proposal_release(&proposal);
	if (r < 0) {
		struct error ignored = { 0 };
		(void)store_checkpoint_flush(store, &ignored);
		cli_error("permit propose: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!(c->exec && permit_exec_dry_runs(&p)) && store_checkpoint_flush(store, &err) < 0) {
		cli_error("permit propose: permit %llu: %s", (unsigned long long)p.id, err.msg);
		permit_release(&p);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!valid)
		cli_error("permit %llu: invalid proposal: %s", (unsigned long long)p.id, parse_err.msg);
	else if (p.state == PERMIT_REJECTED)
		cli_error("permit %llu: rejected: risk 5 (rule %s)", (unsigned long long)p.id,
			  p.classify_rule);
	if (c->exec && p.state == PERMIT_PROPOSED) {
		/* propose, then exec in this process: one line, the exec's. A
		 * permit exec refuses to take from PROPOSED (risk 4) gets the
		 * line of what was recorded first; the refusal says what to do. */
		if (!permit_exec_dry_runs(&p))
			permit_print_line(&p, 0);
		char id[24];
		struct permit_cli step = *c;
		snprintf(id, sizeof(id), "%llu", (unsigned long long)p.id);
		step.action = "exec";
		step.operand = id;
		permit_release(&p);
		status = permit_step_main(&step, rules);
		/* The exec's end signed it; an exec refused before it began did not. */
		if (store_checkpoint_flush(store, &err) < 0) {
			cli_error("permit propose: permit %s: %s", id, err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		return status;
	}
	permit_print_line(&p, 0);
	status = exit_status_for_permit_state(p.state);
	permit_release(&p);
	return status;
}

static int permit_list_main(const struct permit_cli *c)
{
	struct store *store = NULL;
	int status = permit_open(c, false, &store);
	if (status != EXIT_OK)
		return status;
	struct permit *list = NULL;
	size_t n = 0, damaged = 0;
	struct error err = { 0 };
	if (store && permit_list(store, &list, &n, &damaged, &err) < 0) {
		cli_error("permit list: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	json_t *all = c->json ? json_array() : NULL;
	for (size_t i = 0; i < n; i++) {
		struct permit *p = &list[i];
		if (all) {
			json_array_append_new(all, permit_to_json(p));
		} else {
			cli_print("%-5llu %-26s risk %d  %s%s%s%s", (unsigned long long)p->id,
				  permit_state_to_string(p->state), p->risk, p->p.label ? "[" : "",
				  p->p.label ? p->p.label : "", p->p.label ? "] " : "",
				  p->p.candidate ? "sh -c " : "");
			for (size_t k = 0; p->p.argv && p->p.argv[k]; k++)
				if (!p->p.candidate || k == 2)
					cli_print(k && !p->p.candidate ? " %s" : "%s", p->p.argv[k]);
			cli_print("\n");
		}
		permit_release(p);
	}
	free(list);
	if (all) {
		json_dumpf(all, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(all);
	}
	if (damaged)
		cli_error("permit list: %zu damaged record%s skipped", damaged,
			  damaged == 1 ? "" : "s");
	return EXIT_OK;
}

static int permit_step_main(const struct permit_cli *c, const struct rules *rules)
{
	uint64_t id;
	if (parse_u64(c->operand, &id) < 0 || id == 0) {
		cli_error("permit %s: '%s' is not a permit id", c->action, c->operand);
		return EXIT_AIRLOCK_ERROR;
	}
	struct store *store = NULL;
	int status = permit_open(c, false, &store);
	if (status != EXIT_OK)
		return status;
	if (!store) {
		cli_error("permit %s: no permit %llu (no state directory)", c->action,
			  (unsigned long long)id);
		return EXIT_NOT_FOUND_ITEM;
	}
	struct run_context ctx = { .session = c->session };
	struct error err = { 0 };
	struct permit p = { 0 };
	struct permit_exec_result res = { 0 };
	bool approving = !strcmp(c->action, "approve");
	enum permit_state before = _PERMIT_STATE_MAX;
	int r;

	if (permit_load(store, id, &p, &err) == 0)
		before = p.state;
	permit_release(&p);
	err = (struct error){ 0 };

	if (!strcmp(c->action, "show")) {
		r = permit_load(store, id, &p, &err);
		if (r == 0) {
			json_t *doc = permit_to_json(&p);
			json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
			putchar('\n');
			json_decref(doc);
			permit_release(&p);
			return EXIT_OK;
		}
	} else if (!strcmp(c->action, "dryrun")) {
		r = permit_dryrun(&ctx, store, rules, id, &p, &err);
	} else if (!strcmp(c->action, "deny")) {
		r = permit_deny(store, id, c->reason, &p, &err);
	} else if (!strcmp(c->action, "exec")) {
		/* An approval made away from here (`airlock fleet approve`), when
		 * the mirror holds one and the permit awaits it: committed only
		 * when it verifies here; one that does not is refused, nothing
		 * committed. A mirror that is down never keeps the exec waiting. */
		struct mirrorapproval_result m;
		r = mirrorapproval_fetch(store, rules, id, &p, &m, &err);
		permit_release(&p);
		if (r == 0 && m.outcome == MIRRORAPPROVAL_REFUSED) {
			cli_error("permit exec: permit %llu: the mirror's approval is refused: %s",
				  (unsigned long long)id, m.why);
			return EXIT_NOT_APPROVED;
		}
		if (r == 0 && m.outcome == MIRRORAPPROVAL_UNREACHABLE)
			cli_error("permit exec: permit %llu: no approval fetched from the mirror: %s",
				  (unsigned long long)id, m.why);
		if (r == 0 && m.outcome == MIRRORAPPROVAL_APPROVED)
			cli_error("permit %llu: approved through the mirror", (unsigned long long)id);
		permit_arm_faultpoints();
		if (r == 0)
			r = permit_exec(&ctx, store, rules, id, c->verify, &p, &res, &err);
	} else {
		cleanup_free char *message = NULL;
		r = permit_approval_message(store, rules, id, &message, &err);
		if (r == 0) {
			char passphrase[1024], prompt[128];
			/* What is signed, before the passphrase is asked for. */
			cli_print("permit %llu asks for the approver's signature over:\n%s",
				  (unsigned long long)id, message);
			fflush(stdout);
			snprintf(prompt, sizeof(prompt),
				 "approver passphrase to approve permit %llu: ", (unsigned long long)id);
			int t = cli_read_secret(prompt, passphrase, sizeof(passphrase));
			if (t == -ENXIO) {
				cli_error("permit approve: the passphrase is read from a terminal and there is none here");
				return EXIT_NOT_APPROVED;
			}
			r = t < 0 ? error_set(&err, EACCES, "the passphrase is too long")
				  : permit_approve(store, rules, id, passphrase, &p, &err);
			explicit_bzero(passphrase, sizeof(passphrase));
		}
	}
	if (r < 0) {
		cli_error("permit %s: %s", c->action, err.msg);
		/* A refusal that recorded REJECTED just now says so by its status. */
		struct permit now;
		struct error ignored = { 0 };
		if (r == -EPERM && before != PERMIT_REJECTED &&
		    permit_load(store, id, &now, &ignored) == 0) {
			bool rejected = now.state == PERMIT_REJECTED;
			permit_release(&now);
			if (rejected)
				return EXIT_PERMIT_REJECTED;
		}
		return exit_status_for_permit_error(r, approving);
	}
	if (res.note[0])
		cli_error("permit %llu: %s", (unsigned long long)id, res.note);
	permit_print_line(&p, res.verify_receipt);
	status = exit_status_for_permit_state(p.state);
	permit_release(&p);
	return status;
}

int cmd_permit(int argc, char **argv)
{
	static const char *const actions[] = { "propose", "list", "show", "dryrun",
					       "approve", "deny", "exec" };
	struct permit_cli c = { 0 };

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		permit_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_AIRLOCK_ERROR : EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(argv[1], actions[i]))
			c.action = actions[i];
	if (!c.action) {
		cli_error("permit: unknown step '%s' (propose, list, show, dryrun, approve, deny, exec)",
			  argv[1]);
		return EXIT_AIRLOCK_ERROR;
	}
	int parsed = permit_parse_args(&c, argc - 1, argv + 1);
	if (parsed != 0)
		return parsed < 0 ? EXIT_AIRLOCK_ERROR : EXIT_OK;
	cleanup_with(session_free) struct session session = { 0 };
	int status = cli_session_open(&session, c.state_dir);
	if (status != EXIT_OK)
		return status;
	c.session = &session;
	if (!strcmp(c.action, "list"))
		return permit_list_main(&c);
	struct rules *rules = NULL;
	struct error err = { 0 };
	if (session_rules(&session, &rules, &err) < 0) {
		cli_error("permit: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!strcmp(c.action, "propose"))
		return permit_propose_main(&c, rules);
	status = permit_step_main(&c, rules);
	/* A step committed records: a configured mirror gets them from a
	 * detached pusher (core/store/remotes.h), never on this path. */
	if (session.store) {
		fflush(NULL);
		remotes_push_background(session.store);
	}
	return status;
}

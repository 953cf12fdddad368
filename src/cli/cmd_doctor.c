/* SPDX-License-Identifier: MIT */
/* `airlock doctor`: what works on this host, how to fix what does not, and
 * what a run from here would hide. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/run/doctor.h"
#include "core/run/run.h"
#include "core/session/session.h"
#include "core/store/remotes.h"
#include "sandbox/sandbox.h"

extern char **environ;

/* Paths come from the host and the caller's environment: through cli_print(). */
static void doctor_print_view(const struct doctor_view *v)
{
	cli_print("\nhidden from a run in %s (policy %s, sandbox.home %s):\n", v->workspace,
		  v->policy_origin, v->home_hidden ? "hidden" : "visible");
	for (size_t i = 0; i < v->view.n_masks; i++) {
		char *const *expose = v->view.expose[i];
		cli_print("  masked   %s (an empty view%s", v->view.mask_paths[i],
			  expose && expose[0] ? "; visible in it:" : ")\n");
		for (size_t j = 0; expose && expose[j]; j++)
			cli_print(" %s", expose[j]);
		if (expose && expose[0])
			cli_print(")\n");
	}
	for (size_t i = 0; i < v->n_hidden; i++) {
		const struct doctor_hidden *h = &v->hidden[i];
		cli_print("  %-8s %s%s%s\n", h->how == DOCTOR_HIDDEN_BY_MASK ? "in mask" : "hidden",
			  h->path, h->target ? " -> " : "", h->target ? h->target : "");
	}
	cli_print("  (%zu more paths of sandbox.hide and state directories do not exist here)\n\n",
		  v->n_absent);
}

/* sandbox.net's allowlist form: each pattern as the policy keeps it
 * (canonical) with the ports it covers (docs/network.md). */
static void doctor_print_allowlist(const struct doctor_view *v)
{
	cli_print("  network  allowlist (sandbox.net: the named hosts, through the proxy)\n");
	for (size_t i = 0; v->net_allow && v->net_allow[i]; i++) {
		const char *p = v->net_allow[i];
		bool port = p[strlen(p) - 1] != ']' && strrchr(p, ':') != NULL;
		cli_print("           allow %s%s\n", p, port ? "" : " (ports 80, 443)");
	}
	if (!v->net_allow || !v->net_allow[0])
		cli_print("           allow nothing: every connection is refused\n");
	for (size_t i = 0; v->net_deny && v->net_deny[i]; i++) {
		const char *p = v->net_deny[i];
		bool port = p[strlen(p) - 1] != ']' && strrchr(p, ':') != NULL;
		cli_print("           deny  %s%s\n", p, port ? "" : " (every port)");
	}
	cli_print("  a run reaches them through the proxy at 127.0.0.1:%d (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY; docs/network.md)\n",
		  SANDBOX_NET_PROXY_PORT);
}

/* What the policy grants a run besides reading: the network, and the
 * directories it may write, each as run would check it now. */
static void doctor_print_grants(const struct doctor_view *v)
{
	cli_print("what a run in %s may reach (policy %s):\n", v->workspace, v->policy_origin);
	if (v->net_allowlist)
		doctor_print_allowlist(v);
	else
		cli_print("  network  %s\n",
			  v->share_net ? "host (sandbox.net: the host's network)"
				       : "loopback (sandbox.net: only the run's own lo)");
	cli_print("  writable %s (the workspace)\n", v->workspace);
	for (size_t i = 0; i < v->n_writable; i++) {
		const struct doctor_writable *w = &v->writable[i];
		if (!w->path)
			cli_print("  refused  %s\n", w->refusal);
		else if (strcmp(w->path, w->entry) != 0)
			cli_print("  writable %s (%s)\n", w->entry, w->path);
		else
			cli_print("  writable %s\n", w->path);
	}
	if (v->policy_refusal)
		cli_print("  a run with this policy is refused (exit 126): %s\n", v->policy_refusal);
	if (v->n_refused)
		cli_print("  a run with this policy refuses to start (exit 125) until every refused entry of sandbox.writable is fixed\n");
	if (v->n_writable)
		cli_print("  (a dry run keeps the directories of sandbox.writable read-only)\n");
	cli_print("\n");
}

/* The ledger's mirror, when one is configured: what it holds, the last
 * push's error, an open conflict. Not a layer of the quarantine: it does
 * not change the verdict. */
static void doctor_print_mirror(struct session *session)
{
	struct store *store = NULL;
	struct remotes_status st;
	struct error err = { 0 };

	if (cli_open_store(session, &store) != EXIT_OK || !store ||
	    remotes_status(store, &st, &err) < 0 || !st.configured)
		return;
	if (st.conflict[0])
		cli_print("%-5s %-17s conflict: %s (the gate is closed until `airlock ledger mirror resolve`)\n",
			  "FAIL", "ledger mirror", st.conflict);
	else if (st.pushed < st.signed_size || st.last_error[0])
		cli_print("%-5s %-17s %llu of %llu signed entries pushed%s%s\n", "warn",
			  "ledger mirror", (unsigned long long)st.pushed,
			  (unsigned long long)st.signed_size,
			  st.last_error[0] ? "; last push failed: " : "", st.last_error);
	else
		cli_print("%-5s %-17s %llu signed entries pushed (host %s)\n", "ok",
			  "ledger mirror", (unsigned long long)st.pushed, st.host);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option options[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy = NULL, *state_dir = NULL, *workspace = NULL;
	struct doctor_report report;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 'p':
			policy = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'h':
			puts("usage: airlock doctor [--policy FILE] [--state-dir DIR] [--workspace DIR]\n\n"
			     "Checks every layer of the quarantine on this host; exits 0 when all required ones work.\n"
			     "Then lists what a run with that policy and workspace (default: the cwd) would hide,\n"
			     "its network, and the directories it may write, each checked as run checks it.\n"
			     "The policy is FILE, else the workspace's .airlock/policy.json (what its routed\n"
			     "commands get), else the built-in one.");
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;
	cleanup_free char *here = realpath(workspace ? workspace : ".", NULL);
	if (!here) {
		cli_error("doctor: workspace '%s' cannot be resolved", workspace ? workspace : ".");
		return EXIT_AIRLOCK_ERROR;
	}
	struct doctor_view view = { 0 };
	struct error err = { 0 };
	cleanup_with(session_free) struct session session = { 0 };
	int r = session_open(&session,
			     &(struct session_options){ .state_dir = state_dir,
							.policy_path = policy,
							.environ_ = environ },
			     &err);
	if (r == 0)
		r = doctor_view_build(&session, here, &view, &err);
	if (r < 0) {
		cli_error("doctor: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	doctor_run(&report);
	for (size_t i = 0; i < report.n; i++) {
		const struct doctor_check *c = &report.checks[i];
		printf("%-5s %-17s %s\n",
		       c->ok	     ? "ok"
		       : c->required ? "FAIL"
				     : "warn",
		       c->layer, c->detail);
		if (!c->ok && c->fix[0])
			printf("      %-17s fix: %s\n", "", c->fix);
	}
	doctor_print_mirror(&session);
	doctor_print_view(&view);
	doctor_print_grants(&view);
	doctor_view_release(&view);
	/* the verdict stays the last line */
	bool ok = doctor_report_ok(&report);
	printf("%s\n",
	       ok ? "the quarantine works on this host"
		  : "the quarantine cannot run here: airlock run refuses to run commands (exit 125) until this is fixed");
	return ok ? EXIT_OK : 1;
}

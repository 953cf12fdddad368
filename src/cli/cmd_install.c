/* SPDX-License-Identifier: MIT */
/* `airlock install HOST`: airlock's hooks in the host's own settings file
 * (core/hook/install.c decides what they are; docs/gate.md, "Installing"). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/hook/install.h"
#include "core/hook/installcheck.h"
#include "core/hook/installfile.h"
#include "core/session/session.h"

/* The settings file the host reads its hooks from: the project's when
 * project is set, else the user's. */
static char *install_settings_path(const struct agent_host *host, const char *project, char *const *env)
{
	if (project)
		return path_join(project, host->install_project_file);
	return agenthost_path(host, host->install_user_base, host->install_user_file,
			      strv_env_get(env, "HOME"),
			      host->home_env ? strv_env_get(env, host->home_env) : NULL);
}

/* What the host needs besides its settings file: facts, on stderr. */
static void install_needs(const struct agent_host *host, const char *path, bool project)
{
	char needs[2048];

	host->install_needs(path, project, needs, sizeof(needs));
	cli_error("%s", needs);
}

static char *install_absolute(const char *path)
{
	if (path[0] == '/')
		return strdup(path);
	cleanup_free char *here = getcwd(NULL, 0);
	return here ? path_join(here, path) : NULL;
}

/* `install --check`: what core/hook/installcheck.c found, a line each. */
static int install_check_print(const struct agent_host *host, const struct install_command *cmd,
			       const char *project, const char *target)
{
	struct installcheck_findings f;
	struct error err = { 0 };
	int r = installcheck_run(host, cmd, cmd->session->environ_, project, target, &f, &err);

	for (size_t i = 0; i < f.n; i++) {
		const struct installcheck_finding *x = &f.items[i];
		switch (x->kind) {
		case INSTALLCHECK_MISSING:
			cli_print("%s: missing: no airlock hooks\n", x->path);
			break;
		case INSTALLCHECK_UNREADABLE:
			cli_print("%s: cannot be read (%s): what it says is not known\n", x->path,
				  x->detail);
			break;
		case INSTALLCHECK_NOT_JSON:
			cli_print("%s: not a JSON object (%s, line %d): what the host reads in it is not known\n",
				  x->path, x->detail, x->line);
			break;
		case INSTALLCHECK_FOUND:
			cli_print("%s: %s\n", x->path, x->detail);
			break;
		}
	}
	size_t n = f.n;
	installcheck_findings_release(&f);
	if (r < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (n > 0)
		return EXIT_HOOK_MISCONFIGURED;
	cli_print("%s: airlock's %s hooks are present and current, and no settings level turns them off\n",
		  target, host->name);
	return EXIT_OK;
}

/* What the command line says. */
struct install_args {
	const struct agent_host *host;
	const char *project, *state_dir, *policy; /* as given; NULL: not */
	bool write, check;
};

/* The command line into *a: -1 to go on, else the exit status. */
static int install_parse(int argc, char **argv, struct install_args *a)
{
	enum { OPT_PROJECT = 0x100, OPT_WRITE, OPT_CHECK, OPT_STATE_DIR, OPT_POLICY };
	static const struct option options[] = {
		{ "project", required_argument, NULL, OPT_PROJECT },
		{ "write", no_argument, NULL, OPT_WRITE },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case OPT_PROJECT:
			a->project = optarg;
			break;
		case OPT_WRITE:
			a->write = true;
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case OPT_STATE_DIR:
			a->state_dir = optarg;
			break;
		case OPT_POLICY:
			a->policy = optarg;
			break;
		case 'h':
			printf("usage: airlock install %s [--project DIR] [--write] [--state-dir DIR] [--policy FILE]\n"
			       "       airlock install --check %s [--project DIR] [--state-dir DIR] [--policy FILE]\n"
			       "prints airlock's hooks for the host, or merges them into its settings file (--write),\n"
			       "or checks that they are there and current and that no settings level the host\n"
			       "merges turns them off or adds a hook before the tool (--check: exit 0 yes, 1 no)\n",
			       agenthost_names(true), agenthost_names(true));
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind >= argc) {
		cli_error("install: which host? (%s)", agenthost_names(false));
		return EXIT_AIRLOCK_ERROR;
	}
	struct error err = { 0 };
	if (agenthost_from_string(argv[optind], &a->host, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	optind++;
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;
	if (a->check && a->write) {
		cli_error("install: --check and --write exclude each other");
		return EXIT_AIRLOCK_ERROR;
	}
	return -1;
}

/* Without --write: the hooks on stdout, and whether they are there. */
static int install_show(const struct agent_host *host, const struct install_command *cmd,
			const char *path, bool changed, bool project)
{
	cleanup_free char *out = NULL;
	struct error err = { 0 };

	if (installfile_hooks_text(host, cmd, &out, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	puts(out);
	cli_error("install: %s: %s; --write merges them, keeping every other key", path,
		  changed ? "these hooks are not there yet, or differ"
			  : "these hooks are there already");
	install_needs(host, path, project);
	return EXIT_OK;
}

/* The settings file at path, merged with the hooks: shown, or written. */
static int install_merge_file(const struct agent_host *host, const struct install_command *cmd,
			      const char *path, bool write, bool stable, bool build_tree, bool project)
{
	cleanup_with(installfile_release) struct installfile f = { 0 };
	struct error err = { 0 };

	if (installfile_merge(host, cmd, path, &f, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!stable)
		cli_error("install: warning: the hooks name %s, which is not the airlock on PATH%s: if it moves or is rebuilt elsewhere, every hook blocks every tool call until `airlock install` is run again; install airlock (e.g. /usr/bin/airlock) and run install from there",
			  cmd->airlock, build_tree ? " (it lies in a build tree)" : "");
	if (!write)
		return install_show(host, cmd, path, f.changed, project);
	if (!f.changed) {
		cli_error("install: %s has airlock's hooks already; nothing changed", path);
		install_needs(host, path, project);
		return EXIT_OK;
	}
	cleanup_free char *backup = NULL;
	if (installfile_write(&f, &backup, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cli_error("install: merged airlock's %s hooks into %s%s%s", host->name, path,
		  backup ? "; the original is in " : "", backup ? backup : "");
	install_needs(host, path, project);
	return EXIT_OK;
}

int cmd_install(int argc, char **argv)
{
	struct install_args a = { 0 };
	int status = install_parse(argc, argv, &a);
	if (status >= 0)
		return status;
	cleanup_free char *project = a.project ? realpath(a.project, NULL) : NULL;
	if (a.project && !project) {
		cli_error("install: --project %s: %s", a.project, strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	/* The hooks run this very binary: by its name on PATH when that is
	 * it, else by its resolved path (said on stderr: it must stay there). */
	cleanup_free char *self = realpath("/proc/self/exe", NULL);
	cleanup_free char *state = a.state_dir ? install_absolute(a.state_dir) : NULL;
	cleanup_free char *policy = a.policy ? realpath(a.policy, NULL) : NULL;
	if (!self || (a.state_dir && !state) || (a.policy && !policy)) {
		cli_error("install: %s: %s",
			  !self			? "/proc/self/exe"
			  : a.policy && !policy ? a.policy
						: "--state-dir",
			  strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	/* The session: the state directory and the policy the hooks name. */
	const struct session_options so = { .state_dir = state,
					    .policy_path = policy,
					    .environ_ = environ };
	cleanup_with(session_free) struct session s = { 0 };
	struct error err = { 0 };
	if (session_open(&s, &so, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *airlock = NULL;
	bool stable, build_tree;
	if (install_locate(self, strv_env_get(s.environ_, "PATH"), &airlock, &stable, &build_tree,
			   &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	const struct install_command cmd = { .airlock = airlock,
					     .session = &s,
					     .state_dir = state != NULL };
	cleanup_free char *path = install_settings_path(a.host, project, s.environ_);
	if (!path) {
		cli_error("install: no settings path: HOME is not set to an absolute path (or use --project DIR)");
		return EXIT_AIRLOCK_ERROR;
	}
	if (a.check)
		return install_check_print(a.host, &cmd, project, path);
	return install_merge_file(a.host, &cmd, path, a.write, stable, build_tree, project != NULL);
}

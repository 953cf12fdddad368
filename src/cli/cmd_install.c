/* SPDX-License-Identifier: MIT */
/* `airlock install HOST`: airlock's hooks in the host's own settings file
 * (core/hook/install.c decides what they are; docs/gate.md, "Installing"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/hook/install.h"

#define INSTALL_MAX_SETTINGS (4 << 20)

/* The settings file the host reads its hooks from: the project's when
 * project is set, else the user's. */
static char *install_settings_path(const struct agent_host *host, const char *project)
{
	if (project)
		return path_join(project, host->install_project_file);
	return agenthost_path(host, host->install_user_base, host->install_user_file,
			      getenv("HOME"), host->home_env ? getenv(host->home_env) : NULL);
}

/* What the host needs besides its settings file: facts, on stderr. */
static void install_needs(const struct agent_host *host, const char *path, bool project)
{
	char needs[2048];

	host->install_needs(path, project, needs, sizeof(needs));
	cli_error("%s", needs);
}

/* The settings document: {} when the file does not exist. *ret_text gets
 * the file's bytes (NULL when none). */
static int install_read(const char *path, json_t **ret, char **ret_text, size_t *ret_n)
{
	struct error err = { 0 };
	json_error_t jerr;

	*ret_text = NULL;
	*ret_n = 0;
	int r = file_read_capped(AT_FDCWD, path, INSTALL_MAX_SETTINGS, ret_text, ret_n, &err);
	if (r == -ENOENT) {
		*ret = json_object();
		return *ret ? EXIT_OK : EXIT_AIRLOCK_ERROR;
	}
	if (r < 0) {
		cli_error("install: %s: %s", path, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	*ret = json_loadb(*ret_text, *ret_n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(*ret)) {
		cli_error("install: %s is not a JSON object (%s, line %d); it was not touched (comments are not read: remove them, or add the hooks by hand)",
			  path, *ret ? "another type" : jerr.text, jerr.line);
		json_decref(*ret);
		*ret = NULL;
		return EXIT_AIRLOCK_ERROR;
	}
	return EXIT_OK;
}

/* Replaces path with data (atomically: a new file renamed over it), with
 * the original's mode, or 0600. */
static int install_write(const char *path, const char *data, size_t n, struct error *err)
{
	cleanup_free char *dir = path_dirname(path);
	const char *base = strrchr(path, '/') + 1;
	struct stat st;
	mode_t mode = stat(path, &st) == 0 ? st.st_mode & 07777 : 0600;

	if (!dir)
		return error_set(err, ENOMEM, "out of memory");
	int r = mkdir_parents(dir, 0700);
	if (r < 0)
		return error_set_errno(err, -r, "create %s", dir);
	cleanup_close int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open %s", dir);
	char tmp[NAME_MAX + 1];
	if (snprintf(tmp, sizeof(tmp), ".%.200s.airlock-%d", base, (int)getpid()) >= (int)sizeof(tmp))
		return error_set(err, ENAMETOOLONG, "name too long");
	(void)unlinkat(dir_fd, tmp, 0);
	r = file_write_atomic(dir_fd, tmp, data, n, mode, true, err);
	if (r < 0)
		return r;
	if (renameat(dir_fd, tmp, dir_fd, base) < 0) {
		int e = errno;
		(void)unlinkat(dir_fd, tmp, 0);
		return error_set_errno(err, e, "rename into %s", path);
	}
	return 0;
}

/* PATH.airlock-backup: the file as it was before airlock first changed
 * it; an existing backup is that original and is kept. */
static int install_backup(const char *path, const char *text, size_t n, char **ret, struct error *err)
{
	char *backup = NULL;

	if (asprintf(&backup, "%s.airlock-backup", path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = backup;
	cleanup_close int fd =
		open(backup, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : error_set_errno(err, errno, "create %s", backup);
	if (fd_write_all(fd, text, n) < 0 || fsync(fd) < 0)
		return error_set_errno(err, errno, "write %s", backup);
	return 0;
}

/* Prints what is wrong with one settings file; *ret_bad: anything was.
 * A file that does not exist is nothing (the target is: no hooks); one
 * that cannot be read, or is not what the host reads, is reported: the
 * host may read it all the same. */
static int install_check_file(const struct agent_host *host, const struct install_command *cmd,
			      const char *path, enum agenthost_format format, bool target,
			      bool *ret_bad)
{
	cleanup_free char *text = NULL;
	cleanup_strv char **lines = NULL;
	struct error err = { 0 };
	size_t n = 0;
	int r = file_read_capped(AT_FDCWD, path, INSTALL_MAX_SETTINGS, &text, &n, &err);

	if (r == -ENOENT || r == -ENOTDIR) {
		if (target) {
			cli_print("%s: missing: no airlock hooks\n", path);
			*ret_bad = true;
		}
		return EXIT_OK;
	}
	if (r < 0) {
		cli_print("%s: cannot be read (%s): what it says is not known\n", path, err.msg);
		*ret_bad = true;
		return EXIT_OK;
	}
	if (format == AGENTHOST_SETTINGS_TOML) {
		r = install_check_toml(text, n, &lines, &err);
	} else {
		json_error_t jerr;
		cleanup_with(json_decrefp) json_t *doc =
			json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(doc)) {
			cli_print("%s: not a JSON object (%s, line %d): what the host reads in it is not known\n",
				  path, doc ? "another type" : jerr.text, jerr.line);
			*ret_bad = true;
			return EXIT_OK;
		}
		r = install_check(doc, host, cmd, target, &lines, &err);
		if (r == -EINVAL) {
			cli_print("%s: %s\n", path, err.msg);
			*ret_bad = true;
			return EXIT_OK;
		}
	}
	if (r < 0) {
		cli_error("install: %s: %s", path, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	for (size_t i = 0; lines[i]; i++) {
		cli_print("%s: %s\n", path, lines[i]);
		*ret_bad = true;
	}
	return EXIT_OK;
}

/* Each *.json in dir, in name order, as install_check_file(), once: the
 * target among them (a host that reads every file of its hooks directory)
 * is read as the target. */
static int install_check_dir(const struct agent_host *host, const struct install_command *cmd,
			     const char *dir, const char *target, char ***seen, bool *ret_bad)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort), status = EXIT_OK;

	if (n < 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			cli_print("%s: cannot be read (%s): what it says is not known\n", dir,
				  strerror(errno));
			*ret_bad = true;
		}
		return EXIT_OK;
	}
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);
		if (status == EXIT_OK && names[i]->d_name[0] != '.' && len > 5 &&
		    strcmp(names[i]->d_name + len - 5, ".json") == 0) {
			cleanup_free char *p = path_join(dir, names[i]->d_name);
			if (!p)
				status = EXIT_AIRLOCK_ERROR;
			else if (!strv_contains(*seen, p))
				status = strv_push(seen, p) < 0
						 ? EXIT_AIRLOCK_ERROR
						 : install_check_file(host, cmd, p,
								      AGENTHOST_SETTINGS_JSON,
								      strcmp(p, target) == 0, ret_bad);
		}
		free(names[i]);
	}
	free(names);
	return status;
}

/* The project directories whose settings the host may merge: dir, and each
 * of its parents up to the repository's root (the first holding .git),
 * which Codex reads from the root down to the session's directory; only
 * dir when no parent is a repository's root. NULL: out of memory. */
static char **install_project_dirs(const char *dir)
{
	cleanup_strv char **dirs = calloc(1, sizeof(char *));
	cleanup_free char *d = strdup(dir);
	bool repository = false;

	if (!dirs || !d || strv_push(&dirs, d) < 0)
		return NULL;
	for (;;) {
		cleanup_free char *git = path_join(d, ".git");
		if (!git)
			return NULL;
		repository = access(git, F_OK) == 0;
		if (repository || strcmp(d, "/") == 0)
			break;
		char *parent = path_dirname(d);
		if (!parent)
			return NULL;
		free(d);
		d = parent;
		if (strv_push(&dirs, d) < 0)
			return NULL;
	}
	if (!repository) {
		for (size_t i = 1; dirs[i]; i++)
			free(dirs[i]);
		dirs[1] = NULL;
	}
	return TAKE_PTR(dirs);
}

/* One settings path, once: a file or a directory of them. */
static int install_check_path(const struct agent_host *host, const struct install_command *cmd,
			      char *path, enum agenthost_format format, const char *target,
			      char ***seen, bool *bad)
{
	if (strv_contains(*seen, path))
		return EXIT_OK;
	if (strv_push(seen, path) < 0)
		return EXIT_AIRLOCK_ERROR;
	return format == AGENTHOST_SETTINGS_JSON_DIR
		       ? install_check_dir(host, cmd, path, target, seen, bad)
		       : install_check_file(host, cmd, path, format, strcmp(path, target) == 0, bad);
}

/* `install --check`: the target file, and every other settings file the
 * host merges (the agenthost table: project, user, system), for the
 * project DIR, else the current directory's, and its parents up to the
 * repository's root. */
static int install_check_all(const struct agent_host *host, const struct install_command *cmd,
			     const char *project, const char *target)
{
	cleanup_free char *here = project ? NULL : getcwd(NULL, 0);
	cleanup_strv char **roots = NULL;
	const char *home = getenv("HOME");
	const char *host_home = host->home_env ? getenv(host->home_env) : NULL;
	cleanup_strv char **seen = calloc(1, sizeof(char *));
	bool bad = false;
	int status = EXIT_OK;

	if (project || here) {
		roots = install_project_dirs(project ? project : here);
		if (!roots)
			return EXIT_AIRLOCK_ERROR;
	}
	if (!seen)
		return EXIT_AIRLOCK_ERROR;
	for (const struct agenthost_settings *s = host->settings; s->path && status == EXIT_OK; s++) {
		if (s->base == AGENTHOST_BASE_PROJECT) {
			for (size_t i = 0; roots && roots[i] && status == EXIT_OK; i++) {
				cleanup_free char *p = path_join(roots[i], s->path);
				status = p ? install_check_path(host, cmd, p, s->format, target,
								&seen, &bad)
					   : EXIT_AIRLOCK_ERROR;
			}
			continue;
		}
		/* The host reads this file from elsewhere when s->env is set. */
		const char *moved = s->env ? getenv(s->env) : NULL;
		cleanup_free char *path =
			moved && moved[0] ? strdup(moved)
					  : agenthost_path(host, s->base, s->path, home, host_home);
		if (path)
			status = install_check_path(host, cmd, path, s->format, target, &seen, &bad);
	}
	/* The target is not in the table when the host's home_env moved it: read it. */
	if (status == EXIT_OK && !strv_contains(seen, target))
		status = install_check_file(host, cmd, target, AGENTHOST_SETTINGS_JSON, true, &bad);
	if (status != EXIT_OK)
		return status;
	if (bad)
		return EXIT_HOOK_MISCONFIGURED;
	cli_print("%s: airlock's %s hooks are present and current, and no settings level turns them off\n",
		  target, host->name);
	return EXIT_OK;
}

static char *install_absolute(const char *path)
{
	if (path[0] == '/')
		return strdup(path);
	cleanup_free char *here = getcwd(NULL, 0);
	return here ? path_join(here, path) : NULL;
}

int cmd_install(int argc, char **argv)
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
	const char *project_arg = NULL, *state_arg = NULL, *policy_arg = NULL;
	bool write = false, check = false;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case OPT_PROJECT:
			project_arg = optarg;
			break;
		case OPT_WRITE:
			write = true;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_STATE_DIR:
			state_arg = optarg;
			break;
		case OPT_POLICY:
			policy_arg = optarg;
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
	const struct agent_host *host;
	if (agenthost_from_string(argv[optind], &host, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	optind++;
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;
	if (check && write) {
		cli_error("install: --check and --write exclude each other");
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *project = project_arg ? realpath(project_arg, NULL) : NULL;
	if (project_arg && !project) {
		cli_error("install: --project %s: %s", project_arg, strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	/* The hooks run this very binary: by its name on PATH when that is
	 * it, else by its resolved path (said on stderr: it must stay there). */
	cleanup_free char *self = realpath("/proc/self/exe", NULL);
	cleanup_free char *state = state_arg ? install_absolute(state_arg) : NULL;
	cleanup_free char *policy = policy_arg ? realpath(policy_arg, NULL) : NULL;
	if (!self || (state_arg && !state) || (policy_arg && !policy)) {
		cli_error("install: %s: %s",
			  !self			  ? "/proc/self/exe"
			  : policy_arg && !policy ? policy_arg
						  : "--state-dir",
			  strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *airlock = NULL;
	bool stable, build_tree;
	if (install_locate(self, getenv("PATH"), &airlock, &stable, &build_tree, &err) < 0) {
		cli_error("install: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	struct install_command cmd = { .airlock = airlock, .state_dir = state, .policy = policy };
	cleanup_free char *path = install_settings_path(host, project);
	if (!path) {
		cli_error("install: no settings path: HOME is not set to an absolute path (or use --project DIR)");
		return EXIT_AIRLOCK_ERROR;
	}
	if (check)
		return install_check_all(host, &cmd, project, path);
	cleanup_with(json_decrefp) json_t *settings = NULL;
	cleanup_free char *text = NULL;
	size_t n;
	int status = install_read(path, &settings, &text, &n);
	if (status != EXIT_OK)
		return status;

	bool changed;
	if (install_merge(settings, host, &cmd, &changed, &err) < 0) {
		cli_error("install: %s: %s; it was not touched", path, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!stable)
		cli_error("install: warning: the hooks name %s, which is not the airlock on PATH%s: if it moves or is rebuilt elsewhere, every hook blocks every tool call until `airlock install` is run again; install airlock (e.g. /usr/bin/airlock) and run install from there",
			  airlock, build_tree ? " (it lies in a build tree)" : "");
	if (!write) {
		cleanup_with(json_decrefp) json_t *hooks = install_hooks(host, &cmd);
		cleanup_with(json_decrefp) json_t *doc =
			hooks ? json_pack("{s:O}", "hooks", hooks) : NULL;
		cleanup_free char *out = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
		if (!out)
			return EXIT_AIRLOCK_ERROR;
		puts(out);
		cli_error("install: %s: %s; --write merges them, keeping every other key", path,
			  changed ? "these hooks are not there yet, or differ"
				  : "these hooks are there already");
		install_needs(host, path, project != NULL);
		return EXIT_OK;
	}
	if (!changed) {
		cli_error("install: %s has airlock's hooks already; nothing changed", path);
		install_needs(host, path, project != NULL);
		return EXIT_OK;
	}
	cleanup_free char *out = json_dumps(settings, JSON_INDENT(2));
	cleanup_free char *backup = NULL;
	if (!out)
		return EXIT_AIRLOCK_ERROR;
	size_t len = strlen(out);
	out[len] = '\n';
	if ((text && install_backup(path, text, n, &backup, &err) < 0) ||
	    install_write(path, out, len + 1, &err) < 0) {
		cli_error("install: %s: %s", path, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cli_error("install: merged airlock's %s hooks into %s%s%s", host->name, path,
		  backup ? "; the original is in " : "", backup ? backup : "");
	install_needs(host, path, project != NULL);
	return EXIT_OK;
}

/* SPDX-License-Identifier: MIT */
#include "core/hook/installcheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/strv.h"

#define INSTALLCHECK_MAX_SETTINGS (4 << 20)

/* One walk over a host's settings files. */
struct installcheck_walk {
	const struct agent_host *host;
	const struct install_command *cmd;
	const char *target;
	char **seen; /* the paths read */
	struct installcheck_findings *found;
};

void installcheck_findings_release(struct installcheck_findings *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->items[i].path);
		free(f->items[i].detail);
	}
	free(f->items);
	*f = (struct installcheck_findings){ 0 };
}

static int installcheck_add(struct installcheck_walk *w, enum installcheck_kind kind,
			    const char *path, const char *detail, int line, struct error *err)
{
	struct installcheck_findings *f = w->found;
	struct installcheck_finding *items = realloc(f->items, (f->n + 1) * sizeof(*items));

	if (!items)
		return error_set(err, ENOMEM, "out of memory");
	f->items = items;
	items[f->n] = (struct installcheck_finding){ .kind = kind, .line = line };
	items[f->n].path = strdup(path);
	items[f->n].detail = detail ? strdup(detail) : NULL;
	f->n++;
	if (!items[f->n - 1].path || (detail && !items[f->n - 1].detail))
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* A JSON settings document's findings (install_check()), or a TOML one's. */
static int installcheck_text(struct installcheck_walk *w, const char *path, const char *text,
			     size_t n, enum agenthost_format format, bool target, struct error *err)
{
	cleanup_strv char **lines = NULL;
	int r;

	if (format == AGENTHOST_SETTINGS_TOML) {
		r = install_check_toml(text, n, &lines, err);
	} else {
		json_error_t jerr;
		cleanup_with(json_decrefp) json_t *doc =
			json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(doc))
			return installcheck_add(w, INSTALLCHECK_NOT_JSON, path,
						doc ? "another type" : jerr.text, jerr.line, err);
		struct error shape = { 0 };
		r = install_check(doc, w->host, w->cmd, target, &lines, &shape);
		if (r == -EINVAL)
			return installcheck_add(w, INSTALLCHECK_FOUND, path, shape.msg, 0, err);
		if (r < 0)
			*err = shape;
	}
	if (r < 0)
		return error_prefix(err, "%s", path);
	for (size_t i = 0; lines[i]; i++) {
		r = installcheck_add(w, INSTALLCHECK_FOUND, path, lines[i], 0, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One settings file. A file that does not exist is nothing (the target:
 * no hooks). */
static int installcheck_file(struct installcheck_walk *w, const char *path,
			     enum agenthost_format format, bool target, struct error *err)
{
	cleanup_free char *text = NULL;
	struct error rerr = { 0 };
	size_t n = 0;
	int r = file_read_capped(AT_FDCWD, path, INSTALLCHECK_MAX_SETTINGS, &text, &n, &rerr);

	if (r == -ENOENT || r == -ENOTDIR)
		return target ? installcheck_add(w, INSTALLCHECK_MISSING, path, NULL, 0, err) : 0;
	if (r < 0)
		return installcheck_add(w, INSTALLCHECK_UNREADABLE, path, rerr.msg, 0, err);
	return installcheck_text(w, path, text, n, format, target, err);
}

/* Each *.json in dir, in name order, as installcheck_file(), once: the
 * target among them (a host that reads every file of its hooks directory)
 * is read as the target. */
static int installcheck_dir(struct installcheck_walk *w, const char *dir, struct error *err)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort), r = 0;

	if (n < 0)
		return errno != ENOENT && errno != ENOTDIR
			       ? installcheck_add(w, INSTALLCHECK_UNREADABLE, dir, strerror(errno),
						  0, err)
			       : 0;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);
		if (r == 0 && names[i]->d_name[0] != '.' && len > 5 &&
		    strcmp(names[i]->d_name + len - 5, ".json") == 0) {
			cleanup_free char *p = path_join(dir, names[i]->d_name);
			if (!p)
				r = error_set(err, ENOMEM, "out of memory");
			else if (!strv_contains(w->seen, p))
				r = strv_push(&w->seen, p) < 0
					    ? error_set(err, ENOMEM, "out of memory")
					    : installcheck_file(w, p, AGENTHOST_SETTINGS_JSON,
								strcmp(p, w->target) == 0, err);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

/* The project directories whose settings the host may merge: dir, and each
 * of its parents up to the repository's root (the first holding .git),
 * which Codex reads from the root down to the session's directory; only
 * dir when no parent is a repository's root. NULL: out of memory. */
static char **installcheck_project_dirs(const char *dir)
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
static int installcheck_path(struct installcheck_walk *w, const char *path,
			     enum agenthost_format format, struct error *err)
{
	if (strv_contains(w->seen, path))
		return 0;
	if (strv_push(&w->seen, path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return format == AGENTHOST_SETTINGS_JSON_DIR
		       ? installcheck_dir(w, path, err)
		       : installcheck_file(w, path, format, strcmp(path, w->target) == 0, err);
}

/* One row of the host's settings table: at each project root, or at its
 * place (or where s->env, set, moves it). */
static int installcheck_settings(struct installcheck_walk *w, const struct agenthost_settings *s,
				 char *const *env, char *const *roots, struct error *err)
{
	const struct agent_host *host = w->host;
	int r = 0;

	if (s->base == AGENTHOST_BASE_PROJECT) {
		for (size_t i = 0; roots && roots[i] && r == 0; i++) {
			cleanup_free char *p = path_join(roots[i], s->path);
			r = p ? installcheck_path(w, p, s->format, err)
			      : error_set(err, ENOMEM, "out of memory");
		}
		return r;
	}
	const char *moved = s->env ? strv_env_get(env, s->env) : NULL;
	cleanup_free char *path =
		moved && moved[0]
			? strdup(moved)
			: agenthost_path(host, s->base, s->path, strv_env_get(env, "HOME"),
					 host->home_env ? strv_env_get(env, host->home_env) : NULL);
	return path ? installcheck_path(w, path, s->format, err) : 0;
}

int installcheck_run(const struct agent_host *host, const struct install_command *cmd,
		     char *const *env, const char *project, const char *target,
		     struct installcheck_findings *ret, struct error *err)
{
	cleanup_free char *here = project ? NULL : getcwd(NULL, 0);
	cleanup_strv char **roots = NULL;
	cleanup_strv char **seen = calloc(1, sizeof(char *));
	struct installcheck_walk w = { .host = host, .cmd = cmd, .target = target, .found = ret };
	int r = 0;

	*ret = (struct installcheck_findings){ 0 };
	if (project || here) {
		roots = installcheck_project_dirs(project ? project : here);
		if (!roots)
			return error_set(err, ENOMEM, "out of memory");
	}
	if (!seen)
		return error_set(err, ENOMEM, "out of memory");
	w.seen = TAKE_PTR(seen);
	for (const struct agenthost_settings *s = host->settings; s->path && r == 0; s++)
		r = installcheck_settings(&w, s, env, roots, err);
	/* The target is not in the table when the host's home_env moved it: read it. */
	if (r == 0 && !strv_contains(w.seen, target))
		r = installcheck_file(&w, target, AGENTHOST_SETTINGS_JSON, true, err);
	strv_free(w.seen);
	return r;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/host/hostsafety.h"
#include "core/host/hostview.h"
#include "harness.h"

static bool inert(const char *text)
{
	return hostsafety_config_is_inert(text, strlen(text));
}

static void test_config_git_init_and_clone_are_inert(void)
{
	ASSERT_TRUE(inert("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"
			  "\tbare = false\n\tlogallrefupdates = true\n"));
	ASSERT_TRUE(inert("[core]\n\tignorecase = true\n\tprecomposeunicode = true\n"
			  "\tsymlinks = false\n[init]\n\tdefaultBranch = main\n"));
	ASSERT_TRUE(inert("[remote \"origin\"]\n\turl = https://example.com/x.git\n"
			  "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
			  "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"));
	ASSERT_TRUE(inert("[remote \"o\"]\n\turl = git@example.com:x/y.git\n"));
	ASSERT_TRUE(inert("[user]\n\tname = Jane Doe\n\temail = jane@example.com\n"));
	ASSERT_TRUE(inert("# comment\n; other\n[CORE]\n\tBare ; trailing\n\n"));
	ASSERT_TRUE(inert(""));
}

static void test_config_anything_else_is_hazardous(void)
{
	static const char *const bad[] = {
		"[core]\n\tfsmonitor = touch x\n",
		"[core]\n\thooksPath = /tmp\n",
		"[core]\n\tpager = less\n",
		"[core]\n\tsshCommand = id\n",
		"[include]\n\tpath = ../x\n",
		"[includeIf \"gitdir:/\"]\n\tpath = x\n",
		"[alias]\n\tst = !id\n",
		"[filter \"x\"]\n\tclean = id\n",
		"[remote \"o\"]\n\turl = ext::sh -c id\n",
		"[remote \"o\"]\n\turl = -uhttps://x\n",
		"[remote \"o\"]\n\turl = https://x y\n",
		"[remote \"o\"]\n\tuploadpack = id\n",
		"[core]\n\tbare = \"true\"\n",
		"[core]\n\tbare = tr\\\nue\n",
		"[core.x]\n\tbare\n",
		"[core] bare = true\n",
		"bare = true\n",
		"[core]\n\tbare = \n",
		"[user]\n\tname = a\x01b\n",
		"[branch]\n\tremote = o\n",
		"[remote]\n\turl = https://x\n",
		"[core]\n\tfilemode = true; \n\teditor = vi\n",
		"[core\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (inert(bad[i]))
			fprintf(stderr, "inert: %s\n", bad[i]);
		ASSERT_TRUE(!inert(bad[i]));
	}
	ASSERT_TRUE(!hostsafety_config_is_inert("[core]\n\tbare\0\n", 13));
}

static void write_file(int dir_fd, const char *path, const char *text)
{
	int fd = openat(dir_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
}

static bool has_item(const struct hostsafety_report *r, const char *path, enum hostsafety_kind kind)
{
	for (size_t i = 0; i < r->n_items; i++)
		if (strcmp(r->items[i].path, path) == 0 && r->items[i].kind == kind)
			return true;
	return false;
}

/* The walk finds each shape; what is older than the run stays. */
static void test_scan_finds_git_shapes_and_spares_old_files(void)
{
	char ws[] = "/tmp/airlock-hostsafety-XXXXXX";
	struct error err = { 0 };

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	const char *dirs[] = { "a", "a/.git", "a/.git/hooks", "b", "b/objects", "b/refs",
			       "c", "d",      "d/.git" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		ASSERT_EQ_INT(mkdirat(fd, dirs[i], 0755), 0);
	write_file(fd, "a/.git/config", "[core]\n\tbare = false\n");
	write_file(fd, "a/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
	write_file(fd, "a/.git/hooks/pre-commit", "#!/bin/sh\n");
	write_file(fd, "b/HEAD", "ref: refs/heads/main\n");
	write_file(fd, "b/config", "[core]\n\tfsmonitor = id\n");
	write_file(fd, "c/.git", "gitdir: ../b\n");
	write_file(fd, "d/.git/commondir", "../b\n");
	write_file(fd, ".envrc", "id\n");

	char envrc[] = ".envrc", airlock[] = ".airlock", hooks[] = ".git/hooks";
	char *protected_paths[] = { envrc, airlock, hooks, NULL };
	struct hostsafety_request req = {
		.root_fd = fd, .lower_fd = -1, .protected_paths = protected_paths, .since_ns = 1
	};
	struct hostsafety_report r;
	ASSERT_EQ_INT(hostsafety_scan(&req, &r, &err), 0);
	ASSERT_TRUE(!r.incomplete);
	ASSERT_EQ_INT(r.n_items, 5);
	ASSERT_TRUE(has_item(&r, "a/.git/hooks/pre-commit", HOSTSAFETY_GIT_HOOK));
	ASSERT_TRUE(has_item(&r, "b/config", HOSTSAFETY_GIT_CONFIG));
	ASSERT_TRUE(has_item(&r, "c/.git", HOSTSAFETY_GIT_INDIRECTION));
	ASSERT_TRUE(has_item(&r, "d/.git/commondir", HOSTSAFETY_GIT_INDIRECTION));
	ASSERT_TRUE(has_item(&r, ".envrc", HOSTSAFETY_PROTECTED_PATH));
	ASSERT_TRUE(hostsafety_report_failed(&r));
	hostsafety_report_release(&r);

	/* A run that started after all of this finds nothing of its own. */
	req.since_ns = (int64_t)time(NULL) * 1000000000LL + 3 * HOSTSAFETY_CLOCK_MARGIN_NS;
	ASSERT_EQ_INT(hostsafety_scan(&req, &r, &err), 0);
	ASSERT_EQ_INT(r.n_items, 0);
	ASSERT_TRUE(!hostsafety_report_failed(&r));
	ASSERT_TRUE(r.entries == 17);
	hostsafety_report_release(&r);

	close(fd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* Moving aside never follows a symlink on the way. */
static void test_move_aside_refuses_symlinked_parents(void)
{
	char ws[] = "/tmp/airlock-hostsafety-XXXXXX", state[] = "/tmp/airlock-hsstate-XXXXXX";
	struct error err = { 0 };
	struct store *store = NULL;

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	ASSERT_TRUE(mkdtemp(state) != NULL);
	ASSERT_EQ_INT(store_open(state, true, &store, &err), 0);
	int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(mkdirat(fd, "real", 0755), 0);
	write_file(fd, "real/hook", "x");
	ASSERT_EQ_INT(symlinkat("real", fd, "link"), 0);
	struct hostsafety_report r = { 0 };
	r.items = calloc(2, sizeof(*r.items));
	r.items[0] = (struct hostsafety_item){ .path = strdup("link/hook") };
	r.items[1] = (struct hostsafety_item){ .path = strdup("real/hook") };
	r.n_items = 2;
	ASSERT_EQ_INT(hostsafety_move_aside(store, 7, fd, &r, &err), 0);
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(r.items[i].path, "link/hook") == 0) {
			ASSERT_TRUE(r.items[i].moved_to == NULL);
			ASSERT_EQ_INT(r.items[i].move_errno, ELOOP);
		} else {
			ASSERT_TRUE(r.items[i].moved_to != NULL);
			ASSERT_EQ_INT(access(r.items[i].moved_to, F_OK), 0);
		}
	}
	ASSERT_EQ_INT(faccessat(fd, "real/hook", F_OK, 0), -1);
	hostsafety_report_release(&r);
	store_free(store);
	close(fd);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", ws, state);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* A host's configuration anywhere but at the protected and sealed paths:
 * the run's own entry whole, or what it changed below an older one. */
static void test_scan_finds_host_config_outside_protected_paths(void)
{
	char ws[] = "/tmp/airlock-hostcfg-XXXXXX";
	struct error err = { 0 };

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	const char *dirs[] = { ".claude", "old",	 "old/.claude", "old/.claude/agents",
			       "new",	  "new/.gemini", "mine",	"mine/.codex" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		ASSERT_EQ_INT(mkdirat(fd, dirs[i], 0755), 0);
	write_file(fd, ".claude/settings.local.json", "{}");
	write_file(fd, "old/.claude/agents/a.md", "---\n");
	write_file(fd, "old/notes.txt", "x");
	write_file(fd, "new/.gemini/settings.json", "{}");
	write_file(fd, "new/.mcp.json", "{}");
	write_file(fd, "mine/.codex/config.toml", "x");
	struct stat st;
	ASSERT_EQ_INT(fstatat(fd, "new/.gemini/settings.json", &st, 0), 0);
	int64_t mid = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;

	char claude[] = ".claude", mine[] = "mine/.codex", gemini[] = ".gemini", mcp[] = ".mcp.json";
	char *sealed[] = { claude, NULL }, *protected_paths[] = { mine, NULL };
	char *names[] = { claude, gemini, mcp, NULL };
	struct hostsafety_request req = { .root_fd = fd,
					  .lower_fd = -1,
					  .protected_paths = protected_paths,
					  .sealed_paths = sealed,
					  .host_config_names = names,
					  .since_ns = 1 };
	struct hostsafety_report r;
	ASSERT_EQ_INT(hostsafety_scan(&req, &r, &err), 0);
	ASSERT_TRUE(!r.incomplete);
	/* mine/.codex is judged as a protected path (the run made it), .claude
	 * is sealed; the others are the hosts'. */
	ASSERT_TRUE(has_item(&r, "old/.claude", HOSTSAFETY_HOST_CONFIG));
	ASSERT_TRUE(has_item(&r, "new/.gemini", HOSTSAFETY_HOST_CONFIG));
	ASSERT_TRUE(has_item(&r, "new/.mcp.json", HOSTSAFETY_HOST_CONFIG));
	ASSERT_TRUE(has_item(&r, "mine/.codex", HOSTSAFETY_PROTECTED_PATH));
	ASSERT_EQ_INT(r.n_items, 4);
	hostsafety_report_release(&r);

	/* From a later start: only what changed below an older directory. */
	req.since_ns = mid;
	req.protected_paths = NULL;
	ASSERT_EQ_INT(hostsafety_scan(&req, &r, &err), 0);
	for (size_t i = 0; i < r.n_items; i++)
		ASSERT_TRUE(strcmp(r.items[i].path, "old/notes.txt") != 0);
	hostsafety_report_release(&r);

	close(fd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* hostview_config_files() as it was built before one list was grown for
 * it (a strv per call, a string per host and directory), for a caller
 * whose homes are given. */
static char **oracle_config_files(const char *ws, const struct hostview_caller *c)
{
	char **v = NULL;

	if (ws && ws[0] == '/') {
		strv_consume(&v, path_join(ws, ".airlock"));
		for (size_t h = 0; h < agenthost_count(); h++)
			for (size_t k = 0;
			     agenthost_at(h)->project_dirs && agenthost_at(h)->project_dirs[k]; k++)
				strv_consume(&v, path_join(ws, agenthost_at(h)->project_dirs[k]));
		for (size_t h = 0; h < agenthost_count(); h++)
			for (size_t k = 0;
			     agenthost_at(h)->project_config && agenthost_at(h)->project_config[k]; k++)
				strv_consume(&v, path_join(ws, agenthost_at(h)->project_config[k]));
	}
	for (size_t i = 0; c->homes && c->homes[i]; i++) {
		strv_consume(&v, path_join(c->homes[i], ".airlock"));
		for (size_t h = 0; h < agenthost_count(); h++)
			for (size_t k = 0;
			     agenthost_at(h)->user_config && agenthost_at(h)->user_config[k]; k++)
				strv_consume(&v,
					     path_join(c->homes[i], agenthost_at(h)->user_config[k]));
	}
	for (size_t h = 0; h < agenthost_count(); h++)
		if (c->host_home[h] && c->host_home[h][0] == '/')
			for (size_t k = 0;
			     agenthost_at(h)->home_config && agenthost_at(h)->home_config[k]; k++)
				strv_consume(&v, path_join(c->host_home[h],
							   agenthost_at(h)->home_config[k]));
	return v;
}

/* Appends each of configs below ws (not it), once. */
static void oracle_push_inside(char ***v, char **configs, const char *ws)
{
	for (size_t i = 0; configs && configs[i]; i++)
		if (path_is_under(configs[i], ws) && strcmp(configs[i], ws) != 0 &&
		    !strv_contains(*v, configs[i]))
			strv_push(v, configs[i]);
}

/* hostview_config_in_workspace() as it was: the whole list of the
 * workspace for the caller with its homes resolved, and of each directory
 * down to cwd for one without, each path below the workspace copied. */
static char **oracle_config_in_workspace(const char *ws, const char *cwd,
					 const struct hostview_caller *c)
{
	cleanup_free char *home = c->home ? hostview_resolve_in(NULL, c->home) : NULL;
	char *host_home[AGENTHOST_MAX] = { 0 };
	struct hostview_caller resolved = { .home = home, .uid = c->uid };
	const struct hostview_caller nobody = { .uid = c->uid };
	char **v = NULL;

	for (size_t h = 0; h < agenthost_count(); h++)
		if (c->host_home[h] && c->host_home[h][0] == '/')
			resolved.host_home[h] = host_home[h] =
				hostview_resolve_in(NULL, c->host_home[h]);
	struct error err;
	cleanup_strv char **configs = NULL;
	if (hostview_config_files(ws, &resolved, &configs, &err) == 0)
		oracle_push_inside(&v, configs, ws);
	if (cwd && path_is_under(cwd, ws))
		for (const char *p = cwd + strlen(ws); (p = strchr(p, '/')); p++) {
			const char *end = strchr(p + 1, '/');
			cleanup_free char *dir = strndup(cwd, end ? (size_t)(end - cwd) : strlen(cwd));
			cleanup_strv char **sub = NULL;
			if (hostview_config_files(dir, &nobody, &sub, &err) == 0)
				oracle_push_inside(&v, sub, ws);
		}
	for (size_t h = 0; h < AGENTHOST_MAX; h++)
		free(host_home[h]);
	return v;
}

static bool same_list(char **a, char **b)
{
	size_t i = 0;

	for (; a && a[i] && b && b[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return (!a || !a[i]) && (!b || !b[i]);
}

/* The configuration lists made faster decide nothing differently: the same
 * paths in the same order, for workspaces, cwds, homes and $CODEX_HOMEs
 * that hold, lie in, are or miss one another (trailing slashes, "/",
 * relative ones too). */
static void test_config_lists_as_before(void)
{
	static const char *const wss[] = { "/w", "/w/proj", "/w/",	 "/root", "/root/.claude",
					   "/",	 "/home/u", "/w/proj/h", "rel",	  NULL };
	static const char *const subs[] = { NULL, "", "/a", "/a/b/c", "/.claude/x", "x", NULL };
	static const char *const homes[] = { NULL,     "/root",	  "/w",	 "/w/proj/h", "/",
					     "/root/", "/w/proj", "rel", "/home/u/",  NULL };
	size_t n = 0, codex = agenthost_count();

	for (size_t h = 0; h < agenthost_count(); h++)
		if (agenthost_at(h)->home_env)
			codex = h;
	for (size_t w = 0; wss[w]; w++)
		for (size_t s = 0; s < sizeof(subs) / sizeof(subs[0]); s++)
			for (size_t m = 0; m < sizeof(homes) / sizeof(homes[0]); m++)
				for (size_t x = 0; x < sizeof(homes) / sizeof(homes[0]); x++) {
					cleanup_free char *cwd =
						subs[s] ? malloc(strlen(wss[w]) + strlen(subs[s]) + 1)
							: NULL;
					if (cwd)
						strcat(strcpy(cwd, wss[w]), subs[s]);
					struct hostview_caller c = { .home = homes[m],
								     .uid = geteuid() };
					if (codex < agenthost_count())
						c.host_home[codex] = homes[x];
					struct error err;
					cleanup_strv char **a = NULL, **b = NULL, **given = NULL;
					cleanup_strv char **oa =
						oracle_config_in_workspace(wss[w], cwd, &c);
					ASSERT_EQ_INT(hostview_config_in_workspace(wss[w], cwd, &c,
										   &a, &err),
						      0);
					if (!same_list(a, oa))
						printf("# in workspace %s, cwd %s, home %s, codex %s: differ\n",
						       wss[w], cwd ? cwd : "(null)",
						       homes[m] ? homes[m] : "(null)",
						       homes[x] ? homes[x] : "(null)");
					ASSERT_TRUE(same_list(a, oa));
					/* config_files with homes given */
					if (homes[m])
						strv_push(&given, homes[m]);
					if (homes[x] && homes[x] != homes[m])
						strv_push(&given, homes[x]);
					c.homes = given ? given : (char *[]){ NULL };
					cleanup_strv char **ob = oracle_config_files(wss[w], &c);
					ASSERT_EQ_INT(hostview_config_files(wss[w], &c, &b, &err), 0);
					ASSERT_TRUE(same_list(b, ob));
					n++;
				}
	ASSERT_TRUE(n > 1000);
}

static bool same_set(char *const *a, char *const *b)
{
	for (size_t i = 0; a && a[i]; i++)
		if (!strv_contains(b, a[i]))
			return false;
	for (size_t i = 0; b && b[i]; i++)
		if (!strv_contains(a, b[i]))
			return false;
	return true;
}

/* The hook's configuration check merges hostview_config_files() of the
 * payload's scope with hostview_config_in_workspace() of the file's; when
 * both scopes are one and hostview_config_in_workspace_covers() it, the
 * first is asked without the workspace (each path walked once). The
 * merged set must be the same: old and new, over workspaces (trailing
 * '/', "/", relative), cwds and homes. */
static void test_config_merge_without_workspace_as_before(void)
{
	static const char *const wss[] = { "/w", "/w/proj", "/w/",	 "/root", "/root/.claude",
					   "/",	 "/home/u", "/w/proj/h", "rel",	  "//w",
					   NULL };
	static const char *const subs[] = { NULL, "", "/a", "/a/b/c", "/.claude/x", "/.git", NULL };
	static const char *const homes[] = { NULL, "/root",  "/w",  "/w/proj/h",
					     "/",  "/root/", "rel", NULL };
	size_t n = 0, skipped = 0;

	ASSERT_TRUE(hostview_config_in_workspace_covers("/w/proj"));
	ASSERT_TRUE(hostview_config_in_workspace_covers("/"));
	ASSERT_TRUE(!hostview_config_in_workspace_covers("/w/"));
	ASSERT_TRUE(!hostview_config_in_workspace_covers("rel"));
	ASSERT_TRUE(!hostview_config_in_workspace_covers(""));
	ASSERT_TRUE(!hostview_config_in_workspace_covers(NULL));
	for (size_t w = 0; wss[w]; w++)
		for (size_t s = 0; s < sizeof(subs) / sizeof(subs[0]); s++)
			for (size_t m = 0; m < sizeof(homes) / sizeof(homes[0]); m++) {
				cleanup_free char *cwd =
					subs[s] ? malloc(strlen(wss[w]) + strlen(subs[s]) + 1) : NULL;
				if (cwd)
					strcat(strcpy(cwd, wss[w]), subs[s]);
				cleanup_strv char **given = NULL;
				if (homes[m])
					strv_push(&given, homes[m]);
				struct hostview_caller c = { .home = homes[m], .uid = geteuid() };
				c.homes = given ? given : (char *[]){ NULL };
				struct error err;
				cleanup_strv char **more = NULL, **old = NULL, **now = NULL;
				ASSERT_EQ_INT(hostview_config_in_workspace(wss[w], cwd, &c, &more, &err),
					      0);
				bool once = hostview_config_in_workspace_covers(wss[w]);
				ASSERT_EQ_INT(hostview_config_files(wss[w], &c, &old, &err), 0);
				ASSERT_EQ_INT(hostview_config_files(once ? NULL : wss[w], &c, &now,
								    &err),
					      0);
				for (size_t k = 0; more && more[k]; k++) {
					strv_push(&old, more[k]);
					strv_push(&now, more[k]);
				}
				if (!same_set(old, now))
					printf("# workspace %s, cwd %s, home %s: differ\n", wss[w],
					       cwd ? cwd : "(null)", homes[m] ? homes[m] : "(null)");
				ASSERT_TRUE(same_set(old, now));
				n++;
				skipped += once;
			}
	ASSERT_TRUE(n > 400 && skipped > 200);
}

RUN_TESTS(T_(test_config_git_init_and_clone_are_inert), T_(test_config_anything_else_is_hazardous),
	  T_(test_scan_finds_git_shapes_and_spares_old_files),
	  T_(test_scan_finds_host_config_outside_protected_paths),
	  T_(test_move_aside_refuses_symlinked_parents), T_(test_config_lists_as_before),
	  T_(test_config_merge_without_workspace_as_before))

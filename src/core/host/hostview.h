/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "basic/error.h"
#include "core/agents/agenthost.h"
#include "core/policy/policy.h"
#include "sandbox/sandbox.h"

/* What of the host a quarantined command sees (docs/sandbox.md, "What the
 * command sees of the host"): which workspaces are refused, and which host
 * paths are hidden, masked or left visible. Every path here is absolute and
 * resolved (symlinks and ".." gone) where it exists. */

/* Workspaces refused unless the caller says so (--allow-workspace). A
 * workspace that holds a state directory, or lies inside one, is always
 * refused. */
enum hostview_allow {
	HOSTVIEW_ALLOW_HOME = 1 << 0, /* a home directory, or an ancestor of one */
	HOSTVIEW_ALLOW_SYSTEM = 1 << 1, /* /, /etc, /usr, /var, ... */
};

/* "home", "system" or a comma-separated list of them, ORed into *flags;
 * -EINVAL for anything else. */
int hostview_parse_allow(const char *text, unsigned *flags);
/* The names of the flags set, in a fixed order, NULL-terminated (static). */
void hostview_allow_names(unsigned flags, const char *ret[static 3]);

/* The caller, as the quarantine is built for it. */
/* What the resolutions of one check found (hostview_resolve_in()). */
struct hostview_cache;

struct hostview_caller {
	/* $HOME; may be NULL. "~/" means it and the passwd home of uid
	 * (getpwuid_r), each where it exists: hidden means hidden however
	 * $HOME is set. */
	const char *home;
	/* Each agent host's own home (agent_host.home_env: $CODEX_HOME),
	 * by its place in the table (agenthost_at()); each may be NULL. */
	const char *host_home[AGENTHOST_MAX];
	uid_t uid; /* effective */
	/* The caller's homes as every list takes them ("~/"), once found by
	 * hostview_caller_keep_homes() for a call that makes many lists (its
	 * owner frees them, strv_free()); NULL: each list finds them. */
	char **homes;
	/* The check's resolutions (hostview_cache_new(), freed by its owner):
	 * every path the lists resolve for this caller goes through it; NULL:
	 * each is resolved afresh (hostview_resolve()). */
	struct hostview_cache *cache;
};

/* The caller a run, doctor and the hook judge paths for: $HOME and each
 * host's home_env of environ_ (pointing into it) and the effective uid. */
struct hostview_caller hostview_caller_from_env(char *const *environ_);

/* Whether the text of an nsswitch.conf has glibc ask the files service
 * first for passwd, with nothing that goes on past its answer: a line of
 * the passwd database, every such line written "passwd" (one in another
 * case: false), names "files" first, no action after it; false without
 * such a line. Then a uid /etc/passwd has is NSS's answer from there
 * (core/host/hostview.c). */
bool hostview_nss_files_first(const char *nsswitch);

/* Finds the caller's homes ($HOME, and the passwd home unless it resolves
 * where $HOME does) into caller->homes: the lists made after it, for this
 * caller, take them from there instead of each finding them again. */
int hostview_caller_keep_homes(struct hostview_caller *caller);

/* Every state directory airlock would use, resolved where it exists and as
 * written where it does not yet: in_use (the one this run opened), the
 * default locations ($AIRLOCK_STATE_DIR, $XDG_STATE_HOME/airlock,
 * ~/.local/state/airlock for $HOME and for the passwd home), and the system
 * approver's /etc/airlock. */
int hostview_state_dirs(const char *in_use, char *const *environ_,
			const struct hostview_caller *caller, char ***ret, struct error *err);

/* 0 when the (resolved) workspace may be made writable; else -EPERM with a
 * message that says what it is and which --allow-workspace would allow it. */
int hostview_check_workspace(const char *workspace, unsigned allowed, char *const *state_dirs,
			     const struct hostview_caller *caller, struct error *err);

/* Every file of airlock's configuration that a command or a file tool must
 * not rewrite, as joined, not resolved (each reader resolves them as it
 * resolves what it compares): .airlock/ (the policy of routed commands) and
 * every agent host's project_dirs and project_config (agenthost.h) below
 * the workspace (when not NULL), .airlock/ and every host's user_config
 * below each of the caller's homes ($HOME and the passwd home), and each
 * host's home_config below its home_env ($CODEX_HOME: hooks.json,
 * config.toml, rules, skills) when that is absolute. */
int hostview_config_files(const char *workspace, const struct hostview_caller *caller, char ***ret,
			  struct error *err);

/* The names of the entries hostview_config_files() puts in a workspace,
 * each once: .airlock and each host's project directory or top-level file
 * (".claude", ".mcp.json", ...). Anywhere in a workspace, one of them is
 * what a host started in that directory would read. */
int hostview_config_names(char ***ret);

/* The entries of hostview_config_files() that lie in the (resolved)
 * workspace, each once: its own and those of every directory from it down
 * to cwd (a host started in a subdirectory reads that one's settings),
 * joined as they are (a symlinked .claude is the link, which the quarantine
 * pins, and its target); the home's and the hosts' homes' (home_env) with those resolved
 * (the home may be the workspace, or hold it). A quarantined run keeps them
 * read-only where they exist and moves aside what the command creates there
 * (docs/sandbox.md, "Host configuration"); those outside the workspace are
 * read-only in the host view already. *ret may be NULL: none. */
int hostview_config_in_workspace(const char *workspace, const char *cwd,
				 const struct hostview_caller *caller, char ***ret, struct error *err);

/* Whether hostview_config_in_workspace(workspace, ...) holds every entry
 * hostview_config_files(workspace, ...) puts in the workspace (each lies
 * below it: an absolute workspace without a trailing '/', or "/"), so
 * that a caller merging both lists may leave them out of the first
 * (hostview_config_files(NULL, ...)) and walk each once. */
bool hostview_config_in_workspace_covers(const char *workspace);

/* 0 when the (resolved) directory may be made writable for a run besides
 * its workspace (policy sandbox.writable); else -EPERM with a message
 * saying what it is. Refused: a directory that is or holds a state
 * directory, or lies in one; `/` and the system directories; a home, or
 * one that holds a home; one that is, holds or lies in the workspace; one
 * named .airlock or below one; one that is, holds or lies in airlock's
 * configuration (hostview_config_files()) in the workspace or the caller's
 * home. No option allows any of these. */
int hostview_check_writable(const char *dir, const char *workspace, char *const *state_dirs,
			    const struct hostview_caller *caller, struct error *err);

/* One sandbox.writable entry as a run takes it: "~/" expanded in the
 * caller's home, the directory opened (O_PATH, following links: a link means
 * its target), and the path of that descriptor checked with
 * hostview_check_writable(). Returns the descriptor (O_CLOEXEC), with its
 * stat in *ret_st and that path in *ret_path; else a negative errno with a
 * message naming the entry (the refusal a run gives). */
int hostview_open_writable(const char *entry, const char *workspace, char *const *state_dirs,
			   const struct hostview_caller *caller, struct stat *ret_st,
			   char **ret_path, struct error *err);

/* What is hidden from a run: the policy's sandbox.hide with "~/" expanded
 * in each of the caller's homes ($HOME and the passwd home), each agent
 * host's credential files in each of them (agenthost.h) and its
 * home_credentials in its absolute home_env (Codex's auth.json in
 * $CODEX_HOME), the state directories, and masks
 * (an empty view except what they expose) over the other users' homes
 * (/home, and /root unless root calls) and, in sandbox.home "hidden" mode,
 * over the caller's homes. */
struct hostview {
	char **hide;
	struct sandbox_mask masks[SANDBOX_MAX_MASKS];
	char *mask_paths[SANDBOX_MAX_MASKS];
	char **expose[SANDBOX_MAX_MASKS];
	size_t n_masks;
};

int hostview_build(const struct policy *policy, const struct hostview_caller *caller,
		   const char *workspace, char *const *state_dirs, struct hostview *ret,
		   struct error *err);
void hostview_release(struct hostview *hv);

/* The absolute path resolved as far as it exists, the rest appended as
 * written: a link on the way to a path that does not exist yet is still
 * followed. NULL when out of memory or path is not absolute. */
char *hostview_resolve(const char *path);
/* hostview_resolve() through c, which keeps every answer for the paths
 * asked again and the realpath() of each directory on the way, so that
 * the many lists of one check (the homes, the state directories, the
 * system directories, the configuration) readlink() each component once,
 * not once per path (glibc's realpath() readlinks every component of every
 * path). The same answers as hostview_resolve() for the paths as they were
 * when first looked at (tests/unit/test_hookpath.c compares the two). c
 * NULL: hostview_resolve(). Only for one check: a cache holds what the
 * host looked like, not what it looks like now. */
struct hostview_cache *hostview_cache_new(void);
/* The most names of the root directory a cache reads whole ("." and ".."
 * are none of them); a root that holds more is asked name by name. */
#define HOSTVIEW_ROOT_MAX_NAMES 128
void hostview_cache_free(struct hostview_cache *c);
char *hostview_resolve_in(struct hostview_cache *c, const char *path);
/* "~/x" in the caller's home, any other path copied; NULL when there is no
 * home to expand it in (or no memory). */
char *hostview_expand_home(const char *path, const char *home);

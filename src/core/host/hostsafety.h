/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/store/store.h"

/* Files a command leaves behind that make a host tool run code nobody asked
 * for (docs/sandbox.md, "Code for the host"): git configs, hooks and
 * commondir/gitdir indirections, in the workspace's repository, in nested
 * repositories (a `.git` directory, a bare-repository shape: HEAD with
 * objects/ or commondir) and in submodules; and whatever the command created
 * at a protected path (sandbox.read_only) that protect.c could not mount
 * because it did not exist; and an agent host's configuration the command
 * made or changed anywhere else in the tree (host_config_names).
 *
 * After a quarantined run the workspace is walked with getdents (the type
 * from d_type; a stat only for names that matter), without following any
 * symlink. An entry counts as the run's when its ctime (which a command can
 * not set back) is at or after the run's start on the file systems' coarse
 * clock, less 2 s on a file system that keeps whole seconds only (seen as a
 * workspace whose own times have no nanoseconds); what the run did not touch
 * is the user's and stays.
 * What is found is moved aside into <state>/quarantine/<receipt id>/ under
 * its path in the workspace. */

#define HOSTSAFETY_MAX_ENTRIES 1000000 /* directory entries one walk reads */
#define HOSTSAFETY_MAX_DEPTH   128 /* a tree moved aside (copied) */
/* How deep the walk reads: as deep as a dry run's change set
 * (CHANGESET_MAX_DEPTH), one descriptor and a frame per level. The walk
 * recurses: 1,024 levels fit the default 8 MiB stack with room to spare
 * even with ASan's larger frames (4,096 did not). */
#define HOSTSAFETY_WALK_MAX_DEPTH   1024
#define HOSTSAFETY_MAX_ITEMS	    256
#define HOSTSAFETY_CONFIG_MAX_BYTES (64 << 10)
#define HOSTSAFETY_CLOCK_MARGIN_NS  2000000000LL /* file systems with 1 s or 2 s times */

enum hostsafety_kind {
	HOSTSAFETY_GIT_CONFIG, /* config or config.worktree that is not inert */
	HOSTSAFETY_GIT_HOOK, /* hooks/<name>, other than <name>.sample */
	HOSTSAFETY_GIT_INDIRECTION, /* commondir, gitdir, a `.git` file or symlink */
	HOSTSAFETY_PROTECTED_PATH, /* created at a sandbox.read_only path */
	HOSTSAFETY_HOST_CONFIG, /* an agent host's configuration elsewhere in the tree */
};
const char *hostsafety_kind_to_string(enum hostsafety_kind kind);

struct hostsafety_item {
	char *path; /* relative to the workspace */
	enum hostsafety_kind kind;
	char *moved_to; /* absolute, in the state directory; NULL when not moved */
	int move_errno; /* why it could not be moved, else 0 */
};

struct hostsafety_report {
	struct hostsafety_item *items;
	size_t n_items;
	uint64_t entries; /* directory entries read */
	bool incomplete; /* the walk could not finish: reason says why */
	char reason[256];
};
void hostsafety_report_release(struct hostsafety_report *report);
/* Whether the run must open a failure: something was found, or the walk
 * could not prove there was nothing. */
bool hostsafety_report_failed(const struct hostsafety_report *report);

struct hostsafety_request {
	int root_fd; /* the tree walked: the workspace, or a dry run's upper layer */
	int lower_fd; /* a dry run's workspace, which completes the upper's entries; or -1 */
	char *const *protected_paths; /* relative to the workspace (sandbox.read_only) */
	/* Protected paths the command could not change (read-only before the
	 * run, or below such a directory), relative: not judged, nor anything
	 * below them; a change there is the user's. NULL: none. */
	char *const *sealed_paths;
	/* The run's start on the file systems' clock (clock_realtime_coarse_ns(),
	 * read before the command started); 0: all of root_fd is the run's. */
	int64_t since_ns;
	/* Git directories of the workspace's own repository whose config or
	 * hooks were mounted read-only for the run (hostsafety_known_gitdirs(),
	 * read before it), relative to the workspace; NULL: none. Any other
	 * git directory that the run made, renamed in or completed (its own
	 * ctime, or that of HEAD, objects or commondir, is the run's) has its
	 * every config, hook and indirection judged, whatever their ctime: a
	 * run could have staged them earlier in a directory that was not yet
	 * a git directory. */
	char *const *known_gitdirs;
	/* The names of airlock's and the agent hosts' project configuration
	 * (.airlock, a project's .claude, .gemini, .codex, .mcp.json:
	 * hostview_config_names()), found anywhere in
	 * the tree but at protected_paths and sealed_paths: such an entry the
	 * run made or changed, or an entry below such a directory that it made
	 * or changed, is the run's configuration for a host (one started
	 * there, or discovering nested skills). NULL: none. */
	char *const *host_config_names;
};

/* Walks req->root_fd and fills *ret (which the caller releases). Returns 0
 * also when the walk stopped at a limit (ret->incomplete); < 0 only when
 * out of memory or root_fd cannot be read. */
int hostsafety_scan(const struct hostsafety_request *req, struct hostsafety_report *ret,
		    struct error *err);

/* Moves every item of report out of root_fd into the quarantine directory
 * of receipt id (store_open_quarantine), by rename or, across file systems,
 * by copy and removal, never following a symlink. An item that cannot be
 * moved keeps moved_to NULL with move_errno set; returns < 0 only when the
 * quarantine directory itself cannot be made. */
int hostsafety_move_aside(struct store *store, uint64_t id, int root_fd,
			  struct hostsafety_report *report, struct error *err);

/* Appends to *paths (absolute) the files of the workspace's own repository
 * that would run code on the host and exist now, beyond the policy's
 * .git/config and .git/hooks: .git/commondir, .git/config.worktree,
 * .git/modules/<m>/{config,hooks}, .git/worktrees/<w>/{commondir,gitdir,
 * config.worktree}; at most HOSTSAFETY_MAX_PROTECTED, so that their mounts
 * and pins stay well within PROTECT_MAX_MOUNTS. They are mounted read-only
 * for the run, so the user's own are not changed (and not moved aside). */
#define HOSTSAFETY_MAX_PROTECTED 24
int hostsafety_protect_existing(const char *workspace, char ***paths);
/* The git directories among .git, .git/modules/<m> and .git/worktrees/<w>
 * whose config or hooks exist now (so are mounted read-only for the run),
 * appended to *rels relative to the workspace. */
int hostsafety_known_gitdirs(const char *workspace, char ***rels);

/* A git config (text of n bytes) that makes no git command run anything:
 * only keys of a short allowlist (core.repositoryformatversion, filemode,
 * bare, logallrefupdates, ignorecase, precomposeunicode, symlinks;
 * init.defaultbranch; branch.*.remote|merge; remote.*.url|fetch with an
 * ordinary URL; user.name|email), with plain values, no include. Anything
 * it does not recognise is not inert. */
bool hostsafety_config_is_inert(const char *text, size_t n);

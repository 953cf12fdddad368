/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/error.h"
#include "core/agents/agenthost.h"

/* `airlock install` (docs/gate.md, "Installing"): the hooks each host
 * needs, merged into its settings document without touching anything
 * else. An airlock hook is a command hook whose command's words are
 * `.../airlock hook DIALECT ...`; merging replaces those of the host's
 * dialect and keeps every other hook and key, so that merging twice
 * changes nothing. */

struct session;

/* What the hook commands run: airlock's absolute path (install_locate()),
 * and the options passed on: the session's state directory (when
 * state_dir: it was given, not the default) and its policy_path (when
 * set). session NULL: none. Every command runs it behind a /bin/sh wrapper
 * that turns a status airlock did not give (it is missing, cannot run, was
 * killed) into the hosts' blocking exit 2. */
struct install_command {
	const char *airlock;
	const struct session *session;
	bool state_dir;
};

/* {"EVENT": [{"matcher": ..., "hooks": [...]}], ...}: airlock's hooks for
 * host, in the shape of the host's settings. NULL: out of memory. */
json_t *install_hooks(const struct agent_host *host, const struct install_command *cmd);

/* Merges install_hooks() into settings (the whole settings document, an
 * object): each event's airlock group goes where the first airlock hook of
 * this dialect was, or last; airlock hooks of this dialect elsewhere are
 * removed. *ret_changed: settings is now different. -EINVAL when the
 * document's "hooks" has a shape the host would not read either. */
int install_merge(json_t *settings, const struct agent_host *host,
		  const struct install_command *cmd, bool *ret_changed, struct error *err);

/* What is wrong with one settings document of host (a strv of one-line
 * descriptions, empty when nothing is). target: the file `install` writes,
 * which must hold airlock's hooks, current; in every other file the host
 * merges, an airlock hook must be the same or absent. In any: a switch that
 * turns hooks off (disableAllHooks, allowManagedHooksOnly,
 * hooksConfig.enabled false, hooksConfig.disabled naming airlock's,
 * tools.enableHooks false), and any other hook in the pre-tool event, which
 * may rewrite the input airlock routed. */
int install_check(json_t *settings, const struct agent_host *host,
		  const struct install_command *cmd, bool target, char ***ret, struct error *err);

/* Codex's TOML (config.toml, requirements.toml), read by a line scan, not a
 * parser: each line ("line N: TEXT: why") that may turn hooks off or define
 * a hook: `[features]` hooks or codex_hooks = false (also dotted and
 * inline), enabled = false under `[hooks...]` or on a line naming hooks,
 * allow_managed_hooks_only = true, a command in a `[hooks...]` table, and
 * any other line naming hooks and false. It errs towards reporting: a
 * harmless line may be named, a line that switches hooks off is. */
int install_check_toml(const char *text, size_t n, char ***ret, struct error *err);

/* The path the hooks should name for the binary at self (its resolved
 * path): the first `airlock` on path_env ($PATH) when that is the same file
 * (by device and inode; by that name, which survives upgrades), else self.
 * *ret_stable: it was found on PATH; *ret_build_tree: self lies in a build
 * directory (a rebuild or clean moves it). */
int install_locate(const char *self, const char *path_env, char **ret, bool *ret_stable,
		   bool *ret_build_tree, struct error *err);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/error.h"
#include "core/agenthost.h"

/* `airlock install` (docs/gate.md, "Installing"): the hooks each host
 * needs, merged into its settings document without touching anything
 * else. An airlock hook is a command hook whose command's words are
 * `.../airlock hook DIALECT ...`; merging replaces those of the host's
 * dialect and keeps every other hook and key, so that merging twice
 * changes nothing. */

/* What the hook commands run: this airlock's absolute path, and the
 * options passed on (NULL: none). */
struct install_command {
	const char *airlock;
	const char *state_dir;
	const char *policy;
};

/* {"EVENT": [{"matcher": ..., "hooks": [...]}], ...}: airlock's hooks for
 * host, in the shape of the host's settings. NULL: out of memory. */
json_t *install_hooks(enum agenthost host, const struct install_command *cmd);

/* Merges install_hooks() into settings (the whole settings document, an
 * object): each event's airlock group goes where the first airlock hook of
 * this dialect was, or last; airlock hooks of this dialect elsewhere are
 * removed. *ret_changed: settings is now different. -EINVAL when the
 * document's "hooks" has a shape the host would not read either. */
int install_merge(json_t *settings, enum agenthost host, const struct install_command *cmd,
		  bool *ret_changed, struct error *err);

/* What differs between settings and a merge (a strv of one-line
 * descriptions, empty when the hooks are present and current), including
 * host settings that turn hooks off. */
int install_check(json_t *settings, enum agenthost host, const struct install_command *cmd,
		  char ***ret, struct error *err);

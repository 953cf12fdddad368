/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "basic/error.h"

/* The agent hosts airlock hooks into, and everything airlock knows of each
 * (docs/gate.md, "Hooks" and "Installing"): one table, read by the hook,
 * install, the quarantine's protected paths and the hide list. Adding a
 * host is adding a row here and its reply dialect in cli/cmd_hook.c. */
/* Where one of a host's settings files sits (struct agenthost_settings). */
enum agenthost_base {
	AGENTHOST_BASE_PROJECT, /* relative to the project's root */
	AGENTHOST_BASE_USER, /* relative to the home */
	AGENTHOST_BASE_CODEX_HOME, /* relative to $CODEX_HOME, else ~/.codex */
	AGENTHOST_BASE_SYSTEM, /* absolute: managed and system settings */
};

enum agenthost_format {
	AGENTHOST_SETTINGS_JSON, /* a JSON settings document with "hooks" */
	AGENTHOST_SETTINGS_JSON_DIR, /* a directory of such documents (*.json) */
	AGENTHOST_SETTINGS_TOML, /* Codex's TOML: config.toml, requirements.toml */
};

/* One settings file the host merges, at one level. */
struct agenthost_settings {
	enum agenthost_base base;
	const char *path;
	enum agenthost_format format;
};

enum agenthost {
	AGENTHOST_CLAUDE,
	AGENTHOST_CODEX,
	AGENTHOST_GEMINI,
};
#define AGENTHOST_COUNT (AGENTHOST_GEMINI + 1)

struct agenthost_info {
	const char *name; /* "claude": the word in `airlock hook NAME`, --routed NAME */
	const char *display; /* "Claude Code" */
	const char *agent; /* the receipt's host.agent: "claude-code" */
	const char *routed_source; /* a routed run's receipt source */
	const char *post_source; /* a receipt recorded from post-tool-use */
	/* The tools that run a shell command, and those that write files,
	 * as the host names them to hooks. NULL-terminated. */
	const char *const *shell_tools;
	const char *const *write_tools;
	/* The tools that neither run commands nor write files (reading,
	 * searching, listing, fetching, planning, subagents whose own calls are
	 * hooked): they pass while a failure is open. Any tool in none of the
	 * three lists (MCP tools, new ones) is taken as mutating. Every tool's
	 * paths are checked against the state directory and the hidden paths. */
	const char *const *read_tools;
	/* The directories of a project that hold nothing but the host's own
	 * configuration, relative to its root (NULL-terminated): each is
	 * read-only as a whole for a quarantined command (nothing in it can be
	 * created, rewritten, renamed or removed, nor can it be renamed or
	 * removed itself), moved aside whole when a command creates it, and
	 * never written by a file tool. The project's files below name what
	 * the host reads in it (their symlinks' targets are protected too). */
	const char *const *project_dirs;
	/* Files through which the host runs code or changes its hooks, relative
	 * to a project's root and to the user's home (NULL-terminated): its
	 * settings at every level it merges, its MCP server lists, its hook
	 * scripts' usual home. Read-only for a quarantined command, moved aside
	 * when a command creates one, never written by a file tool. */
	const char *const *project_config;
	const char *const *user_config;
	/* Where the user's own settings file sits, relative to the home, that
	 * `airlock install` writes; and the project's, relative to its root. */
	const char *install_user_file;
	const char *install_project_file;
	/* The host's credentials, relative to the home: hidden from every run. */
	const char *const *credentials;
	/* Hook timeouts are in milliseconds (else seconds). */
	bool timeout_ms;
	/* Every settings file the host merges its hooks and the switches that
	 * turn hooks off from, at every level (project, user, system), ending
	 * with a NULL path: what `airlock install --check` reads. */
	const struct agenthost_settings *settings;
};

const struct agenthost_info *agenthost_get(enum agenthost host);
/* "claude", "codex" or "gemini"; -EINVAL with a message naming the word. */
int agenthost_from_string(const char *s, enum agenthost *ret, struct error *err);
/* Whether tool is one of names (NULL-terminated); a NULL tool is none. */
bool agenthost_tool_in(const char *const *names, const char *tool);

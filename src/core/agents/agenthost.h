/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

/* The agent hosts airlock hooks into, and everything airlock knows of each
 * (docs/gate.md, "Hooks" and "Installing"): one struct agent_host per host,
 * in its own file (claude.c, codex.c, gemini.c, copilot.c), listed in
 * agenthost.c's table. The hook, install, the quarantine's protected paths,
 * the hide list and the CLI (usage, help, the host's word) read the table;
 * none of them names a host. Adding a host is
 * one file here and its row in the table (docs/ARCHITECTURE.md). */

/* Where one of a host's files sits. */
enum agenthost_base {
	AGENTHOST_BASE_PROJECT, /* relative to the project's root */
	AGENTHOST_BASE_USER, /* relative to the home */
	AGENTHOST_BASE_HOST_HOME, /* relative to the host's own home (home_env, else ~/home_dir) */
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
	/* An environment variable that, set and not empty, names this file
	 * instead (NULL: none). */
	const char *env;
};

/* The hook events airlock answers, whatever the host calls them. */
enum agent_event {
	AGENT_EVENT_PRE_TOOL, /* before a tool runs: allow, deny or rewrite it */
	AGENT_EVENT_POST_TOOL, /* after a tool ran: its result */
	AGENT_EVENT_STOP, /* the agent wants to stop */
};

/* A setting that turns hooks off (`airlock install --check` reports each
 * host's in every settings file it reads, of any host: a switch of one
 * host in another's file is reported too, harmlessly). */
enum agenthost_switch_kind {
	AGENTHOST_SWITCH_TRUE, /* off when the key is true */
	AGENTHOST_SWITCH_FALSE, /* off when the key is false */
	AGENTHOST_SWITCH_NAMES, /* an array: off for a string in it naming airlock */
};

struct agenthost_switch {
	const char *object; /* the key's object at the document's top; NULL: the top */
	const char *key;
	enum agenthost_switch_kind kind;
	const char *note; /* what --check says; for NAMES, then ": " and the string */
};

/* One hook `airlock install` writes: the event's name in the host's
 * settings, the matcher (NULL: every call), and airlock hook's event word. */
struct agenthost_install_event {
	const char *name;
	const char *matcher;
	const char *event;
};

/* How the host's report of a run ended, as far as the host really said. */
enum agent_exit_kind {
	AGENT_EXIT_REPORTED, /* the host gave the exit status (or the signal) */
	AGENT_EXIT_IMPLIED, /* an event that fires only for a success: 0 */
	AGENT_EXIT_UNKNOWN, /* not reported: recorded, never verified, never closes */
	AGENT_EXIT_INTERPRETED, /* non-zero, called "not an error" by the host */
};

struct agent_exit {
	enum agent_exit_kind kind;
	int code;
	bool interrupted;
	bool known_failed; /* unknown status, but certainly not a success */
	const char *why; /* unknown: why; static */
	const char *interpretation; /* interpreted: the host's words (in the payload) */
};

/* What airlock answers one hook call, before the host's dialect. */
struct agent_decision {
	enum agent_event event;
	bool block; /* refuse the tool, or refuse to stop */
	const char *message; /* the reason, or context for the agent; "" none */
	const char *event_name; /* the payload's hook_event_name; "" none */
	json_t *updated_input; /* the tool's whole new input (routed); NULL none; borrowed */
};

/* That answer in the host's dialect: what goes to stdout (a JSON document,
 * or nothing), to stderr, and the exit status. */
struct agent_reply {
	bool print; /* print doc (NULL: an empty line) and a newline */
	json_t *doc; /* owned */
	const char *stderr_text; /* printed with a newline; NULL none; borrowed */
	int exit_status; /* 0 or 2: the only statuses the hosts read alike */
};

struct agent_host {
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
	/* The tools that follow the symlinks below a directory they read (a
	 * path key of hook_root_keys in core/hook/hook.c) and take such a path
	 * as a glob pattern (NULL: none): the hook looks through the
	 * directories for symlinks (core/hook/hooklinks.c). A tool that
	 * searches with ripgrep without --follow is none (Claude's Grep,
	 * Codex's grep_files, Copilot's grep: docs/gate.md, "Links below a
	 * directory"). */
	const char *const *link_tools;
	/* The key of a shell tool's input naming the directory it runs the
	 * command in, relative to the payload's cwd (NULL: it runs in cwd). */
	const char *shell_dir_key;
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
	/* The host's own home, when an environment variable may move it away
	 * from ~/home_dir (NULL: none); home_config and home_credentials are
	 * relative to it, and protected (hidden) there too when it is moved. */
	const char *home_env;
	const char *home_dir;
	const char *const *home_config;
	const char *const *home_credentials;
	/* Where the settings file `airlock install` writes sits: the user's
	 * (install_user_base, install_user_file) and the project's, relative
	 * to its root. */
	enum agenthost_base install_user_base;
	const char *install_user_file;
	const char *install_project_file;
	/* The host's credentials, relative to the home: hidden from every run. */
	const char *const *credentials;
	/* The hooks `airlock install` writes, ending with a NULL name; their
	 * timeout in the host's unit. */
	const struct agenthost_install_event *install_events;
	int install_timeout;
	/* The shape of those hooks when it is not Claude Code's groups
	 * ({"matcher", "hooks": [{"type", "command", "timeout"}]}): with
	 * install_flat each event lists its hooks directly (no matcher), and
	 * install_command_key and install_timeout_key name a hook's command
	 * and timeout (NULL: "command", "timeout"); install_version, when not
	 * 0, is the "version" a new document gets. */
	bool install_flat;
	const char *install_command_key;
	const char *install_timeout_key;
	int install_version;
	/* Every settings file the host merges its hooks and the switches that
	 * turn hooks off from, at every level (project, user, system), ending
	 * with a NULL path: what `airlock install --check` reads. */
	const struct agenthost_settings *settings;
	/* The settings that turn the hooks off, ending with a NULL key (NULL:
	 * none). */
	const struct agenthost_switch *switches;
	/* What else the host needs for the hooks to run (trust, a restart),
	 * facts for the person installing: path is the settings file written,
	 * project whether it is a project's. Writes at most size bytes. */
	void (*install_needs)(const char *path, bool project, char *buf, size_t size);
	/* Payload reader: the host's payload (a JSON object) in the shape the
	 * hook reads, Claude Code's (tool_name, tool_input an object with the
	 * shell tool's "command", cwd, session_id, hook_event_name,
	 * tool_response, stop_hook_active), into *ret (a new reference; it
	 * may be payload itself). NULL: the host's payloads have that shape. */
	int (*payload)(json_t *payload, json_t **ret, struct error *err);
	/* Payload reader: how the post-tool-use payload's run ended, only as
	 * far as the host really says (tests/fixtures/hosts/ holds captures). */
	void (*exit_status)(json_t *payload, struct agent_exit *ret);
	/* Reply writer: d in the host's dialect. -ENOMEM: out of memory. */
	int (*reply)(const struct agent_decision *d, struct agent_reply *ret);
};

/* The most hosts the table holds (for arrays by a host's place in it). */
#define AGENTHOST_MAX 16

/* The table: every host, in a fixed order. */
size_t agenthost_count(void);
const struct agent_host *agenthost_at(size_t i);
/* The host named s (its name), NULL when none is. */
const struct agent_host *agenthost_find(const char *s);
/* "claude, codex or gemini" (sep ", ", last " or "), or with "|" between
 * them all ("claude|codex|gemini"): for messages and usage. A static
 * buffer, filled on the first call (not thread-safe). */
const char *agenthost_names(bool bars);
/* "Claude Code, Codex, Gemini CLI or Copilot CLI": the display names, for
 * help. A static buffer, as agenthost_names(). */
const char *agenthost_displays(void);
/* agenthost_find(), -EINVAL with a message naming the word. */
int agenthost_from_string(const char *s, const struct agent_host **ret, struct error *err);
/* Whether tool is one of names (NULL-terminated); a NULL tool is none. */
bool agenthost_tool_in(const char *const *names, const char *tool);
/* The path of rel at base for host: home is $HOME, host_home the value of
 * host->home_env (either may be NULL). NULL: not absolute (no home), or out
 * of memory. */
char *agenthost_path(const struct agent_host *host, enum agenthost_base base, const char *rel,
		     const char *home, const char *host_home);

/* A host's payload in the shape the hook reads (host->payload), or
 * payload itself: a new reference in *ret. */
int agenthost_read_payload(const struct agent_host *host, json_t *payload, json_t **ret,
			   struct error *err);

/* For the hosts' files: an unknown exit status. */
void agenthost_exit_unknown(struct agent_exit *ret, bool failed, const char *why);
/* For the hosts' reply writers: a tool refused (not a stop) is exit 2 with
 * the reason on stderr in every host; true when d is one (ret is set). */
bool agenthost_reply_refuse_tool(const struct agent_decision *d, struct agent_reply *ret);
/* The event name a reply names when the payload gave none. */
const char *agenthost_event_name(const struct agent_decision *d, const char *pre, const char *post,
				 const char *stop);

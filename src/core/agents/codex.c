/* SPDX-License-Identifier: MIT */
/* Codex 0.171: every shell tool is "Bash" to hooks, file edits
 * "apply_patch"; older payloads name the shell tool itself. config.toml
 * and hooks.json in .codex/ (the project's, once trusted) and in
 * $CODEX_HOME, else ~/.codex. */
#include <stdio.h>

#include "core/agents/agenthost.h"

static const char *const codex_shell[] = { "Bash",	  "shell",	    "exec_command",
					   "local_shell", "container.exec", "unified_exec",
					   NULL };
static const char *const codex_write[] = { "apply_patch", "Write", "Edit", NULL };
static const char *const codex_read[] = { "view_image", "update_plan", "web_search", "read_file",
					  "list_dir",	"grep_files",  NULL };
static const char *const codex_dirs[] = { ".codex", NULL };
static const char *const codex_project[] = { ".codex/config.toml", ".codex/hooks.json", NULL };
static const char *const codex_user[] = { ".codex/config.toml", ".codex/hooks.json", ".codex/rules",
					  ".codex/skills", NULL };
static const char *const codex_credentials[] = { ".codex/auth.json", NULL };
/* The same, below an absolute $CODEX_HOME. */
static const char *const codex_home_config[] = { "hooks.json", "config.toml", "rules", "skills", NULL };
static const char *const codex_home_credentials[] = { "auth.json", NULL };
/* Every config layer's hooks.json and config.toml (whose [hooks] tables
 * hold hooks too, `hooks.state` their enablement, `[features]` the switch),
 * the system's in /etc/codex, and requirements.toml
 * (`allow_managed_hooks_only`). */
static const struct agenthost_settings codex_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".codex/hooks.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_PROJECT, ".codex/config.toml", AGENTHOST_SETTINGS_TOML, NULL },
	{ AGENTHOST_BASE_HOST_HOME, "hooks.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_HOST_HOME, "config.toml", AGENTHOST_SETTINGS_TOML, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/hooks.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/config.toml", AGENTHOST_SETTINGS_TOML, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/managed_config.toml", AGENTHOST_SETTINGS_TOML, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/requirements.toml", AGENTHOST_SETTINGS_TOML, NULL },
	{ 0 },
};

/* codex-rs/hooks: every shell tool is "Bash" to hooks; no failure event;
 * "timeout" in seconds; "*" is every tool. */
static const struct agenthost_install_event codex_events[] = {
	{ "PreToolUse", "*", "pre-tool-use" },
	{ "PostToolUse", "Bash", "post-tool-use" },
	{ "Stop", NULL, "stop" },
	{ 0 },
};

static void codex_install_needs(const char *path, bool project, char *buf, size_t size)
{
	(void)path;
	snprintf(buf, size,
		 "Codex runs a hook only once you trust it: open `/hooks` in codex and trust airlock's (Codex keeps a hash of each hook in config.toml's hooks.state; a changed hook asks again)%s",
		 project ? "; a project's .codex/ is read only when the project is trusted (projects.\"DIR\".trust_level = \"trusted\" in ~/.codex/config.toml)"
			 : "");
}

/* codex-rs/hooks: tool_response is the output text and there is no failure
 * event. Its rollout file (transcript_path) is no help: exec_command_end is
 * not persisted there (codex-rs/rollout/src/policy.rs), and the call's
 * output item is recorded only after the PostToolUse hooks, which may
 * replace it, have returned. */
static void codex_exit_status(json_t *payload, struct agent_exit *s)
{
	(void)payload;
	agenthost_exit_unknown(s, false, "Codex reports no exit status to its hooks");
}

/* A refused tool: exit 2, the reason on stderr. A refused stop: "decision"
 * "block". A routed command: updatedInput, taken only with
 * permissionDecision "allow" (else Codex fails the hook). A pass: nothing,
 * since Codex treats any field it does not know as a failed hook. */
static int codex_reply(const struct agent_decision *d, struct agent_reply *ret)
{
	if (agenthost_reply_refuse_tool(d, ret))
		return 0;
	*ret = (struct agent_reply){ .print = true };
	if (d->block)
		ret->doc = json_pack("{s:s, s:s}", "decision", "block", "reason", d->message);
	else if (d->updated_input)
		ret->doc = json_pack("{s:{s:s, s:s, s:O}}", "hookSpecificOutput", "hookEventName",
				     "PreToolUse", "permissionDecision", "allow", "updatedInput",
				     d->updated_input);
	else
		ret->print = false;
	return 0;
}

const struct agent_host agenthost_codex = {
	.name = "codex",
	.display = "Codex",
	.agent = "codex",
	.routed_source = "codex-routed",
	.post_source = "codex-post-tool-use",
	.shell_tools = codex_shell,
	.write_tools = codex_write,
	.read_tools = codex_read,
	.project_dirs = codex_dirs,
	.project_config = codex_project,
	.user_config = codex_user,
	.home_env = "CODEX_HOME",
	.home_dir = ".codex",
	.home_config = codex_home_config,
	.home_credentials = codex_home_credentials,
	.install_user_base = AGENTHOST_BASE_HOST_HOME,
	.install_user_file = "hooks.json",
	.install_project_file = ".codex/hooks.json",
	.credentials = codex_credentials,
	.install_events = codex_events,
	.install_timeout = 10,
	.settings = codex_settings,
	.install_needs = codex_install_needs,
	.exit_status = codex_exit_status,
	.reply = codex_reply,
};

/* SPDX-License-Identifier: MIT */
#include "core/agents/agenthost.h"

#include <errno.h>
#include <string.h>

#include "basic/macro.h"

/* Claude Code 2.1.332: tool names as its hooks see them; settings merged
 * from ~/.claude/settings.json, .claude/settings.json and
 * .claude/settings.local.json (plus managed settings under /etc, which a
 * user cannot write); MCP servers from .mcp.json and ~/.claude.json;
 * subagents and skills whose frontmatter may carry hooks, commands whose
 * `!` lines it runs, plugins that bring hooks. */
static const char *const claude_shell[] = { "Bash", NULL };
static const char *const claude_write[] = { "Write", "Edit", "MultiEdit", "NotebookEdit", NULL };
static const char *const claude_read[] = { "Read",	   "Glob",	"Grep",	      "LS",
					   "NotebookRead", "WebFetch",	"WebSearch",  "TodoWrite",
					   "Task",	   "Agent",	"BashOutput", "TaskOutput",
					   "ExitPlanMode", "AskUserQuestion", "ListMcpResourcesTool",
					   "ReadMcpResourceTool", NULL };
static const char *const claude_dirs[] = { ".claude", NULL };
static const char *const claude_project[] = { ".claude/settings.json", ".claude/settings.local.json",
					      ".claude/hooks", ".mcp.json", NULL };
static const char *const claude_user[] = { ".claude/settings.json", ".claude/settings.local.json",
					   ".claude/hooks", ".claude.json", ".claude/agents",
					   ".claude/skills", ".claude/commands", ".claude/plugins",
					   NULL };
static const char *const claude_credentials[] = { ".claude/.credentials.json", ".claude.json", NULL };
/* Managed settings: managed-settings.json and the drop-in directory beside
 * it; `allowManagedHooksOnly` there leaves only managed hooks. */
static const struct agenthost_settings claude_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".claude/settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_PROJECT, ".claude/settings.local.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_USER, ".claude/settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_USER, ".claude/settings.local.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_SYSTEM, "/etc/claude-code/managed-settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_SYSTEM, "/etc/claude-code/managed-settings.d", AGENTHOST_SETTINGS_JSON_DIR },
	{ 0 },
};

/* Codex 0.171: every shell tool is "Bash" to hooks, file edits
 * "apply_patch"; older payloads name the shell tool itself. config.toml
 * and hooks.json in .codex/ (the project's, once trusted) and in
 * $CODEX_HOME, else ~/.codex. */
static const char *const codex_shell[] = { "Bash",	  "shell",	    "exec_command", "local_shell",
					   "container.exec", "unified_exec", NULL };
static const char *const codex_write[] = { "apply_patch", "Write", "Edit", NULL };
static const char *const codex_read[] = { "view_image", "update_plan", "web_search", "read_file",
					  "list_dir",	"grep_files", NULL };
static const char *const codex_dirs[] = { ".codex", NULL };
static const char *const codex_project[] = { ".codex/config.toml", ".codex/hooks.json", NULL };
static const char *const codex_user[] = { ".codex/config.toml", ".codex/hooks.json", ".codex/rules",
					  ".codex/skills", NULL };
static const char *const codex_credentials[] = { ".codex/auth.json", NULL };
/* Every config layer's hooks.json and config.toml (whose [hooks] tables
 * hold hooks too, `hooks.state` their enablement, `[features]` the switch),
 * the system's in /etc/codex, and requirements.toml
 * (`allow_managed_hooks_only`). */
static const struct agenthost_settings codex_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".codex/hooks.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_PROJECT, ".codex/config.toml", AGENTHOST_SETTINGS_TOML },
	{ AGENTHOST_BASE_CODEX_HOME, "hooks.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_CODEX_HOME, "config.toml", AGENTHOST_SETTINGS_TOML },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/hooks.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/config.toml", AGENTHOST_SETTINGS_TOML },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/managed_config.toml", AGENTHOST_SETTINGS_TOML },
	{ AGENTHOST_BASE_SYSTEM, "/etc/codex/requirements.toml", AGENTHOST_SETTINGS_TOML },
	{ 0 },
};

/* Gemini CLI 0.61: settings.json at user and project level, extensions
 * (which bring hooks and MCP servers), and the .env it loads into its own
 * environment, which its hooks inherit. */
static const char *const gemini_shell[] = { "run_shell_command", NULL };
static const char *const gemini_write[] = { "write_file", "replace", NULL };
static const char *const gemini_read[] = { "read_file",	    "read_many_files", "list_directory",
					   "glob",	    "search_file_content", "grep_search",
					   "google_web_search", "web_fetch",	    "write_todos", NULL };
static const char *const gemini_dirs[] = { ".gemini", NULL };
static const char *const gemini_project[] = { ".gemini/settings.json", ".gemini/extensions",
					      ".gemini/.env", NULL };
static const char *const gemini_user[] = { ".gemini/settings.json", ".gemini/extensions", ".gemini/.env",
					   ".gemini/trustedFolders.json", ".gemini/commands",
					   ".gemini/policies", NULL };
static const char *const gemini_credentials[] = { ".gemini/oauth_creds.json", ".gemini/google_accounts.json",
						  ".gemini/mcp-oauth-tokens.json", NULL };
/* System settings override the user's and the project's; system defaults
 * lie under them ($GEMINI_CLI_SYSTEM_SETTINGS_PATH moves the first). */
static const struct agenthost_settings gemini_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".gemini/settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_USER, ".gemini/settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_SYSTEM, "/etc/gemini-cli/settings.json", AGENTHOST_SETTINGS_JSON },
	{ AGENTHOST_BASE_SYSTEM, "/etc/gemini-cli/system-defaults.json", AGENTHOST_SETTINGS_JSON },
	{ 0 },
};

static const struct agenthost_info agenthost_table[AGENTHOST_COUNT] = {
	[AGENTHOST_CLAUDE] = {
		.name = "claude",
		.display = "Claude Code",
		.agent = "claude-code",
		.routed_source = "claude-routed",
		.post_source = "claude-post-tool-use",
		.shell_tools = claude_shell,
		.write_tools = claude_write,
		.read_tools = claude_read,
		.project_dirs = claude_dirs,
		.project_config = claude_project,
		.user_config = claude_user,
		.install_user_file = ".claude/settings.json",
		.install_project_file = ".claude/settings.json",
		.credentials = claude_credentials,
		.settings = claude_settings,
	},
	[AGENTHOST_CODEX] = {
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
		.install_user_file = ".codex/hooks.json",
		.install_project_file = ".codex/hooks.json",
		.credentials = codex_credentials,
		.settings = codex_settings,
	},
	[AGENTHOST_GEMINI] = {
		.name = "gemini",
		.display = "Gemini CLI",
		.agent = "gemini-cli",
		.routed_source = "gemini-routed",
		.post_source = "gemini-after-tool",
		.shell_tools = gemini_shell,
		.write_tools = gemini_write,
		.read_tools = gemini_read,
		.project_dirs = gemini_dirs,
		.project_config = gemini_project,
		.user_config = gemini_user,
		.install_user_file = ".gemini/settings.json",
		.install_project_file = ".gemini/settings.json",
		.credentials = gemini_credentials,
		.timeout_ms = true,
		.settings = gemini_settings,
	},
};

const struct agenthost_info *agenthost_get(enum agenthost host)
{
	return &agenthost_table[host];
}

int agenthost_from_string(const char *s, enum agenthost *ret, struct error *err)
{
	for (size_t i = 0; i < ARRAY_SIZE(agenthost_table); i++)
		if (strcmp(s, agenthost_table[i].name) == 0) {
			*ret = (enum agenthost)i;
			return 0;
		}
	return error_set(err, EINVAL, "unknown host '%.100s' (claude, codex or gemini)", s);
}

bool agenthost_tool_in(const char *const *names, const char *tool)
{
	for (size_t i = 0; tool && names[i]; i++)
		if (strcmp(names[i], tool) == 0)
			return true;
	return false;
}

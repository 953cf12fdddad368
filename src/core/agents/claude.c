/* SPDX-License-Identifier: MIT */
/* Claude Code 2.1.332: tool names as its hooks see them; settings merged
 * from ~/.claude/settings.json, .claude/settings.json and
 * .claude/settings.local.json (plus managed settings under /etc, which a
 * user cannot write); MCP servers from .mcp.json and ~/.claude.json;
 * subagents and skills whose frontmatter may carry hooks, commands whose
 * `!` lines it runs, plugins that bring hooks. */
#include <stdio.h>
#include <string.h>

#include "core/agents/agenthost.h"
#include "core/store/jsonutil.h"

static const char *const claude_shell[] = { "Bash", NULL };
static const char *const claude_write[] = { "Write", "Edit", "MultiEdit", "NotebookEdit", NULL };
static const char *const claude_read[] = { "Read",
					   "Glob",
					   "Grep",
					   "LS",
					   "NotebookRead",
					   "WebFetch",
					   "WebSearch",
					   "TodoWrite",
					   "Task",
					   "Agent",
					   "BashOutput",
					   "TaskOutput",
					   "ExitPlanMode",
					   "AskUserQuestion",
					   "ListMcpResourcesTool",
					   "ReadMcpResourceTool",
					   NULL };
static const char *const claude_dirs[] = { ".claude", NULL };
static const char *const claude_project[] = { ".claude/settings.json", ".claude/settings.local.json",
					      ".claude/hooks", ".mcp.json", NULL };
static const char *const claude_user[] = { ".claude/settings.json",
					   ".claude/settings.local.json",
					   ".claude/hooks",
					   ".claude.json",
					   ".claude/agents",
					   ".claude/skills",
					   ".claude/commands",
					   ".claude/plugins",
					   NULL };
static const char *const claude_credentials[] = { ".claude/.credentials.json", ".claude.json", NULL };
/* Managed settings: managed-settings.json and the drop-in directory beside
 * it; `allowManagedHooksOnly` there leaves only managed hooks. */
static const struct agenthost_settings claude_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".claude/settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_PROJECT, ".claude/settings.local.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_USER, ".claude/settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_USER, ".claude/settings.local.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/claude-code/managed-settings.json", AGENTHOST_SETTINGS_JSON,
	  NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/claude-code/managed-settings.d", AGENTHOST_SETTINGS_JSON_DIR,
	  NULL },
	{ 0 },
};

/* The pre-tool event matches every tool ("*" is "every tool" in all the
 * hosts: Claude Code also takes an empty or missing matcher and ".*"), so
 * that the hook judges reads, searches, web, subagent and MCP tools too.
 * The post-tool events record shell commands' results, and match only the
 * shell tool. PostToolUseFailure is a separate event; timeouts in
 * seconds. */
static const struct agenthost_install_event claude_events[] = {
	{ "PreToolUse", "*", "pre-tool-use" },
	{ "PostToolUse", "Bash", "post-tool-use" },
	{ "PostToolUseFailure", "Bash", "post-tool-use" },
	{ "Stop", NULL, "stop" },
	{ 0 },
};

static void claude_install_needs(const char *path, bool project, char *buf, size_t size)
{
	snprintf(buf, size,
		 "Claude Code reads %s when a session starts: restart running sessions, and `/hooks` lists what it loaded; every other settings level may add or disable hooks: `airlock install --check claude%s` reads them all",
		 path, project ? " --project DIR" : "");
}

/* PostToolUse fires for a success (exit 0, or an exit status its semantics
 * call no error: returnCodeInterpretation), PostToolUseFailure with "Exit
 * code N" first in `error`; a background run fires PostToolUse at launch
 * with a backgroundTaskId and no status at all. */
static void claude_exit_status(json_t *payload, struct agent_exit *s)
{
	json_t *resp = json_object_get(payload, "tool_response");
	json_t *input = json_object_get(payload, "tool_input");
	const char *event = jsonutil_str(payload, "hook_event_name");
	const char *interpretation = jsonutil_str(resp, "returnCodeInterpretation");
	const char *error = jsonutil_str(payload, "error");
	int code;

	*s = (struct agent_exit){ .kind = AGENT_EXIT_IMPLIED };
	if (json_is_true(json_object_get(resp, "interrupted")) ||
	    json_is_true(json_object_get(payload, "is_interrupt"))) {
		*s = (struct agent_exit){ .kind = AGENT_EXIT_REPORTED, .interrupted = true };
		return;
	}
	if (json_is_true(json_object_get(input, "run_in_background")) ||
	    json_object_get(resp, "backgroundTaskId")) {
		agenthost_exit_unknown(s, false,
				       "a background run: the host reported its start, not its end");
		return;
	}
	if (error && sscanf(error, "Exit code %d", &code) == 1) {
		*s = (struct agent_exit){ .kind = AGENT_EXIT_REPORTED, .code = code };
		return;
	}
	if (event && strcmp(event, "PostToolUseFailure") == 0) {
		agenthost_exit_unknown(s, true, "the host reported a failure without its exit status");
		return;
	}
	if (interpretation && *interpretation)
		*s = (struct agent_exit){ .kind = AGENT_EXIT_INTERPRETED,
					  .interpretation = interpretation };
}

/* A refused tool: exit 2, the reason on stderr. A refused stop: "decision"
 * "block". A routed command: updatedInput, taken as is, with the message as
 * context. A pass: the message as additionalContext, or {}. */
static int claude_reply(const struct agent_decision *d, struct agent_reply *ret)
{
	const char *event_name = agenthost_event_name(d, "PreToolUse", "PostToolUse", "Stop");

	if (agenthost_reply_refuse_tool(d, ret))
		return 0;
	*ret = (struct agent_reply){ .print = true };
	if (d->block)
		ret->doc = json_pack("{s:s, s:s}", "decision", "block", "reason", d->message);
	else if (d->updated_input)
		ret->doc = json_pack("{s:{s:s, s:O, s:s}}", "hookSpecificOutput", "hookEventName",
				     event_name, "updatedInput", d->updated_input,
				     "additionalContext", d->message);
	else if (!d->message[0] || d->event == AGENT_EVENT_STOP)
		ret->doc = json_object();
	else
		ret->doc = json_pack("{s:{s:s, s:s}}", "hookSpecificOutput", "hookEventName",
				     event_name, "additionalContext", d->message);
	return 0;
}

/* disableAllHooks at any level turns every hook off; allowManagedHooksOnly
 * leaves only managed settings' hooks. */
static const struct agenthost_switch claude_switches[] = {
	{ NULL, "disableAllHooks", AGENTHOST_SWITCH_TRUE, "disableAllHooks is true: no hook runs" },
	{ NULL, "allowManagedHooksOnly", AGENTHOST_SWITCH_TRUE,
	  "allowManagedHooksOnly is true: only managed settings' hooks run" },
	{ 0 },
};

const struct agent_host agenthost_claude = {
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
	.install_user_base = AGENTHOST_BASE_USER,
	.install_user_file = ".claude/settings.json",
	.install_project_file = ".claude/settings.json",
	.credentials = claude_credentials,
	.install_events = claude_events,
	.install_timeout = 10,
	.settings = claude_settings,
	.switches = claude_switches,
	.install_needs = claude_install_needs,
	.exit_status = claude_exit_status,
	.reply = claude_reply,
};

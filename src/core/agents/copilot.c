/* SPDX-License-Identifier: MIT */
/* GitHub Copilot CLI 1.0.102 (npm @github/copilot-linux-x64; payloads
 * captured in tests/fixtures/hosts/copilot/1.0.102): every .json file in a
 * project's .github/hooks/ (loaded only when the folder is trusted) and in
 * ~/.copilot/hooks/ ($COPILOT_HOME moves ~/.copilot; loaded always) is a
 * hooks file: version 1, camelCase events, each a flat list of command
 * hooks; read once, when a session starts. Settings (disableAllHooks,
 * "hooks") in ~/.copilot/settings.json and .github/copilot/settings.json,
 * settings.local.json. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "core/agents/agenthost.h"
#include "core/store/jsonutil.h"

static const char *const copilot_shell[] = { "bash", NULL };
static const char *const copilot_write[] = { "create", "edit", NULL };
/* read_bash and list_bash read a running shell's output; stop_bash ends
 * one; write_bash (its input) is mutating. task, skill and sql are taken as
 * mutating: whether a subagent's calls reach the hooks is not known. */
static const char *const copilot_read[] = {
	"view",	      "grep",	     "glob",
	"read_bash",  "list_bash",   "stop_bash",
	"read_agent", "list_agents", "fetch_copilot_cli_documentation",
	NULL
};
static const char *const copilot_dirs[] = { ".github/hooks", ".github/copilot", NULL };
static const char *const copilot_project[] = { ".github/hooks", ".github/copilot/settings.json",
					       ".github/copilot/settings.local.json", ".mcp.json",
					       NULL };
static const char *const copilot_user[] = { ".copilot/hooks",	    ".copilot/settings.json",
					    ".copilot/config.json", ".copilot/mcp-config.json",
					    ".copilot/agents",	    NULL };
/* config.json holds the trusted folders and, with storeTokenPlaintext, the
 * login's token. */
static const char *const copilot_credentials[] = { ".copilot/config.json", NULL };
static const char *const copilot_home_config[] = { "hooks",	  "settings.json",
						   "config.json", "mcp-config.json",
						   "agents",	  NULL };
static const char *const copilot_home_credentials[] = { "config.json", NULL };
static const struct agenthost_settings copilot_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".github/hooks", AGENTHOST_SETTINGS_JSON_DIR, NULL },
	{ AGENTHOST_BASE_PROJECT, ".github/copilot/settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_PROJECT, ".github/copilot/settings.local.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_HOST_HOME, "hooks", AGENTHOST_SETTINGS_JSON_DIR, NULL },
	{ AGENTHOST_BASE_HOST_HOME, "settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ 0 },
};

/* No matchers: every tool reaches preToolUse. postToolUse fires for every
 * tool that ran (postToolUseFailure only when the tool itself failed, never
 * for a shell's non-zero exit); timeoutSec in seconds, generous, since a
 * hook that outlives it lets the tool run. */
static const struct agenthost_install_event copilot_events[] = {
	{ "preToolUse", NULL, "pre-tool-use" },
	{ "postToolUse", NULL, "post-tool-use" },
	{ "agentStop", NULL, "stop" },
	{ 0 },
};

static void copilot_install_needs(const char *path, bool project, char *buf, size_t size)
{
	snprintf(buf, size,
		 "Copilot CLI reads %s when a session starts%s; a hook that outlives its timeoutSec lets the tool run (fail open), and \"disableAllHooks\" in its settings turns every hook off: `airlock install --check copilot%s` reads them",
		 path,
		 project ? ", and a project's .github/hooks only in a trusted folder (--trust-folder, COPILOT_ALLOW_ALL=true, or \"trustedFolders\" in ~/.copilot/config.json): an untrusted folder skips them silently, so airlock never runs; ~/.copilot/hooks (`airlock install copilot`) load without trust"
			 : "; hooks there load in every folder, trusted or not",
		 project ? " --project DIR" : "");
}

/* Copilot's payload in the hook's words: toolName, toolArgs (the model's
 * arguments as an object; a JSON text is read too), toolResult
 * (textResultForLlm, the text the model got: the receipt's output) and
 * sessionId as tool_name, tool_input, tool_response.output and session_id;
 * Copilot's own keys stay (cwd and stop_hook_active are the same). */
static int copilot_payload(json_t *payload, json_t **ret, struct error *err)
{
	static const char *const keys[][2] = { { "toolName", "tool_name" },
					       { "sessionId", "session_id" } };
	cleanup_with(json_decrefp) json_t *doc = json_copy(payload);
	json_t *args = json_object_get(payload, "toolArgs");
	const char *text = jsonutil_str(json_object_get(payload, "toolResult"), "textResultForLlm");
	int r = doc ? 0 : -1;

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(payload, keys[i][0]);
		if (v)
			r = json_object_set(doc, keys[i][1], v);
	}
	if (r == 0 && json_is_string(args)) {
		json_t *parsed = json_loads(json_string_value(args), 0, NULL);
		if (!json_is_object(parsed)) {
			json_decref(parsed);
			return error_set(err, EINVAL,
					 "toolArgs is neither an object nor one as JSON text");
		}
		r = json_object_set_new(doc, "tool_input", parsed);
	} else if (r == 0 && args) {
		r = json_object_set(doc, "tool_input", args);
	}
	if (r == 0 && text)
		r = json_object_set_new(doc, "tool_response", json_pack("{s:s}", "output", text));
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(doc);
	return 0;
}

/* A shell's exit status reaches the hooks only as text Copilot appends to
 * the output ("<shellId: N completed with exit code C>"), with resultType
 * "success" whatever C is. The command's own output can print the same
 * line, and when Copilot does not append its own (a command still running,
 * detached, cut short) nothing tells the two apart: the status is unknown.
 * A routed command's status is in its `airlock run` receipt. */
static void copilot_exit_status(json_t *payload, struct agent_exit *s)
{
	const char *type = jsonutil_str(json_object_get(payload, "toolResult"), "resultType");

	if (type && strcmp(type, "success") != 0) {
		agenthost_exit_unknown(s, true,
				       "Copilot reported the tool failed, without an exit status");
		return;
	}
	agenthost_exit_unknown(s, false,
			       "Copilot gives a shell's exit status only as text appended to its output, which the command can print itself");
}

/* Copilot passes no hook's stderr to the model, so a refused tool gets the
 * reason as permissionDecisionReason too, with exit 2 (which denies even if
 * the JSON were lost). A refused stop: "decision" "block" (exit 2 does not
 * block a stop). A routed command: modifiedArgs, the whole argument object
 * (Copilot replaces, not merges), with "allow": without it Copilot's own
 * approval of the paths the new command names (airlock, the state
 * directory, outside the project) is asked, and refused in `-p` where no
 * one answers; airlock vouches for the command it quarantines, as for
 * Codex. A pass: {}, the host's own permission flow goes on. */
static int copilot_reply(const struct agent_decision *d, struct agent_reply *ret)
{
	if (agenthost_reply_refuse_tool(d, ret)) {
		ret->print = true;
		ret->doc = json_pack("{s:s, s:s}", "permissionDecision", "deny",
				     "permissionDecisionReason", d->message);
		return ret->doc ? 0 : -ENOMEM;
	}
	*ret = (struct agent_reply){ .print = true };
	if (d->block)
		ret->doc = json_pack("{s:s, s:s}", "decision", "block", "reason", d->message);
	else if (d->updated_input)
		ret->doc = json_pack("{s:s, s:O}", "permissionDecision", "allow", "modifiedArgs",
				     d->updated_input);
	else
		ret->doc = json_object();
	return ret->doc ? 0 : -ENOMEM;
}

/* disableAllHooks in its settings turns every hook off. */
static const struct agenthost_switch copilot_switches[] = {
	{ NULL, "disableAllHooks", AGENTHOST_SWITCH_TRUE, "disableAllHooks is true: no hook runs" },
	{ 0 },
};

const struct agent_host agenthost_copilot = {
	.name = "copilot",
	.display = "Copilot CLI",
	.agent = "copilot-cli",
	.routed_source = "copilot-routed",
	.post_source = "copilot-post-tool-use",
	.shell_tools = copilot_shell,
	.write_tools = copilot_write,
	.read_tools = copilot_read,
	.project_dirs = copilot_dirs,
	.project_config = copilot_project,
	.user_config = copilot_user,
	.home_env = "COPILOT_HOME",
	.home_dir = ".copilot",
	.home_config = copilot_home_config,
	.home_credentials = copilot_home_credentials,
	.install_user_base = AGENTHOST_BASE_HOST_HOME,
	.install_user_file = "hooks/airlock.json",
	.install_project_file = ".github/hooks/airlock.json",
	.credentials = copilot_credentials,
	.install_events = copilot_events,
	.install_timeout = 30,
	.install_flat = true,
	.install_command_key = "bash",
	.install_timeout_key = "timeoutSec",
	.install_version = 1,
	.settings = copilot_settings,
	.switches = copilot_switches,
	.install_needs = copilot_install_needs,
	.payload = copilot_payload,
	.exit_status = copilot_exit_status,
	.reply = copilot_reply,
};

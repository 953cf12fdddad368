/* SPDX-License-Identifier: MIT */
/* Gemini CLI 0.61: settings.json at user and project level, extensions
 * (which bring hooks and MCP servers), and the .env it loads into its own
 * environment, which its hooks inherit. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/agents/agenthost.h"
#include "core/store/jsonutil.h"

static const char *const gemini_shell[] = { "run_shell_command", NULL };
static const char *const gemini_write[] = { "write_file", "replace", NULL };
static const char *const gemini_read[] = {
	"read_file",   "read_many_files",   "list_directory", "glob",	     "search_file_content",
	"grep_search", "google_web_search", "web_fetch",      "write_todos", NULL
};
/* read_many_files globs its paths with node-glob (no `follow`: `**` does
 * not descend a symlinked directory, but a named or matched component
 * does, and a symlink to a file is matched and read; `nocase`, `dot`:
 * packages/core/src/tools/read-many-files.ts, glob(processedPatterns, {
 * cwd: dir, nodir: true, dot: true, absolute: true, nocase: true })).
 * search_file_content (grep_search in newer releases) runs ripgrep without
 * --follow (ripGrep.ts), else git grep, else `grep -r .`, else
 * globStream() of every file below and readFile() of each, which reads a
 * symlink to a file (grep.ts, "Strategy 3: Pure JavaScript Fallback"). */
static const char *const gemini_links[] = { "read_many_files", "search_file_content", "grep_search",
					    NULL };
static const char *const gemini_dirs[] = { ".gemini", NULL };
static const char *const gemini_project[] = { ".gemini/settings.json", ".gemini/extensions",
					      ".gemini/.env", NULL };
static const char *const gemini_user[] = { ".gemini/settings.json",
					   ".gemini/extensions",
					   ".gemini/.env",
					   ".gemini/trustedFolders.json",
					   ".gemini/commands",
					   ".gemini/policies",
					   NULL };
static const char *const gemini_credentials[] = { ".gemini/oauth_creds.json",
						  ".gemini/google_accounts.json",
						  ".gemini/mcp-oauth-tokens.json", NULL };
/* System settings override the user's and the project's; system defaults
 * lie under them ($GEMINI_CLI_SYSTEM_SETTINGS_PATH moves the first). */
static const struct agenthost_settings gemini_settings[] = {
	{ AGENTHOST_BASE_PROJECT, ".gemini/settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_USER, ".gemini/settings.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ AGENTHOST_BASE_SYSTEM, "/etc/gemini-cli/settings.json", AGENTHOST_SETTINGS_JSON,
	  "GEMINI_CLI_SYSTEM_SETTINGS_PATH" },
	{ AGENTHOST_BASE_SYSTEM, "/etc/gemini-cli/system-defaults.json", AGENTHOST_SETTINGS_JSON, NULL },
	{ 0 },
};

/* BeforeTool/AfterTool/AfterAgent; "*" is every tool; timeouts in ms. */
static const struct agenthost_install_event gemini_events[] = {
	{ "BeforeTool", "*", "pre-tool-use" },
	{ "AfterTool", "run_shell_command", "post-tool-use" },
	{ "AfterAgent", NULL, "stop" },
	{ 0 },
};

static void gemini_install_needs(const char *path, bool project, char *buf, size_t size)
{
	(void)path;
	snprintf(buf, size,
		 "Gemini CLI runs hooks only in a trusted folder (folder trust: `/permissions`, ~/.gemini/trustedFolders.json) and while hooksConfig.enabled is not false; versions before hooksConfig need \"tools\": {\"enableHooks\": true}%s",
		 project ? "; it warns once about new project hooks and then runs them" : "");
}

/* The line at [p, end) is `prefix` and something after it. */
static bool gemini_line_is(const char *p, const char *end, const char *prefix)
{
	size_t n = strlen(prefix);

	return (size_t)(end - p) > n && memcmp(p, prefix, n) == 0;
}

/* llmContent's BODY's OUTPUT and where BODY ends: false when llm is not in
 * the shape the host writes. The command's own "</untrusted_context>" is
 * escaped by the host, so the first one closes the wrapping. After it,
 * only the note the host appends when a hook changed the input may
 * follow. */
static bool gemini_body(const char *llm, const char **ret_out, const char **ret_end)
{
	static const char open[] = "<untrusted_context>\n", close[] = "\n</untrusted_context>";
	static const char modified[] = "\n\n[System] Tool input parameters (";
	const char *closing = strstr(llm, close);

	if (!closing || strncmp(llm, open, strlen(open)) != 0 || closing < llm + strlen(open))
		return false;
	const char *after = closing + strlen(close);
	if (*after) {
		static const char tail[] = " were modified by a hook before execution.";
		size_t n = strlen(after);
		if (strncmp(after, modified, strlen(modified)) != 0 || n < strlen(tail) ||
		    strcmp(after + n - strlen(tail), tail) != 0 ||
		    strchr(after + strlen(modified), '\n'))
			return false;
	}
	size_t len = (size_t)(after - llm);
	const char *body = llm + strlen(open), *end = llm + len - strlen(close);
	if ((size_t)(end - body) < 8 || memcmp(body, "Output: ", 8) != 0)
		return false;
	*ret_out = body + 8;
	*ret_end = end;
	return true;
}

/* Where OUTPUT (at out, before end) ends, exactly: returnDisplay is OUTPUT
 * (escaped as the host escapes it in llmContent), or, for an empty one,
 * the host's "(empty)" with returnDisplay empty or the host's own summary.
 * NULL: not known. */
static const char *gemini_output_end(const char *out, const char *end, const char *display)
{
	if (display && *display) {
		const char *p = out, *d = display;
		static const char tag[] = "</untrusted_context>", esc[] = "&lt;/untrusted_context&gt;";
		while (*d && p < end) {
			if (strncmp(d, tag, strlen(tag)) == 0) {
				if ((size_t)(end - p) < strlen(esc) || memcmp(p, esc, strlen(esc)) != 0)
					break;
				p += strlen(esc);
				d += strlen(tag);
			} else if (*p == *d) {
				p++;
				d++;
			} else {
				break;
			}
		}
		if (!*d)
			return p;
	}
	if (display &&
	    (!*display || strncmp(display, "Command exited with code: ", 26) == 0 ||
	     strncmp(display, "Command terminated by signal: ", 30) == 0) &&
	    (size_t)(end - out) >= 7 && memcmp(out, "(empty)", 7) == 0)
		return out + 7;
	return NULL;
}

/* The "Exit Code: N" line at [line, eol): false when N is not a non-zero
 * int. */
static bool gemini_exit_code(const char *line, const char *eol, int *ret)
{
	char buf[16];
	size_t n = (size_t)(eol - line) - 11;
	char *e;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, line + 11, n);
	buf[n] = '\0';
	long v = strtol(buf, &e, 10);
	if (*e || v == 0 || v < INT_MIN || v > INT_MAX)
		return false;
	*ret = (int)v;
	return true;
}

/* The host's lines after OUTPUT (rest, before end): exactly those, in its
 * order, and nothing else; false when they are not. */
static bool gemini_host_lines(const char *rest, const char *end, int *ret_code, bool *ret_signaled)
{
	static const char *const lines[] = { "Exit Code: ", "Signal: ", "Background PIDs: ",
					     "Process Group PGID: " };
	size_t next = 0;
	const char *p = rest;

	while (p < end) {
		if (*p != '\n')
			return false;
		const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		while (next < ARRAY_SIZE(lines) && !gemini_line_is(line, eol, lines[next]))
			next++;
		if (next == ARRAY_SIZE(lines))
			return false;
		if (next == 0 && !gemini_exit_code(line, eol, ret_code))
			return false;
		if (next == 1)
			*ret_signaled = true;
		next++;
		p = eol;
	}
	return true;
}

/* Where OUTPUT's end is not known, from the end: the host's own trailing
 * lines, then the slot where it would have put Exit Code or Signal. 0: no
 * such line (a success), -1: not the host's shape, 1: one is there, which
 * may be the command's own. */
static int gemini_lines_from_end(const char *out, const char *end)
{
	static const char *const tail[] = { "Process Group PGID: ", "Background PIDs: " };
	const char *eol = end;

	for (size_t i = 0; i < ARRAY_SIZE(tail) && eol > out; i++) {
		const char *line = eol;
		while (line > out && line[-1] != '\n')
			line--;
		if (gemini_line_is(line, eol, tail[i]))
			eol = line > out ? line - 1 : line;
		else if (i == 0)
			return -1; /* the host always ends with the process group */
	}
	const char *line = eol;
	while (line > out && line[-1] != '\n')
		line--;
	return gemini_line_is(line, eol, "Exit Code: ") || gemini_line_is(line, eol, "Signal: ");
}

/* Gemini CLI's run_shell_command (packages/core/src/tools/shell.ts) answers
 * "<untrusted_context>\n" BODY "\n</untrusted_context>", BODY being
 * "Output: " OUTPUT (or "(empty)"), then its own lines, in this order and
 * each only when it applies: "Error: ...", "Exit Code: N" (non-zero only),
 * "Signal: S", "Background PIDs: ...", "Process Group PGID: N". OUTPUT is
 * the command's, so it may hold any of those lines itself: the host's are
 * known only after where OUTPUT ends, which returnDisplay (OUTPUT itself,
 * when a string) tells. Without that, the host's lines are read from the
 * end: no Exit Code or Signal line there means 0, one there may be the
 * command's own, so the status is unknown. */
static void gemini_exit_status(json_t *payload, struct agent_exit *s)
{
	json_t *resp = json_object_get(payload, "tool_response");
	json_t *input = json_object_get(payload, "tool_input");
	const char *llm = jsonutil_str(resp, "llmContent");
	const char *display = jsonutil_str(resp, "returnDisplay");
	const char *out, *end;

	if (json_is_true(json_object_get(input, "is_background"))) {
		agenthost_exit_unknown(s, false, "a background run: the host reports no status for it");
		return;
	}
	if (json_object_get(resp, "error") && !json_is_null(json_object_get(resp, "error"))) {
		agenthost_exit_unknown(s, true,
				       "the host reported an error running it, without a status");
		return;
	}
	agenthost_exit_unknown(s, false, "the host's report does not have the shape gemini-cli writes");
	if (!llm || !gemini_body(llm, &out, &end))
		return;
	const char *rest = gemini_output_end(out, end, display);
	int code = 0;
	bool signaled = false;
	if (rest && !gemini_host_lines(rest, end, &code, &signaled))
		return;
	if (!rest) {
		int r = gemini_lines_from_end(out, end);
		if (r < 0)
			return;
		if (r > 0) {
			agenthost_exit_unknown(s, false,
					       "an \"Exit Code\" or \"Signal\" line may be the command's own output (returnDisplay does not say where it ends)");
			return;
		}
	}
	if (signaled) {
		agenthost_exit_unknown(s, true,
				       "killed by a signal, which the host names but does not number");
		return;
	}
	*s = (struct agent_exit){ .kind = AGENT_EXIT_REPORTED, .code = code };
}

/* A refused tool: exit 2, the reason on stderr. A refused stop: "decision"
 * "deny". A routed command: tool_input, which Gemini CLI merges into the
 * call's arguments. A pass: {}, since Gemini expects an object. */
static int gemini_reply(const struct agent_decision *d, struct agent_reply *ret)
{
	if (agenthost_reply_refuse_tool(d, ret))
		return 0;
	*ret = (struct agent_reply){ .print = true };
	if (d->block)
		ret->doc = json_pack("{s:s, s:s}", "decision", "deny", "reason", d->message);
	else if (d->updated_input)
		ret->doc = json_pack("{s:{s:s, s:O}}", "hookSpecificOutput", "hookEventName",
				     "BeforeTool", "tool_input", d->updated_input);
	else
		ret->doc = json_object();
	return 0;
}

/* hooksConfig.enabled false turns hooks off, hooksConfig.disabled one of
 * them (Gemini CLI names a command hook by its command); versions before
 * hooksConfig need tools.enableHooks. */
static const struct agenthost_switch gemini_switches[] = {
	{ "hooksConfig", "enabled", AGENTHOST_SWITCH_FALSE,
	  "hooksConfig.enabled is false: no hook runs" },
	{ "hooksConfig", "disabled", AGENTHOST_SWITCH_NAMES,
	  "hooksConfig.disabled names an airlock hook" },
	{ "tools", "enableHooks", AGENTHOST_SWITCH_FALSE, "tools.enableHooks is false: no hook runs" },
	{ 0 },
};

const struct agent_host agenthost_gemini = {
	.name = "gemini",
	.display = "Gemini CLI",
	.agent = "gemini-cli",
	.routed_source = "gemini-routed",
	.post_source = "gemini-after-tool",
	.shell_tools = gemini_shell,
	.write_tools = gemini_write,
	.read_tools = gemini_read,
	.link_tools = gemini_links,
	.shell_dir_key = "dir_path",
	.project_dirs = gemini_dirs,
	.project_config = gemini_project,
	.user_config = gemini_user,
	.install_user_base = AGENTHOST_BASE_USER,
	.install_user_file = ".gemini/settings.json",
	.install_project_file = ".gemini/settings.json",
	.credentials = gemini_credentials,
	.install_events = gemini_events,
	.install_timeout = 10000,
	.settings = gemini_settings,
	.switches = gemini_switches,
	.install_needs = gemini_install_needs,
	.exit_status = gemini_exit_status,
	.reply = gemini_reply,
};

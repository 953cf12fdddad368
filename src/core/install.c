/* SPDX-License-Identifier: MIT */
#include "core/install.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/jsonutil.h"
#include "core/shellwords.h"

/* One event's hook, per host: the event name in the host's settings, the
 * matcher (NULL: every call), and airlock hook's event argument. */
struct install_event {
	const char *name;
	const char *matcher;
	const char *event;
};

/* Claude Code 2.1: tool names Bash, Write, Edit, MultiEdit, NotebookEdit;
 * PostToolUseFailure is a separate event; timeouts in seconds. */
static const struct install_event install_claude[] = {
	{ "PreToolUse", "Bash|Write|Edit|MultiEdit|NotebookEdit", "pre-tool-use" },
	{ "PostToolUse", "Bash", "post-tool-use" },
	{ "PostToolUseFailure", "Bash", "post-tool-use" },
	{ "Stop", NULL, "stop" },
	{ 0 },
};
/* Codex 0.171 (codex-rs/hooks): every shell tool is "Bash" to hooks, file
 * edits are "apply_patch"; "A|B" of plain names matches exactly; no
 * failure event; "timeout" in seconds. */
static const struct install_event install_codex[] = {
	{ "PreToolUse", "Bash|apply_patch", "pre-tool-use" },
	{ "PostToolUse", "Bash", "post-tool-use" },
	{ "Stop", NULL, "stop" },
	{ 0 },
};
/* Gemini CLI 0.61: BeforeTool/AfterTool/AfterAgent; timeouts in ms. */
static const struct install_event install_gemini[] = {
	{ "BeforeTool", "run_shell_command|write_file|replace", "pre-tool-use" },
	{ "AfterTool", "run_shell_command", "post-tool-use" },
	{ "AfterAgent", NULL, "stop" },
	{ 0 },
};

static const struct install_event *install_events(enum agenthost host)
{
	static const struct install_event *const events[AGENTHOST_COUNT] = {
		[AGENTHOST_CLAUDE] = install_claude,
		[AGENTHOST_CODEX] = install_codex,
		[AGENTHOST_GEMINI] = install_gemini,
	};
	return events[host];
}

/* s as one shell word: itself when it needs no quoting, else in single
 * quotes. NULL: out of memory. */
static char *install_quote(const char *s)
{
	bool plain = *s != '\0';

	for (const char *c = s; *c && plain; c++)
		plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			(*c >= '0' && *c <= '9') || strchr("/._-+=:,@%", *c);
	if (plain)
		return strdup(s);
	size_t n = 3;
	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	char *q = malloc(n), *p = q;
	if (!q)
		return NULL;
	*p++ = '\'';
	for (const char *c = s; *c; c++) {
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

/* "AIRLOCK hook DIALECT EVENT [--state-dir DIR] [--policy FILE]": the
 * documented order, options last. NULL: out of memory. */
static char *install_command_line(enum agenthost host, const struct install_command *cmd,
				  const char *event)
{
	cleanup_free char *airlock = install_quote(cmd->airlock);
	cleanup_free char *state = cmd->state_dir ? install_quote(cmd->state_dir) : NULL;
	cleanup_free char *policy = cmd->policy ? install_quote(cmd->policy) : NULL;
	char *s = NULL;

	if (!airlock || (cmd->state_dir && !state) || (cmd->policy && !policy))
		return NULL;
	if (asprintf(&s, "%s hook %s %s%s%s%s%s", airlock, agenthost_get(host)->name, event,
		     state ? " --state-dir " : "", state ? state : "", policy ? " --policy " : "",
		     policy ? policy : "") < 0)
		return NULL;
	return s;
}

json_t *install_hooks(enum agenthost host, const struct install_command *cmd)
{
	cleanup_with(json_decrefp) json_t *hooks = json_object();
	int timeout = agenthost_get(host)->timeout_ms ? 10000 : 10;

	if (!hooks)
		return NULL;
	for (const struct install_event *e = install_events(host); e->name; e++) {
		cleanup_free char *line = install_command_line(host, cmd, e->event);
		json_t *group = line ? json_object() : NULL;
		if (!group)
			return NULL;
		if (e->matcher)
			json_object_set_new(group, "matcher", json_string(e->matcher));
		json_object_set_new(group, "hooks",
				    json_pack("[{s:s, s:s, s:i}]", "type", "command", "command", line,
					      "timeout", timeout));
		if (!json_object_get(group, "hooks") ||
		    json_object_set_new(hooks, e->name, json_pack("[o]", group)) < 0)
			return NULL;
	}
	return TAKE_PTR(hooks);
}

/* A command hook running `.../airlock hook DIALECT ...`. */
static bool install_is_ours(json_t *hook, enum agenthost host)
{
	const char *type = jsonutil_str(hook, "type");
	const char *command = jsonutil_str(hook, "command");
	struct shell_script s;
	bool ours = false;

	if (!type || strcmp(type, "command") != 0 || !command)
		return false;
	if (shell_script_parse(command, strlen(command), &s) == 0 && s.n_commands == 1) {
		char **argv = s.commands[0].argv;
		const char *base = strrchr(argv[0], '/');
		ours = strcmp(base ? base + 1 : argv[0], "airlock") == 0 && argv[1] &&
		       strcmp(argv[1], "hook") == 0 && argv[2] &&
		       strcmp(argv[2], agenthost_get(host)->name) == 0;
	}
	shell_script_release(&s);
	return ours;
}

/* Removes airlock's hooks from one event's groups; a group left without
 * hooks goes too. *ret_first: where the first one was, or -1. */
static int install_remove_ours(json_t *groups, enum agenthost host, const char *event,
			       long *ret_first, struct error *err)
{
	*ret_first = -1;
	if (!json_is_array(groups))
		return error_set(err, EINVAL, "hooks.%s is not an array", event);
	for (size_t i = 0; i < json_array_size(groups);) {
		json_t *group = json_array_get(groups, i);
		json_t *hooks = json_object_get(group, "hooks");
		bool removed = false;
		for (size_t j = 0; json_is_array(hooks) && j < json_array_size(hooks);) {
			if (install_is_ours(json_array_get(hooks, j), host)) {
				json_array_remove(hooks, j);
				removed = true;
			} else {
				j++;
			}
		}
		if (removed && *ret_first < 0)
			*ret_first = (long)i;
		if (removed && json_array_size(hooks) == 0)
			json_array_remove(groups, i);
		else
			i++;
	}
	return 0;
}

int install_merge(json_t *settings, enum agenthost host, const struct install_command *cmd,
		  bool *ret_changed, struct error *err)
{
	cleanup_with(json_decrefp) json_t *before = json_deep_copy(settings);
	cleanup_with(json_decrefp) json_t *wanted = install_hooks(host, cmd);

	if (!before || !wanted)
		return error_set(err, ENOMEM, "out of memory");
	json_t *hooks = json_object_get(settings, "hooks");
	if (!hooks) {
		hooks = json_object();
		if (json_object_set_new(settings, "hooks", hooks) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	if (!json_is_object(hooks))
		return error_set(err, EINVAL, "\"hooks\" is not an object");
	/* Airlock hooks of this dialect under events airlock no longer uses. */
	const char *name;
	json_t *groups;
	void *tmp;
	json_object_foreach_safe(hooks, tmp, name, groups) {
		if (json_object_get(wanted, name))
			continue;
		long first;
		int r = install_remove_ours(groups, host, name, &first, err);
		if (r < 0)
			return r;
		if (first >= 0 && json_array_size(groups) == 0)
			json_object_del(hooks, name);
	}
	json_object_foreach(wanted, name, groups) {
		json_t *have = json_object_get(hooks, name);
		if (!have) {
			have = json_array();
			if (json_object_set_new(hooks, name, have) < 0)
				return error_set(err, ENOMEM, "out of memory");
		}
		long first;
		int r = install_remove_ours(have, host, name, &first, err);
		if (r < 0)
			return r;
		json_t *group = json_array_get(groups, 0);
		r = first >= 0 ? json_array_insert(have, (size_t)first, group)
			       : json_array_append(have, group);
		if (r < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	*ret_changed = !json_equal(before, settings);
	return 0;
}

static int install_note(char ***lines, const char *fmt, ...) _printf_(2, 3);
static int install_note(char ***lines, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : strv_consume(lines, s);
}

int install_check(json_t *settings, enum agenthost host, const struct install_command *cmd,
		  char ***ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *wanted = install_hooks(host, cmd);
	cleanup_strv char **lines = calloc(1, sizeof(char *));
	json_t *hooks = json_object_get(settings, "hooks");
	int r = 0;

	if (!wanted || !lines)
		return error_set(err, ENOMEM, "out of memory");
	if (hooks && !json_is_object(hooks))
		return error_set(err, EINVAL, "\"hooks\" is not an object");
	const char *name;
	json_t *groups;
	json_object_foreach(wanted, name, groups) {
		json_t *want = json_array_get(groups, 0), *have = json_object_get(hooks, name);
		size_t ours = 0, i;
		json_t *group;
		json_array_foreach(json_is_array(have) ? have : NULL, i, group) {
			json_t *h = json_object_get(group, "hooks");
			size_t j;
			json_t *hook;
			json_array_foreach(json_is_array(h) ? h : NULL, j, hook)
				if (install_is_ours(hook, host)) {
					ours++;
					if (!json_equal(group, want)) {
						cleanup_free char *found = json_dumps(group, JSON_COMPACT);
						cleanup_free char *expected = json_dumps(want, JSON_COMPACT);
						r = r ? r : install_note(&lines, "hooks.%s: %s differs from %s", name, found ? found : "?", expected ? expected : "?");
					}
				}
		}
		if (ours == 0)
			r = r ? r : install_note(&lines, "hooks.%s: no airlock hook", name);
		else if (ours > 1)
			r = r ? r : install_note(&lines, "hooks.%s: %zu airlock hooks, where one is installed", name, ours);
	}
	json_object_foreach(json_is_object(hooks) ? hooks : NULL, name, groups) {
		if (json_object_get(wanted, name))
			continue;
		size_t i;
		json_t *group;
		json_array_foreach(json_is_array(groups) ? groups : NULL, i, group) {
			json_t *h = json_object_get(group, "hooks");
			size_t j;
			json_t *hook;
			json_array_foreach(json_is_array(h) ? h : NULL, j, hook)
				if (install_is_ours(hook, host))
					r = r ? r : install_note(&lines, "hooks.%s: an airlock hook airlock does not install here", name);
		}
	}
	/* Settings that switch the hooks off. */
	if (json_is_true(json_object_get(settings, "disableAllHooks")))
		r = r ? r : install_note(&lines, "disableAllHooks is true: no hook runs");
	if (json_is_false(json_object_get(json_object_get(settings, "hooksConfig"), "enabled")))
		r = r ? r : install_note(&lines, "hooksConfig.enabled is false: no hook runs");
	if (json_is_false(json_object_get(json_object_get(settings, "tools"), "enableHooks")))
		r = r ? r : install_note(&lines, "tools.enableHooks is false: no hook runs");
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(lines);
	return 0;
}

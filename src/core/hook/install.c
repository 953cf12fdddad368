/* SPDX-License-Identifier: MIT */
#include "core/hook/install.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/store/jsonutil.h"
#include "core/policy/shellwords.h"
#include "core/session/session.h"

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

/* The script every hook command runs with /bin/sh, airlock's path as $0 and
 * its arguments after it. The hosts run the tool when a hook exits with
 * anything but 2 (Claude Code, Codex, Gemini CLI alike), so a status that
 * airlock did not choose (126 and 127: the binary is gone or cannot run;
 * 128+N: it was killed) becomes 2, with the reason on stderr; airlock's own
 * 0, 1 (a broken invocation with no failure open) and 2 pass unchanged. It
 * holds neither a single quote nor a backslash, so that it is one
 * single-quoted word in any shell a host runs hooks with. */
#define INSTALL_WRAPPER                                                                                \
	"\"$0\" \"$@\"; s=$?; [ $s -le 2 ] || { echo \"airlock: $0 could not answer the hook (status " \
	"$s); blocking\" >&2; s=2; }; exit $s"
#define INSTALL_SHELL "/bin/sh"

/* "/bin/sh -c 'WRAPPER' AIRLOCK hook DIALECT EVENT [--state-dir DIR]
 * [--policy FILE]": the documented order, options last. NULL: out of
 * memory. */
static char *install_command_line(const struct agent_host *host, const struct install_command *cmd,
				  const char *event)
{
	cleanup_free char *airlock = install_quote(cmd->airlock);
	const char *state_dir = cmd->session && cmd->state_dir ? cmd->session->state_dir : NULL;
	const char *policy_path = cmd->session ? cmd->session->policy_path : NULL;
	cleanup_free char *state = state_dir ? install_quote(state_dir) : NULL;
	cleanup_free char *policy = policy_path ? install_quote(policy_path) : NULL;
	char *s = NULL;

	if (!airlock || (state_dir && !state) || (policy_path && !policy))
		return NULL;
	if (asprintf(&s, INSTALL_SHELL " -c '" INSTALL_WRAPPER "' %s hook %s %s%s%s%s%s", airlock,
		     host->name, event, state ? " --state-dir " : "", state ? state : "",
		     policy ? " --policy " : "", policy ? policy : "") < 0)
		return NULL;
	return s;
}

/* The key of a hook's command in host's settings. */
static const char *install_command_key(const struct agent_host *host)
{
	return host->install_command_key ? host->install_command_key : "command";
}

json_t *install_hooks(const struct agent_host *host, const struct install_command *cmd)
{
	cleanup_with(json_decrefp) json_t *hooks = json_object();
	int timeout = host->install_timeout;

	if (!hooks)
		return NULL;
	for (const struct agenthost_install_event *e = host->install_events; e->name; e++) {
		cleanup_free char *line = install_command_line(host, cmd, e->event);
		if (line && host->install_flat) {
			/* The event's list holds the hook itself. */
			if (json_object_set_new(hooks, e->name,
						json_pack("[{s:s, s:s, s:i}]", "type", "command",
							  install_command_key(host), line,
							  host->install_timeout_key ? host->install_timeout_key
										    : "timeout",
							  timeout)) < 0)
				return NULL;
			continue;
		}
		json_t *group = line ? json_object() : NULL;
		if (!group)
			return NULL;
		if (e->matcher)
			json_object_set_new(group, "matcher", json_string(e->matcher));
		json_object_set_new(group, "hooks",
				    json_pack("[{s:s, s:s, s:i}]", "type", "command", "command",
					      line, "timeout", timeout));
		if (!json_object_get(group, "hooks") ||
		    json_object_set_new(hooks, e->name, json_pack("[o]", group)) < 0)
			return NULL;
	}
	return TAKE_PTR(hooks);
}

/* argv is `.../airlock hook DIALECT ...`. */
static bool install_argv_is_airlock_hook(char **argv, const struct agent_host *host)
{
	const char *base = strrchr(argv[0], '/');

	return strcmp(base ? base + 1 : argv[0], "airlock") == 0 && argv[1] &&
	       strcmp(argv[1], "hook") == 0 && argv[2] && strcmp(argv[2], host->name) == 0;
}

/* A hook's command: under the host's key, else "command" (which the
 * hosts with another key take as its alias). */
static const char *install_hook_command(json_t *hook, const struct agent_host *host)
{
	const char *command = jsonutil_str(hook, install_command_key(host));

	return command ? command : jsonutil_str(hook, "command");
}

/* A command hook running airlock's hook for host: `.../airlock hook
 * DIALECT ...` (as older installs wrote it), or that behind the wrapper. */
static bool install_is_ours(json_t *hook, const struct agent_host *host)
{
	const char *type = jsonutil_str(hook, "type");
	const char *command = install_hook_command(hook, host);
	struct shell_script s;
	bool ours = false;

	if (!type || strcmp(type, "command") != 0 || !command)
		return false;
	if (shell_script_parse(command, strlen(command), &s) == 0 && s.n_commands == 1) {
		char **argv = s.commands[0].argv;
		if (strcmp(argv[0], INSTALL_SHELL) == 0 && argv[1] && strcmp(argv[1], "-c") == 0 &&
		    argv[2] && strcmp(argv[2], INSTALL_WRAPPER) == 0 && argv[3])
			argv += 3;
		ours = install_argv_is_airlock_hook(argv, host);
	}
	shell_script_release(&s);
	return ours;
}

/* Removes airlock's hooks from one event's groups; a group left without
 * hooks goes too. *ret_first: where the first one was, or -1. */
static int install_remove_ours(json_t *groups, const struct agent_host *host, const char *event,
			       long *ret_first, struct error *err)
{
	*ret_first = -1;
	if (!json_is_array(groups))
		return error_set(err, EINVAL, "hooks.%s is not an array", event);
	for (size_t i = 0; host->install_flat && i < json_array_size(groups);) {
		if (install_is_ours(json_array_get(groups, i), host)) {
			json_array_remove(groups, i);
			if (*ret_first < 0)
				*ret_first = (long)i;
		} else {
			i++;
		}
	}
	for (size_t i = 0; !host->install_flat && i < json_array_size(groups);) {
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

int install_merge(json_t *settings, const struct agent_host *host,
		  const struct install_command *cmd, bool *ret_changed, struct error *err)
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
	if (host->install_version && !json_object_get(settings, "version") &&
	    json_object_set_new(settings, "version", json_integer(host->install_version)) < 0)
		return error_set(err, ENOMEM, "out of memory");
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

/* A hook's command, or its type when it has none, for a message. */
static const char *install_hook_name(json_t *hook, const struct agent_host *host)
{
	const char *command = install_hook_command(hook, host);
	const char *type = jsonutil_str(hook, "type");

	return command ? command : type ? type : "a hook";
}

/* The hooks of one entry of an event's list, a new reference: a group's
 * "hooks", or, in a flat list, the entry itself. NULL: none. */
static json_t *install_group_hooks(json_t *group, const struct agent_host *host)
{
	if (host->install_flat)
		return json_pack("[O]", group);
	return json_incref(json_object_get(group, "hooks"));
}

/* The pre-tool event's name in host's settings. */
static const char *install_pre_event(const struct agent_host *host)
{
	for (const struct agenthost_install_event *e = host->install_events; e->name; e++)
		if (strcmp(e->event, "pre-tool-use") == 0)
			return e->name;
	return NULL;
}

/* One event airlock installs (name; want its group): every hook in it,
 * into *lines: another hook before the tool, an airlock hook that differs,
 * and in the target none or more than one. */
static int install_check_event(json_t *hooks, const char *name, json_t *want,
			       const struct agent_host *host, bool target, char ***lines)
{
	const char *pre = install_pre_event(host);
	json_t *have = json_object_get(hooks, name);
	size_t ours = 0, i;
	json_t *group;
	int r = 0;

	json_array_foreach(json_is_array(have) ? have : NULL, i, group) {
		cleanup_with(json_decrefp) json_t *h = install_group_hooks(group, host);
		size_t j;
		json_t *hook;
		json_array_foreach(json_is_array(h) ? h : NULL, j, hook) {
			if (!install_is_ours(hook, host)) {
				/* Hosts run a tool's hooks side by side and take the
				 * input one of them rewrote: another hook may undo
				 * airlock's routing. */
				if (pre && strcmp(name, pre) == 0)
					r = r ? r
					      : install_note(lines,
							     "hooks.%s: %s runs before the tool too: it may rewrite the input airlock routed or judged",
							     name, install_hook_name(hook, host));
				continue;
			}
			ours++;
			if (json_equal(group, want))
				continue;
			cleanup_free char *found = json_dumps(group, JSON_COMPACT);
			cleanup_free char *expected = json_dumps(want, JSON_COMPACT);
			if (target)
				r = r ? r
				      : install_note(lines, "hooks.%s: %s differs from %s", name,
						     found ? found : "?", expected ? expected : "?");
			else
				r = r ? r
				      : install_note(lines,
						     "hooks.%s: an airlock hook that differs from the installed one: %s (installed: %s)",
						     name, found ? found : "?",
						     expected ? expected : "?");
		}
	}
	if (target && ours == 0)
		r = r ? r : install_note(lines, "hooks.%s: no airlock hook", name);
	else if (target && ours > 1)
		r = r ? r
		      : install_note(lines, "hooks.%s: %zu airlock hooks, where one is installed",
				     name, ours);
	return r;
}

/* An airlock hook in an event airlock does not install, into *lines. */
static int install_check_strays(json_t *hooks, json_t *wanted, const struct agent_host *host,
				char ***lines)
{
	const char *name;
	json_t *groups;
	int r = 0;

	json_object_foreach(json_is_object(hooks) ? hooks : NULL, name, groups) {
		if (json_object_get(wanted, name))
			continue;
		size_t i;
		json_t *group;
		json_array_foreach(json_is_array(groups) ? groups : NULL, i, group) {
			cleanup_with(json_decrefp) json_t *h = install_group_hooks(group, host);
			size_t j;
			json_t *hook;
			json_array_foreach(json_is_array(h) ? h : NULL, j, hook)
				if (install_is_ours(hook, host))
					r = r ? r
					      : install_note(lines,
							     "hooks.%s: an airlock hook airlock does not install here",
							     name);
		}
	}
	return r;
}

/* Whether a row of an earlier host (before host i) or earlier in host i's
 * own list is the same switch as sw: each is reported once. */
static bool install_switch_seen(size_t i, const struct agenthost_switch *sw)
{
	for (size_t k = 0; k <= i; k++)
		for (const struct agenthost_switch *o = agenthost_at(k)->switches; o && o->key; o++) {
			if (o == sw)
				return false;
			if (strcmp(o->key, sw->key) == 0 &&
			    (o->object ? sw->object && strcmp(o->object, sw->object) == 0 : !sw->object))
				return true;
		}
	return false;
}

/* One switch in settings, into *lines when it turns hooks off. */
static int install_check_switch(json_t *settings, const struct agenthost_switch *sw, char ***lines)
{
	json_t *v = json_object_get(sw->object ? json_object_get(settings, sw->object) : settings,
				    sw->key);
	size_t i;
	json_t *name;
	int r = 0;

	switch (sw->kind) {
	case AGENTHOST_SWITCH_TRUE:
		return json_is_true(v) ? install_note(lines, "%s", sw->note) : 0;
	case AGENTHOST_SWITCH_FALSE:
		return json_is_false(v) ? install_note(lines, "%s", sw->note) : 0;
	case AGENTHOST_SWITCH_NAMES:
		json_array_foreach(json_is_array(v) ? v : NULL, i, name)
			if (json_is_string(name) && strstr(json_string_value(name), "airlock"))
				r = r ? r
				      : install_note(lines, "%s: %s", sw->note,
						     json_string_value(name));
		return r;
	}
	return 0;
}

/* Settings that switch the hooks off (every host's switches, in the
 * table's order), at whatever level they are, into *lines. */
static int install_check_switches(json_t *settings, char ***lines)
{
	int r = 0;

	for (size_t i = 0; i < agenthost_count(); i++)
		for (const struct agenthost_switch *sw = agenthost_at(i)->switches; sw && sw->key; sw++)
			if (!install_switch_seen(i, sw)) {
				int e = install_check_switch(settings, sw, lines);
				r = r ? r : e;
			}
	return r;
}

int install_check(json_t *settings, const struct agent_host *host,
		  const struct install_command *cmd, bool target, char ***ret, struct error *err)
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
		int e = install_check_event(hooks, name, json_array_get(groups, 0), host, target,
					    &lines);
		r = r ? r : e;
	}
	int e = install_check_strays(hooks, wanted, host, &lines);
	r = r ? r : e;
	e = install_check_switches(settings, &lines);
	r = r ? r : e;
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(lines);
	return 0;
}

/* s without leading blanks. */
static const char *install_skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Whether the line (blanks removed, no comment) says key = false, in
 * any spacing: "hooks = false", "hooks=false". */
static bool install_toml_sets(const char *line, const char *key, const char *value)
{
	const char *p = strstr(line, key);

	while (p) {
		bool word_start = p == line || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'));
		const char *q = install_skip_blanks(p + strlen(key));
		if (word_start && *q == '=' &&
		    strncmp(install_skip_blanks(q + 1), value, strlen(value)) == 0)
			return true;
		p = strstr(p + 1, key);
	}
	return false;
}

int install_check_toml(const char *text, size_t n, char ***ret, struct error *err)
{
	cleanup_strv char **lines = calloc(1, sizeof(char *));
	cleanup_free char *copy = strndup(text, n);
	char table[256] = "";
	int r = 0;
	unsigned lineno = 0;

	if (!lines || !copy)
		return error_set(err, ENOMEM, "out of memory");
	for (char *l = copy, *next; *l; l = next) {
		char *nl = strchr(l, '\n');
		next = nl ? nl + 1 : l + strlen(l);
		if (nl)
			*nl = '\0';
		lineno++;
		const char *p = install_skip_blanks(l);
		if (*p == '#' || *p == '\0')
			continue;
		/* A comment after the value: only when no string could hold the
		 * '#' (conservative: a '#' in a string keeps the whole line). */
		char *hash = strchr(l, '#');
		if (hash && !strchr(l, '"') && !strchr(l, '\''))
			*hash = '\0';
		if (*p == '[') {
			snprintf(table, sizeof(table), "%s", p);
			continue;
		}
		bool in_features = strncmp(table, "[features]", 10) == 0;
		bool in_hooks = strncmp(table, "[hooks", 6) == 0 || strncmp(table, "[[hooks", 7) == 0;
		const char *why = NULL;
		if ((in_features || strstr(p, "features")) &&
		    (install_toml_sets(p, "hooks", "false") ||
		     install_toml_sets(p, "codex_hooks", "false")))
			why = "turns the hooks feature off";
		else if ((in_hooks || strstr(p, "hooks")) && install_toml_sets(p, "enabled", "false"))
			why = "disables a hook (hooks.state)";
		else if (install_toml_sets(p, "allow_managed_hooks_only", "true"))
			why = "lets only managed hooks run";
		else if (in_hooks && strncmp(table, "[hooks.state", 12) != 0 &&
			 install_toml_sets(p, "command", ""))
			why = "defines a hook in TOML, which airlock does not check: it may rewrite the input airlock routed";
		else if (strstr(p, "hooks") && strstr(p, "false"))
			why = "may turn hooks off (not understood)";
		if (why)
			r = r ? r : install_note(&lines, "line %u: %s: %s", lineno, l, why);
	}
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(lines);
	return 0;
}

/* Whether dir holds a build system's own files: a build tree, which a
 * rebuild or a clean removes. */
static bool install_in_build_tree(const char *path)
{
	static const char *const markers[] = { "build.ninja", "meson-private", "CMakeCache.txt",
					       "Makefile" };
	cleanup_free char *dir = path_dirname(path);

	for (size_t i = 0; dir && i < ARRAY_SIZE(markers); i++) {
		cleanup_free char *p = path_join(dir, markers[i]);
		if (p && access(p, F_OK) == 0)
			return true;
	}
	return false;
}

int install_locate(const char *self, const char *path_env, char **ret, bool *ret_stable,
		   bool *ret_build_tree, struct error *err)
{
	struct stat me;

	if (stat(self, &me) < 0)
		return error_set_errno(err, errno, "stat %s", self);
	*ret_build_tree = install_in_build_tree(self);
	for (const char *p = path_env ? path_env : ""; *p;) {
		const char *end = strchrnul(p, ':');
		char dir[PATH_MAX];
		struct stat st;
		if (end > p && (size_t)(end - p) < sizeof(dir) && *p == '/') {
			memcpy(dir, p, (size_t)(end - p));
			dir[end - p] = '\0';
			cleanup_free char *candidate = path_join(dir, "airlock");
			if (!candidate)
				return error_set(err, ENOMEM, "out of memory");
			/* The first airlock on PATH is the one a user runs. */
			if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(candidate, X_OK) == 0) {
				if (st.st_dev == me.st_dev && st.st_ino == me.st_ino) {
					*ret = TAKE_PTR(candidate);
					*ret_stable = true;
					return 0;
				}
				break;
			}
		}
		p = *end ? end + 1 : end;
	}
	*ret = strdup(self);
	*ret_stable = false;
	return *ret ? 0 : error_set(err, ENOMEM, "out of memory");
}

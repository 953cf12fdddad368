/* SPDX-License-Identifier: MIT */
#include "core/rules.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/strv.h"
#include "core/jsonutil.h"
#include "core/shellwords.h"

#define RULES_MAX_BYTES	    (1 << 20)
#define RULES_MAX_ARGS_RE   16
#define MAX_WRAPPER_DEPTH   8
#define MAX_SHELL_DEPTH	    4

extern const char policy_rules_json[];

struct rule {
	char *id, *reason;
	int risk;
	char **argv0;
	char **subcommands; /* NULL: no subcommand is looked for */
	char **global_options_with_value, **global_veto;
	char **veto;
	bool combined_short;
	char **any_arg;
	bool any_arg_prefix;
	char **allowed_args;
	regex_t args_re[RULES_MAX_ARGS_RE];
	size_t n_args_re;
	bool has_args_re;
	uint64_t max_args; /* 0: no limit */
};

struct wrapper {
	char **argv0;
	char **options_with_value;
	bool assignments;
	uint64_t positionals;
};

struct rules {
	char *levels[6];
	int default_risk, unparsed_risk;
	char *default_reason, *unparsed_reason;
	char **shells;
	struct wrapper *wrappers;
	size_t n_wrappers;
	struct rule *rules;
	size_t n_rules;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ---- loading ---------------------------------------------------------- */

static int rules_get_risk(json_t *v, const char *name, int *ret, struct error *err)
{
	uint64_t risk;
	int r = jsonutil_get_u64(v, name, 1, 5, &risk, err);

	if (r == 0)
		*ret = (int)risk;
	return r;
}

static int rules_parse_verdict(json_t *obj, const char *name, int *ret_risk, char **ret_reason,
			       struct error *err)
{
	static const char *const keys[] = { "risk", "reason", NULL };

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", name);
	int r = jsonutil_check_keys(obj, name, keys, err);
	if (r == 0)
		r = rules_get_risk(json_object_get(obj, "risk"), name, ret_risk, err);
	if (r == 0)
		r = jsonutil_get_string(json_object_get(obj, "reason"), name, ret_reason, err);
	return r;
}

static int rules_opt_strv(json_t *obj, const char *key, const char *where, char ***ret,
			  struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[128];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_strv(v, name, false, ret, err);
}

static int rules_opt_bool(json_t *obj, const char *key, const char *where, bool *ret,
			  struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[128];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_bool(v, name, ret, err);
}

static int rules_opt_u64(json_t *obj, const char *key, const char *where, uint64_t min,
			 uint64_t max, uint64_t *ret, struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[128];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_u64(v, name, min, max, ret, err);
}

static int rules_parse_rule(struct rule *rule, json_t *obj, const char *where, struct error *err)
{
	static const char *const keys[] = { "id",	    "argv0",	    "subcommands",
					    "global_options_with_value",    "global_veto",
					    "veto",	    "combined_short", "any_arg",
					    "any_arg_prefix", "allowed_args", "args",
					    "max_args",	    "risk",	    "reason",
					    NULL };
	char name[128];

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", where);
	int r = jsonutil_check_keys(obj, where, keys, err);
	snprintf(name, sizeof(name), "%s.id", where);
	if (r == 0)
		r = jsonutil_get_string(json_object_get(obj, "id"), name, &rule->id, err);
	snprintf(name, sizeof(name), "%s.reason", where);
	if (r == 0)
		r = jsonutil_get_string(json_object_get(obj, "reason"), name, &rule->reason, err);
	snprintf(name, sizeof(name), "%s.risk", where);
	if (r == 0)
		r = rules_get_risk(json_object_get(obj, "risk"), name, &rule->risk, err);
	snprintf(name, sizeof(name), "%s.argv0", where);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(obj, "argv0"), name, false, &rule->argv0, err);
	if (r == 0)
		r = rules_opt_strv(obj, "subcommands", where, &rule->subcommands, err);
	if (r == 0)
		r = rules_opt_strv(obj, "global_options_with_value", where,
				   &rule->global_options_with_value, err);
	if (r == 0)
		r = rules_opt_strv(obj, "global_veto", where, &rule->global_veto, err);
	if (r == 0)
		r = rules_opt_strv(obj, "veto", where, &rule->veto, err);
	if (r == 0)
		r = rules_opt_strv(obj, "any_arg", where, &rule->any_arg, err);
	if (r == 0)
		r = rules_opt_strv(obj, "allowed_args", where, &rule->allowed_args, err);
	if (r == 0)
		r = rules_opt_bool(obj, "combined_short", where, &rule->combined_short, err);
	if (r == 0)
		r = rules_opt_bool(obj, "any_arg_prefix", where, &rule->any_arg_prefix, err);
	if (r == 0)
		r = rules_opt_u64(obj, "max_args", where, 1, 4096, &rule->max_args, err);
	json_t *v;
	if (r == 0 && (v = json_object_get(obj, "args"))) {
		cleanup_strv char **patterns = NULL;
		snprintf(name, sizeof(name), "%s.args", where);
		r = jsonutil_get_strv(v, name, false, &patterns, err);
		size_t n = r == 0 ? strv_length(patterns) : 0;
		if (n > RULES_MAX_ARGS_RE)
			return error_set(err, E2BIG, "'%s' has more than %d patterns", name,
					 RULES_MAX_ARGS_RE);
		rule->has_args_re = r == 0;
		for (size_t i = 0; r == 0 && i < n; i++) {
			if (regcomp(&rule->args_re[i], patterns[i], REG_EXTENDED | REG_NOSUB) != 0)
				return error_set(err, EINVAL, "'%s[%zu]' is not a valid regular expression",
						 name, i);
			rule->n_args_re++;
		}
	}
	return r;
}

static int rules_parse_wrapper(struct wrapper *w, json_t *obj, const char *where,
			       struct error *err)
{
	static const char *const keys[] = { "argv0", "options_with_value", "assignments",
					    "positionals", NULL };
	char name[128];

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", where);
	int r = jsonutil_check_keys(obj, where, keys, err);
	snprintf(name, sizeof(name), "%s.argv0", where);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(obj, "argv0"), name, false, &w->argv0, err);
	if (r == 0)
		r = rules_opt_strv(obj, "options_with_value", where, &w->options_with_value, err);
	if (r == 0)
		r = rules_opt_bool(obj, "assignments", where, &w->assignments, err);
	if (r == 0)
		r = rules_opt_u64(obj, "positionals", where, 0, 8, &w->positionals, err);
	return r;
}

static int rules_parse_levels(struct rules *rules, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "1", "2", "3", "4", "5", NULL };

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'levels' must be an object");
	int r = jsonutil_check_keys(obj, "levels", keys, err);
	for (int i = 1; r == 0 && i <= 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "levels.%d", i);
		r = jsonutil_get_string(json_object_get(obj, keys[i - 1]), name, &rules->levels[i],
					err);
	}
	return r;
}

static int rules_parse_root(struct rules *rules, json_t *root, struct error *err)
{
	static const char *const keys[] = { "schema", "levels",	  "default", "unparsed_shell",
					    "shells", "wrappers", "rules",   NULL };
	int r = jsonutil_check_keys(root, "", keys, err);
	if (r < 0)
		return r;
	json_t *schema = json_object_get(root, "schema");
	if (!json_is_string(schema) || strcmp(json_string_value(schema), RULES_SCHEMA) != 0)
		return error_set(err, EINVAL, "'schema' must be \"%s\"", RULES_SCHEMA);
	r = rules_parse_levels(rules, json_object_get(root, "levels"), err);
	if (r == 0)
		r = rules_parse_verdict(json_object_get(root, "default"), "default",
					&rules->default_risk, &rules->default_reason, err);
	if (r == 0)
		r = rules_parse_verdict(json_object_get(root, "unparsed_shell"), "unparsed_shell",
					&rules->unparsed_risk, &rules->unparsed_reason, err);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(root, "shells"), "shells", false,
				      &rules->shells, err);
	if (r < 0)
		return r;

	json_t *wrappers = json_object_get(root, "wrappers");
	json_t *list = json_object_get(root, "rules");
	if (!json_is_array(wrappers))
		return error_set(err, EINVAL, "'wrappers' must be an array");
	if (!json_is_array(list))
		return error_set(err, EINVAL, "'rules' must be an array");
	rules->wrappers = calloc(json_array_size(wrappers) + 1, sizeof(*rules->wrappers));
	rules->rules = calloc(json_array_size(list) + 1, sizeof(*rules->rules));
	if (!rules->wrappers || !rules->rules)
		return error_set(err, ENOMEM, "out of memory");
	size_t i;
	json_t *v;
	json_array_foreach(wrappers, i, v) {
		char where[64];
		snprintf(where, sizeof(where), "wrappers[%zu]", i);
		rules->n_wrappers++;
		r = rules_parse_wrapper(&rules->wrappers[i], v, where, err);
		if (r < 0)
			return r;
	}
	json_array_foreach(list, i, v) {
		char where[64];
		snprintf(where, sizeof(where), "rules[%zu]", i);
		rules->n_rules++;
		r = rules_parse_rule(&rules->rules[i], v, where, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int rules_parse(const char *text, size_t n, struct rules **ret, struct error *err)
{
	cleanup_with(rules_freep) struct rules *rules = calloc(1, sizeof(*rules));
	cleanup_with(json_decrefp) json_t *root = NULL;

	if (!rules)
		return error_set(err, ENOMEM, "out of memory");
	int r = jsonutil_parse_object(text, n, &root, err);
	if (r == 0)
		r = rules_parse_root(rules, root, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(rules);
	return 0;
}

int rules_load_default(struct rules **ret, struct error *err)
{
	int r = rules_parse(policy_rules_json, strlen(policy_rules_json), ret, err);

	return r < 0 ? error_prefix(err, "built-in rules") : 0;
}

int rules_load_file(const char *path, struct rules **ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(AT_FDCWD, path, RULES_MAX_BYTES, &text, &n, err);

	if (r == 0)
		r = rules_parse(text, n, ret, err);
	return r < 0 ? error_prefix(err, "rules %s", path) : 0;
}

void rules_free(struct rules *rules)
{
	if (!rules)
		return;
	for (int i = 0; i < 6; i++)
		free(rules->levels[i]);
	free(rules->default_reason);
	free(rules->unparsed_reason);
	strv_free(rules->shells);
	for (size_t i = 0; i < rules->n_wrappers; i++) {
		strv_free(rules->wrappers[i].argv0);
		strv_free(rules->wrappers[i].options_with_value);
	}
	free(rules->wrappers);
	for (size_t i = 0; i < rules->n_rules; i++) {
		struct rule *rule = &rules->rules[i];
		free(rule->id);
		free(rule->reason);
		strv_free(rule->argv0);
		strv_free(rule->subcommands);
		strv_free(rule->global_options_with_value);
		strv_free(rule->global_veto);
		strv_free(rule->veto);
		strv_free(rule->any_arg);
		strv_free(rule->allowed_args);
		for (size_t j = 0; j < rule->n_args_re; j++)
			regfree(&rule->args_re[j]);
	}
	free(rules->rules);
	free(rules);
}

/* ---- matching ---------------------------------------------------------- */

/* arg is the option, `--option=value`, or (for a two-character `-x`) `-xvalue`. */
static bool option_matches(const char *arg, const char *option)
{
	size_t n = strlen(option);

	if (strncmp(arg, option, n) != 0)
		return false;
	if (arg[n] == '\0')
		return true;
	if (option[0] == '-' && option[1] == '-')
		return arg[n] == '=';
	return n == 2 && option[0] == '-'; /* attached value */
}

static bool any_option_matches(const char *arg, char *const *options, bool combined_short)
{
	for (size_t i = 0; options && options[i]; i++) {
		const char *o = options[i];
		if (option_matches(arg, o))
			return true;
		/* -iz contains -z when the tool takes combined short flags */
		if (combined_short && strlen(o) == 2 && o[0] == '-' && o[1] != '-' &&
		    arg[0] == '-' && arg[1] != '-' && strchr(arg + 1, o[1]))
			return true;
	}
	return false;
}

static bool allowed_arg(const char *arg, char *const *allowed)
{
	for (size_t i = 0; allowed[i]; i++) {
		size_t n = strlen(allowed[i]);
		if (n > 0 && allowed[i][n - 1] == '=' ? strncmp(arg, allowed[i], n) == 0
						       : strcmp(arg, allowed[i]) == 0)
			return true;
	}
	return false;
}

static bool rule_matches(const struct rule *rule, char *const *argv)
{
	size_t argc = strv_length(argv);

	if (!strv_contains(rule->argv0, base_name(argv[0])))
		return false;
	if (rule->max_args && argc > rule->max_args)
		return false;
	size_t first = 1; /* the first argument the veto lists look at */
	if (rule->subcommands) {
		size_t i = 1;
		for (; i < argc && argv[i][0] == '-'; i++) {
			if (any_option_matches(argv[i], rule->global_veto, false))
				return false;
			if (strv_contains(rule->global_options_with_value, argv[i]))
				i++;
		}
		if (i >= argc || !strv_contains(rule->subcommands, argv[i]))
			return false;
		first = i + 1;
	}
	if (rule->any_arg) {
		bool found = false;
		for (size_t i = 1; i < argc && !found; i++)
			found = rule->any_arg_prefix ? any_option_matches(argv[i], rule->any_arg, false)
						     : strv_contains(rule->any_arg, argv[i]);
		if (!found)
			return false;
	}
	for (size_t i = first; i < argc; i++) {
		if (any_option_matches(argv[i], rule->veto, rule->combined_short))
			return false;
		if (rule->allowed_args && !allowed_arg(argv[i], rule->allowed_args))
			return false;
	}
	if (rule->has_args_re) {
		if (argc - 1 > rule->n_args_re)
			return false;
		for (size_t i = 1; i < argc; i++)
			if (regexec(&rule->args_re[i - 1], argv[i], 0, NULL, 0) != 0)
				return false;
	}
	return true;
}

char *const *rules_strip_wrappers(const struct rules *rules, char *const *argv)
{
	for (int depth = 0; depth < MAX_WRAPPER_DEPTH && argv[0]; depth++) {
		const struct wrapper *w = NULL;
		for (size_t i = 0; i < rules->n_wrappers && !w; i++)
			if (strv_contains(rules->wrappers[i].argv0, base_name(argv[0])))
				w = &rules->wrappers[i];
		if (!w)
			return argv;
		size_t i = 1;
		for (; argv[i]; i++) {
			if (strcmp(argv[i], "--") == 0) {
				i++;
				break;
			}
			if (argv[i][0] == '-') {
				if (strv_contains(w->options_with_value, argv[i]) && argv[i + 1])
					i++;
				continue;
			}
			if (w->assignments && strchr(argv[i], '='))
				continue;
			break;
		}
		for (uint64_t p = 0; p < w->positionals && argv[i]; p++)
			i++;
		argv += i;
	}
	return argv[0] ? argv : NULL;
}

const char *rules_shell_script(const struct rules *rules, char *const *argv)
{
	if (!argv || !argv[0] || !strv_contains(rules->shells, base_name(argv[0])))
		return NULL;
	/* -c, -lc, -ec, -xc ...: the first operand is the script. */
	bool has_c = false;
	size_t i = 1;
	for (; argv[i] && argv[i][0] == '-' && argv[i][1] != '-'; i++)
		if (strchr(argv[i] + 1, 'c'))
			has_c = true;
	return has_c && argv[i] ? argv[i] : NULL;
}

static void verdict_set(const struct rules *rules, struct rules_verdict *ret, int risk,
			const char *rule, const char *reason)
{
	ret->risk = risk;
	snprintf(ret->rule, sizeof(ret->rule), "%.63s", rule);
	snprintf(ret->reason, sizeof(ret->reason), "%.255s", reason);
	ret->level = rules->levels[risk];
}

static void classify_argv(const struct rules *rules, char *const *argv, int depth,
			  struct rules_verdict *ret);

static void classify_script(const struct rules *rules, const char *script, int depth,
			    struct rules_verdict *ret)
{
	struct shell_script s;
	int r = shell_script_parse(script, strlen(script), &s);

	verdict_set(rules, ret, 1, "shell", "an empty script");
	for (size_t i = 0; r == 0 && i < s.n_commands; i++) {
		struct rules_verdict v;
		classify_argv(rules, s.commands[i].argv, depth + 1, &v);
		if (v.risk > ret->risk)
			*ret = v;
	}
	if (r < 0 || !s.plain) {
		char why[128];
		snprintf(why, sizeof(why), "unparsed-shell: %.40s",
			 r == -E2BIG ? "too long" : r < 0 ? "out of memory" : s.unparsed);
		if (rules->unparsed_risk >= ret->risk)
			verdict_set(rules, ret, rules->unparsed_risk, why, rules->unparsed_reason);
	}
	shell_script_release(&s);
}

static void classify_argv(const struct rules *rules, char *const *argv, int depth,
			  struct rules_verdict *ret)
{
	char *const *cmd = rules_strip_wrappers(rules, argv);

	if (!cmd) /* only wrappers: `env` alone prints the environment */
		cmd = argv;
	const char *script = rules_shell_script(rules, cmd);
	if (script) {
		if (depth >= MAX_SHELL_DEPTH) {
			verdict_set(rules, ret, rules->unparsed_risk, "unparsed-shell: nested too deep",
				    rules->unparsed_reason);
			return;
		}
		classify_script(rules, script, depth, ret);
		return;
	}
	for (size_t i = 0; i < rules->n_rules; i++)
		if (rule_matches(&rules->rules[i], cmd)) {
			verdict_set(rules, ret, rules->rules[i].risk, rules->rules[i].id,
				    rules->rules[i].reason);
			return;
		}
	verdict_set(rules, ret, rules->default_risk, "default", rules->default_reason);
}

void rules_classify(const struct rules *rules, char *const *argv, struct rules_verdict *ret)
{
	if (!argv || !argv[0]) {
		verdict_set(rules, ret, rules->default_risk, "default", "an empty command");
		return;
	}
	classify_argv(rules, argv, 0, ret);
}

void rules_classify_shell(const struct rules *rules, const char *script,
			  struct rules_verdict *ret)
{
	classify_script(rules, script, 0, ret);
}

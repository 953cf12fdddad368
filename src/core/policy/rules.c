/* SPDX-License-Identifier: MIT */
#include "core/policy/rules.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/store/jsonutil.h"
#include "core/policy/rules_embed.h"
#include "core/policy/shellwords.h"

#define RULES_MAX_BYTES	  (1 << 20)
#define RULES_MAX_ARGS_RE 16
#define MAX_WRAPPER_DEPTH 8
#define MAX_SHELL_DEPTH	  4

/* What a tool's options are (docs/rules-format.md, "Options"). */
struct optspec {
	bool present;
	char **flags, **with_value, **optional_value, **deny;
	bool numeric; /* -NUM is an option (head -5, nice -10) */
	bool single_dash; /* find: every -word is one option, no clusters, no -- */
};

enum opt_kind {
	OPT_UNKNOWN,
	OPT_FLAG,
	OPT_VALUE,
	OPT_OPTIONAL,
	OPT_DENY,
};

struct operandspec {
	bool present;
	bool has_max;
	uint64_t min, max;
	regex_t re[RULES_MAX_ARGS_RE];
	size_t n_re;
};

struct rule {
	char *id, *reason;
	int risk;
	char **argv0;
	struct optspec global_options, options;
	struct operandspec operands;
	bool any_arguments;
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
	struct optspec options;
	char **describes; /* options that make it describe its operand, not run it */
	bool assignments;
	uint64_t positionals;
	int least_risk; /* 0: none */
	char *least_reason;
};

struct rules {
	char *levels[6];
	int default_risk, unparsed_risk;
	char *default_reason, *unparsed_reason;
	char **safe_environment; /* NAME, or PREFIX* */
	int environment_risk;
	char *environment_reason;
	char **shells;
	struct wrapper *wrappers;
	size_t n_wrappers;
	struct rule *rules;
	size_t n_rules;
	/* The built-in rules (rules_load_default()) are parsed on first use,
	 * by name (rules_embed.h): one state per wrapper, then per rule, 0 not
	 * parsed yet, 1 parsed, -1 failed (out of memory). NULL: all parsed
	 * at load. */
	signed char *state;
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
	char name[256];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_strv(v, name, false, ret, err);
}

static int rules_opt_bool(json_t *obj, const char *key, const char *where, bool *ret, struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[256];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_bool(v, name, ret, err);
}

static int rules_opt_u64(json_t *obj, const char *key, const char *where, uint64_t min,
			 uint64_t max, uint64_t *ret, struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[256];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	return jsonutil_get_u64(v, name, min, max, ret, err);
}

/* An option list is an array of names or, shorter to parse, one string of
 * names separated by spaces. Either way it becomes one allocation (the
 * pointers, then the names), freed with free(): thousands of small copies
 * would cost a start-up page fault each few dozen. */
static int rules_get_names(json_t *obj, const char *key, const char *where, char ***ret,
			   struct error *err)
{
	json_t *v = json_object_get(obj, key);
	char name[256];

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	size_t n = 0, bytes = 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		for (const char *p = s + strspn(s, " "); *p; p += strspn(p, " ")) {
			p += strcspn(p, " ");
			n++;
		}
		bytes = strlen(s) + 1;
	} else if (json_is_array(v)) {
		size_t i;
		json_t *item;
		json_array_foreach(v, i, item) {
			if (!json_is_string(item) || json_string_length(item) == 0 ||
			    strlen(json_string_value(item)) != json_string_length(item))
				return error_set(err, EINVAL,
						 "'%s[%zu]' must be a non-empty string", name, i);
			bytes += json_string_length(item) + 1;
			n++;
		}
	} else {
		return error_set(err, EINVAL, "'%s' must be a string or an array of strings", name);
	}
	if (n == 0)
		return error_set(err, EINVAL, "'%s' names no option", name);
	char **names = malloc((n + 1) * sizeof(char *) + bytes);
	if (!names)
		return error_set(err, ENOMEM, "out of memory");
	char *text = (char *)(names + n + 1);
	if (json_is_string(v)) {
		memcpy(text, json_string_value(v), bytes);
		size_t k = 0;
		for (char *p = text + strspn(text, " "); *p; p += strspn(p, " ")) {
			names[k++] = p;
			p += strcspn(p, " ");
			if (*p)
				*p++ = '\0';
		}
	} else {
		for (size_t k = 0; k < n; k++) {
			json_t *item = json_array_get(v, k);
			names[k] = text;
			memcpy(text, json_string_value(item), json_string_length(item) + 1);
			text += json_string_length(item) + 1;
		}
	}
	names[n] = NULL;
	*ret = names;
	return 0;
}

/* An option list entry is `-x` or `--long` (or, single_dash, `-word`). */
static int rules_check_option_names(char *const *names, const char *where, bool single_dash,
				    struct error *err)
{
	for (size_t i = 0; names && names[i]; i++) {
		const char *n = names[i];
		bool ok = n[0] == '-' && n[1] != '\0' && !strchr(n, '=');
		if (ok && !single_dash)
			ok = n[1] == '-' ? n[2] != '\0' : n[2] == '\0';
		if (!ok)
			return error_set(err, EINVAL, "'%s[%zu]' is not an option name: \"%s\"",
					 where, i, n);
	}
	return 0;
}

static int rules_parse_optspec(struct optspec *o, json_t *parent, const char *key,
			       const char *where, struct error *err)
{
	static const char *const keys[] = { "flags", "with_value", "optional_value",
					    "deny",  "numeric",	   "single_dash",
					    NULL };
	static const char *const lists[] = { "flags", "with_value", "optional_value", "deny" };
	json_t *obj = json_object_get(parent, key);
	char name[200];

	if (!obj)
		return 0;
	snprintf(name, sizeof(name), "%s.%s", where, key);
	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", name);
	int r = jsonutil_check_keys(obj, name, keys, err);
	if (r == 0)
		r = rules_opt_bool(obj, "numeric", name, &o->numeric, err);
	if (r == 0)
		r = rules_opt_bool(obj, "single_dash", name, &o->single_dash, err);
	char ***dest[] = { &o->flags, &o->with_value, &o->optional_value, &o->deny };
	for (size_t i = 0; r == 0 && i < 4; i++) {
		char list[256];
		snprintf(list, sizeof(list), "%s.%s", name, lists[i]);
		r = rules_get_names(obj, lists[i], name, dest[i], err);
		if (r == 0)
			r = rules_check_option_names(*dest[i], list, o->single_dash, err);
	}
	o->present = r == 0;
	return r;
}

static int rules_parse_operands(struct operandspec *ops, json_t *parent, const char *where,
				struct error *err)
{
	static const char *const keys[] = { "min", "max", "patterns", NULL };
	json_t *obj = json_object_get(parent, "operands");
	char name[200];

	if (!obj)
		return 0;
	snprintf(name, sizeof(name), "%s.operands", where);
	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", name);
	int r = jsonutil_check_keys(obj, name, keys, err);
	ops->has_max = json_object_get(obj, "max") != NULL;
	if (r == 0)
		r = rules_opt_u64(obj, "max", name, 0, 4096, &ops->max, err);
	if (r == 0)
		r = rules_opt_u64(obj, "min", name, 0, 4096, &ops->min, err);
	json_t *v = json_object_get(obj, "patterns");
	if (r == 0 && v) {
		cleanup_strv char **patterns = NULL;
		char list[256];
		snprintf(list, sizeof(list), "%s.patterns", name);
		r = jsonutil_get_strv(v, list, false, &patterns, err);
		size_t n = r == 0 ? strv_length(patterns) : 0;
		if (n > RULES_MAX_ARGS_RE)
			return error_set(err, E2BIG, "'%s' has more than %d patterns", list,
					 RULES_MAX_ARGS_RE);
		for (size_t i = 0; r == 0 && i < n; i++) {
			if (regcomp(&ops->re[i], patterns[i], REG_EXTENDED | REG_NOSUB) != 0)
				return error_set(err, EINVAL,
						 "'%s[%zu]' is not a valid regular expression",
						 list, i);
			ops->n_re++;
		}
	}
	ops->present = r == 0;
	return r;
}

/* rules_parse_rule(): its optional lists, flags and option specs. */
static int rules_parse_rule_lists(struct rule *rule, json_t *obj, const char *where, struct error *err)
{
	int r = rules_opt_strv(obj, "subcommands", where, &rule->subcommands, err);

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
	if (r == 0)
		r = rules_opt_bool(obj, "any_arguments", where, &rule->any_arguments, err);
	if (r == 0)
		r = rules_parse_optspec(&rule->global_options, obj, "global_options", where, err);
	if (r == 0)
		r = rules_parse_optspec(&rule->options, obj, "options", where, err);
	if (r == 0)
		r = rules_parse_operands(&rule->operands, obj, where, err);
	return r;
}

/* rules_parse_rule(): its "args", regular expressions an argument may match. */
static int rules_parse_args_re(struct rule *rule, json_t *v, const char *where, struct error *err)
{
	char name[256];

	cleanup_strv char **patterns = NULL;
	snprintf(name, sizeof(name), "%s.args", where);
	int r = jsonutil_get_strv(v, name, false, &patterns, err);
	size_t n = r == 0 ? strv_length(patterns) : 0;
	if (n > RULES_MAX_ARGS_RE)
		return error_set(err, E2BIG, "'%s' has more than %d patterns", name, RULES_MAX_ARGS_RE);
	rule->has_args_re = r == 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (regcomp(&rule->args_re[i], patterns[i], REG_EXTENDED | REG_NOSUB) != 0)
			return error_set(err, EINVAL, "'%s[%zu]' is not a valid regular expression",
					 name, i);
		rule->n_args_re++;
	}
	return r;
}

static int rules_parse_rule(struct rule *rule, json_t *obj, const char *where, struct error *err)
{
	static const char *const keys[] = { "id",
					    "argv0",
					    "subcommands",
					    "global_options_with_value",
					    "global_veto",
					    "veto",
					    "combined_short",
					    "any_arg",
					    "any_arg_prefix",
					    "allowed_args",
					    "args",
					    "max_args",
					    "risk",
					    "reason",
					    "global_options",
					    "options",
					    "operands",
					    "any_arguments",
					    NULL };
	char name[256];

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
		r = rules_parse_rule_lists(rule, obj, where, err);
	if (r == 0 && rule->global_options.present && !rule->subcommands)
		return error_set(err, EINVAL, "'%s.global_options' needs 'subcommands'", where);
	json_t *v;
	if (r == 0 && (v = json_object_get(obj, "args")))
		r = rules_parse_args_re(rule, v, where, err);
	/* Read-only is granted by what is listed, never by what is not vetoed. */
	if (r == 0 && rule->risk == 1 && !rule->options.present && !rule->allowed_args &&
	    !rule->has_args_re && !rule->any_arguments)
		return error_set(err, EINVAL,
				 "'%s' is risk 1 but lists no allowed arguments (options, allowed_args, args or any_arguments)",
				 where);
	return r;
}

static int rules_parse_wrapper(struct wrapper *w, json_t *obj, const char *where, struct error *err)
{
	static const char *const keys[] = { "argv0",	   "options", "describes", "assignments",
					    "positionals", "least",   NULL };
	char name[256];

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'%s' must be an object", where);
	int r = jsonutil_check_keys(obj, where, keys, err);
	snprintf(name, sizeof(name), "%s.argv0", where);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(obj, "argv0"), name, false, &w->argv0, err);
	if (r == 0)
		r = rules_parse_optspec(&w->options, obj, "options", where, err);
	if (r == 0)
		r = rules_opt_strv(obj, "describes", where, &w->describes, err);
	snprintf(name, sizeof(name), "%s.describes", where);
	if (r == 0)
		r = rules_check_option_names(w->describes, name, false, err);
	if (r == 0)
		r = rules_opt_bool(obj, "assignments", where, &w->assignments, err);
	if (r == 0)
		r = rules_opt_u64(obj, "positionals", where, 0, 8, &w->positionals, err);
	json_t *least = json_object_get(obj, "least");
	snprintf(name, sizeof(name), "%s.least", where);
	if (r == 0 && least)
		r = rules_parse_verdict(least, name, &w->least_risk, &w->least_reason, err);
	return r;
}

static int rules_parse_environment(struct rules *rules, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "safe", "risk", "reason", NULL };

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'environment' must be an object");
	int r = jsonutil_check_keys(obj, "environment", keys, err);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(obj, "safe"), "environment.safe", false,
				      &rules->safe_environment, err);
	if (r == 0)
		r = rules_get_risk(json_object_get(obj, "risk"), "environment.risk",
				   &rules->environment_risk, err);
	if (r == 0)
		r = jsonutil_get_string(json_object_get(obj, "reason"), "environment.reason",
					&rules->environment_reason, err);
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

/* Everything but the wrappers and the rules. */
static int rules_parse_head(struct rules *rules, json_t *root, struct error *err)
{
	static const char *const keys[] = { "schema",	      "levels",	     "default",
					    "unparsed_shell", "environment", "shells",
					    "wrappers",	      "rules",	     NULL };
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
		r = rules_parse_environment(rules, json_object_get(root, "environment"), err);
	if (r == 0)
		r = jsonutil_get_strv(json_object_get(root, "shells"), "shells", false,
				      &rules->shells, err);
	return r;
}

static int rules_parse_root(struct rules *rules, json_t *root, struct error *err)
{
	int r = rules_parse_head(rules, root, err);
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

/* The built-in rules: their head now, each wrapper and rule when a command
 * names it (rules_embedded()). A hook call classifies a command or two:
 * parsing all of rules.json cost it 9 of its 11 million instructions. */
int rules_load_default(struct rules **ret, struct error *err)
{
	cleanup_with(rules_freep) struct rules *rules = calloc(1, sizeof(*rules));
	cleanup_with(json_decrefp) json_t *head = NULL;

	if (!rules)
		return error_set(err, ENOMEM, "out of memory");
	rules->n_wrappers = policy_rules_n_wrappers;
	rules->n_rules = policy_rules_n_rules;
	rules->wrappers = calloc(rules->n_wrappers + 1, sizeof(*rules->wrappers));
	rules->rules = calloc(rules->n_rules + 1, sizeof(*rules->rules));
	rules->state = calloc(rules->n_wrappers + rules->n_rules + 1, 1);
	if (!rules->wrappers || !rules->rules || !rules->state)
		return error_set(err, ENOMEM, "out of memory");
	int r = jsonutil_parse_object(policy_rules_head_json, strlen(policy_rules_head_json), &head,
				      err);
	if (r == 0)
		r = rules_parse_head(rules, head, err);
	if (r < 0)
		return error_prefix(err, "built-in rules");
	*ret = TAKE_PTR(rules);
	return 0;
}

/* Built-in wrapper (wrapper) or rule i, parsed on first use; false when it
 * cannot be (out of memory), and the caller fails closed. */
static bool rules_embedded(const struct rules *rules, bool wrapper, size_t i, struct error *err)
{
	signed char *state = &rules->state[wrapper ? i : rules->n_wrappers + i];
	const char *text = wrapper ? policy_rules_wrappers[i] : policy_rules_rules[i];
	cleanup_with(json_decrefp) json_t *obj = NULL;
	char where[64];

	if (*state < 0)
		error_set(err, ENOMEM, "%s[%zu] could not be parsed",
			  wrapper ? "wrappers" : "rules", i);
	if (*state)
		return *state > 0;
	snprintf(where, sizeof(where), "%s[%zu]", wrapper ? "wrappers" : "rules", i);
	int r = jsonutil_parse_object(text, strlen(text), &obj, err);
	if (r == 0)
		r = wrapper ? rules_parse_wrapper(&rules->wrappers[i], obj, where, err)
			    : rules_parse_rule(&rules->rules[i], obj, where, err);
	*state = r == 0 ? 1 : -1;
	return r == 0;
}

static int rules_embed_compare(const void *key, const void *entry)
{
	return strcmp(key, ((const struct rules_embed_name *)entry)->name);
}

/* The built-in wrappers (wrappers) or rules whose argv0 lists name, in
 * document order, ended by RULES_EMBED_END. */
static const unsigned short *rules_embed_list(const char *name, bool wrappers)
{
	static const unsigned short none[] = { RULES_EMBED_END };
	const struct rules_embed_name *e = bsearch(name, policy_rules_names, policy_rules_n_names,
						   sizeof(*policy_rules_names), rules_embed_compare);

	return !e ? none : wrappers ? e->wrappers : e->rules;
}

int rules_parse_all(const struct rules *rules, struct error *err)
{
	for (size_t i = 0; rules->state && i < rules->n_wrappers + rules->n_rules; i++) {
		bool wrapper = i < rules->n_wrappers;
		if (!rules_embedded(rules, wrapper, wrapper ? i : i - rules->n_wrappers, err))
			return error_prefix(err, "built-in rules");
	}
	return 0;
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

static void optspec_release(struct optspec *o)
{
	free(o->flags); /* one allocation each: rules_get_names() */
	free(o->with_value);
	free(o->optional_value);
	free(o->deny);
}

void rules_free(struct rules *rules)
{
	if (!rules)
		return;
	for (int i = 0; i < 6; i++)
		free(rules->levels[i]);
	free(rules->default_reason);
	free(rules->unparsed_reason);
	strv_free(rules->safe_environment);
	free(rules->environment_reason);
	strv_free(rules->shells);
	for (size_t i = 0; i < rules->n_wrappers; i++) {
		strv_free(rules->wrappers[i].argv0);
		optspec_release(&rules->wrappers[i].options);
		strv_free(rules->wrappers[i].describes);
		free(rules->wrappers[i].least_reason);
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
		optspec_release(&rule->global_options);
		optspec_release(&rule->options);
		for (size_t j = 0; j < rule->operands.n_re; j++)
			regfree(&rule->operands.re[j]);
	}
	free(rules->rules);
	free(rules->state);
	free(rules);
}

/* ---- reading options -------------------------------------------------- */

/* A vetoed `--long` also matches its GNU abbreviations: `--outp` is `--output`
 * to getopt_long when no other option starts so; when another does, the tool
 * refuses the word, so a veto costs nothing. */
static bool option_matches(const char *arg, const char *option)
{
	size_t n = strlen(option);

	if (option[0] == '-' && option[1] == '-' && arg[0] == '-' && arg[1] == '-') {
		size_t len = strcspn(arg, "=");
		return len > 2 && len <= n && strncmp(arg, option, len) == 0;
	}
	if (strncmp(arg, option, n) != 0)
		return false;
	if (arg[n] == '\0')
		return true;
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

/* The kind of the option called name[0..len) by o. A `--long` name that is
 * no option exactly is resolved as getopt_long does, as the unambiguous
 * prefix of one; a prefix of several is read only when they are all of one
 * allowed kind (aliases such as --color/--colour), else it is unknown. */
static enum opt_kind optspec_lookup(const struct optspec *o, const char *name, size_t len)
{
	char *const *lists[] = { o->flags, o->with_value, o->optional_value, o->deny };
	static const enum opt_kind kinds[] = { OPT_FLAG, OPT_VALUE, OPT_OPTIONAL, OPT_DENY };
	bool prefix = !o->single_dash && len > 2 && name[0] == '-' && name[1] == '-';
	enum opt_kind found = OPT_UNKNOWN;
	size_t n_found = 0;

	for (size_t l = 0; l < 4; l++)
		for (size_t i = 0; lists[l] && lists[l][i]; i++) {
			const char *entry = lists[l][i];
			if (strncmp(entry, name, len) != 0)
				continue;
			if (entry[len] == '\0')
				return kinds[l];
			if (!prefix || entry[1] != '-')
				continue;
			if (n_found > 0 && found != kinds[l])
				found = OPT_DENY;
			else
				found = kinds[l];
			n_found++;
		}
	return found;
}

static bool rules_all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* The operand at position n (0-based) fits ops. */
static bool operand_fits(const struct operandspec *ops, size_t n, const char *word)
{
	if (!ops || !ops->present)
		return true;
	if (ops->has_max && n >= ops->max)
		return false;
	if (ops->n_re == 0)
		return true;
	const regex_t *re = &ops->re[n < ops->n_re ? n : ops->n_re - 1];
	return regexec(re, word, 0, NULL, 0) == 0;
}

/* Reads argv[start..] as the options and operands o and ops describe.
 * Options may follow operands (GNU permutation) unless stop_at_operand,
 * when the first operand or `--` ends them and *ret_stop is its index
 * (past the `--`). Returns false at the first word that is not allowed: a
 * denied or unknown option, an option without its value, an ambiguous
 * abbreviation, or an operand ops refuses. */
static bool optspec_scan(const struct optspec *o, const struct operandspec *ops, char *const *argv,
			 size_t start, bool stop_at_operand, size_t *ret_stop)
{
	bool options_ended = false;
	size_t n_operands = 0;
	size_t i = start;

	for (; argv[i]; i++) {
		const char *w = argv[i];
		if (!options_ended && w[0] == '-' && w[1] != '\0') {
			if (strcmp(w, "--") == 0 && !o->single_dash) {
				options_ended = true;
				if (stop_at_operand) {
					i++;
					break;
				}
				continue;
			}
			if (o->numeric && rules_all_digits(w + 1))
				continue;
			if (o->single_dash || w[1] == '-') {
				size_t len = o->single_dash ? strlen(w) : strcspn(w, "=");
				bool attached = w[len] == '=';
				switch (optspec_lookup(o, w, len)) {
				case OPT_FLAG:
					if (attached)
						return false;
					continue;
				case OPT_VALUE:
					if (!attached && !argv[++i])
						return false;
					continue;
				case OPT_OPTIONAL:
					continue;
				case OPT_DENY:
				case OPT_UNKNOWN:
					return false;
				}
			}
			/* A cluster of short options: -abc, -kVALUE, -k VALUE. */
			for (size_t j = 1; w[j]; j++) {
				char name[3] = { '-', w[j], '\0' };
				enum opt_kind kind = optspec_lookup(o, name, 2);
				if (kind == OPT_FLAG)
					continue;
				if (kind == OPT_OPTIONAL)
					break;
				if (kind != OPT_VALUE)
					return false;
				if (w[j + 1] == '\0' && !argv[++i])
					return false;
				break;
			}
			continue;
		}
		if (stop_at_operand)
			break;
		if (!operand_fits(ops, n_operands++, w))
			return false;
	}
	if (ops && ops->present && n_operands < ops->min)
		return false;
	if (ret_stop)
		*ret_stop = i;
	return true;
}

/* ---- matching ---------------------------------------------------------- */

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
		if (rule->global_options.present) {
			if (!optspec_scan(&rule->global_options, NULL, argv, 1, true, &i))
				return false;
		} else {
			for (; i < argc && argv[i][0] == '-'; i++) {
				if (any_option_matches(argv[i], rule->global_veto, false))
					return false;
				if (strv_contains(rule->global_options_with_value, argv[i]))
					i++;
			}
		}
		if (i >= argc || !strv_contains(rule->subcommands, argv[i]))
			return false;
		first = i + 1;
	}
	if (rule->any_arg) {
		bool found = false;
		for (size_t i = 1; i < argc && !found; i++)
			found = rule->any_arg_prefix
					? any_option_matches(argv[i], rule->any_arg, false)
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
	if (rule->options.present &&
	    !optspec_scan(&rule->options, &rule->operands, argv, first, false, NULL))
		return false;
	if (rule->has_args_re) {
		if (argc - 1 > rule->n_args_re)
			return false;
		for (size_t i = 1; i < argc; i++)
			if (regexec(&rule->args_re[i - 1], argv[i], 0, NULL, 0) != 0)
				return false;
	}
	return true;
}

static void verdict_set(const struct rules *rules, struct rules_verdict *ret, int risk,
			const char *rule, const char *reason)
{
	ret->risk = risk;
	snprintf(ret->rule, sizeof(ret->rule), "%.63s", rule);
	snprintf(ret->reason, sizeof(ret->reason), "%.255s", reason);
	ret->level = rules->levels[risk];
}

/* Raises ret to risk when that is higher (the first reason of a level stays). */
static void verdict_raise(const struct rules *rules, struct rules_verdict *ret, int risk,
			  const char *rule, const char *reason)
{
	if (risk > ret->risk)
		verdict_set(rules, ret, risk, rule, reason);
}

/* What a wrapper brings names the verdict when it is as risky as the command. */
static void verdict_merge_bump(struct rules_verdict *ret, const struct rules_verdict *bump)
{
	if (bump->risk >= ret->risk)
		*ret = *bump;
}

/* NAME=VALUE with NAME on the safe list (an entry ending in `*` is a prefix). */
static bool rules_safe_assignment(const struct rules *rules, const char *word)
{
	size_t len = strcspn(word, "=");

	for (size_t i = 0; rules->safe_environment[i]; i++) {
		const char *safe = rules->safe_environment[i];
		size_t n = strlen(safe);
		if (n > 0 && safe[n - 1] == '*' ? len >= n - 1 && strncmp(word, safe, n - 1) == 0
						: len == n && strncmp(word, safe, n) == 0)
			return true;
	}
	return false;
}

static void rules_check_assignment(const struct rules *rules, const char *word,
				   struct rules_verdict *bump)
{
	if (rules_safe_assignment(rules, word))
		return;
	size_t len = strcspn(word, "=");
	char rule[64];
	snprintf(rule, sizeof(rule), "environment: %.*s", (int)(len > 40 ? 40 : len), word);
	verdict_raise(rules, bump, rules->environment_risk, rule, rules->environment_reason);
}

/* The first wrapper argv0 names, or NULL; *ret_failed when the built-in
 * ones for its name could not be parsed. */
static const struct wrapper *rules_find_wrapper(const struct rules *rules, const char *argv0,
						bool *ret_failed)
{
	*ret_failed = false;
	if (rules->state) {
		for (const unsigned short *k = rules_embed_list(base_name(argv0), true);
		     *k != RULES_EMBED_END; k++) {
			struct error ignored;
			if (!rules_embedded(rules, true, *k, &ignored)) {
				*ret_failed = true;
				return NULL;
			}
			return &rules->wrappers[*k];
		}
		return NULL;
	}
	for (size_t i = 0; i < rules->n_wrappers; i++)
		if (strv_contains(rules->wrappers[i].argv0, base_name(argv0)))
			return &rules->wrappers[i];
	return NULL;
}

/* Whether a rule with these subcommands may match argv: rule_matches()
 * takes one of argv's words for the subcommand, and refuses it unless it is
 * one of them. */
static bool rules_embed_may_match(const char *const *subcommands, char *const *argv)
{
	for (size_t i = 1; subcommands && argv[i]; i++)
		for (size_t k = 0; subcommands[k]; k++)
			if (strcmp(argv[i], subcommands[k]) == 0)
				return true;
	return !subcommands;
}

/* The first rule argv matches, or NULL; *ret_failed when the built-in ones
 * for its name could not be parsed. */
static const struct rule *rules_find_rule(const struct rules *rules, char *const *argv, bool *ret_failed)
{
	*ret_failed = false;
	if (rules->state) {
		for (const unsigned short *k = rules_embed_list(base_name(argv[0]), false);
		     *k != RULES_EMBED_END; k++) {
			struct error ignored;
			if (!rules_embed_may_match(policy_rules_subcommands[*k], argv))
				continue; /* not parsed: it would not match */
			if (!rules_embedded(rules, false, *k, &ignored)) {
				*ret_failed = true;
				return NULL;
			}
			if (rule_matches(&rules->rules[*k], argv))
				return &rules->rules[*k];
		}
		return NULL;
	}
	for (size_t i = 0; i < rules->n_rules; i++)
		if (rule_matches(&rules->rules[i], argv))
			return &rules->rules[i];
	return NULL;
}

#define RULES_UNAVAILABLE_REASON "airlock could not load its rules for this command (out of memory)"

static bool wrapper_describes(const struct wrapper *w, char *const *argv, size_t stop)
{
	for (size_t i = 1; i < stop && w->describes; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == '-')
			continue;
		for (size_t j = 0; w->describes[j]; j++)
			if (strchr(a + 1, w->describes[j][1]))
				return true;
	}
	return false;
}

/* Removes the leading wrappers, each read with its own options. *bump gets
 * what the wrappers themselves bring: an environment assignment off the safe
 * list, an option airlock does not read (then the wrapper is where the
 * command starts), a wrapper's least risk. Returns NULL when only wrappers
 * remain. */
static char *const *rules_unwrap(const struct rules *rules, char *const *argv,
				 struct rules_verdict *bump)
{
	*bump = (struct rules_verdict){ .risk = 0 }; /* below every level: nothing brought */
	for (int depth = 0; depth < MAX_WRAPPER_DEPTH && argv[0]; depth++) {
		bool failed;
		const struct wrapper *w = rules_find_wrapper(rules, argv[0], &failed);
		if (failed)
			verdict_raise(rules, bump, 5, "rules-unavailable", RULES_UNAVAILABLE_REASON);
		if (!w)
			return argv;
		size_t i = 1;
		static const struct optspec none = { .present = true };
		bool ok = optspec_scan(w->options.present ? &w->options : &none, NULL, argv, 1,
				       true, &i);
		if (ok && wrapper_describes(w, argv, i))
			return argv; /* `command -v rm` runs nothing: the rules judge it */
		if (!ok) {
			char rule[64];
			snprintf(rule, sizeof(rule), "wrapper-option: %.40s", base_name(argv[0]));
			verdict_raise(rules, bump, rules->default_risk, rule,
				      "the wrapper has an option airlock does not read, so what it runs is unknown");
			return argv;
		}
		for (; w->assignments && argv[i] && strchr(argv[i], '='); i++)
			rules_check_assignment(rules, argv[i], bump);
		for (uint64_t p = 0; p < w->positionals && argv[i]; p++)
			i++;
		if (w->least_risk) {
			char rule[64];
			snprintf(rule, sizeof(rule), "wrapper: %.40s", base_name(argv[0]));
			verdict_raise(rules, bump, w->least_risk, rule, w->least_reason);
		}
		argv += i;
	}
	return argv[0] ? argv : NULL;
}

char *const *rules_strip_wrappers(const struct rules *rules, char *const *argv)
{
	struct rules_verdict bump;
	char *const *cmd = rules_unwrap(rules, argv, &bump);

	/* A wrapper that is more than read-only is itself the command. */
	return bump.risk > 1 ? argv : cmd;
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

static void classify_argv(const struct rules *rules, char *const *argv, int depth,
			  struct rules_verdict *ret, const char **ret_name);

/* A command's name in a reason: its basename, at most 32 bytes, printable
 * ASCII only (anything else is '?'), so a reason is text a terminal shows as
 * is and JSON holds as valid UTF-8. */
static void rules_name(const char *argv0, char *buf, size_t size)
{
	const char *name = base_name(argv0);
	size_t n = 0;

	for (; name[n] && n < 32 && n + 1 < size; n++)
		buf[n] = name[n] > 0x20 && name[n] < 0x7f ? name[n] : '?';
	buf[n] = '\0';
}

/* Drops a trailing UTF-8 sequence that snprintf cut short. */
static void rules_trim_utf8(char *buf)
{
	size_t n = strlen(buf);

	for (int i = 0; i < 4 && n > 0 && !utf8_is_valid(buf, n); i++)
		buf[--n] = '\0';
}

/* Sets ret's reason, cut to its size at a whole UTF-8 sequence. */
_printf_(2, 3) static void verdict_reason(struct rules_verdict *ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
	va_end(ap);
	rules_trim_utf8(ret->reason);
}

/* Appends ", NAME" (the first without the comma) while it fits with room
 * for ", ..."; past that, ", ..." once. Returns false once full. */
static bool rules_list_append(char *buf, size_t size, const char *name, bool *first)
{
	size_t len = strlen(buf), need = strlen(name) + (*first ? 0 : 2);

	if (len + need + sizeof(", ...") > size) {
		if (!strstr(buf, ", ...") && len + sizeof(", ...") <= size)
			strcat(buf, ", ...");
		return false;
	}
	snprintf(buf + len, size - len, "%s%s", *first ? "" : ", ", name);
	*first = false;
	return true;
}

/* The verdict of a script is its worst command's, and its reason names the
 * commands that decided it (a reviewer reads it, a permit records it):
 * - no command: "an empty script" (rule shell);
 * - one command: its own rule, the reason "NAME: REASON";
 * - several, all at level 1: each decided, "every command is risk 1
 *   (LEVEL): a, b" (rule shell);
 * - several, the worst above 1: the first command at that level sets it,
 *   "NAME: REASON", and " (also: b, c)" names the others at that level;
 * - a construct not modelled at or above that level names the construct
 *   (rule "unparsed-shell: ..."). */
static void classify_script(const struct rules *rules, const char *script, int depth,
			    struct rules_verdict *ret)
{
	struct shell_script s;
	int r = shell_script_parse(script, strlen(script), &s);
	size_t n = r == 0 ? MIN(s.n_commands, (size_t)SHELL_MAX_COMMANDS) : 0, decided = 0;
	struct {
		int risk;
		char name[40];
	} each[SHELL_MAX_COMMANDS];

	verdict_set(rules, ret, 1, "shell", "an empty script");
	for (size_t i = 0; i < n; i++) {
		struct rules_verdict v;
		const char *argv0;
		classify_argv(rules, s.commands[i].argv, depth + 1, &v, &argv0);
		for (size_t j = 0; s.commands[i].assignments && s.commands[i].assignments[j]; j++)
			rules_check_assignment(rules, s.commands[i].assignments[j], &v);
		each[i].risk = v.risk;
		rules_name(argv0, each[i].name, sizeof(each[i].name));
		if (i == 0 || v.risk > ret->risk) {
			*ret = v;
			verdict_reason(ret, "%s: %s", each[i].name, v.reason);
			decided = i;
		}
	}
	bool first = true;
	if (n > 1 && ret->risk == 1) {
		verdict_set(rules, ret, 1, "shell", "");
		verdict_reason(ret, "every command is risk 1 (%s): ", rules->levels[1]);
		for (size_t i = 0; i < n; i++)
			if (!rules_list_append(ret->reason, sizeof(ret->reason), each[i].name, &first))
				break;
	} else if (n > 1) {
		char also[sizeof(ret->reason)] = "";
		size_t room = sizeof(ret->reason) - strlen(ret->reason) - strlen(" (also: )");
		for (size_t i = decided + 1; i < n && room > 8; i++)
			if (each[i].risk == ret->risk &&
			    !rules_list_append(also, room, each[i].name, &first))
				break;
		if (also[0]) { /* fits: room kept for it above */
			strcat(ret->reason, " (also: ");
			strcat(ret->reason, also);
			strcat(ret->reason, ")");
		}
	}
	if (r < 0 || !s.plain) {
		char why[128];
		snprintf(why, sizeof(why), "unparsed-shell: %.40s",
			 r == -E2BIG ? "too long"
			 : r < 0     ? "out of memory"
				     : s.unparsed);
		if (rules->unparsed_risk >= ret->risk)
			verdict_set(rules, ret, rules->unparsed_risk, why, rules->unparsed_reason);
	}
	shell_script_release(&s);
}

/* *ret_name: the word that names the command judged, past its wrappers. */
static void classify_argv(const struct rules *rules, char *const *argv, int depth,
			  struct rules_verdict *ret, const char **ret_name)
{
	struct rules_verdict bump;
	char *const *cmd = rules_unwrap(rules, argv, &bump);

	if (!cmd) /* only wrappers: `env` alone prints the environment */
		cmd = argv;
	*ret_name = cmd[0];
	const char *script = rules_shell_script(rules, cmd);
	if (script) {
		if (depth >= MAX_SHELL_DEPTH)
			verdict_set(rules, ret, rules->unparsed_risk,
				    "unparsed-shell: nested too deep", rules->unparsed_reason);
		else
			classify_script(rules, script, depth, ret);
		verdict_merge_bump(ret, &bump);
		return;
	}
	bool failed;
	const struct rule *rule = rules_find_rule(rules, cmd, &failed);
	if (failed)
		verdict_set(rules, ret, 5, "rules-unavailable", RULES_UNAVAILABLE_REASON);
	else if (rule)
		verdict_set(rules, ret, rule->risk, rule->id, rule->reason);
	else
		verdict_set(rules, ret, rules->default_risk, "default", rules->default_reason);
	verdict_merge_bump(ret, &bump);
}

void rules_classify(const struct rules *rules, char *const *argv, struct rules_verdict *ret)
{
	if (!argv || !argv[0]) {
		verdict_set(rules, ret, rules->default_risk, "default", "an empty command");
		return;
	}
	const char *name;
	classify_argv(rules, argv, 0, ret, &name);
}

void rules_classify_shell(const struct rules *rules, const char *script, struct rules_verdict *ret)
{
	classify_script(rules, script, 0, ret);
}

/* SPDX-License-Identifier: MIT */
#include "core/policy/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/policy/netallow.h"
#include "core/policy/policy_embed.h"
#include "core/store/jsonutil.h"

#define POLICY_SCHEMA	 "airlock.policy/1"
#define POLICY_MAX_BYTES (1024 * 1024)
#define HOUR_MS		 (3600ULL * 1000)


void policy_free(struct policy *policy)
{
	if (!policy)
		return;
	free(policy->origin);
	strv_free(policy->deny_argv0);
	strv_free(policy->env_allow);
	strv_free(policy->secret_patterns);
	strv_free(policy->env_set);
	strv_free(policy->hide);
	strv_free(policy->home_allow);
	strv_free(policy->read_only);
	strv_free(policy->writable);
	strv_free(policy->net_allow);
	strv_free(policy->net_deny);
	strv_free(policy->gate_trivial);
	free(policy);
}

/* Each section is an optional object with known keys; a missing key keeps
 * the built-in value, so a policy file may state only what it changes. */
static int policy_parse_timeout(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "default_ms", "max_ms", "kill_after_ms", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "timeout", keys, err);

	if (r == 0 && (v = json_object_get(obj, "default_ms")))
		r = jsonutil_get_u64(v, "timeout.default_ms", 1, 24 * HOUR_MS,
				     &p->default_timeout_ms, err);
	if (r == 0 && (v = json_object_get(obj, "max_ms")))
		r = jsonutil_get_u64(v, "timeout.max_ms", 1, 24 * HOUR_MS, &p->max_timeout_ms, err);
	if (r == 0 && (v = json_object_get(obj, "kill_after_ms")))
		r = jsonutil_get_u64(v, "timeout.kill_after_ms", 0, HOUR_MS, &p->kill_after_ms, err);
	if (r == 0 && p->default_timeout_ms > p->max_timeout_ms)
		r = error_set(err, EINVAL, "'timeout.default_ms' exceeds 'timeout.max_ms'");
	return r;
}


static int policy_parse_env_set(struct policy *p, json_t *obj, struct error *err)
{
	const char *name;
	json_t *value;

	if (!json_is_object(obj))
		return error_set(err, EINVAL, "'env.set' must be an object of strings");
	strv_free(p->env_set);
	p->env_set = NULL;
	json_object_foreach(obj, name, value) {
		if (!env_name_is_valid(name))
			return error_set(err, EINVAL, "'env.set' has an invalid name '%s'", name);
		if (!json_is_string(value))
			return error_set(err, EINVAL, "'env.set.%s' must be a string", name);
		char *entry = NULL;
		if (asprintf(&entry, "%s=%s", name, json_string_value(value)) < 0 ||
		    strv_consume(&p->env_set, entry) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int policy_replace_strv(char ***slot, json_t *v, const char *name, struct error *err)
{
	char **strv;
	int r = jsonutil_get_strv(v, name, false, &strv, err);

	if (r < 0)
		return r;
	strv_free(*slot);
	*slot = strv;
	return 0;
}

static int policy_parse_env(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "allow", "secret_patterns", "set", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "env", keys, err);

	if (r == 0 && (v = json_object_get(obj, "allow")))
		r = policy_replace_strv(&p->env_allow, v, "env.allow", err);
	for (size_t i = 0; r == 0 && p->env_allow && p->env_allow[i]; i++)
		if (!env_name_is_valid(p->env_allow[i]))
			r = error_set(err, EINVAL, "'env.allow' has an invalid name '%s'",
				      p->env_allow[i]);
	if (r == 0 && (v = json_object_get(obj, "secret_patterns")))
		r = policy_replace_strv(&p->secret_patterns, v, "env.secret_patterns", err);
	if (r == 0 && (v = json_object_get(obj, "set")))
		r = policy_parse_env_set(p, v, err);
	return r;
}

static int policy_parse_output(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "keep_bytes", "spill_max_bytes", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "output", keys, err);

	if (r == 0 && (v = json_object_get(obj, "keep_bytes")))
		r = jsonutil_get_u64(v, "output.keep_bytes", 0, 64 << 20, &p->keep_bytes, err);
	if (r == 0 && (v = json_object_get(obj, "spill_max_bytes")))
		r = jsonutil_get_u64(v, "output.spill_max_bytes", 0, 1ULL << 40,
				     &p->spill_max_bytes, err);
	return r;
}

static int policy_parse_limits(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "max_argv_bytes",  "core_bytes", "open_files",
					    "file_size_bytes", "processes",  "memory_bytes",
					    "cpu_seconds",     NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "limits", keys, err);

	if (r == 0 && (v = json_object_get(obj, "max_argv_bytes")))
		r = jsonutil_get_u64(v, "limits.max_argv_bytes", 1, 2 << 20, &p->max_argv_bytes, err);
	if (r == 0 && (v = json_object_get(obj, "core_bytes")))
		r = jsonutil_get_u64(v, "limits.core_bytes", 0, INT64_MAX, &p->core_bytes, err);
	if (r == 0 && (v = json_object_get(obj, "open_files")))
		r = jsonutil_get_u64(v, "limits.open_files", 16, 1 << 20, &p->open_files, err);
	if (r == 0 && (v = json_object_get(obj, "file_size_bytes")))
		r = jsonutil_get_u64(v, "limits.file_size_bytes", 1, INT64_MAX, &p->file_size_bytes,
				     err);
	if (r == 0 && (v = json_object_get(obj, "processes")))
		r = jsonutil_get_u64(v, "limits.processes", 8, 1 << 22, &p->processes, err);
	if (r == 0 && (v = json_object_get(obj, "memory_bytes")))
		r = jsonutil_get_u64(v, "limits.memory_bytes", 16 << 20, INT64_MAX,
				     &p->memory_bytes, err);
	if (r == 0 && (v = json_object_get(obj, "cpu_seconds")))
		r = jsonutil_get_u64(v, "limits.cpu_seconds", 1, 7 * 24 * 3600, &p->cpu_seconds, err);
	return r;
}

static int policy_check_paths(char **paths, const char *name, bool allow_relative, struct error *err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		const char *path = paths[i];
		bool ok = path[0] == '/' || strncmp(path, "~/", 2) == 0 ||
			  (allow_relative && strncmp(path, "..", 2) != 0 && !strstr(path, "/../"));
		if (!ok)
			return error_set(err, EINVAL, "'%s[%zu]' must be absolute%s, not '%.200s'",
					 name, i,
					 allow_relative ? ", ~/..., or inside the workspace"
							: " or ~/...",
					 path);
	}
	return 0;
}

/* *ret is whether v is the string `second` (else it must be `first`). */
static int policy_get_either(json_t *v, const char *key, const char *first, const char *second,
			     bool *ret, struct error *err)
{
	const char *s = json_string_value(v);

	if (!s || (strcmp(s, first) != 0 && strcmp(s, second) != 0))
		return error_set(err, EINVAL, "'%s' must be \"%s\" or \"%s\"", key, first, second);
	*ret = strcmp(s, second) == 0;
	return 0;
}

/* One list of sandbox.net's object (v NULL: the key is absent, the list
 * empty): each pattern parsed and kept in its canonical spelling, so that
 * widening compares patterns, not spellings. */
static int policy_parse_net_list(char ***slot, json_t *v, const char *name, struct error *err)
{
	cleanup_strv char **strv = NULL;
	int r = v ? jsonutil_get_strv(v, name, false, &strv, err) : 0;

	if (r < 0)
		return r;
	if (strv_length(strv) > NETALLOW_MAX_PATTERNS)
		return error_set(err, E2BIG, "'%s' lists %zu patterns; at most %d", name,
				 strv_length(strv), NETALLOW_MAX_PATTERNS);
	for (size_t i = 0; strv && strv[i]; i++) {
		struct netallow_pattern pat;
		char canon[NETALLOW_PATTERN_MAX + 1];
		r = netallow_pattern_parse(strv[i], &pat, err);
		if (r < 0)
			return error_prefix(err, "'%s[%zu]'", name, i);
		if (netallow_pattern_format(&pat, canon, sizeof(canon)) < 0)
			return error_set(err, EINVAL, "'%s[%zu]' is too long", name, i);
		char *copy = strdup(canon);
		if (!copy)
			return error_set(err, ENOMEM, "out of memory");
		free(strv[i]);
		strv[i] = copy;
	}
	strv_free(*slot);
	*slot = TAKE_PTR(strv);
	if (!*slot && !(*slot = calloc(1, sizeof(char *))))
		return error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* sandbox.net: "loopback", "host", or {"allow": [...], "deny": [...]}. */
static int policy_parse_net(struct policy *p, json_t *v, struct error *err)
{
	static const char *const keys[] = { "allow", "deny", NULL };
	int r;

	if (!json_is_object(v)) {
		r = policy_get_either(v, "sandbox.net", "loopback", "host", &p->share_net, err);
		if (r < 0)
			return error_set(err, EINVAL,
					 "'sandbox.net' must be \"loopback\", \"host\" or an object {\"allow\": [...], \"deny\": [...]}");
		p->net_allowlist = false;
		strv_free(p->net_allow);
		strv_free(p->net_deny);
		p->net_allow = p->net_deny = NULL;
		return 0;
	}
	r = jsonutil_check_keys(v, "sandbox.net", keys, err);
	p->share_net = false;
	p->net_allowlist = true;
	if (r == 0)
		r = policy_parse_net_list(&p->net_allow, json_object_get(v, "allow"),
					  "sandbox.net.allow", err);
	if (r == 0)
		r = policy_parse_net_list(&p->net_deny, json_object_get(v, "deny"),
					  "sandbox.net.deny", err);
	return r;
}

static int policy_parse_sandbox(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "profile",	  "hide",      "home",
					    "home_allow", "read_only", "tmp_bytes",
					    "net",	  "writable",  NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "sandbox", keys, err);

	bool none = false;
	if (r == 0 && (v = json_object_get(obj, "profile")) &&
	    (r = policy_get_either(v, "sandbox.profile", "default", "none", &none, err)) == 0)
		p->sandbox_enabled = !none;
	if (r == 0 && (v = json_object_get(obj, "hide")))
		r = policy_replace_strv(&p->hide, v, "sandbox.hide", err);
	if (r == 0)
		r = policy_check_paths(p->hide, "sandbox.hide", false, err);
	if (r == 0 && (v = json_object_get(obj, "home")))
		r = policy_get_either(v, "sandbox.home", "visible", "hidden", &p->home_hidden, err);
	if (r == 0 && (v = json_object_get(obj, "home_allow")))
		r = policy_replace_strv(&p->home_allow, v, "sandbox.home_allow", err);
	if (r == 0)
		r = policy_check_paths(p->home_allow, "sandbox.home_allow", false, err);
	if (r == 0 && (v = json_object_get(obj, "read_only")))
		r = policy_replace_strv(&p->read_only, v, "sandbox.read_only", err);
	if (r == 0)
		r = policy_check_paths(p->read_only, "sandbox.read_only", true, err);
	if (r == 0 && (v = json_object_get(obj, "tmp_bytes")))
		r = jsonutil_get_u64(v, "sandbox.tmp_bytes", 1 << 20, 1ULL << 40, &p->tmp_bytes, err);
	if (r == 0 && (v = json_object_get(obj, "net")))
		r = policy_parse_net(p, v, err);
	if (r == 0 && (v = json_object_get(obj, "writable")))
		r = policy_replace_strv(&p->writable, v, "sandbox.writable", err);
	if (r == 0)
		r = policy_check_paths(p->writable, "sandbox.writable", false, err);
	if (r == 0 && strv_length(p->writable) > POLICY_MAX_WRITABLE)
		r = error_set(err, E2BIG, "'sandbox.writable' lists %zu paths; at most %d",
			      strv_length(p->writable), POLICY_MAX_WRITABLE);
	return r;
}

static int policy_parse_receipts(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "fsync", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "receipts", keys, err);

	if (r == 0 && (v = json_object_get(obj, "fsync")))
		r = jsonutil_get_bool(v, "receipts.fsync", &p->fsync_receipts, err);
	return r;
}

static int policy_parse_gate(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "trivial", "cancelled_opens_failure", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "gate", keys, err);

	if (r == 0 && (v = json_object_get(obj, "trivial")))
		r = policy_replace_strv(&p->gate_trivial, v, "gate.trivial", err);
	if (r == 0 && (v = json_object_get(obj, "cancelled_opens_failure")))
		r = jsonutil_get_bool(v, "gate.cancelled_opens_failure",
				      &p->gate_cancelled_opens_failure, err);
	return r;
}

static int policy_parse_hooks(struct policy *p, json_t *obj, struct error *err)
{
	static const char *const keys[] = { "unknown_opens_failure", NULL };
	json_t *v;
	int r = jsonutil_check_keys(obj, "hooks", keys, err);

	if (r == 0 && (v = json_object_get(obj, "unknown_opens_failure")))
		r = jsonutil_get_bool(v, "hooks.unknown_opens_failure",
				      &p->hooks_unknown_opens_failure, err);
	return r;
}

typedef int policy_section_fn(struct policy *p, json_t *obj, struct error *err);

static int policy_parse_root(struct policy *p, json_t *root, struct error *err)
{
	static const char *const keys[] = { "schema", "deny_argv0", "timeout",	"env",
					    "output", "limits",	    "receipts", "sandbox",
					    "gate",   "hooks",	    NULL };
	static const struct {
		const char *name;
		policy_section_fn *parse;
	} sections[] = {
		{ "timeout", policy_parse_timeout },   { "env", policy_parse_env },
		{ "output", policy_parse_output },     { "limits", policy_parse_limits },
		{ "receipts", policy_parse_receipts }, { "sandbox", policy_parse_sandbox },
		{ "gate", policy_parse_gate },	       { "hooks", policy_parse_hooks },
	};
	int r = jsonutil_check_keys(root, "", keys, err);
	if (r < 0)
		return r;

	json_t *schema = json_object_get(root, "schema");
	if (!json_is_string(schema) || strcmp(json_string_value(schema), POLICY_SCHEMA) != 0)
		return error_set(err, EINVAL, "'schema' must be \"%s\"", POLICY_SCHEMA);

	json_t *v = json_object_get(root, "deny_argv0");
	if (v && (r = policy_replace_strv(&p->deny_argv0, v, "deny_argv0", err)) < 0)
		return r;

	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		v = json_object_get(root, sections[i].name);
		if (!v)
			continue;
		if (!json_is_object(v))
			return error_set(err, EINVAL, "'%s' must be an object", sections[i].name);
		r = sections[i].parse(p, v, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int policy_overlay(struct policy *p, const char *text, size_t n, struct error *err)
{
	cleanup_with(json_decrefp) json_t *root = NULL;
	int r = jsonutil_parse_object(text, n, &root, err);

	if (r == 0)
		r = policy_parse_root(p, root, err);
	return r;
}

/* The built-in policy as struct policy values (scripts/embed-policy.py):
 * its numbers and switches copied, each list copied out of the
 * read-only table, so the result is freed and overlaid like a parsed one. */
static int policy_copy_default(struct policy *p)
{
	*p = policy_default_scalars;
	for (const struct policy_embed_list *l = policy_default_lists; l->strings; l++) {
		char ***slot = (char ***)(void *)((char *)p + l->offset);
		size_t n = 0;
		while (l->strings[n])
			n++;
		char **strv = calloc(n + 1, sizeof(char *));
		if (!strv)
			return -ENOMEM;
		*slot = strv;
		for (size_t i = 0; i < n; i++)
			if (!(strv[i] = strdup(l->strings[i])))
				return -ENOMEM;
	}
	return 0;
}

static int policy_new(const char *origin, struct policy **ret, struct error *err)
{
	cleanup_with(policy_freep) struct policy *p = calloc(1, sizeof(*p));
	if (!p || policy_copy_default(p) < 0 || !(p->origin = strdup(origin)))
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(p);
	return 0;
}

/* A document states what it changes: it is laid over the built-in default,
 * so a key it leaves out keeps the default's value and `[]` empties a list. */
int policy_parse(const char *text, size_t n, const char *origin, struct policy **ret, struct error *err)
{
	cleanup_with(policy_freep) struct policy *p = NULL;
	int r = policy_new(origin, &p, err);
	if (r < 0)
		return r;
	/* The built-in document comes as values, and its digest was computed
	 * at build time (scripts/embed-policy.py). */
	if (text == policy_default_json) {
		snprintf(p->sha256, sizeof(p->sha256), "%s", policy_default_sha256);
	} else {
		sha256_hex(text, n, p->sha256);
		if ((r = policy_overlay(p, text, n, err)) < 0)
			return r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

int policy_parse_alone(const char *text, size_t n, struct policy **ret, struct error *err)
{
	cleanup_with(policy_freep) struct policy *p = calloc(1, sizeof(*p));
	if (!p || !(p->origin = strdup("alone")))
		return error_set(err, ENOMEM, "out of memory");
	sha256_hex(text, n, p->sha256);
	int r = policy_overlay(p, text, n, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int policy_load_default(struct policy **ret, struct error *err)
{
	return policy_parse(policy_default_json, strlen(policy_default_json), "default", ret, err);
}

const struct policy *policy_builtin(void)
{
	return &policy_default_builtin;
}

int policy_load_file(const char *path, struct policy **ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(AT_FDCWD, path, POLICY_MAX_BYTES, &text, &n, err);

	if (r == 0)
		r = policy_parse(text, n, path, ret, err);
	if (r < 0)
		return error_prefix(err, "policy '%s'", path);
	return 0;
}

char *policy_route_path(const char *scope)
{
	cleanup_free char *path = path_join(scope, ".airlock/policy.json");
	struct stat sb;

	if (!path || stat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
		return NULL;
	return TAKE_PTR(path);
}

bool policy_denies_argv0(const struct policy *policy, const char *argv0, struct policy_denial *ret_denial)
{
	const char *slash = strrchr(argv0, '/');
	const char *base = slash ? slash + 1 : argv0;

	for (size_t i = 0; policy->deny_argv0 && policy->deny_argv0[i]; i++) {
		if (strcasecmp(base, policy->deny_argv0[i]) != 0)
			continue;
		*ret_denial = (struct policy_denial){ .rule = "deny_argv0" };
		snprintf(ret_denial->value, sizeof(ret_denial->value), "%s", base);
		snprintf(ret_denial->message, sizeof(ret_denial->message),
			 "'%.200s' is on the policy's deny_argv0 list", base);
		return true;
	}
	return false;
}

bool policy_denies_timeout(const struct policy *policy, uint64_t timeout_ms,
			   const uint64_t *kill_after_ms, uint64_t *ret_kill_after_ms,
			   struct policy_denial *ret_denial)
{
	uint64_t max = policy->max_timeout_ms;

	if (timeout_ms > max) {
		*ret_denial = (struct policy_denial){ .rule = "max_timeout" };
		snprintf(ret_denial->value, sizeof(ret_denial->value), "%llu",
			 (unsigned long long)timeout_ms);
		snprintf(ret_denial->message, sizeof(ret_denial->message),
			 "timeout %llu ms exceeds the policy's maximum of %llu ms",
			 (unsigned long long)timeout_ms, (unsigned long long)max);
		return true;
	}
	/* Written as a difference: the sum could wrap. */
	uint64_t left = max - timeout_ms;
	if (!kill_after_ms) {
		*ret_kill_after_ms = MIN(policy->kill_after_ms, left);
		return false;
	}
	if (*kill_after_ms <= left) {
		*ret_kill_after_ms = *kill_after_ms;
		return false;
	}
	*ret_denial = (struct policy_denial){ .rule = "max_timeout" };
	/* The value is the whole life asked for, saturated. */
	uint64_t life =
		*kill_after_ms > UINT64_MAX - timeout_ms ? UINT64_MAX : timeout_ms + *kill_after_ms;
	snprintf(ret_denial->value, sizeof(ret_denial->value), "%llu", (unsigned long long)life);
	snprintf(ret_denial->message, sizeof(ret_denial->message),
		 "timeout %llu ms plus a grace of %llu ms before KILL exceeds the policy's maximum of %llu ms: the command's whole life must fit in it",
		 (unsigned long long)timeout_ms, (unsigned long long)*kill_after_ms,
		 (unsigned long long)max);
	return true;
}

bool policy_is_secret_name(const struct policy *policy, const char *name)
{
	for (size_t i = 0; policy->secret_patterns && policy->secret_patterns[i]; i++)
		if (fnmatch(policy->secret_patterns[i], name, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

/* ---- widening --------------------------------------------------------------- */

enum policy_field_type {
	POLICY_FIELD_U64,
	POLICY_FIELD_BOOL,
	POLICY_FIELD_STRV,
};

/* Which way a field widens what a run gets. */
enum policy_wider {
	POLICY_WIDER_NEITHER, /* gives a run no reach */
	POLICY_WIDER_GREATER, /* a larger number: a limit raised */
	POLICY_WIDER_TRUE, /* a switch on where the base has it off */
	POLICY_WIDER_FALSE, /* a switch off where the base has it on */
	POLICY_WIDER_ADDS, /* an allowlist with an entry the base lacks */
	POLICY_WIDER_REMOVES, /* a denylist without an entry the base has */
};

struct policy_field {
	const char *name;
	enum policy_field_type type;
	size_t offset;
	enum policy_wider wider;
	bool nocase; /* strv entries compare case-insensitively (as they match) */
	bool never; /* the widening is never taken from a file */
	const char *words[2]; /* a bool's spelling in the document: false, true */
};

#define POLICY_U64(n, f, w)                                                       \
	{                                                                         \
		n, POLICY_FIELD_U64, offsetof(struct policy, f), w, false, false, \
		{                                                                 \
			NULL, NULL                                                \
		}                                                                 \
	}
#define POLICY_STRV(n, f, w, c)                                                \
	{                                                                      \
		n, POLICY_FIELD_STRV, offsetof(struct policy, f), w, c, false, \
		{                                                              \
			NULL, NULL                                             \
		}                                                              \
	}
#define POLICY_BOOL(n, f, w, nv, f0, f1)                                        \
	{                                                                       \
		n, POLICY_FIELD_BOOL, offsetof(struct policy, f), w, false, nv, \
		{                                                               \
			f0, f1                                                  \
		}                                                               \
	}

/* Every field of struct policy but origin and sha256, in document order. */
static const struct policy_field policy_fields[] = {
	POLICY_STRV("deny_argv0", deny_argv0, POLICY_WIDER_REMOVES, true),
	POLICY_U64("timeout.default_ms", default_timeout_ms, POLICY_WIDER_GREATER),
	POLICY_U64("timeout.max_ms", max_timeout_ms, POLICY_WIDER_GREATER),
	POLICY_U64("timeout.kill_after_ms", kill_after_ms, POLICY_WIDER_GREATER),
	POLICY_STRV("env.allow", env_allow, POLICY_WIDER_ADDS, false),
	POLICY_STRV("env.secret_patterns", secret_patterns, POLICY_WIDER_REMOVES, true),
	/* Values the document itself states: nothing of the host's passes. */
	POLICY_STRV("env.set", env_set, POLICY_WIDER_NEITHER, false),
	/* What the receipt keeps of the output, not what the command reaches. */
	POLICY_U64("output.keep_bytes", keep_bytes, POLICY_WIDER_NEITHER),
	POLICY_U64("output.spill_max_bytes", spill_max_bytes, POLICY_WIDER_NEITHER),
	POLICY_U64("limits.max_argv_bytes", max_argv_bytes, POLICY_WIDER_GREATER),
	POLICY_U64("limits.core_bytes", core_bytes, POLICY_WIDER_GREATER),
	POLICY_U64("limits.open_files", open_files, POLICY_WIDER_GREATER),
	POLICY_U64("limits.file_size_bytes", file_size_bytes, POLICY_WIDER_GREATER),
	POLICY_U64("limits.processes", processes, POLICY_WIDER_GREATER),
	POLICY_U64("limits.memory_bytes", memory_bytes, POLICY_WIDER_GREATER),
	POLICY_U64("limits.cpu_seconds", cpu_seconds, POLICY_WIDER_GREATER),
	/* Durability of the record, not reach (benchmarks turn it off). */
	POLICY_BOOL("receipts.fsync", fsync_receipts, POLICY_WIDER_NEITHER, false, "false", "true"),
	POLICY_BOOL("sandbox.profile", sandbox_enabled, POLICY_WIDER_FALSE, true, "\"none\"",
		    "\"default\""),
	POLICY_STRV("sandbox.hide", hide, POLICY_WIDER_REMOVES, false),
	POLICY_BOOL("sandbox.home", home_hidden, POLICY_WIDER_FALSE, false, "\"visible\"", "\"hidden\""),
	/* Any entry the built-in list lacks, whatever sandbox.home says: an
	 * absolute one may lie outside the home. */
	POLICY_STRV("sandbox.home_allow", home_allow, POLICY_WIDER_ADDS, false),
	POLICY_STRV("sandbox.read_only", read_only, POLICY_WIDER_REMOVES, false),
	POLICY_U64("sandbox.tmp_bytes", tmp_bytes, POLICY_WIDER_GREATER),
	POLICY_BOOL("sandbox.net", share_net, POLICY_WIDER_TRUE, false, "\"loopback\"", "\"host\""),
	/* The allowlist form alone (net_allowlist) gives no reach: with no
	 * allow pattern its proxy refuses every connection. */
	POLICY_STRV("sandbox.net.allow", net_allow, POLICY_WIDER_ADDS, false),
	POLICY_STRV("sandbox.net.deny", net_deny, POLICY_WIDER_REMOVES, false),
	POLICY_STRV("sandbox.writable", writable, POLICY_WIDER_ADDS, false),
	/* Read from the installed policy only, never from a file (core/run/run.c). */
	POLICY_STRV("gate.trivial", gate_trivial, POLICY_WIDER_NEITHER, false),
	POLICY_BOOL("hooks.unknown_opens_failure", hooks_unknown_opens_failure, POLICY_WIDER_FALSE,
		    false, "false", "true"),
	POLICY_BOOL("gate.cancelled_opens_failure", gate_cancelled_opens_failure,
		    POLICY_WIDER_FALSE, false, "false", "true"),
};

static bool policy_strv_has(char **strv, const char *s, bool nocase)
{
	for (size_t i = 0; strv && strv[i]; i++)
		if ((nocase ? strcasecmp(strv[i], s) : strcmp(strv[i], s)) == 0)
			return true;
	return false;
}

/* The first entry of `from` that `in` lacks, or NULL. */
static const char *policy_strv_missing(char **from, char **in, bool nocase)
{
	for (size_t i = 0; from && from[i]; i++)
		if (!policy_strv_has(in, from[i], nocase))
			return from[i];
	return NULL;
}

/* Whether field f of p widens base's; the detail for people in w. */
static bool policy_field_widens(const struct policy_field *f, const struct policy *p,
				const struct policy *base, struct policy_widening *w)
{
	const char *pv = (const char *)p + f->offset, *bv = (const char *)base + f->offset;

	switch (f->type) {
	case POLICY_FIELD_U64: {
		uint64_t a = *(const uint64_t *)(const void *)pv;
		uint64_t b = *(const uint64_t *)(const void *)bv;
		if (f->wider != POLICY_WIDER_GREATER || a <= b)
			return false;
		snprintf(w->detail, sizeof(w->detail), "%llu, built-in %llu", (unsigned long long)a,
			 (unsigned long long)b);
		return true;
	}
	case POLICY_FIELD_BOOL: {
		bool a = *(const bool *)pv, b = *(const bool *)bv;
		bool opens = (f->wider == POLICY_WIDER_TRUE && a && !b) ||
			     (f->wider == POLICY_WIDER_FALSE && !a && b);
		if (!opens)
			return false;
		snprintf(w->detail, sizeof(w->detail), "%s, built-in %s", f->words[a], f->words[b]);
		return true;
	}
	case POLICY_FIELD_STRV: {
		char **a = *(char **const *)(const void *)pv, **b = *(char **const *)(const void *)bv;
		const char *s = f->wider == POLICY_WIDER_ADDS ? policy_strv_missing(a, b, f->nocase)
				: f->wider == POLICY_WIDER_REMOVES
					? policy_strv_missing(b, a, f->nocase)
					: NULL;
		if (!s)
			return false;
		snprintf(w->detail, sizeof(w->detail), "%s '%.200s'",
			 f->wider == POLICY_WIDER_ADDS ? "adds" : "drops", s);
		return true;
	}
	}
	return false;
}

size_t policy_widenings(const struct policy *policy, const struct policy *base,
			struct policy_widening *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(policy_fields); i++) {
		struct policy_widening w = { .field = policy_fields[i].name,
					     .never = policy_fields[i].never };
		if (!policy_field_widens(&policy_fields[i], policy, base, &w))
			continue;
		if (n < max)
			ret[n] = w;
		n++;
	}
	return n;
}

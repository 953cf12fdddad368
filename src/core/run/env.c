/* SPDX-License-Identifier: MIT */
#include "core/run/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "basic/text.h"

void run_env_release(struct run_env *env)
{
	strv_free(env->envp);
	strv_free(env->keys);
	env->envp = env->keys = NULL;
}

/* Removes NAME=... from env (fixed settings override inherited values). */
static void env_drop(struct run_env *env, const char *name)
{
	size_t j = 0;

	for (size_t i = 0; env->envp && env->envp[i]; i++) {
		if (strv_env_entry_is(env->envp[i], name)) {
			free(env->envp[i]);
			continue;
		}
		env->envp[j++] = env->envp[i];
	}
	if (env->envp)
		env->envp[j] = NULL;
}

static int env_set(struct run_env *env, const char *name, const char *value)
{
	char *entry = NULL;

	env_drop(env, name);
	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	int r = strv_consume(&env->envp, entry);
	if (r == 0 && !strv_contains(env->keys, name))
		r = strv_push(&env->keys, name);
	return r;
}

static int env_allow_one(const struct policy *policy, const struct run_request *req,
			 char **environ_, const char *name, struct run_env *env,
			 struct policy_denial *ret_denial, struct error *err)
{
	if (!env_name_is_valid(name))
		return error_set(err, EINVAL, "invalid environment variable name '%.200s'", name);
	if (policy_is_secret_name(policy, name) && !strv_contains(req->env_force, name)) {
		*ret_denial = (struct policy_denial){ .rule = "secret_env" };
		snprintf(ret_denial->value, sizeof(ret_denial->value), "%s", name);
		snprintf(ret_denial->message, sizeof(ret_denial->message),
			 "'%.200s' looks like a secret (env.secret_patterns); pass it with --env-force to allow it",
			 name);
		return 1;
	}
	const char *value = strv_env_get(environ_, name);
	if (!value || !*value || strv_contains(env->keys, name))
		return 0;
	return env_set(env, name, value) < 0 ? error_set(err, ENOMEM, "out of memory") : 0;
}

int run_env_build(const struct policy *policy, const struct run_request *req, char **environ_,
		  const char *receipt_id, struct run_env *ret, struct policy_denial *ret_denial,
		  struct error *err)
{
	struct run_env env = { 0 };
	char *const *lists[] = { req->env_replace ? NULL : policy->env_allow, req->env_allow,
				 req->env_force };
	int r = 0;

	for (size_t l = 0; r == 0 && l < 3; l++)
		for (size_t i = 0; r == 0 && lists[l] && lists[l][i]; i++)
			r = env_allow_one(policy, req, environ_, lists[l][i], &env, ret_denial, err);
	for (size_t i = 0; r == 0 && policy->env_set && policy->env_set[i]; i++) {
		const char *eq = strchr(policy->env_set[i], '=');
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - policy->env_set[i]),
			 policy->env_set[i]);
		if (env_set(&env, name, eq + 1) < 0)
			r = error_set(err, ENOMEM, "out of memory");
	}
	if (r == 0 && env_set(&env, "AIRLOCK_RECEIPT_ID", receipt_id) < 0)
		r = error_set(err, ENOMEM, "out of memory");
	if (r != 0) {
		run_env_release(&env);
		return r;
	}
	*ret = env;
	return 0;
}

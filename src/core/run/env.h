/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/error.h"
#include "core/policy/policy.h"
#include "core/record/request.h"

/* The command's environment: empty, plus the allowlisted variables that are
 * set (and non-empty) in the caller's environment, plus the policy's fixed
 * settings, plus AIRLOCK_RECEIPT_ID. A name that looks like a secret is
 * refused even when allowlisted, unless the request forces it. */
struct run_env {
	char **envp; /* NAME=VALUE */
	char **keys; /* names only, for the receipt */
};

void run_env_release(struct run_env *env);

/* Returns 0, or 1 with *ret_denial filled when a secret name was refused,
 * or -EINVAL for a malformed name (message in err). */
int run_env_build(const struct policy *policy, const struct run_request *req, char **environ_,
		  const char *receipt_id, struct run_env *ret, struct policy_denial *ret_denial,
		  struct error *err);

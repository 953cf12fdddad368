/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "basic/error.h"

/* One command's context, opened once by the front end and handed to core:
 * the state directory (its path, and the store once opened), the policy and
 * the rules (each loaded once, on first use), and the caller's environment.
 * Front ends (the CLI now) only parse, call and print; what they would
 * otherwise open themselves, they ask the session for. Nothing is opened by
 * session_open(): a command that must not create the state directory never
 * does, as the store is opened only by session_store(), create or not. */
struct store;
struct policy;
struct rules;

struct session_options {
	const char *state_dir; /* NULL: store_default_path() */
	const char *policy_path; /* NULL: the built-in policy */
	const char *rules_path; /* NULL: the built-in rules */
	char **environ_; /* the caller's environment; NULL: none */
};

struct session {
	char *state_dir; /* resolved; NULL when none could be derived */
	char *policy_path;
	char *rules_path;
	char **environ_;
	struct store *store;
	/* policy_builtin() or policy_owned, once loaded */
	const struct policy *policy;
	struct policy *policy_owned; /* loaded from policy_path */
	struct rules *rules;
};

/* Resolves the state directory's path and keeps the options; opens nothing.
 * On error *s holds nothing to free. */
int session_open(struct session *s, const struct session_options *opts, struct error *err);
void session_free(struct session *s);

/* The state directory's store, opened on the first call (creating it, mode
 * 0700, when create). -EINVAL when no state directory could be derived,
 * -ENOENT when it does not exist and create is false (a later call with
 * create makes it). The store stays the session's. */
int session_store(struct session *s, bool create, struct store **ret, struct error *err);
/* The policy (policy_path, else the built-in one), loaded once; the
 * session's, read-only: the built-in one is policy_builtin(), not a copy. */
int session_policy(struct session *s, const struct policy **ret, struct error *err);
/* The rules (rules_path, else the built-in ones), loaded once; the
 * session's. */
int session_rules(struct session *s, struct rules **ret, struct error *err);

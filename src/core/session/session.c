/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "core/policy/policy.h"
#include "core/policy/rules.h"
#include "core/session/session.h"
#include "core/store/store.h"

static int session_dup(const char *s, char **ret, struct error *err)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : error_set(err, ENOMEM, "out of memory");
}

int session_open(struct session *s, const struct session_options *opts, struct error *err)
{
	static const struct session_options none = { 0 };

	*s = (struct session){ 0 };
	if (!opts)
		opts = &none;
	int r = 0;
	if (opts->state_dir)
		r = session_dup(opts->state_dir, &s->state_dir, err);
	else
		s->state_dir = store_default_path(); /* NULL: reported by session_store() */
	if (r == 0)
		r = session_dup(opts->policy_path, &s->policy_path, err);
	if (r == 0)
		r = session_dup(opts->rules_path, &s->rules_path, err);
	if (r < 0) {
		session_free(s);
		return r;
	}
	s->environ_ = opts->environ_;
	return 0;
}

void session_free(struct session *s)
{
	store_free(s->store);
	policy_free(s->policy_owned);
	rules_free(s->rules);
	free(s->state_dir);
	free(s->policy_path);
	free(s->rules_path);
	*s = (struct session){ 0 };
}

int session_store(struct session *s, bool create, struct store **ret, struct error *err)
{
	*ret = NULL;
	if (!s->store) {
		if (!s->state_dir)
			return error_set(err, EINVAL,
					 "no state directory: set AIRLOCK_STATE_DIR, XDG_STATE_HOME or HOME, or pass --state-dir");
		int r = store_open(s->state_dir, create, &s->store, err);
		if (r < 0)
			return r;
	}
	*ret = s->store;
	return 0;
}

int session_policy(struct session *s, const struct policy **ret, struct error *err)
{
	*ret = NULL;
	if (!s->policy && s->policy_path) {
		int r = policy_load_file(s->policy_path, &s->policy_owned, err);
		if (r < 0)
			return r;
		s->policy = s->policy_owned;
	} else if (!s->policy) {
		s->policy = policy_builtin();
	}
	*ret = s->policy;
	return 0;
}

int session_rules(struct session *s, struct rules **ret, struct error *err)
{
	*ret = NULL;
	if (!s->rules) {
		int r = s->rules_path ? rules_load_file(s->rules_path, &s->rules, err)
				      : rules_load_default(&s->rules, err);
		if (r < 0)
			return r;
	}
	*ret = s->rules;
	return 0;
}

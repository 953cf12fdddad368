/* SPDX-License-Identifier: MIT */
/* The witness policy (docs/witness.md, "The policy"): which log, which
 * witnesses, how many of them; in the line format of C2SP tlog-policy and
 * Sigsum's policy files, with signed-note vkeys for keys. */
#include "basic/macro.h"
#include "ledger/internal.h"
#include "ledger/witness.h"

#define POLICY_NONE INT32_MIN

/* A member's index by name: a witness (>= 0) or a group (-1-i); -ENOENT. */
static int policy_lookup(const struct witness_policy *p, const char *name, int *ret)
{
	for (size_t i = 0; i < p->n_witnesses; i++)
		if (strcmp(p->witness_names[i], name) == 0)
			return *ret = (int)i, 0;
	for (size_t i = 0; i < p->n_groups; i++)
		if (strcmp(p->groups[i].name, name) == 0)
			return *ret = -1 - (int)i, 0;
	return -ENOENT;
}

static bool policy_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < 128 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:") == n;
}

/* One line's words (at most max, split at spaces and tabs): -E2BIG more. */
static int policy_words(char *line, char **words, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return -E2BIG;
		words[n++] = w;
	}
	return n;
}

static int policy_line(struct witness_policy *p, char *line, bool *has_quorum, struct error *err)
{
	char *w[2 + WITNESS_POLICY_WITNESSES + 2];
	int n = policy_words(line, w, (int)ARRAY_SIZE(w));
	struct error kerr = { 0 };

	if (n < 0)
		return error_set(err, EBADMSG, "too many words");
	if (n == 0)
		return 0;
	if (strcmp(w[0], "log") == 0) {
		if (n < 2 || n > 3)
			return error_set(err, EBADMSG, "log VKEY [URL]");
		if (p->has_log)
			return error_set(err, EBADMSG, "one log per policy");
		if (ledger_vkey_parse(w[1], &p->log, &kerr) < 0)
			return error_set(err, EBADMSG, "the log's key: %s", kerr.msg);
		p->has_log = true;
		return 0;
	}
	if (strcmp(w[0], "witness") == 0) {
		int dummy;
		if (n < 3 || n > 4)
			return error_set(err, EBADMSG, "witness NAME VKEY [URL]");
		if (!policy_name_ok(w[1]) || policy_lookup(p, w[1], &dummy) == 0)
			return error_set(err, EBADMSG, "a bad or repeated name '%s'", w[1]);
		if (p->n_witnesses == WITNESS_POLICY_WITNESSES)
			return error_set(err, EBADMSG, "more than %d witnesses",
					 WITNESS_POLICY_WITNESSES);
		struct ledger_vkey *k = &p->witnesses[p->n_witnesses];
		if (witness_vkey_parse(w[2], k, &kerr) < 0)
			return error_set(err, EBADMSG, "witness %s: %s", w[1], kerr.msg);
		for (size_t i = 0; i < p->n_witnesses; i++)
			if (memcmp(p->witnesses[i].key, k->key, 32) == 0)
				return error_set(err, EBADMSG, "witness %s repeats the key of %s",
						 w[1], p->witness_names[i]);
		snprintf(p->witness_names[p->n_witnesses++], 128, "%s", w[1]);
		return 0;
	}
	if (strcmp(w[0], "group") == 0) {
		int dummy;
		if (n < 4)
			return error_set(err, EBADMSG, "group NAME all|any|K MEMBER...");
		if (!policy_name_ok(w[1]) || policy_lookup(p, w[1], &dummy) == 0)
			return error_set(err, EBADMSG, "a bad or repeated name '%s'", w[1]);
		if (p->n_groups == WITNESS_POLICY_GROUPS)
			return error_set(err, EBADMSG, "more than %d groups", WITNESS_POLICY_GROUPS);
		struct witness_policy_group *g = &p->groups[p->n_groups];
		*g = (struct witness_policy_group){ 0 };
		snprintf(g->name, sizeof(g->name), "%s", w[1]);
		for (int i = 3; i < n; i++) {
			int m;
			/* Only names defined above: no cycle. */
			if (policy_lookup(p, w[i], &m) < 0)
				return error_set(err, EBADMSG,
						 "group %s: '%s' is not defined above", w[1], w[i]);
			for (size_t j = 0; j < g->n_members; j++)
				if (g->members[j] == m)
					return error_set(err, EBADMSG, "group %s names '%s' twice",
							 w[1], w[i]);
			g->members[g->n_members++] = m;
		}
		int k;
		if (strcmp(w[2], "all") == 0)
			g->threshold = g->n_members;
		else if (strcmp(w[2], "any") == 0)
			g->threshold = 1;
		else if (parse_int(w[2], 1, (int)g->n_members, &k) == 0 && w[2][0] != '0' &&
			 w[2][0] != '+')
			g->threshold = (size_t)k;
		else
			return error_set(err, EBADMSG, "group %s: the threshold is all, any or 1-%zu",
					 w[1], g->n_members);
		p->n_groups++;
		return 0;
	}
	if (strcmp(w[0], "quorum") == 0) {
		if (n != 2)
			return error_set(err, EBADMSG, "quorum NAME|none");
		if (*has_quorum)
			return error_set(err, EBADMSG, "one quorum per policy");
		*has_quorum = true;
		if (strcmp(w[1], "none") == 0)
			return p->quorum = POLICY_NONE, 0;
		if (policy_lookup(p, w[1], &p->quorum) < 0)
			return error_set(err, EBADMSG, "quorum: '%s' is not defined above", w[1]);
		return 0;
	}
	return error_set(err, EBADMSG, "unknown keyword '%.32s'", w[0]);
}

int witness_policy_parse(const char *text, size_t n, struct witness_policy *ret, struct error *err)
{
	*ret = (struct witness_policy){ .quorum = POLICY_NONE };
	if (n > WITNESS_POLICY_MAX || !utf8_is_valid(text, n) || memchr(text, '\0', n))
		return error_set(err, EBADMSG, "policy: not a text file of at most %d bytes",
				 WITNESS_POLICY_MAX);
	cleanup_free char *copy = strndup(text, n);
	if (!copy)
		return error_set(err, ENOMEM, "out of memory");
	bool has_quorum = false;
	int lineno = 0;
	for (char *line = copy, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		line[strcspn(line, "#")] = '\0';
		for (char *c = line; *c; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return error_set(err, EBADMSG,
						 "policy line %d: a control character", lineno);
		if (policy_line(ret, line, &has_quorum, err) < 0)
			return error_prefix(err, "policy line %d", lineno);
	}
	if (!ret->has_log)
		return error_set(err, EBADMSG, "policy: no `log` line");
	if (!has_quorum)
		return error_set(err, EBADMSG, "policy: no `quorum` line");
	return 0;
}

static bool policy_met(const struct witness_policy *p, int member, const bool *valid)
{
	if (member >= 0)
		return valid[member];
	const struct witness_policy_group *g = &p->groups[-1 - member];
	size_t k = 0;
	for (size_t i = 0; i < g->n_members; i++)
		k += policy_met(p, g->members[i], valid);
	return k >= g->threshold;
}

int witness_policy_check(const struct witness_policy *p, const char *checkpoint, size_t n,
			 char *const *lines, size_t n_lines, size_t *ret_n_valid, struct error *err)
{
	struct ledger_checkpoint cp = { 0 }, any = { 0 };
	bool valid[WITNESS_POLICY_WITNESSES] = { false };
	size_t n_valid = 0, unknown = 0;

	*ret_n_valid = 0;
	if (ledger_checkpoint_parse(checkpoint, n, NULL, &any, err) < 0)
		return error_prefix(err, "the checkpoint");
	if (strcmp(any.origin, p->log.name) != 0) {
		error_set(err, EBADMSG, "the checkpoint is for origin %s, not the policy's log %s",
			  any.origin, p->log.name);
		ledger_checkpoint_release(&any);
		return -EBADMSG;
	}
	ledger_checkpoint_release(&any);
	if (ledger_checkpoint_parse(checkpoint, n, &p->log, &cp, err) < 0)
		return error_prefix(err, "the checkpoint is not signed by the policy's log key");
	const char *split = strstr(cp.text, "\n\n");
	size_t body_n = (size_t)(split - cp.text) + 1;

	/* The note's own signature lines, then the ones kept beside it. */
	cleanup_free char *sigs = strdup(split + 2);
	if (!sigs) {
		ledger_checkpoint_release(&cp);
		return error_set(err, ENOMEM, "out of memory");
	}
	size_t n_own = 0;
	char *own[64], *save = NULL;
	for (char *l = strtok_r(sigs, "\n", &save); l && n_own < ARRAY_SIZE(own);
	     l = strtok_r(NULL, "\n", &save))
		own[n_own++] = l;
	int r = 0;
	for (size_t i = 0; r == 0 && i < n_own + n_lines; i++) {
		const char *line = i < n_own ? own[i] : lines[i - n_own];
		bool mine = i < n_own && strncmp(line + 4, p->log.name, strlen(p->log.name)) == 0 &&
			    line[4 + strlen(p->log.name)] == ' ';
		if (mine)
			continue; /* the log's own signature, checked above */
		bool matched = false;
		for (size_t k = 0; r == 0 && k < p->n_witnesses; k++) {
			int q = witness_cosignature_verify(&p->witnesses[k], cp.text, body_n, line,
							   NULL);
			if (q == -EBADMSG)
				r = error_set(err, EBADMSG,
					      "the cosignature by witness %s (%s) does not verify: forged or for another checkpoint",
					      p->witness_names[k], p->witnesses[k].name);
			if (q == 0) {
				matched = true;
				n_valid += !valid[k];
				valid[k] = true;
			}
		}
		unknown += !matched && r == 0;
	}
	uint64_t size = cp.size;
	ledger_checkpoint_release(&cp);
	if (r < 0)
		return r;
	*ret_n_valid = n_valid;
	if (p->quorum == POLICY_NONE || policy_met(p, p->quorum, valid))
		return 0;
	const char *qname =
		p->quorum >= 0 ? p->witness_names[p->quorum] : p->groups[-1 - p->quorum].name;
	char ignored[80] = "";
	if (unknown)
		snprintf(ignored, sizeof(ignored),
			 " (%zu cosignatures by keys not in the policy ignored)", unknown);
	return error_set(err, EBADMSG,
			 "no quorum: %zu of the policy's %zu witnesses cosigned checkpoint %llu, not enough for %s%s",
			 n_valid, p->n_witnesses, (unsigned long long)size, qname, ignored);
}

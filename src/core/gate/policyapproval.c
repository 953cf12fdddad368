/* SPDX-License-Identifier: MIT */
#include "core/gate/policyapproval.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "core/gate/approver.h"
#include "core/store/jsonutil.h"
#include "core/store/ledger.h"
#include "core/store/statepath.h"

#define POLICYAPPROVAL_MAX_BYTES (64 << 10)

void policyapproval_review_release(struct policyapproval_review *r)
{
	policy_free(r->policy);
	*r = (struct policyapproval_review){ 0 };
}

/* The bytes the approver signs: the schema and the digest, one a line. */
static void policyapproval_message(const char sha256[SHA256_HEX_SIZE], char buf[static 128])
{
	snprintf(buf, 128, POLICYAPPROVAL_SCHEMA "\nsha256=%.64s\n", sha256);
}

/* Against the built-in policy, read in place (policy_builtin()). */
static size_t policyapproval_compare(const struct policy *policy, struct policy_widening *ret)
{
	return policy_widenings(policy, policy_builtin(), ret, POLICY_MAX_WIDENINGS);
}

int policyapproval_review(const char *path, struct policyapproval_review *ret, struct error *err)
{
	*ret = (struct policyapproval_review){ 0 };
	int r = policy_load_file(path, &ret->policy, err);
	if (r < 0)
		return r;
	ret->n_widenings = policyapproval_compare(ret->policy, ret->widenings);
	return 0;
}

int policyapproval_approve(struct store *store, const struct policyapproval_review *review,
			   const char *passphrase, char ret_fingerprint[static 20], struct error *err)
{
	const struct policy *policy = review->policy;
	size_t shown = MIN(review->n_widenings, (size_t)POLICY_MAX_WIDENINGS);

	for (size_t i = 0; i < shown; i++)
		if (review->widenings[i].never)
			return error_set(err, EPERM,
					 "policy '%.300s' sets %s %s: that is never taken from a policy file, approved or not; a person asks for it per run (--sandbox none)",
					 policy->origin, review->widenings[i].field,
					 review->widenings[i].detail);
	cleanup_with(approver_release) struct approver approver = { 0 };
	int r = approver_load_in_effect(store, &approver, err);
	if (r < 0)
		return r;
	approver_fingerprint(&approver, ret_fingerprint);
	if (!passphrase)
		return 0;

	char message[128], now[64];
	policyapproval_message(policy->sha256, message);
	json_t *approval = NULL;
	r = approver_sign(&approver, passphrase, message, &approval, err);
	if (r < 0)
		return r;
	cleanup_with(json_decrefp) json_t *widens = json_array();
	for (size_t i = 0; widens && i < shown; i++)
		json_array_append_new(widens, json_string(review->widenings[i].field));
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_with(json_decrefp) json_t *record =
		json_pack("{s:s, s:s, s:s, s:O, s:s, s:o}", "schema", POLICYAPPROVAL_SCHEMA,
			  "sha256", policy->sha256, "origin", policy->origin, "widens",
			  widens ? widens : json_null(), "approved_at", now, "approval", approval);
	cleanup_free char *text = record ? jsonutil_dump_line(record) : NULL;
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	struct statepath path = statepath_policy(policy->sha256);
	r = store_commit(store, LEDGER_POLICY_APPROVAL, policy->sha256, path.s, text, strlen(text),
			 true, err);
	if (r < 0)
		return error_prefix(err, "approve policy '%.300s'", policy->origin);
	return 0;
}

int policyapproval_check(struct store *store, const char sha256[SHA256_HEX_SIZE], struct error *why)
{
	char message[128], digest[SHA256_HEX_SIZE];
	cleanup_free char *text = NULL;
	size_t n;
	struct error io = { 0 };

	if (!store)
		return error_set(why, ENOENT, "the approver has not approved it");
	struct statepath path = statepath_policy(sha256);
	int r = file_read_capped(store_dir_fd(store), path.s, POLICYAPPROVAL_MAX_BYTES, &text, &n, &io);
	if (r == -ENOENT)
		return error_set(why, ENOENT, "the approver has not approved it");
	if (r < 0)
		return error_set(why, -r, "its approval cannot be read: %.200s", io.msg);
	/* The bytes checked against the ledger are the bytes parsed. */
	sha256_hex(text, n, digest);
	r = ledger_backs(store_ledger(store), LEDGER_POLICY_APPROVAL, sha256, path.s, digest, &io);
	if (r < 0)
		return error_set(why, EACCES,
				 "its approval record is not the one the ledger committed");
	cleanup_with(json_decrefp) json_t *record = NULL;
	if (jsonutil_parse_object(text, n, &record, &io) < 0)
		return error_set(why, EBADMSG, "its approval record does not parse");
	const char *schema = jsonutil_str(record, "schema");
	const char *named = jsonutil_str(record, "sha256");
	json_t *approval = json_object_get(record, "approval");
	const char *key = jsonutil_str(approval, "public_key");
	policyapproval_message(sha256, message);
	if (!schema || strcmp(schema, POLICYAPPROVAL_SCHEMA) != 0 || !named ||
	    strcmp(named, sha256) != 0)
		return error_set(why, EBADMSG, "its approval record names another digest");
	if (!key || !approver_trusts(store, key))
		return error_set(why, EACCES,
				 "its approval is signed by %.16s, not the enrolled approver",
				 key ? key : "no key");
	if (!approver_verify_key(key, message, jsonutil_str(approval, "signature")))
		return error_set(why, EACCES, "its approver signature does not verify");
	return 0;
}

bool policyapproval_denies(struct store *store, const struct policy *policy,
			   struct policy_denial *ret_denial)
{
	struct policy_widening w[POLICY_MAX_WIDENINGS];
	size_t n = policyapproval_compare(policy, w);

	if (n == 0)
		return false;
	*ret_denial = (struct policy_denial){ .rule = "policy_widens" };
	/* The first field that is never taken from a file, else the first. */
	size_t first = 0;
	for (size_t i = 0; i < MIN(n, (size_t)POLICY_MAX_WIDENINGS); i++)
		if (w[i].never) {
			first = i;
			break;
		}
	char more[32] = "";
	if (n > 1)
		snprintf(more, sizeof(more), " and %zu more", n - 1);
	snprintf(ret_denial->value, sizeof(ret_denial->value), "%s", w[first].field);
	if (w[first].never) {
		snprintf(ret_denial->message, sizeof(ret_denial->message),
			 "policy '%.200s' widens %s (%.100s): never taken from a policy file; a person asks for it per run (--sandbox none)",
			 policy->origin, w[first].field, w[first].detail);
		return true;
	}
	struct error why = { 0 };
	if (policyapproval_check(store, policy->sha256, &why) == 0)
		return false;
	snprintf(ret_denial->message, sizeof(ret_denial->message),
		 "policy '%.150s' widens %s (%.80s)%s; %.100s (sha256 %.16s): the approver approves it with `airlock policy approve FILE` in their own terminal",
		 policy->origin, w[first].field, w[first].detail, more, why.msg, policy->sha256);
	return true;
}

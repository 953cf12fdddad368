/* SPDX-License-Identifier: MIT */
/* A host's mirrored log checked at the console (core/fleet/fleetlog.h). */
#include "core/fleet/fleetlog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/text.h"

const char *fleet_line_state_name(enum fleet_line_state s)
{
	static const char *const names[] = {
		[FLEET_LINE_VERIFIED] = "verified",
		[FLEET_LINE_FORGED] = "forged",
		[FLEET_LINE_UNCOVERED] = "not covered",
		[FLEET_LINE_UNVERIFIED] = "unverified",
	};
	return names[s];
}

const char *fleet_key_source_name(enum fleet_key_source s)
{
	static const char *const names[] = {
		[FLEET_KEY_MIRROR] = "the mirror's",
		[FLEET_KEY_POLICY] = "the policy's",
		[FLEET_KEY_PINNED] = "pinned",
		[FLEET_KEY_UNPINNED] = "not pinned",
	};
	return names[s];
}

int fleet_keys_parse(const char *text, size_t n, struct fleet_keys *ret, struct error *err)
{
	*ret = (struct fleet_keys){ 0 };
	size_t lineno = 0;
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(text + at, '\n', n - at);
		size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
		char line[1024];
		lineno++;
		if (len >= sizeof(line)) {
			fleet_keys_release(ret);
			return error_set(err, EBADMSG, "line %zu: too long for a key", lineno);
		}
		memcpy(line, text + at, len);
		line[len] = '\0';
		at += len + 1;
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		for (char *e = s + strlen(s);
		     e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');)
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		struct ledger_vkey *keys = realloc(ret->keys, (ret->n + 1) * sizeof(*keys));
		if (!keys) {
			fleet_keys_release(ret);
			return error_set(err, ENOMEM, "out of memory");
		}
		ret->keys = keys;
		int r = ledger_vkey_parse(s, &ret->keys[ret->n], err);
		if (r < 0) {
			fleet_keys_release(ret);
			return error_prefix(err, "line %zu", lineno);
		}
		for (size_t i = 0; i < ret->n; i++)
			if (strcmp(ret->keys[i].name, ret->keys[ret->n].name) == 0) {
				/* The message names the log before the keys are freed. */
				r = error_set(err, EBADMSG, "line %zu: a second key for log %s",
					      lineno, ret->keys[i].name);
				fleet_keys_release(ret);
				return r;
			}
		ret->n++;
	}
	return 0;
}

void fleet_keys_release(struct fleet_keys *k)
{
	free(k->keys);
	*k = (struct fleet_keys){ 0 };
}

void fleet_log_begin(struct fleet_log *l, const char *origin, const char *checkpoint,
		     const char *mirror_vkey, const struct fleet_keys *keys,
		     const struct ledger_vkey *policy_key)
{
	*l = (struct fleet_log){ .key_source = FLEET_KEY_MIRROR };
	merkle_range_init(&l->range);
	struct ledger_vkey mirror;
	const struct ledger_vkey *key = NULL;
	struct error err = { 0 };
	if (keys) {
		l->key_source = FLEET_KEY_UNPINNED;
		for (size_t i = 0; i < keys->n && !key; i++)
			if (strcmp(keys->keys[i].name, origin) == 0)
				key = &keys->keys[i];
		if (key)
			l->key_source = FLEET_KEY_PINNED;
	} else if (policy_key && strcmp(policy_key->name, origin) == 0) {
		l->key_source = FLEET_KEY_POLICY;
		key = policy_key;
	} else if (mirror_vkey && ledger_vkey_parse(mirror_vkey, &mirror, &err) == 0) {
		key = &mirror;
	}
	if (!key) {
		snprintf(l->failure, sizeof(l->failure), "%s",
			 l->key_source == FLEET_KEY_UNPINNED
				 ? "its log's key is not among the console's --keys"
				 : "the mirror's key of its log does not parse");
		return;
	}
	if (!checkpoint) {
		snprintf(l->failure, sizeof(l->failure), "no checkpoint yet");
		return;
	}
	if (ledger_checkpoint_parse(checkpoint, strlen(checkpoint), key, &l->checkpoint, &err) < 0) {
		snprintf(l->failure, sizeof(l->failure),
			 "its latest checkpoint in the mirror is not signed by %s key %.64s: %.128s",
			 fleet_key_source_name(l->key_source), key->name, err.msg);
		return;
	}
	if (strcmp(l->checkpoint.origin, origin) != 0) {
		snprintf(l->failure, sizeof(l->failure),
			 "its latest checkpoint in the mirror is of another log (%.128s)",
			 l->checkpoint.origin);
		return;
	}
	l->checkpoint_ok = true;
}

enum fleet_line_state fleet_log_add(struct fleet_log *l, const char *seq, const char *leaf_hex,
				    const char *line, size_t n)
{
	uint64_t at = 0;
	merkle_hash stored, own;
	if (l->broken)
		return FLEET_LINE_UNVERIFIED;
	if (!seq || parse_u64(seq, &at) < 0 || at != l->next_seq || !leaf_hex ||
	    !hex_decode(leaf_hex, stored, sizeof(stored))) {
		l->broken = true;
		snprintf(l->failure, sizeof(l->failure),
			 "the mirror's lines are not the log's sequence (at line %llu)",
			 (unsigned long long)l->next_seq);
		return FLEET_LINE_UNVERIFIED;
	}
	l->next_seq++;
	if (!l->checkpoint_ok || at >= l->checkpoint.size)
		return FLEET_LINE_UNCOVERED;
	merkle_range_append(&l->range, stored);
	merkle_leaf_hash(line, n, own);
	if (memcmp(own, stored, sizeof(own)) == 0)
		return FLEET_LINE_VERIFIED;
	l->n_mismatched++;
	return FLEET_LINE_FORGED;
}

void fleet_log_finish(struct fleet_log *l)
{
	merkle_hash root;
	if (!l->checkpoint_ok || l->broken)
		return;
	if (l->range.size != l->checkpoint.size) {
		snprintf(l->failure, sizeof(l->failure),
			 "the mirror holds %llu of the %llu lines its checkpoint signs",
			 (unsigned long long)l->range.size, (unsigned long long)l->checkpoint.size);
		return;
	}
	merkle_range_root(&l->range, root);
	if (memcmp(root, l->checkpoint.root, sizeof(root)) != 0) {
		snprintf(l->failure, sizeof(l->failure),
			 "the mirror's leaf hashes do not make the root its checkpoint signs");
		return;
	}
	l->tree_ok = true;
	l->failure[0] = '\0';
}

enum fleet_line_state fleet_log_state(const struct fleet_log *l, enum fleet_line_state added)
{
	if (added == FLEET_LINE_UNVERIFIED || !l->checkpoint_ok)
		return FLEET_LINE_UNVERIFIED;
	if (added == FLEET_LINE_UNCOVERED)
		return FLEET_LINE_UNCOVERED;
	return l->tree_ok ? added : FLEET_LINE_UNVERIFIED;
}

void fleet_log_release(struct fleet_log *l)
{
	ledger_checkpoint_release(&l->checkpoint);
}

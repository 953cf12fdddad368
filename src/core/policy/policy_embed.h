/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

struct policy; /* core/policy/policy.h */

/* The built-in policy (policy/default.json), compiled in by
 * scripts/embed-policy.py: its bytes, the SHA-256 of its bytes as hex, and
 * the document as struct policy values, which policy.c copies instead of
 * parsing the document at every start: the numbers and switches in
 * policy_default_scalars (its lists NULL), each list the document sets in
 * policy_default_lists (the field's offset and its strings, NULL-ended;
 * the table ends with strings NULL); and the whole policy, read-only, as
 * policy_default_builtin (policy_builtin()). tests/unit/test_core.c checks
 * them, field by field, against the document parsed by policy.c's parser. */
struct policy_embed_list {
	size_t offset; /* of a char ** field of struct policy */
	const char *const *strings;
};

extern const char policy_default_json[];
extern const char policy_default_sha256[];
extern const struct policy policy_default_scalars;
extern const struct policy_embed_list policy_default_lists[];
extern const struct policy policy_default_builtin;

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* The built-in rules (policy/rules.json), compiled in by
 * scripts/embed-rules.py: the document's bytes, and the same rules split so
 * that rules.c parses only those a command names. */
extern const char policy_rules_json[];

/* The document without "wrappers" and "rules", compact. */
extern const char *const policy_rules_head_json;
/* Each wrapper and each rule as its own compact JSON object, in document
 * order; NULL-terminated. */
extern const char *const policy_rules_wrappers[];
extern const size_t policy_rules_n_wrappers;
extern const char *const policy_rules_rules[];
extern const size_t policy_rules_n_rules;

/* Each rule's "subcommands" (NULL: none): a rule that has them matches only
 * an argv with one of them among its words. */
extern const char *const *const policy_rules_subcommands[];

#define RULES_EMBED_END 65535 /* ends an index list */

/* One argv0 name and the wrappers and rules whose argv0 lists it, as
 * indices in document order, each list ended by RULES_EMBED_END. Sorted by
 * name (strcmp()). */
struct rules_embed_name {
	const char *name;
	const unsigned short *wrappers;
	const unsigned short *rules;
};
extern const struct rules_embed_name policy_rules_names[];
extern const size_t policy_rules_n_names;

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

/* The built-in policy (policy/default.json), compiled in by
 * scripts/embed-policy.py: its bytes, the SHA-256 of its bytes as hex, and
 * the same document built as jansson values (NULL: out of memory), which
 * policy.c reads with the parser that reads a policy file, without lexing. */
extern const char policy_default_json[];
extern const char policy_default_sha256[];
json_t *policy_default_doc(void);

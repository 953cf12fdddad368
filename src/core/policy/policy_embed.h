/* SPDX-License-Identifier: MIT */
#pragma once

/* The built-in policy (policy/default.json), compiled in by
 * scripts/embed-policy.py: its bytes, the same document compact (what
 * policy.c parses), and the SHA-256 of its bytes, as hex. */
extern const char policy_default_json[];
extern const char policy_default_compact_json[];
extern const char policy_default_sha256[];

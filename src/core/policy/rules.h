/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

/* Risk classification of an argv, from a data file (docs/rules-format.md).
 * The built-in rules are policy/rules.json, compiled in. Levels are the
 * permit levels: 1 read-only, 2 temporary files only, 3 generated files,
 * 4 tracked files, 5 destructive outside the workspace. */
#define RULES_SCHEMA "airlock.rules/2"

struct rules;

struct rules_verdict {
	int risk;
	char rule[64]; /* the id of the rule that decided, or "default" */
	char reason[256];
	const char *level; /* the level's name, from the rules file */
};

int rules_parse(const char *text, size_t n, struct rules **ret, struct error *err);
/* The built-in rules; each wrapper and rule is parsed when a command first
 * names it (a command whose rules cannot be parsed then, out of memory, is
 * risk 5, rule "rules-unavailable"). */
int rules_load_default(struct rules **ret, struct error *err);
/* Parses every built-in wrapper and rule not parsed yet (the tests: what
 * rules_load_default() leaves for later must parse). */
int rules_parse_all(const struct rules *rules, struct error *err);
int rules_load_file(const char *path, struct rules **ret, struct error *err);
void rules_free(struct rules *rules);
static inline void rules_freep(struct rules **r)
{
	rules_free(*r);
}

/* Classifies argv (no shell involved unless argv is itself `sh -c SCRIPT`,
 * whose script is read by core/shellwords and judged by its worst command). */
void rules_classify(const struct rules *rules, char *const *argv, struct rules_verdict *ret);
/* The same for a shell command string as a host hands it over. */
void rules_classify_shell(const struct rules *rules, const char *script, struct rules_verdict *ret);
/* argv with the leading wrappers (env, nice, timeout, ...) removed, each
 * read with its own options; points into argv. Returns argv itself when there
 * are none, or when a wrapper is itself more than read-only (an option
 * airlock does not read, an environment assignment off the safe list,
 * nohup's nohup.out), and NULL when only wrappers remain. */
char *const *rules_strip_wrappers(const struct rules *rules, char *const *argv);
/* The script of `sh -c SCRIPT` (any shell the rules name), or NULL. */
const char *rules_shell_script(const struct rules *rules, char *const *argv);

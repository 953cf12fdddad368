/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A conservative reading of a shell command string, for the places where a
 * host hands airlock a string instead of an argv (hooks, `sh -c SCRIPT`).
 * It never runs anything and never expands anything: it splits the string
 * into simple commands at `;` `&&` `||` `|` `&` and newlines, removes quotes,
 * and marks the script not `plain` at the first construct whose effect it
 * does not model (expansions, substitutions, redirections, globs, subshells,
 * comments, escapes, non-ASCII bytes, an assignment that is not a command's
 * prefix). Callers treat a script that is not plain as unknown, never as
 * safe. `NAME=VALUE cmd` is plain: the assignments are kept apart from argv,
 * for the caller to judge. */

#define SHELL_MAX_BYTES	   65536
#define SHELL_MAX_COMMANDS 256
#define SHELL_MAX_WORDS	   4096

enum shell_op {
	SHELL_OP_END, /* the last command */
	SHELL_OP_SEQ, /* ; or newline */
	SHELL_OP_AND, /* && */
	SHELL_OP_OR, /* || */
	SHELL_OP_PIPE, /* | or |& */
	SHELL_OP_BACKGROUND, /* & */
};

struct shell_command {
	char **argv; /* NULL-terminated, quotes removed; never empty */
	char **assignments; /* NAME=VALUE words before argv[0], or NULL */
	enum shell_op op_after; /* the operator that follows it */
};

/* Ways a script's exit status can hide a failing command. */
enum {
	SHELL_MASK_PIPE = 1 << 0, /* `a | b`: the status is b's */
	SHELL_MASK_OR = 1 << 1, /* `a || b`: a's failure is replaced */
	SHELL_MASK_SEQUENCE = 1 << 2, /* `a; b`: the status is b's */
	SHELL_MASK_BACKGROUND = 1 << 3, /* `a &`: a's status is never seen */
	SHELL_MASK_UNPARSED = 1 << 4, /* not plain: the status cannot be judged */
};

struct shell_script {
	struct shell_command *commands;
	size_t n_commands;
	bool plain;
	char unparsed[64]; /* what made it not plain, e.g. "redirection" */
};

/* Returns 0, -ENOMEM, or -E2BIG past the limits above. A script is always
 * filled as far as it could be read, plain or not. */
int shell_script_parse(const char *text, size_t n, struct shell_script *ret);
void shell_script_release(struct shell_script *s);
unsigned shell_script_masking(const struct shell_script *s);
/* "pipe", "or", "sequence", "background", "unparsed" for one SHELL_MASK_ bit. */
const char *shell_mask_to_string(unsigned bit);

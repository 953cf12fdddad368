/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/error.h"

/* A unified diff (3 lines of context, `@@ -a,b +c,d @@` hunks) of two texts,
 * line by line, as `diff -u` would print its body: lines prefixed ' ', '-'
 * or '+', each ended by '\n' (a last line without one gets "\n\\ No newline
 * at end of file\n" after it). No file header. Texts are bytes; the caller
 * decides whether they are text. -E2BIG when the part that differs (after
 * the common head and tail) has more than DIFF_MAX_CELLS line pairs to
 * compare: the caller summarises instead. *ret is "" when they are equal. */
#define DIFF_MAX_CELLS (4u * 1000u * 1000u)
int diff_unified(const char *a, size_t a_n, const char *b, size_t b_n, char **ret, size_t *ret_n,
		 struct error *err);

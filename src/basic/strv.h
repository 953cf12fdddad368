/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* NULL-terminated arrays of heap strings. */
size_t strv_length(char *const *strv);
void strv_free(char **strv);
static inline void strv_freep(char ***strv)
{
	strv_free(*strv);
}
bool strv_contains(char *const *strv, const char *s);
/* Appends a copy of s; returns 0 or -ENOMEM. *strv may be NULL. */
int strv_push(char ***strv, const char *s);
/* Takes ownership of s (freed on failure). */
int strv_consume(char ***strv, char *s);

/* For environment arrays of "NAME=VALUE": whether entry defines name, and
 * the value of the first entry that does (NULL when none). */
bool strv_env_entry_is(const char *entry, const char *name);
const char *strv_env_get(char *const *env, const char *name);

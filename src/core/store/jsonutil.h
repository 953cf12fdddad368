/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

/* Helpers for strict documents (jobs, policies): every key must be known and
 * every value of the right type; errors name the key with its path. */

/* Fails naming the first key of obj not in allowed (NULL-terminated). */
int jsonutil_check_keys(json_t *obj, const char *where, const char *const *allowed, struct error *err);

/* Parses text strictly (no duplicate keys, no NUL in strings) into an object. */
int jsonutil_parse_object(const char *text, size_t n, json_t **ret, struct error *err);

int jsonutil_get_u64(json_t *v, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		     struct error *err);
int jsonutil_get_bool(json_t *v, const char *name, bool *ret, struct error *err);
/* A JSON array of strings; empty strings allowed only if allow_empty. */
int jsonutil_get_strv(json_t *v, const char *name, bool allow_empty, char ***ret, struct error *err);
int jsonutil_get_string(json_t *v, const char *name, char **ret, struct error *err);

/* The string value at key in obj, or NULL (no key, or not a string). */
static inline const char *jsonutil_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Sorts a JSON array in place with a qsort() comparison of json_t **. */
int jsonutil_array_sort(json_t *array, int (*compare)(const void *, const void *));
/* A NUL-terminated string vector from a JSON array; a non-string element
 * becomes "". NULL when out of memory. */
char **jsonutil_strv_from_array(json_t *array);

/* Serializes v compactly with a final newline; NULL on allocation failure. */
char *jsonutil_dump_line(const json_t *v);

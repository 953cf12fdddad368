/* SPDX-License-Identifier: MIT */
#include "core/store/jsonutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/strv.h"

int jsonutil_check_keys(json_t *obj, const char *where, const char *const *allowed, struct error *err)
{
	const char *key;
	json_t *value;

	json_object_foreach(obj, key, value) {
		bool known = false;
		for (size_t i = 0; allowed[i] && !known; i++)
			known = strcmp(key, allowed[i]) == 0;
		if (!known)
			return error_set(err, EINVAL, "unknown key '%s%s%s'", where,
					 *where ? "." : "", key);
	}
	return 0;
}

int jsonutil_parse_object(const char *text, size_t n, json_t **ret, struct error *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);

	if (!root)
		return error_set(err, EINVAL, "invalid JSON at line %d column %d: %s", jerr.line,
				 jerr.column, jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return error_set(err, EINVAL, "expected a JSON object at the top level");
	}
	*ret = root;
	return 0;
}

int jsonutil_get_u64(json_t *v, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		     struct error *err)
{
	if (!json_is_integer(v))
		return error_set(err, EINVAL, "'%s' must be an integer", name);
	json_int_t i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return error_set(err, ERANGE, "'%s' must be between %llu and %llu, not %lld", name,
				 (unsigned long long)min, (unsigned long long)max, (long long)i);
	*ret = (uint64_t)i;
	return 0;
}

int jsonutil_get_bool(json_t *v, const char *name, bool *ret, struct error *err)
{
	if (!json_is_boolean(v))
		return error_set(err, EINVAL, "'%s' must be true or false", name);
	*ret = json_is_true(v);
	return 0;
}

int jsonutil_get_string(json_t *v, const char *name, char **ret, struct error *err)
{
	if (!json_is_string(v))
		return error_set(err, EINVAL, "'%s' must be a string", name);
	char *s = strdup(json_string_value(v));
	if (!s)
		return error_set(err, ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

int jsonutil_get_strv(json_t *v, const char *name, bool allow_empty, char ***ret, struct error *err)
{
	if (!json_is_array(v))
		return error_set(err, EINVAL, "'%s' must be an array of strings", name);

	cleanup_strv char **strv = calloc(1, sizeof(char *));
	if (!strv)
		return error_set(err, ENOMEM, "out of memory");
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return error_set(err, EINVAL, "'%s[%zu]' must be a string", name, i);
		if (!allow_empty && json_string_length(item) == 0)
			return error_set(err, EINVAL, "'%s[%zu]' is an empty string", name, i);
		if (strv_push(&strv, json_string_value(item)) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(strv);
	return 0;
}

char *jsonutil_dump_line(const json_t *v)
{
	cleanup_free char *s = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *line = realloc(s, n + 2);
	if (!line)
		return NULL;
	s = NULL;
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}

int jsonutil_array_sort(json_t *array, int (*compare)(const void *, const void *))
{
	size_t n = json_array_size(array);
	json_t **items = calloc(n + 1, sizeof(json_t *));

	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		items[i] = json_incref(json_array_get(array, i));
	qsort(items, n, sizeof(json_t *), compare);
	json_array_clear(array);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(array, items[i]);
	free(items);
	return 0;
}

char **jsonutil_strv_from_array(json_t *array)
{
	size_t n = json_array_size(array);
	char **strv = calloc(n + 1, sizeof(char *));

	for (size_t i = 0; strv && i < n; i++) {
		const char *s = json_string_value(json_array_get(array, i));
		strv[i] = strdup(s ? s : "");
		if (!strv[i]) {
			strv_free(strv);
			return NULL;
		}
	}
	return strv;
}

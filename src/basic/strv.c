/* SPDX-License-Identifier: MIT */
#include "basic/strv.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

size_t strv_length(char *const *strv)
{
	size_t n = 0;

	while (strv && strv[n])
		n++;
	return n;
}

void strv_free(char **strv)
{
	for (size_t i = 0; strv && strv[i]; i++)
		free(strv[i]);
	free(strv);
}

bool strv_contains(char *const *strv, const char *s)
{
	for (size_t i = 0; strv && strv[i]; i++)
		if (strcmp(strv[i], s) == 0)
			return true;
	return false;
}

int strv_consume(char ***strv, char *s)
{
	if (!s)
		return -ENOMEM;
	size_t n = strv_length(*strv);
	char **grown = *strv;
	/* Room is what the block holds (malloc_usable_size(): whoever made
	 * it), grown by doubling: a list of n appends costs n reallocs less. */
	if (!grown || malloc_usable_size(grown) < (n + 2) * sizeof(char *)) {
		grown = realloc(*strv, (n < 2 ? 4 : 2 * (n + 2)) * sizeof(char *));
		if (!grown) {
			free(s);
			return -ENOMEM;
		}
	}
	grown[n] = s;
	grown[n + 1] = NULL;
	*strv = grown;
	return 0;
}

int strv_push(char ***strv, const char *s)
{
	return strv_consume(strv, strdup(s));
}

bool strv_env_entry_is(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

const char *strv_env_get(char *const *env, const char *name)
{
	for (size_t i = 0; env && env[i]; i++)
		if (strv_env_entry_is(env[i], name))
			return env[i] + strlen(name) + 1;
	return NULL;
}

/* SPDX-License-Identifier: MIT */
#include "basic/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool path_is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

char *path_join(const char *dir, const char *name)
{
	char *s = NULL;
	const char *sep = dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/";

	return asprintf(&s, "%s%s%s", dir, sep, name) < 0 ? NULL : s;
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

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
	/* Copies, not asprintf(): a file tool's check joins a few hundred. */
	size_t nd = strlen(dir), nn = strlen(name);
	size_t sep = nd != 0 && dir[nd - 1] == '/' ? 0 : 1;
	char *s = malloc(nd + sep + nn + 1);

	if (!s)
		return NULL;
	memcpy(s, dir, nd);
	s[nd] = '/';
	memcpy(s + nd + sep, name, nn + 1);
	return s;
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

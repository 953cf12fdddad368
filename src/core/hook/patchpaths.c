/* SPDX-License-Identifier: MIT */
#include "core/hook/patchpaths.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/strv.h"

static bool patchpaths_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int patchpaths_parse(const char *text, size_t n, char ***ret, struct error *err)
{
	static const char *const markers[] = { "*** Add File: ", "*** Update File: ",
					       "*** Delete File: ", "*** Move to: " };
	cleanup_strv char **paths = calloc(1, sizeof(char *));

	if (!paths)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t at = 0; at < n;) {
		const char *line = text + at;
		const char *nl = memchr(line, '\n', n - at);
		size_t len = nl ? (size_t)(nl - line) : n - at;
		at += len + 1;
		while (len > 0 && patchpaths_space(*line)) {
			line++;
			len--;
		}
		while (len > 0 && patchpaths_space(line[len - 1]))
			len--;
		for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
			size_t m = strlen(markers[i]);
			/* Trimmed, "*** Add File:" alone names nothing. */
			if (len <= m || memcmp(line, markers[i], m) != 0)
				continue;
			const char *p = line + m;
			size_t plen = len - m;
			while (plen > 0 && patchpaths_space(*p)) {
				p++;
				plen--;
			}
			if (plen == 0 || memchr(p, '\0', plen))
				break;
			char *path = strndup(p, plen);
			if (!path || strv_consume(&paths, path) < 0)
				return error_set(err, ENOMEM, "out of memory");
			break;
		}
	}
	*ret = TAKE_PTR(paths);
	return 0;
}

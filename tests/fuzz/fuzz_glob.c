/* SPDX-License-Identifier: MIT */
/* Property: changeset_path_matches() never crashes and stays polynomial on
 * any pattern (libFuzzer's timeout catches exponential backtracking); a
 * pattern without wildcards, within the 512-component limit, matches
 * itself. Input: pattern, NUL, path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot/changeset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	const char *pattern = buf;
	const char *path = buf + strlen(buf) + 1;
	if (path > buf + size)
		path = "";
	(void)changeset_path_matches(pattern, path);
	size_t slashes = 0;
	for (const char *p = pattern; *p; p++)
		slashes += *p == '/';
	if (*pattern && slashes < 500 && !strpbrk(pattern, "*?[") && strcmp(pattern, ".") != 0 &&
	    strspn(pattern, "./") != strlen(pattern) && !changeset_path_matches(pattern, pattern))
		abort();
	free(buf);
	return 0;
}

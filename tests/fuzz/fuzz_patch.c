/* SPDX-License-Identifier: MIT */
/* Property: patchpaths_parse() never crashes on any text, and every path
 * it returns is non-empty, has no newline, and begins and ends with a
 * character that is not whitespace. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/hook/patchpaths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **paths = NULL;
	struct error err = { 0 };

	if (patchpaths_parse((const char *)data, size, &paths, &err) < 0) {
		if (!err.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; paths[i]; i++) {
		size_t n = strlen(paths[i]);
		if (n == 0 || strchr(paths[i], '\n') || paths[i][0] == ' ' || paths[i][n - 1] == ' ')
			abort();
	}
	strv_free(paths);
	return 0;
}

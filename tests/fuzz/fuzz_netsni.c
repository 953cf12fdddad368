/* SPDX-License-Identifier: MIT */
/* Property: netsni_parse() never crashes on any bytes, answers only 0,
 * -EAGAIN, -EPROTO or -EINVAL, and a name it returns is lower case and
 * NUL-terminated. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/net/netsni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = { 0 };
	char name[NETSNI_NAME_MAX + 1];

	if (netsni_load(&err) < 0)
		return 0;
	memset(name, 'x', sizeof(name));
	int r = netsni_parse(data, size, name, &err);
	if (r != 0 && r != -EAGAIN && r != -EPROTO && r != -EINVAL)
		abort();
	if (r == 0) {
		if (!memchr(name, '\0', sizeof(name)))
			abort();
		for (size_t i = 0; name[i]; i++)
			if (name[i] >= 'A' && name[i] <= 'Z')
				abort();
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Property: hostsafety_config_is_inert() never crashes on any input; what
 * it calls inert has no escape outside a comment (so git cannot join lines
 * or read a value differently), and appending a fsmonitor line makes any
 * input hazardous. Input: the config text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/host/hostsafety.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char tail[] = "\n[core]\n\tfsmonitor = id\n";
	const char *text = (const char *)data;
	bool inert = hostsafety_config_is_inert(text, size);

	if (inert && memchr(text, '\\', size) && !memchr(text, '#', size) && !memchr(text, ';', size))
		abort();
	if (size > HOSTSAFETY_CONFIG_MAX_BYTES)
		return 0;
	char *buf = malloc(size + sizeof(tail));
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	memcpy(buf + size, tail, sizeof(tail) - 1);
	if (hostsafety_config_is_inert(buf, size + sizeof(tail) - 1))
		abort();
	free(buf);
	return 0;
}

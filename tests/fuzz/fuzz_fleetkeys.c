/* SPDX-License-Identifier: MIT */
/* Property: the fleet console's keys file parser (core/fleet/fleetlog.h)
 * never crashes, and a file it accepts names each log once, by a name that
 * is not empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fleet/fleetlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_keys keys;
	struct error err = { 0 };

	if (fleet_keys_parse((const char *)data, size, &keys, &err) < 0)
		return 0;
	for (size_t i = 0; i < keys.n; i++) {
		if (!keys.keys[i].name[0])
			abort();
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys.keys[i].name, keys.keys[j].name) == 0)
				abort();
	}
	fleet_keys_release(&keys);
	return 0;
}

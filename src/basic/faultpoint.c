/* SPDX-License-Identifier: MIT */
#include "basic/faultpoint.h"

#if AIRLOCK_TEST_HOOKS

#include <string.h>
#include <unistd.h>

#include "basic/macro.h"

static struct {
	const char *name;
	unsigned remaining; /* hits to let pass before the one that exits */
} faultpoint_armed[4];

void faultpoint_arm(const char *name, unsigned skip)
{
	for (size_t i = 0; i < ARRAY_SIZE(faultpoint_armed); i++)
		if (!faultpoint_armed[i].name || !strcmp(faultpoint_armed[i].name, name)) {
			faultpoint_armed[i].name = name;
			faultpoint_armed[i].remaining = skip;
			return;
		}
}

void faultpoint_hit(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(faultpoint_armed); i++) {
		if (!faultpoint_armed[i].name || strcmp(faultpoint_armed[i].name, name) != 0)
			continue;
		if (faultpoint_armed[i].remaining == 0)
			_exit(137); /* as if killed: nothing flushed, nothing undone */
		faultpoint_armed[i].remaining--;
		return;
	}
}

#endif

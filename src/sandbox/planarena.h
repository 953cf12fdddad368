/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "sandbox/child.h"

/* The early clone (supervise.c, sandbox_prestart()): init is cloned before
 * its plan exists, so the plan reaches it through memory both share, a
 * MAP_SHARED | MAP_ANONYMOUS arena mapped before the clone at the same
 * address in both. The supervisor deep-copies into it what init reads (the
 * child_setup, its config and plan, and every string and array they point
 * to), then tells init on the go pipe; it writes nothing there afterwards.
 * Every pointer of struct child_setup, sandbox_config (its isolation) and
 * isolate_plan that init follows is copied here: a new one must be too. */
struct planarena {
	char *base;
	size_t size, used;
};

/* *ret_setup (in the arena) is setup with everything init reads copied;
 * the caller's callbacks and the parent's bookkeeping (the manifest's
 * lists, the hide and read-only requests) are left out. -E2BIG when it does
 * not fit: the run then takes the order without the early clone. */
int planarena_copy(struct planarena *arena, const struct child_setup *setup,
		   const struct child_setup **ret_setup);

/* SPDX-License-Identifier: MIT */
#pragma once

/* Fault points, in the style of SQLite's fault simulation: a named place in
 * the code where a test build can stop the process as a crash would
 * (_exit(137), no cleanup, no buffered output), to check what the next run
 * makes of what was left. A build without -Dtest_hooks (AIRLOCK_TEST_HOOKS=0)
 * has none: FAULT_POINT() compiles to nothing and faultpoint_arm() does
 * nothing, so no environment reaches them in a release binary.
 *
 * Names are "domain.place" string literals, e.g. "apply.operation". */

#if AIRLOCK_TEST_HOOKS

/* From now on, the hit of fault point NAME after SKIP earlier hits of it
 * exits the process with status 137. Arming a name again replaces its count;
 * a few names can be armed at once (more are ignored). NAME must outlive the
 * process's use of it (a literal). */
void faultpoint_arm(const char *name, unsigned skip);
/* Counts a hit of NAME; exits 137 at the armed one. */
void faultpoint_hit(const char *name);

#define FAULT_POINT(name) faultpoint_hit(name)

#else

static inline void faultpoint_arm(const char *name, unsigned skip)
{
	(void)name;
	(void)skip;
}

#define FAULT_POINT(name) ((void)0)

#endif

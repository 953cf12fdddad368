/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#define ARRAY_SIZE(a)  (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)      ((a) < (b) ? (a) : (b))
#define MAX(a, b)      ((a) > (b) ? (a) : (b))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_     __attribute__((noreturn))
#define _warn_unused_  __attribute__((warn_unused_result))
#define _unused_       __attribute__((unused))

/* A call whose failure changes nothing, the reason at the call site: glibc's
 * fortified headers mark some calls warn_unused_result, which a plain (void)
 * cast does not silence. */
static inline void ignore_result(long r)
{
	(void)r;
}

#define STRLEN(s) (sizeof(s) - 1)

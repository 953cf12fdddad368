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

#define STRLEN(s) (sizeof(s) - 1)

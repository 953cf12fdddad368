/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"

/* A fixed-size error value: no allocation on the error path. Functions that
 * can fail take `struct error *err` last (it may be NULL), return 0 or a
 * negative errno, and add context on the way up with error_prefix(). Only the
 * front ends print err->msg. */
struct error {
	int code; /* positive errno value; 0 = no error */
	char msg[1024]; /* "outer context: inner context: detail" */
};

/* Records an error, replacing any earlier one; returns -code. */
int error_set(struct error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Like error_set() with ": strerror(code)" appended. */
int error_set_errno(struct error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Prepends "context: " to the recorded message; returns -err->code (or -EIO
 * when nothing was recorded). */
int error_prefix(struct error *err, const char *fmt, ...) _printf_(2, 3);

void error_clear(struct error *err);

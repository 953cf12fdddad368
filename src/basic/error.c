/* SPDX-License-Identifier: MIT */
#include "basic/error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int error_code_or_eio(int code)
{
	return code > 0 ? code : EIO;
}

_printf_(4, 0) static void error_vset(struct error *err, int code, bool with_errno, const char *fmt,
				      va_list ap)
{
	err->code = error_code_or_eio(code);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_errno && n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(err->code));
}

int error_set(struct error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;

		va_start(ap, fmt);
		error_vset(err, code, false, fmt, ap);
		va_end(ap);
	}
	return -error_code_or_eio(code);
}

int error_set_errno(struct error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;

		va_start(ap, fmt);
		error_vset(err, code, true, fmt, ap);
		va_end(ap);
	}
	return -error_code_or_eio(code);
}

int error_prefix(struct error *err, const char *fmt, ...)
{
	if (!err)
		return -EIO;

	char context[sizeof(err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(context, sizeof(context), fmt, ap);
	va_end(ap);

	/* "context: msg", cut to fit; built by hand since truncation is intended. */
	char joined[sizeof(err->msg)];
	size_t used = strnlen(context, sizeof(joined) - 1);
	memcpy(joined, context, used);
	if (err->msg[0] && used + 2 < sizeof(joined)) {
		memcpy(joined + used, ": ", 2);
		used += 2;
		size_t rest = MIN(strlen(err->msg), sizeof(joined) - 1 - used);
		memcpy(joined + used, err->msg, rest);
		used += rest;
	}
	joined[used] = '\0';
	memcpy(err->msg, joined, sizeof(err->msg));
	err->code = error_code_or_eio(err->code);
	return -err->code;
}

void error_clear(struct error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* True when data[0..n) is well-formed UTF-8 (no overlongs, no surrogates). */
bool utf8_is_valid(const char *data, size_t n);

/* Copies data into a NUL-terminated heap string, replacing each ill-formed
 * sequence with U+FFFD; NUL bytes are kept (the length is returned).
 * Returns NULL on allocation failure. */
char *utf8_sanitize(const char *data, size_t n, size_t *ret_len);

/* Lowercase hex of n bytes into a buffer of 2n+1 bytes; and back: false
 * unless hex is exactly 2n lowercase hex digits. */
void hex_encode(const void *data, size_t n, char *ret);
bool hex_decode(const char *hex, void *ret, size_t n);

/* Standard base64 (RFC 4648) of data, NUL-terminated, via OpenSSL. */
char *base64_encode(const void *data, size_t n);

/* A POSIX-portable environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
bool env_name_is_valid(const char *name);

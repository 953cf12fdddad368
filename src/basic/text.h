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

/* Copies data into a NUL-terminated heap string that is safe to print on a
 * terminal, for a human reading output a command chose. Escape sequences
 * are dropped whole: ESC and C1 CSI (U+009B) control sequences, OSC, DCS,
 * SOS, PM and APC strings (up to BEL, ST, or the next ESC or newline), and
 * two-byte escapes (ESC c, ESC 7, ESC ( B...). Every other control becomes
 * U+FFFD, visibly: C0 but newline and tab, DEL, C1 (U+0080..U+009F), and
 * the bidi embeddings, overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069), which reorder what is shown. Ill-formed UTF-8 is U+FFFD
 * per byte, so neither overlongs nor bare 8-bit C1 bytes pass.
 * Lines are independent: no sequence spans a newline, so text split at
 * newlines comes out as it does whole. The length goes to *ret_len if set.
 * Returns NULL on allocation failure. */
char *text_for_terminal(const char *data, size_t n, size_t *ret_len);

/* Lowercase hex of n bytes into a buffer of 2n+1 bytes; and back: false
 * unless hex is exactly 2n lowercase hex digits. */
void hex_encode(const void *data, size_t n, char *ret);
bool hex_decode(const char *hex, void *ret, size_t n);

/* Standard base64 (RFC 4648) of data, NUL-terminated, via OpenSSL. */
char *base64_encode(const void *data, size_t n);
/* The bytes of standard base64 text (padded), NUL-terminated, their count
 * in *ret_len; NULL when text is not base64 or memory ran out. */
char *base64_decode(const char *text, size_t *ret_len);

/* A POSIX-portable environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
bool env_name_is_valid(const char *name);

/* SPDX-License-Identifier: MIT */
#include "basic/text.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Returns the length of the well-formed UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_sequence_length(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool utf8_is_valid(const char *data, size_t n)
{
	const unsigned char *s = (const unsigned char *)data;

	for (size_t i = 0; i < n;) {
		size_t len = utf8_sequence_length(s + i, n - i);
		if (len == 0)
			return false;
		i += len;
	}
	return true;
}

char *utf8_sanitize(const char *data, size_t n, size_t *ret_len)
{
	static const char replacement[] = "\xef\xbf\xbd";
	const unsigned char *s = (const unsigned char *)data;
	/* Each bad byte grows to at most 3 bytes. */
	char *out = malloc(3 * n + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_sequence_length(s + i, n - i);
		if (len == 0) {
			memcpy(out + o, replacement, 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return out;
}

/* The code point of a well-formed sequence of len bytes. */
static uint32_t utf8_decode(const unsigned char *s, size_t len)
{
	static const unsigned char lead_mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	uint32_t cp = s[0] & lead_mask[len];

	for (size_t i = 1; i < len; i++)
		cp = (cp << 6) | (s[i] & 0x3f);
	return cp;
}

/* Past a control sequence's parameters, intermediates and final byte, from
 * i, just after its CSI. A byte that fits none of them (another control, a
 * non-ASCII byte) ends it unfinished, and is read as text again. */
static size_t text_skip_csi(const unsigned char *s, size_t n, size_t i)
{
	while (i < n && s[i] >= 0x30 && s[i] <= 0x3f)
		i++;
	while (i < n && s[i] >= 0x20 && s[i] <= 0x2f)
		i++;
	return i < n && s[i] >= 0x40 && s[i] <= 0x7e ? i + 1 : i;
}

/* Past a control string (OSC, DCS, SOS, PM, APC), from i, just after its
 * opener: it ends after BEL, CAN, SUB or C1 ST; before ESC (ESC \ is ST,
 * and any other escape ends the string in a terminal too) and before a
 * newline, which is kept so that no sequence hides the lines after it. */
static size_t text_skip_string(const unsigned char *s, size_t n, size_t i)
{
	for (; i < n; i++) {
		if (s[i] == 0x07 || s[i] == 0x18 || s[i] == 0x1a)
			return i + 1;
		if (s[i] == 0x1b || s[i] == '\n')
			return i;
		if (s[i] == 0xc2 && i + 1 < n && s[i + 1] == 0x9c)
			return i + 2;
	}
	return n;
}

/* Past an escape sequence, from i, just after its ESC. A lone ESC (before
 * a control, a non-ASCII byte, or the end) is dropped by itself. */
static size_t text_skip_escape(const unsigned char *s, size_t n, size_t i)
{
	if (i >= n)
		return n;
	if (s[i] == '[')
		return text_skip_csi(s, n, i + 1);
	if (s[i] && strchr("]PX^_", s[i]))
		return text_skip_string(s, n, i + 1);
	if (s[i] >= 0x20 && s[i] <= 0x2f) {
		while (i < n && s[i] >= 0x20 && s[i] <= 0x2f)
			i++;
		return i < n && s[i] >= 0x30 && s[i] <= 0x7e ? i + 1 : i;
	}
	return s[i] >= 0x30 && s[i] <= 0x7e ? i + 1 : i;
}

static bool text_is_control(uint32_t cp)
{
	return (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

char *text_for_terminal(const char *data, size_t n, size_t *ret_len)
{
	static const char replacement[] = "\xef\xbf\xbd";
	const unsigned char *s = (const unsigned char *)data;
	/* Nothing grows beyond 3 bytes per input byte (a control to U+FFFD). */
	char *out = n < (SIZE_MAX - 1) / 3 ? malloc(3 * n + 1) : NULL;
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_sequence_length(s + i, n - i);
		uint32_t cp = len ? utf8_decode(s + i, len) : 0xfffd;
		if (cp == 0x1b) {
			i = text_skip_escape(s, n, i + 1);
		} else if (cp == 0x9b) {
			i = text_skip_csi(s, n, i + len);
		} else if (cp == 0x90 || cp == 0x98 || cp == 0x9d || cp == 0x9e || cp == 0x9f) {
			i = text_skip_string(s, n, i + len);
		} else if (len == 0 || text_is_control(cp)) {
			memcpy(out + o, replacement, 3);
			o += 3;
			i += len ? len : 1;
		} else {
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
		}
	}
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return out;
}

char *base64_encode(const void *data, size_t n)
{
	if (n > (size_t)INT32_MAX / 2)
		return NULL;
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	if (!out)
		return NULL;
	EVP_EncodeBlock((unsigned char *)out, data, (int)n);
	return out;
}

char *base64_decode(const char *text, size_t *ret_len)
{
	size_t n = strlen(text);

	if (n % 4 != 0 || n > (size_t)INT32_MAX / 2)
		return NULL;
	unsigned char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	int len = EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
	if (len < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	for (size_t i = n; i > 0 && text[i - 1] == '=' && len > 0; i--)
		len--;
	out[len] = '\0';
	*ret_len = (size_t)len;
	return (char *)out;
}

bool env_name_is_valid(const char *name)
{
	if (!*name || (*name >= '0' && *name <= '9'))
		return false;
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

void hex_encode(const void *data, size_t n, char *ret)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *in = data;

	for (size_t i = 0; i < n; i++) {
		ret[2 * i] = digits[in[i] >> 4];
		ret[2 * i + 1] = digits[in[i] & 15];
	}
	ret[2 * n] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool hex_decode(const char *hex, void *ret, size_t n)
{
	unsigned char *out = ret;

	if (!hex || strlen(hex) != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

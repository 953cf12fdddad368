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

/* SPDX-License-Identifier: MIT */
/* Property: text_for_terminal() output is well-formed UTF-8 with nothing a
 * terminal acts on (no C0 but newline and tab, no DEL, no C1, no bidi
 * override), never grows beyond 3 bytes per input byte, keeps every
 * newline, and sanitizing line by line gives the same text as sanitizing
 * the whole: what makes paging at newlines exact. Input: any bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_terminal_check(const char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)out;

	if (!utf8_is_valid(out, len) || strlen(out) != len)
		abort();
	for (size_t i = 0; i < len; i++) {
		if ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f)
			abort();
		if (s[i] == 0xc2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
			abort();
		if (s[i] == 0xe2 && ((s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae) ||
				     (s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len;
	char *whole = text_for_terminal((const char *)data, size, &len);

	if (!whole)
		return 0;
	fuzz_terminal_check(whole, len);
	if (len > 3 * size)
		abort();
	size_t newlines_in = 0, newlines_out = 0;
	for (size_t i = 0; i < size; i++)
		newlines_in += data[i] == '\n';
	for (size_t i = 0; i < len; i++)
		newlines_out += whole[i] == '\n';
	if (newlines_in != newlines_out)
		abort();
	/* line by line, each with its newline */
	size_t at = 0;
	for (size_t start = 0; start < size;) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) + 1 : size, part_len;
		char *part = text_for_terminal((const char *)data + start, end - start, &part_len);
		if (!part)
			break;
		if (at + part_len > len || memcmp(whole + at, part, part_len) != 0)
			abort();
		at += part_len;
		free(part);
		start = end;
	}
	free(whole);
	return 0;
}

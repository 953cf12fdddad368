/* SPDX-License-Identifier: MIT */
/* The canonical reading of a log line (ledger/entryscan.h): one fixed
 * layout, anything else deferred to the strict parser. */
#include "ledger/entryscan.h"
#include "ledger/internal.h"

/* The bytes after a literal, or NULL. */
static const char *entryscan_lit(const char *p, const char *end, const char *lit, size_t n)
{
	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}
#define ENTRYSCAN_LIT(p, end, lit) entryscan_lit(p, end, lit, sizeof(lit) - 1)

/* A byte of a string value that needs no escape: printable ASCII but '"'
 * and '\\'. */
static inline bool entryscan_is_plain(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
}

/* A lowercase hex digit. */
static const bool entryscan_hex[256] = {
	['0'] = true, ['1'] = true, ['2'] = true, ['3'] = true, ['4'] = true, ['5'] = true,
	['6'] = true, ['7'] = true, ['8'] = true, ['9'] = true, ['a'] = true, ['b'] = true,
	['c'] = true, ['d'] = true, ['e'] = true, ['f'] = true,
};

/* A string value that needs no escape, at most max bytes: its start and
 * length, and the bytes after its closing quote; or NULL. */
static const char *entryscan_plain(const char *p, const char *end, size_t max, const char **ret,
				   size_t *ret_n)
{
	const char *start = p;

	while (p < end && entryscan_is_plain((unsigned char)*p))
		p++;
	if (p == end || *p != '"' || (size_t)(p - start) > max)
		return NULL;
	*ret = start;
	*ret_n = (size_t)(p - start);
	return p + 1;
}

/* The same, copied NUL-terminated into ret (max + 1 bytes). */
static const char *entryscan_plain_copy(const char *p, const char *end, char *ret, size_t max)
{
	const char *start;
	size_t n;

	if (!(p = entryscan_plain(p, end, max, &start, &n)))
		return NULL;
	memcpy(ret, start, n);
	ret[n] = '\0';
	return p;
}

static int entryscan_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \uXXXX at p (4 hex digits after the "\u"), or -1. */
static long entryscan_u4(const char *p, const char *end)
{
	long v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int d = entryscan_hexval(p[i]);
		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* A JSON string's body as jansson decodes it without JSON_ALLOW_NUL: no
 * control character or DEL (the line may hold none), escapes of the JSON
 * grammar, \u escapes neither NUL nor an unpaired surrogate, UTF-8 (the
 * same rules as utf8_is_valid(): no overlong form, surrogate or code
 * point past U+10FFFF). The byte after the closing quote, or NULL. */
static const char *entryscan_string(const char *p, const char *end)
{
	const char *start = p;
	bool high = false;

	for (;; p++) {
		/* Most bytes are none of these. */
		while (p < end && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f &&
		       *p != '"' && *p != '\\')
			p++;
		if (p == end)
			return NULL;
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c >= 0x80) {
			high = true;
			continue;
		}
		if (c != '\\')
			return NULL; /* a control character or DEL */
		if (++p == end)
			return NULL;
		if (strchr("\"\\/bfnrt", *p) && *p)
			continue;
		if (*p != 'u')
			return NULL;
		long v = entryscan_u4(p + 1, end);
		if (v <= 0 || (v >= 0xdc00 && v <= 0xdfff))
			return NULL;
		p += 4;
		if (v >= 0xd800 && v <= 0xdbff) {
			if (end - p < 3 || p[1] != '\\' || p[2] != 'u')
				return NULL;
			long lo = entryscan_u4(p + 3, end);
			if (lo < 0xdc00 || lo > 0xdfff)
				return NULL;
			p += 6;
		}
	}
	if (high && !utf8_is_valid(start, (size_t)(p - start)))
		return NULL;
	return p + 1;
}

bool ledger_entry_scan(const struct ledger_schema *schema, const char *line, size_t n,
		       struct ledger_entry *ret, struct ledger_scan_record *rec)
{
	const char *p = line, *end = line + n;

	*rec = (struct ledger_scan_record){ 0 };
	ret->has_record = false;
	if (n == 0 || n > LEDGER_ENTRY_MAX || !(p = ENTRYSCAN_LIT(p, end, "{\"v\":1,\"seq\":")))
		return false;
	/* A JSON integer as jansson writes it: no sign, no leading zero; at
	 * most 18 digits, so it fits jansson's json_int_t. */
	uint64_t seq = 0;
	const char *digits = p;
	while (p < end && *p >= '0' && *p <= '9' && p - digits < 19)
		seq = seq * 10 + (uint64_t)(*p++ - '0');
	if (p == digits || p - digits > 18 || (*digits == '0' && p - digits > 1))
		return false;
	ret->seq = seq;
	const char *kind;
	size_t kind_n;
	if (!(p = ENTRYSCAN_LIT(p, end, ",\"kind\":\"")) ||
	    !(p = entryscan_plain(p, end, 64, &kind, &kind_n)))
		return false;
	ret->kind = -1;
	for (int k = 0; k < schema->n_kinds && ret->kind < 0; k++)
		if (schema->kinds[k][0] == kind[0] &&
		    strncmp(schema->kinds[k], kind, kind_n) == 0 && !schema->kinds[k][kind_n])
			ret->kind = k;
	if (ret->kind < 0)
		return false;
	if (!(p = ENTRYSCAN_LIT(p, end, ",\"id\":\"")) ||
	    !(p = entryscan_plain_copy(p, end, ret->id, LEDGER_ID_MAX)) || !ledger_id_ok(ret->id))
		return false;
	if (!(p = ENTRYSCAN_LIT(p, end, ",\"path\":\"")) ||
	    !(p = entryscan_plain_copy(p, end, ret->path, LEDGER_PATH_MAX)) ||
	    !ledger_path_ok(schema, ret->path))
		return false;
	if (!(p = ENTRYSCAN_LIT(p, end, ",\"sha256\":\"")) || end - p < 65 || p[64] != '"')
		return false;
	for (int i = 0; i < 64; i++)
		if (!entryscan_hex[(unsigned char)p[i]])
			return false;
	memcpy(ret->sha256, p, 64);
	ret->sha256[64] = '\0';
	p += 65;
	if (!(p = ENTRYSCAN_LIT(p, end, ",\"time\":\"")) ||
	    !(p = entryscan_plain_copy(p, end, ret->time, sizeof(ret->time) - 1)))
		return false;
	const char *body = ENTRYSCAN_LIT(p, end, ",\"record\":\"");
	if (body) {
		if (!(p = entryscan_string(body, end)))
			return false;
		*rec = (struct ledger_scan_record){ .text = body, .n = (size_t)(p - 1 - body) };
		ret->has_record = true;
	}
	return end - p == 1 && *p == '}';
}

int ledger_entry_read(const struct ledger_schema *schema, const char *line, size_t n,
		      struct ledger_entry *ret, struct error *err)
{
	struct ledger_scan_record rec;

	*ret = (struct ledger_entry){ 0 };
	if (ledger_entry_scan(schema, line, n, ret, &rec))
		return 0;
	return ledger_entry_parse(schema, line, n, ret, err);
}

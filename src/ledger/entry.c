/* SPDX-License-Identifier: MIT */
/* The ledger's entries: the line format, parsed strictly and written so the parser accepts it. */
#include "ledger/entryscan.h"
#include "ledger/internal.h"

const char *ledger_schema_kind_name(const struct ledger_schema *schema, int kind)
{
	return ledger_kind_known(schema, kind) ? schema->kinds[kind] : "?";
}

int ledger_schema_kind(const struct ledger_schema *schema, const char *name)
{
	for (int k = 0; k < schema->n_kinds; k++)
		if (strcmp(schema->kinds[k], name) == 0)
			return k;
	return -EINVAL;
}

/* ---- entries ------------------------------------------------------------------ */

static bool ledger_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* An id: 1-128 printable ASCII bytes, no '/', no space. */
bool ledger_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > LEDGER_ID_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~' || *s == '/')
			return false;
	return true;
}

/* A clean relative path below the root directory, or the schema's absolute one. */
bool ledger_path_ok(const struct ledger_schema *schema, const char *p)
{
	size_t n = strlen(p);

	if (n == 0 || n > LEDGER_PATH_MAX)
		return false;
	if (schema->absolute_path && strcmp(p, schema->absolute_path) == 0)
		return true;
	if (*p == '/')
		return false;
	for (const char *c = p;;) {
		size_t len = strcspn(c, "/");
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
		if (!*c)
			return true;
		c++;
	}
}

int ledger_entry_parse(const struct ledger_schema *schema, const char *line, size_t n,
		       struct ledger_entry *ret, struct error *err)
{
	*ret = (struct ledger_entry){ 0 };
	if (n == 0 || n > LEDGER_ENTRY_MAX)
		return error_set(err, EBADMSG, "entry of %zu bytes", n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return error_set(err, EBADMSG, "control character at byte %zu", i);
	if (!utf8_is_valid(line, n))
		return error_set(err, EBADMSG, "not UTF-8");
	/* jansson allows white space around the value; an entry has none. */
	if (line[0] != '{' || line[n - 1] != '}')
		return error_set(err, EBADMSG, "not one compact JSON object");
	json_error_t jerr;
	cleanup_with(json_decrefp) json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc))
		return error_set(err, EBADMSG, "not a JSON object: %s", doc ? "" : jerr.text);
	/* The optional eighth field, the record's bytes (docs/ledger.md,
	 * "Entries"): a string without NUL. Its digest is checked by
	 * ledger_entry_record(), the only way its bytes are used. */
	json_t *record = json_object_get(doc, "record");
	size_t fields = json_object_size(doc);
	if (fields != 7 && !(fields == 8 && record))
		return error_set(err, EBADMSG, "%zu fields, an entry has 7 (or 8 with its record)",
				 fields);
	if (record && (!json_is_string(record) ||
		       strlen(json_string_value(record)) != json_string_length(record)))
		return error_set(err, EBADMSG, "bad record");
	json_t *v = json_object_get(doc, "v"), *seq = json_object_get(doc, "seq");
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const char *id = json_string_value(json_object_get(doc, "id"));
	const char *path = json_string_value(json_object_get(doc, "path"));
	const char *sha = json_string_value(json_object_get(doc, "sha256"));
	const char *time = json_string_value(json_object_get(doc, "time"));
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return error_set(err, EBADMSG, "not version 1");
	if (!json_is_integer(seq) || json_integer_value(seq) < 0)
		return error_set(err, EBADMSG, "bad seq");
	if (!kind || ledger_schema_kind(schema, kind) < 0)
		return error_set(err, EBADMSG, "unknown kind");
	if (!id || !ledger_id_ok(id))
		return error_set(err, EBADMSG, "bad id");
	if (!path || !ledger_path_ok(schema, path))
		return error_set(err, EBADMSG, "bad path");
	if (!sha || !ledger_hex64(sha))
		return error_set(err, EBADMSG, "bad sha256");
	if (!time || strlen(time) >= sizeof(ret->time))
		return error_set(err, EBADMSG, "bad time");
	ret->seq = (uint64_t)json_integer_value(seq);
	ret->kind = ledger_schema_kind(schema, kind);
	snprintf(ret->id, sizeof(ret->id), "%s", id);
	snprintf(ret->path, sizeof(ret->path), "%s", path);
	snprintf(ret->sha256, sizeof(ret->sha256), "%s", sha);
	snprintf(ret->time, sizeof(ret->time), "%s", time);
	ret->has_record = record != NULL;
	return 0;
}

int ledger_entry_record(const struct ledger_schema *schema, const char *line, size_t n, char **ret,
			size_t *ret_n, struct error *err)
{
	struct ledger_entry e;
	int r = ledger_entry_parse(schema, line, n, &e, err);
	if (r < 0)
		return r;
	if (!e.has_record)
		return error_set(err, ENODATA, "entry %llu carries no record",
				 (unsigned long long)e.seq);
	cleanup_with(json_decrefp) json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
	json_t *record = json_object_get(doc, "record");
	size_t len = json_string_length(record);
	char hex[SHA256_HEX_SIZE];
	sha256_hex(json_string_value(record), len, hex);
	if (strcmp(hex, e.sha256) != 0)
		return error_set(err, EBADMSG,
				 "entry %llu carries a record that is not the one its sha256 names",
				 (unsigned long long)e.seq);
	char *bytes = malloc(len + 1);
	if (!bytes)
		return error_set(err, ENOMEM, "out of memory");
	memcpy(bytes, json_string_value(record), len + 1);
	*ret = bytes;
	*ret_n = len;
	return 0;
}

bool ledger_record_embeddable(const void *data, size_t n)
{
	const unsigned char *s = data;
	size_t i = 0;

	/* ASCII without NUL, as a receipt is, needs no decoding. */
	while (i < n && (unsigned)(s[i] - 1) < 0x7f)
		i++;
	return n < LEDGER_ENTRY_MAX && !memchr(s + i, '\0', n - i) &&
	       utf8_is_valid((const char *)s + i, n - i);
}

/* The checks ledger_entry_parse() makes of a line's values, made of a new
 * line's values, in its order and with its words. The line is what jansson
 * writes of them: one compact object of the fields in this order, every
 * control character escaped, UTF-8 (json_pack() checks id and path, the
 * record is embeddable). What the parser could still refuse is a line too
 * long or holding a DEL (jansson leaves it as it is), checked on the bytes.
 * So the line is not parsed back; tests/unit/test_ledger.c and
 * tests/fuzz/fuzz_entryscan.c hold every line written to the parser's
 * reading of it. */
static int ledger_entry_check(const struct ledger_schema *schema, uint64_t seq, int kind,
			      const char *id, const char *path, const char *sha, const char *line,
			      size_t n, struct error *err)
{
	if (n > LEDGER_ENTRY_MAX)
		return error_set(err, EBADMSG, "entry of %zu bytes", n);
	const char *del = memchr(line, 0x7f, n);
	if (del)
		return error_set(err, EBADMSG, "control character at byte %zu", (size_t)(del - line));
	if ((json_int_t)seq < 0)
		return error_set(err, EBADMSG, "bad seq");
	if (!ledger_kind_known(schema, kind))
		return error_set(err, EBADMSG, "unknown kind");
	if (!ledger_id_ok(id))
		return error_set(err, EBADMSG, "bad id");
	if (!ledger_path_ok(schema, path))
		return error_set(err, EBADMSG, "bad path");
	if (!ledger_hex64(sha))
		return error_set(err, EBADMSG, "bad sha256");
	return 0;
}

int ledger_entry_format(const struct ledger_schema *schema, uint64_t seq, int kind, const char *id,
			const char *path, const char *sha, const char *record, size_t record_n,
			char **ret, size_t *ret_n, struct error *err)
{
	char now[64];

	if (record && !ledger_record_embeddable(record, record_n))
		return error_set(err, E2BIG, "the record cannot be carried by an entry");
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:s}", "v", 1, "seq", (json_int_t)seq,
			  "kind", ledger_schema_kind_name(schema, kind), "id", id, "path", path,
			  "sha256", sha, "time", now);
	if (!doc)
		return error_set(err, ENOMEM, "out of memory");
	/* The record last: jansson keeps the fields in the order set. Its
	 * bytes are UTF-8 (embeddable, above): not checked again. */
	if (record && json_object_set_new(doc, "record", json_stringn_nocheck(record, record_n)) < 0)
		return error_set(err, ENOMEM, "out of memory");
	/* Into a buffer of the likely size, with room for the newline and a
	 * NUL; once more into one of the exact size when the record escapes to
	 * more. */
	size_t cap = 1024 + 2 * record_n, n;
	cleanup_free char *line = NULL;
	for (;;) {
		line = malloc(cap);
		if (!line)
			return error_set(err, ENOMEM, "out of memory");
		n = json_dumpb(doc, line, cap - 2, JSON_COMPACT);
		if (n == 0)
			return error_set(err, ENOMEM, "out of memory");
		if (n <= cap - 2)
			break;
		free(TAKE_PTR(line));
		cap = n + 2;
	}
	if (record && n > LEDGER_ENTRY_MAX)
		return error_set(err, E2BIG, "the record does not fit in an entry");
	int r = ledger_entry_check(schema, seq, kind, id, path, sha, line, n, err);
	if (r < 0)
		return error_prefix(err, "ledger entry for %s %s",
				    ledger_schema_kind_name(schema, kind), id);
	line[n] = '\n';
	line[n + 1] = '\0';
	*ret = TAKE_PTR(line);
	*ret_n = n + 1;
	return 0;
}

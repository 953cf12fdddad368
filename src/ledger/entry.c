/* SPDX-License-Identifier: MIT */
/* The ledger's entries: the line format, parsed strictly and written so the parser accepts it. */
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
	return n < LEDGER_ENTRY_MAX && !memchr(data, '\0', n) && utf8_is_valid(data, n);
}

/* The line (with its newline) of a new entry; checked by the parser, so
 * every line written is one the verifier accepts. */
int ledger_entry_format(const struct ledger_schema *schema, uint64_t seq, int kind, const char *id,
			const char *path, const char *sha, const char *record, size_t record_n,
			char **ret, size_t *ret_n, struct error *err)
{
	char now[64];

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:s}", "v", 1, "seq", (json_int_t)seq,
			  "kind", ledger_schema_kind_name(schema, kind), "id", id, "path", path,
			  "sha256", sha, "time", now);
	if (!doc)
		return error_set(err, ENOMEM, "out of memory");
	/* The record last: jansson keeps the fields in the order set. */
	if (record && json_object_set_new(doc, "record", json_stringn(record, record_n)) < 0)
		return error_set(err, ENOMEM, "out of memory");
	cleanup_free char *text = json_dumps(doc, JSON_COMPACT);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	size_t n = strlen(text);
	if (record && n > LEDGER_ENTRY_MAX)
		return error_set(err, E2BIG, "the record does not fit in an entry");
	struct ledger_entry check;
	int r = ledger_entry_parse(schema, text, n, &check, err);
	if (r < 0)
		return error_prefix(err, "ledger entry for %s %s",
				    ledger_schema_kind_name(schema, kind), id);
	char *line = realloc(text, n + 2);
	if (!line)
		return error_set(err, ENOMEM, "out of memory");
	text = NULL;
	line[n] = '\n';
	line[n + 1] = '\0';
	*ret = line;
	*ret_n = n + 1;
	return 0;
}

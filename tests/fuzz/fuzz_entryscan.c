/* SPDX-License-Identifier: MIT */
/* Property: the canonical reader of a log line (ledger/entryscan.h) never
 * disagrees with the strict parser. Whatever the input (one line, without
 * its newline), when ledger_entry_scan() accepts it, ledger_entry_parse()
 * accepts it with the same values; when it accepts a line with a record
 * field, jansson parses the whole line as an object of the 8 fields (no
 * duplicate key) whose record is a string, the line without that field is
 * an entry ledger_entry_parse() accepts with the same values, and the field
 * is the last; and ledger_entry_read() always returns what
 * ledger_entry_parse() does, with the same values. The writer, with the
 * input as a record: ledger_entry_format() writes a line the parser reads
 * back with the values given and the record's bytes, or refuses only bytes
 * no entry may carry (-E2BIG) or a DEL, which the line may not hold
 * (-EBADMSG). Aborts otherwise. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/ledger.h"
#include "ledger/entryscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_same_entry(const struct ledger_entry *a, const struct ledger_entry *b)
{
	return a->seq == b->seq && a->kind == b->kind && strcmp(a->id, b->id) == 0 &&
	       strcmp(a->path, b->path) == 0 && strcmp(a->sha256, b->sha256) == 0 &&
	       strcmp(a->time, b->time) == 0 && a->has_record == b->has_record;
}

/* The record field: the line is a JSON object of 8 fields whose last is
 * the string record, and without it, an entry with the values read. */
static void fuzz_check_record(const char *line, size_t n, const struct ledger_scan_record *rec,
			      const struct ledger_entry *scanned)
{
	static const char field[] = ",\"record\":\"";
	const char *at = rec->text - (sizeof(field) - 1);
	if (at < line || memcmp(at, field, sizeof(field) - 1) != 0 ||
	    rec->text + rec->n + 2 != line + n || memcmp(rec->text + rec->n, "\"}", 2) != 0)
		abort();
	json_error_t jerr;
	json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	json_t *record = json_object_get(doc, "record");
	if (!json_is_object(doc) || json_object_size(doc) != 8 || !json_is_string(record))
		abort();
	json_decref(doc);
	size_t m = (size_t)(at - line);
	char *without = malloc(m + 1);
	if (!without)
		abort();
	memcpy(without, line, m);
	without[m] = '}';
	struct ledger_entry parsed, bare = *scanned;
	struct error err;
	bare.has_record = false;
	if (ledger_entry_parse(&ledger_state_schema, without, m + 1, &parsed, &err) < 0 ||
	    !fuzz_same_entry(&bare, &parsed))
		abort();
	free(without);
}

static void fuzz_format(const char *record, size_t size)
{
	static const char sha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	struct ledger_entry parsed, read;
	struct error err;
	char *line = NULL;
	size_t n;

	if (!record)
		record = ""; /* an empty input is an empty record */
	int r = ledger_entry_format(&ledger_state_schema, 7, LEDGER_RECEIPT, "42",
				    "receipts/42.json", sha, record, size, &line, &n, &err);
	if (r < 0) {
		if (r == -E2BIG || (r == -EBADMSG && memchr(record, 0x7f, size)))
			return;
		abort();
	}
	if (n < 2 || line[n - 1] != '\n' || memchr(line, '\n', n - 1) ||
	    ledger_entry_parse(&ledger_state_schema, line, n - 1, &parsed, &err) < 0 ||
	    parsed.seq != 7 || parsed.kind != LEDGER_RECEIPT || strcmp(parsed.id, "42") != 0 ||
	    strcmp(parsed.path, "receipts/42.json") != 0 || strcmp(parsed.sha256, sha) != 0 ||
	    !parsed.has_record ||
	    ledger_entry_read(&ledger_state_schema, line, n - 1, &read, &err) < 0 ||
	    !fuzz_same_entry(&read, &parsed))
		abort();
	json_t *doc = json_loadb(line, n - 1, JSON_REJECT_DUPLICATES, NULL);
	json_t *got = json_object_get(doc, "record");
	if (!json_is_string(got) || json_string_length(got) != size ||
	    memcmp(json_string_value(got), record, size) != 0)
		abort();
	json_decref(doc);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	struct ledger_entry scanned, parsed, read;
	struct ledger_scan_record rec;
	struct error err;

	int p = ledger_entry_parse(&ledger_state_schema, line, size, &parsed, &err);
	if (ledger_entry_scan(&ledger_state_schema, line, size, &scanned, &rec)) {
		if (rec.text)
			fuzz_check_record(line, size, &rec, &scanned);
		if (p < 0 || !fuzz_same_entry(&scanned, &parsed))
			abort();
	}
	int r = ledger_entry_read(&ledger_state_schema, line, size, &read, &err);
	if (r != p || (r == 0 && !fuzz_same_entry(&read, &parsed)))
		abort();
	fuzz_format(line, size);
	return 0;
}

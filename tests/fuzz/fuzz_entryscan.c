/* SPDX-License-Identifier: MIT */
/* Property: the canonical reader of a log line (ledger/entryscan.h) never
 * disagrees with the strict parser. Whatever the input (one line, without
 * its newline), when ledger_entry_scan() accepts it, ledger_entry_parse()
 * accepts it with the same values; when it accepts a line with a record
 * field, jansson parses the whole line as an object of the 8 fields (no
 * duplicate key) whose record is a string, the line without that field is
 * an entry ledger_entry_parse() accepts with the same values, and the field
 * is the last; and ledger_entry_read() always returns what
 * ledger_entry_parse() does, with the same values. Aborts otherwise. */
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
	return 0;
}

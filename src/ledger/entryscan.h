/* SPDX-License-Identifier: MIT */
/* A reader of the log's own line format, for the readers of the whole log
 * (verify): not a JSON parser. It recognises, byte for byte, the one layout
 * ledger_entry_format() writes (compact, fields in the order v, seq, kind,
 * id, path, sha256, time, optionally a last field "record" holding a JSON
 * string) with values that need no escape, and defers every other line to
 * the strict ledger_entry_parse(). A line it accepts is one that
 * ledger_entry_parse() accepts with the same values: tests/fuzz/
 * fuzz_entryscan.c runs both on every input and aborts on a disagreement. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "ledger/ledger.h"

/* The record field's string, as it stands in the line (between its
 * quotes, still escaped; checked to be a string jansson decodes), or NULL
 * when the line has none. */
struct ledger_scan_record {
	const char *text;
	size_t n;
};

/* True, with the entry in *ret and the record field in *rec, when line (n
 * bytes, without its newline) is a canonical entry; false when it is not
 * (the caller parses it with ledger_entry_parse(), which decides). */
bool ledger_entry_scan(const struct ledger_schema *schema, const char *line, size_t n,
		       struct ledger_entry *ret, struct ledger_scan_record *rec);

/* ledger_entry_parse()'s verdict and values, taking the canonical reading
 * when the line has one (a line carrying its record included: the
 * record's bytes are read only by ledger_entry_record(), which checks them
 * against sha256): what the readers of the whole log call per line. */
int ledger_entry_read(const struct ledger_schema *schema, const char *line, size_t n,
		      struct ledger_entry *ret, struct error *err);

/* The line (with its newline, NUL-terminated) of a new entry stamped with
 * the time now: the layout ledger_entry_scan() recognises when no value
 * needs an escape. With record (NULL: none; bytes ledger_record_embeddable()
 * accepts, else -E2BIG), the line carries its bytes; -E2BIG when the line
 * would be longer than LEDGER_ENTRY_MAX. A value ledger_entry_parse() would
 * refuse is refused (-EBADMSG, with its words): every line formatted is one
 * the parser reads back with these values. */
int ledger_entry_format(const struct ledger_schema *schema, uint64_t seq, int kind, const char *id,
			const char *path, const char *sha, const char *record, size_t record_n,
			char **ret, size_t *ret_n, struct error *err);

/* SPDX-License-Identifier: MIT */
/* bench/report.sh's state directory: N runs committed through the real
 * commit path, fast. A template receipt (one `airlock run` really wrote) is
 * copied N times with a new id (store_allocate_id()), start and end times,
 * duration, argv, workspace and, for one in ten, a failed exit; each copy is
 * written by store_write_receipt() (store_commit(): the file, then its
 * ledger entry) and indexed by store_append_index() with
 * receipt_index_entry(), as run does. What it skips is the command itself
 * and the gate (no failure is opened): the report reads the same files a
 * real session leaves. Not durable (output.fsync_receipts off), which the
 * policy allows and which only the writing's speed depends on.
 *
 *   report_gen STATE_DIR TEMPLATE.json N */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "core/record/receipt.h"
#include "core/store/jsonutil.h"
#include "core/store/store.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: report_gen STATE_DIR TEMPLATE.json N\n");
		return 2;
	}
	struct error err = { 0 };
	cleanup_free char *text = NULL;
	size_t n;
	if (file_read_capped(AT_FDCWD, argv[2], 1 << 20, &text, &n, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	json_t *tmpl = json_loadb(text, n, 0, NULL);
	unsigned long count = strtoul(argv[3], NULL, 10);
	struct store *store = NULL;
	if (!tmpl || store_open(argv[1], true, &store, &err) < 0) {
		fprintf(stderr, "template or store: %s\n", err.msg);
		return 1;
	}
	store_set_durable(store, false);
	/* One run every 0.8 s from a fixed start. */
	uint64_t t0 = 1796400000ull * 1000000000ull; /* 2026-12-04T16:00:00Z */
	static const char *const cmds[][4] = {
		{ "make", "-j2", NULL },	{ "cargo", "test", "--quiet", NULL },
		{ "npm", "run", "lint", NULL }, { "pytest", "-q", "tests/", NULL },
		{ "git", "status", NULL },
	};
	for (unsigned long i = 0; i < count; i++) {
		uint64_t id;
		if (store_allocate_id(store, &id, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		json_t *r = json_deep_copy(tmpl);
		char start[32], end[32], cwd[64];
		uint64_t dur = 5 + (i * 7919) % 4000, at = t0 + (uint64_t)i * 800000000ull;
		clock_format_rfc3339(at, start, sizeof(start));
		clock_format_rfc3339(at + dur * 1000000ull, end, sizeof(end));
		snprintf(cwd, sizeof(cwd), "/home/dev/project-%lu", i % 7);
		bool failed = i % 10 == 3;
		json_t *av = json_array();
		for (const char *const *c = cmds[i % 5]; *c; c++)
			json_array_append_new(av, json_string(*c));
		json_object_set_new(r, "id", json_integer((json_int_t)id));
		json_object_set_new(r, "argv", av);
		json_object_set_new(r, "cwd", json_string(cwd));
		json_object_set_new(r, "started_at", json_string(start));
		json_object_set_new(r, "ended_at", json_string(end));
		json_object_set_new(r, "duration_ms", json_integer((json_int_t)dur));
		json_object_set_new(r, "exit_code", json_integer(failed ? 2 : 0));
		json_object_set_new(r, "match_expected", json_boolean(!failed));
		cleanup_free char *doc = json_dumps(r, JSON_COMPACT);
		json_t *entry = receipt_index_entry(r);
		cleanup_free char *line = entry ? jsonutil_dump_line(entry) : NULL;
		if (!doc || !line || store_write_receipt(store, id, doc, strlen(doc), &err) < 0 ||
		    store_append_index(store, line, &err) < 0) {
			fprintf(stderr, "receipt %llu: %s\n", (unsigned long long)id, err.msg);
			return 1;
		}
		json_decref(entry);
		json_decref(r);
	}
	store_free(store);
	json_decref(tmpl);
	return 0;
}

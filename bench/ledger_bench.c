/* SPDX-License-Identifier: MIT */
/* The ledger's benchmarks (bench/ledger.sh):
 *   ledger_bench append STATE N     N durable appends (fdatasync each) through
 *                                   ledger_append(), as store_commit() makes
 *                                   them; prints appends per second
 *   ledger_bench generate STATE N   a log of N entries for one record
 *                                   (bench/record), written without fsync,
 *                                   then one signed checkpoint
 *   ledger_bench generate-distinct STATE N   the same with one path per
 *                                   entry (receipts bench/r/<id>.json, whose
 *                                   files do not exist), as a real ledger's
 *                                   receipts are: for the lookups
 *   ledger_bench receipts STATE N TEMPLATE   N receipts committed through
 *                                   store_write_receipt() (the one commit
 *                                   path, without fsync), each the receipt
 *                                   TEMPLATE (a real run's) with its own id
 *                                   and times: for `ledger verify`
 *   ledger_bench scan STATE         the lines of STATE's log read by the
 *                                   canonical reader (ledger/entryscan.h)
 *                                   and by the strict parser, and the same
 *                                   lines carrying their record (the field
 *                                   "record": the file's bytes as a JSON
 *                                   string) by the reader and by jansson;
 *                                   prints ns per line for each */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fileio.h"
#include "basic/sha256.h"
#include "core/store/ledger.h"
#include "core/store/store.h"
#include "ledger/entryscan.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ns per line of fn over the lines (each without its newline). */
static double bench_lines(char **lines, size_t *lens, size_t n, int (*fn)(const char *, size_t))
{
	double t0 = now_s();
	int ok = 0;

	for (int round = 0; round < 5; round++)
		for (size_t i = 0; i < n; i++)
			ok += fn(lines[i], lens[i]);
	double ns = (now_s() - t0) * 1e9 / (5.0 * (double)n);
	if (ok != 5 * (int)n)
		fprintf(stderr, "%d of %zu lines not accepted\n", 5 * (int)n - ok, 5 * n);
	return ns;
}

static int bench_scan(const char *line, size_t n)
{
	struct ledger_entry e;
	struct ledger_scan_record rec;

	return ledger_entry_scan(&ledger_state_schema, line, n, &e, &rec);
}

static int bench_parse(const char *line, size_t n)
{
	struct ledger_entry e;
	struct error err;

	return ledger_entry_parse(&ledger_state_schema, line, n, &e, &err) == 0;
}

/* What the strict parser costs on a line with a record: jansson's parse of
 * it (the rest of ledger_entry_parse() is the same either way). */
static int bench_jansson(const char *line, size_t n)
{
	json_error_t jerr;
	json_t *doc = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	int ok = json_is_object(doc);

	json_decref(doc);
	return ok;
}

static int bench_scan_main(const char *state)
{
	char path[4096];
	char *log = NULL;
	size_t size = 0;
	struct error err = { 0 };
	snprintf(path, sizeof(path), "%s/ledger/log", state);
	if (file_read_capped(AT_FDCWD, path, 1 << 30, &log, &size, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	size_t cap = 1 << 16, n = 0, nrec = 0;
	char **lines = calloc(cap, sizeof(*lines)), **recs = calloc(cap, sizeof(*recs));
	size_t *lens = calloc(cap, sizeof(*lens)), *reclens = calloc(cap, sizeof(*reclens));
	for (char *p = log, *nl; n < cap && (nl = memchr(p, '\n', size - (size_t)(p - log)));
	     p = nl + 1) {
		lines[n] = p;
		lens[n] = (size_t)(nl - p);
		struct ledger_entry e;
		char *text = NULL;
		size_t tn = 0;
		if (bench_parse(p, lens[n]) &&
		    ledger_entry_parse(&ledger_state_schema, p, lens[n], &e, &err) == 0 &&
		    e.kind == LEDGER_RECEIPT &&
		    file_read_capped(AT_FDCWD,
				     (snprintf(path, sizeof(path), "%s/%s", state, e.path), path),
				     1 << 20, &text, &tn, &err) == 0) {
			json_t *str = json_stringn(text, tn);
			char *quoted = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
			json_decref(str);
			if (quoted && asprintf(&recs[nrec], "%.*s,\"record\":%s}", (int)lens[n] - 1,
					       p, quoted) > 0)
				reclens[nrec] = strlen(recs[nrec]), nrec++;
			free(quoted);
		}
		free(text);
		n++;
	}
	printf("%zu lines: canonical reader %.0f ns, strict parser %.0f ns per line\n", n,
	       bench_lines(lines, lens, n, bench_scan), bench_lines(lines, lens, n, bench_parse));
	if (nrec)
		printf("%zu lines with their record (%zu bytes each on average): canonical reader %.0f ns, jansson %.0f ns per line\n",
		       nrec, (reclens[0] + reclens[nrec - 1]) / 2,
		       bench_lines(recs, reclens, nrec, bench_scan),
		       bench_lines(recs, reclens, nrec, bench_jansson));
	return 0;
}

int main(int argc, char **argv)
{
	struct store *store = NULL;
	struct error err = { 0 };
	char hex[SHA256_HEX_SIZE];

	if (argc == 3 && strcmp(argv[1], "scan") == 0)
		return bench_scan_main(argv[2]);
	if (argc < 4 || store_open(argv[2], true, &store, &err) < 0) {
		fprintf(stderr,
			"usage: ledger_bench append|generate|generate-distinct STATE N, or receipts STATE N TEMPLATE %s\n",
			err.msg);
		return 2;
	}
	long n = atol(argv[3]);
	sha256_hex("x\n", 2, hex);
	/* The record every entry names, so the state directory verifies. */
	(void)mkdirat(store_dir_fd(store), "bench", 0700);
	(void)mkdirat(store_dir_fd(store), "ledger", 0700);
	int fd = openat(store_dir_fd(store), "bench/record", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "x\n", 2) != 2)
		return 1;
	close(fd);
	if (strcmp(argv[1], "receipts") == 0 && argc == 5) {
		json_error_t jerr;
		json_t *tmpl = json_load_file(argv[4], 0, &jerr);
		if (!tmpl) {
			fprintf(stderr, "%s: %s\n", argv[4], jerr.text);
			return 1;
		}
		store_set_durable(store, false);
		for (long i = 0; i < n; i++) {
			uint64_t id;
			char when[64];
			snprintf(when, sizeof(when), "2026-12-05T%02ld:%02ld:%02ld.%03ldZ",
				 i / 3600000 % 24, i / 60000 % 60, i / 1000 % 60, i % 1000);
			if (store_allocate_id(store, &id, &err) < 0)
				break;
			json_object_set_new(tmpl, "id", json_integer((json_int_t)id));
			json_object_set_new(tmpl, "started_at", json_string(when));
			json_object_set_new(tmpl, "ended_at", json_string(when));
			char *text = json_dumps(tmpl, JSON_INDENT(2));
			int r = text ? store_write_receipt(store, id, text, strlen(text), &err) : -1;
			free(text);
			if (r < 0)
				break;
		}
		json_decref(tmpl);
		if (err.msg[0]) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		store_free(store);
		return 0;
	}
	if (argc != 4)
		return 2;
	if (strcmp(argv[1], "append") == 0) {
		double t0 = now_s();
		for (long i = 0; i < n; i++)
			if (ledger_append(store_ledger(store), LEDGER_PERMIT_TRANSITION, "bench",
					  "bench/record", hex, false, NULL, &err) < 0) {
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		printf("%.0f\n", (double)n / (now_s() - t0));
		return 0;
	}
	/* generate */
	char path[4096];
	snprintf(path, sizeof(path), "%s/ledger/log", argv[2]);
	FILE *log = fopen(path, "w");
	if (!log)
		return 1;
	bool distinct = strcmp(argv[1], "generate-distinct") == 0;
	for (long i = 0; distinct && i < n; i++)
		fprintf(log,
			"{\"v\":1,\"seq\":%ld,\"kind\":\"receipt\",\"id\":\"%ld\",\"path\":\"bench/r/%ld.json\",\"sha256\":\"%s\",\"time\":\"2026-11-30T00:00:00.000Z\"}\n",
			i, 1000000000 + i, 1000000000 + i, hex);
	for (long i = 0; !distinct && i < n; i++)
		fprintf(log,
			"{\"v\":1,\"seq\":%ld,\"kind\":\"permit-transition\",\"id\":\"bench\",\"path\":\"bench/record\",\"sha256\":\"%s\",\"time\":\"2026-11-30T00:00:00.000Z\"}\n",
			i, hex);
	if (fclose(log) != 0)
		return 1;
	if (ledger_checkpoint(store_ledger(store), &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	store_free(store);
	return 0;
}

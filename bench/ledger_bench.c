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
 *                                   and times: for `ledger verify` */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/sha256.h"
#include "core/store/ledger.h"
#include "core/store/store.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct store *store = NULL;
	struct error err = { 0 };
	char hex[SHA256_HEX_SIZE];

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

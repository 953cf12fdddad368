/* SPDX-License-Identifier: MIT */
/* Property: gate_close_check() never crashes on any close record, and a
 * record it accepts is one airlock could have written: for the fixture
 * below only the `rerun` close of failure 1 by receipt 2, with both
 * receipts' digests, holds. A rejection always says why. The state
 * directory is made once per process, in /tmp, and removed at exit. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fileio.h"
#include "core/gate/gate.h"
#include "core/store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[] = "/tmp/airlock-fuzz-close-XXXXXX";
static struct store *fuzz_store;

static void fuzz_cleanup(void)
{
	store_free(fuzz_store);
	(void)remove_tree_at(AT_FDCWD, fuzz_dir);
}

/* Receipt 1 failed `make`; receipt 2, the same argv, succeeded and closed
 * it by rerun. Their bytes are fixed, so the corpus can name their digests. */
static struct store *fuzz_open_store(void)
{
	static const char failed[] =
		"{\"id\":1,\"argv\":[\"make\"],\"cwd\":\"/w\",\"status\":\"exited\",\"exit_code\":2,"
		"\"match_expected\":false}\n";
	static const char closing[] =
		"{\"id\":2,\"argv\":[\"make\"],\"cwd\":\"/w\",\"status\":\"exited\",\"exit_code\":0,"
		"\"match_expected\":true,\"gate\":{\"scope\":\"/w\",\"opened\":false,\"verified\":true,"
		"\"closes\":[{\"receipt\":1,\"move\":\"rerun\"}]}}\n";
	struct error err = { 0 };

	if (fuzz_store)
		return fuzz_store;
	if (!mkdtemp(fuzz_dir) || store_open(fuzz_dir, true, &fuzz_store, &err) < 0 ||
	    store_write_receipt(fuzz_store, 1, failed, strlen(failed), &err) < 0 ||
	    store_write_receipt(fuzz_store, 2, closing, strlen(closing), &err) < 0) {
		fprintf(stderr, "fuzz_close: cannot make its state directory: %s\n", err.msg);
		abort();
	}
	atexit(fuzz_cleanup);
	return fuzz_store;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store *store = fuzz_open_store();
	json_t *record = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	struct error why = { 0 };

	if (!json_is_object(record)) {
		json_decref(record);
		return 0;
	}
	/* Also a record the reader refuses: the check says why it does not hold. */
	struct gate_close_record typed;
	(void)gate_close_record_from_json(record, &typed, &why);
	why = (struct error){ 0 };
	for (uint64_t id = 1; id <= 3; id++) {
		int r = gate_close_check(store, id, &typed, NULL, &why);
		if (r < 0 && !why.msg[0])
			abort();
		if (r == 0 && (id != 1 || strcmp(json_string_value(json_object_get(record, "move")),
						 "rerun") != 0))
			abort();
		why = (struct error){ 0 };
	}
	gate_close_record_release(&typed);
	json_decref(record);
	return 0;
}

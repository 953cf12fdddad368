/* SPDX-License-Identifier: MIT */
/* Property: reading a receipt back for a re-run (receipt_rerun_from_json,
 * airlock run --fixes) never crashes on any document, and either fills a
 * re-run with a non-empty argv and a cwd or fails with a message. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/record/receipt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	struct receipt_rerun rr = { 0 };
	struct error err = { 0 };

	if (!doc)
		return 0;
	int r = receipt_rerun_from_json(doc, &rr, &err);
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0 && (!rr.argv || !rr.argv[0] || !rr.cwd || rr.n_expected == 0))
		abort();
	receipt_rerun_release(&rr);
	json_decref(doc);
	return 0;
}

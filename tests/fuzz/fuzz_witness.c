/* SPDX-License-Identifier: MIT */
/* Property: the witness's add-checkpoint body parser (ledger/witness.h)
 * never crashes, and a body it accepts is in the one canonical form:
 * formatting what it parsed gives the same bytes back (a decimal without
 * leading zero, canonical base64 hashes, at most 63 of them, no proof from
 * size 0, a checkpoint after the blank line). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/witness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct witness_request q;
	struct error err = { 0 };

	if (witness_request_parse((const char *)data, size, &q, &err) < 0)
		return 0;
	if (q.n_proof > WITNESS_PROOF_MAX || q.checkpoint_n == 0 || (q.old_size == 0 && q.n_proof > 0))
		abort();
	size_t n;
	char *again = witness_request_format(q.old_size, (const merkle_hash *)q.proof, q.n_proof,
					     q.checkpoint, q.checkpoint_n, &n);
	if (!again)
		return 0;
	if (n != size || memcmp(again, data, size) != 0)
		abort();
	free(again);
	return 0;
}

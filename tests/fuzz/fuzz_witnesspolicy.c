/* SPDX-License-Identifier: MIT */
/* Property: the witness policy parser (ledger/witness.h) never crashes, and
 * a policy it accepts is whole: a log, a quorum that is none or names a
 * witness or group defined, groups whose members were defined before them
 * (no cycle) with a threshold between 1 and their size, no key twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/witness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct witness_policy policy;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct witness_policy *p = &policy;
	struct error err = { 0 };

	if (witness_policy_parse((const char *)data, size, p, &err) < 0)
		return 0;
	if (!p->has_log || p->n_witnesses > WITNESS_POLICY_WITNESSES ||
	    p->n_groups > WITNESS_POLICY_GROUPS)
		abort();
	if (p->quorum != INT32_MIN &&
	    (p->quorum >= (int)p->n_witnesses || -1 - p->quorum >= (int)p->n_groups))
		abort();
	for (size_t i = 0; i < p->n_groups; i++) {
		const struct witness_policy_group *g = &p->groups[i];
		if (g->threshold < 1 || g->threshold > g->n_members)
			abort();
		for (size_t j = 0; j < g->n_members; j++)
			if (g->members[j] >= (int)p->n_witnesses || -1 - g->members[j] >= (int)i)
				abort();
	}
	for (size_t i = 0; i < p->n_witnesses; i++)
		for (size_t j = 0; j < i; j++)
			if (memcmp(p->witnesses[i].key, p->witnesses[j].key, 32) == 0)
				abort();
	return 0;
}

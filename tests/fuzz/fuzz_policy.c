/* SPDX-License-Identifier: MIT */
/* Property: policy_parse() never crashes, and an accepted policy is
 * coherent: its default timeout fits under its maximum. */
#include <stdint.h>
#include <stdlib.h>

#include "core/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy *p = NULL;
	struct error err = { 0 };

	if (policy_parse((const char *)data, size, "fuzz", &p, &err) == 0) {
		if (p->default_timeout_ms > p->max_timeout_ms || p->default_timeout_ms == 0)
			abort();
		policy_free(p);
	} else if (!err.msg[0]) {
		abort();
	}
	return 0;
}

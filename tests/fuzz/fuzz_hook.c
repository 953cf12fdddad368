/* SPDX-License-Identifier: MIT */
/* Property: hook_handle() never crashes on any payload, and either answers
 * or fails with a message (which the front end turns into a block). The
 * state directory does not exist, so nothing is written. */
#include <stdint.h>
#include <stdlib.h>

#include "core/hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct hook_context ctx = { .state_dir = "/nonexistent/airlock-fuzz-state" };
	struct hook_outcome out;
	struct error err = { 0 };

	if (size == 0)
		return 0;
	enum hook_dialect dialect = (enum hook_dialect)(data[0] % 3);
	enum hook_event event = data[0] & 4 ? HOOK_STOP : HOOK_PRE_TOOL_USE;
	int r = hook_handle(&ctx, dialect, event, (const char *)data + 1, size - 1, &out, &err);
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0 && out.decision != HOOK_PASS && out.decision != HOOK_BLOCK)
		abort();
	return 0;
}

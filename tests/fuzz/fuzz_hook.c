/* SPDX-License-Identifier: MIT */
/* Property: hook_handle() never crashes on any payload, and either answers
 * or fails with a message (which the front end turns into a block). The
 * state directory does not exist, so nothing is written. With bit 8 of the
 * first byte, the exit status reading of post-tool-use instead; with bit
 * 16, routing on (the routed form, airlock's own commands run as itself). */
#include <stdint.h>
#include <stdlib.h>

#include "core/hook/hook.h"
#include "core/session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct session_options so = { .state_dir = "/nonexistent/airlock-fuzz-state" };
	static const struct hook_route routing = { .airlock = "/nonexistent/airlock",
						   .state_dir = true };
	struct session s;
	struct hook_outcome out;
	struct error err = { 0 };

	if (size == 0)
		return 0;
	const struct agent_host *host = agenthost_at(data[0] % agenthost_count());
	/* Bit 8: what a post-tool-use payload says of the exit status (Gemini's
	 * llmContent is read as text). */
	if (data[0] & 8) {
		int kind, code;
		int r = hook_report_status(host, (const char *)data + 1, size - 1, &kind, &code, &err);
		if ((r < 0 && !err.msg[0]) || (r == 0 && (kind < 0 || kind > 3)))
			abort();
		return 0;
	}
	enum hook_event event = data[0] & 4 ? HOOK_STOP : HOOK_PRE_TOOL_USE;
	if (session_open(&s, &so, &err) < 0)
		abort();
	int r = hook_handle(&s, data[0] & 16 ? &routing : NULL, host, event, (const char *)data + 1,
			    size - 1, &out, &err);
	session_free(&s);
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0 && out.decision != HOOK_PASS && out.decision != HOOK_BLOCK)
		abort();
	hook_outcome_release(&out);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Property: job_parse() never crashes, and whatever it accepts is a job
 * airlock can run: a non-empty argv of non-empty strings, an absolute cwd,
 * a positive timeout, exit statuses in 0-255. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/run/job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_request req;
	struct error err = { 0 };

	run_request_init(&req);
	int r = job_parse((const char *)data, size, &req, &err);
	if (r == 0) {
		if (!req.argv || !req.argv[0])
			abort();
		for (size_t i = 0; req.argv[i]; i++)
			if (!req.argv[i][0])
				abort();
		if (req.cwd && req.cwd[0] != '/')
			abort();
		if (req.has_timeout && req.timeout_ms == 0)
			abort();
		for (size_t i = 0; i < req.n_expected; i++)
			if (req.expected[i] < 0 || req.expected[i] > 255)
				abort();
	} else if (err.msg[0] == '\0' || r >= 0) {
		abort(); /* every rejection names its reason */
	}
	run_request_release(&req);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "core/record/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"

void run_request_init(struct run_request *req)
{
	*req = (struct run_request){
		.source = "run",
		.tee_stdout_fd = -1,
		.tee_stderr_fd = -1,
	};
}

void run_request_release(struct run_request *req)
{
	strv_free(req->argv);
	strv_free(req->env_allow);
	strv_free(req->env_force);
	free(req->cwd);
	free(req->job_id);
	free(req->rationale);
	free(req->job_sha256);
	free(req->workspace);
	strv_free(req->expect_paths);
	strv_free(req->expect_delete);
	run_request_init(req);
}

void run_request_set_invalid(struct run_request *req, const char *fmt, ...)
{
	va_list ap;

	if (run_request_is_invalid(req))
		return;
	va_start(ap, fmt);
	vsnprintf(req->invalid_reason, sizeof(req->invalid_reason), fmt, ap);
	va_end(ap);
	if (!req->invalid_reason[0])
		snprintf(req->invalid_reason, sizeof(req->invalid_reason), "invalid request");
}

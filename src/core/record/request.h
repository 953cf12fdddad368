/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a front end asks core to run: plain data, filled from command-line
 * options (cli/) or a job file (core/run/job.c), later from MCP. Strings are heap
 * copies owned by the request. */
#define RUN_MAX_EXPECTED 32

struct run_request {
	const char *source; /* "run" or "job": a static string */
	char **argv;
	char *cwd; /* NULL: the caller's cwd */
	bool has_timeout;
	uint64_t timeout_ms;
	bool has_kill_after;
	uint64_t kill_after_ms;
	char **env_allow; /* names added to the policy's allowlist */
	char **env_force; /* names allowed even when they look like secrets */
	bool env_replace; /* env_allow replaces the policy's list (job files) */
	int expected[RUN_MAX_EXPECTED];
	size_t n_expected; /* 0: the default, {0} */
	char *job_id;
	char *rationale;
	char *job_sha256; /* job files: digest of the bytes read */
	bool spill;
	const char *sandbox_profile; /* NULL: the policy's; else "default" or "none" */
	char *workspace; /* NULL: the cwd */
	/* The cwd must lie in the workspace (MCP, whose workspace is the
	 * server's; a routed run, whose workspace is the scope the hook
	 * judged): a failure files in its cwd's scope, which the workspace's
	 * gate would not see from outside. */
	bool cwd_in_workspace;
	unsigned allow_workspace; /* enum hostview_allow: workspaces allowed despite the checks */
	bool share_net; /* --net host */
	int tee_stdout_fd, tee_stderr_fd; /* -1: no tee */
	/* Readable or hung up: the front end cancels the run (MCP's
	 * notifications/cancelled), which ends as a timeout does; 0: none */
	int cancel_fd;
	uint64_t fixes; /* --fixes ID: the open failure this run claims to fix; 0 none */
	bool dryrun; /* the workspace is a snapshot; the receipt gets the change set */
	char **expect_paths; /* dry runs: what may be created or modified */
	char **expect_delete; /* dry runs: what may be deleted */
	/* dry runs: the permit whose dry run this is (0: none); its mark is
	 * made with the dry run's directory (dryrun_prepare) */
	uint64_t permit_id;
	/* Set when the front end or the job parser rejected the input: the
	 * attempt is recorded with status "invalid" and nothing runs. */
	char invalid_reason[512];
};

void run_request_init(struct run_request *req);
void run_request_release(struct run_request *req);
/* Marks the request invalid (the first reason wins). */
void run_request_set_invalid(struct run_request *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline bool run_request_is_invalid(const struct run_request *req)
{
	return req->invalid_reason[0] != '\0';
}

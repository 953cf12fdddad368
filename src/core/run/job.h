/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/error.h"
#include "core/record/request.h"

/* Fills req from a job document (docs/job-format.md): the seed's keys
 * (job_id, argv, cwd, timeout_sec, expected_exit, env_allowlist, rationale)
 * or Codex's shell-tool spelling (command, workdir, timeout_ms,
 * justification). Unknown keys, wrong types, an empty argv or an empty
 * string in it and a relative cwd are errors naming the key. Fields parsed
 * before an error stay in req, so the rejection's receipt shows them. */
int job_parse(const char *text, size_t n, struct run_request *req, struct error *err);

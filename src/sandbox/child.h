/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "sandbox/isolate.h"
#include "sandbox/sandbox.h"

/* What the child reports on the report pipe when a stage fails. */
struct child_report {
	int32_t stage; /* enum sandbox_stage */
	int32_t error; /* errno at the failing step */
};

/* Everything the child needs, prepared by the parent before clone(), so the
 * child allocates nothing. */
struct child_setup {
	const struct sandbox_config *config;
	pid_t parent_pid;
	int stdin_fd, stdout_fd, stderr_fd;
	int report_fd;
	const struct isolate_plan *plan; /* NULL: no quarantine */
	/* RLIMIT_AS for the command; in the quarantine, dropped once init is in
	 * a memory cgroup, which holds the limit. 0: none */
	uint64_t memory_rlimit;
};

/* Runs in the child between clone() and execve(): raw syscalls only, no
 * allocation, no stdio. Never returns. */
_Noreturn __attribute__((no_sanitize("address", "undefined"))) void
child_exec(const struct child_setup *setup);

/* The quarantine's pid 1: builds the quarantine, starts the command with
 * child_exec(), reaps, and reports the command's status on the status pipe.
 * Never returns. */
_Noreturn void child_init(const struct child_setup *setup);

/* The supervisor's go message to init, once init is started. */
#define CHILD_GO 'g'

/* SPDX-License-Identifier: MIT */
#pragma once

#include <sched.h>
#include <stdbool.h>
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

/* An init cloned before its plan exists (the early clone, planarena.h):
 * what it knows at the clone, in new user and pid namespaces only. It makes
 * its network (unless share_net), ipc, uts and cgroup namespaces at once,
 * then waits for CHILD_PLAN on go_fd; EOF (the supervisor gone, or the run
 * not made) ends it. Then it makes its mount namespace (the host's mounts
 * as they are once the plan is made, as a clone after the plan copies
 * them) and reads setup, which the supervisor wrote into the shared arena
 * meanwhile. Before that it touches nothing on the host. */
struct child_early {
	int go_fd, report_fd;
	int supervisor_fds[3]; /* as isolate_plan.supervisor_fds */
	bool share_net;
	/* The supervisor's CPUs, taken back once init has the plan (the
	 * supervisor moved init off its own CPU, to start it at once) */
	bool restore_cpus;
	cpu_set_t cpus;
	const struct child_setup *setup; /* in the arena; set before CHILD_PLAN */
};

#define CHILD_PLAN 'p'

_Noreturn void child_init_early(const struct child_early *early);

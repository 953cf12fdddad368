/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A cgroup per run for memory and process limits, where this host lets
 * airlock create one: the v1 memory and pids hierarchies (hybrid hosts,
 * like the development machine), as root. Elsewhere nothing is created and
 * the rlimits set in the quarantine are the only limits. */
struct cgroup_run {
	char memory_dir[256];
	char pids_dir[256];
	bool memory, pids; /* which controllers are in force */
};

/* Creates the run's cgroups with the limits; best effort: returns true when
 * at least one controller is in force. */
bool cgroup_run_create(struct cgroup_run *cg, uint64_t memory_bytes, uint64_t max_processes);
/* The run's `tasks` files, opened for writing (close-on-exec), -1 for a
 * controller not in force: [0] memory, [1] pids. Init writes "0" to each,
 * first thing: that moves the writing thread, init's only one, so init and
 * everything it starts are inside. Moving another process (its pid written
 * to cgroup.procs) takes the kernel's global threadgroup lock, whose writer
 * waits for an RCU grace period: 5-20 ms of every run on this host, most of
 * a run's start-up; moving oneself through `tasks` does not take it
 * (kernel/cgroup/cgroup.c, cgroup_procs_write_start()). The file's opener,
 * root, is who the kernel checks the write against. */
void cgroup_run_open_tasks(const struct cgroup_run *cg, int ret_fds[2]);
/* Which limits fired: the OOM killer ran, or a fork was refused. */
bool cgroup_run_memory_fired(const struct cgroup_run *cg);
bool cgroup_run_pids_fired(const struct cgroup_run *cg);
/* Removes the cgroups once every process in them is gone. */
void cgroup_run_destroy(struct cgroup_run *cg);
/* A run's cgroups outlive a supervisor killed with SIGKILL, empty; runs
 * sweep such leftovers from time to time. Removes the <pid>-... entries of
 * parent whose supervisor pid is gone (rmdir() refuses any that still has
 * processes; a reused pid only keeps a leftover longer) and says how many. */
unsigned cgroup_sweep_stale(const char *parent);

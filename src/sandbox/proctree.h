/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* A set of pids, to count distinct processes across kill rounds. */
struct pid_set {
	pid_t *pids;
	size_t n, cap;
};

void pid_set_release(struct pid_set *set);

/* Sends sig to every live descendant of root found in /proc (not root
 * itself), adding each to *signaled. Returns how many were signaled this
 * round, or a negative errno when /proc cannot be read. */
int proctree_signal_descendants(pid_t root, int sig, struct pid_set *signaled);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* A dry run's read scan (docs/sandbox.md, "Read tracing"): a thread of the
 * supervisor looks through the workspace for a regular file with more than
 * one link while init builds the quarantine, and tells init on a socket
 * whether its seccomp program may leave the opens that only read
 * untraced (isolate.h, ISOLATE_SCAN_NO_LINKS). The walk never follows a
 * symlink nor crosses into another file system, and is bounded:
 * READSCAN_MAX_ENTRIES entries, READSCAN_MAX_DEPTH levels; past either, or
 * on any error, the workspace may hold links. */
#define READSCAN_MAX_ENTRIES 3000
#define READSCAN_MAX_DEPTH   64

struct readscan;

/* Starts the thread for the workspace (absolute); it sends one byte on fd,
 * which it takes on success and keeps open until readscan_stop(): a
 * process forked meanwhile finds that end under the same number. 0, or a
 * negative errno with fd left to the caller. */
int readscan_start(struct readscan **ret, const char *workspace, int fd);

/* Asks the walk to stop where it is (its answer, if not sent yet, is then
 * "may hold links"), without waiting. NULL: nothing. */
void readscan_cancel(struct readscan *scan);
/* Cancels, joins the thread (back at normal priority, so that a starved
 * idle thread does not hold the caller up) and closes fd. NULL: nothing. */
void readscan_stop(struct readscan *scan);
static inline void readscan_stopp(struct readscan **scan)
{
	readscan_stop(*scan);
	*scan = NULL;
}

/* The walk itself, on the directory open at dir_fd: whether it may hold a
 * regular file with more than one link (true past the bounds, on an error,
 * or below a mount point). *stop, when set, ends it with true, and so does
 * a hang-up of answer_fd (>= 0), looked at every 64 entries: init has read
 * its answer or stopped waiting for it. */
bool readscan_may_hold_links(int dir_fd, const atomic_bool *stop, int answer_fd);

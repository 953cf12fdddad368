/* SPDX-License-Identifier: MIT */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>

#include "basic/error.h"
#include "sandbox/sandbox.h"

/* connect() on the command's behalf, for kernels whose Landlock cannot scope
 * pathname Unix sockets (ABI < 9; docs/sandbox.md, "Unix sockets").
 *
 * The seccomp filter sends every connect() to the supervisor, which hands it
 * to the broker. A worker thread duplicates the socket (pidfd_getfd), reads
 * the address once from the caller's memory, and performs the connect
 * itself, on the duplicate: a pathname Unix address is first resolved in
 * the caller's view of the file system and pinned (O_PATH), the pinned
 * inode must lie on the workspace's mounts or the private /tmp's, and the
 * socket is connected to /proc/self/fd/<pin>, so the inode checked is the
 * one connected to. The call is never let through to the kernel
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): another thread of the command could
 * change the descriptor or the address after the check.
 *
 * Workers run with no effective capabilities, so a root supervisor does not
 * lend the command its DAC override. A blocking connect blocks a worker,
 * never the supervisor's loop; a worker whose caller is gone is interrupted
 * with a signal (sockbroker_sweep), and all of them when the run ends. */
struct sockbroker;

struct sockbroker_config {
	int listener_fd; /* duplicated: the caller may close its own */
	const char *workspace; /* as the command sees it (the same path as the host's) */
	/* sandbox.writable: host directories, whose sockets are the host's even
	 * where they lie below /tmp (mounted in the private one) */
	const struct sandbox_writable *writable;
	size_t n_writable;
	bool share_net; /* the host's network: abstract addresses are refused */
};

int sockbroker_new(struct sockbroker **ret, const struct sockbroker_config *config, struct error *err);
/* True when the notification is the broker's to answer. */
bool sockbroker_handles(const struct seccomp_notif *req);
/* Queues the notification for a worker; the broker answers it. */
void sockbroker_submit(struct sockbroker *broker, const struct seccomp_notif *req);
/* Interrupts workers whose caller no longer waits (a signal, or death). */
void sockbroker_sweep(struct sockbroker *broker);
/* How soon the supervisor's loop should call sockbroker_sweep(): -1 when no
 * connect is in flight. */
int sockbroker_poll_timeout_ms(struct sockbroker *broker);
/* Interrupts and joins every worker, adds the refusals to *result, frees. */
void sockbroker_finish(struct sockbroker *broker, struct sandbox_result *result);

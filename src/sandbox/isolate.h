/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/capability.h>

#include "basic/error.h"
#include "sandbox/landlock_abi.h"
#include "sandbox/protect.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscall_filter.h"

/* Everything the init process needs to build the quarantine, prepared by the
 * parent (which may allocate and format) so the child only makes syscalls.
 * The new root is staged on /tmp, so host paths below /tmp are opened (in
 * the child's own mount namespace) before the staging hides them. */
struct isolate_plan {
	const struct sandbox_isolation *iso;
	char uid_map[48], gid_map[48];
	/* map_ids_through honoured: the supervisor writes these (every range of
	 * its own user namespace, each id to itself) to the child's maps, then
	 * sends an int32_t on go_fd (0, or the errno of the failed write)
	 * before the go message; init waits for it before using the namespace,
	 * and keeps ISOLATE_ROOT_CAPS for the command. */
	bool parent_maps;
	char *parent_uid_map, *parent_gid_map;
	char tmp_options[64];
	const char *workspace;
	char *staged_workspace;
	bool workspace_needs_mkdir; /* it lies under the private /tmp or the empty /run */
	char *staged_writable[SANDBOX_MAX_WRITABLE]; /* iso->writable[i] in the new root */
	struct protect_plan protect; /* read-only paths and pins in the workspace */
	char *staged_protect[PROTECT_MAX_MOUNTS];
	char **staged_hide;
	bool *hide_is_dir;
	size_t n_hide;
	char **enforced_hidden; /* host paths now hidden, for the manifest */
	/* Masks (struct sandbox_mask), built in order before the workspace. */
	char *staged_mask[SANDBOX_MAX_MASKS];
	bool mask_holds_workspace[SANDBOX_MAX_MASKS];
	size_t n_masks;
	struct isolate_expose {
		const char *host; /* borrowed from the isolation */
		char *staged;
		bool is_dir;
		size_t mask;
	} expose[SANDBOX_MAX_EXPOSE];
	size_t n_expose;
	char **enforced_exposed;
	/* Landlock, as the running kernel supports it */
	int landlock_abi;
	size_t landlock_attr_size;
	struct al_landlock_ruleset_attr landlock_handled;
	uint64_t landlock_read, landlock_write, landlock_dev;
	/* Landlock cannot scope pathname Unix sockets (ABI < 9): the seccomp
	 * filter sends connect() to the supervisor (src/sandbox/sockbroker.c) */
	bool mediate_connect;
	/* The program init loads: in a dry run's trace, it traces the opens
	 * that only read too (SYSCALL_FILTER_TRACE_READS) ... */
	struct syscall_filter filter;
	/* ... unless the read scan found no hard-linked file in the workspace
	 * in time: then this one, without them (docs/sandbox.md, "Read
	 * tracing"); len 0 when the run has no read scan. */
	struct syscall_filter filter_untraced_reads;
	/* init's end of the read scan's socket (-1: none): one byte,
	 * ISOLATE_SCAN_NO_LINKS or another, from the supervisor's scanning
	 * thread (src/sandbox/readscan.c), waited for scan_wait_ms at most
	 * once init is ready for its seccomp filter */
	int scan_fd;
	long scan_wait_ms; /* ISOLATE_SCAN_WAIT_MS; a test build's AIRLOCK_TEST_READSCAN_WAIT_MS */
	int notify_fd; /* child's end of the socket the listener travels on */
	int status_fd; /* init's end of the status pipe */
	int go_fd; /* init waits on it before it starts the command; EOF: the supervisor is gone */
	/* The supervisor's ends of the three above, which init inherits with the
	 * descriptor table and closes first: while it holds them, the supervisor's
	 * death shows no EOF on go_fd and no hang-up on notify_fd. */
	int supervisor_fds[4];
};

/* The run's cgroups travel on notify_fd: the supervisor, once it made them
 * while init builds the quarantine, sends one byte of these bits with the
 * `tasks` files they name (cgroup_run_open_tasks()), memory first; init
 * writes "0" to each (it moves itself), and answers with the bits of the
 * moves that held, before it sends the seccomp listener. */
#define ISOLATE_CGROUP_MEMORY 1u
#define ISOLATE_CGROUP_PIDS   2u
/* In init's answer only: it loads filter_untraced_reads, the scan having
 * said ISOLATE_SCAN_NO_LINKS (the supervisor records what init chose). */
#define ISOLATE_READS_UNTRACED 4u

/* The read scan's answer that the workspace holds no regular file with
 * more than one link; any other byte, none in time, or EOF: it may. */
#define ISOLATE_SCAN_NO_LINKS 'n'
/* How long init waits for the scan's answer once it is ready for its
 * seccomp filter: the scan runs while init builds the quarantine, and a
 * late answer only costs the round trips of traced reads. */
#define ISOLATE_SCAN_WAIT_MS 1

/* The init process's final word on the status pipe. */
struct isolate_status {
	int32_t wait_status; /* the command's, as from wait4() */
	uint32_t killed; /* other processes alive at the timeout or left at exit */
	/* getrusage(RUSAGE_CHILDREN) of init: the command and whatever else init
	 * reaped, all of them dead by now */
	uint64_t max_rss_kib, user_cpu_us, system_cpu_us;
	/* What the private /tmp holds beyond what the quarantine's own set-up
	 * put there (the workspace's parents when it lies below /tmp), from
	 * statfs(): objects (the tmpfs's inodes in use) and bytes (its blocks in
	 * use). Valid when scratch_counted. */
	uint64_t scratch_entries, scratch_bytes;
	uint32_t scratch_counted, reserved;
};

/* The capabilities a dry run as root keeps for the command, in its user
 * namespace only (struct sandbox_isolation.map_ids_through). */
#define ISOLATE_ROOT_CAPS                                                                   \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | \
	 (1ULL << CAP_FOWNER) | (1ULL << CAP_FSETID))

/* Parent side: writes plan's maps to the child's /proc/PID files
 * (setgroups "deny" first). 0 or -errno. */
int isolate_write_child_maps(const struct isolate_plan *plan, pid_t pid);

/* Whether a run's workspace is scanned for hard-linked files so that its
 * read-only opens may go untraced: a dry run (an overlay) with the trace. */
bool isolate_reads_scanned(const struct sandbox_isolation *iso);

/* On failure, *ret_stage names the layer that could not be prepared. */
int isolate_plan_prepare(const struct sandbox_config *config, struct isolate_plan *plan,
			 enum sandbox_stage *ret_stage, struct error *err);
void isolate_plan_release(struct isolate_plan *plan);

/* Child side: each returns false with errno set; raw syscalls only. */
bool isolate_user_ns(const struct isolate_plan *plan);
bool isolate_mounts(const struct isolate_plan *plan);
bool isolate_pivot(void);
/* *ret_proxy_fd: the proxy's listening socket when iso->net_listener_to
 * asks for one (else -1); isolate_seccomp() sends and closes it. */
bool isolate_network(const struct isolate_plan *plan, int *ret_proxy_fd);
bool isolate_hostname(const struct isolate_plan *plan);
bool isolate_drop_capabilities(const struct isolate_plan *plan);
bool isolate_no_new_privs(void);
bool isolate_landlock(const struct isolate_plan *plan);
/* Loads plan->filter (filter_untraced_reads when untraced_reads), sends
 * the seccomp listener on notify_fd, then proxy_fd when >= 0 (closed here
 * either way). */
bool isolate_seccomp(const struct isolate_plan *plan, int proxy_fd, bool untraced_reads);
/* Processes in this pid namespace other than the caller (pid 1): init's
 * alone, read with raw syscalls (basic/dirread is glibc's getdents64()). */
unsigned isolate_count_processes(void);

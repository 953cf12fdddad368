/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"

/* The sandbox layer confines and supervises one process from a plain config.
 * It parses nothing and decides no policy: core/ resolves what to run, with
 * which environment and limits, and records what happened. */

/* The steps the child takes between clone() and execve(), in order. A failed
 * step is reported to the parent as {stage, errno}. */
enum sandbox_stage {
	SANDBOX_STAGE_NONE,
	SANDBOX_STAGE_SIGNALS,
	SANDBOX_STAGE_SESSION,
	SANDBOX_STAGE_PARENT_DEATH,
	SANDBOX_STAGE_STDIO,
	SANDBOX_STAGE_CWD,
	SANDBOX_STAGE_RLIMITS,
	SANDBOX_STAGE_FDS,
	SANDBOX_STAGE_EXEC,
	/* isolation stages, in the order the init process takes them */
	SANDBOX_STAGE_USER_NS,
	SANDBOX_STAGE_MOUNTS,
	SANDBOX_STAGE_PIVOT,
	SANDBOX_STAGE_NETWORK,
	SANDBOX_STAGE_HOSTNAME,
	SANDBOX_STAGE_CAPABILITIES,
	SANDBOX_STAGE_NO_NEW_PRIVS,
	SANDBOX_STAGE_LANDLOCK,
	SANDBOX_STAGE_SECCOMP,
	SANDBOX_STAGE_INIT,
	_SANDBOX_STAGE_MAX,
};

const char *sandbox_stage_to_string(enum sandbox_stage stage);

enum sandbox_stream {
	SANDBOX_STDOUT = 1,
	SANDBOX_STDERR = 2,
};

struct sandbox_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t value; /* the soft limit; the hard one too, except for RLIMIT_CPU, whose
			 * hard limit is one second later so SIGXCPU, not SIGKILL, says why */
};

#define SANDBOX_MAX_RLIMITS 8

/* A host directory replaced by an empty, read-only view, except for the
 * paths in expose (absolute, resolved, below path), which stay visible
 * read-only, and the workspace when it lies below path. */
struct sandbox_mask {
	const char *path;
	char *const *expose;
};

/* A host directory writable besides the workspace: core checked the
 * directory with this device and inode number, and that one is bound (a
 * path that resolves to another directory by then fails the run). */
struct sandbox_writable {
	const char *path; /* absolute, resolved */
	dev_t dev;
	ino_t ino;
};

#define SANDBOX_MAX_WRITABLE 16

#define SANDBOX_MAX_MASKS  8
#define SANDBOX_MAX_EXPOSE 64 /* exposed paths, all masks together */

/* The quarantine: what the command sees and may do. Paths are absolute and
 * resolved; core decides them, the sandbox only builds them. */
struct sandbox_isolation {
	bool enabled; /* false: run on the host, receipts only */
	bool share_net; /* true: the host's network; false: loopback only */
	const char *workspace; /* writable, with writable[] only */
	const struct sandbox_writable *writable; /* neither holding nor inside the workspace */
	size_t n_writable;
	/* Dry runs: when set, the workspace is a copy-on-write snapshot, an
	 * overlay with the real workspace as its lower layer and these
	 * directories (empty, outside the workspace) as upper and work dirs;
	 * nothing the command does reaches the real tree. */
	const char *overlay_upper, *overlay_work;
	/* Record paths outside the workspace (and outside /tmp, /dev, /proc)
	 * that the command tried to write; each attempt still meets the
	 * read-only host. Costs a round trip to the supervisor per write. */
	bool trace_outside_writes;
	/* A dry run as root (docs/dryrun.md, "Root"): map every id the caller's
	 * user namespace maps through to itself, not only the caller's own, and
	 * leave the command CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
	 * CAP_FOWNER and CAP_FSETID in its user namespace (and nothing else),
	 * so that it can do in the snapshot what root's real run does in the
	 * workspace. Honoured only when the caller is euid 0 with CAP_SETUID
	 * and CAP_SETGID (the supervisor writes the child's maps: only a writer
	 * privileged in the parent namespace may map more than its own id);
	 * the manifest's ids_mapped says whether it was. */
	bool map_ids_through;
	/* Replaced by an empty, read-only view. An entry that is a symlink, or
	 * has one on its way, is hidden where it resolves (the kernel mounts on
	 * the target), so the link's path and its target both read empty. */
	char *const *hide;
	const struct sandbox_mask *masks; /* built before the workspace is attached */
	size_t n_masks;
	char *const *read_only; /* inside the workspace, kept read-only */
	uint64_t tmp_bytes; /* size of the private /tmp */
	uint64_t memory_bytes, max_processes; /* cgroup limits, where one can be made */
	const char *hostname;
	/* The allowlist proxy (docs/network.md): when > 0 and share_net is
	 * false, init makes a listening TCP socket on port
	 * SANDBOX_NET_PROXY_PORT in the private network namespace (before its
	 * seccomp filter), passes it to the supervisor after the seccomp
	 * listener and closes its own copy before the command exists; the
	 * supervisor sends it on this Unix socket (SCM_RIGHTS) and keeps no
	 * copy, so whoever receives it holds the only one. */
	int net_listener_to;
};

/* The proxy's port inside the quarantine. The socket is bound to [::]
 * with IPV6_V6ONLY off (the namespace has only lo: 127.0.0.1 and ::1
 * reach it), or to 127.0.0.1 where the kernel has no IPv6. */
#define SANDBOX_NET_PROXY_PORT 3128

/* What the sandbox enforced for a run that reached execve(): every layer
 * requested is applied or the run fails, so this mirrors the request plus
 * what the kernel decided (the Landlock ABI). */
struct sandbox_manifest {
	bool isolated;
	char **hidden; /* host paths hidden (heap; sandbox_result_release) */
	char **exposed; /* paths left visible inside the masks (heap) */
	char **read_only; /* host paths inside the workspace kept read-only */
	int landlock_abi; /* 0: none */
	uint64_t landlock_scoped;
	unsigned n_seccomp_rules;
	bool cgroup_memory, cgroup_pids; /* cgroup limits in force */
	/* pathname Unix sockets scoped by the supervisor (Landlock ABI < 9),
	 * not by Landlock */
	bool connect_mediated;
	bool memory_limit_hit, pids_limit_hit;
	/* map_ids_through was honoured: every id mapped, the five capabilities
	 * kept (owners in the snapshot are the host's) */
	bool ids_mapped;
};

/* A system call the seccomp filter refused, and how often. */
struct sandbox_denial {
	int syscall_nr;
	uint32_t arch;
	unsigned count;
};

#define SANDBOX_MAX_DENIALS 32

/* A path outside the workspace the command tried to write. */
struct sandbox_write_attempt {
	char path[512]; /* as the command named it, resolved lexically against its cwd */
	char syscall[24];
	unsigned count;
};

#define SANDBOX_MAX_WRITE_ATTEMPTS 32

/* A connect() to a Unix socket outside the workspace and /tmp, refused. */
struct sandbox_socket_denial {
	/* as the command named it, resolved lexically against its cwd; an
	 * abstract name (refused with --net host) is "@" and the name, cut at
	 * its first NUL */
	char path[512];
	unsigned count;
};

#define SANDBOX_MAX_SOCKET_DENIALS 32

/* A traced run: what the command did to each path inside the workspace, by
 * name, for the change set's hard-link groups (docs/dryrun.md, "Hard links
 * of the tree"). Calls are recorded as attempted, in the order they came
 * (the result of each is not seen). */
enum sandbox_path_op {
	/* Changed in place (opened for writing, truncated, chmod, chown,
	 * times, attributes set or removed, linked to a new name) while the
	 * name still held its first object: before any replacement below. */
	SANDBOX_PATH_IN_PLACE = 1U << 0,
	/* Removed or replaced: unlink, rmdir, rename's source or destination. */
	SANDBOX_PATH_REPLACED = 1U << 1,
	/* A rename's source or destination (a directory's rename is a copy in
	 * the snapshot). */
	SANDBOX_PATH_RENAMED = 1U << 2,
	/* Changed in place after a replacement: the new object's change. */
	SANDBOX_PATH_IN_PLACE_LATER = 1U << 3,
	/* Opened for reading only. */
	SANDBOX_PATH_READ = 1U << 4,
	/* A directory renamed that held, when the call came, a regular file
	 * with more than one link (or too much to look through). */
	SANDBOX_PATH_RENAMED_LINKS = 1U << 5,
	/* A rename's source (either name of RENAME_EXCHANGE) while the name
	 * still held its first object: the object lives on under another
	 * name, which the snapshot's copy-up makes a new inode. */
	SANDBOX_PATH_RENAMED_AWAY = 1U << 6,
};

/* Only paths that matter to a hard-link group are kept: a regular file
 * with more than one link when the call came (or a directory renamed), and
 * every later call on a path kept. */
struct sandbox_path_event {
	char *path; /* relative to the workspace ("" for the workspace itself); heap */
	unsigned ops; /* enum sandbox_path_op */
	/* The order of the calls, counted over all paths kept (from 1; 0:
	 * none): the first SANDBOX_PATH_IN_PLACE, the last SANDBOX_PATH_READ. */
	uint64_t in_place_seq, read_seq;
};

#define SANDBOX_MAX_PATH_EVENTS 4096

struct sandbox_config {
	const char *exec_path; /* what execve() runs; relative paths are relative to cwd */
	char *const *argv;
	char *const *envp;
	const char *cwd;
	uint64_t timeout_ms; /* 0: none */
	uint64_t kill_after_ms; /* grace between SIGTERM and SIGKILL on timeout */
	/* Readable or hung up: the caller cancels the run, which ends as a
	 * timeout does at that moment (TERM to the tree, KILL after the grace),
	 * with result->cancelled set. 0 (never one: descriptors 0-2 are the
	 * caller's stdio): none. */
	int cancel_fd;
	struct sandbox_rlimit rlimits[SANDBOX_MAX_RLIMITS];
	size_t n_rlimits;
	struct sandbox_isolation isolation;
	/* Called with each chunk the command writes, in order per stream. */
	void (*on_output)(void *userdata, enum sandbox_stream stream, const void *data, size_t n);
	/* Called once in the parent when the command's process was started,
	 * before the supervisor waits for it: the caller's work that may
	 * overlap the command's start. May be NULL. */
	void (*on_started)(void *userdata);
	/* Polled by the supervisor while the run lasts (> 0; 0: none): on_watch
	 * is called when it is readable or hung up, and returns false to stop
	 * watching it (at EOF). The caller's pipe from a helper of the run. */
	int watch_fd;
	bool (*on_watch)(void *userdata, int fd);
	void *userdata;
};

enum sandbox_outcome {
	SANDBOX_EXITED, /* exit_code is valid */
	SANDBOX_SIGNALED, /* term_signal is valid */
	SANDBOX_TIMED_OUT, /* killed by the timeout or cancelled; term_signal says how it ended */
	SANDBOX_SETUP_FAILED, /* the child failed at failed_stage with failed_errno */
};

struct sandbox_result {
	enum sandbox_outcome outcome;
	int exit_code;
	int term_signal;
	enum sandbox_stage failed_stage;
	int failed_errno;
	char failed_message[512]; /* set when the parent could not prepare a layer */
	/* Processes other than the main one that were still alive when it ended
	 * (or timed out) and were killed. */
	unsigned descendants_killed;
	bool cancelled; /* SANDBOX_TIMED_OUT through config->cancel_fd, not the clock */
	uint64_t started_realtime_ns, ended_realtime_ns;
	uint64_t duration_ns;
	uint64_t max_rss_kib, user_cpu_ms, system_cpu_ms;
	/* In the quarantine: what the command left in its private /tmp (objects,
	 * bytes), counted by init once every process is gone; valid when
	 * scratch_counted (not when init was killed at a timeout's deadline). */
	bool scratch_counted;
	uint64_t scratch_entries, scratch_bytes;
	struct sandbox_manifest manifest;
	struct sandbox_denial denials[SANDBOX_MAX_DENIALS];
	size_t n_denials;
	unsigned denials_dropped; /* beyond SANDBOX_MAX_DENIALS distinct syscalls */
	struct sandbox_write_attempt outside_writes[SANDBOX_MAX_WRITE_ATTEMPTS];
	size_t n_outside_writes;
	unsigned outside_writes_dropped; /* beyond SANDBOX_MAX_WRITE_ATTEMPTS distinct paths */
	struct sandbox_socket_denial socket_denials[SANDBOX_MAX_SOCKET_DENIALS];
	size_t n_socket_denials;
	unsigned socket_denials_dropped; /* beyond SANDBOX_MAX_SOCKET_DENIALS distinct paths */
	/* Traced runs: mknod() of a character or block device that is not a
	 * whiteout (0:0), which the user namespace refuses where root's real
	 * run would make it, whatever the command then did with the failure */
	unsigned device_nodes;
	/* Traced runs: setxattr()/lsetxattr() of a trusted.* attribute or a
	 * file capability (security.capability), which need CAP_SYS_ADMIN or
	 * CAP_SETFCAP that the quarantine never has and root's real run does */
	unsigned privileged_xattrs;
	/* Set-user-ID and set-group-ID requests the filter refused (a chmod,
	 * or an open, mkdir or mknod whose mode asks for a bit; also among
	 * denials), any run, and the first one's system call: the run the
	 * command would have had outside the quarantine may have made a set-id
	 * object, whatever the command did with the failure */
	unsigned setid_refused;
	char setid_syscall[24];
	/* A traced run's calls on paths inside the workspace, one entry per
	 * distinct path (heap; sandbox_result_release); path_events_overflow:
	 * more than SANDBOX_MAX_PATH_EVENTS paths, or one could not be kept,
	 * so the record is incomplete. */
	struct sandbox_path_event *path_events;
	size_t n_path_events;
	bool path_events_overflow;
	/* A traced run's opens that only read came to the supervisor too
	 * (SANDBOX_PATH_READ). Not in a dry run whose workspace held no
	 * regular file with more than one link when the run started (a
	 * bounded scan while the quarantine was built, docs/sandbox.md, "Read
	 * tracing"): a link made after it has no reads in the trace. */
	bool reads_traced;
};

void sandbox_result_release(struct sandbox_result *result);

/* The syscall's name for a denial, or NULL (libseccomp's table). */
const char *sandbox_syscall_name(const struct sandbox_denial *denial);

/* Whether a dry run would map every id through (map_ids_through honoured):
 * euid 0 with CAP_SETUID and CAP_SETGID in the effective set, the
 * privilege the supervisor needs to write such a map for the child. */
bool sandbox_can_map_ids(void);

/* The best Landlock ABI this kernel offers (0 when none). */
int sandbox_landlock_abi(void);

/* Runs config->argv and waits until it and every descendant are gone.
 * Returns 0 whenever a result was produced (including setup failures inside
 * the child, which are results), or a negative errno when the supervisor
 * itself could not start it. */
int sandbox_run(const struct sandbox_config *config, struct sandbox_result *ret_result,
		struct error *err);

/* What is left of a quarantined run once its result is known: the kernel
 * tearing the namespaces down after init's exit (about 1 ms here), then the
 * run's cgroups to remove. */
struct sandbox_teardown;

/* sandbox_run() in two halves, so that the caller can write its receipt
 * while the quarantine tears down. The first returns once the command and
 * every process of its quarantine are gone and the output is drained, with
 * *ret_teardown (NULL when nothing is left); sandbox_teardown_finish() waits
 * for the rest and removes what the run made. */
int sandbox_run_until_result(const struct sandbox_config *config, struct sandbox_result *ret_result,
			     struct sandbox_teardown **ret_teardown, struct error *err);
void sandbox_teardown_finish(struct sandbox_teardown *teardown);

/* Finds what execve() must run for `command` the way execvp() would, but
 * against the child's own PATH and cwd, without running anything: a command
 * containing '/' is taken as is. Returns 0 with *ret_path (heap), -ENOENT
 * when nothing matched, -EACCES when only non-executable candidates exist. */
int sandbox_resolve_command(const char *command, const char *path_env, const char *cwd,
			    char **ret_path);

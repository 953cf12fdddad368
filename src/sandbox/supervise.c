/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <linux/seccomp.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 6.6: a listener whose caller and supervisor take turns (the
 * caller waits while the supervisor answers) wakes each on the other's CPU
 * (older kernels refuse the ioctl: nothing changes). */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fdpass.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "sandbox/cgroup.h"
#include "sandbox/readscan.h"
#include "sandbox/child.h"
#include "sandbox/isolate.h"
#include "sandbox/pathcache.h"
#include "sandbox/proctree.h"
#include "sandbox/sandbox.h"
#include "sandbox/sockbroker.h"
#include "sandbox/syscall_filter.h"

#define READ_CHUNK_BYTES (256 * 1024)
#define PIPE_BYTES	 (1024 * 1024)
/* How long to wait for the output pipes to reach EOF once every descendant
 * is gone: only a process outside the tree (handed the pipe over a socket)
 * could hold them open, and airlock must never hang on it. */
#define DRAIN_AFTER_EXIT_MS 200

static const char *const stage_names[_SANDBOX_STAGE_MAX] = {
	[SANDBOX_STAGE_NONE] = "none",
	[SANDBOX_STAGE_SIGNALS] = "signals",
	[SANDBOX_STAGE_SESSION] = "session",
	[SANDBOX_STAGE_PARENT_DEATH] = "parent_death",
	[SANDBOX_STAGE_STDIO] = "stdio",
	[SANDBOX_STAGE_CWD] = "cwd",
	[SANDBOX_STAGE_RLIMITS] = "rlimits",
	[SANDBOX_STAGE_FDS] = "fds",
	[SANDBOX_STAGE_EXEC] = "exec",
	[SANDBOX_STAGE_USER_NS] = "user_namespace",
	[SANDBOX_STAGE_MOUNTS] = "mounts",
	[SANDBOX_STAGE_PIVOT] = "pivot_root",
	[SANDBOX_STAGE_NETWORK] = "network",
	[SANDBOX_STAGE_HOSTNAME] = "hostname",
	[SANDBOX_STAGE_CAPABILITIES] = "capabilities",
	[SANDBOX_STAGE_NO_NEW_PRIVS] = "no_new_privs",
	[SANDBOX_STAGE_LANDLOCK] = "landlock",
	[SANDBOX_STAGE_SECCOMP] = "seccomp",
	[SANDBOX_STAGE_INIT] = "init",
};

const char *sandbox_stage_to_string(enum sandbox_stage stage)
{
	if ((unsigned)stage >= _SANDBOX_STAGE_MAX)
		return "unknown";
	return stage_names[stage];
}

struct supervisor {
	const struct sandbox_config *config;
	struct sandbox_result *result;
	pid_t main_pid;
	bool main_exited;
	int out_fds[2]; /* read ends; -1 once at EOF */
	int signal_fd;
	bool isolated; /* main_pid is the quarantine's init */
	int listener_fd; /* seccomp notifications; -1 when none */
	struct sockbroker *broker; /* connect() on the command's behalf; NULL when Landlock scopes it */
	struct readscan *scan; /* a dry run's read scan until init loaded its filter; NULL: none */
	int status_fd; /* init's report of the command's status; -1 once read */
	bool command_done; /* init reported: the command and its tree are gone */
	uint64_t timeout_at_ns, kill_at_ns, drain_until_ns; /* 0: not armed */
	int cancel_fd; /* config->cancel_fd while not yet readable; -1: none */
	int watch_fd; /* config->watch_fd while watched; -1: none */
	struct pid_set killed;
	char *buf;
	/* Traced runs: open addressing over result->path_events, each slot
	 * an index + 1 (0: free); heap, NULL until the first event. */
	size_t *event_slots;
	uint64_t event_seq; /* the calls kept so far */
};

static void supervisor_record_main(struct supervisor *s, int status, const struct rusage *ru)
{
	struct sandbox_result *r = s->result;

	s->main_exited = true;
	if (s->command_done)
		return; /* init's report, not init's own exit, is the result */
	r->ended_realtime_ns = clock_realtime_ns();
	r->max_rss_kib = (uint64_t)ru->ru_maxrss;
	r->user_cpu_ms = (uint64_t)ru->ru_utime.tv_sec * 1000 + (uint64_t)ru->ru_utime.tv_usec / 1000;
	r->system_cpu_ms = (uint64_t)ru->ru_stime.tv_sec * 1000 + (uint64_t)ru->ru_stime.tv_usec / 1000;
	if (WIFEXITED(status)) {
		r->exit_code = WEXITSTATUS(status);
		if (r->outcome != SANDBOX_TIMED_OUT)
			r->outcome = SANDBOX_EXITED;
	} else {
		r->term_signal = WTERMSIG(status);
		if (r->outcome != SANDBOX_TIMED_OUT)
			r->outcome = SANDBOX_SIGNALED;
	}
}

/* Reaps every exited child; returns false when no child is left at all. */
static bool supervisor_reap(struct supervisor *s, bool block)
{
	for (;;) {
		int status;
		struct rusage ru;
		pid_t pid = wait4(-1, &status, block ? 0 : WNOHANG, &ru);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			return false; /* ECHILD */
		}
		if (pid == 0)
			return true;
		if (pid == s->main_pid)
			supervisor_record_main(s, status, &ru);
		block = false;
	}
}

/* Kills everything left below airlock (the main process included, if it is
 * still running) and reaps it all. Orphans are re-parented to airlock, the
 * child subreaper, so "no child left" means "no descendant left". */
static void supervisor_kill_all(struct supervisor *s)
{
	/* Killing a pid namespace's init kills everything in it. */
	if (s->isolated && !s->main_exited)
		(void)kill(s->main_pid, SIGKILL);
	while (supervisor_reap(s, false)) {
		int n = proctree_signal_descendants(getpid(), SIGKILL, &s->killed);
		if (n < 0 && !s->main_exited)
			(void)kill(-s->main_pid, SIGKILL);
		/* Something is alive or a zombie: wait for at least one to go. */
		if (!supervisor_reap(s, true))
			break;
	}
	if (!s->drain_until_ns)
		s->drain_until_ns = clock_monotonic_ns() + DRAIN_AFTER_EXIT_MS * 1000000ULL;
	s->timeout_at_ns = s->kill_at_ns = 0;
}

static void supervisor_read(struct supervisor *s, int index)
{
	int fd = s->out_fds[index];

	for (;;) {
		ssize_t n = read(fd, s->buf, READ_CHUNK_BYTES);
		if (n > 0) {
			if (s->config->on_output)
				s->config->on_output(s->config->userdata,
						     index == 0 ? SANDBOX_STDOUT : SANDBOX_STDERR,
						     s->buf, (size_t)n);
			if (n < READ_CHUNK_BYTES)
				return; /* likely drained: let poll() say */
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(fd);
		s->out_fds[index] = -1;
		return;
	}
}

static void supervisor_on_deadline(struct supervisor *s, uint64_t now)
{
	if (s->timeout_at_ns && now >= s->timeout_at_ns) {
		s->timeout_at_ns = 0;
		s->result->outcome = SANDBOX_TIMED_OUT;
		/* TERM to the whole tree. In the quarantine, its init forwards it
		 * to every process of the pid namespace; on the host, the process
		 * group gets it, then every descendant that left it (setsid, double
		 * fork). */
		if (s->isolated) {
			(void)kill(s->main_pid, SIGTERM);
		} else {
			(void)kill(-s->main_pid, SIGTERM);
			(void)proctree_signal_descendants(getpid(), SIGTERM, &s->killed);
		}
		s->kill_at_ns = now + s->config->kill_after_ms * 1000000ULL;
	}
	if (s->kill_at_ns && now >= s->kill_at_ns) {
		s->kill_at_ns = 0;
		supervisor_kill_all(s);
	}
}

/* The caller cancelled the run: the timeout's path, now. Nothing to do once
 * the command is over or its tree is already being killed. */
static void supervisor_on_cancel(struct supervisor *s)
{
	s->cancel_fd = -1;
	if (s->command_done || s->main_exited || s->kill_at_ns)
		return;
	s->result->cancelled = true;
	s->timeout_at_ns = clock_monotonic_ns();
	supervisor_on_deadline(s, s->timeout_at_ns);
}

static int supervisor_poll_timeout_ms(const struct supervisor *s, uint64_t now)
{
	uint64_t next = 0;
	const uint64_t deadlines[] = { s->timeout_at_ns, s->kill_at_ns, s->drain_until_ns };

	for (size_t i = 0; i < ARRAY_SIZE(deadlines); i++)
		if (deadlines[i] && (!next || deadlines[i] < next))
			next = deadlines[i];
	if (!next)
		return -1;
	if (next <= now)
		return 0;
	uint64_t ms = (next - now + 999999) / 1000000;
	return ms > 60000 ? 60000 : (int)ms;
}

static void supervisor_on_child_signal(struct supervisor *s)
{
	struct signalfd_siginfo info;

	while (read(s->signal_fd, &info, sizeof(info)) > 0)
		;
	bool was_running = !s->main_exited;
	(void)supervisor_reap(s, false);
	/* The main process is gone: whatever it left behind is killed now, and
	 * output still in the pipes is drained after. After a timeout the tree
	 * keeps its grace period until the KILL deadline. Init's report says
	 * its pid namespace is empty already (nothing in it can leave it): what
	 * else is below airlock is the caller's own helper of the run (the
	 * network proxy), which the caller stops. */
	if (was_running && s->main_exited && !s->kill_at_ns && !(s->isolated && s->command_done))
		supervisor_kill_all(s);
}

static void supervisor_record_denial(struct sandbox_result *r, int nr, uint32_t arch)
{
	for (size_t i = 0; i < r->n_denials; i++)
		if (r->denials[i].syscall_nr == nr && r->denials[i].arch == arch) {
			r->denials[i].count++;
			return;
		}
	if (r->n_denials == SANDBOX_MAX_DENIALS) {
		r->denials_dropped++;
		return;
	}
	r->denials[r->n_denials++] =
		(struct sandbox_denial){ .syscall_nr = nr, .arch = arch, .count = 1 };
}

/* Reads the NUL-terminated string at addr in the stopped caller, a page at a
 * time (a read may not cross into an unmapped page). */
static bool read_caller_string(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	const size_t page = 4096;
	size_t got = 0;

	while (got + 1 < size) {
		size_t chunk = page - ((addr + got) % page);
		if (chunk > size - 1 - got)
			chunk = size - 1 - got;
		struct iovec local = { buf + got, chunk };
		struct iovec remote = { (void *)(uintptr_t)(addr + got), chunk };
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return false;
		char *nul = memchr(buf + got, '\0', (size_t)n);
		if (nul)
			return true;
		got += (size_t)n;
	}
	return false;
}

/* base + "/" + rel with "." and ".." taken lexically (symlinks are not
 * followed: this is a record of what was named, not a decision). */
static bool join_normalized(const char *base, const char *rel, char *out, size_t size)
{
	char tmp[2 * PATH_MAX + 2];
	size_t n = 0;

	if (snprintf(tmp, sizeof(tmp), "%s/%s", rel[0] == '/' ? "" : base, rel) >= (int)sizeof(tmp))
		return false;
	out[0] = '\0';
	char *save = NULL;
	for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			char *slash = strrchr(out, '/');
			n = slash ? (size_t)(slash - out) : 0;
			out[n] = '\0';
			continue;
		}
		size_t len = strlen(c);
		if (n + 1 + len + 1 > size)
			return false;
		out[n++] = '/';
		memcpy(out + n, c, len + 1);
		n += len;
	}
	if (n == 0)
		snprintf(out, size, "/");
	return true;
}

static void supervisor_record_write(struct sandbox_result *r, const char *path, const char *name)
{
	for (size_t i = 0; i < r->n_outside_writes; i++)
		if (strncmp(r->outside_writes[i].path, path, sizeof(r->outside_writes[i].path) - 1) ==
		    0) {
			r->outside_writes[i].count++;
			return;
		}
	if (r->n_outside_writes == SANDBOX_MAX_WRITE_ATTEMPTS) {
		r->outside_writes_dropped++;
		return;
	}
	struct sandbox_write_attempt *w = &r->outside_writes[r->n_outside_writes++];
	snprintf(w->path, sizeof(w->path), "%.511s", path); /* longer ones are cut */
	snprintf(w->syscall, sizeof(w->syscall), "%.23s", name);
	w->count = 1;
}

/* The path a traced call's argument names, resolved lexically against the
 * caller's cwd or directory descriptor into full; false when it cannot be
 * read (no path, a pipe's descriptor, the caller gone). */
static bool supervisor_resolve_arg(const struct seccomp_notif *req, int path_arg, int dirfd_arg,
				   char full[PATH_MAX])
{
	char path[PATH_MAX], base[PATH_MAX] = "/";

	if (path_arg < 0 || !req->data.args[path_arg])
		return false;
	if (!read_caller_string((pid_t)req->pid, req->data.args[path_arg], path, sizeof(path)))
		return false;
	if (path[0] != '/') {
		char link[64];
		int dirfd = dirfd_arg < 0 ? AT_FDCWD : (int)req->data.args[dirfd_arg];
		if (dirfd == AT_FDCWD)
			snprintf(link, sizeof(link), "/proc/%u/cwd", req->pid);
		else
			snprintf(link, sizeof(link), "/proc/%u/fd/%d", req->pid, dirfd);
		ssize_t len = readlink(link, base, sizeof(base) - 1);
		if (len <= 0)
			return false;
		base[len] = '\0';
		if (base[0] != '/')
			return false; /* a pipe or socket: no path */
	}
	return join_normalized(base, path, full, PATH_MAX);
}

/* Whether a traced call can write: every one but an open for reading
 * only (traced for the hard-link groups' record, never an attempt to
 * write). */
static bool supervisor_call_writes(const struct syscall_trace *t, const struct seccomp_notif *req)
{
	if (t->flags_arg < 0)
		return true;
	uint64_t flags = req->data.args[t->flags_arg];
	return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

/* One argument of a traced call and what the call does to the path it
 * names inside the workspace (0: nothing that matters to a name's object,
 * such as a create, which fails where the name exists). */
struct supervisor_path_arg {
	int path_arg, dirfd_arg;
	unsigned op; /* SANDBOX_PATH_IN_PLACE, or REPLACED (| RENAMED) */
};

static size_t supervisor_path_args(const struct syscall_trace *t, const struct seccomp_notif *req,
				   struct supervisor_path_arg ret[2])
{
	const char *n = t->name;

	if (!strcmp(n, "unlink") || !strcmp(n, "unlinkat") || !strcmp(n, "rmdir")) {
		ret[0] = (struct supervisor_path_arg){ t->path_arg[0], t->dirfd_arg[0],
						       SANDBOX_PATH_REPLACED };
		return 1;
	}
	if (!strncmp(n, "rename", 6)) {
		bool exchange = !strcmp(n, "renameat2") && (req->data.args[4] & RENAME_EXCHANGE);
		for (int k = 0; k < 2; k++)
			ret[k] = (struct supervisor_path_arg){
				t->path_arg[k], t->dirfd_arg[k],
				SANDBOX_PATH_REPLACED | SANDBOX_PATH_RENAMED |
					(k == 0 || exchange ? SANDBOX_PATH_RENAMED_AWAY : 0U)
			};
		return 2;
	}
	/* A link's source keeps its object and gains a name: the overlay
	 * copies it up, the real run links the same inode. */
	if (!strcmp(n, "link")) {
		ret[0] = (struct supervisor_path_arg){ 0, -1, SANDBOX_PATH_IN_PLACE };
		return 1;
	}
	if (!strcmp(n, "linkat")) {
		ret[0] = (struct supervisor_path_arg){ 1, 0, SANDBOX_PATH_IN_PLACE };
		return 1;
	}
	if (!strncmp(n, "mkdir", 5) || !strncmp(n, "mknod", 5) || !strncmp(n, "symlink", 7))
		return 0;
	/* An exclusive create succeeds only where the name is free: it
	 * changes no object the name held. */
	if (t->flags_arg >= 0 &&
	    (req->data.args[t->flags_arg] & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return 0;
	if (!supervisor_call_writes(t, req)) {
		ret[0] = (struct supervisor_path_arg){ t->path_arg[0], t->dirfd_arg[0],
						       SANDBOX_PATH_READ };
		return 1;
	}
	ret[0] = (struct supervisor_path_arg){ t->path_arg[0], t->dirfd_arg[0], SANDBOX_PATH_IN_PLACE };
	return 1;
}

/* Whether the directory dir_fd holds, at any depth, a regular file with
 * more than one link; true too when it cannot be looked through (deeper
 * than 64 levels, more than 100,000 entries, unreadable). */
static bool supervisor_dir_holds_links(int dir_fd, int depth, unsigned *budget)
{
	int fd = dup(dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	bool found = false;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	while (!found && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!(*budget)-- || fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			found = true;
			break;
		}
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			found = true;
		else if (S_ISDIR(st.st_mode)) {
			int sub = depth >= 64
					  ? -1
					  : openat(dir_fd, de->d_name,
						   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			found = sub < 0 || supervisor_dir_holds_links(sub, depth + 1, budget);
			if (sub >= 0)
				close(sub);
		}
	}
	closedir(d);
	return found;
}

/* Whether the path a call's argument names exists now, as the caller sees
 * it (through /proc/PID/root); true when that cannot be told. */
static bool supervisor_arg_exists(const struct seccomp_notif *req, int path_arg, int dirfd_arg)
{
	char full[PATH_MAX], proc[PATH_MAX + 32];
	struct stat st;

	if (!supervisor_resolve_arg(req, path_arg, dirfd_arg, full) ||
	    (size_t)snprintf(proc, sizeof(proc), "/proc/%u/root%s", req->pid, full) >= sizeof(proc))
		return true;
	return lstat(proc, &st) == 0 || errno != ENOENT;
}

/* A removal or rename that is bound to fail replaces nothing: its source
 * is missing (`mv t a` without t, `rm -f` of nothing), or it is a rename
 * with RENAME_NOREPLACE onto a name that exists (`mv -n`, and mv's first
 * try). Taken for a replacement, a later write to the name would be taken
 * for the new object's. The call's other failures (a read-only directory)
 * still count: the trace never sees a result (docs/dryrun.md). */
static bool supervisor_replaces(const struct syscall_trace *t, const struct seccomp_notif *req,
				const struct supervisor_path_arg *args, size_t n_args)
{
	if (!(args[0].op & SANDBOX_PATH_REPLACED))
		return true;
	if (!supervisor_arg_exists(req, args[0].path_arg, args[0].dirfd_arg))
		return false;
	if (n_args > 1 && !strcmp(t->name, "renameat2") && (req->data.args[4] & RENAME_NOREPLACE) &&
	    supervisor_arg_exists(req, args[1].path_arg, args[1].dirfd_arg))
		return false;
	return true;
}

/* The FNV-1a hash of a path, for the table of path events. */
static size_t supervisor_path_hash(const char *path)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ULL;
	return (size_t)h;
}

#define SUPERVISOR_EVENT_SLOTS (2 * SANDBOX_MAX_PATH_EVENTS) /* a power of two */

/* Notes op on rel (relative to the workspace) in the result's path events:
 * an in-place change after the path was replaced is the new object's. */
static void supervisor_record_path_op(struct supervisor *s, const struct seccomp_notif *req,
				      const char *full, const char *rel, unsigned op)
{
	struct sandbox_result *r = s->result;

	if (r->path_events_overflow)
		return;
	/* A path not kept yet is kept only when it can matter to a group: a
	 * regular file with more than one link now (as the caller sees it:
	 * a name not copied up shows the workspace's link count), or a
	 * directory renamed; or a set-id file changed in place. */
	bool known = false;
	if (s->event_slots) {
		size_t i = supervisor_path_hash(rel) & (SUPERVISOR_EVENT_SLOTS - 1);
		for (; s->event_slots[i] && !known; i = (i + 1) & (SUPERVISOR_EVENT_SLOTS - 1))
			known = !strcmp(r->path_events[s->event_slots[i] - 1].path, rel);
	}
	if (!known) {
		char proc[PATH_MAX + 32];
		struct stat st;
		if ((size_t)snprintf(proc, sizeof(proc), "/proc/%u/root%s", req->pid, full) >=
		    sizeof(proc)) {
			r->path_events_overflow = true;
			return;
		}
		if (lstat(proc, &st) < 0)
			return; /* nothing there: no object of a group */
		/* A set-id file changed in place: a write keeps the bit for
		 * root's real run (CAP_FSETID), not in the snapshot. */
		bool setid = S_ISREG(st.st_mode) && (op & SANDBOX_PATH_IN_PLACE) &&
			     ((st.st_mode & S_ISUID) ||
			      (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP));
		if (!(S_ISREG(st.st_mode) && st.st_nlink > 1) && !setid &&
		    !(S_ISDIR(st.st_mode) && (op & SANDBOX_PATH_RENAMED)))
			return;
		/* A directory's rename is a copy in the snapshot: the links
		 * below it, the workspace's or the command's, are lost. */
		if (S_ISDIR(st.st_mode)) {
			int dfd = open(proc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			unsigned budget = 100000;
			if (dfd < 0 || supervisor_dir_holds_links(dfd, 0, &budget))
				op |= SANDBOX_PATH_RENAMED_LINKS;
			if (dfd >= 0)
				close(dfd);
		}
	}
	if (!s->event_slots) {
		s->event_slots = calloc(SUPERVISOR_EVENT_SLOTS, sizeof(*s->event_slots));
		r->path_events = calloc(SANDBOX_MAX_PATH_EVENTS, sizeof(*r->path_events));
		if (!s->event_slots || !r->path_events) {
			r->path_events_overflow = true;
			return;
		}
	}
	size_t i = supervisor_path_hash(rel) & (SUPERVISOR_EVENT_SLOTS - 1);
	for (; s->event_slots[i]; i = (i + 1) & (SUPERVISOR_EVENT_SLOTS - 1))
		if (!strcmp(r->path_events[s->event_slots[i] - 1].path, rel))
			break;
	if (!s->event_slots[i]) {
		char *copy = r->n_path_events < SANDBOX_MAX_PATH_EVENTS ? strdup(rel) : NULL;
		if (!copy) {
			r->path_events_overflow = true;
			return;
		}
		r->path_events[r->n_path_events++] = (struct sandbox_path_event){ .path = copy };
		s->event_slots[i] = r->n_path_events;
	}
	struct sandbox_path_event *e = &r->path_events[s->event_slots[i] - 1];
	if ((op & SANDBOX_PATH_IN_PLACE) && (e->ops & SANDBOX_PATH_REPLACED))
		op = (op & ~SANDBOX_PATH_IN_PLACE) | SANDBOX_PATH_IN_PLACE_LATER;
	/* A later object moved away is not the workspace's. */
	if (e->ops & SANDBOX_PATH_REPLACED)
		op &= ~SANDBOX_PATH_RENAMED_AWAY;
	s->event_seq++;
	if ((op & SANDBOX_PATH_IN_PLACE) && !e->in_place_seq)
		e->in_place_seq = s->event_seq;
	if (op & SANDBOX_PATH_READ)
		e->read_seq = s->event_seq;
	e->ops |= op;
}

/* A traced write: note each path outside the workspace (and outside the
 * private /tmp, /dev and /proc), then let the call go on to meet the
 * read-only host; and what the call does to each path inside the
 * workspace (supervisor_path_args). Paths come from the caller's memory
 * and its /proc links, read while it waits; a notification that is no
 * longer valid (the caller died, its pid may be someone else's now) is not
 * recorded. */
static void supervisor_trace_write(struct supervisor *s, const struct seccomp_notif *req,
				   const struct syscall_trace *t)
{
	const char *workspace = s->config->isolation.workspace;
	char found[2][PATH_MAX], inside[2][PATH_MAX], inside_full[2][PATH_MAX];
	unsigned inside_op[2];
	int n_found = 0, n_inside = 0;

	for (int k = 0; k < 2 && supervisor_call_writes(t, req); k++) {
		char full[PATH_MAX];
		if (!supervisor_resolve_arg(req, t->path_arg[k], t->dirfd_arg[k], full))
			continue;
		if ((workspace && path_is_under(full, workspace)) || path_is_under(full, "/tmp") ||
		    path_is_under(full, "/dev") || path_is_under(full, "/proc"))
			continue;
		memcpy(found[n_found++], full, sizeof(full));
	}
	struct supervisor_path_arg args[2];
	size_t n_args = workspace ? supervisor_path_args(t, req, args) : 0;
	if (n_args && !supervisor_replaces(t, req, args, n_args))
		n_args = 0;
	for (size_t k = 0; k < n_args; k++) {
		char full[PATH_MAX];
		if (!supervisor_resolve_arg(req, args[k].path_arg, args[k].dirfd_arg, full)) {
			/* A path that names nothing (NULL: futimens) is no
			 * name's change; one that cannot be read leaves the
			 * record incomplete, unless the caller is the
			 * quarantine's init (undumpable, so unreadable to an
			 * unprivileged supervisor), which runs no command's
			 * code and changes nothing in the workspace. */
			if (args[k].path_arg >= 0 && req->data.args[args[k].path_arg] &&
			    !(s->isolated && (pid_t)req->pid == s->main_pid))
				s->result->path_events_overflow = true;
			continue;
		}
		if (!path_is_under(full, workspace))
			continue;
		size_t wn = strlen(workspace);
		while (wn > 1 && workspace[wn - 1] == '/')
			wn--;
		const char *rel = full + (wn == 1 ? 1 : wn);
		while (*rel == '/')
			rel++;
		snprintf(inside[n_inside], PATH_MAX, "%s", rel);
		memcpy(inside_full[n_inside], full, sizeof(full));
		inside_op[n_inside++] = args[k].op;
	}
	uint64_t id = req->id;
	if (!(n_found || n_inside) || ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
		return;
	for (int k = 0; k < n_found; k++)
		supervisor_record_write(s->result, found[k], t->name);
	for (int k = 0; k < n_inside; k++)
		supervisor_record_path_op(s, req, inside_full[k], inside[k], inside_op[k]);
}

/* A traced mknod of a character or block device that is not a whiteout
 * (0:0): the user namespace refuses it (no CAP_MKNOD there) where root's
 * real run would make it, so a dry run that met one cannot reproduce that
 * run, whatever the command did with the failure. Counted from the
 * caller's registers, which it cannot change while it waits. */
static void supervisor_note_device_node(struct supervisor *s, const struct seccomp_notif *req,
					const struct syscall_trace *t)
{
	int mode_arg = strcmp(t->name, "mknod") == 0 ? 1 : strcmp(t->name, "mknodat") == 0 ? 2 : -1;

	if (mode_arg < 0)
		return;
	mode_t mode = (mode_t)req->data.args[mode_arg];
	uint64_t dev = req->data.args[mode_arg + 1];
	if ((S_ISCHR(mode) && dev != 0) || S_ISBLK(mode))
		s->result->device_nodes++;
}

/* A traced setxattr of an attribute only a privileged writer may set
 * (trusted.*, a file capability): it fails in the quarantine where root's
 * real run would set it. The name is read from the caller's memory, which
 * it could change meanwhile: a record, never a decision (the kernel still
 * refuses the call). */
static void supervisor_note_privileged_xattr(struct supervisor *s, const struct seccomp_notif *req,
					     const struct syscall_trace *t)
{
	char name[256];

	if ((strcmp(t->name, "setxattr") != 0 && strcmp(t->name, "lsetxattr") != 0) ||
	    !read_caller_string((pid_t)req->pid, req->data.args[1], name, sizeof(name)))
		return;
	uint64_t id = req->id;
	if ((strncmp(name, "trusted.", 8) == 0 || strcmp(name, "security.capability") == 0) &&
	    ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0)
		s->result->privileged_xattrs++;
}

/* A set-id request the filter refuses, told apart by the caller's
 * registers (the filter's own test): counted, with the first one's name. */
static void supervisor_note_setid(struct sandbox_result *r, const struct seccomp_notif *req)
{
	if (!syscall_filter_sets_id(req->data.nr, req->data.args))
		return;
	if (r->setid_refused++ == 0) {
		const char *name = syscall_filter_name(req->data.nr, req->data.arch);
		snprintf(r->setid_syscall, sizeof(r->setid_syscall), "%.23s", name ? name : "?");
	}
}

/* A rule of the filter means "refuse" (answer EPERM and write it down), or
 * in a traced run, for the write system calls, "note and go on". */
static void supervisor_on_notification(struct supervisor *s, short revents)
{
	if (!(revents & POLLIN)) {
		close(s->listener_fd);
		s->listener_fd = -1;
		return;
	}
	char req_buf[256] __attribute__((aligned(8))) = { 0 };
	char resp_buf[256] __attribute__((aligned(8))) = { 0 };
	struct seccomp_notif *req = (struct seccomp_notif *)req_buf;
	struct seccomp_notif_resp *resp = (struct seccomp_notif_resp *)resp_buf;

	if (ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return; /* the caller died meanwhile */
	if (s->broker && sockbroker_handles(req)) {
		sockbroker_submit(s->broker, req); /* the broker answers */
		return;
	}
	resp->id = req->id;
	/* The arguments are the caller's registers, fixed while it waits: a
	 * decision on them cannot be raced, unlike one on a path it points to. */
	const struct syscall_trace *t =
		s->config->isolation.trace_outside_writes &&
				!syscall_filter_sets_id(req->data.nr, req->data.args)
			? syscall_filter_traced(req->data.nr)
			: NULL;
	if (t) {
		supervisor_trace_write(s, req, t);
		supervisor_note_device_node(s, req, t);
		supervisor_note_privileged_xattr(s, req, t);
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else {
		supervisor_record_denial(s->result, req->data.nr, req->data.arch);
		supervisor_note_setid(s->result, req);
		resp->error = -syscall_filter_refusal_errno(req->data.nr, req->data.args);
	}
	(void)ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_SEND, resp);
}

/* In the quarantine, init reports the command's own status, once every
 * process of the quarantine is dead: the run's result is complete then,
 * although init itself may still be exiting. */
static void supervisor_read_isolate_status(struct supervisor *s)
{
	struct isolate_status status;
	ssize_t n = read(s->status_fd, &status, sizeof(status));

	if (n < 0 && errno == EINTR)
		return;
	close(s->status_fd);
	s->status_fd = -1;
	/* EOF: init died without a word (killed at the timeout's deadline);
	 * its own wait status stands. A command that failed before execve()
	 * also exits, and init reports that too, but the stage report already
	 * said what happened. */
	if (n != (ssize_t)sizeof(status) || s->result->outcome == SANDBOX_SETUP_FAILED)
		return;
	struct sandbox_result *r = s->result;
	bool timed_out = r->outcome == SANDBOX_TIMED_OUT;
	if (WIFEXITED(status.wait_status)) {
		r->exit_code = WEXITSTATUS(status.wait_status);
		r->term_signal = 0;
		if (!timed_out)
			r->outcome = SANDBOX_EXITED;
	} else if (WIFSIGNALED(status.wait_status)) {
		r->term_signal = WTERMSIG(status.wait_status);
		if (!timed_out)
			r->outcome = SANDBOX_SIGNALED;
	}
	r->descendants_killed = status.killed;
	r->max_rss_kib = status.max_rss_kib;
	r->user_cpu_ms = status.user_cpu_us / 1000;
	r->system_cpu_ms = status.system_cpu_us / 1000;
	r->scratch_counted = status.scratch_counted != 0;
	r->scratch_entries = status.scratch_entries;
	r->scratch_bytes = status.scratch_bytes;
	r->ended_realtime_ns = clock_realtime_ns();
	s->command_done = true;
	s->timeout_at_ns = s->kill_at_ns = 0;
	if (!s->drain_until_ns)
		s->drain_until_ns = clock_monotonic_ns() + DRAIN_AFTER_EXIT_MS * 1000000ULL;
}

static void supervisor_loop(struct supervisor *s)
{
	for (;;) {
		bool pipes_open = s->out_fds[0] >= 0 || s->out_fds[1] >= 0;
		if ((s->main_exited || s->command_done) && !pipes_open)
			return;

		uint64_t now = clock_monotonic_ns();
		if (s->drain_until_ns && now >= s->drain_until_ns)
			return;
		supervisor_on_deadline(s, now);

		struct pollfd pfd[7] = {
			{ .fd = s->out_fds[0], .events = POLLIN },
			{ .fd = s->out_fds[1], .events = POLLIN },
			{ .fd = s->main_exited ? -1 : s->signal_fd, .events = POLLIN },
			{ .fd = s->listener_fd, .events = POLLIN },
			{ .fd = s->status_fd, .events = POLLIN },
			{ .fd = s->cancel_fd, .events = POLLIN },
			{ .fd = s->watch_fd, .events = POLLIN },
		};
		int timeout_ms = supervisor_poll_timeout_ms(s, now);
		if (s->broker) {
			/* a connect in flight whose caller stopped waiting */
			sockbroker_sweep(s->broker);
			int sweep_ms = sockbroker_poll_timeout_ms(s->broker);
			if (sweep_ms >= 0 && (timeout_ms < 0 || sweep_ms < timeout_ms))
				timeout_ms = sweep_ms;
		}
		int n = poll(pfd, 7, timeout_ms);
		if (n < 0 && errno != EINTR)
			return;
		for (int i = 0; i < 2; i++)
			if (pfd[i].revents)
				supervisor_read(s, i);
		if (pfd[4].revents)
			supervisor_read_isolate_status(s);
		if (pfd[2].revents)
			supervisor_on_child_signal(s);
		if (pfd[3].revents)
			supervisor_on_notification(s, pfd[3].revents);
		if (pfd[5].revents)
			supervisor_on_cancel(s);
		if (pfd[6].revents && !s->config->on_watch(s->config->userdata, s->watch_fd))
			s->watch_fd = -1;
	}
}

/* Reads the child's stage report: 0 when execve() succeeded (EOF), or the
 * failed stage's report. */
static bool supervisor_read_report(int report_fd, struct child_report *ret_report)
{
	for (;;) {
		ssize_t n = read(report_fd, ret_report, sizeof(*ret_report));
		if (n < 0 && errno == EINTR)
			continue;
		return n == (ssize_t)sizeof(*ret_report);
	}
}

#define CHILD_STACK_BYTES (64 * 1024)

__attribute__((no_sanitize("address", "undefined"))) static int child_entry(void *setup)
{
	child_exec(setup);
}

/* Starts the child the way posix_spawn() does: sharing airlock's memory
 * (CLONE_VM) on a stack of its own, with airlock suspended until the child
 * calls execve() or exits (CLONE_VFORK). No page tables are copied, which
 * halves the cost of a run; it is safe because the child only makes raw
 * syscalls (child.c) and every signal is blocked while it shares memory. */
static pid_t clone_child_isolated(struct child_setup *setup)
{
	/* New namespaces for everything; fork semantics (no CLONE_VM), because
	 * the init process outlives execve() and must not share memory. */
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} args = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			 CLONE_NEWCGROUP |
			 (setup->config->isolation.share_net ? 0 : (uint64_t)CLONE_NEWNET),
		.exit_signal = SIGCHLD,
	};
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));

	if (pid == 0)
		child_init(setup);
	return pid;
}

static pid_t clone_child(struct child_setup *setup)
{
	if (setup->plan)
		return clone_child_isolated(setup);

	void *stack = mmap(NULL, CHILD_STACK_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;

	sigset_t all, old;
	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_entry, (char *)stack + CHILD_STACK_BYTES,
			  CLONE_VM | CLONE_VFORK | SIGCHLD, setup);
	int saved_errno = errno;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	munmap(stack, CHILD_STACK_BYTES);
	errno = saved_errno;
	return pid;
}

struct supervisor_fds {
	int stdin_fd;
	int out[2][2];
	int report[2];
	int signal_fd;
	int notify[2]; /* socketpair: the seccomp listener travels on it */
	int status[2]; /* init -> supervisor */
	int go[2]; /* supervisor -> init: placed in the cgroups */
	int scan[2]; /* socketpair: the read scan's answer to init (readscan.h) */
};

#define SUPERVISOR_FDS_INIT                                                                         \
	{                                                                                           \
		-1, { { -1, -1 }, { -1, -1 } }, { -1, -1 }, -1, { -1, -1 }, { -1, -1 }, { -1, -1 }, \
		{                                                                                   \
			-1, -1                                                                      \
		}                                                                                   \
	}

static void close_and_invalidate(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void supervisor_fds_close(struct supervisor_fds *f)
{
	int *all[] = { &f->stdin_fd,  &f->out[0][0], &f->out[0][1], &f->out[1][0],
		       &f->out[1][1], &f->report[0], &f->report[1], &f->signal_fd,
		       &f->notify[0], &f->notify[1], &f->status[0], &f->status[1],
		       &f->go[0],     &f->go[1],     &f->scan[0],   &f->scan[1] };
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		close_and_invalidate(all[i]);
}

static int supervisor_fds_open(struct supervisor_fds *f, const sigset_t *sigchld, bool isolated,
			       bool scan, struct error *err)
{
	if (isolated && (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f->notify) < 0 ||
			 pipe2(f->status, O_CLOEXEC) < 0 || pipe2(f->go, O_CLOEXEC) < 0 ||
			 (scan && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f->scan) < 0)))
		return error_set_errno(err, errno, "cannot create quarantine pipes");
	f->stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (f->stdin_fd < 0)
		return error_set_errno(err, errno, "cannot open /dev/null");
	for (int i = 0; i < 2; i++)
		if (pipe2(f->out[i], O_CLOEXEC) < 0)
			return error_set_errno(err, errno, "cannot create output pipe");
	if (pipe2(f->report, O_CLOEXEC) < 0)
		return error_set_errno(err, errno, "cannot create report pipe");
	f->signal_fd = signalfd(-1, sigchld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (f->signal_fd < 0)
		return error_set_errno(err, errno, "cannot create signalfd");
	/* A larger pipe halves the wake-ups for chatty commands; best effort. */
	(void)fcntl(f->out[0][1], F_SETPIPE_SZ, PIPE_BYTES);
	for (int i = 0; i < 2; i++)
		(void)fcntl(f->out[i][0], F_SETFL, O_NONBLOCK);
	return 0;
}

static void supervisor_fds_closep(struct supervisor_fds *f)
{
	supervisor_fds_close(f);
}

static void supervisor_count_killed(struct supervisor *s)
{
	s->result->descendants_killed = 0;
	for (size_t i = 0; i < s->killed.n; i++)
		if (s->killed.pids[i] != s->main_pid)
			s->result->descendants_killed++;
}

struct sandbox_teardown {
	struct isolate_plan plan;
	struct cgroup_run cgroup;
	pid_t init_pid; /* 0 once reaped */
	pthread_t reaper;
	bool reaping; /* the reaper thread runs sandbox_teardown_reap() */
};

/* Reaps init and removes the run's cgroups: syscalls only, on this thread's
 * own fields, so a thread of its own can do it while the caller writes the
 * receipt (the namespaces' teardown in init's exit, and a memory cgroup's
 * removal, take 0.2-1 ms here). */
static void *sandbox_teardown_reap(void *arg)
{
	struct sandbox_teardown *t = arg;

	if (t->init_pid > 0) {
		/* Init has reported and is exiting; the kill only guarantees it. */
		(void)kill(t->init_pid, SIGKILL);
		while (waitpid(t->init_pid, NULL, 0) < 0 && errno == EINTR)
			;
		t->init_pid = 0;
	}
	/* Only now is the cgroup empty. */
	cgroup_run_destroy(&t->cgroup);
	return NULL;
}

/* Starts the reaper on a thread of its own, or leaves it to the finish. */
static void sandbox_teardown_start(struct sandbox_teardown *t)
{
	t->reaping = pthread_create(&t->reaper, NULL, sandbox_teardown_reap, t) == 0;
}

void sandbox_teardown_finish(struct sandbox_teardown *t)
{
	if (!t)
		return;
	if (t->reaping)
		(void)pthread_join(t->reaper, NULL);
	else
		(void)sandbox_teardown_reap(t);
	isolate_plan_release(&t->plan);
	free(t);
}

static void sandbox_teardown_finishp(struct sandbox_teardown **t)
{
	sandbox_teardown_finish(*t);
}

/* A dry run as root: the child's maps written from here (only a writer
 * privileged in this namespace may map more than one id), then the outcome
 * sent to init, which waits for it before it uses its namespace. */
static bool supervisor_map_ids(const struct isolate_plan *plan, pid_t pid, int go_fd)
{
	int32_t mapped = (int32_t)-isolate_write_child_maps(plan, pid);

	(void)fd_write_all(go_fd, &mapped, sizeof(mapped));
	return mapped == 0;
}

/* The run's cgroups to init (isolate.h): their bits, and the `tasks` files
 * that are open (-1: none). Init waits for it: 0, or the errno of a send
 * that failed, after which init is killed and the run fails closed. */
static int supervisor_send_cgroups(int notify_fd, const int tasks[2])
{
	uint8_t bits = (tasks[0] >= 0 ? ISOLATE_CGROUP_MEMORY : 0) |
		       (tasks[1] >= 0 ? ISOLATE_CGROUP_PIDS : 0);
	int fds[2];
	size_t n = 0;
	for (size_t i = 0; i < 2; i++)
		if (tasks[i] >= 0)
			fds[n++] = tasks[i];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(fds))];
	} control = { 0 };
	struct iovec iov = { .iov_base = &bits, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (n) {
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	for (;;) {
		if (sendmsg(notify_fd, &msg, MSG_NOSIGNAL) == 1)
			return 0;
		if (errno != EINTR)
			return errno;
	}
}

/* Which cgroups init entered, and which seccomp program it loads: its
 * answer on the notify socket, sent before the seccomp listener and before
 * the command starts, so it is there once the report is (the report pipe's
 * EOF or a failure) if init got that far. A controller init is not in is
 * not in force: the receipt does not name it, and its limit is not read.
 * Reads count as traced only when init said it loads the program that
 * traces them (a missing answer: not traced, which linkgroups judges the
 * conservative way). */
static void supervisor_read_cgroups(int notify_fd, struct sandbox_teardown *td,
				    struct sandbox_result *result)
{
	struct cgroup_run *cg = &td->cgroup;
	struct sandbox_manifest *manifest = &result->manifest;
	uint8_t moved = 0;
	ssize_t n;

	while ((n = recv(notify_fd, &moved, 1, MSG_DONTWAIT)) < 0 && errno == EINTR)
		;
	if (n != 1)
		moved = 0;
	cg->memory = cg->memory && (moved & ISOLATE_CGROUP_MEMORY);
	cg->pids = cg->pids && (moved & ISOLATE_CGROUP_PIDS);
	manifest->cgroup_memory = cg->memory;
	manifest->cgroup_pids = cg->pids;
	bool untraced = (moved & ISOLATE_READS_UNTRACED) && td->plan.filter_untraced_reads.len;
	if (untraced)
		manifest->n_seccomp_rules = td->plan.filter_untraced_reads.n_rules;
	result->reads_traced = n == 1 && !untraced && td->plan.iso->trace_outside_writes;
}

/* The quarantine's plan, in a teardown made for it (*ret_td, set at once so
 * that the caller's cleanup owns it); 1 when a layer cannot be built, with
 * result saying which (fail closed: no run). */
static int supervisor_plan(const struct sandbox_config *config, const struct supervisor_fds *fds,
			   struct sandbox_result *result, struct sandbox_teardown **ret_td,
			   struct error *err)
{
	struct sandbox_teardown *td = calloc(1, sizeof(*td));
	if (!td)
		return error_set(err, ENOMEM, "out of memory");
	*ret_td = td;
	td->plan = (struct isolate_plan){ .notify_fd = -1,
					  .status_fd = -1,
					  .go_fd = -1,
					  .scan_fd = -1,
					  .supervisor_fds = { -1, -1, -1, -1 } };
	struct error plan_err = { 0 };
	enum sandbox_stage stage;
	if (isolate_plan_prepare(config, &td->plan, &stage, &plan_err) < 0) {
		/* Fail closed: a layer that cannot be built means no run. */
		result->outcome = SANDBOX_SETUP_FAILED;
		result->failed_stage = stage;
		result->failed_errno = plan_err.code;
		snprintf(result->failed_message, sizeof(result->failed_message), "%.500s",
			 plan_err.msg);
		return 1;
	}
	td->plan.notify_fd = fds->notify[1];
	td->plan.status_fd = fds->status[1];
	td->plan.go_fd = fds->go[0];
	td->plan.supervisor_fds[0] = fds->notify[0];
	td->plan.supervisor_fds[1] = fds->status[0];
	td->plan.supervisor_fds[2] = fds->go[1];
	td->plan.scan_fd = fds->scan[0];
	result->manifest = (struct sandbox_manifest){
		.isolated = true,
		.landlock_abi = td->plan.landlock_abi,
		.landlock_scoped = td->plan.landlock_handled.scoped,
		.n_seccomp_rules = td->plan.filter.n_rules,
		.connect_mediated = td->plan.mediate_connect,
		.hidden = TAKE_PTR(td->plan.enforced_hidden),
		.exposed = TAKE_PTR(td->plan.enforced_exposed),
		.read_only = TAKE_PTR(td->plan.protect.enforced),
	};
	return 0;
}

/* Init started (pid): its ids mapped, its go, and its cgroups sent. Returns
 * the errno of sending the cgroups (init then killed), else 0. */
static int supervisor_start_init(const struct sandbox_config *config, struct supervisor_fds *fds,
				 struct sandbox_teardown *td, pid_t pid, struct sandbox_result *result)
{
	td->init_pid = pid;
	if (td->plan.parent_maps && supervisor_map_ids(&td->plan, pid, fds->go[1]))
		result->manifest.ids_mapped = true;
	char go = CHILD_GO;
	(void)fd_write_all(fds->go[1], &go, 1);
	close_and_invalidate(&fds->go[1]);
	close_and_invalidate(&fds->go[0]);
	/* While init builds the quarantine: the run's cgroups, which init
	 * enters itself before it starts the command (ISOLATE_CGROUP_*).
	 * Memory is limited by a cgroup where one can be made (the OOM
	 * killer then says which limit fired), else by RLIMIT_AS, which
	 * init drops once it is in a memory cgroup. */
	int tasks[2] = { -1, -1 };
	if (cgroup_run_create(&td->cgroup, config->isolation.memory_bytes,
			      config->isolation.max_processes))
		cgroup_run_open_tasks(&td->cgroup, tasks);
	int send_errno = supervisor_send_cgroups(fds->notify[0], tasks);
	for (size_t i = 0; i < ARRAY_SIZE(tasks); i++)
		close_and_invalidate(&tasks[i]);
	if (send_errno)
		(void)kill(pid, SIGKILL); /* it would wait for the message forever */
	return send_errno;
}

/* The child's report, then, when it set up, the run supervised to its end. */
static void supervisor_run(struct supervisor *s, struct supervisor_fds *fds,
			   struct sandbox_teardown *td, int send_errno, uint64_t started_ns)
{
	const struct sandbox_config *config = s->config;
	struct sandbox_result *result = s->result;
	bool isolated = s->isolated;
	struct child_report report;
	bool failed = supervisor_read_report(fds->report[0], &report);
	if (!failed && send_errno) {
		failed = true;
		report = (struct child_report){ .stage = SANDBOX_STAGE_INIT, .error = send_errno };
	}
	/* Init has loaded its seccomp program, or failed: the scan's answer
	 * is moot now. Joined at the end, not while the command waits for
	 * its first notifications to be answered. */
	readscan_cancel(s->scan);

	if (isolated)
		supervisor_read_cgroups(fds->notify[0], td, result);
	if (failed) {
		supervisor_kill_all(s);
		result->outcome = SANDBOX_SETUP_FAILED;
		result->failed_stage = (enum sandbox_stage)report.stage;
		result->failed_errno = report.error;
		return;
	}
	if (isolated)
		s->listener_fd = fdpass_receive(fds->notify[0]);
	if (isolated && config->isolation.net_listener_to > 0 && !config->isolation.share_net) {
		/* The proxy's listening socket, sent right after the listener:
		 * passed on, no copy kept (a proxy that dies takes the port with
		 * it). Missing, nobody listens: connects are refused. */
		int proxy_fd = fdpass_receive(fds->notify[0]);
		if (proxy_fd >= 0) {
			(void)fdpass_send(config->isolation.net_listener_to, proxy_fd);
			close(proxy_fd);
		}
	}
	/* Every notification is a round trip the caller waits out (a dry
	 * run's traced opens, a mediated connect): the kernel switches to the
	 * supervisor on the caller's CPU and back, rather than waking it
	 * wherever it sleeps. What is traced and answered is the same. */
	if (s->listener_fd >= 0)
		(void)ioctl(s->listener_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			    SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	if (s->listener_fd >= 0 && td->plan.mediate_connect) {
		/* Without it each connect() is refused as a denial (EPERM). */
		struct sockbroker_config bc = { .listener_fd = s->listener_fd,
						.workspace = config->isolation.workspace,
						.writable = config->isolation.writable,
						.n_writable = config->isolation.n_writable,
						.share_net = config->isolation.share_net };
		struct error broker_err = { 0 };
		(void)sockbroker_new(&s->broker, &bc, &broker_err);
	}
	if (config->timeout_ms)
		s->timeout_at_ns = started_ns + config->timeout_ms * 1000000ULL;
	supervisor_loop(s);
	/* Init's report ends a quarantined run: nothing in it is alive,
	 * and init's own exit is the teardown's to wait for. */
	if (!s->command_done)
		supervisor_kill_all(s);
}

/* After the run: what is left of the supervisor released, and what the
 * quarantine's end says (its limits, init's status) recorded. */
static void supervisor_finish(struct supervisor *s, struct sandbox_teardown *td)
{
	struct sandbox_result *result = s->result;

	/* Interrupts connects still in flight: nothing waits for them now. */
	sockbroker_finish(s->broker, result);
	if (s->listener_fd >= 0)
		close(s->listener_fd);
	if (s->isolated) {
		if (s->status_fd >= 0)
			supervisor_read_isolate_status(s); /* init is gone: data or EOF */
		if (s->main_exited)
			td->init_pid = 0;
		result->manifest.memory_limit_hit = cgroup_run_memory_fired(&td->cgroup);
		result->manifest.pids_limit_hit = cgroup_run_pids_fired(&td->cgroup);
	} else {
		supervisor_count_killed(s);
	}
	readscan_stop(s->scan);
	s->scan = NULL;
	pid_set_release(&s->killed);
	free(s->event_slots);
	for (int i = 0; i < 2; i++)
		if (s->out_fds[i] >= 0)
			close(s->out_fds[i]);
}

/* Runs with SIGCHLD blocked, so its arrival is only seen on the signalfd. */
static int sandbox_spawn_and_supervise(const struct sandbox_config *config, const sigset_t *sigchld,
				       struct sandbox_result *result,
				       struct sandbox_teardown **ret_teardown, struct error *err)
{
	bool isolated = config->isolation.enabled;
	cleanup_with(supervisor_fds_closep) struct supervisor_fds fds = SUPERVISOR_FDS_INIT;
	bool scan = isolated && isolate_reads_scanned(&config->isolation);
	int r = supervisor_fds_open(&fds, sigchld, isolated, scan, err);
	if (r < 0)
		return r;
	/* The read scan first, so that it runs while the plan is made and
	 * init builds the quarantine. It keeps its end of the socket until
	 * it is stopped, so that the number init closes is still that end;
	 * a scan that cannot start leaves init no answer: reads traced. */
	cleanup_with(readscan_stopp) struct readscan *readscan = NULL;
	int scan_end = -1;
	if (scan && readscan_start(&readscan, config->isolation.workspace, fds.scan[1]) == 0)
		scan_end = TAKE_FD(fds.scan[1]);
	close_and_invalidate(&fds.scan[1]); /* not started: EOF to init */
	cleanup_with(sandbox_teardown_finishp) struct sandbox_teardown *td = NULL;
	if (isolated) {
		r = supervisor_plan(config, &fds, result, &td, err);
		if (r != 0)
			return r < 0 ? r : 0;
		td->plan.supervisor_fds[3] = scan_end;
	}
	cleanup_free char *buf = malloc(READ_CHUNK_BYTES);
	if (!buf)
		return error_set(err, ENOMEM, "out of memory");

	struct child_setup setup = {
		.config = config,
		.parent_pid = getpid(),
		.stdin_fd = fds.stdin_fd,
		.stdout_fd = fds.out[0][1],
		.stderr_fd = fds.out[1][1],
		.report_fd = fds.report[1],
		.plan = isolated ? &td->plan : NULL,
	};
	if (isolated)
		setup.memory_rlimit = config->isolation.memory_bytes;
	/* The plan is made: from here the run may change the host. */
	pathcache_close();
#if AIRLOCK_TEST_HOOKS
	/* A test build's stand-in for a concurrent writer (another run's
	 * command, the agent's own tools) between the plan and the mounts. */
	const char *after_plan = getenv("AIRLOCK_TEST_AFTER_PLAN");
	/* NOLINTNEXTLINE(cert-env33-c): a test build runs the test's own shell command here */
	if (isolated && after_plan && system(after_plan) != 0)
		return error_set(err, EIO, "AIRLOCK_TEST_AFTER_PLAN failed");
#endif
	result->started_realtime_ns = clock_realtime_ns();
	uint64_t started_ns = clock_monotonic_ns();
	pid_t pid = clone_child(&setup);
	int send_errno = 0;
	if (pid < 0)
		return error_set_errno(err, errno, "cannot start the command");
	close_and_invalidate(&fds.scan[0]);
	if (isolated)
		send_errno = supervisor_start_init(config, &fds, td, pid, result);

	/* Only the child keeps the write ends. */
	close_and_invalidate(&fds.out[0][1]);
	close_and_invalidate(&fds.out[1][1]);
	close_and_invalidate(&fds.report[1]);
	close_and_invalidate(&fds.notify[1]);
	close_and_invalidate(&fds.status[1]);
	if (config->on_started)
		config->on_started(config->userdata);

	struct supervisor s = {
		.config = config,
		.result = result,
		.main_pid = pid,
		.out_fds = { TAKE_FD(fds.out[0][0]), TAKE_FD(fds.out[1][0]) },
		.signal_fd = fds.signal_fd,
		.buf = buf,
		.isolated = isolated,
		.listener_fd = -1,
		.status_fd = TAKE_FD(fds.status[0]),
		.cancel_fd = config->cancel_fd > 0 ? config->cancel_fd : -1,
		.watch_fd = config->watch_fd > 0 && config->on_watch ? config->watch_fd : -1,
		.scan = TAKE_PTR(readscan),
	};
	supervisor_run(&s, &fds, td, send_errno, started_ns);
	supervisor_finish(&s, td);

	result->duration_ns = clock_monotonic_ns() - started_ns;
	if (!result->ended_realtime_ns)
		result->ended_realtime_ns = clock_realtime_ns();
	if (td) { /* it outlives config, whose strings the plan borrowed */
		td->plan.iso = NULL;
		td->plan.workspace = td->plan.protect.workspace = NULL;
		sandbox_teardown_start(td);
	}
	*ret_teardown = TAKE_PTR(td);
	return 0;
}

void sandbox_result_release(struct sandbox_result *result)
{
	strv_free(result->manifest.hidden);
	strv_free(result->manifest.read_only);
	strv_free(result->manifest.exposed);
	result->manifest.hidden = result->manifest.read_only = result->manifest.exposed = NULL;
	for (size_t i = 0; i < result->n_path_events; i++)
		free(result->path_events[i].path);
	free(result->path_events);
	result->path_events = NULL;
	result->n_path_events = 0;
}

int sandbox_run_until_result(const struct sandbox_config *config, struct sandbox_result *ret_result,
			     struct sandbox_teardown **ret_teardown, struct error *err)
{
	/* Filled in place: a copy of this 35 KiB struct from a local one cost
	 * the stack's pages twice (page faults on the start's path). */
	*ret_result = (struct sandbox_result){ .outcome = SANDBOX_EXITED };
	struct sandbox_teardown *teardown = NULL;
	sigset_t sigchld, old_mask;

	/* Orphaned descendants come back to airlock, so none can escape the
	 * final kill by double-forking or calling setsid(). */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return error_set_errno(err, errno, "cannot become child subreaper");

	sigemptyset(&sigchld);
	sigaddset(&sigchld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &sigchld, &old_mask) < 0)
		return error_set_errno(err, errno, "cannot block SIGCHLD");
	int r = sandbox_spawn_and_supervise(config, &sigchld, ret_result, &teardown, err);
	(void)sigprocmask(SIG_SETMASK, &old_mask, NULL);
	if (r < 0) {
		sandbox_result_release(ret_result);
		return r;
	}
	*ret_teardown = teardown;
	return 0;
}

int sandbox_run(const struct sandbox_config *config, struct sandbox_result *ret_result,
		struct error *err)
{
	struct sandbox_teardown *teardown;
	int r = sandbox_run_until_result(config, ret_result, &teardown, err);

	if (r == 0)
		sandbox_teardown_finish(teardown);
	return r;
}

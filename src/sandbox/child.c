/* SPDX-License-Identifier: MIT */
/* The processes between clone() and execve(). Without the quarantine the
 * command's process shares airlock's memory (CLONE_VM) on a borrowed stack;
 * in it, the init process is a fork of airlock that never calls execve().
 * Both make raw syscalls only: no libc wrapper that keeps state, no
 * allocation, no stdio, nothing a sanitizer intercepts. A failed step is
 * reported as {stage, errno}. */
#include "sandbox/child.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* The child's exit status when it fails before execve(); the parent reads
 * the report instead, so the value only matters if the report is lost. */
#define CHILD_SETUP_EXIT 125

/* The kernel's struct sigaction for rt_sigaction(2) on x86-64 and arm64. */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#define CHILD_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

/* syscall() returns -1 and sets errno, which lives in airlock's TLS: harmless,
 * since airlock is suspended (CLONE_VFORK) and reads errno only after clone()
 * itself failed. */
CHILD_NO_SANITIZE static bool child_syscall_failed(long r)
{
	return r < 0;
}

CHILD_NO_SANITIZE _Noreturn static void child_fail(int report_fd, enum sandbox_stage stage)
{
	struct child_report report = { .stage = (int32_t)stage, .error = errno };

	(void)syscall(SYS_write, report_fd, &report, sizeof(report));
	syscall(SYS_exit_group, CHILD_SETUP_EXIT);
	__builtin_unreachable();
}

CHILD_NO_SANITIZE static bool child_reset_signals(void)
{
	struct kernel_sigaction dfl = { .handler = SIG_DFL };
	uint64_t none = 0;

	/* Dispositions set to "ignore" survive execve(); the command must start
	 * with the defaults whatever airlock ignores (SIGPIPE for --tee). */
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(uint64_t));
	return !child_syscall_failed(
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(uint64_t)));
}

CHILD_NO_SANITIZE void child_exec(const struct child_setup *setup)
{
	const struct sandbox_config *config = setup->config;
	int report_fd = setup->report_fd;

	if (!child_reset_signals())
		child_fail(report_fd, SANDBOX_STAGE_SIGNALS);

	if (child_syscall_failed(syscall(SYS_setsid)))
		child_fail(report_fd, SANDBOX_STAGE_SESSION);

	/* Race-free parent death: arm the signal, then check that the parent did
	 * not already die before it was armed. */
	if (child_syscall_failed(syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)))
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	if (syscall(SYS_getppid) != setup->parent_pid) {
		errno = ESRCH;
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	}

	/* The source descriptors are all above 2 (cli/main.c makes sure 0-2
	 * exist before anything is opened), so dup3() never sees old == new. */
	if (child_syscall_failed(syscall(SYS_dup3, setup->stdin_fd, STDIN_FILENO, 0)) ||
	    child_syscall_failed(syscall(SYS_dup3, setup->stdout_fd, STDOUT_FILENO, 0)) ||
	    child_syscall_failed(syscall(SYS_dup3, setup->stderr_fd, STDERR_FILENO, 0)))
		child_fail(report_fd, SANDBOX_STAGE_STDIO);

	if (config->cwd && child_syscall_failed(syscall(SYS_chdir, config->cwd)))
		child_fail(report_fd, SANDBOX_STAGE_CWD);

	for (size_t i = 0; i < config->n_rlimits; i++) {
		struct rlimit rl = { .rlim_cur = config->rlimits[i].value,
				     .rlim_max = config->rlimits[i].value };
		if (config->rlimits[i].resource == RLIMIT_CPU)
			rl.rlim_max++;
		if (child_syscall_failed(
			    syscall(SYS_prlimit64, 0, config->rlimits[i].resource, &rl, NULL)))
			child_fail(report_fd, SANDBOX_STAGE_RLIMITS);
	}

	if (setup->memory_rlimit) {
		struct rlimit rl = { .rlim_cur = setup->memory_rlimit,
				     .rlim_max = setup->memory_rlimit };
		if (child_syscall_failed(syscall(SYS_prlimit64, 0, RLIMIT_AS, &rl, NULL)))
			child_fail(report_fd, SANDBOX_STAGE_RLIMITS);
	}

	/* Everything above stderr closes at execve(), including the report pipe,
	 * whose EOF tells the parent that execve() succeeded. */
	if (child_syscall_failed(syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC)))
		child_fail(report_fd, SANDBOX_STAGE_FDS);

	syscall(SYS_execve, config->exec_path, config->argv, config->envp);
	child_fail(report_fd, SANDBOX_STAGE_EXEC);
}

/* ---- the quarantine's init process ------------------------------------ */

static void close_fd(int fd)
{
	if (fd >= 0)
		(void)syscall(SYS_close, fd);
}

/* The read scan's answer (isolate.h, ISOLATE_SCAN_NO_LINKS), waited for
 * plan->scan_wait_ms at most: ISOLATE_READS_UNTRACED when the workspace
 * held no hard-linked file, else 0, the reads traced (none in time, EOF,
 * an error, no scan). The descriptor is closed either way. */
static uint8_t init_read_scan(const struct isolate_plan *plan)
{
	if (plan->scan_fd < 0)
		return 0;
	struct pollfd p = { .fd = plan->scan_fd, .events = POLLIN };
	struct timespec wait = { .tv_sec = plan->scan_wait_ms / 1000,
				 .tv_nsec = plan->scan_wait_ms % 1000 * 1000000L };
	char answer = 0;
	if (syscall(SYS_ppoll, &p, 1, &wait, NULL, 0) == 1 && (p.revents & POLLIN) &&
	    syscall(SYS_read, plan->scan_fd, &answer, 1) != 1)
		answer = 0;
	close_fd(plan->scan_fd);
	return answer == ISOLATE_SCAN_NO_LINKS ? ISOLATE_READS_UNTRACED : 0;
}

/* Into the run's cgroups (isolate.h, ISOLATE_CGROUP_*), before the command
 * starts: the supervisor made them while init built the rest. Writing "0"
 * to a `tasks` file moves the writer, init's only thread, without the
 * kernel lock that moving another process takes (cgroup.h). Returns the
 * bits of the moves that held and ISOLATE_READS_UNTRACED, which the
 * supervisor is told too. */
static uint8_t init_enter_cgroups(const struct child_setup *setup)
{
	int notify_fd = setup->plan->notify_fd;
	uint8_t bits = 0;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = &bits, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = control.buf,
			      .msg_controllen = sizeof(control.buf) };
	long n;

	while ((n = syscall(SYS_recvmsg, notify_fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		if (n == 0)
			errno = ESRCH; /* the supervisor is gone */
		child_fail(setup->report_fd, SANDBOX_STAGE_INIT);
	}
	int fds[2] = { -1, -1 };
	size_t n_fds = 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len >= CMSG_LEN(0)) {
		const int *data = (const int *)CMSG_DATA(c);
		n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n_fds && i < 2; i++)
			fds[i] = data[i];
	}
	uint8_t moved = 0;
	size_t next = 0;
	const uint8_t order[2] = { ISOLATE_CGROUP_MEMORY, ISOLATE_CGROUP_PIDS };
	for (size_t i = 0; i < 2; i++) {
		if (!(bits & order[i]) || next >= n_fds || next >= 2)
			continue;
		int fd = fds[next++];
		if (syscall(SYS_write, fd, "0", 1) == 1)
			moved |= order[i];
	}
	for (size_t i = 0; i < n_fds && i < 2; i++)
		close_fd(fds[i]);
	/* The answer that decides init's seccomp program travels with the
	 * moves, so that the supervisor records what init loads. */
	moved |= init_read_scan(setup->plan);
	if (syscall(SYS_sendto, notify_fd, &moved, 1, MSG_NOSIGNAL, NULL, 0) != 1)
		child_fail(setup->report_fd, SANDBOX_STAGE_INIT);
	return moved;
}

/* Builds the quarantine, in an order that matters: mounts need the
 * capabilities of the new user namespace, Landlock needs no_new_privs, and
 * seccomp comes last because it refuses the mount API. The cgroups are
 * entered late, so the supervisor makes them meanwhile, and before seccomp,
 * whose listener follows init's answer on the socket. Returns the
 * ISOLATE_CGROUP_* bits init is in, and ISOLATE_READS_UNTRACED. */
static uint8_t init_build_quarantine(const struct child_setup *setup)
{
	const struct isolate_plan *plan = setup->plan;
	int report_fd = setup->report_fd;
	int proxy_fd = -1; /* init's only copy; never reaches the command */

	if (!isolate_user_ns(plan))
		child_fail(report_fd, SANDBOX_STAGE_USER_NS);
	if (!isolate_mounts(plan))
		child_fail(report_fd, SANDBOX_STAGE_MOUNTS);
	if (!isolate_pivot())
		child_fail(report_fd, SANDBOX_STAGE_PIVOT);
	if (!isolate_network(plan, &proxy_fd))
		child_fail(report_fd, SANDBOX_STAGE_NETWORK);
	if (!isolate_hostname(plan))
		child_fail(report_fd, SANDBOX_STAGE_HOSTNAME);
	if (!isolate_drop_capabilities(plan))
		child_fail(report_fd, SANDBOX_STAGE_CAPABILITIES);
	/* Undumpable, init's /proc/1 (its descriptors, its memory) is out of the
	 * command's reach although both run as the same user: otherwise the
	 * command could write a forged status on init's pipe to the supervisor.
	 * After the capability drop, which could reset the flag. */
	if (child_syscall_failed(syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0)))
		child_fail(report_fd, SANDBOX_STAGE_INIT);
	if (!isolate_no_new_privs())
		child_fail(report_fd, SANDBOX_STAGE_NO_NEW_PRIVS);
	if (!isolate_landlock(plan))
		child_fail(report_fd, SANDBOX_STAGE_LANDLOCK);
	uint8_t moved = init_enter_cgroups(setup);
	if (!isolate_seccomp(plan, proxy_fd, moved & ISOLATE_READS_UNTRACED))
		child_fail(report_fd, SANDBOX_STAGE_SECCOMP);
	return moved;
}

/* The private /tmp's use: inodes and bytes. false when it cannot be read. */
static bool init_scratch_use(uint64_t *ret_entries, uint64_t *ret_bytes)
{
	struct statfs fs;

	if (child_syscall_failed(syscall(SYS_statfs, "/tmp", &fs)) || fs.f_files < fs.f_ffree ||
	    fs.f_blocks < fs.f_bfree)
		return false;
	*ret_entries = (uint64_t)(fs.f_files - fs.f_ffree);
	*ret_bytes = (uint64_t)(fs.f_blocks - fs.f_bfree) * (uint64_t)fs.f_bsize;
	return true;
}

/* The private /tmp's use before the command started. */
static uint64_t init_scratch_base_entries, init_scratch_base_bytes;
static bool init_scratch_base_ok;

static _Noreturn void init_finish(const struct child_setup *setup, int wait_status, unsigned killed)
{
	struct isolate_status status = { .wait_status = wait_status, .killed = killed };

	/* Whatever the command left behind dies with it. */
	unsigned left = isolate_count_processes();
	if (left) {
		(void)syscall(SYS_kill, -1, SIGKILL);
		while (syscall(SYS_wait4, -1, NULL, 0, NULL) > 0)
			;
	}
	if (!status.killed)
		status.killed = left;
	/* Once every process is gone, what the command left in the scratch
	 * space: a count for the dry run's risk, never names or contents. The
	 * set-up's own directories there (the workspace's parents) cannot be
	 * removed under the workspace's mount, so the count never goes below
	 * the base. */
	uint64_t entries, bytes;
	if (init_scratch_base_ok && init_scratch_use(&entries, &bytes)) {
		status.scratch_counted = 1;
		status.scratch_entries =
			entries > init_scratch_base_entries ? entries - init_scratch_base_entries : 0;
		status.scratch_bytes =
			bytes > init_scratch_base_bytes ? bytes - init_scratch_base_bytes : 0;
	}
	struct rusage ru;
	if (syscall(SYS_getrusage, RUSAGE_CHILDREN, &ru) == 0) {
		status.max_rss_kib = (uint64_t)ru.ru_maxrss;
		status.user_cpu_us =
			(uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec;
		status.system_cpu_us =
			(uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
	}
	/* The supervisor finishes the run on this message, while the kernel
	 * still tears the namespaces down after init's exit. */
	(void)syscall(SYS_write, setup->plan->status_fd, &status, sizeof(status));
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* Closes every descriptor above stderr except a and b. */
static void close_all_but(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);

	if (lo > 3)
		(void)syscall(SYS_close_range, 3U, lo - 1, 0U);
	if (hi > lo + 1)
		(void)syscall(SYS_close_range, lo + 1, hi - 1, 0U);
	(void)syscall(SYS_close_range, hi + 1, ~0U, 0U);
}

void child_init(const struct child_setup *setup)
{
	int report_fd = setup->report_fd;
	uint64_t all = ~0ULL, watched = 0;
	const int signals[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT };

	/* Die with the supervisor: armed, then checked (the socket's peer, which
	 * only the supervisor holds once init has closed its copies). */
	for (size_t i = 0; i < ARRAY_SIZE(setup->plan->supervisor_fds); i++)
		close_fd(setup->plan->supervisor_fds[i]);
	if (child_syscall_failed(syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)))
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	struct pollfd peer = { .fd = setup->plan->notify_fd, .events = POLLIN };
	if (syscall(SYS_poll, &peer, 1, 0) > 0 && (peer.revents & POLLHUP)) {
		errno = ESRCH;
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	}

	uint8_t moved = init_build_quarantine(setup);
	init_scratch_base_ok = init_scratch_use(&init_scratch_base_entries, &init_scratch_base_bytes);

	/* Signals arrive on a signalfd: as pid 1, a signal it has no handler
	 * for would be ignored, but a blocked one is queued and read here. */
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		watched |= 1ULL << (signals[i] - 1);
	int sfd = -1;
	if (child_syscall_failed(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8)) ||
	    (sfd = (int)syscall(SYS_signalfd4, -1, &watched, 8, SFD_CLOEXEC)) < 0)
		child_fail(report_fd, SANDBOX_STAGE_INIT);

	/* The supervisor says go once it has started init (and mapped its ids,
	 * for a dry run as root). EOF means the supervisor is gone. */
	char go;
	if (syscall(SYS_read, setup->plan->go_fd, &go, 1) != 1) {
		errno = ESRCH;
		child_fail(report_fd, SANDBOX_STAGE_INIT);
	}
	close_fd(setup->plan->go_fd);

	struct child_setup command = *setup;
	command.parent_pid = 1;
	if (moved & ISOLATE_CGROUP_MEMORY)
		command.memory_rlimit = 0;
	/* vfork(): the command borrows init's memory until its execve(), so no
	 * page tables are copied and no page of init is faulted in again (1-2 ms
	 * of every run here). That is sound because child_exec() only makes
	 * raw syscalls and never returns. */
	pid_t pid = vfork();
	if (pid < 0)
		child_fail(report_fd, SANDBOX_STAGE_INIT);
	if (pid == 0)
		child_exec(&command);

	/* From here init needs only its signalfd and the status pipe: the
	 * report pipe reaches EOF once the command has called execve(), and
	 * nothing else the supervisor had open (its state directory among
	 * them) stays in the quarantine. */
	close_all_but(sfd, setup->plan->status_fd);

	unsigned killed_at_term = 0;
	for (;;) {
		struct signalfd_siginfo info;
		if (syscall(SYS_read, sfd, &info, sizeof(info)) != sizeof(info))
			continue;
		if (info.ssi_signo != SIGCHLD) {
			/* TERM (the timeout) goes to the whole tree. */
			unsigned n = isolate_count_processes();
			if (n > killed_at_term + 1)
				killed_at_term = n - 1; /* not counting the command */
			(void)syscall(SYS_kill, -1, info.ssi_signo);
			continue;
		}
		int status;
		long reaped;
		while ((reaped = syscall(SYS_wait4, -1, &status, WNOHANG, NULL)) > 0)
			if (reaped == pid)
				init_finish(setup, status, killed_at_term);
	}
}

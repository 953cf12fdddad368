/* SPDX-License-Identifier: MIT */
/* The child between clone() and execve(). It shares airlock's memory
 * (CLONE_VM) and runs on a borrowed stack, so it makes raw syscalls only:
 * no libc wrapper that keeps state, no allocation, no stdio, nothing a
 * sanitizer intercepts. A failed step is reported as {stage, errno}. */
#include "sandbox/child.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
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
		if (child_syscall_failed(
			    syscall(SYS_prlimit64, 0, config->rlimits[i].resource, &rl, NULL)))
			child_fail(report_fd, SANDBOX_STAGE_RLIMITS);
	}

	/* Everything above stderr closes at execve(), including the report pipe,
	 * whose EOF tells the parent that execve() succeeded. */
	if (child_syscall_failed(syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC)))
		child_fail(report_fd, SANDBOX_STAGE_FDS);

	syscall(SYS_execve, config->exec_path, config->argv, config->envp);
	child_fail(report_fd, SANDBOX_STAGE_EXEC);
}

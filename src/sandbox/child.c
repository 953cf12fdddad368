/* SPDX-License-Identifier: MIT */
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

static _Noreturn void child_fail(int report_fd, enum sandbox_stage stage)
{
	struct child_report report = { .stage = (int32_t)stage, .error = errno };
	ssize_t n = write(report_fd, &report, sizeof(report));

	(void)n; /* a lost report reads as "died before reporting" */
	_exit(CHILD_SETUP_EXIT);
}

static int child_reset_signals(void)
{
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	/* Dispositions set to "ignore" survive execve(); the command must start
	 * with the defaults whatever airlock ignores (SIGPIPE for --tee). */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	return sigprocmask(SIG_SETMASK, &none, NULL);
}


void child_exec(const struct child_setup *setup)
{
	const struct sandbox_config *config = setup->config;
	int report_fd = setup->report_fd;

	if (child_reset_signals() < 0)
		child_fail(report_fd, SANDBOX_STAGE_SIGNALS);

	if (setsid() < 0)
		child_fail(report_fd, SANDBOX_STAGE_SESSION);

	/* Race-free parent death: arm the signal, then check that the parent did
	 * not already die before it was armed. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	if (getppid() != setup->parent_pid) {
		errno = ESRCH;
		child_fail(report_fd, SANDBOX_STAGE_PARENT_DEATH);
	}

	if (dup2(setup->stdin_fd, STDIN_FILENO) < 0 || dup2(setup->stdout_fd, STDOUT_FILENO) < 0 ||
	    dup2(setup->stderr_fd, STDERR_FILENO) < 0)
		child_fail(report_fd, SANDBOX_STAGE_STDIO);

	if (config->cwd && chdir(config->cwd) < 0)
		child_fail(report_fd, SANDBOX_STAGE_CWD);

	for (size_t i = 0; i < config->n_rlimits; i++) {
		struct rlimit rl = { .rlim_cur = config->rlimits[i].value,
				     .rlim_max = config->rlimits[i].value };
		if (setrlimit(config->rlimits[i].resource, &rl) < 0)
			child_fail(report_fd, SANDBOX_STAGE_RLIMITS);
	}

	/* Everything above stderr closes at execve(), including the report pipe,
	 * whose EOF tells the parent that execve() succeeded. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(report_fd, SANDBOX_STAGE_FDS);

	execve(config->exec_path, config->argv, config->envp);
	child_fail(report_fd, SANDBOX_STAGE_EXEC);
}

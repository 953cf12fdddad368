/* SPDX-License-Identifier: MIT */
#include "core/permit/risk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "core/permit/proposal.h"
#include "core/permit/record.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

#define PERMIT_CHANGESET_MAX (256 << 20)
#define PERMIT_GIT_MAX	     (256 << 20)
/* How long the collect waits for git's output to its end, and its exit
 * (git started before it): ls-files of a large index takes tens of ms.
 * The agent controls .git: an index or a config include that is a FIFO
 * holds git in open() for ever. */
#define PERMIT_GIT_TIMEOUT_MS 10000

/* What git's process needs between clone() and execve(), prepared before:
 * it shares airlock's memory then (CLONE_VM). */
struct permit_git_exec {
	const char *path;
	char *const *argv;
	char *const *envp;
	int out_fd; /* the pipe's write end: stdout */
	int null_in, null_out; /* /dev/null: stdin, stderr */
	pid_t parent; /* airlock's pid */
};

/* The kernel's struct sigaction for rt_sigaction(2) on x86-64 and arm64. */
struct permit_kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* git's process from clone() to execve(), on the starting thread's stack
 * and memory while that thread is suspended (CLONE_VFORK): raw syscalls
 * only, as sandbox/child.c makes (no libc state, nothing a sanitizer
 * intercepts). git dies with the thread that started it (the parent death
 * signal is the creating thread's), armed, then checked: a parent already
 * gone leaves a getppid() that is not airlock. Every signal was blocked
 * by the clone's caller and is reset (dispositions and mask) before the
 * execve. The fds above 2 are all close-on-exec. */
__attribute__((no_sanitize("address", "undefined"))) static int permit_git_exec(void *data)
{
	const struct permit_git_exec *x = data;
	struct permit_kernel_sigaction dfl = { .handler = SIG_DFL };
	uint64_t none = 0;

	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    syscall(SYS_getppid) != x->parent)
		syscall(SYS_exit_group, 127);
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(uint64_t));
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(uint64_t)) < 0 ||
	    syscall(SYS_dup3, x->null_in, 0, 0) < 0 || syscall(SYS_dup3, x->out_fd, 1, 0) < 0 ||
	    syscall(SYS_dup3, x->null_out, 2, 0) < 0)
		syscall(SYS_exit_group, 127);
	(void)syscall(SYS_execve, x->path, x->argv, x->envp);
	syscall(SYS_exit_group, 127);
	__builtin_unreachable();
}

/* Starts `git ls-files -z --cached` in g->workspace: git's pid in g->pid,
 * its stdout's read end in g->fd, a pidfd of it in g->pidfd, and one more
 * in *ret_guard when ret_guard is not NULL; g->r -ESRCH when there is no
 * git (or it cannot be started), another failure with g->err. Its answer
 * is the tracked files (relative to the workspace, sorted by bytes). git
 * runs on the host, on a tree the command may have written, so nothing in
 * it may run code: no system or global configuration, the repository's
 * fsmonitor and untracked cache off (the only settings through which
 * ls-files starts a program), no optional locks. git dies with the
 * calling thread (permit_git_exec()). */
static void permit_git_spawn(struct permit_git *g, int *ret_guard)
{
	static const char *const gits[] = { "/usr/bin/git", "/bin/git", "/usr/local/bin/git" };
	const char *git = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(gits) && !git; i++)
		if (access(gits[i], X_OK) == 0)
			git = gits[i];
	if (!git) {
		g->r = -ESRCH;
		return;
	}
	char *const argv[] = { (char *)"git",	   (char *)"--no-optional-locks",
			       (char *)"-c",	   (char *)"core.fsmonitor=false",
			       (char *)"-c",	   (char *)"core.untrackedCache=false",
			       (char *)"-c",	   (char *)"safe.directory=*",
			       (char *)"-C",	   (char *)g->workspace,
			       (char *)"ls-files", (char *)"-z",
			       (char *)"--cached", NULL };
	/* No program git could start is found: a partial clone's lazy fetch
	 * (an index with a sparse directory whose tree is missing, which the
	 * agent can write) would run `git fetch` and its transport. git looks
	 * for its subcommands in GIT_EXEC_PATH, then PATH; ls-files is built in. */
	char *const envp[] = { (char *)"PATH=/nonexistent",
			       (char *)"GIT_EXEC_PATH=/nonexistent",
			       (char *)"GIT_NO_LAZY_FETCH=1",
			       (char *)"HOME=/nonexistent",
			       (char *)"GIT_CONFIG_NOSYSTEM=1",
			       (char *)"GIT_CONFIG_GLOBAL=/dev/null",
			       (char *)"LC_ALL=C",
			       NULL };
	cleanup_close int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cleanup_close int null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int pipefd[2];
	if (null_in < 0 || null_out < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		g->r = error_set_errno(&g->err, errno, "git's stdio");
		return;
	}
	struct permit_git_exec x = { .path = git,
				     .argv = argv,
				     .envp = envp,
				     .out_fd = pipefd[1],
				     .null_in = null_in,
				     .null_out = null_out,
				     .parent = getpid() };
	/* The child's stack while this thread is suspended (CLONE_VFORK); it
	 * makes a few raw syscalls. */
	_Alignas(64) char stack[16384];
	int pidfd = -1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* no handler runs in the child */
	pid_t pid = clone(permit_git_exec, stack + sizeof(stack),
			  CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &x, &pidfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		g->r = -ESRCH;
		return;
	}
	g->pid = pid;
	g->fd = pipefd[0];
	g->pidfd = pidfd;
	if (ret_guard)
		*ret_guard = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
}

/* The verdicts that are risk 5 whatever changed (docs/permit-format.md,
 * "Risk"); one without a name too, the safer answer. */
static bool permit_verdict_is_risk_5(enum dryrun_verdict verdict)
{
	switch (verdict) {
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
	case DRYRUN_VERDICT_NONE:
	case _DRYRUN_VERDICT_MAX:
		return true;
	case DRYRUN_VERDICT_DRY_RUN_OK:
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case DRYRUN_VERDICT_NO_EFFECT:
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
		return false;
	}
	return true;
}

/* Whether permit_observe() asks git about cs: what a verdict of risk 5 or
 * an empty change set decides needs no index. */
static bool permit_observe_needs_git(enum dryrun_verdict verdict, const struct changeset *cs)
{
	return !permit_verdict_is_risk_5(verdict) && cs->n_entries > 0;
}

/* git's thread: it starts git, hands it to the owner (spawned), and
 * lives until git has exited, so that git dies with airlock and never
 * before its answer is whole. It is detached: past the hand-over g may be
 * gone, and the owner, which reads git's answer and reaps it, waits for no
 * more of it (a join would add this thread's wake-up after git's exit to
 * the collect). Every signal is blocked in it. */
static void *permit_git_main(void *data)
{
	struct permit_git *g = data;
	int guard = -1;

	permit_git_spawn(g, &guard);
	pthread_mutex_lock(&g->lock);
	g->spawned = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	/* Without a guard (no descriptor for it) git dies now: no answer, as
	 * without an index. */
	if (guard >= 0) {
		/* Until git has exited (the owner reaps it: WNOWAIT; ECHILD
		 * once reaped), or anything else ends the wait. */
		siginfo_t info;
		(void)waitid(P_PIDFD, (id_t)guard, &info, WEXITED | WNOWAIT);
		close(guard);
	}
	return NULL;
}

/* After it, g's pid, fd, pidfd, r and err are this thread's to read. */
static void permit_git_handed(struct permit_git *g)
{
	if (!g->threaded)
		return;
	pthread_mutex_lock(&g->lock);
	while (!g->spawned)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	g->threaded = false;
}

void permit_git_judged(void *data, enum dryrun_verdict verdict, const struct changeset *cs)
{
	struct permit_git *g = data;

	/* A failed dry run's risk is not observed (permit_dryrun_locked()). */
	if (g->started || verdict == DRYRUN_VERDICT_DRY_RUN_FAILED ||
	    !permit_observe_needs_git(verdict, cs))
		return;
	g->started = true;
	/* The clone holds its caller until git's execve (a vfork'd child that
	 * waits for a CPU held this thread 0.2-4 ms here): a thread of its own
	 * (permit_git_main()) waits instead, created under a full signal mask
	 * (this process's signals, a supervisor's SIGCHLD among them, are
	 * never taken by it); it forks nothing else and touches only g, until
	 * the hand-over. Without one, git is started here. */
	pthread_attr_t attr;
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t thread;
	g->threaded = pthread_create(&thread, &attr, permit_git_main, g) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (!g->threaded)
		permit_git_spawn(g, NULL);
}

void permit_git_stop(struct permit_git *g)
{
	permit_git_handed(g);
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	if (g->pid > 0) {
		/* Not reaped yet: the pid is still git's, exited or not. */
		(void)kill(g->pid, SIGKILL);
		while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	g->pid = 0;
	if (g->pidfd >= 0)
		close(g->pidfd);
	g->pidfd = -1;
}

static uint64_t permit_git_timeout_ms(void)
{
#if AIRLOCK_TEST_HOOKS
	const char *t = getenv("AIRLOCK_TEST_PERMIT_GIT_TIMEOUT_MS");
	if (t)
		return strtoull(t, NULL, 10);
#endif
	return PERMIT_GIT_TIMEOUT_MS;
}

/* git's answer (started now if it was not), read to its end and git
 * reaped: the tracked files in *ret. -ESRCH when there is no git or no
 * repository, or git did not answer (its output to the end, and its exit)
 * by PERMIT_GIT_TIMEOUT_MS after the collect began (then killed and
 * reaped): as without an index. */
static int permit_git_collect(struct permit_git *g, char ***ret, struct error *err)
{
	permit_git_handed(g);
	if (!g->started) {
		g->started = true;
		permit_git_spawn(g, NULL);
	}
	if (g->r < 0) {
		if (g->r != -ESRCH)
			*err = g->err;
		return g->r;
	}
	uint64_t deadline = clock_monotonic_ns() + permit_git_timeout_ms() * 1000000;
	cleanup_free char *out = NULL;
	size_t n = 0;
	struct error ignored = { 0 };
	pid_t pid = g->pid, reaped = 0;
	int status = 0;
	/* Its stdout to the end, then its exit by the deadline too: git
	 * closes stdout before it exits, and a kill in between would fail an
	 * answer that is whole. Mostly it has exited by now. */
	int rr = fd_read_capped_until(g->fd, PERMIT_GIT_MAX, deadline, &out, &n, &ignored);
	if (rr == 0) {
		while ((reaped = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR)
			;
		if (reaped == 0)
			rr = fd_wait_readable_until(g->pidfd, deadline);
	}
	if (reaped == 0) {
		if (rr < 0)
			(void)kill(pid, SIGKILL); /* not reaped yet: still git's pid */
		while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
	}
	g->pid = 0;
	permit_git_stop(g); /* its fds */
	if (rr < 0 || reaped != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ESRCH;
	char **list = NULL;
	for (size_t off = 0; off < n;) {
		size_t len = strnlen(out + off, n - off);
		if (strv_push(&list, out + off) < 0) {
			strv_free(list);
			return error_set(err, ENOMEM, "out of memory");
		}
		off += len + 1;
	}
	if (!list && !(list = calloc(1, sizeof(char *))))
		return error_set(err, ENOMEM, "out of memory");
	*ret = list;
	return 0;
}

/* The first entry of the sorted list tracked[0..n) not below key (bytes). */
static size_t permit_lower_bound(char *const *tracked, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(tracked[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether path is a repository's own data: a component ".git" (the
 * workspace's, or a nested repository's or submodule's). git does not track
 * it, but its index is what tells tracked from generated: a change there
 * (`git rm --cached`) would judge the next change of the file generated. */
static bool permit_in_git_dir(const char *path)
{
	for (const char *p = path; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (strncmp(p, ".git", 4) == 0 && (p[4] == '\0' || p[4] == '/'))
			return true;
	return false;
}

/* Whether a tracked file is path or lies below it, or path lies below a
 * tracked entry: a submodule's gitlink (`sub`), whose files its own
 * repository tracks, not the index listed (a file of the index cannot
 * have names below it otherwise). git lists the index in byte order; "a/"
 * sorts after "a-b", so the two are looked up apart. */
static bool permit_tracked_at(char *const *tracked, size_t n, const char *path)
{
	size_t i = permit_lower_bound(tracked, n, path);
	if (i < n && strcmp(tracked[i], path) == 0)
		return true;
	for (const char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
		cleanup_free char *up = strndup(path, (size_t)(slash - path));
		if (!up)
			return true; /* out of memory: the safer answer */
		i = permit_lower_bound(tracked, n, up);
		if (i < n && strcmp(tracked[i], up) == 0)
			return true;
	}
	cleanup_free char *dir = NULL;
	if (asprintf(&dir, "%s/", path) < 0)
		return true; /* out of memory: the safer answer */
	i = permit_lower_bound(tracked, n, dir);
	return i < n && strncmp(tracked[i], dir, strlen(dir)) == 0;
}

/* The workspace the change set names, as the dry run saw it (its device
 * and inode): -1 when it is not (moved, replaced: then every change is
 * taken as a nested repository's, the safer answer). */
static int permit_open_workspace(const struct changeset *cs)
{
	struct stat st;
	int fd = open(cs->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && (fstat(fd, &st) < 0 || (int64_t)st.st_dev != cs->workspace_dev ||
			(int64_t)st.st_ino != cs->workspace_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Whether path lies in a repository nested in the workspace that the index
 * does not list (a clone inside it, no gitlink): a directory above it holds
 * `.git`, so its files are that repository's tracked ones. *clean (of
 * clean_size bytes): the last directory found outside any, whose
 * ancestors are not looked at again (entries come sorted). What cannot be
 * told is taken as a repository's. */
static bool permit_in_nested_repo(int ws_fd, const char *path, char *clean, size_t clean_size)
{
	size_t n = strlen(clean);
	const char *from = n && strncmp(path, clean, n) == 0 && path[n] == '/' ? path + n : path;
	char probe[PATH_MAX];

	if (ws_fd < 0)
		return true;
	for (const char *slash = strchr(from + (from != path), '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		size_t len = (size_t)(slash - path);
		struct stat st;
		if (len + sizeof("/.git") > sizeof(probe))
			return true;
		memcpy(probe, path, len);
		memcpy(probe + len, "/.git", sizeof("/.git"));
		if (fstatat(ws_fd, probe, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    (errno != ENOENT && errno != ENOTDIR))
			return true;
	}
	const char *last = strrchr(path, '/');
	size_t len = last ? (size_t)(last - path) : 0;
	if (len < clean_size) {
		memcpy(clean, path, len);
		clean[len] = '\0';
	}
	return false;
}

/* What the dry run changed, as a level (docs/permit-format.md, "Risk"):
 * the change set's entries are the workspace's, its scratch the count of
 * what the command left in its private /tmp (absent: not counted). */
static int permit_observe(struct permit_git *git, const struct changeset *cs,
			  enum dryrun_verdict verdict, int *ret, char *why, size_t why_size,
			  struct error *err)
{
	if (!permit_observe_needs_git(verdict, cs))
		permit_git_stop(git); /* started for a verdict judged otherwise now */
	if (permit_verdict_is_risk_5(verdict)) {
		const char *name = dryrun_verdict_name(verdict);
		snprintf(why, why_size, "the dry run's verdict is %s", name ? name : "unknown");
		*ret = 5;
		return 0;
	}
	if (cs->n_entries == 0) {
		int64_t left = changeset_keys_has(&cs->keys, CHANGESET_KEY_SCRATCH) &&
					       changeset_keys_has(&cs->scratch_keys,
								  CHANGESET_KEY_SCRATCH_ENTRIES)
				       ? cs->scratch_entries
				       : 0;
		if (left > 0) {
			snprintf(why, why_size,
				 "only scratch space changed: %lld objects left in the private /tmp, nothing in the workspace",
				 (long long)left);
			*ret = 2;
		} else {
			snprintf(why, why_size, "nothing in the workspace changed");
			*ret = 1;
		}
		return 0;
	}
	cleanup_with(strv_freep) char **tracked = NULL;
	int r = permit_git_collect(git, &tracked, err);
	if (r < 0 && r != -ESRCH)
		return r;
	size_t n_tracked = strv_length(tracked);
	cleanup_close int ws_fd = tracked ? permit_open_workspace(cs) : -1;
	char clean[PATH_MAX] = "";
	*ret = 3;
	snprintf(why, why_size, "only untracked or ignored (generated) files changed");
	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *c = &cs->entries[i];
		const char *paths[] = { c->path.bytes, c->from.bytes };
		const char *change = changeset_change_name(c->change);
		for (size_t k = 0; k < 2; k++) {
			if (!paths[k])
				continue;
			if (permit_in_git_dir(paths[k])) {
				snprintf(why, why_size, "the repository's own data changed: %s (%s)",
					 paths[k], change);
				*ret = 4;
				return 0;
			}
			if (tracked && permit_tracked_at(tracked, n_tracked, paths[k])) {
				snprintf(why, why_size, "a tracked file changed: %s (%s)", paths[k],
					 change);
				*ret = 4;
				return 0;
			}
			if (tracked && (k == 1 || c->change != CHANGESET_CREATED) &&
			    permit_in_nested_repo(ws_fd, paths[k], clean, sizeof(clean))) {
				snprintf(why, why_size,
					 "a file of a repository nested in the workspace changed: %s (%s)",
					 paths[k], change);
				*ret = 4;
				return 0;
			}
			if (!tracked && (k == 1 || c->change != CHANGESET_CREATED)) {
				snprintf(why, why_size,
					 "no git index to tell generated files apart: %s existed (%s)",
					 paths[k], change);
				*ret = 4;
				return 0;
			}
		}
		/* A mode or attributes set on one name of a hard-link group
		 * reach the shared inode: its other names change too. */
		for (size_t k = 0; k < c->n_also_names; k++) {
			const char *name = c->also_names[k].path.bytes;
			if (name &&
			    (permit_in_git_dir(name) ||
			     (tracked && (permit_tracked_at(tracked, n_tracked, name) ||
					  permit_in_nested_repo(ws_fd, name, clean, sizeof(clean)))))) {
				snprintf(why, why_size,
					 "a tracked file changed: %s (%s, a hard link of %s)", name,
					 change, paths[0]);
				*ret = 4;
				return 0;
			}
		}
	}
	return 0;
}

void permit_check_release(struct permit_check *c)
{
	changeset_free(c->cs);
	json_decref(c->problems);
	*c = (struct permit_check){ 0 };
}

int permit_recheck(struct store *store, const struct rules *rules, const struct permit *p,
		   struct permit_git *git, struct permit_check *c, struct error *err)
{
	cleanup_with(permit_git_stop) struct permit_git own = PERMIT_GIT_INIT(p->workspace);
	cleanup_free char *text = NULL;
	size_t n;
	struct rules_verdict rv;

	*c = (struct permit_check){ 0 };
	rules_classify(rules, p->p.argv, &rv);
	c->classified = rv.risk;
	snprintf(c->rule, sizeof(c->rule), "%s", rv.rule);
	snprintf(c->reason, sizeof(c->reason), "%s", rv.reason);
#if AIRLOCK_TEST_HOOKS
	/* A test build's stand-in for another writer of the state directory
	 * between the dry run's commit and this read. */
	const char *before = getenv("AIRLOCK_TEST_PERMIT_RECHECK");
	/* NOLINTNEXTLINE(cert-env33-c): a test build runs the test's own shell command here */
	if (before && system(before) != 0)
		return error_set(err, EIO, "AIRLOCK_TEST_PERMIT_RECHECK failed");
#endif
	int r = dryrun_dir_read_changeset(store, p->dryrun_id, PERMIT_CHANGESET_MAX, &text, &n, err);
	if (r < 0)
		return error_prefix(err, "permit %llu: dry run %llu", (unsigned long long)p->id,
				    (unsigned long long)p->dryrun_id);
	/* Nothing is judged, recorded or signed of bytes no entry backs: the
	 * cache is a file whoever writes the state directory may replace. */
	sha256_hex(text, n, c->changeset_sha256);
	r = dryrun_dir_changeset_backed(store, p->dryrun_id, c->changeset_sha256, "refusing it", err);
	if (r < 0)
		return error_prefix(err, "permit %llu", (unsigned long long)p->id);
	r = changeset_parse(text, n, &c->cs, err);
	if (r < 0)
		return error_prefix(err, "permit %llu: dry run %llu", (unsigned long long)p->id,
				    (unsigned long long)p->dryrun_id);
	enum dryrun_verdict recorded = c->cs->verdict;
	c->verdict = recorded;
	/* The dry run judged with the permit's paths; judged again with what
	 * the record says now. */
	if (recorded == DRYRUN_VERDICT_DRY_RUN_OK)
		c->verdict = changeset_verdict_of(c->cs, true, p->p.expected_paths,
						  p->p.expected_paths, &c->problems);
	r = permit_observe(git ? git : &own, c->cs, c->verdict, &c->observed, c->why,
			   sizeof(c->why), err);
	if (r < 0)
		return r;
	c->risk = MAX(MAX(p->p.declared_risk, c->classified), c->observed);
	return 0;
}

enum permit_state permit_state_for_verdict(enum dryrun_verdict verdict, int risk)
{
	enum permit_state state = PERMIT_REJECTED;

	switch (verdict) {
	case DRYRUN_VERDICT_NONE:
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
		return PERMIT_DRY_RUN_FAILED;
	case DRYRUN_VERDICT_NO_EFFECT:
		state = PERMIT_NO_EFFECT;
		break;
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
		state = PERMIT_UNEXPECTED_PATH;
		break;
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
		state = PERMIT_EXPECTED_PATH_MISSING;
		break;
	case DRYRUN_VERDICT_DRY_RUN_OK:
		state = PERMIT_DRY_RUN_OK;
		break;
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
	case _DRYRUN_VERDICT_MAX:
		break; /* a verdict apply never applies */
	}
	return risk >= 5 ? PERMIT_REJECTED : state;
}

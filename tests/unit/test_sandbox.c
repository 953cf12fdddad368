/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <stdio.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sandbox/cgroup.h"
#include "sandbox/protect.h"
#include "sandbox/sandbox.h"
#include "sandbox/syscall_filter.h"

struct collected {
	char out[256];
	size_t n_out;
	size_t n_err;
};

static void collect(void *userdata, enum sandbox_stream stream, const void *data, size_t n)
{
	struct collected *c = userdata;

	if (stream == SANDBOX_STDERR) {
		c->n_err += n;
		return;
	}
	size_t take = n < sizeof(c->out) - 1 - c->n_out ? n : sizeof(c->out) - 1 - c->n_out;
	memcpy(c->out + c->n_out, data, take);
	c->n_out += take;
	c->out[c->n_out] = '\0';
}

static int run_sh(const char *script, uint64_t timeout_ms, struct collected *c,
		  struct sandbox_result *res)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", (char *)"X=1", NULL };
	struct sandbox_config config = {
		.exec_path = "/bin/sh",
		.argv = argv,
		.envp = envp,
		.cwd = "/",
		.timeout_ms = timeout_ms,
		.kill_after_ms = 200,
		.on_output = collect,
		.userdata = c,
	};
	struct error err = { 0 };

	return sandbox_run(&config, res, &err);
}

static void test_resolve_uses_given_path(void)
{
	char *p = NULL;

	ASSERT_EQ_INT(sandbox_resolve_command("sh", "/nonexistent:/bin", "/", &p), 0);
	ASSERT_EQ_STR(p, "/bin/sh");
	free(p);
	ASSERT_EQ_INT(sandbox_resolve_command("sh", "/nonexistent", "/", &p), -ENOENT);
	ASSERT_EQ_INT(sandbox_resolve_command("passwd", "/etc", "/", &p), -EACCES);
	ASSERT_EQ_INT(sandbox_resolve_command("bin/sh", NULL, "/", &p), 0);
	ASSERT_EQ_STR(p, "bin/sh");
	free(p);
	ASSERT_EQ_INT(sandbox_resolve_command("./nope", NULL, "/", &p), -ENOENT);
}

static void test_run_reports_exit_and_output(void)
{
	struct collected c = { 0 };
	struct sandbox_result res;

	ASSERT_EQ_INT(run_sh("echo $X; echo e >&2; exit 7", 5000, &c, &res), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_EXITED);
	ASSERT_EQ_INT(res.exit_code, 7);
	ASSERT_EQ_STR(c.out, "1\n");
	ASSERT_EQ_INT(c.n_err, 2);
}

static void test_run_stdin_is_null_and_fds_closed(void)
{
	struct collected c = { 0 };
	struct sandbox_result res;

	ASSERT_EQ_INT(run_sh("cat; ls /proc/self/fd | wc -l", 5000, &c, &res), 0);
	ASSERT_EQ_INT(res.exit_code, 0);
	/* 0, 1, 2 and the one ls opens to list the directory */
	ASSERT_EQ_STR(c.out, "4\n");
}

static void test_run_signal(void)
{
	struct collected c = { 0 };
	struct sandbox_result res;

	ASSERT_EQ_INT(run_sh("kill -SEGV $$", 5000, &c, &res), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SIGNALED);
	ASSERT_EQ_INT(res.term_signal, SIGSEGV);
}

static void test_timeout_kills_background_children(void)
{
	struct collected c = { 0 };
	struct sandbox_result res;

	ASSERT_EQ_INT(run_sh("sleep 30 & setsid sleep 30 & sleep 30", 300, &c, &res), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_TIMED_OUT);
	ASSERT_TRUE(res.descendants_killed >= 2);
	ASSERT_TRUE(res.duration_ns < 5ULL * 1000000000ULL);
}

static void test_exit_kills_leftovers_and_does_not_hang(void)
{
	struct collected c = { 0 };
	struct sandbox_result res;

	/* The grandchild holds stdout open: airlock must not wait for it. */
	ASSERT_EQ_INT(run_sh("(setsid sleep 30 &) ; echo done", 10000, &c, &res), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_EXITED);
	ASSERT_EQ_INT(res.descendants_killed, 1);
	ASSERT_EQ_STR(c.out, "done\n");
	ASSERT_TRUE(res.duration_ns < 5ULL * 1000000000ULL);
}

static void test_setup_failure_names_stage(void)
{
	char *argv[] = { (char *)"true", NULL };
	char *envp[] = { NULL };
	struct sandbox_config config = {
		.exec_path = "/bin/true", .argv = argv, .envp = envp, .cwd = "/nonexistent-dir",
	};
	struct sandbox_result res;
	struct error err = { 0 };

	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SETUP_FAILED);
	ASSERT_EQ_INT(res.failed_stage, SANDBOX_STAGE_CWD);
	ASSERT_EQ_INT(res.failed_errno, ENOENT);
	ASSERT_EQ_STR(sandbox_stage_to_string(res.failed_stage), "cwd");
}

static void test_exec_failure_for_script_without_shebang(void)
{
	char path[] = "/tmp/airlock-noshebang-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(write(fd, "echo hi\n", 8), 8);
	close(fd);
	chmod(path, 0755);
	char *argv[] = { path, NULL };
	char *envp[] = { NULL };
	struct sandbox_config config = { .exec_path = path, .argv = argv, .envp = envp, .cwd = "/" };
	struct sandbox_result res;
	struct error err = { 0 };

	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	unlink(path);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SETUP_FAILED);
	ASSERT_EQ_INT(res.failed_stage, SANDBOX_STAGE_EXEC);
	ASSERT_EQ_INT(res.failed_errno, ENOEXEC);
}

static const struct protect_mount *find_mount(const struct protect_plan *plan, const char *ws,
					    const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	for (size_t i = 0; i < plan->n_mounts; i++)
		if (strcmp(plan->mounts[i].path, path) == 0)
			return &plan->mounts[i];
	return NULL;
}

static void test_protect_plans_pins_links_and_placeholders(void)
{
	char ws[] = "/tmp/airlock-protect-XXXXXX";
	char path[512];
	struct error err = { 0 };
	struct stat st;

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	snprintf(path, sizeof(path), "%s/tools", ws);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/tools/hooks", ws);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/.git", ws);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/.git/hooks", ws);
	ASSERT_EQ_INT(symlink("../tools/hooks", path), 0);

	struct protect_plan a = { .workspace = ws }, b = { .workspace = ws };
	const char *rels[] = { ".git/hooks", ".envrc", "new/dir/file" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", ws, rels[i]);
		ASSERT_EQ_INT(protect_plan_add(&a, path, &err), 0);
	}
	protect_plan_finish(&a);
	ASSERT_EQ_INT(a.n_mounts, 6);
	ASSERT_TRUE(!find_mount(&a, ws, ".git")->read_only);	    /* pinned directory */
	ASSERT_TRUE(!find_mount(&a, ws, ".git/hooks")->read_only); /* pinned link */
	ASSERT_TRUE(!find_mount(&a, ws, "tools")->read_only);
	ASSERT_TRUE(find_mount(&a, ws, "tools/hooks")->read_only); /* the link's target */
	ASSERT_TRUE(find_mount(&a, ws, ".envrc")->read_only);	    /* placeholder file */
	ASSERT_TRUE(find_mount(&a, ws, "new")->read_only);	    /* placeholder directory */
	for (size_t i = 1; i < a.n_mounts; i++) /* parents first */
		ASSERT_TRUE(strlen(a.mounts[i - 1].path) <= strlen(a.mounts[i].path));
	snprintf(path, sizeof(path), "%s/new", ws);
	ASSERT_EQ_INT(lstat(path, &st), 0);
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	snprintf(path, sizeof(path), "%s/.envrc", ws);
	ASSERT_EQ_INT(lstat(path, &st), 0);
	ASSERT_TRUE(S_ISREG(st.st_mode) && st.st_size == 0);
	ASSERT_EQ_INT(a.n_placeholders, 2);

	/* A second run joins the placeholder; the first one's end leaves it. */
	ASSERT_EQ_INT(protect_plan_add(&b, path, &err), 0);
	bool shared = b.n_placeholders == 1; /* needs user xattrs on /tmp */
	protect_plan_release(&a);
	ASSERT_EQ_INT(lstat(path, &st), shared ? 0 : -1);
	protect_plan_release(&b);
	ASSERT_EQ_INT(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/new", ws);
	ASSERT_EQ_INT(lstat(path, &st), -1);

	snprintf(path, sizeof(path), "rm -rf '%s'", ws);
	ASSERT_EQ_INT(system(path), 0);
}

static void test_protect_rejects_relative_and_loops(void)
{
	char ws[] = "/tmp/airlock-protect-XXXXXX";
	char path[512];
	struct error err = { 0 };

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	struct protect_plan plan = { .workspace = ws };
	ASSERT_EQ_INT(protect_plan_add(&plan, "relative/path", &err), -EINVAL);
	snprintf(path, sizeof(path), "%s/loop", ws);
	ASSERT_EQ_INT(symlink("loop", path), 0);
	ASSERT_EQ_INT(protect_plan_add(&plan, path, &err), -ELOOP);
	ASSERT_TRUE(strstr(err.msg, "too many symlinks") != NULL);
	protect_plan_release(&plan);
	unlink(path);
	rmdir(ws);
}

/* Regression: as a user without CAP_FOWNER, a read-only placeholder could
 * not get its marking xattr, so a concurrent run did not share it and the
 * first run to end removed it under the other. */
static void test_protect_placeholder_is_marked_when_unprivileged(void)
{
	char ws[] = "/tmp/airlock-protect-XXXXXX";
	char path[512];

	if (geteuid() != 0)
		return; /* the test drops to uid 65534 itself */
	ASSERT_TRUE(mkdtemp(ws) != NULL);
	ASSERT_EQ_INT(chown(ws, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/.envrc", ws);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct protect_plan plan = { .workspace = ws };
		struct error err = { 0 };
		char value[4];
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		if (protect_plan_add(&plan, path, &err) < 0 || plan.n_placeholders != 1)
			_exit(3);
		ssize_t n = getxattr(path, "user.airlock.placeholder", value, sizeof(value));
		bool marked = n > 0 || errno == ENOTSUP; /* a file system without user xattrs */
		protect_plan_release(&plan);
		_exit(marked ? 0 : 4);
	}
	int status;
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ_INT(WEXITSTATUS(status), 0);
	ASSERT_EQ_INT(access(path, F_OK), -1);
	rmdir(ws);
}

/* The program embedded at build time is what the rules compile to now, in
 * both modes, and it is handed out without a copy. */
static void test_embedded_filter_matches_the_rules(void)
{
	for (int trace = 0; trace <= 1; trace++) {
		struct syscall_filter built, compiled;
		struct error err = { 0 };
		ASSERT_EQ_INT(syscall_filter_build(&built, trace, &err), 0);
		ASSERT_EQ_INT(syscall_filter_compile(&compiled, trace, &err), 0);
		ASSERT_TRUE(!built.owned && compiled.owned);
		ASSERT_EQ_INT(built.len, compiled.len);
		ASSERT_EQ_INT(built.n_rules, compiled.n_rules);
		ASSERT_TRUE(built.n_rules >= 40);
		ASSERT_EQ_INT(memcmp(built.insns, compiled.insns, built.len * sizeof(*built.insns)), 0);
		syscall_filter_release(&built);
		syscall_filter_release(&compiled);
	}
}

/* Leftovers of killed supervisors go; a live supervisor's cgroup stays. */
static void test_cgroup_sweep_removes_only_dead_supervisors(void)
{
	const char *parent = "/sys/fs/cgroup/pids/airlock-sweep-test";
	char dead[128], live[128];

	if (geteuid() != 0 || access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) < 0)
		return; /* no v1 pids hierarchy we may write to */
	pid_t child = fork();
	ASSERT_TRUE(child >= 0);
	if (child == 0)
		_exit(0);
	ASSERT_EQ_INT(waitpid(child, NULL, 0), child);
	ASSERT_TRUE(mkdir(parent, 0755) == 0 || errno == EEXIST);
	snprintf(dead, sizeof(dead), "%s/%d-1", parent, (int)child);
	snprintf(live, sizeof(live), "%s/%d-2", parent, (int)getpid());
	ASSERT_EQ_INT(mkdir(dead, 0755), 0);
	ASSERT_EQ_INT(mkdir(live, 0755), 0);
	ASSERT_EQ_INT((int)cgroup_sweep_stale(parent), 1);
	ASSERT_EQ_INT(access(dead, F_OK), -1);
	ASSERT_EQ_INT(access(live, F_OK), 0);
	ASSERT_EQ_INT(rmdir(live), 0);
	ASSERT_EQ_INT(rmdir(parent), 0);
}

RUN_TESTS(T_(test_embedded_filter_matches_the_rules), T_(test_cgroup_sweep_removes_only_dead_supervisors),
	  T_(test_protect_placeholder_is_marked_when_unprivileged),
	  T_(test_protect_plans_pins_links_and_placeholders),
	  T_(test_protect_rejects_relative_and_loops), T_(test_resolve_uses_given_path), T_(test_run_reports_exit_and_output),
	  T_(test_run_stdin_is_null_and_fds_closed), T_(test_run_signal),
	  T_(test_timeout_kills_background_children),
	  T_(test_exit_kills_leftovers_and_does_not_hang), T_(test_setup_failure_names_stage),
	  T_(test_exec_failure_for_script_without_shebang))

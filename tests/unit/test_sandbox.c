/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <sched.h>
#include <dirent.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <stdio.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include "basic/fdpass.h"
#include "harness.h"
#include "sandbox/cgroup.h"
#include "sandbox/pathcache.h"
#include "sandbox/protect.h"
#include "sandbox/readscan.h"
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
		.exec_path = "/bin/true",
		.argv = argv,
		.envp = envp,
		.cwd = "/nonexistent-dir",
	};
	struct sandbox_result res;
	struct error err = { 0 };

	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SETUP_FAILED);
	ASSERT_EQ_INT(res.failed_stage, SANDBOX_STAGE_CWD);
	ASSERT_EQ_INT(res.failed_errno, ENOENT);
	ASSERT_EQ_STR(sandbox_stage_to_string(res.failed_stage), "cwd");
}

/* A writable directory is bound only if it is still the directory core
 * checked: another one at its path by then (a symlink or a rename swapped
 * in) fails the run at the mounts, and writes land nowhere. */
static void test_writable_is_the_checked_directory(void)
{
	char base[] = "/tmp/airlock-unit-writable.XXXXXX";
	ASSERT_TRUE(mkdtemp(base) != NULL);
	char ws[128], dir[128], other[128], script[512];
	snprintf(ws, sizeof(ws), "%s/ws", base);
	snprintf(dir, sizeof(dir), "%s/w", base);
	snprintf(other, sizeof(other), "%s/other", base);
	ASSERT_EQ_INT(mkdir(ws, 0755), 0);
	ASSERT_EQ_INT(mkdir(dir, 0755), 0);
	ASSERT_EQ_INT(mkdir(other, 0755), 0);
	struct stat st, st_other;
	ASSERT_EQ_INT(stat(dir, &st), 0);
	ASSERT_EQ_INT(stat(other, &st_other), 0);
	snprintf(script, sizeof(script), "echo x >%s/f", dir);
	char *argv[] = { (char *)"sh", (char *)"-c", script, NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct sandbox_writable w = { .path = dir, .dev = st.st_dev, .ino = st.st_ino };
	struct sandbox_config config = {
		.exec_path = "/bin/sh",
		.argv = argv,
		.envp = envp,
		.cwd = ws,
		.timeout_ms = 10000,
		.kill_after_ms = 200,
		.isolation = { .enabled = true,
			       .workspace = ws,
			       .writable = &w,
			       .n_writable = 1,
			       .tmp_bytes = 1 << 20,
			       .memory_bytes = 1ULL << 30,
			       .max_processes = 64 },
	};
	struct sandbox_result res;
	struct error err = { 0 };
	char f[160];
	snprintf(f, sizeof(f), "%s/f", dir);

	/* the checked directory: written */
	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_EXITED);
	ASSERT_EQ_INT(res.exit_code, 0);
	sandbox_result_release(&res);
	ASSERT_EQ_INT(unlink(f), 0);
	/* another directory at its path: refused at the mounts */
	w.ino = st_other.st_ino;
	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SETUP_FAILED);
	ASSERT_EQ_INT(res.failed_stage, SANDBOX_STAGE_MOUNTS);
	ASSERT_EQ_INT(res.failed_errno, ESTALE);
	sandbox_result_release(&res);
	ASSERT_TRUE(access(f, F_OK) < 0);
	/* a symlink on the way: refused too */
	w.ino = st.st_ino;
	char link[160];
	snprintf(link, sizeof(link), "%s/link", base);
	ASSERT_EQ_INT(symlink(dir, link), 0);
	w.path = link;
	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_SETUP_FAILED);
	ASSERT_EQ_INT(res.failed_stage, SANDBOX_STAGE_MOUNTS);
	ASSERT_EQ_INT(res.failed_errno, ELOOP);
	sandbox_result_release(&res);
	unlink(link);
	rmdir(dir);
	rmdir(other);
	rmdir(ws);
	rmdir(base);
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

/* Existing paths get mounts; missing ones get nothing, on the host or in
 * the plan, and still count as enforced (the run's caller moves aside
 * what the command creates there). */
static void test_protect_plans_pins_links_and_leaves_missing_paths_alone(void)
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

	struct protect_plan a = { .workspace = ws };
	const char *rels[] = { ".git/hooks", ".envrc", "new/dir/file" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", ws, rels[i]);
		ASSERT_EQ_INT(protect_plan_add(&a, path, &err), 0);
	}
	protect_plan_finish(&a);
	ASSERT_EQ_INT(a.n_mounts, 4);
	ASSERT_TRUE(!find_mount(&a, ws, ".git")->read_only); /* pinned directory */
	ASSERT_TRUE(!find_mount(&a, ws, ".git/hooks")->read_only); /* pinned link */
	ASSERT_TRUE(!find_mount(&a, ws, "tools")->read_only);
	ASSERT_TRUE(find_mount(&a, ws, "tools/hooks")->read_only); /* the link's target */
	ASSERT_TRUE(find_mount(&a, ws, ".envrc") == NULL);
	ASSERT_TRUE(find_mount(&a, ws, "new") == NULL);
	for (size_t i = 1; i < a.n_mounts; i++) /* parents first */
		ASSERT_TRUE(strlen(a.mounts[i - 1].path) <= strlen(a.mounts[i].path));
	size_t n = 0;
	for (char **p = a.enforced; p && *p; p++)
		n++;
	ASSERT_EQ_INT(n, 3);
	snprintf(path, sizeof(path), "%s/new", ws);
	ASSERT_EQ_INT(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/.envrc", ws);
	ASSERT_EQ_INT(lstat(path, &st), -1);
	protect_plan_release(&a);

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

/* Every program the selector can ask for is embedded, and no other: the
 * generator builds what syscall_filter_flags() gives, nothing it cannot. */
static void test_embedded_programs_are_the_selectors(void)
{
	bool reachable[_SYSCALL_FILTER_FLAGS_ALL + 1] = { false };

	for (unsigned in = 0; in < 16; in++) {
		unsigned flags = syscall_filter_flags(in & 1, in & 2, in & 4, in & 8);
		ASSERT_TRUE(flags <= _SYSCALL_FILTER_FLAGS_ALL);
		reachable[flags] = true;
	}
	for (unsigned flags = 0; flags <= _SYSCALL_FILTER_FLAGS_ALL + 1; flags++) {
		bool want = flags <= _SYSCALL_FILTER_FLAGS_ALL && reachable[flags];
		struct syscall_filter built;
		struct error err = { 0 };
		ASSERT_EQ_INT(syscall_filter_embedded(flags), want);
		ASSERT_EQ_INT(syscall_filter_flags_valid(flags), want);
		ASSERT_EQ_INT(syscall_filter_build(&built, flags, &err), want ? 0 : -EINVAL);
		if (want)
			syscall_filter_release(&built);
	}
}

/* The program embedded at build time is what the rules compile to now, in
 * every mode, and it is handed out without a copy. */
static void test_embedded_filter_matches_the_rules(void)
{
	for (unsigned trace = 0; trace <= _SYSCALL_FILTER_FLAGS_ALL; trace++) {
		struct syscall_filter built, compiled;
		struct error err = { 0 };
		if (!syscall_filter_flags_valid(trace))
			continue;
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

/* One call a filter child made, and whether the filter must refuse it. */
struct filter_call {
	long r; /* 0, or -errno */
	bool refused;
};

/* Loads the compiled program built with flags into the calling process, with
 * no listener: a refused call (a user notification nobody answers) then
 * fails with ENOSYS. 0, or 100 when it could not be built, 101 loaded. */
static int filter_child_load(unsigned flags)
{
	struct syscall_filter filter;
	struct error err = { 0 };

	if (syscall_filter_build(&filter, flags, &err) < 0)
		return 100;
	struct sock_fprog prog = { .len = filter.len, .filter = (struct sock_filter *)filter.insns };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return 101;
	return 0;
}

/* The number of the first call that did not do what it should, 0 when all
 * did. */
static int filter_first_wrong(const struct filter_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i].refused ? calls[i].r != -ENOSYS : calls[i].r < 0)
			return (int)i + 1;
	return 0;
}

/* child(arg) in a process of its own, which must exit 0. */
static void assert_child_succeeds(int (*child)(const char *), const char *arg)
{
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(child(arg));
	int status;
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

/* The compiled program itself refuses set-id modes and nothing else of the
 * same calls. Returns the number of the first call that did not do what it
 * should, 0 when all did. */
static int setid_filter_child(const char *dir)
{
	char f[512], g[512], h[512], d[512], n[512];

	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	snprintf(h, sizeof(h), "%s/h", dir);
	snprintf(d, sizeof(d), "%s/d", dir);
	snprintf(n, sizeof(n), "%s/n", dir);
	int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return 100;
	int r = filter_child_load(0);
	if (r)
		return r;
	struct open_how how = { .flags = O_CREAT | O_WRONLY, .mode = 04755 };
	/* Each call's outcome (-errno) is read right after it; none depends on
	 * the order in which the initializers run. */
#define E(call) ((call) < 0 ? -(long)errno : 0L)
	const struct filter_call calls[] = {
		{ E(syscall(SYS_chmod, f, 04755)), true },
		{ E(syscall(SYS_chmod, f, 02755)), true },
		{ E(syscall(SYS_chmod, f, (1UL << 32) | 04755)), true }, /* high bits change nothing */
		{ E(syscall(SYS_fchmod, fd, 06755)), true },
		{ E(syscall(SYS_fchmodat, AT_FDCWD, f, 04755)), true },
		{ E(syscall(452 /* fchmodat2 */, AT_FDCWD, f, 02755, 0)), true },
		{ E(syscall(SYS_openat, AT_FDCWD, g, O_CREAT | O_WRONLY | O_CLOEXEC, 04755)), true },
		{ E(syscall(SYS_open, g, O_CREAT | O_WRONLY | O_CLOEXEC, 02644)), true },
		{ E(syscall(SYS_openat, AT_FDCWD, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755)), true },
		{ E(syscall(SYS_creat, g, 04755)), true },
		{ E(syscall(SYS_mkdir, d, 02755)), true },
		{ E(syscall(SYS_mknodat, AT_FDCWD, n, S_IFREG | 04755, 0)), true },
		{ E(syscall(SYS_openat2, AT_FDCWD, h, &how, sizeof(how))), true },
		{ E(syscall(SYS_chmod, f, 0700)), false },
		{ E(syscall(SYS_chmod, f, (1UL << 32) | 0755)), false },
		{ E(syscall(SYS_fchmod, fd, 0644)), false },
		{ E(syscall(SYS_openat, AT_FDCWD, f, O_RDONLY | O_CLOEXEC, 04755)), false }, /* mode ignored */
		{ E(syscall(SYS_openat, AT_FDCWD, h, O_CREAT | O_WRONLY | O_CLOEXEC, 0755)), false },
		{ E(syscall(SYS_mkdir, d, 01777)), false },
	};
#undef E
	return filter_first_wrong(calls, sizeof(calls) / sizeof(calls[0]));
}

static void test_filter_refuses_setid_modes(void)
{
	char dir[] = "/tmp/airlock-setid.XXXXXX";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	assert_child_succeeds(setid_filter_child, dir);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* With SYSCALL_FILTER_MEDIATE_CONNECT, every connect() and the AF_UNIX
 * datagram sockets come to the supervisor (ENOSYS with no listener), and
 * nothing else of the same calls does. Returns the first call that did not
 * do what it should, 0 when all did. */
static int socket_filter_child(const char *unused)
{
	int pair[2];

	(void)unused;
	int r = filter_child_load(SYSCALL_FILTER_MEDIATE_CONNECT);
	if (r)
		return r;
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(9) };
#define E(call) ((call) < 0 ? -(long)errno : 0L)
	const struct filter_call calls[] = {
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_DGRAM, 0)), true },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)), true },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_RAW, 0)), true },
		{ E(syscall(SYS_socket, (1UL << 32) | AF_UNIX, SOCK_DGRAM, 0)), true }, /* high bits */
		{ E(syscall(SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, pair)), true },
		{ E(syscall(SYS_socketpair, AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, pair)), true },
		{ E(syscall(SYS_connect, 0, &in, sizeof(in))), true },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)), false },
	};
#undef E
	return filter_first_wrong(calls, sizeof(calls) / sizeof(calls[0]));
}

static void test_filter_mediates_connect_and_refuses_unix_datagrams(void)
{
	assert_child_succeeds(socket_filter_child, NULL);
}

/* With SYSCALL_FILTER_TRACE_WRITES, the opens that can write come to the
 * supervisor (ENOSYS with no listener); an open that only reads does only
 * with SYSCALL_FILTER_TRACE_READS too: a dry run of a workspace without a
 * hard-linked file has no rule for it (docs/sandbox.md, "Read tracing").
 * arg: "r" to load the program that traces reads. */
static int read_trace_filter_child(const char *arg)
{
	bool reads = arg[0] == 'r';
	int r = filter_child_load(SYSCALL_FILTER_TRACE_WRITES |
				  (reads ? SYSCALL_FILTER_TRACE_READS : 0));
	if (r)
		return r;
#define E(call) ((call) < 0 ? -(long)errno : 0L)
	long rd = E(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC));
	long rd_open = E(syscall(SYS_open, "/dev/null", O_RDONLY | O_CLOEXEC));
	const struct filter_call calls[] = {
		{ rd, reads },
		{ rd_open, reads },
		{ E(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC)), true },
		{ E(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC)), true },
		{ E(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_TRUNC | O_CLOEXEC)), true },
		{ E(syscall(SYS_open, "/dev/null", O_RDONLY | O_CREAT | O_CLOEXEC, 0644)), true },
	};
#undef E
	return filter_first_wrong(calls, sizeof(calls) / sizeof(calls[0]));
}

static void test_filter_traces_read_only_opens_only_when_asked(void)
{
	assert_child_succeeds(read_trace_filter_child, "r");
	assert_child_succeeds(read_trace_filter_child, "-");
	struct syscall_filter with, without;
	struct error err = { 0 };
	ASSERT_EQ_INT(syscall_filter_build(&with,
					   SYSCALL_FILTER_TRACE_WRITES | SYSCALL_FILTER_TRACE_READS,
					   &err),
		      0);
	ASSERT_EQ_INT(syscall_filter_build(&without, SYSCALL_FILTER_TRACE_WRITES, &err), 0);
	ASSERT_EQ_INT(with.n_rules, without.n_rules + 2); /* open, openat */
}

/* With SYSCALL_FILTER_NO_COPY_OFFLOAD (a dry run's overlay), the filter
 * itself answers copy_file_range() EXDEV and the clone and dedupe ioctls
 * EOPNOTSUPP, high bits of the request or not, before the kernel looks at
 * a descriptor (EBADF without the flag); TIOCSTI still comes to the
 * supervisor (ENOSYS with no listener). arg: "o" to load it. */
static int copy_offload_filter_child(const char *arg)
{
	bool offload_off = arg[0] == 'o';
	int r = filter_child_load(SYSCALL_FILTER_TRACE_WRITES |
				  (offload_off ? SYSCALL_FILTER_NO_COPY_OFFLOAD : 0));
	if (r)
		return r;
#define E(call) ((call) < 0 ? -(long)errno : 0L)
	const long want[] = {
		offload_off ? -EXDEV : -EBADF,	    offload_off ? -EOPNOTSUPP : -EBADF,
		offload_off ? -EOPNOTSUPP : -EBADF, offload_off ? -EOPNOTSUPP : -EBADF,
		offload_off ? -EOPNOTSUPP : -EBADF, -ENOSYS,
	};
	const long got[] = {
		E(syscall(SYS_copy_file_range, -1, NULL, -1, NULL, 1UL, 0U)),
		E(syscall(SYS_ioctl, -1, (unsigned long)FICLONE, -1L)),
		E(syscall(SYS_ioctl, -1, (unsigned long)FICLONE | (1UL << 32), -1L)),
		E(syscall(SYS_ioctl, -1, (unsigned long)FICLONERANGE, NULL)),
		E(syscall(SYS_ioctl, -1, (unsigned long)FIDEDUPERANGE, NULL)),
		E(syscall(SYS_ioctl, -1, (unsigned long)TIOCSTI, NULL)),
	};
#undef E
	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
		if (got[i] != want[i])
			return (int)i + 1;
	return 0;
}

static void test_filter_refuses_copy_offload_only_when_asked(void)
{
	assert_child_succeeds(copy_offload_filter_child, "o");
	assert_child_succeeds(copy_offload_filter_child, "-");
	struct syscall_filter with, without;
	struct error err = { 0 };
	ASSERT_EQ_INT(syscall_filter_build(&with,
					   SYSCALL_FILTER_TRACE_WRITES | SYSCALL_FILTER_NO_COPY_OFFLOAD,
					   &err),
		      0);
	ASSERT_EQ_INT(syscall_filter_build(&without, SYSCALL_FILTER_TRACE_WRITES, &err), 0);
	ASSERT_EQ_INT(with.n_rules, without.n_rules + 4); /* copy_file_range, 3 ioctls */
}

/* In every program, socket() and socketpair() of any family but Unix, IPv4,
 * IPv6 and netlink route come to the supervisor (ENOSYS with no listener),
 * whatever the kernel offers, and high bits of the family do not pass. */
static int family_filter_child(const char *unused)
{
	int pair[2];

	(void)unused;
	int r = filter_child_load(0);
	if (r)
		return r;
#define E(call) ((call) < 0 ? -(long)errno : 0L)
	const struct filter_call calls[] = {
		{ E(syscall(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0)), true },
		{ E(syscall(SYS_socket, AF_PACKET, SOCK_DGRAM, 0)), true },
		{ E(syscall(SYS_socket, 38 /* AF_ALG */, SOCK_SEQPACKET, 0)), true },
		{ E(syscall(SYS_socket, 0 /* AF_UNSPEC */, SOCK_STREAM, 0)), true },
		{ E(syscall(SYS_socket, 3 /* AF_AX25 */, SOCK_DGRAM, 0)), true },
		{ E(syscall(SYS_socket, 15 /* AF_KEY */, SOCK_RAW, 2)), true },
		{ E(syscall(SYS_socket, (1UL << 32) | AF_INET, SOCK_STREAM, 0)), true },
		{ E(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 4 /* NETLINK_SOCK_DIAG */)), true },
		{ E(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, (1UL << 32) /* route, high bits */)),
		  true },
		{ E(syscall(SYS_socketpair, 40, SOCK_STREAM, 0, pair)), true },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)), false },
		{ E(syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */)),
		  false },
		{ E(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)), false },
	};
#undef E
	return filter_first_wrong(calls, sizeof(calls) / sizeof(calls[0]));
}

static void test_filter_refuses_socket_families(void)
{
	assert_child_succeeds(family_filter_child, NULL);
}

/* The errno the supervisor answers agrees with the rules. */
static void test_refusal_errno_names_the_family(void)
{
	const __u64 vsock[6] = { 40, SOCK_STREAM }, high[6] = { (1ULL << 32) | AF_INET, 1 };
	const __u64 diag[6] = { AF_NETLINK, SOCK_RAW, 4 }, dgram[6] = { AF_UNIX, SOCK_DGRAM };
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_socket, vsock), EAFNOSUPPORT);
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_socketpair, vsock), EAFNOSUPPORT);
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_socket, high), EAFNOSUPPORT);
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_socket, diag), EPROTONOSUPPORT);
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_socket, dgram), EPERM);
	ASSERT_EQ_INT(syscall_filter_refusal_errno(SYS_ptrace, vsock), EPERM);
}

/* The supervisor's own reading of a notification's arguments agrees. */
static void test_sets_id_reads_the_mode_argument(void)
{
	const __u64 chmod_suid[6] = { 0, 04755 }, chmod_plain[6] = { 0, 0755 };
	const __u64 open_creat[6] = { 0, 0, O_CREAT | O_WRONLY, 02755 };
	const __u64 open_read[6] = { 0, 0, O_RDONLY, 04755 };
	ASSERT_TRUE(syscall_filter_sets_id(SYS_chmod, chmod_suid));
	ASSERT_TRUE(!syscall_filter_sets_id(SYS_chmod, chmod_plain));
	ASSERT_TRUE(syscall_filter_sets_id(SYS_openat, open_creat));
	ASSERT_TRUE(!syscall_filter_sets_id(SYS_openat, open_read));
	ASSERT_TRUE(!syscall_filter_sets_id(SYS_unlink, chmod_suid));
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

/* pathcache's answer for path against realpath()'s, errno included. */
static void pathcache_check_one(const char *path)
{
	errno = 0;
	char *want = realpath(path, NULL);
	int want_errno = want ? 0 : errno;
	errno = 0;
	char *got = pathcache_realpath(path);
	int got_errno = got ? 0 : errno;
	if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0) ||
	    want_errno != got_errno)
		fprintf(stderr, "pathcache: %s: want %s (%d), got %s (%d)\n", path,
			want ? want : "NULL", want_errno, got ? got : "NULL", got_errno);
	ASSERT_EQ_INT(got_errno, want_errno);
	ASSERT_TRUE((want == NULL) == (got == NULL));
	ASSERT_TRUE(!want || strcmp(want, got) == 0);
	free(want);
	free(got);
}

/* The cache answers as realpath() and lstat() do, errno included: links on
 * the way and at the end, dangling and looping links, a file used as a
 * directory, missing names, ".", ".." and doubled slashes. */
static void test_pathcache_answers_as_libc(void)
{
	char root[] = "/tmp/airlock-pathcache.XXXXXX";
	char path[512];

	ASSERT_TRUE(mkdtemp(root) != NULL);
	const char *dirs[] = { "d", "d/e", "real" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		ASSERT_EQ_INT(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/d/file", root);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	/* target (below root when it starts with '@'), link */
	const char *links[][2] = { { "@real", "d/link" },
				   { "/nonexistent-pathcache", "d/dangling" },
				   { "loop2", "d/loop1" },
				   { "loop1", "d/loop2" },
				   { "../../real", "d/e/up" } };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		char target[300];
		if (links[i][0][0] == '@')
			snprintf(target, sizeof(target), "%s/%s", root, links[i][0] + 1);
		else
			snprintf(target, sizeof(target), "%s", links[i][0]);
		snprintf(path, sizeof(path), "%s/%s", root, links[i][1]);
		ASSERT_EQ_INT(symlink(target, path), 0);
	}
	const char *asked[] = { "",	     "d",	    "d/e",    "d/file",	     "d/file/x",
				"d/missing", "d/missing/x", "d/link", "d/link/x",    "d/dangling",
				"d/loop1",   "d/loop1/x",   "d/e/up", "d/e/up/../d", "d/./e",
				"d//e",	     "d/e/",	    "d/e/..", "real",	     "d/link/" };
	pathcache_open(4); /* too small: it grows while the paths are asked */
	for (int pass = 0; pass < 2; pass++) /* asked, then answered from the cache */
		for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", root, asked[i]);
			pathcache_check_one(path);
			struct stat a, b;
			int ra = lstat(path, &a), ea = ra < 0 ? errno : 0;
			int rb = pathcache_lstat(path, &b), eb = rb < 0 ? errno : 0;
			ASSERT_EQ_INT(rb, ra);
			ASSERT_EQ_INT(eb, ea);
			ASSERT_TRUE(ra < 0 || (a.st_ino == b.st_ino && a.st_mode == b.st_mode));
		}
	pathcache_close();
	/* Closed, the calls are the libc ones: a change shows at once. */
	snprintf(path, sizeof(path), "%s/d/missing", root);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	char *now = pathcache_realpath(path);
	ASSERT_TRUE(now != NULL && strcmp(now, path) == 0);
	free(now);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* Many names asked in one directory, as the hide list asks of a home: the
 * cache reads the directory once, and must answer as realpath() still.
 * Generated trees: each directory (searchable, x-only, r-only, neither, a
 * file in its place, a link to one) holds files, directories, links to
 * both, dangling and looping links; each is asked its names, names it
 * lacks (one differing in case only), and a name below each. Run as root
 * and as nobody (the modes count only for nobody). */
static void test_pathcache_lists_as_libc(void)
{
	char root[] = "/tmp/airlock-pathlist.XXXXXX";
	char path[512], target[512];
	const char *dirs[] = { "rx", "xonly", "ronly", "none", "many" };
	const mode_t modes[] = { 0755, 0111, 0444, 0000, 0755 };
	const int n_names[] = { 30, 30, 30, 30, 300 };

	ASSERT_TRUE(mkdtemp(root) != NULL);
	ASSERT_EQ_INT(chmod(root, 0755), 0);
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[d]);
		ASSERT_EQ_INT(mkdir(path, 0755), 0);
		for (int i = 0; i < n_names[d]; i++) {
			snprintf(path, sizeof(path), "%s/%s/n%d", root, dirs[d], i);
			switch (i % 7) {
			case 0: /* missing */
				break;
			case 1: {
				int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
				ASSERT_TRUE(fd >= 0);
				close(fd);
				break;
			}
			case 2:
				ASSERT_EQ_INT(mkdir(path, 0755), 0);
				break;
			case 3: /* a link to a directory, relative */
				ASSERT_EQ_INT(symlink("n2", path), 0);
				break;
			case 4: /* a link to a file, absolute */
				snprintf(target, sizeof(target), "%s/%s/n1", root, dirs[d]);
				ASSERT_EQ_INT(symlink(target, path), 0);
				break;
			case 5: /* dangling */
				ASSERT_EQ_INT(symlink("/nonexistent-pathlist/x", path), 0);
				break;
			case 6: /* looping */
				ASSERT_EQ_INT(symlink(path, path), 0);
				break;
			}
		}
	}
	snprintf(path, sizeof(path), "%s/file", root);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/tolink", root);
	ASSERT_EQ_INT(symlink("rx", path), 0);
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[d]);
		ASSERT_EQ_INT(chmod(path, modes[d]), 0);
	}
	const char *parents[] = { "rx", "xonly", "ronly", "none", "many", "file", "tolink", "gone" };
	for (int order = 0; order < 2; order++) {
		pathcache_open(8); /* small: it grows while the names are asked */
		for (int pass = 0; pass < 2; pass++) /* asked, then answered from the cache */
			for (size_t p = 0; p < sizeof(parents) / sizeof(parents[0]); p++) {
				size_t d = order ? sizeof(parents) / sizeof(parents[0]) - 1 - p : p;
				int n = strcmp(parents[d], "many") == 0 ? 300 : 30;
				for (int i = 0; i < n + 3; i++) {
					int k = order ? n + 2 - i : i;
					/* past the names: one in another case, below a file, below a dir */
					const char *last = k == n	? "N1"
							   : k == n + 1 ? "n1/x"
									: "n2/x";
					if (k < n)
						snprintf(path, sizeof(path), "%s/%s/n%d", root,
							 parents[d], k);
					else
						snprintf(path, sizeof(path), "%s/%s/%s", root,
							 parents[d], last);
					pathcache_check_one(path);
					if (k % 3 == 0 && k < n) {
						snprintf(path, sizeof(path), "%s/%s/n%d/x", root,
							 parents[d], k);
						pathcache_check_one(path);
					}
				}
			}
		pathcache_close();
	}
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[d]);
		ASSERT_EQ_INT(chmod(path, 0755), 0);
	}
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* A directory of n names (files n0, n1, ...) in root, asked each name
 * through a cache (as realpath() answers); then a name made there after
 * the asks: read whole, the directory's listing answers it (missing, as
 * the directory was); asked name by name, realpath() does. */
static void pathcache_cap_one(const char *root, size_t n, bool listed)
{
	char dir[256], path[512];

	snprintf(dir, sizeof(dir), "%s/d%zu", root, n);
	ASSERT_EQ_INT(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/n%zu", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		ASSERT_TRUE(fd >= 0);
		close(fd);
	}
	pathcache_open(8);
	for (size_t i = 0; i <= n; i++) { /* n<n> is missing */
		snprintf(path, sizeof(path), "%s/n%zu", dir, i);
		pathcache_check_one(path);
	}
	snprintf(path, sizeof(path), "%s/late", dir);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	errno = 0;
	char *late = pathcache_realpath(path);
	if (listed)
		ASSERT_TRUE(late == NULL && errno == ENOENT);
	else
		ASSERT_TRUE(late != NULL);
	free(late);
	pathcache_close();
}

/* The listing's cap counts names: a directory of exactly
 * PATHCACHE_LIST_MAX_NAMES is read whole, one of one more is not. */
static void test_pathcache_list_cap(void)
{
	char root[] = "/tmp/airlock-pathcap.XXXXXX", cmd[64];

	ASSERT_TRUE(mkdtemp(root) != NULL);
	pathcache_cap_one(root, PATHCACHE_LIST_MAX_NAMES, true);
	pathcache_cap_one(root, PATHCACHE_LIST_MAX_NAMES + 1, false);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* The allowlist proxy's socket (docs/network.md): made by init in the
 * private namespace, handed out through net_listener_to; connects made
 * inside wait in its backlog for whoever holds it, and the command never
 * holds it. Without net_listener_to nothing listens there. */
static void test_net_listener_is_passed_out(void)
{
	if (access("/usr/bin/python3", X_OK) < 0)
		return;
	char base[] = "/tmp/airlock-net-XXXXXX";
	ASSERT_TRUE(mkdtemp(base) != NULL);
	/* the connect, then whether the command holds a listening socket
	 * (its descriptors' socket inodes against /proc/net/tcp6's LISTEN rows) */
	const char *script =
		"import socket,sys\n"
		"for h in ('127.0.0.1','::1'):\n"
		"  try:\n"
		"    s=socket.create_connection((h,3128),timeout=5); s.sendall(h.encode()); s.close()\n"
		"  except OSError as e: print('refused', h, e.errno); sys.exit(3)\n"
		"import os\n"
		"for fd in os.listdir('/proc/self/fd'):\n"
		"  try: t=os.readlink('/proc/self/fd/'+fd)\n"
		"  except OSError: continue\n"
		"  if t.startswith('socket:'): print('socket', fd); sys.exit(4)\n"
		"print('ok')\n";
	char *argv[] = { (char *)"python3", (char *)"-c", (char *)script, NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	int sp[2];
	ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	struct collected c = { 0 };
	struct sandbox_config config = {
		.exec_path = "/usr/bin/python3",
		.argv = argv,
		.envp = envp,
		.cwd = base,
		.timeout_ms = 20000,
		.kill_after_ms = 200,
		.on_output = collect,
		.userdata = &c,
		.isolation = { .enabled = true,
			       .workspace = base,
			       .tmp_bytes = 1 << 20,
			       .memory_bytes = 1ULL << 30,
			       .max_processes = 64,
			       .net_listener_to = sp[0] },
	};
	struct sandbox_result res;
	struct error err = { 0 };
	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_EXITED);
	ASSERT_EQ_INT(res.exit_code, 0);
	ASSERT_TRUE(strstr(c.out, "ok") != NULL);
	sandbox_result_release(&res);
	/* the socket, and both connects in its backlog */
	struct pollfd p = { .fd = sp[1], .events = POLLIN };
	ASSERT_EQ_INT(poll(&p, 1, 0), 1);
	int lfd = fdpass_receive(sp[1]);
	ASSERT_TRUE(lfd >= 0);
	char seen[2][16] = { { 0 } };
	for (int i = 0; i < 2; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		ASSERT_TRUE(fd >= 0);
		ASSERT_TRUE(read(fd, seen[i], sizeof(seen[i]) - 1) > 0);
		close(fd);
	}
	ASSERT_TRUE(strcmp(seen[0], "127.0.0.1") == 0 && strcmp(seen[1], "::1") == 0);
	close(lfd);
	/* without it: refused inside */
	config.isolation.net_listener_to = 0;
	c = (struct collected){ 0 };
	ASSERT_EQ_INT(sandbox_run(&config, &res, &err), 0);
	ASSERT_EQ_INT(res.outcome, SANDBOX_EXITED);
	ASSERT_EQ_INT(res.exit_code, 3);
	ASSERT_TRUE(strstr(c.out, "refused 127.0.0.1 111") != NULL);
	sandbox_result_release(&res);
	close(sp[0]);
	close(sp[1]);
	rmdir(base);
}

/* A path made below a directory while the cache is open is answered as
 * it was until the directory is forgotten, then as it is now: by its own
 * name, by names read from its parent's listing, and for lstat(); answers
 * elsewhere are kept (a dry run's snapshot in the state directory). */
static void test_pathcache_forget_below(void)
{
	char root[] = "/tmp/airlock-pathforget.XXXXXX";
	char path[512], state[128], other[128];

	ASSERT_TRUE(mkdtemp(root) != NULL);
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(other, sizeof(other), "%s/other", root);
	ASSERT_EQ_INT(mkdir(state, 0755), 0);
	ASSERT_EQ_INT(mkdir(other, 0755), 0);
	pathcache_open(8);
	/* More names than it takes to read the directory once. */
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/n%d", state, i);
		pathcache_check_one(path);
		snprintf(path, sizeof(path), "%s/n%d", other, i);
		pathcache_check_one(path);
	}
	snprintf(path, sizeof(path), "%s/dryruns/1/upper", state);
	pathcache_check_one(path);
	struct stat st;
	ASSERT_EQ_INT(pathcache_lstat(path, &st), -1);
	/* Made now: the cache still says what it said. */
	snprintf(path, sizeof(path), "%s/dryruns", state);
	ASSERT_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/dryruns/1", state);
	ASSERT_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/dryruns/1/upper", state);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/n9", state);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/n9", other);
	ASSERT_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dryruns/1/upper", state);
	char *stale = pathcache_realpath(path);
	ASSERT_TRUE(stale == NULL && errno == ENOENT);
	ASSERT_EQ_INT(pathcache_lstat(path, &st), -1);
	/* Forgotten: asked again, as libc answers now. */
	pathcache_forget_below(state);
	pathcache_check_one(path);
	ASSERT_EQ_INT(pathcache_lstat(path, &st), 0);
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	snprintf(path, sizeof(path), "%s/n9", state);
	pathcache_check_one(path); /* its directory's listing read again */
	snprintf(path, sizeof(path), "%s/dryruns", state);
	pathcache_check_one(path);
	/* Elsewhere nothing was forgotten: the other directory's listing,
	 * read before n9 was made there, still leaves it out. */
	snprintf(path, sizeof(path), "%s/n9", other);
	errno = 0;
	char *kept = pathcache_realpath(path);
	ASSERT_TRUE(kept == NULL && errno == ENOENT);
	pathcache_close();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* The read scan's thread runs at SCHED_IDLE only where readscan_stop() can
 * take it back to SCHED_OTHER: an unprivileged thread cannot leave
 * SCHED_IDLE (RLIMIT_NICE), and on a busy machine a thread there gets no
 * CPU for hundreds of ms, which the join, or the process's exit, waits
 * out. Here, without CAP_SYS_NICE and with RLIMIT_NICE 0 (as nobody), the
 * thread, held (a test build's AIRLOCK_TEST_READSCAN_HOLD_FD), must not be
 * at SCHED_IDLE. */
#if AIRLOCK_TEST_HOOKS
static int readscan_idle_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && sched_getscheduler(atoi(de->d_name)) == SCHED_IDLE)
			n++;
	if (d)
		closedir(d);
	return n;
}

static int readscan_child(const char *ws)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	struct rlimit rl = { 0, 0 };
	int hold[2], sv[2];
	char env[32];

	if (syscall(SYS_capget, &header, data) < 0)
		return 10;
	data[0].effective &= ~(1U << CAP_SYS_NICE);
	if (syscall(SYS_capset, &header, data) < 0 || setrlimit(RLIMIT_NICE, &rl) < 0 ||
	    pipe2(hold, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return 11;
	snprintf(env, sizeof(env), "%d", hold[0]);
	setenv("AIRLOCK_TEST_READSCAN_HOLD_FD", env, 1);
	struct readscan *scan = NULL;
	if (readscan_start(&scan, ws, sv[1]) < 0)
		return 12;
	int idle = readscan_idle_threads();
	if (write(hold[1], "x", 1) != 1)
		return 13;
	alarm(10);
	readscan_stop(scan);
	return idle ? 1 : 0;
}
#endif

static void test_readscan_idle_only_where_stop_can_take_it_back(void)
{
#if AIRLOCK_TEST_HOOKS
	char ws[] = "/tmp/airlock-readscan.XXXXXX";
	int status;

	ASSERT_TRUE(mkdtemp(ws) != NULL);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(readscan_child(ws));
	ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
	rmdir(ws);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ_INT(WEXITSTATUS(status), 0);
#endif
}

RUN_TESTS(T_(test_embedded_programs_are_the_selectors), T_(test_embedded_filter_matches_the_rules),
	  T_(test_filter_refuses_setid_modes), T_(test_filter_traces_read_only_opens_only_when_asked),
	  T_(test_filter_refuses_copy_offload_only_when_asked),
	  T_(test_readscan_idle_only_where_stop_can_take_it_back),
	  T_(test_filter_refuses_socket_families), T_(test_refusal_errno_names_the_family),
	  T_(test_filter_mediates_connect_and_refuses_unix_datagrams),
	  T_(test_sets_id_reads_the_mode_argument),
	  T_(test_cgroup_sweep_removes_only_dead_supervisors), T_(test_pathcache_answers_as_libc),
	  T_(test_pathcache_lists_as_libc), T_(test_pathcache_list_cap),
	  T_(test_pathcache_forget_below),
	  T_(test_protect_plans_pins_links_and_leaves_missing_paths_alone),
	  T_(test_protect_rejects_relative_and_loops), T_(test_resolve_uses_given_path),
	  T_(test_run_reports_exit_and_output), T_(test_run_stdin_is_null_and_fds_closed),
	  T_(test_run_signal), T_(test_timeout_kills_background_children),
	  T_(test_exit_kills_leftovers_and_does_not_hang), T_(test_setup_failure_names_stage),
	  T_(test_exec_failure_for_script_without_shebang),
	  T_(test_writable_is_the_checked_directory), T_(test_net_listener_is_passed_out))

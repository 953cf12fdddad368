/* The kernel's floor for airlock's quarantine (issue 22, goal 2): the same
 * kernel steps init takes (src/sandbox/child.c, isolate.c), in one small C
 * program with no plan, no policy, no receipt, so that what the kernel
 * costs can be told from what airlock costs. LEVEL says how far it goes:
 *   0  fork, then vfork + execve of the command in the child (no namespaces)
 *   1  + clone3 with airlock's namespaces (user, mount, pid, ipc, uts,
 *        cgroup, net), uid/gid maps written by the child
 *   2  + the mounts: private /, the workspace (the current directory) as a
 *        detached tree, / bound read-only on /tmp, a tmpfs /tmp, /dev
 *        (tmpfs, 6 nodes bound, links, shm, devpts), /proc with 4 read-only
 *        binds, an empty /run, the workspace attached, pivot_root
 *   3  + lo up, hostname, every capability dropped (bounding set, securebits,
 *        capset), PR_SET_DUMPABLE 0
 *   4  + no_new_privs and Landlock (read everywhere, write in the workspace,
 *        /tmp, /dev)
 *   5  + airlock's seccomp program (build/syscall_filter_bpf.h, the one a
 *        default run loads) with a listener
 *   6  + what airlock's supervisor does that bubblewrap does not: the run's
 *        memory and pids cgroups (cgroup v1, as root: made with their
 *        limits before the clone, init moves itself in through the tasks
 *        files, their counters read and the directories removed after),
 *        the seccomp listener sent to the parent (SCM_RIGHTS) and polled
 *        with the command's stdout and stderr, which go to pipes, and
 *        init's report of the command's status on a pipe
 *   7  + a durable receipt: one ~1 KiB append to $QUARANTINE_FLOOR_LOG
 *        (default /tmp/quarantine_floor.log) and its fdatasync
 * With -t, each step's time (us) goes to stderr, one line per run.
 *   quarantine_floor [-t] LEVEL COMMAND [ARG...]
 * Build: cc -O2 -I BUILD_DIR -o quarantine_floor bench/quarantine_floor.c
 * (BUILD_DIR holds the generated syscall_filter_bpf.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syscall_filter_bpf.h"

#define STAGE "/tmp"

static int level;
static bool timed;
static char **command;
static char workspace[4096];
static char uid_map[64], gid_map[64];
static uint64_t marks[32];
static const char *mark_names[32];
static int n_marks;
/* level 6: the run's cgroups (empty where there are none), the tasks files
 * init writes, the listener's socket, the command's output and init's
 * report */
static char cgroup_dirs[2][256];
static int cgroup_tasks[2] = { -1, -1 };
static int notify_sock[2] = { -1, -1 };
static int out_pipe[2][2] = { { -1, -1 }, { -1, -1 } };
static int status_pipe[2] = { -1, -1 };

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void mark(const char *name)
{
	if (timed && n_marks < 32) {
		mark_names[n_marks] = name;
		marks[n_marks++] = now_us();
	}
}

static void die(const char *what)
{
	fprintf(stderr, "quarantine_floor: %s: %s\n", what, strerror(errno));
	_exit(125);
}

static void need(long r, const char *what)
{
	if (r < 0)
		die(what);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

static void set_attr(int dfd, const char *path, unsigned flags, uint64_t attr)
{
	struct mount_attr a = { .attr_set = attr };

	need(syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a)), path);
}

static int clone_tree(const char *path, uint64_t attr)
{
	int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path,
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	need(tree, path);
	set_attr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, attr);
	return tree;
}

static void mounts(void)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
	static const char *const links[][2] = {
		{ "/proc/self/fd", STAGE "/dev/fd" },
		{ "/proc/self/fd/0", STAGE "/dev/stdin" },
		{ "/proc/self/fd/1", STAGE "/dev/stdout" },
		{ "/proc/self/fd/2", STAGE "/dev/stderr" },
		{ "pts/ptmx", STAGE "/dev/ptmx" },
	};
	static const char *const proc_ro[] = { STAGE "/proc/sys", STAGE "/proc/sysrq-trigger",
					       STAGE "/proc/irq", STAGE "/proc/bus" };
	char src[64], dst[64];

	need(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private /");
	int ws = clone_tree(workspace, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	mark("workspace tree");
	need(mount("/", STAGE, NULL, MS_BIND | MS_REC, NULL), "bind /");
	set_attr(AT_FDCWD, STAGE, AT_RECURSIVE, ro);
	mark("read-only / bind");
	need(mount("tmpfs", STAGE "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=1777"), "tmp");
	need(mount("tmpfs", STAGE "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755"), "dev");
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
		snprintf(dst, sizeof(dst), STAGE "/dev/%s", nodes[i]);
		close(open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
		need(mount(src, dst, NULL, MS_BIND, NULL), dst);
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		need(symlink(links[i][0], links[i][1]), links[i][1]);
	need(mkdir(STAGE "/dev/shm", 01777), "shm");
	need(mount("tmpfs", STAGE "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777"),
	     "shm");
	need(mkdir(STAGE "/dev/pts", 0755), "pts");
	(void)mount("devpts", STAGE "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		    "newinstance,ptmxmode=0666,mode=0620");
	set_attr(AT_FDCWD, STAGE "/dev", 0, MOUNT_ATTR_RDONLY);
	mark("/tmp and /dev");
	need(mount("proc", STAGE "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL), "proc");
	for (size_t i = 0; i < sizeof(proc_ro) / sizeof(proc_ro[0]); i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			die(proc_ro[i]);
		}
		set_attr(AT_FDCWD, proc_ro[i], AT_RECURSIVE, MOUNT_ATTR_RDONLY);
	}
	mark("/proc");
	struct stat st;
	if (stat(STAGE "/run", &st) == 0)
		need(mount("tmpfs", STAGE "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			   "size=4k,mode=0755"),
		     "run");
	snprintf(dst, sizeof(dst), "%s", STAGE);
	char staged[4200];
	snprintf(staged, sizeof(staged), STAGE "%s", workspace);
	for (char *p = staged + 1; *p; p++) /* mkdir -p, for a workspace below /tmp or /run */
		if (*p == '/') {
			*p = '\0';
			(void)mkdir(staged, 0755);
			*p = '/';
		}
	(void)mkdir(staged, 0755);
	need(syscall(SYS_move_mount, ws, "", AT_FDCWD, staged, MOVE_MOUNT_F_EMPTY_PATH), "workspace");
	close(ws);
	mark("/run and the workspace attached");
	need(chdir(STAGE), "chdir");
	need(syscall(SYS_pivot_root, ".", "."), "pivot_root");
	need(umount2(".", MNT_DETACH), "umount");
	need(chdir("/"), "chdir /");
	mark("pivot_root");
}

static void network_host_caps(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo" };
	need(fd, "socket");
	need(ioctl(fd, SIOCGIFFLAGS, &ifr), "lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	need(ioctl(fd, SIOCSIFFLAGS, &ifr), "lo up");
	close(fd);
	mark("lo up");
	need(sethostname("airlock", 7), "hostname");
	mark("hostname");
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			die("bounding set");
	need(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient");
	need(prctl(PR_SET_SECUREBITS,
		   SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			   SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		   0, 0, 0),
	     "securebits");
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	need(syscall(SYS_capset, &header, data), "capset");
	need(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable");
	mark("capabilities dropped");
}

static void landlock_allow(int ruleset, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
	need(fd, path);
	struct landlock_path_beneath_attr rule = { .allowed_access = access, .parent_fd = fd };
	need(syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), path);
	close(fd);
}

static void landlock(void)
{
	need(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
	/* ABI 1's rights: enough for the kernel's cost of a ruleset */
	uint64_t read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
			LANDLOCK_ACCESS_FS_READ_DIR;
	uint64_t all = read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
		       LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
		       LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		       LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		       LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
	struct landlock_ruleset_attr attr = { .handled_access_fs = all };
	int ruleset =
		(int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr.handled_access_fs), 0);
	need(ruleset, "landlock ruleset");
	landlock_allow(ruleset, "/", read);
	landlock_allow(ruleset, workspace, all);
	landlock_allow(ruleset, "/tmp", all);
	landlock_allow(ruleset, "/dev", read | LANDLOCK_ACCESS_FS_WRITE_FILE);
	need(syscall(SYS_landlock_restrict_self, ruleset, 0), "landlock");
	close(ruleset);
	mark("Landlock");
}

static void seccomp_filter(void)
{
	/* [2]: SYSCALL_FILTER_MEDIATE_CONNECT, a default run's program when
	 * Landlock cannot scope Unix sockets */
	struct sock_fprog prog = { .len = syscall_filter_programs[2].len,
				   .filter = (struct sock_filter *)syscall_filter_programs[2].insns };
	int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	need(listener, "seccomp");
	if (level >= 6) { /* to the parent, as init does (child.c) */
		char byte = 0, control[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr msg = { .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = control,
				      .msg_controllen = sizeof(control) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &listener, sizeof(int));
		need(sendmsg(notify_sock[1], &msg, 0), "send the listener");
	}
	close(listener);
	mark("seccomp");
}

static int run_command(void)
{
	int status;
	pid_t pid = vfork();

	if (pid == 0) {
		if (level >= 6) { /* stdin from /dev/null, output to the parent's pipes */
			int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (null < 0 || dup2(null, 0) < 0 || dup2(out_pipe[0][1], 1) < 0 ||
			    dup2(out_pipe[1][1], 2) < 0)
				_exit(126);
		}
		execvp(command[0], command);
		_exit(127);
	}
	need(pid, "vfork");
	need(waitpid(pid, &status, 0), "wait");
	mark("command ran");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int init_main(void)
{
	mark("init started");
	if (level >= 1) {
		write_file("/proc/self/setgroups", "deny");
		write_file("/proc/self/uid_map", uid_map);
		write_file("/proc/self/gid_map", gid_map);
		mark("uid/gid maps");
	}
	if (level >= 2)
		mounts();
	if (level >= 3)
		network_host_caps();
	if (level >= 4)
		landlock();
	if (level >= 6) { /* init moves itself: no cgroup.procs write (cgroup.c) */
		for (int i = 0; i < 2; i++)
			if (cgroup_tasks[i] >= 0)
				need(write(cgroup_tasks[i], "0", 1), "tasks");
		mark("cgroups entered");
	}
	if (level >= 5)
		seccomp_filter();
	int rc = run_command();
	if (level >= 6) { /* the command's status and usage, as init reports them */
		struct {
			int rc;
			struct rusage ru;
		} report = { .rc = rc };
		getrusage(RUSAGE_CHILDREN, &report.ru);
		need(write(status_pipe[1], &report, sizeof(report)), "report");
	}
	if (timed) {
		char line[2048];
		size_t n = 0;
		for (int i = 1; i < n_marks && n < sizeof(line) - 64; i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s=%llu",
					      i > 1 ? "," : "", mark_names[i],
					      (unsigned long long)(marks[i] - marks[i - 1]));
		snprintf(line + n, sizeof(line) - n, "\n");
		fputs(line, stderr);
	}
	return rc;
}

/* <controller>/airlock-floor/<pid>, its limit written, its tasks file
 * opened for init; nothing where the controller is not mounted (v2, or not
 * root). */
static void cgroup_make(int i, const char *controller, const char *file, const char *limit)
{
	char path[320];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/tasks", controller);
	if (geteuid() != 0 || access(path, F_OK) < 0)
		return;
	snprintf(cgroup_dirs[i], sizeof(cgroup_dirs[i]), "/sys/fs/cgroup/%s/airlock-floor", controller);
	if (mkdir(cgroup_dirs[i], 0755) < 0 && errno != EEXIST)
		die(cgroup_dirs[i]);
	snprintf(cgroup_dirs[i] + strlen(cgroup_dirs[i]), 32, "/%d", (int)getpid());
	need(mkdir(cgroup_dirs[i], 0755), cgroup_dirs[i]);
	snprintf(path, sizeof(path), "%s/%s", cgroup_dirs[i], file);
	write_file(path, limit);
	snprintf(path, sizeof(path), "%s/tasks", cgroup_dirs[i]);
	cgroup_tasks[i] = open(path, O_WRONLY | O_CLOEXEC);
	need(cgroup_tasks[i], path);
}

static void supervisor_open(void)
{
	need(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "subreaper");
	need(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, notify_sock), "socketpair");
	need(pipe2(out_pipe[0], O_CLOEXEC), "pipe");
	need(pipe2(out_pipe[1], O_CLOEXEC), "pipe");
	need(pipe2(status_pipe, O_CLOEXEC), "pipe");
	cgroup_make(0, "memory", "memory.limit_in_bytes", "8589934592");
	cgroup_make(1, "pids", "pids.max", "512");
}

/* Polls the output, the listener (answering each call with EPERM) and
 * init's report until the output ends; returns the reported status. */
static int supervise(void)
{
	char buf[65536];
	int listener = -1, reported = -1; /* listener -1: not received yet, -2: closed */

	close(out_pipe[0][1]);
	close(out_pipe[1][1]);
	close(status_pipe[1]);
	close(notify_sock[1]);
	for (;;) {
		struct pollfd p[4] = { { .fd = out_pipe[0][0], .events = POLLIN },
				       { .fd = out_pipe[1][0], .events = POLLIN },
				       { .fd = status_pipe[0], .events = POLLIN },
				       { .fd = listener >= 0	? listener
					       : listener == -1 ? notify_sock[0]
								: -1,
					 .events = POLLIN } };
		if (p[0].fd < 0 && p[1].fd < 0 && p[2].fd < 0)
			break;
		need(poll(p, 4, -1), "poll");
		for (int i = 0; i < 2; i++)
			if (p[i].revents && read(p[i].fd, buf, sizeof(buf)) <= 0) {
				close(out_pipe[i][0]);
				out_pipe[i][0] = -1;
			}
		if (p[2].revents) {
			struct {
				int rc;
				struct rusage ru;
			} report;
			if (read(status_pipe[0], &report, sizeof(report)) == sizeof(report))
				reported = report.rc;
			close(status_pipe[0]);
			status_pipe[0] = -1;
		}
		if (p[3].revents && listener == -1) {
			char byte, control[CMSG_SPACE(sizeof(int))];
			struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
			struct msghdr msg = { .msg_iov = &iov,
					      .msg_iovlen = 1,
					      .msg_control = control,
					      .msg_controllen = sizeof(control) };
			struct cmsghdr *cm;
			if (recvmsg(notify_sock[0], &msg, MSG_CMSG_CLOEXEC) > 0 &&
			    (cm = CMSG_FIRSTHDR(&msg)) && cm->cmsg_type == SCM_RIGHTS)
				memcpy(&listener, CMSG_DATA(cm), sizeof(int));
			else
				need(-1, "the listener");
		} else if (p[3].revents & (POLLHUP | POLLERR)) { /* no process left under the filter */
			close(listener);
			listener = -2;
		} else if (p[3].revents) {
			struct seccomp_notif req = { 0 };
			struct seccomp_notif_resp resp = { 0 };
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
				resp.id = req.id;
				resp.error = -EPERM;
				(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
			}
		}
	}
	if (listener >= 0)
		close(listener);
	close(notify_sock[0]);
	return reported;
}

/* The limits' counters read (the receipt says whether one fired), then the
 * cgroups removed, as the teardown does. */
static void supervisor_close(void)
{
	static const char *const counters[] = { "memory.oom_control", "pids.events" };
	char path[600], text[512];

	for (int i = 0; i < 2; i++) {
		if (!cgroup_dirs[i][0])
			continue;
		close(cgroup_tasks[i]);
		snprintf(path, sizeof(path), "%s/%s", cgroup_dirs[i], counters[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		need(fd, path);
		need(read(fd, text, sizeof(text)), path);
		close(fd);
		for (int attempt = 0; rmdir(cgroup_dirs[i]) < 0 && errno == EBUSY && attempt < 50;
		     attempt++)
			usleep(1000);
	}
}

/* One ~1 KiB line appended and synced: the least a durable receipt costs. */
static void receipt(int rc)
{
	const char *log = getenv("QUARANTINE_FLOOR_LOG");
	char line[1024];
	int fd = open(log ? log : "/tmp/quarantine_floor.log",
		      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

	need(fd, "receipt log");
	int n = snprintf(line, sizeof(line), "{\"exit\":%d,\"pad\":\"", rc);
	memset(line + n, 'x', sizeof(line) - (size_t)n - 3);
	memcpy(line + sizeof(line) - 3, "\"}\n", 3);
	need(write(fd, line, sizeof(line)), "receipt");
	need(fdatasync(fd), "fdatasync");
	close(fd);
}

int main(int argc, char **argv)
{
	int i = 1;

	if (i < argc && strcmp(argv[i], "-t") == 0) {
		timed = true;
		i++;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: quarantine_floor [-t] LEVEL COMMAND [ARG...]\n");
		return 2;
	}
	level = atoi(argv[i]);
	command = argv + i + 1;
	if (!getcwd(workspace, sizeof(workspace)))
		die("getcwd");
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", geteuid(), geteuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", getegid(), getegid());

	if (level >= 6)
		supervisor_open();
	struct clone_args args = { .exit_signal = SIGCHLD };
	if (level >= 1)
		args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
			     CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWNET;
	uint64_t t0 = now_us();
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0)
		_exit(init_main());
	need(pid, "clone3");
	uint64_t t1 = now_us();
	int reported = -1;
	if (level >= 6)
		reported = supervise();
	uint64_t t2 = now_us();
	int status;
	need(waitpid(pid, &status, 0), "wait");
	uint64_t t3 = now_us();
	if (level >= 6)
		supervisor_close();
	if (level >= 7)
		receipt(reported);
	if (timed)
		fprintf(stderr,
			"clone3 in the parent=%llu,supervised until the report=%llu,"
			"init exit reaped=%llu,counters read and cgroups removed (+ receipt at 7)=%llu\n",
			(unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
			(unsigned long long)(t3 - t2), (unsigned long long)(now_us() - t3));
	if (reported >= 0)
		return reported;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

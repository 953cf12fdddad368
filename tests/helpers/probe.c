/* SPDX-License-Identifier: MIT */
/* Attacks the containment tests run inside the quarantine. Each mode tries
 * one thing and prints "blocked: <errno name>" and exits 0 when it was
 * refused, or "ESCAPED" and exits 1 when it worked. Built without
 * sanitizers: it runs inside the sandbox. */
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <pthread.h>
#include <termios.h>
#include <unistd.h>

static int verdict(long r, const char *what)
{
	if (r >= 0) {
		printf("ESCAPED: %s succeeded\n", what);
		return 1;
	}
	printf("blocked: %s: %s\n", what, strerrorname_np(errno));
	return 0;
}

static int probe_tiocsti(unsigned long request)
{
	char c = 'x';
	int failed = 0;

	/* every descriptor it has, and its (absent) controlling terminal */
	for (int fd = 0; fd < 3; fd++)
		failed += verdict(ioctl(fd, request, &c), "TIOCSTI on stdio");
	int tty = open("/dev/tty", O_RDWR);
	if (tty >= 0)
		failed += verdict(ioctl(tty, request, &c), "TIOCSTI on /dev/tty");
	return failed;
}

static int probe_int80(void)
{
	long r;
	/* 32-bit getpid through the compat entry: a foreign architecture */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
	printf("ESCAPED: int 0x80 returned %ld\n", r);
	return 1;
}


/* A thread flips the address between an allowed socket and a host one
 * while the main thread connects: the supervisor must act on the address
 * it checked, never on one read again later. */
static struct sockaddr_un race_addr;
static const char *race_paths[2];
static volatile int race_stop;

static void *race_flipper(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !race_stop; i++) {
		const char *p = race_paths[i & 1];
		size_t n = strlen(p);
		memcpy(race_addr.sun_path, p, n + 1);
	}
	return NULL;
}

static int probe_unix_race(const char *allowed, const char *host)
{
	pthread_t t;
	unsigned reached_allowed = 0, refused = 0, escaped = 0;

	if (strlen(allowed) >= sizeof(race_addr.sun_path) || strlen(host) >= sizeof(race_addr.sun_path))
		return 2;
	race_addr.sun_family = AF_UNIX;
	race_paths[0] = allowed;
	race_paths[1] = host;
	strcpy(race_addr.sun_path, allowed);
	if (pthread_create(&t, NULL, race_flipper, NULL) != 0)
		return 2;
	for (int i = 0; i < 2000; i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			break;
		if (connect(s, (struct sockaddr *)&race_addr, sizeof(race_addr)) == 0) {
			struct sockaddr_un peer = { 0 };
			socklen_t len = sizeof(peer);
			if (getpeername(s, (struct sockaddr *)&peer, &len) == 0 &&
			    strcmp(peer.sun_path, host) == 0) {
				escaped++;
				/* the connection is what counts, not the note */
				ssize_t noted = write(s, "ESCAPED\n", 8);
				(void)noted;
			} else {
				reached_allowed++;
			}
		} else {
			refused++;
		}
		close(s);
	}
	race_stop = 1;
	pthread_join(t, NULL);
	if (escaped) {
		printf("ESCAPED: %u connects reached the host socket\n", escaped);
		return 1;
	}
	printf("blocked: %u refused, %u reached the allowed socket\n", refused, reached_allowed);
	return 0;
}

/* A connect() from a thread other than the main one: "ok" or "err:NAME".
 * Threaded programs (Go's runtime, any thread pool) connect from anywhere. */
static const char *thread_path;
static int thread_errno;

static void *thread_connect(void *arg)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)arg;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", thread_path);
	thread_errno = s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0 ? errno : 0;
	if (thread_errno == 0)
		thread_errno = write(s, "from a thread\n", 14) < 0 ? errno : 0;
	return NULL;
}

static int probe_connect_thread(const char *path)
{
	pthread_t t;

	thread_path = path;
	if (pthread_create(&t, NULL, thread_connect, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 2;
	if (thread_errno)
		printf("err:%s\n", strerrorname_np(thread_errno));
	else
		printf("ok\n");
	return 0;
}

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif

/* Socket families beyond Unix, IPv4, IPv6 and netlink route: each must be
 * refused, whatever the kernel offers (vsock ignores network namespaces). */
static int probe_socket_families(void)
{
	static const struct {
		const char *what;
		int family, type, protocol;
	} refused[] = {
		{ "socket(AF_VSOCK)", AF_VSOCK, SOCK_STREAM, 0 },
		{ "socket(AF_VSOCK, SOCK_DGRAM)", AF_VSOCK, SOCK_DGRAM, 0 },
		{ "socket(AF_PACKET)", AF_PACKET, SOCK_DGRAM, 0 },
		{ "socket(AF_ALG)", AF_ALG, SOCK_SEQPACKET, 0 },
		{ "socket(AF_XDP)", AF_XDP, SOCK_RAW, 0 },
		{ "socket(AF_BLUETOOTH)", AF_BLUETOOTH, SOCK_STREAM, 0 },
		{ "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", AF_NETLINK, SOCK_DGRAM,
		  NETLINK_KOBJECT_UEVENT },
		{ "socket(AF_NETLINK, NETLINK_SOCK_DIAG)", AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG },
		{ "socket(AF_VSOCK | 1 << 32)", AF_VSOCK, SOCK_STREAM, 0 },
	};
	int failed = 0;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		/* the last one with high bits the kernel ignores (it reads an int) */
		long family = refused[i].family |
			      (i == sizeof(refused) / sizeof(refused[0]) - 1 ? (long)(1UL << 32) : 0);
		failed += verdict(syscall(SYS_socket, family, refused[i].type, refused[i].protocol),
				  refused[i].what);
	}
	int pair[2];
	failed += verdict(socketpair(AF_VSOCK, SOCK_STREAM, 0, pair), "socketpair(AF_VSOCK)");
	return failed;
}

/* The families that stay: each must still be creatable. */
static int probe_socket_allowed(void)
{
	static const struct {
		const char *what;
		int family, type, protocol;
	} allowed[] = {
		{ "AF_UNIX", AF_UNIX, SOCK_STREAM, 0 },
		{ "AF_INET", AF_INET, SOCK_STREAM, 0 },
		{ "AF_INET6", AF_INET6, SOCK_DGRAM, 0 },
		{ "AF_NETLINK/NETLINK_ROUTE", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE },
	};
	int pair[2];
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (socket(allowed[i].family, allowed[i].type, allowed[i].protocol) < 0) {
			printf("refused: %s: %s\n", allowed[i].what, strerrorname_np(errno));
			return 1;
		}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0) {
		printf("refused: socketpair(AF_UNIX): %s\n", strerrorname_np(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char buf[16];
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE };

	if (!strcmp(mode, "ptrace"))
		return verdict(ptrace(PTRACE_ATTACH, 1, 0, 0), "ptrace attach");
	if (!strcmp(mode, "process_vm_readv"))
		return verdict(syscall(SYS_process_vm_readv, 1, &local, 1, &remote, 1, 0),
			       "process_vm_readv");
	if (!strcmp(mode, "keyctl"))
		return verdict(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0),
			       "keyctl");
	if (!strcmp(mode, "add_key"))
		return verdict(syscall(SYS_add_key, "user", "k", "v", 1, KEY_SPEC_PROCESS_KEYRING),
			       "add_key");
	if (!strcmp(mode, "bpf"))
		return verdict(syscall(SYS_bpf, 0, NULL, 0), "bpf");
	if (!strcmp(mode, "perf_event_open"))
		return verdict(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0), "perf_event_open");
	if (!strcmp(mode, "userfaultfd"))
		return verdict(syscall(SYS_userfaultfd, 0), "userfaultfd");
	if (!strcmp(mode, "io_uring"))
		return verdict(syscall(SYS_io_uring_setup, 1, buf), "io_uring_setup");
	if (!strcmp(mode, "mount"))
		return verdict(mount("none", "/tmp", "tmpfs", 0, NULL), "mount tmpfs");
	if (!strcmp(mode, "remount"))
		return verdict(mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL), "remount / rw");
	if (!strcmp(mode, "open_tree"))
		return verdict(syscall(SYS_open_tree, AT_FDCWD, "/", 1), "open_tree clone");
	if (!strcmp(mode, "fsopen"))
		return verdict(syscall(SYS_fsopen, "tmpfs", 0), "fsopen");
	if (!strcmp(mode, "unshare"))
		return verdict(unshare(CLONE_NEWUSER), "unshare user namespace");
	if (!strcmp(mode, "clone_newns"))
		return verdict(syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0), "clone NEWNS");
	if (!strcmp(mode, "setns"))
		return verdict(setns(open("/proc/1/ns/mnt", O_RDONLY), 0), "setns");
	if (!strcmp(mode, "kexec"))
		return verdict(syscall(SYS_kexec_load, 0, 0, NULL, 0), "kexec_load");
	if (!strcmp(mode, "init_module"))
		return verdict(syscall(SYS_init_module, buf, sizeof(buf), ""), "init_module");
	if (!strcmp(mode, "chroot"))
		return verdict(chroot("/tmp"), "chroot");
	if (!strcmp(mode, "sethostname"))
		return verdict(sethostname("pwned", 5), "sethostname");
	if (!strcmp(mode, "mknod"))
		return verdict(mknod("dev-sda", S_IFBLK | 0600, makedev(8, 0)), "mknod");
	if (!strcmp(mode, "tiocsti"))
		return probe_tiocsti(TIOCSTI);
	if (!strcmp(mode, "tiocsti_high"))
		return probe_tiocsti(TIOCSTI | (1UL << 32));
	if (!strcmp(mode, "tioclinux"))
		return probe_tiocsti(0x541C);
	if (!strcmp(mode, "unix_race") && argc == 4)
		return probe_unix_race(argv[2], argv[3]);
	if (!strcmp(mode, "connect_thread") && argc == 3)
		return probe_connect_thread(argv[2]);
	if (!strcmp(mode, "socket_families"))
		return probe_socket_families();
	if (!strcmp(mode, "socket_allowed"))
		return probe_socket_allowed();
	if (!strcmp(mode, "int80"))
		return probe_int80();
	fprintf(stderr, "probe: unknown mode '%s'\n", mode);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/* connect() on the command's behalf (see sockbroker.h). Everything below
 * sockbroker_worker_main() runs in a worker thread with no effective
 * capabilities. */
#include "sandbox/sockbroker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "sandbox/syscall_filter.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

/* Connects in flight at once; more wait in the queue. The queue is bounded
 * by the command's threads (each waits on one notification at most); past
 * it a connect fails with EAGAIN. */
#define SOCKBROKER_MAX_WORKERS 32
#define SOCKBROKER_MAX_QUEUED  256
/* How often in-flight connects are checked for a caller that stopped waiting. */
#define SOCKBROKER_SWEEP_MS    50
#define SOCKBROKER_STACK_BYTES (256 * 1024)
/* pidfd_open(): a pidfd for this thread, not its group (Linux 6.9) */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
/* openat2(RESOLVE_IN_ROOT) answers EAGAIN when a rename raced the lookup. */
#define SOCKBROKER_RESOLVE_TRIES 8

struct sockbroker_worker {
	struct sockbroker *broker;
	pthread_t thread;
	bool busy; /* working on notification `id` */
	bool exited;
	uint64_t id;
};

struct sockbroker {
	int listener_fd;
	char *workspace;
	char **writable; /* NULL-terminated */
	bool share_net;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t wake; /* work queued, or stopping */
	bool stopping;
	struct seccomp_notif queue[SOCKBROKER_MAX_QUEUED];
	size_t head, n_queued;
	struct sockbroker_worker workers[SOCKBROKER_MAX_WORKERS];
	size_t n_workers, n_waiting, n_busy;
	struct sandbox_socket_denial denials[SANDBOX_MAX_SOCKET_DENIALS];
	size_t n_denials;
	unsigned denials_dropped;

	/* The mounts a socket may be reached on: the workspace's and the
	 * private /tmp's, with every mount below them. The quarantine cannot
	 * mount or unmount, so they are learnt once. */
	pthread_mutex_t mounts_lock;
	bool mounts_known;
	uint64_t *allowed_mounts;
	size_t n_allowed_mounts;
};

static int sockbroker_signal(void)
{
	return SIGRTMIN;
}

static void sockbroker_on_interrupt(int sig)
{
	(void)sig; /* only there to interrupt a blocking connect() with EINTR */
}

int sockbroker_new(struct sockbroker **ret, const struct sockbroker_config *config, struct error *err)
{
	struct sigaction sa = { .sa_handler = sockbroker_on_interrupt }; /* no SA_RESTART */
	if (sigaction(sockbroker_signal(), &sa, NULL) < 0)
		return error_set_errno(err, errno, "cannot install the connect broker's signal");
	struct sockbroker *b = calloc(1, sizeof(*b));
	if (!b)
		return error_set(err, ENOMEM, "out of memory");
	b->listener_fd = fcntl(config->listener_fd, F_DUPFD_CLOEXEC, 3);
	b->workspace = strdup(config->workspace ? config->workspace : "/");
	b->share_net = config->share_net;
	b->writable = calloc(config->n_writable + 1, sizeof(*b->writable));
	bool copied = b->writable != NULL;
	for (size_t i = 0; copied && i < config->n_writable; i++)
		copied = (b->writable[i] = strdup(config->writable[i].path)) != NULL;
	if (b->listener_fd < 0 || !b->workspace || !copied) {
		int e = b->listener_fd < 0 ? errno : ENOMEM;
		if (b->listener_fd >= 0)
			close(b->listener_fd);
		free(b->workspace);
		strv_free(b->writable);
		free(b);
		return error_set_errno(err, e, "cannot start the connect broker");
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_mutex_init(&b->mounts_lock, NULL);
	pthread_cond_init(&b->wake, NULL);
	*ret = b;
	return 0;
}

bool sockbroker_handles(const struct seccomp_notif *req)
{
	return req->data.nr == __NR_connect && req->data.arch == syscall_filter_native_arch();
}

/* The caller still waits for this notification: whatever was read from its
 * pid (memory, /proc links) was read from it, not from a recycled pid. */
static bool sockbroker_valid(struct sockbroker *b, uint64_t id)
{
	return ioctl(b->listener_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void sockbroker_record(struct sockbroker *b, const char *path)
{
	pthread_mutex_lock(&b->lock);
	size_t i;
	for (i = 0; i < b->n_denials; i++)
		if (strncmp(b->denials[i].path, path, sizeof(b->denials[i].path) - 1) == 0)
			break;
	if (i < b->n_denials) {
		b->denials[i].count++;
	} else if (b->n_denials == SANDBOX_MAX_SOCKET_DENIALS) {
		b->denials_dropped++;
	} else {
		struct sandbox_socket_denial *d = &b->denials[b->n_denials++];
		snprintf(d->path, sizeof(d->path), "%.511s", path); /* longer ones are cut */
		d->count = 1;
	}
	pthread_mutex_unlock(&b->lock);
}

static int sockbroker_connect_to(int sock, const void *addr, socklen_t len)
{
	return connect(sock, addr, len) < 0 ? -errno : 0;
}

static int sockbroker_mount_id(int dirfd, const char *path, uint64_t *ret)
{
	struct statx stx;

	if (statx(dirfd, path, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MNT_ID, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP; /* before Linux 5.8 */
	*ret = stx.stx_mnt_id;
	return S_ISSOCK(stx.stx_mode) ? 1 : 0;
}

/* A directory of the caller's view, pinned without following symlinks. */
static int sockbroker_open_in_root(int root, const char *path, uint64_t resolve)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | resolve };

	for (int i = 0; i < SOCKBROKER_RESOLVE_TRIES; i++) {
		int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			return fd < 0 ? -errno : fd;
	}
	return -EAGAIN;
}

static bool sockbroker_id_in(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Reads the caller's mount table once: the mounts at the workspace and at
 * /tmp as the caller resolves them, and every mount whose chain of parents
 * reaches one of them without passing a writable directory's: those are
 * the host's directories, mounted in the private /tmp when they lie below
 * the host's, and their sockets the host's. A writable directory that
 * cannot be found fails the whole: every pathname connect is refused. */
static int sockbroker_learn_mounts(struct sockbroker *b, pid_t pid, int root)
{
	uint64_t tops[2] = { 0, 0 };
	const char *paths[2] = { b->workspace, "/tmp" };
	for (int i = 0; i < 2; i++) {
		cleanup_close int fd = sockbroker_open_in_root(root, paths[i], RESOLVE_NO_SYMLINKS);
		if (fd < 0)
			return fd;
		int r = sockbroker_mount_id(fd, "", &tops[i]);
		if (r < 0)
			return r;
	}
	size_t n_stops = strv_length(b->writable);
	cleanup_free uint64_t *stops = calloc(n_stops + 1, sizeof(*stops));
	if (!stops)
		return -ENOMEM;
	for (size_t i = 0; i < n_stops; i++) {
		cleanup_close int fd =
			sockbroker_open_in_root(root, b->writable[i], RESOLVE_NO_SYMLINKS);
		if (fd < 0)
			return fd;
		int r = sockbroker_mount_id(fd, "", &stops[i]);
		if (r < 0)
			return r;
	}
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d/mountinfo", (int)pid);
	cleanup_free char *text = NULL;
	size_t size;
	struct error ignored = { 0 };
	int r = file_read_capped(AT_FDCWD, proc, 16 * 1024 * 1024, &text, &size, &ignored);
	if (r < 0)
		return r;
	size_t n = 0, cap = 64;
	cleanup_free uint64_t *ids = malloc(cap * sizeof(*ids));
	cleanup_free uint64_t *parents = malloc(cap * sizeof(*parents));
	if (!ids || !parents)
		return -ENOMEM;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		unsigned long long id, parent;
		if (sscanf(line, "%llu %llu", &id, &parent) == 2) {
			if (n == cap) {
				cap *= 2;
				uint64_t *a = realloc(ids, cap * sizeof(*ids));
				if (a)
					ids = a;
				uint64_t *p = realloc(parents, cap * sizeof(*parents));
				if (p)
					parents = p;
				if (!a || !p)
					return -ENOMEM;
			}
			ids[n] = id;
			parents[n++] = parent;
		}
		line = next;
	}
	uint64_t *allowed = malloc((n + 2) * sizeof(*allowed));
	if (!allowed)
		return -ENOMEM;
	size_t n_allowed = 0;
	for (int i = 0; i < 2; i++)
		if (!sockbroker_id_in(stops, n_stops, tops[i]))
			allowed[n_allowed++] = tops[i];
	for (size_t i = 0; i < n; i++) {
		uint64_t at = ids[i];
		/* up the parents; a chain longer than the table is a cycle */
		for (size_t depth = 0; depth <= n; depth++) {
			if (sockbroker_id_in(stops, n_stops, at))
				break;
			if (at == tops[0] || at == tops[1]) {
				if (!sockbroker_id_in(allowed, n_allowed, ids[i]))
					allowed[n_allowed++] = ids[i];
				break;
			}
			size_t k;
			for (k = 0; k < n && ids[k] != at; k++)
				;
			if (k == n || parents[k] == at)
				break; /* the root of the table */
			at = parents[k];
		}
	}
	b->allowed_mounts = allowed;
	b->n_allowed_mounts = n_allowed;
	return 0;
}

static int sockbroker_mount_allowed(struct sockbroker *b, pid_t pid, int root, uint64_t id)
{
	int r = 0;

	pthread_mutex_lock(&b->mounts_lock);
	if (!b->mounts_known) {
		r = sockbroker_learn_mounts(b, pid, root);
		b->mounts_known = r == 0;
	}
	if (r == 0)
		r = sockbroker_id_in(b->allowed_mounts, b->n_allowed_mounts, id) ? 1 : 0;
	pthread_mutex_unlock(&b->mounts_lock);
	return r;
}

/* Paths through the quarantine's /proc. Its self and thread-self links name
 * the caller, but resolve to nothing for the supervisor, which is not in the
 * quarantine's pid namespace, and its fd, cwd and root links lead anywhere
 * (openat2() refuses them under RESOLVE_IN_ROOT with EXDEV). No socket file
 * lives in /proc, so a connect through it is refused outright: checked on
 * the path with "//" and "/./" taken out, and /dev's links into /proc. */
static bool sockbroker_through_proc(const char *path)
{
	static const char *const prefixes[] = { "/proc/", "/dev/fd/", "/dev/stdin/", "/dev/stdout/",
						"/dev/stderr/" };
	char clean[PATH_MAX + 2];
	size_t n = 0;

	for (const char *p = path; *p && n + 2 < sizeof(clean);) {
		if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')))) {
			p += p[1] == '/' ? 1 : 2;
			continue;
		}
		clean[n++] = *p++;
	}
	clean[n++] = '/';
	clean[n] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (strncmp(clean, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* A pathname address: resolved in the caller's view, pinned, checked, and
 * connected to through the pin. */
static int sockbroker_connect_path(struct sockbroker *b, const struct seccomp_notif *req, int sock,
				   const char *path, bool capless)
{
	pid_t pid = (pid_t)req->pid;
	char full[PATH_MAX + sizeof(((struct sockaddr_un *)0)->sun_path) + 2];
	char proc[64];

	if (path[0] == '/') {
		snprintf(full, sizeof(full), "%s", path);
	} else {
		char cwd[PATH_MAX];
		snprintf(proc, sizeof(proc), "/proc/%d/cwd", (int)pid);
		ssize_t len = readlink(proc, cwd, sizeof(cwd) - 1);
		if (len <= 0)
			return -ENOENT;
		cwd[len] = '\0';
		/* the path as the caller sees it (its mounts lie beyond the
		 * supervisor's root, so readlink gives the quarantine's path) */
		if (cwd[0] != '/' || (len > 10 && strcmp(cwd + len - 10, " (deleted)") == 0))
			return -ENOENT;
		if (snprintf(full, sizeof(full), "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) >=
		    (int)sizeof(full))
			return -ENAMETOOLONG;
	}
	/* a worker that kept the supervisor's capabilities would connect
	 * with its DAC override: refused, and written down */
	if (!capless || sockbroker_through_proc(full)) {
		sockbroker_record(b, full);
		return -EACCES;
	}
	snprintf(proc, sizeof(proc), "/proc/%d/root", (int)pid);
	cleanup_close int root = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || !sockbroker_valid(b, req->id))
		return -EINTR; /* the caller is gone */
	cleanup_close int pin = sockbroker_open_in_root(root, full, 0);
	if (pin == -EXDEV) {
		/* a /proc magic link (/proc/self/fd/N, /proc/self/root/...): it
		 * may lead anywhere, and is not followed */
		sockbroker_record(b, full);
		return -EACCES;
	}
	if (pin < 0)
		return pin; /* ENOENT, ENOTDIR, ELOOP, EACCES... as the kernel says */
	uint64_t mount_id = 0;
	int r = sockbroker_mount_id(pin, "", &mount_id);
	if (r < 0) {
		sockbroker_record(b, full); /* its mount unknown: refused all the same */
		return -EACCES;
	}
	bool is_socket = r == 1;
	r = sockbroker_mount_allowed(b, pid, root, mount_id);
	if (r < 0 && !sockbroker_valid(b, req->id))
		return -EINTR;
	if (r <= 0) {
		if (!is_socket)
			return -ECONNREFUSED; /* nothing to reach: what the kernel says */
		sockbroker_record(b, full);
		return -EACCES; /* what Landlock answers */
	}
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d", pin);
	return sockbroker_connect_to(sock, &addr,
				     (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
						 (size_t)n + 1));
}

/* A pidfd for the caller: req->pid is the thread that called connect(),
 * which need not lead its thread group (Go's runtime, any thread pool), and
 * pidfd_open() refuses a thread that does not without PIDFD_THREAD. Before
 * Linux 6.9, the group's leader stands for it: threads share their
 * descriptor table (a task that does not is not a thread of a group a
 * libc makes), and the leader's pid stays reserved while any thread of its
 * group lives. Whatever was read is from the caller only if its
 * notification is still valid afterwards, which the caller checks. */
static int sockbroker_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	fd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	cleanup_free char *text = NULL;
	size_t size;
	struct error ignored = { 0 };
	if (file_read_capped(AT_FDCWD, path, 64 * 1024, &text, &size, &ignored) < 0)
		return -1;
	const char *line = strstr(text, "\nTgid:");
	int tgid;
	if (!line || sscanf(line + 6, "%d", &tgid) != 1 || tgid <= 0) {
		errno = ESRCH;
		return -1;
	}
	return (int)syscall(SYS_pidfd_open, tgid, 0);
}

/* One connect(): 0 or a negative errno, the caller's answer. */
static int sockbroker_connect(struct sockbroker *b, const struct seccomp_notif *req, bool capless)
{
	pid_t pid = (pid_t)req->pid;
	int addrlen = (int)req->data.args[2];
	union {
		struct sockaddr sa;
		struct sockaddr_un un;
		struct sockaddr_storage ss;
	} addr;

	memset(&addr, 0, sizeof(addr));
	/* the kernel's own bounds (move_addr_to_kernel) */
	if (addrlen < 0 || addrlen > (int)sizeof(addr.ss))
		return -EINVAL;
	/* Read once: what is checked and connected to is this copy. */
	if (addrlen > 0) {
		struct iovec local = { &addr, (size_t)addrlen };
		struct iovec remote = { (void *)(uintptr_t)req->data.args[1], (size_t)addrlen };
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != addrlen)
			return sockbroker_valid(b, req->id) ? -EFAULT : -EINTR;
	}
	cleanup_close int pidfd = sockbroker_pidfd(pid);
	if (pidfd < 0 || !sockbroker_valid(b, req->id))
		return -EINTR; /* the caller is gone */
	cleanup_close int sock = (int)syscall(SYS_pidfd_getfd, pidfd, (int)req->data.args[0], 0);
	if (sock < 0)
		return errno == EBADF ? -EBADF : -errno;
	int domain;
	socklen_t len = sizeof(domain);
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return -errno; /* ENOTSOCK */
	/* Another family: the socket's network namespace is the quarantine's,
	 * fixed when it was made, so connecting from here reaches nothing more. */
	if (domain != AF_UNIX || addrlen <= (int)offsetof(struct sockaddr_un, sun_path) ||
	    addr.un.sun_family != AF_UNIX)
		return sockbroker_connect_to(sock, &addr, (socklen_t)addrlen);
	size_t path_max = (size_t)addrlen - offsetof(struct sockaddr_un, sun_path);
	if (addr.un.sun_path[0] == '\0') {
		/* Abstract: looked up in the socket's network namespace. A private
		 * one holds only the quarantine's sockets; the host's (--net host)
		 * holds the host's, which Landlock's scope kept out and a connect
		 * from here would not. */
		if (b->share_net) {
			char name[sizeof(addr.un.sun_path) + 2] = "@";
			size_t n = strnlen(addr.un.sun_path + 1, path_max - 1);
			memcpy(name + 1, addr.un.sun_path + 1, n);
			name[n + 1] = '\0';
			sockbroker_record(b, name);
			return -EPERM; /* what Landlock's scope answers */
		}
		return sockbroker_connect_to(sock, &addr, (socklen_t)addrlen);
	}
	char path[sizeof(addr.un.sun_path) + 1];
	size_t n = strnlen(addr.un.sun_path, path_max);
	memcpy(path, addr.un.sun_path, n);
	path[n] = '\0';
	return sockbroker_connect_path(b, req, sock, path, capless);
}

/* The command's DAC rights, not the supervisor's: the same uid and groups
 * (the user namespace maps them to themselves) and, like the command, no
 * capabilities. capset() changes the calling thread only. */
static bool sockbroker_drop_capabilities(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &header, data) < 0)
		return false;
	data[0].effective = data[1].effective = 0;
	return syscall(SYS_capset, &header, data) == 0;
}

static void *sockbroker_worker_main(void *arg)
{
	struct sockbroker_worker *w = arg;
	struct sockbroker *b = w->broker;
	sigset_t mask;

	/* SIGCHLD stays blocked: the supervisor reads it from a signalfd. */
	sigfillset(&mask);
	sigdelset(&mask, sockbroker_signal());
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	bool capless = sockbroker_drop_capabilities();

	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->stopping && b->n_queued == 0) {
			b->n_waiting++;
			pthread_cond_wait(&b->wake, &b->lock);
			b->n_waiting--;
		}
		if (b->stopping)
			break;
		struct seccomp_notif req = b->queue[b->head];
		b->head = (b->head + 1) % SOCKBROKER_MAX_QUEUED;
		b->n_queued--;
		w->busy = true;
		w->id = req.id;
		b->n_busy++;
		pthread_mutex_unlock(&b->lock);

		struct seccomp_notif_resp resp = { .id = req.id };
		resp.error = sockbroker_connect(b, &req, capless);

		pthread_mutex_lock(&b->lock);
		w->busy = false;
		b->n_busy--;
		pthread_mutex_unlock(&b->lock);
		/* ENOENT when the caller stopped waiting: nothing to answer */
		(void)ioctl(b->listener_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		pthread_mutex_lock(&b->lock);
	}
	w->exited = true;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static void sockbroker_answer(struct sockbroker *b, uint64_t id, int error)
{
	struct seccomp_notif_resp resp = { .id = id, .error = error };

	(void)ioctl(b->listener_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* Called with the lock held. */
static bool sockbroker_start_worker(struct sockbroker *b)
{
	struct sockbroker_worker *w = &b->workers[b->n_workers];
	pthread_attr_t attr;

	*w = (struct sockbroker_worker){ .broker = b };
	if (pthread_attr_init(&attr) != 0)
		return false;
	(void)pthread_attr_setstacksize(&attr, SOCKBROKER_STACK_BYTES);
	bool started = pthread_create(&w->thread, &attr, sockbroker_worker_main, w) == 0;
	pthread_attr_destroy(&attr);
	if (started)
		b->n_workers++;
	return started;
}

void sockbroker_submit(struct sockbroker *b, const struct seccomp_notif *req)
{
	pthread_mutex_lock(&b->lock);
	if (b->n_queued == SOCKBROKER_MAX_QUEUED || b->stopping) {
		pthread_mutex_unlock(&b->lock);
		sockbroker_answer(b, req->id, -EAGAIN);
		return;
	}
	b->queue[(b->head + b->n_queued++) % SOCKBROKER_MAX_QUEUED] = *req;
	if (b->n_waiting < b->n_queued && b->n_workers < SOCKBROKER_MAX_WORKERS)
		(void)sockbroker_start_worker(b);
	if (b->n_workers == 0) {
		/* no thread at all: refuse rather than leave the caller waiting */
		b->n_queued--;
		pthread_mutex_unlock(&b->lock);
		sockbroker_answer(b, req->id, -EAGAIN);
		return;
	}
	pthread_cond_signal(&b->wake);
	pthread_mutex_unlock(&b->lock);
}

void sockbroker_sweep(struct sockbroker *b)
{
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->n_workers; i++) {
		struct sockbroker_worker *w = &b->workers[i];
		if (w->busy && !sockbroker_valid(b, w->id))
			(void)pthread_kill(w->thread, sockbroker_signal());
	}
	pthread_mutex_unlock(&b->lock);
}

int sockbroker_poll_timeout_ms(struct sockbroker *b)
{
	pthread_mutex_lock(&b->lock);
	bool in_flight = b->n_busy > 0;
	pthread_mutex_unlock(&b->lock);
	return in_flight ? SOCKBROKER_SWEEP_MS : -1;
}

void sockbroker_finish(struct sockbroker *b, struct sandbox_result *result)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	b->stopping = true;
	pthread_cond_broadcast(&b->wake);
	/* A connect() blocks until a signal interrupts it; one sent just before
	 * the worker entered it is lost, so each round sends another. */
	for (;;) {
		bool running = false;
		for (size_t i = 0; i < b->n_workers; i++)
			if (!b->workers[i].exited) {
				running = true;
				if (b->workers[i].busy)
					(void)pthread_kill(b->workers[i].thread, sockbroker_signal());
			}
		if (!running)
			break;
		pthread_mutex_unlock(&b->lock);
		(void)nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	for (size_t i = 0; i < b->n_workers; i++)
		pthread_join(b->workers[i].thread, NULL);
	/* Callers still queued are gone or going; the listener's close answers them. */
	if (result) {
		for (size_t i = 0; i < b->n_denials; i++)
			result->socket_denials[i] = b->denials[i];
		result->n_socket_denials = b->n_denials;
		result->socket_denials_dropped = b->denials_dropped;
	}
	close(b->listener_fd);
	pthread_mutex_destroy(&b->lock);
	pthread_mutex_destroy(&b->mounts_lock);
	pthread_cond_destroy(&b->wake);
	free(b->allowed_mounts);
	free(b->workspace);
	strv_free(b->writable);
	free(b);
}

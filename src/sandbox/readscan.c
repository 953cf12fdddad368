/* SPDX-License-Identifier: MIT */
#include "sandbox/readscan.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "sandbox/isolate.h"

struct readscan {
	pthread_t thread;
	int fd; /* the supervisor's end of the scan socket: the thread sends, stop closes */
	int dir_fd; /* the workspace */
	atomic_bool stop;
#if AIRLOCK_TEST_HOOKS
	/* A test build's stand-in for the agent linking a file in the
	 * workspace after the scan: "NAME NEW", relative to the workspace. */
	char *link_after;
	/* A test build's stand-in for a thread that gets no CPU: it waits
	 * for a byte on this descriptor (the test's) before the walk. */
	int hold_fd;
#endif
};

struct readscan_walk {
	const atomic_bool *stop;
	int answer_fd; /* -1, or the socket whose hang-up (init read it, or is gone) ends the walk */
	dev_t dev; /* the workspace's file system */
	unsigned budget; /* entries left */
};

/* Whether the walk is moot: stopped, or init no longer listens. */
static bool readscan_moot(struct readscan_walk *w)
{
	if (atomic_load_explicit(w->stop, memory_order_relaxed))
		return true;
	if (w->answer_fd < 0 || w->budget % 64)
		return false;
	struct pollfd p = { .fd = w->answer_fd, .events = 0 };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* One directory, at depth; true when it may hold a linked file. */
static bool readscan_dir(struct readscan_walk *w, int dir_fd, int depth)
{
	char buf[4096];
	struct dirread d;
	struct dirread_entry e;
	int r;

	dirread_init(&d, dir_fd, buf, sizeof(buf));
	while ((r = dirread_next(&d, &e)) > 0) {
		struct stat st;
		if (w->budget-- == 0 || readscan_moot(w))
			return true;
		/* Only a regular file can be a group's, a directory hold one;
		 * a symlink is never followed. */
		if (e.type != DT_UNKNOWN && e.type != DT_REG && e.type != DT_DIR)
			continue;
		if (fstatat(dir_fd, e.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return true;
		if (st.st_dev != w->dev)
			return true; /* a mount point: its files are not the overlay's lower layer's */
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			return true;
		if (!S_ISDIR(st.st_mode))
			continue;
		if (depth >= READSCAN_MAX_DEPTH)
			return true;
		cleanup_close int sub =
			openat(dir_fd, e.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || readscan_dir(w, sub, depth + 1))
			return true;
	}
	return r < 0;
}

bool readscan_may_hold_links(int dir_fd, const atomic_bool *stop, int answer_fd)
{
	struct stat st;

	if (fstat(dir_fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return true;
	struct readscan_walk w = {
		.stop = stop, .answer_fd = answer_fd, .dev = st.st_dev, .budget = READSCAN_MAX_ENTRIES
	};
	return readscan_dir(&w, dir_fd, 0);
}

static void *readscan_thread(void *arg)
{
	struct readscan *s = arg;
	char answer = 'l'; /* may hold links */

#if AIRLOCK_TEST_HOOKS
	char held;
	if (s->hold_fd >= 0 && read(s->hold_fd, &held, 1) < 0)
		answer = 'e';
#endif
	if (!readscan_may_hold_links(s->dir_fd, &s->stop, s->fd)) {
		answer = ISOLATE_SCAN_NO_LINKS;
#if AIRLOCK_TEST_HOOKS
		char *space = s->link_after ? strchr(s->link_after, ' ') : NULL;
		if (space) {
			*space = '\0';
			if (linkat(s->dir_fd, s->link_after, s->dir_fd, space + 1, 0) < 0)
				answer = 'e'; /* the test's link failed: trace reads */
		}
#endif
	}
	/* Init may have stopped waiting and closed its end: no SIGPIPE. */
	(void)send(s->fd, &answer, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	return NULL;
}

/* Whether the calling thread may take a thread of its process from
 * SCHED_IDLE back to SCHED_OTHER at its nice value: the kernel lets it
 * where RLIMIT_NICE allows that nice value (can_nice()) or with
 * CAP_SYS_NICE. */
static bool readscan_idle_revertible(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 }, { 0 } };
	struct rlimit rl;

	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && getrlimit(RLIMIT_NICE, &rl) == 0 &&
	    (rl.rlim_cur == RLIM_INFINITY || (rlim_t)(20 - nice) <= rl.rlim_cur))
		return true;
	return syscall(SYS_capget, &header, data) == 0 && (data[0].effective & (1U << CAP_SYS_NICE));
}

/* The thread, at SCHED_IDLE: only on a CPU nothing else wants, so the
 * scan never slows init, the command or the machine's other work; starved,
 * it answers late and reads are traced, as without it. Set here, by the
 * thread that later calls readscan_stop() (whose SCHED_OTHER it then
 * cannot follow; glibc's attributes refuse the class), and only where that
 * thread can take it back: an unprivileged one cannot (RLIMIT_NICE 0), and
 * the join then waited for a thread at SCHED_IDLE to get a CPU (a dry run
 * as nobody under two CPU hogs took 420 ms instead of 28 here). There it
 * stays at normal priority: it is stopped once init loaded its filter,
 * before the command runs. */
static int readscan_spawn(struct readscan *s)
{
	struct sched_param idle = { 0 };
	int r = pthread_create(&s->thread, NULL, readscan_thread, s);
	if (r == 0 && readscan_idle_revertible())
		(void)pthread_setschedparam(s->thread, SCHED_IDLE, &idle);
	return -r;
}

int readscan_start(struct readscan **ret, const char *workspace, int fd)
{
	struct readscan *s = calloc(1, sizeof(*s));

	*ret = NULL;
	if (!s)
		return -ENOMEM;
	s->fd = fd;
	atomic_init(&s->stop, false);
	s->dir_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
#if AIRLOCK_TEST_HOOKS
	const char *link_after = getenv("AIRLOCK_TEST_READSCAN_LINK");
	s->link_after = link_after ? strdup(link_after) : NULL;
	const char *hold = getenv("AIRLOCK_TEST_READSCAN_HOLD_FD");
	s->hold_fd = hold ? (int)strtol(hold, NULL, 10) : -1;
#endif
	int r = s->dir_fd < 0 ? -errno : readscan_spawn(s);
	if (r < 0) {
		if (s->dir_fd >= 0)
			close(s->dir_fd);
#if AIRLOCK_TEST_HOOKS
		free(s->link_after);
#endif
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void readscan_cancel(struct readscan *s)
{
	if (s)
		atomic_store(&s->stop, true);
}

void readscan_stop(struct readscan *s)
{
	if (!s)
		return;
	readscan_cancel(s);
	struct sched_param normal = { 0 };
	(void)pthread_setschedparam(s->thread, SCHED_OTHER, &normal);
	(void)pthread_join(s->thread, NULL);
	close(s->dir_fd);
	close(s->fd);
#if AIRLOCK_TEST_HOOKS
	free(s->link_after);
#endif
	free(s);
}

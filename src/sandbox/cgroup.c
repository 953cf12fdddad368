/* SPDX-License-Identifier: MIT */
#include "sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"

#define V1_ROOT "/sys/fs/cgroup"

static bool cgroup_write(const char *dir, const char *file, const char *value)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd >= 0 && fd_write_all(fd, value, strlen(value)) == 0;
}

/* The value after `key ` in a flat keyed file (memory.oom_control,
 * pids.events), or 0. */
static uint64_t cgroup_read_key(const char *dir, const char *file, const char *key)
{
	char path[320];
	cleanup_free char *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_capped(AT_FDCWD, path, 4096, &text, NULL, NULL) < 0)
		return 0;
	size_t n = strlen(key);
	for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ' ')
			return strtoull(line + n + 1, NULL, 10);
	return 0;
}

unsigned cgroup_sweep_stale(const char *parent)
{
	cleanup_closedir DIR *d = opendir(parent);
	unsigned removed = 0;
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (e->d_type != DT_DIR || end == e->d_name || *end != '-' || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
			removed++;
	}
	return removed;
}

/* <controller>/airlock/<pid>-<nanoseconds>: unique without coordination. */
static bool cgroup_make(const char *controller, char *dir, size_t size)
{
	char parent[128];
	struct timespec ts;

	snprintf(parent, sizeof(parent), V1_ROOT "/%s/airlock", controller);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* About one run in 16 clears what killed supervisors left: enough to
	 * keep leftovers few, cheap for the other fifteen. */
	if (((ts.tv_nsec >> 10) & 15) == 0)
		(void)cgroup_sweep_stale(parent);
	snprintf(dir, size, "%s/%d-%lld%09ld", parent, (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
	return mkdir(dir, 0755) == 0;
}

bool cgroup_run_create(struct cgroup_run *cg, uint64_t memory_bytes, uint64_t max_processes)
{
	char value[32];

	*cg = (struct cgroup_run){ 0 };
	if (geteuid() != 0)
		return false;
	if (access(V1_ROOT "/memory/memory.limit_in_bytes", F_OK) == 0 &&
	    cgroup_make("memory", cg->memory_dir, sizeof(cg->memory_dir))) {
		snprintf(value, sizeof(value), "%llu", (unsigned long long)memory_bytes);
		/* Swap too, where it is accounted: a limit that swaps is no limit. */
		cg->memory = cgroup_write(cg->memory_dir, "memory.limit_in_bytes", value);
		(void)cgroup_write(cg->memory_dir, "memory.memsw.limit_in_bytes", value);
		if (!cg->memory)
			(void)rmdir(cg->memory_dir);
	}
	if (access(V1_ROOT "/pids/pids.max", F_OK) == 0 || access(V1_ROOT "/pids", F_OK) == 0) {
		if (cgroup_make("pids", cg->pids_dir, sizeof(cg->pids_dir))) {
			snprintf(value, sizeof(value), "%llu", (unsigned long long)max_processes);
			cg->pids = cgroup_write(cg->pids_dir, "pids.max", value);
			if (!cg->pids)
				(void)rmdir(cg->pids_dir);
		}
	}
	return cg->memory || cg->pids;
}

void cgroup_run_open_tasks(const struct cgroup_run *cg, int ret_fds[2])
{
	char path[320];

	ret_fds[0] = ret_fds[1] = -1;
	if (cg->memory) {
		snprintf(path, sizeof(path), "%s/tasks", cg->memory_dir);
		ret_fds[0] = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (cg->pids) {
		snprintf(path, sizeof(path), "%s/tasks", cg->pids_dir);
		ret_fds[1] = open(path, O_WRONLY | O_CLOEXEC);
	}
}

bool cgroup_run_memory_fired(const struct cgroup_run *cg)
{
	return cg->memory && cgroup_read_key(cg->memory_dir, "memory.oom_control", "oom_kill") > 0;
}

bool cgroup_run_pids_fired(const struct cgroup_run *cg)
{
	return cg->pids && cgroup_read_key(cg->pids_dir, "pids.events", "max") > 0;
}

void cgroup_run_destroy(struct cgroup_run *cg)
{
	/* The processes are gone (reaped) before this; a memory cgroup may
	 * still be busy for a moment while its pages are uncharged. */
	for (int attempt = 0; attempt < 50; attempt++) {
		bool memory_left = cg->memory_dir[0] && rmdir(cg->memory_dir) < 0 && errno == EBUSY;
		bool pids_left = cg->pids_dir[0] && rmdir(cg->pids_dir) < 0 && errno == EBUSY;
		if (!memory_left && !pids_left)
			break;
		usleep(1000);
	}
	*cg = (struct cgroup_run){ 0 };
}

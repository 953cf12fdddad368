/* SPDX-License-Identifier: MIT */
#include "sandbox/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/parse.h"

struct proc_entry {
	pid_t pid, ppid;
};

void pid_set_release(struct pid_set *set)
{
	free(set->pids);
	*set = (struct pid_set){ 0 };
}

static int pid_set_add(struct pid_set *set, pid_t pid)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->pids[i] == pid)
			return 0;
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 64;
		pid_t *grown = realloc(set->pids, cap * sizeof(pid_t));
		if (!grown)
			return -ENOMEM;
		set->pids = grown;
		set->cap = cap;
	}
	set->pids[set->n++] = pid;
	return 0;
}

/* Reads the parent pid from /proc/<pid>/stat; the comm field may contain
 * spaces and parentheses, so parse from the last ')'. */
static int proc_read_ppid(int proc_fd, const char *name, pid_t *ret_ppid)
{
	char path[64], buf[512];

	snprintf(path, sizeof(path), "%s/stat", name);
	cleanup_close int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	char *close_paren = strrchr(buf, ')');
	char state;
	int ppid;
	if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
		return -EIO;
	*ret_ppid = ppid;
	return 0;
}

static int proc_snapshot(struct proc_entry **ret_entries, size_t *ret_n)
{
	cleanup_close int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	DIR *dir = fdopendir(dup(proc_fd));
	if (!dir)
		return -errno;

	struct proc_entry *entries = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		uint64_t pid;
		pid_t ppid;
		if (parse_u64(de->d_name, &pid) < 0 || proc_read_ppid(proc_fd, de->d_name, &ppid) < 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct proc_entry *grown = realloc(entries, cap * sizeof(*entries));
			if (!grown) {
				free(entries);
				closedir(dir);
				return -ENOMEM;
			}
			entries = grown;
		}
		entries[n++] = (struct proc_entry){ .pid = (pid_t)pid, .ppid = ppid };
	}
	closedir(dir);
	*ret_entries = entries;
	*ret_n = n;
	return 0;
}

static int proc_entry_compare(const void *a, const void *b)
{
	const struct proc_entry *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static bool proc_is_member(const struct proc_entry *entries, const bool *member, size_t n, pid_t pid)
{
	struct proc_entry key = { .pid = pid };
	const struct proc_entry *e = bsearch(&key, entries, n, sizeof(key), proc_entry_compare);

	return e && member[e - entries];
}

int proctree_signal_descendants(pid_t root, int sig, struct pid_set *signaled)
{
	cleanup_free struct proc_entry *entries = NULL;
	size_t n = 0;
	int r = proc_snapshot(&entries, &n);
	if (r < 0)
		return r;
	qsort(entries, n, sizeof(*entries), proc_entry_compare);

	/* Rounds over the parent links until no new descendant turns up: each
	 * round is O(n log n) and there are at most depth-of-tree rounds. */
	cleanup_free bool *member = calloc(n ? n : 1, sizeof(bool));
	if (!member)
		return -ENOMEM;
	int count = 0;
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (member[i] || (entries[i].ppid != root &&
					  !proc_is_member(entries, member, n, entries[i].ppid)))
				continue;
			member[i] = grew = true;
			if (kill(entries[i].pid, sig) == 0) {
				count++;
				if (pid_set_add(signaled, entries[i].pid) < 0)
					return -ENOMEM;
			}
		}
	}
	return count;
}

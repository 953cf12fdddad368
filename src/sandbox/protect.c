/* SPDX-License-Identifier: MIT */
#include "sandbox/protect.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"
#include "basic/strv.h"

#define PLACEHOLDER_XATTR "user.airlock.placeholder"
#define MAX_SYMLINK_HOPS  16
#define MAX_WALK_RETRIES  8

/* Strictly below the workspace: the workspace root itself is never made
 * read-only or pinned (it is already the writable mount's root). */
static bool protect_in_workspace(const struct protect_plan *plan, const char *path)
{
	return path_is_under(path, plan->workspace) && strcmp(path, plan->workspace) != 0;
}

static int protect_add_mount(struct protect_plan *plan, const char *path, bool read_only,
			     struct error *err)
{
	if (!read_only && plan->no_pins)
		return 0;
	for (size_t i = 0; i < plan->n_mounts; i++)
		if (strcmp(plan->mounts[i].path, path) == 0) {
			plan->mounts[i].read_only |= read_only;
			return 0;
		}
	if (plan->n_mounts == PROTECT_MAX_MOUNTS)
		return error_set(err, E2BIG, "read-only paths need more than %d mounts",
				 PROTECT_MAX_MOUNTS);
	char *copy = strdup(path);
	if (!copy)
		return error_set(err, ENOMEM, "out of memory");
	plan->mounts[plan->n_mounts++] = (struct protect_mount){ copy, read_only };
	return 0;
}

static bool protect_is_placeholder(int fd)
{
	char value[2];

	return fgetxattr(fd, PLACEHOLDER_XATTR, value, sizeof(value)) > 0;
}

bool protect_path_is_placeholder(const char *path)
{
	char value[2];

	return lgetxattr(path, PLACEHOLDER_XATTR, value, sizeof(value)) > 0;
}

static int protect_add_placeholder(struct protect_plan *plan, const char *path, int *fd,
				   int *dir_fd, bool ours)
{
	struct protect_placeholder *p =
		realloc(plan->placeholders, (plan->n_placeholders + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	plan->placeholders = p;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	p[plan->n_placeholders++] = (struct protect_placeholder){
		.path = copy, .fd = TAKE_FD(*fd), .dir_fd = TAKE_FD(*dir_fd), .ours = ours
	};
	return 0;
}

/* A shared lock, retried briefly: the last user may hold it exclusively for
 * the moment it takes to remove the placeholder. A command that holds it
 * longer (it can open the file) only keeps this run from sharing. */
static bool protect_lock_shared(int fd)
{
	for (int i = 0; i < 20; i++) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
	}
	return false;
}

static bool same_file(int fd, int dir_fd, const char *name)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static bool protect_has_placeholder(const struct protect_plan *plan, const char *path)
{
	for (size_t i = 0; i < plan->n_placeholders; i++)
		if (strcmp(plan->placeholders[i].path, path) == 0)
			return true;
	return false;
}

/* Creates the placeholder for the missing entry dir/name, or joins one that
 * another run created. Returns 1 when it is in place, 0 when the caller may
 * not create it (then neither may the command), -EAGAIN when the tree
 * changed under us and the walk must start again. */
static int protect_placeholder(struct protect_plan *plan, const char *dir, const char *name,
			       bool is_dir, struct error *err)
{
	cleanup_free char *path = path_join(dir, name);
	if (!path)
		return error_set(err, ENOMEM, "out of memory");
	if (protect_has_placeholder(plan, path))
		return 1;
	cleanup_close int dir_fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir_fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP
			       ? -EAGAIN
			       : error_set_errno(err, errno, "open %s", dir);
	/* Writable until marked: setting a user xattr needs write access. */
	int r = is_dir ? mkdirat(dir_fd, name, 0755) : 0;
	cleanup_close int fd = -1;
	if (r == 0)
		fd = openat(dir_fd, name,
			    is_dir ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
				   : O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0644);
	if (r < 0 || fd < 0) {
		if (errno == EEXIST || errno == ENOENT)
			return -EAGAIN;
		if (errno == EACCES || errno == EPERM || errno == EROFS)
			return 0;
		return error_set_errno(err, errno, "create placeholder %s", path);
	}
	(void)flock(fd, LOCK_SH | LOCK_NB); /* before anyone can recognise it */
	(void)fsetxattr(fd, PLACEHOLDER_XATTR, "1", 1, 0); /* not every file system */
	(void)fchmod(fd, is_dir ? 0555 : 0444);
	if (protect_add_placeholder(plan, path, &fd, &dir_fd, true) < 0)
		return error_set(err, ENOMEM, "out of memory");
	r = protect_add_mount(plan, path, true, err);
	return r < 0 ? r : 1;
}

/* An existing entry at dir/name that another run left as a placeholder:
 * share it, so that run does not remove it while this one relies on it. */
static int protect_join_placeholder(struct protect_plan *plan, const char *dir,
				    const char *name, struct error *err)
{
	cleanup_free char *path = path_join(dir, name);
	if (!path)
		return error_set(err, ENOMEM, "out of memory");
	if (protect_has_placeholder(plan, path))
		return 1;
	cleanup_close int dir_fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int fd = dir_fd < 0 ? -1
					  : openat(dir_fd, name,
						   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || !protect_is_placeholder(fd))
		return 0;
	if (!protect_lock_shared(fd))
		return 0;
	/* Removed between our lookup and the lock: look again. */
	if (!same_file(fd, dir_fd, name))
		return -EAGAIN;
	if (protect_add_placeholder(plan, path, &fd, &dir_fd, false) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 1;
}

/* Pops the next component off *rest into comp; false at the end. */
static bool next_component(const char **rest, char comp[static NAME_MAX + 1], bool *ret_last)
{
	const char *p = *rest;

	while (*p == '/')
		p++;
	if (*p == '\0')
		return false;
	size_t n = strcspn(p, "/");
	if (n > NAME_MAX)
		n = NAME_MAX; /* lstat() then fails with ENOENT or ENAMETOOLONG */
	memcpy(comp, p, n);
	comp[n] = '\0';
	p += strcspn(p, "/");
	*rest = p;
	while (*p == '/')
		p++;
	*ret_last = *p == '\0';
	return true;
}

/* One walk; returns 1 protected, 0 not, -EAGAIN to walk again, or < 0. */
static int protect_walk(struct protect_plan *plan, const char *path, struct error *err)
{
	cleanup_free char *cur = strdup("/");
	cleanup_free char *buf = strdup(path);
	if (!cur || !buf)
		return error_set(err, ENOMEM, "out of memory");
	const char *rest = buf;
	unsigned hops = 0;
	char comp[NAME_MAX + 1];
	bool last;

	while (next_component(&rest, comp, &last)) {
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *up = path_dirname(cur);
			if (!up)
				return error_set(err, ENOMEM, "out of memory");
			free(cur);
			cur = up;
			continue;
		}
		cleanup_free char *next = path_join(cur, comp);
		if (!next)
			return error_set(err, ENOMEM, "out of memory");
		bool inside = protect_in_workspace(plan, next);
		struct stat st;
		if (lstat(next, &st) < 0) {
			if (errno != ENOENT)
				return error_set_errno(err, errno, "read-only path %s: %s", path,
						       next);
			/* Outside the workspace the host view is read-only. */
			if (!inside)
				return 1;
			return protect_placeholder(plan, cur, comp, !last, err);
		}
		if (!inside) {
			if (!S_ISLNK(st.st_mode)) {
				if (last || !S_ISDIR(st.st_mode))
					return 1;
				free(cur);
				cur = TAKE_PTR(next);
				continue;
			}
		} else if (S_ISLNK(st.st_mode) || (S_ISDIR(st.st_mode) && !last)) {
			int r = protect_join_placeholder(plan, cur, comp, err);
			if (r < 0)
				return r;
			if (r == 1) {
				r = protect_add_mount(plan, next, true, err);
				return r < 0 ? r : 1;
			}
			/* A pin: this directory or link stays where it is. */
			r = protect_add_mount(plan, next, false, err);
			if (r < 0)
				return r;
		} else {
			/* The path itself, or a file where a directory was expected
			 * (a worktree's `.git` file): read-only. */
			int r = protect_join_placeholder(plan, cur, comp, err);
			if (r >= 0)
				r = protect_add_mount(plan, next, true, err);
			return r < 0 ? r : 1;
		}
		if (S_ISLNK(st.st_mode)) {
			if (++hops > MAX_SYMLINK_HOPS)
				return error_set(err, ELOOP, "read-only path %s: too many symlinks",
						 path);
			char target[PATH_MAX];
			ssize_t n = readlink(next, target, sizeof(target) - 1);
			if (n < 0)
				return error_set_errno(err, errno, "readlink %s", next);
			target[n] = '\0';
			char *joined = NULL;
			if (asprintf(&joined, "%s/%s", target, rest) < 0)
				return error_set(err, ENOMEM, "out of memory");
			free(buf);
			buf = joined;
			rest = buf;
			if (target[0] == '/') {
				free(cur);
				cur = strdup("/");
				if (!cur)
					return error_set(err, ENOMEM, "out of memory");
			}
			continue;
		}
		free(cur);
		cur = TAKE_PTR(next);
	}
	/* Ended on a directory reached through "." , ".." or a symlink. */
	if (!protect_in_workspace(plan, cur))
		return path_is_under(cur, plan->workspace) ? 0 : 1;
	int r = protect_add_mount(plan, cur, true, err);
	return r < 0 ? r : 1;
}

int protect_plan_add(struct protect_plan *plan, const char *path, struct error *err)
{
	if (path[0] != '/')
		return error_set(err, EINVAL, "read-only path %s is not absolute", path);
	for (int attempt = 0; attempt < MAX_WALK_RETRIES; attempt++) {
		int r = protect_walk(plan, path, err);
		if (r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		if (r == 1 && strv_push(&plan->enforced, path) < 0)
			return error_set(err, ENOMEM, "out of memory");
		return 0;
	}
	return error_set(err, EAGAIN, "read-only path %s keeps changing while it is planned", path);
}

static int compare_mounts(const void *a, const void *b)
{
	size_t la = strlen(((const struct protect_mount *)a)->path);
	size_t lb = strlen(((const struct protect_mount *)b)->path);

	return (la > lb) - (la < lb);
}

void protect_plan_finish(struct protect_plan *plan)
{
	/* A parent is a prefix, so shorter first mounts parents first. */
	qsort(plan->mounts, plan->n_mounts, sizeof(plan->mounts[0]), compare_mounts);
	for (size_t i = 0; i < plan->n_mounts; i++)
		for (size_t j = 0; j < i; j++)
			if (plan->mounts[j].read_only &&
			    path_is_under(plan->mounts[i].path, plan->mounts[j].path))
				plan->mounts[i].read_only = true;
}

void protect_plan_release(struct protect_plan *plan)
{
	for (size_t i = plan->n_placeholders; i-- > 0;) {
		struct protect_placeholder *p = &plan->placeholders[i];
		const char *name = strrchr(p->path, '/') + 1;
		struct stat st;
		/* The last user holds it alone; a non-empty directory stays. */
		if (flock(p->fd, LOCK_EX | LOCK_NB) == 0 && same_file(p->fd, p->dir_fd, name) &&
		    (p->ours || protect_is_placeholder(p->fd)) && fstat(p->fd, &st) == 0 &&
		    (S_ISDIR(st.st_mode) || st.st_size == 0))
			(void)unlinkat(p->dir_fd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		close(p->fd);
		close(p->dir_fd);
		free(p->path);
	}
	free(plan->placeholders);
	for (size_t i = 0; i < plan->n_mounts; i++)
		free(plan->mounts[i].path);
	strv_free(plan->enforced);
	plan->placeholders = NULL;
	plan->n_placeholders = 0;
	plan->n_mounts = 0;
	plan->enforced = NULL;
}

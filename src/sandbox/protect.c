/* SPDX-License-Identifier: MIT */
#include "sandbox/protect.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "sandbox/pathcache.h"

#define MAX_SYMLINK_HOPS 16

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

/* One walk; returns 1 protected, 0 not, or < 0. */
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
		if (pathcache_lstat(next, &st) < 0) {
			if (errno != ENOENT)
				return error_set_errno(err, errno, "read-only path %s: %s", path, next);
			/* Outside the workspace the host view is read-only. Inside,
			 * nothing is put on the host to mount on: what the command
			 * creates here is moved aside after the run (core/host/hostsafety.h). */
			return 1;
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
			/* A pin: this directory or link stays where it is. */
			int r = protect_add_mount(plan, next, false, err);
			if (r < 0)
				return r;
		} else {
			/* The path itself, or a file where a directory was expected
			 * (a worktree's `.git` file): read-only. */
			int r = protect_add_mount(plan, next, true, err);
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
	int r = protect_walk(plan, path, err);
	if (r < 0)
		return r;
	if (r == 1 && strv_push(&plan->enforced, path) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return 0;
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
	for (size_t i = 0; i < plan->n_mounts; i++)
		free(plan->mounts[i].path);
	strv_free(plan->enforced);
	plan->n_mounts = 0;
	plan->enforced = NULL;
}

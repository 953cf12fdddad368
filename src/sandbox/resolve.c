/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "sandbox/sandbox.h"

/* 0 when dir_fd/path is an executable regular file; -EACCES when it exists
 * but cannot be executed; -ENOENT when it cannot be seen at all (also when a
 * directory on the way is not searchable: nothing by that name is reachable). */
static int candidate_check(int dir_fd, const char *path)
{
	struct stat st;

	if (fstatat(dir_fd, path, &st, 0) < 0)
		return -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (faccessat(dir_fd, path, X_OK, AT_EACCESS) < 0)
		return -EACCES;
	return 0;
}

int sandbox_resolve_command(const char *command, const char *path_env, const char *cwd, char **ret_path)
{
	if (!command || !*command)
		return -ENOENT;
	cleanup_close int cwd_fd = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd_fd < 0)
		return -errno;

	if (strchr(command, '/')) {
		int r = candidate_check(cwd_fd, command);
		if (r < 0)
			return r;
		*ret_path = strdup(command);
		return *ret_path ? 0 : -ENOMEM;
	}

	/* POSIX: an unset PATH means an implementation default. */
	const char *path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
	bool seen_eacces = false;

	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dir_len = (size_t)(end - p);
		cleanup_free char *candidate = NULL;

		/* An empty element means the current directory. */
		if (asprintf(&candidate, "%.*s%s%s", (int)dir_len, p, dir_len ? "/" : "./", command) < 0)
			return -ENOMEM;
		int r = candidate_check(cwd_fd, candidate);
		if (r == 0) {
			*ret_path = TAKE_PTR(candidate);
			return 0;
		}
		if (r == -EACCES)
			seen_eacces = true;
		if (*end == '\0')
			break;
		p = end;
	}
	return seen_eacces ? -EACCES : -ENOENT;
}

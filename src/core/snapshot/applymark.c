/* SPDX-License-Identifier: MIT */
#include "core/snapshot/applymark.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/statepath.h"

int applymark_open(struct store *store, int *ret_fd, struct error *err)
{
	int fd = openat(store_dir_fd(store), APPLYMARK_DIR,
			O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(store_dir_fd(store), STATEPATH_DRYRUNS, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create %s/" STATEPATH_DRYRUNS,
					       store_path(store));
		if (mkdirat(store_dir_fd(store), APPLYMARK_DIR, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create %s/" APPLYMARK_DIR,
					       store_path(store));
		fd = openat(store_dir_fd(store), APPLYMARK_DIR,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return error_set_errno(err, errno, "open %s/" APPLYMARK_DIR, store_path(store));
	*ret_fd = fd;
	return 0;
}

int applymark_add(int dir_fd, uint64_t id, struct error *err)
{
	char name[24];

	snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
	if (mknodat(dir_fd, name, S_IFREG | 0600, 0) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "mark dry run %llu's apply under way",
				       (unsigned long long)id);
	return 0;
}

int applymark_link(int journal_dir_fd, const char *name, int dir_fd, uint64_t id, struct error *err)
{
	char mark[24];

	snprintf(mark, sizeof(mark), "%llu", (unsigned long long)id);
	/* An older name (a removal a crash lost) may link an older journal:
	 * replaced, so that the name durable after the caller's sync of dir_fd
	 * links this journal. */
	int r = linkat(journal_dir_fd, name, dir_fd, mark, 0);
	if (r < 0 && errno == EEXIST && unlinkat(dir_fd, mark, 0) == 0)
		r = linkat(journal_dir_fd, name, dir_fd, mark, 0);
	if (r < 0)
		return error_set_errno(err, errno, "mark dry run %llu's apply under way",
				       (unsigned long long)id);
	return 0;
}

void applymark_remove(struct store *store, uint64_t id)
{
	char name[64];

	snprintf(name, sizeof(name), APPLYMARK_DIR "/%llu", (unsigned long long)id);
	(void)unlinkat(store_dir_fd(store), name, 0);
}

bool applymark_complete(int dir_fd)
{
	return faccessat(dir_fd, APPLYMARK_COMPLETE, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int applymark_set_complete(int dir_fd, struct error *err)
{
	if (mknodat(dir_fd, APPLYMARK_COMPLETE, S_IFREG | 0600, 0) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "mark the applies under way complete");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The ledger's directory, its lock, read-only maps of its files. */
#include "ledger/internal.h"

/* ---- the directory, the lock ---------------------------------------------------- */

int ledger_dir(struct ledger *ledger, bool create, struct error *err)
{
	int fd = openat(ledger->root_fd, LEDGER_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(ledger->root_fd, LEDGER_DIR, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create %s/%s", ledger->root_path,
					       LEDGER_DIR);
		fd = openat(ledger->root_fd, LEDGER_DIR,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : error_set_errno(err, errno, "open %s/%s",
							 ledger->root_path, LEDGER_DIR);
	return fd;
}

int ledger_lock(int dir_fd, int how, struct error *err)
{
	int fd = openat(dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && how == LOCK_SH && errno == EACCES)
		fd = openat(dir_fd, "lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger's lock");
	while (flock(fd, how) < 0)
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return error_set_errno(err, e, "lock the ledger");
		}
	return fd;
}

void ledger_map_release(struct ledger_map *m)
{
	if (m->data)
		munmap(m->data, m->size);
	*m = (struct ledger_map){ 0 };
}

int ledger_map_fd(int fd, struct ledger_map *ret, struct error *err)
{
	struct stat st;

	*ret = (struct ledger_map){ 0 };
	if (fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "stat the ledger");
	if (st.st_size == 0)
		return 0;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return error_set_errno(err, errno, "map the ledger");
	ret->data = p;
	ret->size = (size_t)st.st_size;
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "core/store/exedigest.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/text.h"
#include "core/store/statepath.h"

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

#define EXEDIGEST_MAGIC "AIRLEXD1"

_Static_assert(sizeof(EXEDIGEST_MAGIC) - 1 + EXEDIGEST_BOOT_SIZE + sizeof(uint32_t) ==
		       EXEDIGEST_HEADER_SIZE,
	       "the header's fields fill it");
_Static_assert(4 * sizeof(uint64_t) + 2 * sizeof(int64_t) + 2 * sizeof(uint32_t) + SHA256_DIGEST_BYTES ==
		       EXEDIGEST_RECORD_SIZE,
	       "a record's fields fill it");

bool exedigest_fs_cacheable(int64_t f_type)
{
	switch (f_type) {
	case EXT4_SUPER_MAGIC: /* ext2 and ext3 too: one magic */
		return true;
	default:
		return false;
	}
}

/* Field by field, so that no padding reaches the file. */
static uint8_t *exedigest_put(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static const uint8_t *exedigest_get(const uint8_t *p, void *v, size_t n)
{
	memcpy(v, p, n);
	return p + n;
}

size_t exedigest_format(const struct exedigest_table *t, uint8_t *buf)
{
	uint32_t count = (uint32_t)(t->n < EXEDIGEST_MAX_ENTRIES ? t->n : EXEDIGEST_MAX_ENTRIES);
	uint8_t *p = buf;

	p = exedigest_put(p, EXEDIGEST_MAGIC, sizeof(EXEDIGEST_MAGIC) - 1);
	p = exedigest_put(p, t->boot, EXEDIGEST_BOOT_SIZE);
	p = exedigest_put(p, &count, sizeof(count));
	for (uint32_t i = 0; i < count; i++) {
		const struct exedigest_entry *e = &t->entries[i];
		p = exedigest_put(p, &e->key.dev, sizeof(e->key.dev));
		p = exedigest_put(p, &e->key.ino, sizeof(e->key.ino));
		p = exedigest_put(p, &e->key.size, sizeof(e->key.size));
		p = exedigest_put(p, &e->key.mnt_id, sizeof(e->key.mnt_id));
		p = exedigest_put(p, &e->key.mtime_sec, sizeof(e->key.mtime_sec));
		p = exedigest_put(p, &e->key.ctime_sec, sizeof(e->key.ctime_sec));
		p = exedigest_put(p, &e->key.mtime_nsec, sizeof(e->key.mtime_nsec));
		p = exedigest_put(p, &e->key.ctime_nsec, sizeof(e->key.ctime_nsec));
		p = exedigest_put(p, e->sha256, sizeof(e->sha256));
	}
	sha256_raw(buf, (size_t)(p - buf), p);
	return (size_t)(p - buf) + SHA256_DIGEST_BYTES;
}

int exedigest_parse(const void *data, size_t n, struct exedigest_table *ret)
{
	const uint8_t *p = data;
	uint32_t count;
	uint8_t sum[SHA256_DIGEST_BYTES];

	if (n < EXEDIGEST_HEADER_SIZE + SHA256_DIGEST_BYTES || n > EXEDIGEST_FILE_MAX ||
	    memcmp(p, EXEDIGEST_MAGIC, sizeof(EXEDIGEST_MAGIC) - 1) != 0)
		return -EBADMSG;
	p += sizeof(EXEDIGEST_MAGIC) - 1;
	p = exedigest_get(p, ret->boot, EXEDIGEST_BOOT_SIZE);
	p = exedigest_get(p, &count, sizeof(count));
	if (count > EXEDIGEST_MAX_ENTRIES ||
	    n != EXEDIGEST_HEADER_SIZE + (size_t)count * EXEDIGEST_RECORD_SIZE + SHA256_DIGEST_BYTES)
		return -EBADMSG;
	sha256_raw(data, n - SHA256_DIGEST_BYTES, sum);
	if (memcmp(sum, (const uint8_t *)data + n - SHA256_DIGEST_BYTES, sizeof(sum)) != 0)
		return -EBADMSG;
	ret->n = count;
	for (uint32_t i = 0; i < count; i++) {
		struct exedigest_entry *e = &ret->entries[i];
		p = exedigest_get(p, &e->key.dev, sizeof(e->key.dev));
		p = exedigest_get(p, &e->key.ino, sizeof(e->key.ino));
		p = exedigest_get(p, &e->key.size, sizeof(e->key.size));
		p = exedigest_get(p, &e->key.mnt_id, sizeof(e->key.mnt_id));
		p = exedigest_get(p, &e->key.mtime_sec, sizeof(e->key.mtime_sec));
		p = exedigest_get(p, &e->key.ctime_sec, sizeof(e->key.ctime_sec));
		p = exedigest_get(p, &e->key.mtime_nsec, sizeof(e->key.mtime_nsec));
		p = exedigest_get(p, &e->key.ctime_nsec, sizeof(e->key.ctime_nsec));
		p = exedigest_get(p, e->sha256, sizeof(e->sha256));
	}
	return 0;
}

static bool exedigest_key_equal(const struct exedigest_key *a, const struct exedigest_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mnt_id == b->mnt_id &&
	       a->mtime_sec == b->mtime_sec && a->ctime_sec == b->ctime_sec &&
	       a->mtime_nsec == b->mtime_nsec && a->ctime_nsec == b->ctime_nsec;
}

const struct exedigest_entry *exedigest_find(const struct exedigest_table *t,
					     const struct exedigest_key *key)
{
	for (size_t i = 0; i < t->n && i < EXEDIGEST_MAX_ENTRIES; i++)
		if (exedigest_key_equal(&t->entries[i].key, key))
			return &t->entries[i];
	return NULL;
}

void exedigest_insert(struct exedigest_table *t, const struct exedigest_entry *e)
{
	size_t n = 0;

	/* Keep the others in order, the same file's older entries left out;
	 * the new one goes first, so the oldest falls off the end. */
	for (size_t i = 0; i < t->n && i < EXEDIGEST_MAX_ENTRIES; i++) {
		const struct exedigest_key *k = &t->entries[i].key;
		if (k->dev != e->key.dev || k->ino != e->key.ino || k->mnt_id != e->key.mnt_id)
			t->entries[n++] = t->entries[i];
	}
	if (n == EXEDIGEST_MAX_ENTRIES)
		n--;
	memmove(&t->entries[1], &t->entries[0], n * sizeof(t->entries[0]));
	t->entries[0] = *e;
	t->n = n + 1;
}

/* fd's key (and its statx in ret_stx, when not NULL), or -EOPNOTSUPP where
 * statx cannot give all of it: a kernel without unique mount ids (before
 * 6.8). The file system's allowlist is the caller's check
 * (exedigest_fs_cacheable()). */
static int exedigest_key_of(int fd, struct exedigest_key *ret, struct statx *ret_stx)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID_UNIQUE, &stx) < 0)
		return -errno;
	if ((stx.stx_mask & (STATX_MNT_ID_UNIQUE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME)) !=
	    (STATX_MNT_ID_UNIQUE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME))
		return -EOPNOTSUPP;
	*ret = (struct exedigest_key){
		.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor),
		.ino = stx.stx_ino,
		.size = stx.stx_size,
		.mnt_id = stx.stx_mnt_id,
		.mtime_sec = stx.stx_mtime.tv_sec,
		.ctime_sec = stx.stx_ctime.tv_sec,
		.mtime_nsec = stx.stx_mtime.tv_nsec,
		.ctime_nsec = stx.stx_ctime.tv_nsec,
	};
	if (ret_stx)
		*ret_stx = stx;
	return 0;
}

/* The cache's table as this boot wrote it; an empty one (a miss for every
 * key) for a file that is missing, not a regular file of the user's (a
 * symlink is not followed, a FIFO not opened for long: O_NONBLOCK), over
 * the size cap, torn, garbled, or of another boot. */
static void exedigest_load(int dir_fd, const char boot[EXEDIGEST_BOOT_SIZE], struct exedigest_table *ret)
{
	uint8_t buf[EXEDIGEST_FILE_MAX + 1];
	struct stat sb;

	ret->n = 0;
	memcpy(ret->boot, boot, EXEDIGEST_BOOT_SIZE);
	cleanup_close int fd =
		fd_open_beneath(dir_fd, STATEPATH_EXE_DIGESTS, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
	    sb.st_size > EXEDIGEST_FILE_MAX)
		return;
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	if (n < 0 || exedigest_parse(buf, (size_t)n, ret) < 0 ||
	    memcmp(ret->boot, boot, EXEDIGEST_BOOT_SIZE) != 0) {
		ret->n = 0;
		memcpy(ret->boot, boot, EXEDIGEST_BOOT_SIZE);
	}
}

/* Replaces the cache file by a temporary file and a rename: concurrent runs
 * each write a whole file and the last rename wins (an entry lost is a
 * miss). Not synced: after a crash the file is torn or old, and either is
 * read as a miss or as entries that still hold (exedigest_load()). */
static void exedigest_save(int dir_fd, const struct exedigest_table *t)
{
	uint8_t buf[EXEDIGEST_FILE_MAX];
	char tmp[64];
	size_t n = exedigest_format(t, buf);

	if (mkdirat(dir_fd, STATEPATH_CACHE, 0700) < 0 && errno != EEXIST)
		return;
	cleanup_close int cache_fd = fd_open_beneath(dir_fd, STATEPATH_CACHE, O_RDONLY | O_DIRECTORY);
	if (cache_fd < 0)
		return;
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", STATEPATH_EXE_DIGESTS_NAME, (long)getpid());
	/* A temporary of a killed process with this pid is replaced. */
	(void)unlinkat(cache_fd, tmp, 0);
	cleanup_close int fd =
		openat(cache_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (fd_write_all(fd, buf, n) < 0 ||
	    renameat(cache_fd, tmp, cache_fd, STATEPATH_EXE_DIGESTS_NAME) < 0)
		(void)unlinkat(cache_fd, tmp, 0);
}

/* Writes back fd's dirty pages and waits: a page written through a shared
 * mapping is then write-protected, and its next write moves the file's
 * times. On 64-bit through syscall(): glibc's sync_file_range() would add
 * a symbol version (GLIBC_2.6) whose check every run pays at its start
 * (BIND_NOW), ~10 K instructions for `run -- true`, which never comes here. */
static int exedigest_clean_pages(int fd)
{
	const unsigned flags =
		SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
#if defined(__LP64__) && defined(SYS_sync_file_range)
	return syscall(SYS_sync_file_range, fd, (off_t)0, (off_t)0, flags) < 0 ? -errno : 0;
#else
	return sync_file_range(fd, 0, 0, flags) < 0 ? -errno : 0;
#endif
}

/* Whether no one can be writing to fd's file now: a write's bytes may land
 * long after it moved the times (a kernel moves them first, then copies from
 * a source that may fault on, say, a FUSE server's mapping), so a file with
 * a writer is not stored, however old its times. A read lease is refused
 * while any descriptor or mapping has the file open for writing (EAGAIN); it
 * is dropped at once, and a break of it in between signals SIGURG (ignored
 * by default) instead of SIGIO, which would kill. The lease is its owner's
 * (or CAP_LEASE's): a file of another owner that neither its group nor others
 * may write can be written by that owner and root only, never by the agent
 * (a user's, not root). Anything else, leases disabled included, says no. */
static bool exedigest_no_writer(int fd, const struct statx *stx)
{
	if (fcntl(fd, F_SETSIG, SIGURG) < 0)
		return false;
	if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
		(void)fcntl(fd, F_SETLEASE, F_UNLCK);
		return true;
	}
	return errno == EACCES && stx->stx_uid != geteuid() &&
	       (stx->stx_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* cachestat(2) (Linux 6.5; the headers of Debian 12 predate it). */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct exedigest_cachestat_range {
	uint64_t off, len;
};
struct exedigest_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Whether no write through a shared mapping of fd can have gone unseen by
 * the key: a page dirtied through one moves the times at its first write
 * only, and stays writable until written back. A file whose pages are all
 * clean (none dirty, none under writeback: cachestat(2), which answers
 * for a file the caller may write) has none; one with dirty pages is not
 * stored, rather than waiting for its writeback (a program just built may
 * hold hundreds of MiB not yet written; it is stored at a run after the
 * kernel has written it). Where cachestat does not answer (a file the
 * caller may not write, which the agent cannot have mapped for writing
 * either; an older kernel), the pages are cleaned and waited for: such a
 * file has dirty pages only when another user is writing it. */
static bool exedigest_pages_settled(int fd)
{
	struct exedigest_cachestat_range range = { 0, 0 }; /* the whole file */
	struct exedigest_cachestat cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0) == 0)
		return cs.nr_dirty == 0 && cs.nr_writeback == 0;
	return exedigest_clean_pages(fd) == 0;
}

int exedigest_sha256_fd(int dir_fd, int fd, char hex[SHA256_HEX_SIZE])
{
	struct exedigest_key key, after;
	struct statx stx;
	struct statfs sfs;
	char boot[40];
	struct exedigest_table table;

	clock_boot_id(boot);
	if (dir_fd < 0 || strlen(boot) < EXEDIGEST_BOOT_SIZE || exedigest_key_of(fd, &key, &stx) < 0 ||
	    fstatfs(fd, &sfs) < 0 || !exedigest_fs_cacheable((int64_t)sfs.f_type))
		return sha256_fd_hex(fd, hex);
	exedigest_load(dir_fd, boot, &table);
	const struct exedigest_entry *hit = exedigest_find(&table, &key);
	if (hit) {
		hex_encode(hit->sha256, SHA256_DIGEST_BYTES, hex);
		return 0;
	}

	/* A miss: stored only if no write can have gone unseen by the key. */
	uint64_t start = clock_realtime_ns();
	uint64_t mtime = (uint64_t)key.mtime_sec * 1000000000ULL + key.mtime_nsec;
	uint64_t ctime = (uint64_t)key.ctime_sec * 1000000000ULL + key.ctime_nsec;
	bool settled = key.mtime_sec >= 0 && key.ctime_sec >= 0 && start > EXEDIGEST_SETTLE_NS &&
		       mtime < start - EXEDIGEST_SETTLE_NS && ctime < start - EXEDIGEST_SETTLE_NS &&
		       /* No writer: a write under way lands after its times. */
		       exedigest_no_writer(fd, &stx) &&
		       /* Clean pages: a later write through a mapping moves ctime. */
		       exedigest_pages_settled(fd);
	int r = sha256_fd_hex(fd, hex);
	if (r < 0 || !settled || exedigest_key_of(fd, &after, NULL) < 0 ||
	    !exedigest_key_equal(&key, &after))
		return r;
	struct exedigest_entry e = { .key = key };
	if (!hex_decode(hex, e.sha256, sizeof(e.sha256)))
		return 0;
	exedigest_insert(&table, &e);
	exedigest_save(dir_fd, &table);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/sha256.h"

/* The digests of large executables a run started, kept in the state
 * directory (cache/exe-digests, docs/state-dir.md) so that a run of the
 * same unchanged file takes its SHA-256 from there instead of reading it
 * again (docs/receipt-format.md, exec_identity). A miss only costs the hash.
 *
 * Sound because the key is what the kernel changes with any change of the
 * bytes: the file's device, inode, size, mtime and ctime (ns), and the
 * unique id of the mount it was opened through (STATX_MNT_ID_UNIQUE, never
 * reused: an image unmounted and another mounted on the same device does
 * not meet the old entries); the file holds entries of the boot that wrote
 * it only (after a crash a file may hold new bytes under its old ctime).
 * Userspace cannot set a ctime, and a write through a shared mapping moves
 * it only at a clean page's first write, so an entry is made only while
 * no one has the file open for writing (a write moves the times before its
 * bytes land, which may be seconds later) and for a file with no dirty page
 * and none under writeback (cachestat(2); where that is refused, for a
 * file the caller may not write, after sync_file_range() cleaned its
 * pages); only on file systems whose
 * timestamps the local kernel keeps that way (exedigest_fs_cacheable());
 * only for a file whose mtime and ctime are older than the hash's start
 * minus EXEDIGEST_SETTLE_NS (coarse timestamps: a write in the same tick
 * as the last one leaves them as they were) and whose key was the same
 * after the hash as before it. */

/* Smaller files are hashed every time, with no look-up (docs/bench22/exehash.md). */
#define EXEDIGEST_MIN_SIZE    (256 * 1024)
#define EXEDIGEST_MAX_ENTRIES 64
#define EXEDIGEST_SETTLE_NS   (2ULL * 1000000000ULL)
#define EXEDIGEST_BOOT_SIZE   36 /* /proc/sys/kernel/random/boot_id without its newline */

struct exedigest_key {
	uint64_t dev, ino, size, mnt_id;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
};

struct exedigest_entry {
	struct exedigest_key key;
	uint8_t sha256[SHA256_DIGEST_BYTES];
};

/* The file's contents: newest entry first. */
struct exedigest_table {
	char boot[EXEDIGEST_BOOT_SIZE];
	size_t n;
	struct exedigest_entry entries[EXEDIGEST_MAX_ENTRIES];
};

/* The file's layout (native byte order: the file never leaves the host):
 * "AIRLEXD1", the boot id (36 bytes), the entry count (u32), that many
 * records of EXEDIGEST_RECORD_SIZE, the SHA-256 of every byte before it. */
#define EXEDIGEST_HEADER_SIZE 48
#define EXEDIGEST_RECORD_SIZE 88
#define EXEDIGEST_FILE_MAX \
	(EXEDIGEST_HEADER_SIZE + EXEDIGEST_MAX_ENTRIES * EXEDIGEST_RECORD_SIZE + SHA256_DIGEST_BYTES)

/* Whether a file system of this statfs f_type keeps timestamps as the key
 * needs: one the local kernel maintains on a local device, and whose rules
 * were tried here: ext2/3/4. Not FUSE, NFS, 9p, CIFS, overlay, ... (their
 * server or lower layer reports what times it likes), nor tmpfs (a write
 * through a shared mapping never moves its times), nor btrfs (a snapshot
 * keeps inode and times, and a deleted subvolume's device number comes back:
 * a new snapshot of other bytes may meet an old one's key) or xfs (not tried
 * here: its exchange-range and reflink calls not checked against the key). */
bool exedigest_fs_cacheable(int64_t f_type);

/* 0 and the table, or -EBADMSG for anything that is not a whole file in
 * the format above (torn, too long, a wrong checksum, a count past
 * EXEDIGEST_MAX_ENTRIES). */
int exedigest_parse(const void *data, size_t n, struct exedigest_table *ret);
/* The bytes of t into buf (at least EXEDIGEST_FILE_MAX); returns their length. */
size_t exedigest_format(const struct exedigest_table *t, uint8_t *buf);
/* Puts e first, dropping any older entry of the same file (device, inode,
 * mount) and the oldest past EXEDIGEST_MAX_ENTRIES. */
void exedigest_insert(struct exedigest_table *t, const struct exedigest_entry *e);
/* The entry whose key equals key, or NULL. */
const struct exedigest_entry *exedigest_find(const struct exedigest_table *t,
					     const struct exedigest_key *key);

/* The SHA-256 of the bytes of the regular file fd (read from its start) as
 * lowercase hex: from the cache below the state directory dir_fd when it
 * holds fd's key, else read and hashed, and the entry stored when that is
 * sound (above). 0, or -errno when fd cannot be read. The cache's own
 * failures are misses. Only for files of at least EXEDIGEST_MIN_SIZE: the
 * caller hashes smaller ones itself (no system call more). */
int exedigest_sha256_fd(int dir_fd, int fd, char hex[SHA256_HEX_SIZE]);

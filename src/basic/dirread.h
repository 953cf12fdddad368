/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A directory's names read with getdents64() into a buffer of the
 * caller's (on its stack, sized for the directories it reads) instead of
 * fdopendir()'s: no fstat(), fcntl()s, dup of the descriptor or 32 KiB
 * buffer per directory. Names come in the kernel's order, "." and ".."
 * skipped. The descriptor is read from its offset on and stays the
 * caller's. Makes glibc's getdents64(), not a raw syscall(): not for a
 * child between clone() and execve(). */
struct dirread {
	int fd;
	char *buf;
	size_t size, got, off;
};

struct dirread_entry {
	const char *name; /* in the caller's buffer: valid until the next dirread_next() */
	size_t len;
	unsigned char type; /* d_type; DT_UNKNOWN where the file system does not tell */
};

/* The least buffer that holds one entry of any name (NAME_MAX bytes); a
 * smaller one fails the first read with EINVAL. */
#define DIRREAD_BUF_MIN 512

/* buf: size bytes, any alignment; kept by the caller while d is read. */
void dirread_init(struct dirread *d, int fd, void *buf, size_t size);
/* 1 with *ret: the next name; 0: the end; a negative errno: the read
 * failed, and the names so far are not the whole listing. */
int dirread_next(struct dirread *d, struct dirread_entry *ret);

/* Whether a listing of the directory open at fd holds exactly the names a
 * lookup in it finds, so that a name it lacks may be taken as absent: ext2-4,
 * tmpfs or btrfs (names compared byte for byte), the directory neither
 * case-folded (ext4's and tmpfs's casefold: a lookup of ".aws" finds ".AWS")
 * nor encrypted (read without its key), by FS_IOC_GETFLAGS. Not overlayfs:
 * its listing is its layers' (a FUSE or NFS layer's may lack what a lookup
 * finds) and a copy it keeps while the directory is open, which misses a
 * name made in a layer beneath it. Nor procfs (threads found, not listed),
 * autofs (lookups make names) or xfs (ascii-ci cannot be seen). */
bool dirread_exact(int fd);

/* SPDX-License-Identifier: MIT */
#pragma once

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

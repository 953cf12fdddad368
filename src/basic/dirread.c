/* SPDX-License-Identifier: MIT */
#include "basic/dirread.h"

#include <dirent.h>
#include <errno.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/types.h>

/* The kernel's struct linux_dirent64 (glibc's struct dirent64): read by
 * field with memcpy(), as the caller's buffer need not be aligned. */
#define DIRREAD_RECLEN offsetof(struct dirent64, d_reclen)
#define DIRREAD_TYPE   offsetof(struct dirent64, d_type)
#define DIRREAD_NAME   offsetof(struct dirent64, d_name)

void dirread_init(struct dirread *d, int fd, void *buf, size_t size)
{
	*d = (struct dirread){ .fd = fd, .buf = buf, .size = size };
}

int dirread_next(struct dirread *d, struct dirread_entry *ret)
{
	for (;;) {
		if (d->off >= d->got) {
			ssize_t got = getdents64(d->fd, d->buf, d->size);
			d->got = 0;
			d->off = 0;
			if (got < 0)
				return -errno;
			if (got == 0)
				return 0;
			d->got = (size_t)got;
		}
		const char *rec = d->buf + d->off;
		unsigned short reclen;
		memcpy(&reclen, rec + DIRREAD_RECLEN, sizeof(reclen));
		/* Not what the kernel writes: never read past the buffer. */
		if (reclen <= DIRREAD_NAME || reclen > d->got - d->off) {
			d->got = d->off = 0;
			return -EIO;
		}
		d->off += reclen;
		const char *name = rec + DIRREAD_NAME;
		size_t len = strnlen(name, reclen - DIRREAD_NAME);
		if (len == reclen - DIRREAD_NAME) {
			d->got = d->off = 0;
			return -EIO;
		}
		if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
			continue;
		*ret = (struct dirread_entry){ .name = name,
					       .len = len,
					       .type = (unsigned char)rec[DIRREAD_TYPE] };
		return 1;
	}
}

bool dirread_exact(int fd)
{
	struct statfs sf;
	int flags = 0;

	if (fstatfs(fd, &sf) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC: /* ext2 and ext3 too */
	case TMPFS_MAGIC:
	case BTRFS_SUPER_MAGIC:
		break;
	default:
		return false;
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return false;
	return !(flags & (FS_CASEFOLD_FL | FS_ENCRYPT_FL));
}

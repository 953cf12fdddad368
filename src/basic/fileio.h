/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"

/* Writes all of buf, retrying on EINTR and short writes; 0 or -errno. */
int fd_write_all(int fd, const void *buf, size_t n);

/* Reads a whole file of at most max_bytes into a NUL-terminated heap buffer.
 * A larger file fails with -EFBIG. dir_fd may be AT_FDCWD. */
int file_read_capped(int dir_fd, const char *path, size_t max_bytes, char **ret_data,
		     size_t *ret_size, struct error *err);

/* Reads all of fd (at most max_bytes, else -EFBIG). */
int fd_read_capped(int fd, size_t max_bytes, char **ret_data, size_t *ret_size, struct error *err);

/* fd_read_capped_until()'s deadline for none: each read blocks. */
#define FD_NO_DEADLINE UINT64_MAX

/* fd_read_capped() that ends at deadline_ns (CLOCK_MONOTONIC, as
 * clock_monotonic_ns()) with -ETIMEDOUT if fd has not reached its end by
 * then; a deadline already past fails at once. With a deadline fd is
 * polled before each read, so a read never waits: fd is a pipe or socket
 * no one else reads (a regular file is always readable). */
int fd_read_capped_until(int fd, size_t max_bytes, uint64_t deadline_ns, char **ret_data,
			 size_t *ret_size, struct error *err);

/* Waits until fd is readable, at its end or in error (poll(2) POLLIN or
 * more; a pidfd: its process exited), by deadline_ns (CLOCK_MONOTONIC),
 * through signals: 0, -ETIMEDOUT past it (a deadline already past: at
 * once), or the poll's -errno. */
int fd_wait_readable_until(int fd, uint64_t deadline_ns);

/* Writes data to dir_fd/name atomically and durably: a temporary file in the
 * same directory, fsync (when durable), then renameat2(RENAME_NOREPLACE) so an
 * existing file is never replaced (-EEXIST), then fsync of the directory. */
int file_write_atomic(int dir_fd, const char *name, const void *data, size_t n, mode_t mode,
		      bool durable, struct error *err);

/* mkdir -p with the given mode for each created component. */
int mkdir_parents(const char *path, mode_t mode);

/* rm -rf of dir_fd/name, making directories writable on the way (an
 * overlay's work directory is mode 000); never follows a symlink. Returns 0,
 * or the first error (-errno) while it goes on removing what it can. */
int remove_tree_at(int dir_fd, const char *name);

/* openat2() of path below dir_fd with RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS
 * and RESOLVE_NO_MAGICLINKS: no symlink is followed anywhere on the way and
 * nothing outside dir_fd is reached. O_CLOEXEC is added. Returns the fd or
 * -errno. */
int fd_open_beneath(int dir_fd, const char *path, int flags);

/* The directory holding path (relative to dir_fd), opened as
 * fd_open_beneath() does with flags | O_DIRECTORY, and in *ret_name path's
 * last component. */
int fd_open_parent(int dir_fd, const char *path, int flags, const char **ret_name);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "basic/sha256.h"

/* Paths below a directory descriptor, resolved without symlinks
 * (basic/fileio.h), for apply: stat, hash, move, the owner's write bit lifted
 * for one call. Nothing here knows a change set. */

/* The owner's write bit, lifted for one call that needs it where the owner
 * lacks it (setting a user.* attribute; renaming a directory to another
 * parent, which rewrites its `..`), and put back after. The operation that
 * may lift records the mode in the journal (its "mode"), so that an undo
 * after a crash between the two puts it back (applyfs_lift_repair()). */
struct applyfs_lift {
	int target; /* O_PATH, the object itself */
	mode_t mode; /* its mode before the lift */
	bool lifted;
};

mode_t applyfs_parse_mode(const char *s);
int applyfs_stat_at(int dir_fd, const char *path, struct stat *st);
int applyfs_hash_at(int dir_fd, const char *path, char hex[SHA256_HEX_SIZE]);
int applyfs_readlink_at(int dir_fd, const char *path, char *buf, size_t size);
/* rename(2) between two trees, each side resolved without symlinks. */
int applyfs_move_at(int from_fd, const char *from, int to_fd, const char *to, unsigned flags);
/* Sets the mode of the object open as target (O_PATH: chmod through
 * /proc, never a symlink's target). */
int applyfs_mode_set_fd(int target, mode_t mode);
/* Lifts when the owner lacks write access: after the call failed with
 * EACCES. Returns 1 when lifted (the call is worth retrying), 0 when not. */
int applyfs_lift_on(struct applyfs_lift *l);
int applyfs_lift_off(struct applyfs_lift *l);
/* Where a crash left the object at dir_fd/path lifted (its mode the
 * recorded one plus the owner's write bit), the recorded mode back.
 * recorded NULL: the operation recorded none, nothing to do. */
int applyfs_lift_repair(int dir_fd, const char *path, const mode_t *recorded);
/* applyfs_move_at(), and where it fails for want of write access to a directory
 * being moved to another parent (its `..`), again with the owner's write
 * bit lifted on it for the call. */
int applyfs_move_lifted(int from_fd, const char *from, int to_fd, const char *to, unsigned flags);
long applyfs_count_entries_at(int dir_fd, const char *path);
void applyfs_strip_overlay_xattrs(int dir_fd, const char *name, int depth);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "core/dryrun_verdict.h"

/* The change set of a dry run (docs/dryrun.md), read from the overlay's upper
 * directory after the snapshot is gone, against the real workspace (the
 * lower). Overlay conventions (userxattr, redirect_dir and metacopy off):
 * a character device 0:0 is a whiteout (deleted), a directory with
 * user.overlay.opaque="y" replaced the lower one, any other upper entry was
 * created or copied up; a copied-up file whose content, type and mode equal
 * the lower's is no change at all (an open for writing that wrote nothing). */

#define CHANGESET_SCHEMA "airlock.changeset/4"

/* How deep below the workspace the change set is read (and apply strips
 * the overlay's attributes): each level costs a stack frame (the walk
 * recurses; 1,024 levels fit the default 8 MiB stack even with ASan's
 * larger frames, 4,096 did not) and three
 * descriptors (the soft RLIMIT_NOFILE is raised to the hard one, see
 * dryrun_settle()). A deeper tree fails the dry run's finish: the receipt
 * says DRY_RUN_FAILED and why (docs/dryrun.md). */
#define CHANGESET_MAX_DEPTH 1024

/* Each change is a JSON object:
 *   path      relative to the workspace
 *   change    created | modified | deleted | type_changed | mode_changed |
 *             xattrs_changed | renamed
 *   type      file | dir | symlink | fifo | socket | other
 *   size, sha256            the new regular file (created, modified, renamed)
 *   old_size, old_sha256    the old one (modified, deleted files)
 *   mode, old_mode          octal strings (mode_changed, and created)
 *   xattrs, old_xattrs      mode_changed, xattrs_changed: when the carried
 *                           extended attributes differ, both whole lists
 *                           [{name, base64}] sorted by name (name kept as
 *                           bytes like path: name_b64 when not UTF-8);
 *                           created, type_changed, modified: the carried
 *                           attributes the object moves in with, `xattrs`
 *                           alone, when it has any (apply checks them)
 *   from                    renamed: the old path
 *   target, old_target      symlinks
 *   entries                 a deleted directory: how many entries it held
 *   path_b64, target_b64, old_target_b64
 *                           when the name or target is not UTF-8: its exact
 *                           bytes (the plain key shows it with U+FFFD)
 *   hard_link               true on a `modified` file whose bytes are the
 *                           same: it now shares its inode with another name
 *                           (a new hard link), which apply carries
 *   link_split, link_to     a name of a hard-link group of the workspace
 *                           (core/linkgroups.h, set after this walk): true
 *                           when the name was replaced and leaves the group;
 *                           the name it is linked to in the upper when
 *                           another name was changed in place
 *   refused                 setuid | setgid | capability | device: the new object is
 *                           one apply never installs (changeset_privilege);
 *                           its mode is given too
 * sorted by path (bytes). The path "." is the workspace root itself: only
 * mode_changed or xattrs_changed (root_mode: its mode as the command left
 * it, recorded before the upper's root was made readable for airlock; 0:
 * the upper root's own). A rename is a deleted and a created entry: the
 * overlay keeps no trustworthy link between the two (no redirect, no origin
 * in a user namespace), and content is no evidence (equal files, empty
 * files), so nothing is paired; the created entry carries its own mode and
 * content. `renamed` is still read by apply from older change sets. */
int changeset_compute(const char *upper, const char *workspace, mode_t root_mode,
		      json_t **ret_changes, struct error *err);

/* Which extended attributes the change set compares and apply carries:
 * user.* but the overlay's own user.overlay.*, and, since version 3 of the
 * change set, the POSIX ACLs (system.posix_acl_access, _default), whose
 * entries name ids as the host sees them: read and set outside the
 * quarantine, they mean what the real run's would. Never trusted.* or
 * security.* (the host's; a file capability is refused,
 * changeset_privilege). A change set of version 1 or 2 lists no ACLs:
 * apply must leave them alone (CHANGESET_XATTRS_USER). */
enum changeset_xattrs {
	CHANGESET_XATTRS_ALL,  /* CHANGESET_SCHEMA's */
	CHANGESET_XATTRS_USER, /* versions 1 and 2: user.* only */
};

/* The attributes a change set of that schema carries (NULL or one before
 * version 3: CHANGESET_XATTRS_USER). */
enum changeset_xattrs changeset_xattrs_of(const char *schema);
bool changeset_xattr_carried(const char *name, enum changeset_xattrs which);
/* Whether name is a POSIX ACL: setting one also sets the mode's permission
 * bits (and may take the owner's write access), so it is set last. */
bool changeset_xattr_is_acl(const char *name);
/* The carried attributes of dir_fd/name (never following a symlink),
 * sorted by name: [{name (bytes, unchecked), base64}]. */
int changeset_read_xattrs(int dir_fd, const char *name, enum changeset_xattrs which, json_t **ret);

/* Names and link targets are bytes, JSON strings are UTF-8. Sets obj's key
 * to bytes when they are UTF-8; otherwise key holds them with U+FFFD (to
 * show) and key_b64 their exact bytes in base64, as receipts' argv_b64. */
int changeset_set_bytes(json_t *obj, const char *key, const char *bytes);
/* A copy of obj with every string value stored by changeset_set_bytes(). */
json_t *changeset_encode_bytes(json_t *obj);
/* In place: each key_b64 replaces key with the exact bytes (a string jansson
 * did not check, for system calls; never dumped as is) and is removed.
 * -EINVAL when one is not base64, empty, or holds a NUL. */
int changeset_decode_bytes(json_t *obj);

/* Why apply must never install the object dir_fd/name, whose lstat() is st:
 * "device" (a character or block device that is not a whiteout),
 * "setuid", "setgid" (not a directory's: that one the kernel gives a new
 * directory in a set-group-ID one, and it runs nothing), "capability" (a
 * security.capability attribute); NULL when there is no such reason. */
const char *changeset_privilege(int dir_fd, const char *name, const struct stat *st);

/* How many entries the directory dir_fd/name holds, counted recursively,
 * never following a symlink; -1 when it cannot be read as a directory, or
 * one below it is deeper than CHANGESET_MAX_DEPTH. */
long changeset_count_entries(int dir_fd, const char *name);

/* A `**` component matches any number of path components (including none);
 * `*`, `?` and `[a-z]` match within one component; a pattern matches a path
 * or any path below it ("build" covers "build/x.o"). At most
 * CHANGESET_MAX_DEPTH + 2 components each; not thread-safe (static scratch
 * space). */
bool changeset_path_matches(const char *pattern, const char *path);

/* The verdict of a dry run, in this order of precedence:
 *   DRY_RUN_FAILED         the command did not succeed
 *   NO_EFFECT              nothing changed
 *   PRIVILEGED_FILE        a change is `refused` (set-id or capability),
 *                          declared or not
 *   UNEXPECTED_PATH        a change no pattern declares; deletions (and the
 *                          source of a rename) need a --expect-delete pattern
 *   EXPECTED_PATH_MISSING  a declared pattern that no change matched
 *   DRY_RUN_OK
 * ret_problems lists the refused changes ({refused, change, reason}), or the
 * unexpected paths, then the missing patterns. */
enum dryrun_verdict changeset_verdict(json_t *changes, bool succeeded, char *const *expect,
				     char *const *expect_delete, json_t **ret_problems);

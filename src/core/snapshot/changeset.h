/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "core/snapshot/dryrun_verdict.h"

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
 *             owner_changed | xattrs_changed | renamed
 *   type      file | dir | symlink | fifo | socket | other
 *   size, sha256            the new regular file (every change but a
 *                           deletion; unchanged content for mode_changed
 *                           and xattrs_changed)
 *   old_size, old_sha256    the old one (modified, deleted files)
 *   mode, old_mode          octal strings: mode on every change but a
 *                           deletion (the object's whole identity, see
 *                           below); old_mode on mode_changed, and on a
 *                           modified or type_changed entry whose old object
 *                           had another mode
 *   xattrs, old_xattrs      [{name, base64}] sorted by name (name kept as
 *                           bytes like path: name_b64 when not UTF-8):
 *                           xattrs, the whole list of carried attributes,
 *                           on every change but a deletion, [] when none;
 *                           old_xattrs the old whole list when it differs
 *                           (xattrs_changed, mode_changed)
 *   from                    renamed: the old path
 *   target, old_target      symlinks
 *   entries                 a deleted directory: how many entries it held
 *   path_b64, target_b64, old_target_b64
 *                           when the name or target is not UTF-8: its exact
 *                           bytes (the plain key shows it with U+FFFD)
 *   hard_link               true on a `modified` file whose bytes are the
 *                           same: it now shares its inode with another name
 *                           (a new hard link), which apply carries
 *   uid, gid                owners carried (a dry run as root, `owners`):
 *                           created, type_changed, modified: the object's;
 *                           mode_changed, owner_changed, xattrs_changed:
 *                           with old_uid, old_gid, when the owner changed
 *                           (owner_changed when nothing else did)
 *   link_split, link_to     a name of a hard-link group of the workspace
 *                           (core/snapshot/linkgroups.h, set after this walk): true
 *                           when the name was replaced and leaves the group;
 *                           the name it is linked to in the upper when
 *                           another name was changed in place
 *   also_names, also_outside
 *                           a mode_changed or xattrs_changed name of such a
 *                           group (set by linkgroups too): the other names
 *                           the group keeps, [{path}] stored like path, and
 *                           how many lie outside the workspace; apply's
 *                           in-place change reaches them (one inode), it
 *                           checks them and does nothing under them
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
 * content. `renamed` is still read by apply from older change sets.
 *
 * The identity (version 4): every entry but a deletion carries type, mode,
 * xattrs, and a file's size and sha256 or a symlink's target: all that
 * apply checks its staged object against before the first operation.
 * owners: every id was mapped (docs/dryrun.md, "Root"): the upper's owners
 * are the host's, compared and carried; otherwise never. */
int changeset_compute(const char *upper, const char *workspace, mode_t root_mode, bool owners,
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
	CHANGESET_XATTRS_ALL, /* CHANGESET_SCHEMA's */
	CHANGESET_XATTRS_USER, /* versions 1 and 2: user.* only */
};

/* Whether apply knows that schema: versions 1 to 4, or none (the oldest,
 * version 1, wrote no schema); a change set of any other is refused. */
bool changeset_schema_known(const char *schema);

/* Whether a change set of that schema (NULL: the oldest) gives every entry
 * but a deletion the object's whole identity (version 4: mode, xattrs, size
 * and sha256 or target); before, a modified or type_changed entry had no
 * mode and an object without attributes no `xattrs`. */
bool changeset_carries_identity(const char *schema);

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

/* The change set's name of an object's type: file, dir, symlink, fifo,
 * socket or other. */
const char *changeset_type_name(mode_t mode);

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

/* SPDX-License-Identifier: MIT */
#include "core/snapshot/applycheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/applyfs.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

/* Whether dir_fd/path carries exactly the attributes want. */
static bool applycheck_xattrs_match(int dir_fd, const char *path, enum changeset_xattrs which,
				    const struct changeset_xattr_list *want)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);
	cleanup_with(json_decrefp) json_t *have = NULL;

	return fd >= 0 && changeset_read_xattrs(fd, name, which, &have) == 0 &&
	       changeset_xattr_list_equal(want, have);
}

/* The value of the attribute named name in list, NULL when it has none. */
static const char *applycheck_xattrs_value(json_t *list, const char *name)
{
	size_t i;
	json_t *x;

	json_array_foreach(list, i, x)
		if (!strcmp(jsonutil_str(x, "name"), name))
			return jsonutil_str(x, "base64");
	return NULL;
}

/* The value (base64) of name in want, or NULL. */
static const char *applycheck_list_value(const struct changeset_xattr_list *want, const char *name)
{
	for (size_t i = 0; i < want->n; i++)
		if (!strcmp(want->items[i].name.bytes, name))
			return want->items[i].base64;
	return NULL;
}

int applycheck_xattrs_set_at(struct dryrun_dir *d, const char *path,
			     const struct changeset_xattr_list *want)
{
	cleanup_close int target = applycheck_open_in_place(d, path);
	cleanup_with(json_decrefp) json_t *have = NULL;
	char proc[64];
	size_t i, n;
	json_t *x;

	if (target < 0)
		return target;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", target);
	int r = changeset_read_xattrs(target, "", d->xattrs, &have);
	if (r < 0)
		return r;
	struct applyfs_lift l = { .target = target };
	json_array_foreach(have, i, x) {
		const char *xname = jsonutil_str(x, "name");
		if (applycheck_list_value(want, xname))
			continue;
		while ((r = removexattr(proc, xname) < 0 ? -errno : 0) == -EACCES &&
		       applyfs_lift_on(&l) == 1)
			;
		if (r < 0 && r != -ENODATA)
			break;
		r = 0;
	}
	for (int acls = 0; r == 0 && acls < 2; acls++) {
		if (acls == 1 && (r = applyfs_lift_off(&l)) < 0)
			break;
		for (i = 0; i < want->n; i++) {
			const char *xname = want->items[i].name.bytes, *b64 = want->items[i].base64,
				   *had = applycheck_xattrs_value(have, xname);
			if (changeset_xattr_is_acl(xname) != (acls == 1) || (had && !strcmp(had, b64)))
				continue;
			cleanup_free char *value = base64_decode(b64, &n);
			if (!value) {
				r = -EINVAL;
				break;
			}
			while ((r = setxattr(proc, xname, value, n, 0) < 0 ? -errno : 0) == -EACCES &&
			       applyfs_lift_on(&l) == 1)
				;
			if (r < 0)
				break;
		}
	}
	int q = applyfs_lift_off(&l);
	return r < 0 ? r : q;
}

/* A name that joins the object a name of its hard-link group got in place
 * (`link_to`, core/snapshot/linkgroups.h): before the apply both names must still
 * be one inode, as at the dry run (else the group changed since); after it,
 * too (both hold the object the apply moved in). root_fd is the workspace
 * or the dry run's directory (prefix STATEPATH_UPPER "/" for the staged side). */
static bool applycheck_link_group_matches(int root_fd, const char *prefix,
					  const struct changeset_entry *e, const char *path,
					  char *why, size_t why_size)
{
	const char *to = e->link_to.bytes;
	char a[PATH_MAX], b[PATH_MAX];
	struct stat sa, sb;

	if (!to)
		return true;
	if ((size_t)snprintf(a, sizeof(a), "%s%s", prefix, path) >= sizeof(a) ||
	    (size_t)snprintf(b, sizeof(b), "%s%s", prefix, to) >= sizeof(b) ||
	    applyfs_stat_at(root_fd, a, &sa) < 0 || applyfs_stat_at(root_fd, b, &sb) < 0 ||
	    sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) {
		snprintf(why, why_size, "%s%s is no longer a hard link of %s",
			 *prefix ? "the staged " : "", path, to);
		return false;
	}
	return true;
}

/* How deep the walk for a hard-link group's removed names goes: a name
 * deeper is missed, and the change refused (CONFLICT), never let through. */
#define APPLYCHECK_LINKS_DEPTH 64

/* A mode as the change set writes it. */
static const char *applycheck_mode(char buf[16], mode_t mode)
{
	snprintf(buf, 16, "%04o", (unsigned)(mode & 07777));
	return buf;
}

/* A meta change's owner, when the entry gives it (before: old_uid). */
static bool applycheck_owner_matches(const struct changeset_entry *e, const char *path,
				     const struct stat *st, bool after, char *why, size_t why_size)
{
	bool owner = changeset_entry_has(e, after ? CHANGESET_KEY_UID : CHANGESET_KEY_OLD_UID);
	uid_t uid = after ? e->uid : e->old_uid;
	gid_t gid = after ? e->gid : e->old_gid;

	if (owner && (st->st_uid != uid || st->st_gid != gid)) {
		snprintf(why, why_size, "%s is owned by %u:%u, not %u:%u", path,
			 (unsigned)st->st_uid, (unsigned)st->st_gid, (unsigned)uid, (unsigned)gid);
		return false;
	}
	return true;
}

/* The mode it must have: the new one after, the old one before (an entry
 * gives old_mode only when it differs from mode). A symlink has none; an
 * entry of a change set before version 4 may give neither. */
static bool applycheck_mode_matches(struct dryrun_dir *d, const struct changeset_entry *e,
				    const char *path, const struct stat *st, bool after, char *why,
				    size_t why_size)
{
	char mode_buf[16];
	const char *mode = changeset_entry_has(e, CHANGESET_KEY_MODE)
				   ? applycheck_mode(mode_buf, e->mode)
				   : NULL;
	if (!after && changeset_entry_has(e, CHANGESET_KEY_OLD_MODE))
		mode = applycheck_mode(mode_buf, e->old_mode);
	char have_mode[16];
	snprintf(have_mode, sizeof(have_mode), "%04o", (unsigned)(st->st_mode & 07777));
	if (mode && !S_ISLNK(st->st_mode) && strcmp(mode, have_mode) != 0 &&
	    (d->identity || changeset_change_is_meta(e->change))) {
		snprintf(why, why_size, "%s has mode %s, not %s", path, have_mode, mode);
		return false;
	}
	return true;
}

/* How many names at dir_fd/path and below it are the inode want: a
 * regular file's name, a directory's names walked without following a
 * symlink, at most depth levels down. What cannot be read counts nothing:
 * a name missed is a name the caller takes for an unreviewed one. */
static uint64_t applycheck_links_below(int dir_fd, const char *path, const struct stat *want, int depth)
{
	struct stat st;

	if (applyfs_stat_at(dir_fd, path, &st) < 0)
		return 0;
	if (S_ISREG(st.st_mode))
		return st.st_dev == want->st_dev && st.st_ino == want->st_ino;
	if (!S_ISDIR(st.st_mode) || depth <= 0 || st.st_dev != want->st_dev)
		return 0;
	cleanup_close int fd = fd_open_beneath(dir_fd, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	char buf[DIRREAD_BUF_MIN * 2];
	struct dirread r;
	struct dirread_entry de;
	uint64_t n = 0;
	dirread_init(&r, fd, buf, sizeof(buf));
	while (dirread_next(&r, &de) == 1) {
		char name[NAME_MAX + 1];
		if ((de.type != DT_DIR && de.type != DT_REG && de.type != DT_UNKNOWN) ||
		    de.len > NAME_MAX)
			continue;
		memcpy(name, de.name, de.len);
		name[de.len] = '\0';
		n += applycheck_links_below(fd, name, want, depth - 1);
	}
	return n;
}

/* Whether the change set's entry f is one whose names the command removed
 * or replaced (walked by applycheck_names_known()). */
static bool applycheck_removes_names(const struct changeset_entry *f)
{
	return f->change == CHANGESET_DELETED || f->change == CHANGESET_MODIFIED ||
	       f->change == CHANGESET_TYPE_CHANGED;
}

/* Whether another such entry lies above f: its walk counted f's names. */
static bool applycheck_walked_above(const struct changeset *cs, const struct changeset_entry *f)
{
	size_t len = strlen(f->path.bytes);

	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *g = &cs->entries[i];
		size_t n = strlen(g->path.bytes);
		if (g != f && n < len && f->path.bytes[n] == '/' &&
		    memcmp(g->path.bytes, f->path.bytes, n) == 0 && applycheck_removes_names(g))
			return true;
	}
	return false;
}

/* A change made in place reaches every name of the inode. The names it
 * was shown to reach are the path, also_names and also_outside (a count);
 * the names of the group the command removed or replaced are, before the
 * apply, the paths of deleted, modified and type-changed entries (and below
 * them), after it in backup/, in between (an exchange's old object) at the
 * entry's staged path. Any other name was linked since the dry run (a name
 * outside the workspace made the path's, the same bytes, mode and
 * attributes): the change would reach a file nobody reviewed. Every name
 * counted is one of the inode's, and each place is counted once (an entry
 * below one walked is left to that walk: quadratic in the change set, paid
 * only for a file linked beyond its shown names), so the count never
 * exceeds the names there are. */
static bool applycheck_names_known(struct dryrun_dir *d, const struct changeset_entry *e,
				   const struct stat *st)
{
	uint64_t known = 1 + (e ? e->n_also_names + (uint64_t)MAX(e->also_outside, (int64_t)0) : 0);

	if (!S_ISREG(st->st_mode) || st->st_nlink <= known)
		return true;
	known += applycheck_links_below(d->fd, STATEPATH_BACKUP, st, APPLYCHECK_LINKS_DEPTH);
	for (size_t i = 0; i < d->cs->n_entries && st->st_nlink > known; i++) {
		const struct changeset_entry *f = &d->cs->entries[i];
		char staged[PATH_MAX];
		if (f == e || !applycheck_removes_names(f) || applycheck_walked_above(d->cs, f))
			continue;
		known += applycheck_links_below(d->ws_fd, f->path.bytes, st, APPLYCHECK_LINKS_DEPTH);
		if ((size_t)snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", f->path.bytes) <
		    sizeof(staged))
			known += applycheck_links_below(d->fd, staged, st, APPLYCHECK_LINKS_DEPTH);
	}
	return st->st_nlink <= known;
}


/* 0 when the names of the object open as target (the workspace's path)
 * are all ones the dry run showed (applycheck_names_known()), else
 * -EMLINK, or a negative errno. */
static int applycheck_reach_known(struct dryrun_dir *d, const char *path, int target)
{
	const struct changeset_entry *e = NULL;
	struct stat st;

	if (fstat(target, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_nlink <= 1)
		return 0;
	for (size_t i = 0; i < d->cs->n_entries && !e; i++)
		if (strcmp(d->cs->entries[i].path.bytes, path) == 0)
			e = &d->cs->entries[i];
	return applycheck_names_known(d, e, &st) ? 0 : -EMLINK;
}

int applycheck_open_in_place(struct dryrun_dir *d, const char *path)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(d->ws_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	cleanup_close int target = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return -errno;
	int r = applycheck_reach_known(d, path, target);
	return r < 0 ? r : TAKE_FD(target);
}

/* A change made in place (mode, attributes, owner): the same object,
 * type, attributes, names of its group and content before and after. */
static bool applycheck_meta_matches(struct dryrun_dir *d, const struct changeset_entry *e,
				    const char *path, const struct stat *st, bool after, char *why,
				    size_t why_size)
{
	const char *type = changeset_file_type_name(e->type);

	if (d->identity && strcmp(changeset_type_name(st->st_mode), type) != 0) {
		snprintf(why, why_size, "%s is no longer a %s", path, type);
		return false;
	}
	/* Unchanged attributes are listed once, in xattrs (version 4). */
	const struct changeset_xattr_list *want = NULL;
	if (changeset_entry_has(e, after ? CHANGESET_KEY_XATTRS : CHANGESET_KEY_OLD_XATTRS))
		want = after ? &e->xattrs : &e->old_xattrs;
	if (!after && !want && changeset_entry_has(e, CHANGESET_KEY_XATTRS))
		want = &e->xattrs;
	if (want && !applycheck_xattrs_match(d->ws_fd, path, d->xattrs, want)) {
		snprintf(why, why_size, "%s has other extended attributes now", path);
		return false;
	}
	/* The names it was shown to reach share its inode, before and
	 * after: one of them split off since reaches no longer. */
	for (size_t k = 0; k < e->n_also_names; k++) {
		const char *name = e->also_names[k].path.bytes;
		struct stat ost;
		if (applyfs_stat_at(d->ws_fd, name, &ost) < 0 || ost.st_dev != st->st_dev ||
		    ost.st_ino != st->st_ino) {
			snprintf(why, why_size, "%s is no longer a hard link of %s", name, path);
			return false;
		}
	}
	if (!applycheck_names_known(d, e, st)) {
		snprintf(why, why_size, "%s has other hard links now", path);
		return false;
	}
	/* The content is the same before and after (version 4 gives it). */
	char have[SHA256_HEX_SIZE];
	if (S_ISREG(st->st_mode) && e->sha256 &&
	    (applyfs_hash_at(d->ws_fd, path, have) < 0 || strcmp(have, e->sha256) != 0)) {
		snprintf(why, why_size, "%s changed since the dry run", path);
		return false;
	}
	return true;
}

/* A created, modified, deleted or retyped object: its type, content, link
 * target, hard-link group and (before) a directory's entries. */
static bool applycheck_object_matches(struct dryrun_dir *d, const struct changeset_entry *e,
				      const char *path, const struct stat *st, bool after,
				      char *why, size_t why_size)
{
	/* The type and content the path should have. */
	const char *want_type = after || e->change == CHANGESET_CREATED ||
						!changeset_entry_has(e, CHANGESET_KEY_OLD_TYPE)
					? changeset_file_type_name(e->type)
					: changeset_file_type_name(e->old_type);
	const char *hash = after ? e->sha256 : e->old_sha256;
	const char *target = after ? e->target.bytes : e->old_target.bytes;
	bool is_dir = S_ISDIR(st->st_mode), is_reg = S_ISREG(st->st_mode),
	     is_lnk = S_ISLNK(st->st_mode);

	if ((strcmp(want_type, "dir") == 0) != is_dir || (strcmp(want_type, "file") == 0) != is_reg ||
	    (strcmp(want_type, "symlink") == 0) != is_lnk) {
		snprintf(why, why_size, "%s is no longer a %s", path, want_type);
		return false;
	}
	if (is_reg && hash) {
		char have[SHA256_HEX_SIZE];
		if (applyfs_hash_at(d->ws_fd, path, have) < 0 || strcmp(have, hash) != 0) {
			snprintf(why, why_size, "%s changed since the dry run", path);
			return false;
		}
	}
	if (is_lnk && target) {
		char have[PATH_MAX];
		if (applyfs_readlink_at(d->ws_fd, path, have, sizeof(have)) < 0 ||
		    strcmp(have, target) != 0) {
			snprintf(why, why_size, "%s points elsewhere now", path);
			return false;
		}
	}
	if (is_reg && !applycheck_link_group_matches(d->ws_fd, "", e, path, why, why_size))
		return false;
	if (!after && is_dir && changeset_entry_has(e, CHANGESET_KEY_ENTRIES) &&
	    applyfs_count_entries_at(d->ws_fd, path) != e->entries) {
		snprintf(why, why_size, "%s holds other entries now", path);
		return false;
	}
	return true;
}

bool applycheck_matches(struct dryrun_dir *d, const struct changeset_entry *e, const char *path,
			bool after, char *why, size_t why_size)
{
	bool meta = changeset_change_is_meta(e->change);
	bool gone = e->change == CHANGESET_DELETED;
	bool absent_before = e->change == CHANGESET_CREATED || e->change == CHANGESET_RENAMED;
	struct stat st;
	int r = applyfs_stat_at(d->ws_fd, path, &st);

	if ((after && gone) || (!after && absent_before)) {
		if (r == -ENOENT)
			return true;
		snprintf(why, why_size, "%s exists now", path);
		return false;
	}
	if (r < 0) {
		snprintf(why, why_size, "%s: %s", path, strerror(-r));
		return false;
	}
	if (meta && !applycheck_owner_matches(e, path, &st, after, why, why_size))
		return false;
	if (!applycheck_mode_matches(d, e, path, &st, after, why, why_size))
		return false;
	if (meta)
		return applycheck_meta_matches(d, e, path, &st, after, why, why_size);
	return applycheck_object_matches(d, e, path, &st, after, why, why_size);
}

const char *applycheck_staged_privilege(struct dryrun_dir *d, const struct changeset_entry *e)
{
	char staged[PATH_MAX];
	const char *name;
	struct stat st;

	if (e->refused)
		return e->refused;
	/* The root's mode is the change set's (the upper's root is airlock's
	 * 0700 directory): a set-user-ID bit there is refused as anywhere. */
	if (dryrun_dir_is_root(e->path.bytes))
		return changeset_entry_has(e, CHANGESET_KEY_MODE) && (e->mode & S_ISUID) ? "setuid"
											 : NULL;
	if (e->change == CHANGESET_DELETED ||
	    (size_t)snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", e->path.bytes) >=
		    sizeof(staged))
		return NULL;
	cleanup_close int fd = fd_open_parent(d->fd, staged, O_PATH, &name);
	if (fd < 0 || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL; /* nothing staged there: the operation itself fails */
	return changeset_privilege(fd, name, &st);
}

/* The mode a staged object must have: its entry's. An entry of a change
 * set before version 4 has none for a modified or type-changed object;
 * such a change was shown for review without a mode change, so a modified
 * file must keep the mode the workspace's file has; a type change is
 * refused (NULL, why set): nothing recorded says what its mode was. */
static const char *applycheck_staged_want_mode(struct dryrun_dir *d,
					       const struct changeset_entry *e, const char *path,
					       char buf[16], char *why, size_t why_size)
{
	struct stat st;

	if (changeset_entry_has(e, CHANGESET_KEY_MODE))
		return applycheck_mode(buf, e->mode);
	if (d->identity)
		return NULL;
	if (e->change == CHANGESET_MODIFIED) {
		if (applyfs_stat_at(d->ws_fd, path, &st) < 0)
			return ""; /* the precondition names what is gone */
		snprintf(buf, 16, "%04o", (unsigned)(st.st_mode & 07777));
		return buf;
	}
	if (e->change == CHANGESET_TYPE_CHANGED) {
		snprintf(why, why_size,
			 "%s: its entry records no mode (a change set written before version 4): dry-run again",
			 path);
		return NULL;
	}
	return ""; /* renamed, in change sets of version 1 */
}

bool applycheck_staged_matches(struct dryrun_dir *d, const struct changeset_entry *e, char *why,
			       size_t why_size)
{
	const char *path = e->path.bytes;
	const char *type = changeset_file_type_name(e->type), *name;
	bool meta = changeset_change_is_meta(e->change);
	char staged[PATH_MAX], what[256] = "", mode_buf[16], have[16];
	struct stat st;

	if (e->change == CHANGESET_DELETED || (meta && (!d->identity || dryrun_dir_is_root(path))))
		return true;
	if ((size_t)snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", path) >= sizeof(staged)) {
		snprintf(why, why_size, "%s: the path is too long", path);
		return false;
	}
	cleanup_close int fd = fd_open_parent(d->fd, staged, O_PATH, &name);
	if (fd < 0 || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(why, why_size, "%s: its staged object is gone", path);
		return false;
	}
	const char *mode = applycheck_staged_want_mode(d, e, path, mode_buf, why, why_size);
	if (!mode)
		return false;
	snprintf(have, sizeof(have), "%04o", (unsigned)(st.st_mode & 07777));
	const char *hash = e->sha256, *target = e->target.bytes;
	if (!type || strcmp(type, changeset_type_name(st.st_mode)) != 0) {
		snprintf(what, sizeof(what), "a %s, not a %s", changeset_type_name(st.st_mode),
			 type ? type : "?");
	} else if (*mode && !S_ISLNK(st.st_mode) && strcmp(mode, have) != 0) {
		snprintf(what, sizeof(what), "mode %s, not %s", have, mode);
	} else if (changeset_entry_has(e, CHANGESET_KEY_UID) &&
		   (st.st_uid != e->uid || st.st_gid != e->gid)) {
		/* It moves in with its owner: the one the change set names. */
		snprintf(what, sizeof(what), "owner %u:%u, not %u:%u", (unsigned)st.st_uid,
			 (unsigned)st.st_gid, (unsigned)e->uid, (unsigned)e->gid);
	} else if (S_ISREG(st.st_mode) && changeset_entry_has(e, CHANGESET_KEY_SIZE) &&
		   (int64_t)st.st_size != e->size) {
		snprintf(what, sizeof(what), "%lld bytes, not %lld", (long long)st.st_size,
			 (long long)e->size);
	} else if (S_ISREG(st.st_mode)) {
		char hex[SHA256_HEX_SIZE];
		if (!hash || applyfs_hash_at(d->fd, staged, hex) < 0 || strcmp(hex, hash) != 0)
			snprintf(what, sizeof(what), "its content is not the one of sha256 %.16s...",
				 hash ? hash : "(none)");
	} else if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		if (!target || applyfs_readlink_at(d->fd, staged, buf, sizeof(buf)) < 0 ||
		    strcmp(buf, target) != 0)
			snprintf(what, sizeof(what), "its link target differs");
	}
	/* The object moves in with its carried attributes: exactly the
	 * recorded ones (none when the change set lists none). */
	if (!*what) {
		/* none listed: e->xattrs is empty */
		if (!applycheck_xattrs_match(d->fd, staged, d->xattrs, &e->xattrs))
			snprintf(what, sizeof(what),
				 "extended attributes or ACLs other than the %zu listed", e->xattrs.n);
	}
	if (*what) {
		snprintf(why, why_size,
			 "%s: the staged object differs from the change set (%s; edited after the dry run)",
			 path, what);
		return false;
	}
	return applycheck_link_group_matches(d->fd, STATEPATH_UPPER "/", e, path, why, why_size);
}

/* SPDX-License-Identifier: MIT */
#include "core/snapshot/apply.h"

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
#include "basic/clock.h"
#include "basic/faultpoint.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/snapshot/changeset.h"
#include "core/store/jsonutil.h"

#define JOURNAL_SCHEMA	"airlock.journal/4"
#define JOURNAL_MAX	(256 << 20)
#define CHANGESET_MAX	(256 << 20)

/* One dry run's directory and the workspace it belongs to. */
struct dryrun_dir {
	struct store *store;
	uint64_t id;
	int fd; /* dryruns/<id> */
	int ws_fd; /* the workspace */
	char *workspace;
	json_t *changes;
	enum dryrun_verdict verdict;
	json_t *changeset;
	enum changeset_xattrs xattrs; /* which attributes its version carries */
	bool identity; /* its entries carry the whole identity (changeset_carries_identity) */
	char state[32];
	char changeset_sha256[SHA256_HEX_SIZE]; /* of changeset.json as read */
	char ws_mismatch[PATH_MAX + 128]; /* set when ws_fd is -1: why the workspace is not opened */
	/* The paths of created and type-changed directories, sorted (strcmp):
	 * what lies below one moves with it (covered()). */
	const char **new_dirs;
	size_t n_new_dirs;
};

static void dryrun_dir_release(struct dryrun_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->ws_fd >= 0)
		close(d->ws_fd);
	free(d->workspace);
	free(d->new_dirs);
	json_decref(d->changeset);
	*d = (struct dryrun_dir){ .fd = -1, .ws_fd = -1 };
}

static int conflict(struct apply_outcome *ret, struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int conflict(struct apply_outcome *ret, struct error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ret->conflict, sizeof(ret->conflict), fmt, ap);
	va_end(ap);
	return error_set(err, EBUSY, "CONFLICT: %s; nothing was changed", ret->conflict);
}

static mode_t parse_mode(const char *s)
{
	return s ? (mode_t)strtoul(s, NULL, 8) : 0;
}

/* ---- paths, resolved without symlinks (basic/fileio.h) ----------------- */

static int stat_at(int dir_fd, const char *path, struct stat *st)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	return fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int hash_at(int dir_fd, const char *path, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = fd_open_beneath(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_NOCTTY);

	return fd < 0 ? fd : sha256_fd_hex(fd, hex);
}

static int readlink_at(int dir_fd, const char *path, char *buf, size_t size)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, name, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* rename(2) between two trees, each side resolved without symlinks. */
static int move_at(int from_fd, const char *from, int to_fd, const char *to, unsigned flags)
{
	const char *from_name, *to_name;
	cleanup_close int a = fd_open_parent(from_fd, from, O_PATH, &from_name);
	cleanup_close int b = a < 0 ? -1 : fd_open_parent(to_fd, to, O_PATH, &to_name);

	if (a < 0)
		return a;
	if (b < 0)
		return b;
	return renameat2(a, from_name, b, to_name, flags) < 0 ? -errno : 0;
}

/* Sets the mode of the object open as target (O_PATH: chmod through
 * /proc, never a symlink's target). */
static int mode_set_fd(int target, mode_t mode)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", target);
	return chmod(proc, mode) < 0 ? -errno : 0;
}

/* The owner's write bit, lifted for one call that needs it where the owner
 * lacks it (setting a user.* attribute; renaming a directory to another
 * parent, which rewrites its `..`), and put back after. The operation that
 * may lift records the mode in the journal (its "mode"), so that an undo
 * after a crash between the two puts it back (lift_repair()). */
struct lift {
	int target; /* O_PATH, the object itself */
	mode_t mode; /* its mode before the lift */
	bool lifted;
};

/* Lifts when the owner lacks write access: after the call failed with
 * EACCES. Returns 1 when lifted (the call is worth retrying), 0 when not. */
static int lift_on(struct lift *l)
{
	struct stat st;

	if (l->lifted || l->target < 0 || fstat(l->target, &st) < 0 || (st.st_mode & S_IWUSR) ||
	    S_ISLNK(st.st_mode) || st.st_uid != geteuid())
		return 0;
	l->mode = st.st_mode & 07777;
	if (mode_set_fd(l->target, l->mode | S_IWUSR) < 0)
		return 0;
	l->lifted = true;
	return 1;
}

static int lift_off(struct lift *l)
{
	if (!l->lifted)
		return 0;
	l->lifted = false;
	return mode_set_fd(l->target, l->mode);
}

/* Where a crash left the object at dir_fd/path lifted (its mode the
 * recorded one plus the owner's write bit), the recorded mode back. */
static int lift_repair(int dir_fd, const char *path, json_t *op)
{
	const char *name, *recorded = jsonutil_str(op, "mode");
	struct stat st;

	if (!recorded)
		return 0;
	mode_t mode = parse_mode(recorded);
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);
	cleanup_close int target = fd < 0 ? -1 : openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0 || fstat(target, &st) < 0 || S_ISLNK(st.st_mode))
		return 0; /* not there: nothing to put back */
	if ((mode & S_IWUSR) || (st.st_mode & 07777) != (mode | S_IWUSR))
		return 0;
	return mode_set_fd(target, mode);
}

/* move_at(), and where it fails for want of write access to a directory
 * being moved to another parent (its `..`), again with the owner's write
 * bit lifted on it for the call. */
static int move_lifted(int from_fd, const char *from, int to_fd, const char *to, unsigned flags)
{
	int r = move_at(from_fd, from, to_fd, to, flags);
	if (r != -EACCES)
		return r;
	const char *name;
	cleanup_close int fd = fd_open_parent(from_fd, from, O_PATH, &name);
	cleanup_close int target = fd < 0 ? -1 : openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct lift l = { .target = target };
	struct stat st;
	if (target >= 0 && fstat(target, &st) == 0 && S_ISDIR(st.st_mode) && lift_on(&l) == 1) {
		r = move_at(from_fd, from, to_fd, to, flags);
		int q = lift_off(&l); /* the descriptor follows the object */
		r = r < 0 ? r : q;
	}
	return r;
}

static long count_entries_at(int dir_fd, const char *path)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	return fd < 0 ? -1 : changeset_count_entries(fd, name);
}

/* The overlay's own attributes must not reach the real tree: removed from
 * dir_fd/name and everything below it, by descriptor (no path grows with
 * the depth), never following a symlink. */
static __attribute__((noinline)) void strip_overlay_xattrs_one(int dir_fd, const char *name)
{
	char path[PATH_MAX + 32];
	/* The kernel's largest list, so no list is too long to be read. */
	cleanup_free char *names = malloc(XATTR_LIST_MAX);

	if (!names || (size_t)snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name) >= sizeof(path))
		return;
	ssize_t n = llistxattr(path, names, XATTR_LIST_MAX);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		if (strncmp(names + i, "user.overlay.", 13) == 0 ||
		    strncmp(names + i, "trusted.overlay.", 16) == 0)
			(void)lremovexattr(path, names + i);
}

static void strip_overlay_xattrs(int dir_fd, const char *name, int depth)
{
	struct stat st;

	strip_overlay_xattrs_one(dir_fd, name); /* its buffers off the recursion */
	if (depth > CHANGESET_MAX_DEPTH || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return;
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strip_overlay_xattrs(dirfd(d), de->d_name, depth + 1);
	closedir(d);
}

/* ---- the dry run's files --------------------------------------------------- */

/* A relative path of one or more components, none empty, "." or "..". */
static bool apply_path_is_clean(const char *p)
{
	if (!p || !*p || *p == '/')
		return false;
	for (;;) {
		size_t len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!p[len])
			return true;
		p += len + 1;
	}
}

static bool apply_one_of(const char *s, const char *const *set)
{
	for (size_t i = 0; s && set[i]; i++)
		if (!strcmp(s, set[i]))
			return true;
	return false;
}

/* An attribute list as changeset_read_xattrs() gives it, names decoded:
 * [{name, base64}], each name carried, each value base64. */
static bool apply_xattrs_valid(json_t *list, enum changeset_xattrs which)
{
	size_t i, n;
	json_t *x;

	if (!json_is_array(list))
		return false;
	json_array_foreach(list, i, x) {
		const char *name = jsonutil_str(x, "name"), *b64 = jsonutil_str(x, "base64");
		cleanup_free char *value = b64 ? base64_decode(b64, &n) : NULL;
		if (!name || !changeset_xattr_carried(name, which) || !value)
			return false;
	}
	return true;
}

/* The workspace root's own change: "." with a mode or attribute change. */
static bool apply_is_root(const char *path)
{
	return path && strcmp(path, ".") == 0;
}

/* A change's (or an operation's) owner key: absent, or an id. */
static bool apply_id_valid(json_t *c, const char *key, bool required)
{
	json_t *v = json_object_get(c, key);

	if (!v)
		return !required;
	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) < (json_int_t)UINT32_MAX;
}

/* uid and gid (and old_uid, old_gid) all or none; an owner_changed
 * change, and a chown operation, must have all four. */
static bool apply_owner_valid(json_t *c, bool required)
{
	bool any = json_object_get(c, "uid") || json_object_get(c, "gid");
	bool any_old = json_object_get(c, "old_uid") || json_object_get(c, "old_gid");

	if (required && !(any && any_old))
		return false;
	return apply_id_valid(c, "uid", any || any_old) && apply_id_valid(c, "gid", any || any_old) &&
	       apply_id_valid(c, "old_uid", any_old) && apply_id_valid(c, "old_gid", any_old);
}

static uid_t apply_id(json_t *c, const char *key)
{
	return (uid_t)json_integer_value(json_object_get(c, key));
}

/* Whether a change is applied in place: mode, attributes or owner. */
static bool apply_is_meta(const char *change)
{
	return change && (!strcmp(change, "mode_changed") || !strcmp(change, "xattrs_changed") ||
			  !strcmp(change, "owner_changed"));
}

/* also_names (core/snapshot/linkgroups.h): the other names of the hard-link group
 * whose shared inode a mode, attribute or owner change reaches. Shown for
 * review and checked, never work of their own (one inode): a list of clean
 * names on such a change only; also_outside a count of names outside the
 * workspace. */
static bool apply_also_valid(json_t *c, bool meta)
{
	json_t *list = json_object_get(c, "also_names"), *outside = json_object_get(c, "also_outside");
	size_t i;
	json_t *v;

	if (!list && !outside)
		return true;
	if (!meta || (list && !json_is_array(list)) ||
	    (outside && (!json_is_integer(outside) || json_integer_value(outside) < 1)))
		return false;
	json_array_foreach(list, i, v)
		if (!json_is_object(v) || !apply_path_is_clean(jsonutil_str(v, "path")))
			return false;
	return true;
}

/* A change's or an operation's optional attribute lists: both or none;
 * from version 4 (identity) a mode_changed entry lists `xattrs` alone when
 * its attributes did not change. */
static bool apply_meta_valid(json_t *c, bool required, enum changeset_xattrs which, bool identity)
{
	json_t *now = json_object_get(c, "xattrs"), *before = json_object_get(c, "old_xattrs");

	if (!now && !before)
		return !required;
	if (identity && now && !before)
		return !required && apply_xattrs_valid(now, which);
	return apply_xattrs_valid(now, which) && apply_xattrs_valid(before, which);
}

/* An octal mode string as the change set writes it: four digits. */
static bool apply_mode_valid(const char *m)
{
	return m && strlen(m) == 4 && strspn(m, "01234567") == 4;
}

/* Version 4: an entry of an object apply installs or changes in place
 * carries its whole identity, which apply checks the staged object
 * against (staged_matches): mode (and old_mode well-formed when given),
 * the whole attribute list, a file's size and SHA-256, a symlink's target. */
static bool apply_identity_valid(json_t *c)
{
	const char *type = jsonutil_str(c, "type"), *hash = jsonutil_str(c, "sha256");
	json_t *size = json_object_get(c, "size");

	if (!strcmp(jsonutil_str(c, "change"), "deleted"))
		return true;
	if (!apply_mode_valid(jsonutil_str(c, "mode")) || !json_is_array(json_object_get(c, "xattrs")) ||
	    (json_object_get(c, "old_mode") && !apply_mode_valid(jsonutil_str(c, "old_mode"))))
		return false;
	if (!strcmp(type, "file"))
		return json_is_integer(size) && json_integer_value(size) >= 0 && hash &&
		       strlen(hash) == SHA256_HEX_SIZE - 1 && strspn(hash, "0123456789abcdef") == SHA256_HEX_SIZE - 1;
	if (!strcmp(type, "symlink"))
		return jsonutil_str(c, "target") != NULL;
	return true;
}

int apply_parse_changeset(const char *text, size_t n, json_t **ret,
			  enum dryrun_verdict *ret_verdict, struct error *err)
{
	static const char *const changes[] = { "created", "modified", "deleted", "type_changed",
					       "mode_changed", "xattrs_changed", "owner_changed",
					       "renamed", NULL };
	static const char *const types[] = { "file", "dir", "symlink", "fifo", "socket", "other", NULL };
	cleanup_with(json_decrefp) json_t *doc = NULL;
	int r = jsonutil_parse_object(text, n, &doc, err);

	if (r < 0)
		return r;
	json_t *list = json_object_get(doc, "changes");
	if (!json_is_array(list) || !jsonutil_str(doc, "workspace") ||
	    jsonutil_str(doc, "workspace")[0] != '/')
		return error_set(err, EINVAL, "its change set is damaged");
	json_t *schema = json_object_get(doc, "schema");
	if (schema && (!json_is_string(schema) || !changeset_schema_known(json_string_value(schema))))
		return error_set(err, EINVAL, "its change set is of an unknown version");
	int verdict = dryrun_verdict_from_name(jsonutil_str(doc, "verdict"));
	if (verdict < 0)
		return error_set(err, EINVAL, "its change set is damaged (no known verdict)");
	/* From here on paths and targets are the exact bytes; every change has
	 * the fields apply reads, of the kinds it knows. */
	enum changeset_xattrs which = changeset_xattrs_of(jsonutil_str(doc, "schema"));
	bool identity = changeset_carries_identity(jsonutil_str(doc, "schema"));
	size_t i;
	json_t *c;
	json_array_foreach(list, i, c) {
		const char *change = json_is_object(c) && changeset_decode_bytes(c) == 0
					     ? jsonutil_str(c, "change") : NULL;
		bool meta = apply_is_meta(change);
		const char *path = jsonutil_str(c, "path");
		if (!apply_one_of(change, changes) || !apply_one_of(jsonutil_str(c, "type"), types) ||
		    !(apply_path_is_clean(path) ||
		      (meta && apply_is_root(path) && !strcmp(jsonutil_str(c, "type"), "dir"))) ||
		    (!strcmp(change, "renamed") && !apply_path_is_clean(jsonutil_str(c, "from"))) ||
		    (!strcmp(change, "mode_changed") && (!jsonutil_str(c, "mode") || !jsonutil_str(c, "old_mode"))) ||
		    (meta && !apply_meta_valid(c, !strcmp(change, "xattrs_changed"), which, identity)) ||
		    !apply_owner_valid(c, !strcmp(change, "owner_changed")) ||
		    !apply_also_valid(c, meta) ||
		    (!meta && json_object_get(c, "xattrs") &&
		     !apply_xattrs_valid(json_object_get(c, "xattrs"), which)) ||
		    (!meta && json_object_get(c, "old_xattrs") &&
		     !apply_xattrs_valid(json_object_get(c, "old_xattrs"), which)) ||
		    (identity && !apply_identity_valid(c)))
			return error_set(err, EINVAL, "its change set is damaged (change %zu)", i);
	}
	*ret = TAKE_PTR(doc);
	*ret_verdict = (enum dryrun_verdict)verdict;
	return 0;
}

enum dryrun_lock { DRYRUN_LOCK_WAIT, DRYRUN_LOCK_TRY };

/* Opens dryruns/<id> and takes its lock (flock on the directory, held until
 * d is released), then reads it. Every command that reads or changes a dry
 * run holds its lock, so apply, rollback, discard, gc and recovery never
 * interleave on one dry run; a lock held means a live process, so recovery
 * never mistakes an apply in progress for a crash. DRYRUN_LOCK_TRY: -EAGAIN
 * (no message) when another process holds it. */
static int dryrun_open(struct store *store, uint64_t id, enum dryrun_lock lock,
		       struct dryrun_dir *d, struct error *err)
{
	char rel[64];
	cleanup_free char *text = NULL;
	size_t n;
	struct stat dst;

	*d = (struct dryrun_dir){ .store = store, .id = id, .fd = -1, .ws_fd = -1 };
	snprintf(rel, sizeof(rel), "dryruns/%llu", (unsigned long long)id);
	d->fd = openat(store->dir_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return errno == ENOENT ? error_set(err, ENOENT, "no dry run %llu", (unsigned long long)id)
				       : error_set_errno(err, errno, "open %s/%s", store->path, rel);
	if (flock(d->fd, LOCK_EX | (lock == DRYRUN_LOCK_TRY ? LOCK_NB : 0)) < 0)
		return errno == EWOULDBLOCK && lock == DRYRUN_LOCK_TRY
			       ? -EAGAIN
			       : error_set_errno(err, errno, "lock dry run %llu", (unsigned long long)id);
	/* Removed (discard, gc) while this process waited for the lock. */
	if (fstat(d->fd, &dst) < 0 || dst.st_nlink == 0)
		return error_set(err, ENOENT, "no dry run %llu", (unsigned long long)id);
	int r = file_read_capped(d->fd, "changeset.json", CHANGESET_MAX, &text, &n, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "dry run %llu has no change set (it did not run)",
				 (unsigned long long)id);
	if (r == 0) {
		sha256_hex(text, n, d->changeset_sha256);
		r = apply_parse_changeset(text, n, &d->changeset, &d->verdict, err);
	}
	if (r < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	d->changes = json_object_get(d->changeset, "changes");
	d->xattrs = changeset_xattrs_of(jsonutil_str(d->changeset, "schema"));
	d->identity = changeset_carries_identity(jsonutil_str(d->changeset, "schema"));
	const char *ws = jsonutil_str(d->changeset, "workspace");
	d->workspace = strdup(ws);
	if (!d->workspace)
		return error_set(err, ENOMEM, "out of memory");
	/* No symlink on the way (the path was canonical when the dry run
	 * recorded it), and the very directory the dry run saw. */
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	json_t *dev = json_object_get(d->changeset, "workspace_dev");
	json_t *ino = json_object_get(d->changeset, "workspace_ino");
	struct stat st;
	d->ws_fd = (int)syscall(SYS_openat2, AT_FDCWD, ws, &how, sizeof(how));
	if (d->ws_fd < 0 && errno != ELOOP && errno != ENOENT && errno != ENOTDIR)
		return error_set_errno(err, errno, "open the workspace %s", ws);
	if (d->ws_fd < 0 || fstat(d->ws_fd, &st) < 0 || !json_is_integer(dev) ||
	    !json_is_integer(ino) || (json_int_t)st.st_dev != json_integer_value(dev) ||
	    (json_int_t)st.st_ino != json_integer_value(ino)) {
		snprintf(d->ws_mismatch, sizeof(d->ws_mismatch),
			 "the workspace %s is not the directory the dry run saw (moved, replaced, or reached through a symlink)",
			 ws);
		if (d->ws_fd >= 0)
			close(d->ws_fd);
		d->ws_fd = -1;
	}
	cleanup_free char *state = NULL;
	/* A state whose commit a crash cut between its rename and its entry is
	 * put back to what the ledger committed (recovery then follows the
	 * journal). */
	char state_path[80];
	snprintf(state_path, sizeof(state_path), "%s/state", rel);
	if (store_settle(store, state_path, err) < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	if (file_read_capped(d->fd, "state", 64, &state, &n, err) == 0) {
		state[strcspn(state, "\n")] = '\0';
		snprintf(d->state, sizeof(d->state), "%s", state);
	} else {
		snprintf(d->state, sizeof(d->state), "pending");
	}
	*err = (struct error){ 0 };
	return 0;
}

/* The state moves on through the one commit path: "applied" is an apply
 * record, "rolled_back" (and "pending" after a recovery undid an apply)
 * a rollback record. */
static int dryrun_set_state(struct dryrun_dir *d, const char *state, struct error *err)
{
	char line[64], path[64], id_text[24];
	int n = snprintf(line, sizeof(line), "%s\n", state);

	snprintf(path, sizeof(path), "dryruns/%llu/state", (unsigned long long)d->id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)d->id);
	int r = store_commit(d->store, strcmp(state, "applied") == 0 ? LEDGER_APPLY : LEDGER_ROLLBACK,
			     id_text, path, line, (size_t)n, true, err);
	if (r < 0)
		r = error_prefix(err, "dry run %llu: write its state", (unsigned long long)d->id);
	if (r == 0)
		snprintf(d->state, sizeof(d->state), "%s", state);
	return r;
}

/* ---- checking the tree against the change set ------------------------------- */

/* Whether dir_fd/path carries exactly the attributes want. */
static bool xattrs_match(int dir_fd, const char *path, enum changeset_xattrs which, json_t *want)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);
	cleanup_with(json_decrefp) json_t *have = NULL;

	return fd >= 0 && changeset_read_xattrs(fd, name, which, &have) == 0 && json_equal(have, want);
}

/* The value of the attribute named name in list, NULL when it has none. */
static const char *xattrs_value(json_t *list, const char *name)
{
	size_t i;
	json_t *x;

	json_array_foreach(list, i, x)
		if (!strcmp(jsonutil_str(x, "name"), name))
			return jsonutil_str(x, "base64");
	return NULL;
}

/* Sets the carried attributes of dir_fd/path to exactly want, touching only
 * those that differ: those not in it removed, the others set, the ACLs last
 * (setting one sets the mode's bits too). Setting or removing a user.*
 * attribute needs write access to the object, which its owner may lack (a
 * read-only file): then the owner's write bit is lifted for those calls and
 * put back before the ACLs (struct lift). Through an O_PATH descriptor of
 * the object itself (never a symlink's target). */
static int xattrs_set_at(int dir_fd, const char *path, enum changeset_xattrs which, json_t *want)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);
	cleanup_close int target = fd < 0 ? -1 : openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	cleanup_with(json_decrefp) json_t *have = NULL;
	char proc[64];
	size_t i, n;
	json_t *x;

	if (fd < 0)
		return fd;
	if (target < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", target);
	int r = changeset_read_xattrs(target, "", which, &have);
	if (r < 0)
		return r;
	struct lift l = { .target = target };
	json_array_foreach(have, i, x) {
		const char *xname = jsonutil_str(x, "name");
		if (xattrs_value(want, xname))
			continue;
		while ((r = removexattr(proc, xname) < 0 ? -errno : 0) == -EACCES && lift_on(&l) == 1)
			;
		if (r < 0 && r != -ENODATA)
			break;
		r = 0;
	}
	for (int acls = 0; r == 0 && acls < 2; acls++) {
		if (acls == 1 && (r = lift_off(&l)) < 0)
			break;
		json_array_foreach(want, i, x) {
			const char *xname = jsonutil_str(x, "name"), *had = xattrs_value(have, xname);
			if (changeset_xattr_is_acl(xname) != (acls == 1) ||
			    (had && !strcmp(had, jsonutil_str(x, "base64"))))
				continue;
			cleanup_free char *value = base64_decode(jsonutil_str(x, "base64"), &n);
			if (!value) {
				r = -EINVAL;
				break;
			}
			while ((r = setxattr(proc, xname, value, n, 0) < 0 ? -errno : 0) == -EACCES &&
			       lift_on(&l) == 1)
				;
			if (r < 0)
				break;
		}
	}
	int q = lift_off(&l);
	return r < 0 ? r : q;
}

/* A name that joins the object a name of its hard-link group got in place
 * (`link_to`, core/snapshot/linkgroups.h): before the apply both names must still
 * be one inode, as at the dry run (else the group changed since); after it,
 * too (both hold the object the apply moved in). root_fd is the workspace
 * or the dry run's directory (prefix "upper/" for the staged side). */
static bool apply_link_group_matches(int root_fd, const char *prefix, json_t *c, const char *path,
				     char *why, size_t why_size)
{
	const char *to = jsonutil_str(c, "link_to");
	char a[PATH_MAX], b[PATH_MAX];
	struct stat sa, sb;

	if (!to)
		return true;
	if ((size_t)snprintf(a, sizeof(a), "%s%s", prefix, path) >= sizeof(a) ||
	    (size_t)snprintf(b, sizeof(b), "%s%s", prefix, to) >= sizeof(b) || stat_at(root_fd, a, &sa) < 0 ||
	    stat_at(root_fd, b, &sb) < 0 || sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) {
		snprintf(why, why_size, "%s%s is no longer a hard link of %s", *prefix ? "the staged " : "", path, to);
		return false;
	}
	return true;
}

/* Whether the workspace holds at path what the change says was there before
 * (after == false) or what the apply put there (after == true). */
static bool matches(struct dryrun_dir *d, json_t *c, const char *path, bool after, char *why,
		    size_t why_size)
{
	const char *change = jsonutil_str(c, "change"), *type = jsonutil_str(c, "type");
	bool gone = strcmp(change, "deleted") == 0;
	bool absent_before = strcmp(change, "created") == 0 || strcmp(change, "renamed") == 0;
	struct stat st;
	int r = stat_at(d->ws_fd, path, &st);

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
	/* The type and content the path should have. */
	const char *want_type = after || !strcmp(change, "created") ? type : jsonutil_str(c, "old_type");
	if (!want_type)
		want_type = type;
	const char *hash = after ? jsonutil_str(c, "sha256") : jsonutil_str(c, "old_sha256");
	const char *target = after ? jsonutil_str(c, "target") : jsonutil_str(c, "old_target");
	if (apply_is_meta(change)) {
		const char *uid_key = after ? "uid" : "old_uid", *gid_key = after ? "gid" : "old_gid";
		if (json_object_get(c, uid_key) &&
		    (st.st_uid != apply_id(c, uid_key) || st.st_gid != apply_id(c, gid_key))) {
			snprintf(why, why_size, "%s is owned by %u:%u, not %u:%u", path, (unsigned)st.st_uid,
				 (unsigned)st.st_gid, (unsigned)apply_id(c, uid_key),
				 (unsigned)apply_id(c, gid_key));
			return false;
		}
	}
	/* The mode it must have: the new one after, the old one before (an
	 * entry gives old_mode only when it differs from mode). A symlink has
	 * none; an entry of a change set before version 4 may give neither. */
	const char *mode = jsonutil_str(c, "mode");
	if (!after && jsonutil_str(c, "old_mode"))
		mode = jsonutil_str(c, "old_mode");
	char have_mode[16];
	snprintf(have_mode, sizeof(have_mode), "%04o", (unsigned)(st.st_mode & 07777));
	if (mode && !S_ISLNK(st.st_mode) && strcmp(mode, have_mode) != 0 &&
	    (d->identity || apply_is_meta(change))) {
		snprintf(why, why_size, "%s has mode %s, not %s", path, have_mode, mode);
		return false;
	}
	if (apply_is_meta(change)) {
		if (d->identity && strcmp(changeset_type_name(st.st_mode), type) != 0) {
			snprintf(why, why_size, "%s is no longer a %s", path, type);
			return false;
		}
		/* Unchanged attributes are listed once, in xattrs (version 4). */
		json_t *want = json_object_get(c, after ? "xattrs" : "old_xattrs");
		if (!after && !want)
			want = json_object_get(c, "xattrs");
		if (want && !xattrs_match(d->ws_fd, path, d->xattrs, want)) {
			snprintf(why, why_size, "%s has other extended attributes now", path);
			return false;
		}
		/* The names it was shown to reach share its inode, before and
		 * after: one of them split off since reaches no longer. */
		size_t k;
		json_t *also;
		json_array_foreach(json_object_get(c, "also_names"), k, also) {
			const char *name = jsonutil_str(also, "path");
			struct stat ost;
			if (stat_at(d->ws_fd, name, &ost) < 0 || ost.st_dev != st.st_dev || ost.st_ino != st.st_ino) {
				snprintf(why, why_size, "%s is no longer a hard link of %s", name, path);
				return false;
			}
		}
		/* The content is the same before and after (version 4 gives it). */
		char have[SHA256_HEX_SIZE];
		hash = jsonutil_str(c, "sha256");
		if (S_ISREG(st.st_mode) && hash && (hash_at(d->ws_fd, path, have) < 0 || strcmp(have, hash) != 0)) {
			snprintf(why, why_size, "%s changed since the dry run", path);
			return false;
		}
		return true;
	}
	bool is_dir = S_ISDIR(st.st_mode), is_reg = S_ISREG(st.st_mode), is_lnk = S_ISLNK(st.st_mode);
	if ((strcmp(want_type, "dir") == 0) != is_dir || (strcmp(want_type, "file") == 0) != is_reg ||
	    (strcmp(want_type, "symlink") == 0) != is_lnk) {
		snprintf(why, why_size, "%s is no longer a %s", path, want_type);
		return false;
	}
	if (is_reg && hash) {
		char have[SHA256_HEX_SIZE];
		if (hash_at(d->ws_fd, path, have) < 0 || strcmp(have, hash) != 0) {
			snprintf(why, why_size, "%s changed since the dry run", path);
			return false;
		}
	}
	if (is_lnk && target) {
		char have[PATH_MAX];
		if (readlink_at(d->ws_fd, path, have, sizeof(have)) < 0 || strcmp(have, target) != 0) {
			snprintf(why, why_size, "%s points elsewhere now", path);
			return false;
		}
	}
	if (is_reg && !apply_link_group_matches(d->ws_fd, "", c, path, why, why_size))
		return false;
	json_t *entries = json_object_get(c, "entries");
	if (!after && is_dir && json_is_integer(entries) &&
	    count_entries_at(d->ws_fd, path) != json_integer_value(entries)) {
		snprintf(why, why_size, "%s holds other entries now", path);
		return false;
	}
	return true;
}

/* A second look at what would move in (docs/dryrun.md, "Set-id files"):
 * whatever the change set says, no staged object with a set-id bit or a
 * file capability reaches the real tree. The reason, or NULL. */
static const char *staged_privilege(struct dryrun_dir *d, json_t *c)
{
	char staged[PATH_MAX];
	const char *name;
	struct stat st;

	if (jsonutil_str(c, "refused"))
		return jsonutil_str(c, "refused");
	/* The root's mode is the change set's (the upper's root is airlock's
	 * 0700 directory): a set-user-ID bit there is refused as anywhere. */
	if (apply_is_root(jsonutil_str(c, "path")))
		return parse_mode(jsonutil_str(c, "mode")) & S_ISUID ? "setuid" : NULL;
	if (!strcmp(jsonutil_str(c, "change"), "deleted") ||
	    (size_t)snprintf(staged, sizeof(staged), "upper/%s", jsonutil_str(c, "path")) >= sizeof(staged))
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
static const char *staged_want_mode(struct dryrun_dir *d, json_t *c, const char *path, char buf[16],
				    char *why, size_t why_size)
{
	const char *mode = jsonutil_str(c, "mode"), *change = jsonutil_str(c, "change");
	struct stat st;

	if (mode || d->identity)
		return mode;
	if (!strcmp(change, "modified")) {
		if (stat_at(d->ws_fd, path, &st) < 0)
			return ""; /* the precondition names what is gone */
		snprintf(buf, 16, "%04o", (unsigned)(st.st_mode & 07777));
		return buf;
	}
	if (!strcmp(change, "type_changed")) {
		snprintf(why, why_size,
			 "%s: its entry records no mode (a change set written before version 4): dry-run again",
			 path);
		return NULL;
	}
	return ""; /* renamed, in change sets of version 1 */
}

/* What was reviewed is what lands: the staged object of every change that
 * is not a deletion must still be exactly what its entry says (type, mode,
 * size and SHA-256 of a file, target of a symlink, the whole list of
 * carried attributes): the upper layer lies in the state directory and may
 * be edited after the dry run. From version 4 that includes the copied-up
 * object of a mode or attribute change (apply changes the real one in place
 * from the entry, but a staged copy that differs is an edit all the same);
 * the root's is not checked (the upper's root is the dry run's own
 * directory, its mode and attributes recorded at the end of the run).
 * false with why set (the path and what differs) when it is not. */
static bool staged_matches(struct dryrun_dir *d, json_t *c, char *why, size_t why_size)
{
	const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
	const char *type = jsonutil_str(c, "type"), *name;
	bool meta = apply_is_meta(change);
	char staged[PATH_MAX], what[256] = "", mode_buf[16], have[16];
	struct stat st;

	if (!strcmp(change, "deleted") || (meta && (!d->identity || apply_is_root(path))))
		return true;
	if ((size_t)snprintf(staged, sizeof(staged), "upper/%s", path) >= sizeof(staged)) {
		snprintf(why, why_size, "%s: the path is too long", path);
		return false;
	}
	cleanup_close int fd = fd_open_parent(d->fd, staged, O_PATH, &name);
	if (fd < 0 || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(why, why_size, "%s: its staged object is gone", path);
		return false;
	}
	const char *mode = staged_want_mode(d, c, path, mode_buf, why, why_size);
	if (!mode)
		return false;
	snprintf(have, sizeof(have), "%04o", (unsigned)(st.st_mode & 07777));
	json_t *size = json_object_get(c, "size");
	const char *hash = jsonutil_str(c, "sha256"), *target = jsonutil_str(c, "target");
	if (!type || strcmp(type, changeset_type_name(st.st_mode)) != 0) {
		snprintf(what, sizeof(what), "a %s, not a %s", changeset_type_name(st.st_mode), type ? type : "?");
	} else if (*mode && !S_ISLNK(st.st_mode) && strcmp(mode, have) != 0) {
		snprintf(what, sizeof(what), "mode %s, not %s", have, mode);
	} else if (json_object_get(c, "uid") &&
		   (st.st_uid != apply_id(c, "uid") || st.st_gid != apply_id(c, "gid"))) {
		/* It moves in with its owner: the one the change set names. */
		snprintf(what, sizeof(what), "owner %u:%u, not %u:%u", (unsigned)st.st_uid,
			 (unsigned)st.st_gid, (unsigned)apply_id(c, "uid"), (unsigned)apply_id(c, "gid"));
	} else if (S_ISREG(st.st_mode) && json_is_integer(size) &&
		   (json_int_t)st.st_size != json_integer_value(size)) {
		snprintf(what, sizeof(what), "%lld bytes, not %lld", (long long)st.st_size,
			 (long long)json_integer_value(size));
	} else if (S_ISREG(st.st_mode)) {
		char hex[SHA256_HEX_SIZE];
		if (!hash || hash_at(d->fd, staged, hex) < 0 || strcmp(hex, hash) != 0)
			snprintf(what, sizeof(what), "its content is not the one of sha256 %.16s...",
				 hash ? hash : "(none)");
	} else if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		if (!target || readlink_at(d->fd, staged, buf, sizeof(buf)) < 0 || strcmp(buf, target) != 0)
			snprintf(what, sizeof(what), "its link target differs");
	}
	/* The object moves in with its carried attributes: exactly the
	 * recorded ones (none when the change set lists none). */
	if (!*what) {
		cleanup_with(json_decrefp) json_t *none = json_array();
		json_t *want = json_object_get(c, "xattrs");
		if (!none || !xattrs_match(d->fd, staged, d->xattrs, want ? want : none))
			snprintf(what, sizeof(what), "extended attributes or ACLs other than the %zu listed",
				 json_array_size(want));
	}
	if (*what) {
		snprintf(why, why_size, "%s: the staged object differs from the change set (%s; edited after the dry run)",
			 path, what);
		return false;
	}
	return apply_link_group_matches(d->fd, "upper/", c, path, why, why_size);
}

/* ---- planning --------------------------------------------------------------- */

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collects d->new_dirs: the directories whose one move brings everything
 * below them. */
static int cover_build(struct dryrun_dir *d)
{
	size_t i, n = 0;
	json_t *c;

	d->new_dirs = calloc(json_array_size(d->changes) + 1, sizeof(*d->new_dirs));
	if (!d->new_dirs)
		return -ENOMEM;
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		if (!strcmp(jsonutil_str(c, "type"), "dir") &&
		    (!strcmp(change, "created") || !strcmp(change, "type_changed")))
			d->new_dirs[n++] = jsonutil_str(c, "path");
	}
	qsort(d->new_dirs, n, sizeof(*d->new_dirs), compare_strings);
	d->n_new_dirs = n;
	return 0;
}

struct cover_key {
	const char *s;
	size_t n;
};

/* A prefix of a path (s, n bytes) against a whole path, in strcmp order. */
static int compare_prefix(const void *key, const void *elem)
{
	const struct cover_key *k = key;
	const char *p = *(const char *const *)elem;
	int r = strncmp(k->s, p, k->n);

	if (r != 0)
		return r;
	return p[k->n] == '\0' ? 0 : -1; /* p is longer: the prefix sorts first */
}

/* Under a created (or type-changed) directory, the directory's one move
 * brings everything below it: nothing below needs its own operation. One
 * binary search per parent of path: O(depth x log n), not a scan of the
 * change set (which made apply quadratic). */
static bool covered(const struct dryrun_dir *d, const char *path)
{
	for (const char *slash = strchr(path, '/'); slash && d->n_new_dirs; slash = strchr(slash + 1, '/')) {
		struct cover_key k = { path, (size_t)(slash - path) };
		if (bsearch(&k, d->new_dirs, d->n_new_dirs, sizeof(*d->new_dirs), compare_prefix))
			return true;
	}
	return false;
}

/* An operation {"op": kind, key: value, ...} (NULL-terminated pairs). The
 * values are paths, kept as their exact bytes (json_pack would refuse one
 * that is not UTF-8); the journal encodes them (changeset_encode_bytes). */
static json_t *op_new(const char *kind, ...)
{
	json_t *op = json_object();
	va_list ap;
	const char *key;

	if (!op || json_object_set_new(op, "op", json_string(kind)) < 0) {
		json_decref(op);
		return NULL;
	}
	va_start(ap, kind);
	while ((key = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		if (!value || json_object_set_new(op, key, json_stringn_nocheck(value, strlen(value))) < 0) {
			json_decref(op);
			op = NULL;
			break;
		}
	}
	va_end(ap);
	return op;
}

static int op_append(json_t *ops, json_t *op)
{
	return op && json_array_append_new(ops, op) == 0 ? 0 : -ENOMEM;
}

/* Deepest first, and the workspace root last of all. */
/* Records in op the mode of dir_fd/path where the operation may lift the
 * owner's write bit on it (struct lift): a directory it moves (dirs_only),
 * or an object whose attributes it sets, that the owner cannot write. */
static json_t *op_note_mode(json_t *op, int dir_fd, const char *path, bool dirs_only)
{
	struct stat st;
	char mode[16];

	if (!op || stat_at(dir_fd, path, &st) < 0 || (st.st_mode & S_IWUSR) || S_ISLNK(st.st_mode) ||
	    (dirs_only && !S_ISDIR(st.st_mode)))
		return op;
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	if (json_object_set_new(op, "mode", json_string(mode)) < 0)
		return json_decref(op), NULL;
	return op;
}

static int compare_path_desc(const void *a, const void *b)
{
	const char *x = jsonutil_str(*(json_t *const *)a, "path"), *y = jsonutil_str(*(json_t *const *)b, "path");

	if (apply_is_root(x) || apply_is_root(y))
		return apply_is_root(x) - apply_is_root(y);
	return -strcmp(x, y);
}

/* The operations, in order: renames, then removals (old objects into
 * backup/), then creations parents first, then content swaps, then mode
 * changes deepest first (a directory made read-only last). */
static int plan_ops(struct dryrun_dir *d, json_t **ret_ops)
{
	cleanup_with(json_decrefp) json_t *ops = json_array();
	cleanup_with(json_decrefp) json_t *chmods = json_array();
	size_t i, backups = 0;
	json_t *c;
	int r = ops && chmods ? 0 : -ENOMEM;

	json_array_foreach(d->changes, i, c) { /* renames whose destination is not covered */
		if (r == 0 && !strcmp(jsonutil_str(c, "change"), "renamed") && !covered(d, jsonutil_str(c, "path")))
			r = op_append(ops, op_note_mode(op_new("rename", "from", jsonutil_str(c, "from"), "path",
								       jsonutil_str(c, "path"), NULL),
							d->ws_fd, jsonutil_str(c, "from"), true));
	}
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		const char *path = !strcmp(change, "renamed") ? jsonutil_str(c, "from") : jsonutil_str(c, "path");
		bool renamed_into_new_dir = !strcmp(change, "renamed") && covered(d, jsonutil_str(c, "path"));
		if (r < 0 || covered(d, path))
			continue;
		if (!strcmp(change, "deleted") || !strcmp(change, "type_changed") || renamed_into_new_dir) {
			char backup[64];
			snprintf(backup, sizeof(backup), "backup/%zu", backups++);
			r = op_append(ops, op_note_mode(op_new("backup", "path", path, "backup", backup, NULL),
							d->ws_fd, path, true));
		}
	}
	json_array_foreach(d->changes, i, c) { /* sorted by path: parents first */
		const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
		if (r < 0 || covered(d, path))
			continue;
		if (!strcmp(change, "created") || !strcmp(change, "type_changed")) {
			char staged[PATH_MAX];
			snprintf(staged, sizeof(staged), "upper/%s", path);
			r = op_append(ops, op_note_mode(op_new("create", "path", path, "staged", staged, NULL),
							d->fd, staged, true));
		}
	}
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
		if (r < 0 || strcmp(change, "modified") != 0)
			continue;
		char staged[PATH_MAX], backup[64];
		snprintf(staged, sizeof(staged), "upper/%s", path);
		snprintf(backup, sizeof(backup), "backup/%zu", backups++);
		struct stat st;
		if (stat_at(d->fd, staged, &st) < 0)
			return -ENOENT;
		json_t *op = op_new("exchange", "path", path, "staged", staged, "backup", backup, NULL);
		if (op && json_object_set_new(op, "new_ino", json_integer((json_int_t)st.st_ino)) < 0)
			op = (json_decref(op), NULL);
		r = op_append(ops, op);
	}
	/* Owners in place first: a chown clears set-id bits and file
	 * capabilities, so the attributes and modes are set after it. */
	json_array_foreach(d->changes, i, c) {
		json_t *op;
		if (r < 0 || !json_object_get(c, "old_uid") || !apply_is_meta(jsonutil_str(c, "change")))
			continue;
		op = op_new("chown", "path", jsonutil_str(c, "path"), NULL);
		if (op && (json_object_set(op, "uid", json_object_get(c, "uid")) < 0 ||
			   json_object_set(op, "gid", json_object_get(c, "gid")) < 0 ||
			   json_object_set(op, "old_uid", json_object_get(c, "old_uid")) < 0 ||
			   json_object_set(op, "old_gid", json_object_get(c, "old_gid")) < 0))
			op = (json_decref(op), NULL);
		r = op_append(ops, op);
	}
	/* Attributes in place, before any mode change (setting one needs
	 * write access to the object). */
	json_array_foreach(d->changes, i, c) {
		const char *change = jsonutil_str(c, "change");
		json_t *op;
		/* A created or modified object's `xattrs` came in with it; a
		 * meta change's unchanged ones are listed alone (version 4). */
		if (r < 0 || !json_object_get(c, "old_xattrs") || !apply_is_meta(change))
			continue;
		op = op_note_mode(op_new("xattrs", "path", jsonutil_str(c, "path"), NULL), d->ws_fd,
				  jsonutil_str(c, "path"), false);
		if (op && (json_object_set(op, "xattrs", json_object_get(c, "xattrs")) < 0 ||
			   json_object_set(op, "old_xattrs", json_object_get(c, "old_xattrs")) < 0))
			op = (json_decref(op), NULL);
		r = op_append(ops, op);
	}
	json_array_foreach(d->changes, i, c)
		if (r == 0 && !strcmp(jsonutil_str(c, "change"), "mode_changed"))
			r = op_append(chmods, op_new("chmod", "path", jsonutil_str(c, "path"), "mode",
						       jsonutil_str(c, "mode"), "old_mode",
						       jsonutil_str(c, "old_mode"), NULL));
	if (r == 0)
		r = jsonutil_array_sort(chmods, compare_path_desc);
	json_array_foreach(chmods, i, c)
		if (r == 0)
			r = json_array_append(ops, c) == 0 ? 0 : -ENOMEM;
	if (r < 0)
		return r;
	*ret_ops = TAKE_PTR(ops);
	return 0;
}

/* ---- doing and undoing one operation ---------------------------------------- */

static int chmod_at(int dir_fd, const char *path, mode_t mode)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	/* fchmodat() has no AT_SYMLINK_NOFOLLOW on Linux; the change set only
	 * holds mode changes of files and directories. */
	cleanup_close int target = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return -errno;
	return mode_set_fd(target, mode);
}

/* The object itself, never a symlink's target. */
static int chown_at(int dir_fd, const char *path, uid_t uid, gid_t gid)
{
	const char *name;
	cleanup_close int fd = fd_open_parent(dir_fd, path, O_PATH, &name);

	if (fd < 0)
		return fd;
	return fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int op_do(struct dryrun_dir *d, json_t *op)
{
	const char *kind = jsonutil_str(op, "op"), *path = jsonutil_str(op, "path");

	if (!strcmp(kind, "rename"))
		return move_lifted(d->ws_fd, jsonutil_str(op, "from"), d->ws_fd, path, RENAME_NOREPLACE);
	if (!strcmp(kind, "backup"))
		return move_lifted(d->ws_fd, path, d->fd, jsonutil_str(op, "backup"), RENAME_NOREPLACE);
	if (!strcmp(kind, "chmod"))
		return chmod_at(d->ws_fd, path, parse_mode(jsonutil_str(op, "mode")));
	if (!strcmp(kind, "xattrs"))
		return xattrs_set_at(d->ws_fd, path, d->xattrs, json_object_get(op, "xattrs"));
	if (!strcmp(kind, "chown"))
		return chown_at(d->ws_fd, path, apply_id(op, "uid"), apply_id(op, "gid"));
	const char *staged_name;
	cleanup_close int staged_dir = fd_open_parent(d->fd, jsonutil_str(op, "staged"), O_PATH,
						      &staged_name);
	if (staged_dir < 0)
		return staged_dir;
	strip_overlay_xattrs(staged_dir, staged_name, 0);
	if (!strcmp(kind, "create"))
		return move_lifted(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path, RENAME_NOREPLACE);
	/* exchange: the new object in, the old one out to the backup */
	int r = move_at(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path, RENAME_EXCHANGE);
	if (r == 0)
		r = move_at(d->fd, jsonutil_str(op, "staged"), d->fd, jsonutil_str(op, "backup"), RENAME_NOREPLACE);
	return r;
}

static bool exists_at(int dir_fd, const char *path, struct stat *st)
{
	struct stat ignored;

	return stat_at(dir_fd, path, st ? st : &ignored) == 0;
}

/* Undo by inspection: each step checks whether it happened, so an undo of
 * an operation that never ran, or ran halfway, is right too. */
static int op_undo(struct dryrun_dir *d, json_t *op)
{
	const char *kind = jsonutil_str(op, "op"), *path = jsonutil_str(op, "path");
	struct stat st;

	int r = 0;

	if (!strcmp(kind, "rename")) {
		if (exists_at(d->ws_fd, path, NULL) && !exists_at(d->ws_fd, jsonutil_str(op, "from"), NULL)) {
			r = lift_repair(d->ws_fd, path, op);
			if (r == 0)
				r = move_lifted(d->ws_fd, path, d->ws_fd, jsonutil_str(op, "from"), RENAME_NOREPLACE);
		}
		return r < 0 ? r : lift_repair(d->ws_fd, jsonutil_str(op, "from"), op);
	}
	if (!strcmp(kind, "backup")) {
		if (exists_at(d->fd, jsonutil_str(op, "backup"), NULL)) {
			r = lift_repair(d->fd, jsonutil_str(op, "backup"), op);
			if (r == 0)
				r = move_lifted(d->fd, jsonutil_str(op, "backup"), d->ws_fd, path, RENAME_NOREPLACE);
		}
		return r < 0 ? r : lift_repair(d->ws_fd, path, op);
	}
	if (!strcmp(kind, "chmod"))
		return exists_at(d->ws_fd, path, NULL)
			       ? chmod_at(d->ws_fd, path, parse_mode(jsonutil_str(op, "old_mode")))
			       : 0;
	if (!strcmp(kind, "xattrs")) {
		if (!exists_at(d->ws_fd, path, NULL))
			return 0;
		r = lift_repair(d->ws_fd, path, op);
		return r < 0 ? r : xattrs_set_at(d->ws_fd, path, d->xattrs, json_object_get(op, "old_xattrs"));
	}
	if (!strcmp(kind, "chown")) {
		if (!exists_at(d->ws_fd, path, &st))
			return 0;
		r = chown_at(d->ws_fd, path, apply_id(op, "old_uid"), apply_id(op, "old_gid"));
		/* The chown back clears set-id bits: the mode before it (the
		 * later ops already undone) is the workspace's. */
		if (r == 0 && !S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)))
			r = chmod_at(d->ws_fd, path, st.st_mode & 07777);
		return r;
	}
	if (!strcmp(kind, "create")) {
		if (!exists_at(d->fd, jsonutil_str(op, "staged"), NULL) && exists_at(d->ws_fd, path, NULL)) {
			r = lift_repair(d->ws_fd, path, op);
			if (r == 0)
				r = move_lifted(d->ws_fd, path, d->fd, jsonutil_str(op, "staged"), RENAME_NOREPLACE);
		}
		return r < 0 ? r : lift_repair(d->fd, jsonutil_str(op, "staged"), op);
	}
	/* exchange: bring the old object back to staged, then swap again */
	if (exists_at(d->fd, jsonutil_str(op, "backup"), NULL))
		r = move_at(d->fd, jsonutil_str(op, "backup"), d->fd, jsonutil_str(op, "staged"), RENAME_NOREPLACE);
	if (r == 0 && exists_at(d->ws_fd, path, &st) &&
	    (json_int_t)st.st_ino == json_integer_value(json_object_get(op, "new_ino")))
		r = move_at(d->fd, jsonutil_str(op, "staged"), d->ws_fd, path, RENAME_EXCHANGE);
	return r;
}

/* ---- the journal ------------------------------------------------------------------ */

static int journal_append(int dir_fd, const char *text, struct error *err)
{
	cleanup_close int fd = openat(dir_fd, "journal", O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return error_set_errno(err, errno, "open the journal");
	int r = fd_write_all(fd, text, strlen(text));
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

static int journal_write(struct dryrun_dir *d, json_t *ops, struct error *err)
{
	cleanup_with(json_decrefp) json_t *head = json_pack(
		"{s:s, s:I, s:s, s:I}", "schema", JOURNAL_SCHEMA, "dryrun", (json_int_t)d->id,
		"workspace", d->workspace, "started_ns", (json_int_t)clock_realtime_ns());
	cleanup_free char *first = head ? jsonutil_dump_line(head) : NULL;
	if (!first)
		return error_set(err, ENOMEM, "out of memory");
	if (faccessat(d->fd, "journal", F_OK, 0) == 0)
		(void)renameat(d->fd, "journal", d->fd, "journal.previous");
	int fd = openat(d->fd, "journal", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "create the journal");
	int r = fd_write_all(fd, first, strlen(first));
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		json_t *encoded = changeset_encode_bytes(op);
		cleanup_free char *line = encoded ? jsonutil_dump_line(encoded) : NULL;
		json_decref(encoded);
		if (r == 0)
			r = line ? fd_write_all(fd, line, strlen(line)) : -ENOMEM;
	}
	/* One sync for the whole journal, before the first operation. */
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && fsync(d->fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "write the journal") : 0;
}

/* The operations of the journal, and its mark ("" when there is none). */
static int journal_read(struct dryrun_dir *d, json_t **ret_ops, char *mark, size_t mark_size,
			struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(d->fd, "journal", JOURNAL_MAX, &text, &n, err);
	if (r < 0)
		return r;
	return apply_parse_journal(text, ret_ops, mark, mark_size, err);
}

int apply_parse_journal(char *text, json_t **ret_ops, char *mark, size_t mark_size,
			struct error *err)
{
	static const char *const kinds[] = { "rename", "backup", "create", "exchange", "chmod",
					     "xattrs", "chown", NULL };
	cleanup_with(json_decrefp) json_t *ops = json_array();
	if (!ops)
		return error_set(err, ENOMEM, "out of memory");
	mark[0] = '\0';
	char *save = NULL;
	bool first = true, ok_owner;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		if (!o)
			continue; /* a torn last line: the operation it names never ran */
		if (first) {
			first = false;
			json_decref(o);
			continue;
		}
		if (jsonutil_str(o, "mark")) {
			snprintf(mark, mark_size, "%s", jsonutil_str(o, "mark"));
			json_decref(o);
		} else if (json_is_object(o) && apply_one_of(jsonutil_str(o, "op"), kinds)) {
			/* An operation apply did not write is no operation to undo:
			 * the journal is damaged. */
			const char *kind = jsonutil_str(o, "op");
			bool meta = !strcmp(kind, "chmod") || !strcmp(kind, "xattrs") || !strcmp(kind, "chown");
			ok_owner = strcmp(kind, "chown") != 0 || apply_owner_valid(o, true);
			bool ok = changeset_decode_bytes(o) == 0; /* replaces "path": read it after */
			const char *path = jsonutil_str(o, "path");
			ok = ok && (apply_path_is_clean(path) || (meta && apply_is_root(path)));
			if (ok && !strcmp(kind, "rename"))
				ok = apply_path_is_clean(jsonutil_str(o, "from"));
			if (ok && (!strcmp(kind, "backup") || !strcmp(kind, "exchange")))
				ok = apply_path_is_clean(jsonutil_str(o, "backup"));
			if (ok && (!strcmp(kind, "create") || !strcmp(kind, "exchange")))
				ok = apply_path_is_clean(jsonutil_str(o, "staged"));
			if (ok && !strcmp(kind, "chmod"))
				ok = jsonutil_str(o, "mode") && jsonutil_str(o, "old_mode");
			else if (ok && json_object_get(o, "mode")) /* a lift's mode (struct lift) */
				ok = jsonutil_str(o, "mode") != NULL;
			if (ok && !strcmp(kind, "xattrs"))
				ok = apply_meta_valid(o, true, CHANGESET_XATTRS_ALL, false); /* names checked when planned */
			if (!ok || !ok_owner) {
				json_decref(o);
				return error_set(err, EINVAL, "the journal is damaged");
			}
			if (json_array_append_new(ops, o) < 0)
				return error_set(err, ENOMEM, "out of memory");
		} else {
			json_decref(o);
		}
	}
	*ret_ops = TAKE_PTR(ops);
	return 0;
}

static int undo_all(struct dryrun_dir *d, json_t *ops, struct apply_outcome *ret,
		    struct error *err)
{
	for (size_t i = json_array_size(ops); i-- > 0;) {
		int r = op_undo(d, json_array_get(ops, i));
		if (r < 0)
			return error_set_errno(err, -r, "undo %s of %s", jsonutil_str(json_array_get(ops, i), "op"),
					       jsonutil_str(json_array_get(ops, i), "path"));
		ret->ops++;
	}
	if (syncfs(d->ws_fd) < 0)
		return error_set_errno(err, errno, "sync the workspace");
	return journal_append(d->fd, "{\"mark\":\"rolled_back\"}\n", err);
}

/* ---- the commands -------------------------------------------------------------- */

/* Finishes what a crash left of a locked dry run's apply or rollback (the
 * process that ran it is gone: it held the lock), from the journal's last
 * mark: none, an apply that never reached "committed", is rolled back;
 * "rolling_back", a rollback cut short, is finished; and a state that the
 * crash kept from following its mark ("committed" but not "applied",
 * "rolled_back" but still "applied") is committed now. */
static int recover_locked(struct dryrun_dir *d, bool *ret_recovered, struct error *err)
{
	cleanup_with(json_decrefp) json_t *ops = NULL;
	char mark[32];
	struct apply_outcome ignored = { 0 };

	*ret_recovered = false;
	int r = journal_read(d, &ops, mark, sizeof(mark), err);
	if (r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0;
	}
	if (r < 0)
		return r;
	if (!strcmp(mark, "committed") && strcmp(d->state, "applied") != 0)
		r = dryrun_set_state(d, "applied", err);
	else if (!strcmp(mark, "rolled_back") && !strcmp(d->state, "applied"))
		r = dryrun_set_state(d, "rolled_back", err);
	if (r < 0 || (mark[0] && strcmp(mark, "rolling_back") != 0))
		return r < 0 ? error_prefix(err, "recover dry run %llu", (unsigned long long)d->id) : 0;
	if (d->ws_fd < 0)
		return 0; /* not the workspace it ran on: left for when it is back */
	if (mark[0]) {
		/* Each undo step checks the tree, so what the cut rollback
		 * already undid is skipped. */
		r = undo_all(d, ops, &ignored, err);
		if (r == 0)
			r = dryrun_set_state(d, "rolled_back", err);
		*ret_recovered = r == 0;
		return r < 0 ? error_prefix(err, "finish the rollback of dry run %llu",
					    (unsigned long long)d->id) : 0;
	}
	/* An apply that never reached "committed": back to entirely old. */
	r = undo_all(d, ops, &ignored, err);
	if (r == 0)
		r = dryrun_set_state(d, "pending", err);
	*ret_recovered = r == 0;
	return r < 0 ? error_prefix(err, "recover dry run %llu", (unsigned long long)d->id) : 0;
}

static int recover_one(struct store *store, uint64_t id, bool *ret_recovered, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };

	*ret_recovered = false;
	int r = dryrun_open(store, id, DRYRUN_LOCK_TRY, &d, err);
	if (r == -EAGAIN || r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0; /* in use by a live process, or gone */
	}
	return r < 0 ? r : recover_locked(&d, ret_recovered, err);
}

/* The state directory's dryruns/, to list; *ret is NULL when there is none. */
static int dryruns_open(struct store *store, DIR **ret, struct error *err)
{
	int fd = openat(store->dir_fd, "dryruns", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*ret = NULL;
	if (fd < 0)
		return errno == ENOENT ? 0 : error_set_errno(err, errno, "open %s/dryruns", store->path);
	*ret = fdopendir(fd);
	if (!*ret) {
		int e = errno;
		close(fd);
		return error_set_errno(err, e, "read %s/dryruns", store->path);
	}
	return 0;
}

int apply_recover(struct store *store, size_t *ret_recovered, struct error *err)
{
	DIR *dir = NULL;
	*ret_recovered = 0;
	int r = dryruns_open(store, &dir, err);
	if (r < 0 || !dir)
		return r;
	/* The recovery lock: one recovery pass at a time. It only ever tries
	 * a dry run's lock, never waits for one, so it cannot deadlock with a
	 * command that holds a dry run's lock and then recovers. */
	if (flock(dirfd(dir), LOCK_EX) < 0) {
		r = error_set_errno(err, errno, "lock %s/dryruns", store->path);
		closedir(dir);
		return r;
	}
	struct dirent *de;
	while (r == 0 && (de = readdir(dir))) {
		char journal[PATH_MAX];
		uint64_t id = strtoull(de->d_name, NULL, 10);
		snprintf(journal, sizeof(journal), "%s/journal", de->d_name);
		if (id == 0 || faccessat(dirfd(dir), journal, F_OK, 0) < 0)
			continue;
		bool recovered;
		r = recover_one(store, id, &recovered, err);
		*ret_recovered += recovered;
	}
	closedir(dir);
	return r;
}

/* Every command on a dry run starts by finishing what a crash left. */
static int dryrun_begin(struct store *store, uint64_t id, struct dryrun_dir *d,
			struct error *err)
{
	size_t recovered;
	bool mine;
	int r = apply_recover(store, &recovered, err);

	if (r == 0)
		r = dryrun_open(store, id, DRYRUN_LOCK_WAIT, d, err);
	/* A crash of this dry run's apply since the pass above. */
	return r < 0 ? r : recover_locked(d, &mine, err);
}

/* Apply puts what the change set says into the real tree: one the ledger
 * does not back (rewritten after the dry run) is refused. */
static int apply_changeset_backed(struct store *store, uint64_t id, struct error *err)
{
	char path[64], id_text[24], what[64];

	snprintf(path, sizeof(path), "dryruns/%llu/changeset.json", (unsigned long long)id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	snprintf(what, sizeof(what), "the change set of dry run %llu", (unsigned long long)id);
	return ledger_require(store, LEDGER_DRYRUN, id_text, path, EPERM, what, NULL,
			      "refusing to apply it", err);
}

static int apply_changes_checked(struct store *store, uint64_t id, unsigned flags,
				 const char *changeset_sha256, struct apply_outcome *ret,
				 struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	cleanup_with(json_decrefp) json_t *ops = NULL;

	*ret = (struct apply_outcome){ 0 };
	int r = dryrun_begin(store, id, &d, err);
	if (r == 0)
		r = apply_changeset_backed(store, id, err);
	if (r < 0)
		return r;
	/* A permit's dry run is applied by its permit, after its checks. */
	if (!changeset_sha256 && faccessat(d.fd, "permit", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return error_set(err, EPERM,
				 "dry run %llu belongs to a permit: airlock permit exec applies it, after its checks",
				 (unsigned long long)id);
	/* Checked under the lock: what is applied is what was reviewed. */
	if (changeset_sha256 && strcmp(changeset_sha256, d.changeset_sha256) != 0)
		return error_set(err, EPERM,
				 "dry run %llu: its change set is not the one that was reviewed (sha256 %.16s..., reviewed %.16s...); nothing was changed",
				 (unsigned long long)id, d.changeset_sha256, changeset_sha256);
	if (d.ws_fd < 0)
		return conflict(ret, err, "%s", d.ws_mismatch);
	switch (d.verdict) {
	case DRYRUN_VERDICT_DRY_RUN_OK:
		break;
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
		if (!(flags & APPLY_ALLOW_OUTSIDE_WRITES))
			return error_set(err, EPERM,
					 "dry run %llu's verdict is OUTSIDE_WRITE: the command attempted writes outside the workspace (see its receipt); apply --allow-outside-writes applies the rest anyway",
					 (unsigned long long)id);
		break;
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case DRYRUN_VERDICT_NO_EFFECT:
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
		return error_set(err, EPERM, "dry run %llu's verdict is %s: only DRY_RUN_OK is applied",
				 (unsigned long long)id, dryrun_verdict_name(d.verdict));
	case DRYRUN_VERDICT_NONE:
	case _DRYRUN_VERDICT_MAX:
		/* apply_parse_changeset() refused the change set already */
		return error_set(err, EINVAL, "dry run %llu has no known verdict",
				 (unsigned long long)id);
	}
	if (strcmp(d.state, "pending") != 0 && strcmp(d.state, "rolled_back") != 0)
		return error_set(err, EPERM, "dry run %llu is %s", (unsigned long long)id, d.state);
	struct stat ws, up;
	if (fstat(d.ws_fd, &ws) < 0 || fstatat(d.fd, "upper", &up, 0) < 0)
		return error_set_errno(err, errno, "dry run %llu: stat its snapshot", (unsigned long long)id);
	if (ws.st_dev != up.st_dev)
		return error_set(err, EXDEV,
				 "the state directory and the workspace are on different file systems: applying by copy is not built yet");

	size_t i;
	json_t *c;
	json_array_foreach(d.changes, i, c) {
		if (json_object_get(c, "uid") && geteuid() != 0 &&
		    (apply_id(c, "uid") != geteuid() || apply_id(c, "gid") != getegid()))
			return error_set(err, EPERM,
					 "dry run %llu: %s is to be owned by %u:%u, which only root can give (the dry run ran as root); nothing was changed",
					 (unsigned long long)id, jsonutil_str(c, "path"),
					 (unsigned)apply_id(c, "uid"), (unsigned)apply_id(c, "gid"));
	}
	json_array_foreach(d.changes, i, c) {
		const char *why = staged_privilege(&d, c);
		if (why)
			return error_set(err, EPERM, "dry run %llu: %s (%s): apply never installs a set-id file, a file capability or a device node",
					 (unsigned long long)id, jsonutil_str(c, "path"), why);
	}
	if (cover_build(&d) < 0)
		return error_set(err, ENOMEM, "out of memory");
	/* A new directory moves whole: it must hold what the change set lists
	 * below it, nothing more. */
	size_t listed_below = 0;
	long staged_below = 0;
	json_array_foreach(d.changes, i, c) {
		char why[600];
		const char *change = jsonutil_str(c, "change"), *path = jsonutil_str(c, "path");
		if (!staged_matches(&d, c, why, sizeof(why)))
			return error_set(err, EPERM, "dry run %llu: %s; nothing was changed",
					 (unsigned long long)id, why);
		if (covered(&d, path)) {
			listed_below++;
		} else if (!strcmp(jsonutil_str(c, "type"), "dir") &&
			   (!strcmp(change, "created") || !strcmp(change, "type_changed"))) {
			char staged[PATH_MAX];
			snprintf(staged, sizeof(staged), "upper/%s", path);
			staged_below += MAX(count_entries_at(d.fd, staged), 0L);
		}
	}
	if ((long)listed_below != staged_below)
		return error_set(err, EPERM,
				 "dry run %llu: its new directories hold %ld entries, the change set lists %zu: the staged object differs from the change set (edited after the dry run); nothing was changed",
				 (unsigned long long)id, staged_below, listed_below);
	/* Optimistic concurrency: everything the dry run saw must still be so. */
	json_array_foreach(d.changes, i, c) {
		char why[600];
		const char *change = jsonutil_str(c, "change");
		if (!strcmp(change, "renamed")) {
			json_t *src = json_pack("{s:s, s:s, s:O?}", "change", "deleted", "type", "file",
						"old_sha256", json_object_get(c, "sha256"));
			if (src && json_object_set(src, "path", json_object_get(c, "from")) < 0)
				src = (json_decref(src), NULL);
			bool ok = src && matches(&d, src, jsonutil_str(c, "from"), false, why, sizeof(why));
			json_decref(src);
			if (!ok)
				return conflict(ret, err, "%s", why);
		}
		if (!covered(&d, jsonutil_str(c, "path")) &&
		    !matches(&d, c, jsonutil_str(c, "path"), false, why, sizeof(why)))
			return conflict(ret, err, "%s", why);
	}
	r = plan_ops(&d, &ops);
	if (r < 0)
		return error_set(err, -r, "dry run %llu: its snapshot is incomplete", (unsigned long long)id);
	if (mkdirat(d.fd, "backup", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the backup directory");
	r = journal_write(&d, ops, err);
	if (r < 0)
		return r;
	json_t *op;
	json_array_foreach(ops, i, op) {
		FAULT_POINT("apply.operation"); /* a crash between two operations */
		r = op_do(&d, op);
		if (r < 0) {
			struct error undo_err = { 0 };
			struct apply_outcome ignored = { 0 };
			error_set_errno(err, -r, "%s %s", jsonutil_str(op, "op"), jsonutil_str(op, "path"));
			if (undo_all(&d, ops, &ignored, &undo_err) < 0)
				return error_prefix(err, "apply %llu stopped, and undoing it failed too (%s)",
						    (unsigned long long)id, undo_err.msg);
			return error_prefix(err, "apply %llu stopped and was undone", (unsigned long long)id);
		}
		ret->ops++;
	}
	if (syncfs(d.ws_fd) < 0)
		return error_set_errno(err, errno, "sync the workspace");
	r = journal_append(d.fd, "{\"mark\":\"committed\"}\n", err);
	if (r == 0)
		r = dryrun_set_state(&d, "applied", err);
	return r;
}

int apply_changes(struct store *store, uint64_t id, unsigned flags, struct apply_outcome *ret,
		  struct error *err)
{
	return apply_changes_checked(store, id, flags, NULL, ret, err);
}

int apply_changes_reviewed(struct store *store, uint64_t id, unsigned flags,
			   const char *changeset_sha256, struct apply_outcome *ret,
			   struct error *err)
{
	return apply_changes_checked(store, id, flags, changeset_sha256, ret, err);
}

int apply_state(struct store *store, uint64_t id, char *ret, size_t size, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	int r = dryrun_begin(store, id, &d, err);

	if (r == 0)
		snprintf(ret, size, "%s", d.state);
	return r;
}

int apply_rollback(struct store *store, uint64_t id, struct apply_outcome *ret,
		   struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	cleanup_with(json_decrefp) json_t *ops = NULL;
	char mark[32];

	*ret = (struct apply_outcome){ 0 };
	int r = dryrun_begin(store, id, &d, err);
	if (r < 0)
		return r;
	if (strcmp(d.state, "applied") != 0)
		return error_set(err, EPERM, "dry run %llu is %s, not applied", (unsigned long long)id,
				 d.state);
	if (d.ws_fd < 0)
		return conflict(ret, err, "%s", d.ws_mismatch);
	r = journal_read(&d, &ops, mark, sizeof(mark), err);
	if (r < 0)
		return r;
	/* Nothing is put back over a path someone changed after the apply,
	 * including below a directory the apply created. */
	size_t i;
	json_t *c;
	json_array_foreach(d.changes, i, c) {
		char why[600];
		if (!matches(&d, c, jsonutil_str(c, "path"), true, why, sizeof(why)))
			return conflict(ret, err, "%s", why);
	}
	/* From here a crash leaves a tree part undone, which no longer matches
	 * the apply: recovery finishes the rollback (recover_locked). */
	r = journal_append(d.fd, "{\"mark\":\"rolling_back\"}\n", err);
	if (r == 0)
		r = undo_all(&d, ops, ret, err);
	if (r == 0)
		r = dryrun_set_state(&d, "rolled_back", err);
	return r;
}

/* A discard entry names the dry run's directory (the digest of nothing):
 * `ledger verify` then expects its files gone. */
static int apply_commit_discard(struct store *store, uint64_t id, struct error *err)
{
	char path[64], id_text[24], hex[SHA256_HEX_SIZE];

	snprintf(path, sizeof(path), "dryruns/%llu", (unsigned long long)id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	sha256_hex("", 0, hex);
	return ledger_append(store, LEDGER_DISCARD, id_text, path, hex, true, NULL, err);
}

int apply_discard(struct store *store, uint64_t id, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	size_t recovered;
	char rel[64];

	int r = apply_recover(store, &recovered, err);
	if (r < 0)
		return r;
	snprintf(rel, sizeof(rel), "dryruns/%llu", (unsigned long long)id);
	r = dryrun_open(store, id, DRYRUN_LOCK_WAIT, &d, err);
	if (r == -ENOENT && (d.fd < 0 || faccessat(store->dir_fd, rel, F_OK, 0) < 0))
		return r;
	if (r == 0 && strcmp(d.state, "applied") == 0)
		return error_set(err, EPERM, "dry run %llu is applied: roll it back first",
				 (unsigned long long)id);
	/* Recorded, then removed with its lock held (d is released after). */
	r = apply_commit_discard(store, id, err);
	if (r < 0)
		return r;
	r = remove_tree_at(store->dir_fd, rel);
	return r < 0 ? error_set_errno(err, -r, "remove %s/%s", store->path, rel) : 0;
}

int apply_gc(struct store *store, uint64_t older_than_ms, bool include_applied,
	     size_t *ret_removed, struct error *err)
{
	size_t recovered;
	*ret_removed = 0;
	int r = apply_recover(store, &recovered, err);
	if (r < 0)
		return r;
	DIR *dir = NULL;
	r = dryruns_open(store, &dir, err);
	if (r < 0 || !dir)
		return r;
	uint64_t now_ms = clock_realtime_ns() / 1000000;
	struct dirent *de;
	while (r == 0 && (de = readdir(dir))) {
		uint64_t id = strtoull(de->d_name, NULL, 10);
		struct stat st;
		if (id == 0 || fstatat(dirfd(dir), de->d_name, &st, 0) < 0)
			continue;
		uint64_t age_ms = now_ms - (uint64_t)st.st_mtim.tv_sec * 1000;
		char state[32] = "pending";
		cleanup_free char *text = NULL;
		size_t n;
		struct error ignored;
		/* Its lock, or leave it: a dry run in use is not garbage. */
		cleanup_close int fd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		if (file_read_capped(fd, "state", 64, &text, &n, &ignored) == 0)
			snprintf(state, sizeof(state), "%.*s", (int)strcspn(text, "\n"), text);
		if (age_ms < older_than_ms || (!include_applied && !strcmp(state, "applied")))
			continue;
		int q = apply_commit_discard(store, id, err);
		if (q < 0) {
			r = q;
			break;
		}
		q = remove_tree_at(dirfd(dir), de->d_name);
		if (q < 0)
			r = error_set_errno(err, -q, "remove dry run %s", de->d_name);
		else
			++*ret_removed;
	}
	closedir(dir);
	return r;
}

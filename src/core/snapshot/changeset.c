/* SPDX-License-Identifier: MIT */
#include "core/snapshot/changeset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/store/jsonutil.h"

struct walk {
	json_t *changes;
	struct error *err;
	const char *refused; /* the current upper entry's changeset_privilege() */
	bool owners; /* every id was mapped (a dry run as root): owners are carried */
};

__attribute__((noinline)) const char *changeset_privilege(int dir_fd, const char *name,
							  const struct stat *st)
{
	/* A device node (never a whiteout: those are deletions) opens the
	 * device it names; no command of the quarantine may add one. */
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "device";
	if (st->st_mode & S_ISUID)
		return "setuid";
	if ((st->st_mode & S_ISGID) && !S_ISDIR(st->st_mode))
		return "setgid";
	if (!S_ISREG(st->st_mode))
		return NULL;
	/* lgetxattr by the descriptor's path: no open, so a file of mode 000
	 * is read too, and a symlink never followed. */
	char path[PATH_MAX + 32];
	if ((size_t)snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name) >= sizeof(path))
		return "capability"; /* cannot look: refuse rather than guess */
	return lgetxattr(path, "security.capability", NULL, 0) >= 0 ? "capability" : NULL;
}

const char *changeset_type_name(mode_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "dir";
	if (S_ISLNK(mode))
		return "symlink";
	if (S_ISFIFO(mode))
		return "fifo";
	if (S_ISSOCK(mode))
		return "socket";
	return "other";
}

static json_t *mode_string(mode_t mode)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%04o", (unsigned)(mode & 07777));
	return json_string(buf);
}

/* SHA-256 of a regular file, read through dir_fd/name without following
 * a symlink; the hex digest goes into hex. */
static int hash_file(int dir_fd, const char *name, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? -errno : sha256_fd_hex(fd, hex);
}

bool changeset_xattr_is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* The version a change set's schema names: 1 for none (the oldest wrote
 * none), 0 for one apply does not know (which is refused before these
 * are asked; they answer for it as for the newest). */
static int changeset_version(const char *schema)
{
	static const char *const known[] = { "airlock.changeset/1", "airlock.changeset/2",
					     "airlock.changeset/3", CHANGESET_SCHEMA };

	if (!schema)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		if (!strcmp(schema, known[i]))
			return (int)i + 1;
	return 0;
}

enum changeset_xattrs changeset_xattrs_of(const char *schema)
{
	int v = changeset_version(schema);

	return v == 1 || v == 2 ? CHANGESET_XATTRS_USER : CHANGESET_XATTRS_ALL;
}

bool changeset_schema_known(const char *schema)
{
	return changeset_version(schema) != 0;
}

bool changeset_carries_identity(const char *schema)
{
	int v = changeset_version(schema);

	return v == 0 || v >= 4;
}

bool changeset_xattr_carried(const char *name, enum changeset_xattrs which)
{
	if (which == CHANGESET_XATTRS_ALL && changeset_xattr_is_acl(name))
		return true;
	return strncmp(name, "user.", 5) == 0 && strncmp(name, "user.overlay.", 13) != 0;
}

static int compare_xattr_names(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

__attribute__((noinline)) int changeset_read_xattrs(int dir_fd, const char *name,
						    enum changeset_xattrs which, json_t **ret)
{
	char path[PATH_MAX + 32];
	cleanup_with(json_decrefp) json_t *list = json_array();

	if (!list)
		return -ENOMEM;
	/* name "": dir_fd is the object (an O_PATH descriptor), reached
	 * through its magic link, which is followed; else name is never. */
	bool self = !*name;
	if ((size_t)snprintf(path, sizeof(path), self ? "/proc/self/fd/%d" : "/proc/self/fd/%d/%s",
			     dir_fd, name) >= sizeof(path))
		return -ENAMETOOLONG;
	ssize_t (*list_fn)(const char *, char *, size_t) = self ? listxattr : llistxattr;
	ssize_t (*get_fn)(const char *, const char *, void *, size_t) = self ? getxattr : lgetxattr;
	/* The list may grow between the two calls: retry until it fits. */
	cleanup_free char *names = NULL;
	ssize_t n;
	for (;;) {
		n = list_fn(path, NULL, 0);
		if (n < 0)
			return errno == ENOTSUP ? (*ret = TAKE_PTR(list), 0) : -errno;
		free(names);
		names = malloc((size_t)n + 1);
		if (!names)
			return -ENOMEM;
		n = n == 0 ? 0 : list_fn(path, names, (size_t)n);
		if (n >= 0)
			break;
		if (errno != ERANGE)
			return -errno;
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *key = names + i;
		if (!changeset_xattr_carried(key, which))
			continue;
		ssize_t vn = get_fn(path, key, NULL, 0);
		if (vn < 0 && errno == ENODATA)
			continue; /* removed since the list */
		if (vn < 0)
			return -errno;
		cleanup_free char *value = malloc((size_t)vn + 1);
		if (!value)
			return -ENOMEM;
		vn = get_fn(path, key, value, (size_t)vn);
		if (vn < 0)
			return -errno;
		cleanup_free char *b64 = base64_encode(value, (size_t)vn);
		json_t *x = json_object();
		if (!b64 || !x || json_array_append_new(list, x) < 0 ||
		    json_object_set_new(x, "name", json_stringn_nocheck(key, strlen(key))) < 0 ||
		    json_object_set_new(x, "base64", json_string(b64)) < 0)
			return -ENOMEM;
	}
	if (jsonutil_array_sort(list, compare_xattr_names) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(list);
	return 0;
}

static char *join_rel(const char *rel, const char *name)
{
	char *s = NULL;

	if (!*rel)
		return strdup(name);
	return asprintf(&s, "%s/%s", rel, name) < 0 ? NULL : s;
}

int changeset_set_bytes(json_t *obj, const char *key, const char *bytes)
{
	size_t n = strlen(bytes);
	char key_b64[64];

	if ((size_t)snprintf(key_b64, sizeof(key_b64), "%s_b64", key) >= sizeof(key_b64))
		return -EINVAL;
	if (utf8_is_valid(bytes, n))
		return json_object_set_new(obj, key, json_string(bytes)) < 0 ? -ENOMEM : 0;
	size_t clean_n;
	cleanup_free char *clean = utf8_sanitize(bytes, n, &clean_n);
	cleanup_free char *b64 = base64_encode(bytes, n);
	if (!clean || !b64 || json_object_set_new(obj, key, json_stringn(clean, clean_n)) < 0 ||
	    json_object_set_new(obj, key_b64, json_string(b64)) < 0)
		return -ENOMEM;
	return 0;
}

/* Each object of an array encoded (an attribute list's names); anything
 * else kept. */
static json_t *encode_array(json_t *list)
{
	cleanup_with(json_decrefp) json_t *copy = json_array();
	size_t i;
	json_t *v;

	if (!copy)
		return NULL;
	json_array_foreach(list, i, v) {
		json_t *e = json_is_object(v) ? changeset_encode_bytes(v) : json_incref(v);
		if (!e || json_array_append_new(copy, e) < 0)
			return NULL;
	}
	return TAKE_PTR(copy);
}

json_t *changeset_encode_bytes(json_t *obj)
{
	cleanup_with(json_decrefp) json_t *copy = json_object();
	const char *key;
	json_t *v;

	if (!copy)
		return NULL;
	json_object_foreach(obj, key, v) {
		int r;
		if (json_is_string(v))
			r = changeset_set_bytes(copy, key, json_string_value(v));
		else if (json_is_array(v))
			r = json_object_set_new(copy, key, encode_array(v));
		else
			r = json_object_set(copy, key, v);
		if (r < 0)
			return NULL;
	}
	return TAKE_PTR(copy);
}

int changeset_decode_bytes(json_t *obj)
{
	const char *key;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, key, v) {
		size_t kn = strlen(key), n, i;
		json_t *e;
		if (json_is_array(v)) {
			json_array_foreach(v, i, e)
				if (json_is_object(e) && changeset_decode_bytes(e) < 0)
					return -EINVAL;
			continue;
		}
		if (kn <= 4 || strcmp(key + kn - 4, "_b64") != 0)
			continue;
		if (!json_is_string(v))
			return -EINVAL;
		cleanup_free char *bytes = base64_decode(json_string_value(v), &n);
		if (!bytes || n == 0 || memchr(bytes, '\0', n))
			return -EINVAL;
		char plain[64];
		snprintf(plain, sizeof(plain), "%.*s", (int)(kn - 4), key);
		/* Not UTF-8 on purpose: the exact bytes, for system calls. */
		if (json_object_set_new(obj, plain, json_stringn_nocheck(bytes, n)) < 0)
			return -ENOMEM;
		json_object_del(obj, key);
	}
	return 0;
}

static int add_change(struct walk *w, const char *rel, const char *change, mode_t mode, json_t **ret)
{
	json_t *c = json_pack("{s:s, s:s}", "change", change, "type", changeset_type_name(mode));
	if (!c || json_array_append_new(w->changes, c) < 0 || changeset_set_bytes(c, "path", rel) < 0)
		return error_set(w->err, ENOMEM, "out of memory");
	if (w->refused && strcmp(change, "deleted") != 0) {
		json_object_set_new(c, "refused", json_string(w->refused));
		json_object_set_new(c, "mode", mode_string(mode));
	}
	if (ret)
		*ret = c;
	return 0;
}

/* Size and SHA-256 of a regular file, or a symlink's target, under the
 * keys of the new entry or (old) of the one it replaced. */
static __attribute__((noinline)) int describe(struct walk *w, int dir_fd, const char *name,
					      const struct stat *st, json_t *c, bool old)
{
	if (S_ISREG(st->st_mode)) {
		char hex[SHA256_HEX_SIZE];
		int r = hash_file(dir_fd, name, hex);
		if (r < 0)
			return error_set_errno(w->err, -r, "read %s from the %s", name,
					       old ? "workspace" : "snapshot");
		json_object_set_new(c, old ? "old_size" : "size",
				    json_integer((json_int_t)st->st_size));
		json_object_set_new(c, old ? "old_sha256" : "sha256", json_string(hex));
	} else if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir_fd, name, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			if (changeset_set_bytes(c, old ? "old_target" : "target", target) < 0)
				return error_set(w->err, ENOMEM, "out of memory");
		}
	}
	return 0;
}

static long count_entries_depth(int dir_fd, const char *name, int depth)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	long n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_type == DT_DIR) {
			long below = depth < CHANGESET_MAX_DEPTH
					     ? count_entries_depth(dirfd(d), de->d_name, depth + 1)
					     : -1;
			if (below < 0) {
				n = -1;
				break;
			}
			n += below;
		}
	}
	closedir(d);
	return n;
}

long changeset_count_entries(int dir_fd, const char *name)
{
	return count_entries_depth(dir_fd, name, 0);
}

static int walk_dir(struct walk *w, int upper_fd, int lower_fd, const char *rel, bool opaque,
		    int depth);

static int deleted(struct walk *w, int lower_fd, const char *name, const char *rel)
{
	struct stat lst;
	json_t *c;

	if (lower_fd < 0 || fstatat(lower_fd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* a whiteout over nothing: nothing was deleted */
	int r = add_change(w, rel, "deleted", lst.st_mode, &c);
	if (r == 0 && S_ISDIR(lst.st_mode))
		json_object_set_new(c, "entries",
				    json_integer(MAX(changeset_count_entries(lower_fd, name), 0L)));
	else if (r == 0)
		r = describe(w, lower_fd, name, &lst, c, true);
	return r;
}

static bool same_content(int upper_fd, int lower_fd, const char *name, const struct stat *ust,
			 const struct stat *lst, bool *ret_same, char new_hex[SHA256_HEX_SIZE],
			 char old_hex[SHA256_HEX_SIZE])
{
	if (hash_file(upper_fd, name, new_hex) < 0 || hash_file(lower_fd, name, old_hex) < 0)
		return false;
	*ret_same = ust->st_size == lst->st_size && strcmp(new_hex, old_hex) == 0;
	return true;
}

/* What changed of an object whose type and content did not: its mode
 * (not a symlink's: it has none) and its extended attributes (the carried
 * ones, changeset_xattr_carried). mode_changed when the mode differs
 * (with old_xattrs too when the attributes differ), else xattrs_changed.
 * Either entry carries the object's whole identity (changeset_identity):
 * mode, the whole attribute list `xattrs`, and a file's size and SHA-256
 * (hex, as read by the walk) or a symlink's target. */
static int meta_change_with(struct walk *w, int upper_fd, int lower_fd, const char *name,
			    const char *rel, const struct stat *ust, const struct stat *lst,
			    json_t *given, const char *hex)
{
	bool mode_differs = !S_ISLNK(ust->st_mode) && (ust->st_mode & 07777) != (lst->st_mode & 07777);
	/* The upper's root was given the workspace root's owner (as root:
	 * dryrun_copy_root()), so it compares like any directory. */
	bool owner_differs = w->owners && (ust->st_uid != lst->st_uid || ust->st_gid != lst->st_gid);
	cleanup_with(json_decrefp) json_t *now = json_incref(given);
	cleanup_with(json_decrefp) json_t *before = NULL;
	json_t *c;
	int r = now ? 0 : changeset_read_xattrs(upper_fd, name, CHANGESET_XATTRS_ALL, &now);

	if (r == 0)
		r = changeset_read_xattrs(lower_fd, name, CHANGESET_XATTRS_ALL, &before);
	if (r < 0)
		return error_set_errno(w->err, -r, "read the extended attributes of %s", rel);
	bool xattrs_differ = !json_equal(now, before);
	if (!mode_differs && !xattrs_differ && !owner_differs)
		return 0; /* copied up, unchanged */
	r = add_change(w, rel,
		       mode_differs    ? "mode_changed"
		       : owner_differs ? "owner_changed"
				       : "xattrs_changed",
		       ust->st_mode, &c);
	if (r == 0) {
		json_object_set_new(c, "mode", mode_string(ust->st_mode));
		if (mode_differs)
			json_object_set_new(c, "old_mode", mode_string(lst->st_mode));
	}
	if (r == 0 && owner_differs &&
	    (json_object_set_new(c, "uid", json_integer(ust->st_uid)) < 0 ||
	     json_object_set_new(c, "gid", json_integer(ust->st_gid)) < 0 ||
	     json_object_set_new(c, "old_uid", json_integer(lst->st_uid)) < 0 ||
	     json_object_set_new(c, "old_gid", json_integer(lst->st_gid)) < 0))
		r = error_set(w->err, ENOMEM, "out of memory");
	if (r == 0 && S_ISREG(ust->st_mode) && hex && *hex) {
		json_object_set_new(c, "size", json_integer((json_int_t)ust->st_size));
		json_object_set_new(c, "sha256", json_string(hex));
	} else if (r == 0 && S_ISLNK(ust->st_mode)) {
		r = describe(w, upper_fd, name, ust, c, false);
	}
	if (r == 0 &&
	    (json_object_set_new(c, "xattrs", encode_array(now)) < 0 ||
	     (xattrs_differ && json_object_set_new(c, "old_xattrs", encode_array(before)) < 0)))
		r = error_set(w->err, ENOMEM, "out of memory");
	return r;
}

static int meta_change(struct walk *w, int upper_fd, int lower_fd, const char *name, const char *rel,
		       const struct stat *ust, const struct stat *lst, const char *hex)
{
	return meta_change_with(w, upper_fd, lower_fd, name, rel, ust, lst, NULL, hex);
}

/* The upper root's carried attributes as the command left them. The dry
 * run gave the root owner access to read it (dryrun_settle()), and a chmod
 * rewrites an access ACL's owner, mask (or group) and other entries: when
 * the mode now differs from root_mode, the access ACL is read with
 * root_mode put back for the moment (which gives back exactly those
 * entries; reading a system.* attribute needs no access), the user.* ones
 * with the access. */
static int root_xattrs(int upper_fd, mode_t root_mode, json_t **ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *list = NULL;
	struct stat st;
	size_t i;
	json_t *x;
	int r = changeset_read_xattrs(upper_fd, ".", CHANGESET_XATTRS_ALL, &list);

	if (r < 0)
		return error_set_errno(err, -r, "read the extended attributes of the snapshot's root");
	if (fstat(upper_fd, &st) < 0)
		return error_set_errno(err, errno, "stat the snapshot's root");
	mode_t now = st.st_mode & 07777;
	json_array_foreach(list, i, x) {
		if (!root_mode || (root_mode & 07777) == now ||
		    strcmp(jsonutil_str(x, "name"), "system.posix_acl_access") != 0)
			continue;
		cleanup_free char *value = malloc(XATTR_SIZE_MAX);
		ssize_t n = -1;
		int e = ENOMEM;
		if (value && fchmod(upper_fd, root_mode & 07777) == 0) {
			n = fgetxattr(upper_fd, "system.posix_acl_access", value, XATTR_SIZE_MAX);
			e = errno;
		} else if (value) {
			e = errno;
		}
		if (value && fchmod(upper_fd, now) < 0 && n >= 0)
			n = -1, e = errno;
		if (n < 0)
			return error_set_errno(err, e, "read the snapshot root's ACL");
		cleanup_free char *b64 = base64_encode(value, (size_t)n);
		if (!b64 || json_object_set_new(x, "base64", json_string(b64)) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(list);
	return 0;
}

/* Whether two symlinks hold the same target. Not inlined: its buffers
 * stay off the frames of the walk, which recurses once per level. */
static __attribute__((noinline)) bool same_target(int upper_fd, int lower_fd, const char *name)
{
	char a[PATH_MAX], b[PATH_MAX];
	ssize_t na = readlinkat(upper_fd, name, a, sizeof(a));
	ssize_t nb = readlinkat(lower_fd, name, b, sizeof(b));

	return na == nb && na >= 0 && memcmp(a, b, (size_t)na) == 0;
}

/* The rest of the identity of an object apply installs (created,
 * type-changed, modified): its mode, old_mode when it replaces an object
 * (lst) of another mode, and the whole list of carried attributes it moves
 * in with, `xattrs`, empty when it has none, so that "none" is checked too.
 * Apply checks the staged object against all of it (what was reviewed is
 * what lands). */
static __attribute__((noinline)) int carried_identity(struct walk *w, int upper_fd,
						      const char *name, const char *rel, json_t *c,
						      const struct stat *ust, const struct stat *lst)
{
	cleanup_with(json_decrefp) json_t *now = NULL;
	struct stat st;
	if (w->owners) {
		if (fstatat(upper_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return error_set_errno(w->err, errno, "stat %s in the snapshot", rel);
		if (json_object_set_new(c, "uid", json_integer(st.st_uid)) < 0 ||
		    json_object_set_new(c, "gid", json_integer(st.st_gid)) < 0)
			return error_set(w->err, ENOMEM, "out of memory");
	}
	int r = changeset_read_xattrs(upper_fd, name, CHANGESET_XATTRS_ALL, &now);

	if (r < 0)
		return error_set_errno(w->err, -r, "read the extended attributes of %s", rel);
	if (json_object_set_new(c, "mode", mode_string(ust->st_mode)) < 0 ||
	    (lst && (lst->st_mode & 07777) != (ust->st_mode & 07777) &&
	     json_object_set_new(c, "old_mode", mode_string(lst->st_mode)) < 0) ||
	    json_object_set_new(c, "xattrs", encode_array(now)) < 0)
		return error_set(w->err, ENOMEM, "out of memory");
	return 0;
}

/* A write clears a set-id bit unless the writer has CAP_FSETID in the
 * initial user namespace, which root's real run has and the quarantine
 * never does: as root (owners carried), a set-id file of the tree whose
 * content changed would have kept its bit, so the entry is refused as that
 * set-id file (PRIVILEGED_FILE), not shown as a silent mode change. */
static int setid_kept(struct walk *w, json_t *c, const struct stat *ust, const struct stat *lst)
{
	mode_t lost = lst->st_mode & ~ust->st_mode & (S_ISUID | S_ISGID);

	if (!w->owners || w->refused || !S_ISREG(ust->st_mode) || !S_ISREG(lst->st_mode) || !lost)
		return 0;
	if (json_object_set_new(c, "refused", json_string(lost & S_ISUID ? "setuid" : "setgid")) < 0 ||
	    json_object_set_new(c, "mode", mode_string(ust->st_mode | lost)) < 0)
		return error_set(w->err, ENOMEM, "out of memory");
	if (((ust->st_mode | lost) & 07777) == (lst->st_mode & 07777))
		json_object_del(c, "old_mode"); /* the mode did not change */
	return 0;
}

/* A directory of the upper: its own change, then what it holds (walked
 * whole below an opaque one). lst is the lower's, when has_lower. */
static int entry_dir(struct walk *w, int upper_fd, int lower_fd, const char *name, const char *rel,
		     bool parent_opaque, int depth, const struct stat *ust, bool has_lower,
		     const struct stat *lst)
{
	char value[4] = "";
	json_t *c;
	int r;
	cleanup_close int sub =
		openat(upper_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return error_set_errno(w->err, errno, "open %s in the snapshot", rel);
	/* Below an opaque directory every directory hides its lower one
	 * too, marked or not (the overlay marks only the directory it
	 * made over a whiteout; `mkdir -p d/sub` after `rm -r d` makes
	 * d/sub plain): walk it whole, so what the lower held there and
	 * the upper does not is deleted. */
	bool opaque = parent_opaque ||
		      (fgetxattr(sub, "user.overlay.opaque", value, sizeof(value) - 1) > 0 &&
		       value[0] == 'y');
	cleanup_close int lower_sub = -1;
	if (!has_lower) {
		r = add_change(w, rel, "created", ust->st_mode, &c);
		if (r == 0)
			r = carried_identity(w, upper_fd, name, rel, c, ust, NULL);
	} else if (!S_ISDIR(lst->st_mode)) {
		r = add_change(w, rel, "type_changed", ust->st_mode, &c);
		if (r == 0)
			json_object_set_new(c, "old_type",
					    json_string(changeset_type_name(lst->st_mode)));
		if (r == 0)
			r = carried_identity(w, upper_fd, name, rel, c, ust, lst);
	} else {
		/* A directory its user cannot read (mode 000) is not an empty
		 * one: what the command removed or changed below it would
		 * come out missing or "created". */
		lower_sub = openat(lower_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lower_sub < 0)
			return error_set_errno(w->err, errno, "open %s in the workspace", rel);
		r = meta_change(w, upper_fd, lower_fd, name, rel, ust, lst, NULL);
	}
	if (r < 0)
		return r;
	if (depth >= CHANGESET_MAX_DEPTH)
		return error_set(w->err, ELOOP,
				 "the snapshot is nested deeper than %d directories (below %.200s...)",
				 CHANGESET_MAX_DEPTH, rel);
	return walk_dir(w, sub, lower_sub, rel, opaque, depth + 1);
}

/* An object of another type than the workspace's (lst). */
static int entry_retyped(struct walk *w, int upper_fd, int lower_fd, const char *name,
			 const char *rel, const struct stat *ust, const struct stat *lst)
{
	json_t *c;
	int r = add_change(w, rel, "type_changed", ust->st_mode, &c);

	if (r == 0) {
		json_object_set_new(c, "old_type", json_string(changeset_type_name(lst->st_mode)));
		r = describe(w, upper_fd, name, ust, c, false);
	}
	if (r == 0 && !S_ISDIR(lst->st_mode))
		r = describe(w, lower_fd, name, lst, c, true);
	return r == 0 ? carried_identity(w, upper_fd, name, rel, c, ust, lst) : r;
}

/* An object of the workspace's type: modified (new bytes or target, or a
 * file relinked), else maybe a change of its mode or attributes only. */
static int entry_same_type(struct walk *w, int upper_fd, int lower_fd, const char *name,
			   const char *rel, const struct stat *ust, const struct stat *lst)
{
	bool same = true;
	char new_hex[SHA256_HEX_SIZE] = "", old_hex[SHA256_HEX_SIZE] = "";
	json_t *c;

	if (S_ISREG(ust->st_mode)) {
		if (!same_content(upper_fd, lower_fd, name, ust, lst, &same, new_hex, old_hex))
			return error_set_errno(w->err, errno, "compare %s", rel);
	} else if (S_ISLNK(ust->st_mode)) {
		same = same_target(upper_fd, lower_fd, name);
	}
	/* A file linked to another name in the upper (`ln old new` copies old
	 * up and links new to it): the workspace's old inode must give way to
	 * the upper one, or apply would make new a copy. Same bytes, so it is
	 * `modified` with equal hashes and `hard_link`. */
	bool relinked = same && S_ISREG(ust->st_mode) && ust->st_nlink > 1;
	if (same && !relinked)
		return meta_change(w, upper_fd, lower_fd, name, rel, ust, lst, new_hex);
	int r = add_change(w, rel, "modified", ust->st_mode, &c);
	if (r == 0 && relinked)
		json_object_set_new(c, "hard_link", json_true());
	if (r == 0 && S_ISREG(ust->st_mode)) {
		json_object_set_new(c, "size", json_integer((json_int_t)ust->st_size));
		json_object_set_new(c, "sha256", json_string(new_hex));
		json_object_set_new(c, "old_size", json_integer((json_int_t)lst->st_size));
		json_object_set_new(c, "old_sha256", json_string(old_hex));
	} else if (r == 0) {
		r = describe(w, upper_fd, name, ust, c, false);
		if (r == 0)
			r = describe(w, lower_fd, name, lst, c, true);
	}
	if (r == 0)
		r = carried_identity(w, upper_fd, name, rel, c, ust, lst);
	/* After the identity: a set-id bit root's real run keeps is the
	 * mode the entry shows (and refuses). */
	return r == 0 ? setid_kept(w, c, ust, lst) : r;
}

static int entry(struct walk *w, int upper_fd, int lower_fd, const char *name, const char *rel,
		 bool parent_opaque, int depth)
{
	struct stat ust, lst;
	/* Under an opaque directory the lower is hidden, but a file recreated
	 * with the same content is still no change: compare with it. Only a
	 * name the lower lacks is absent from it (not one it cannot show). */
	bool has_lower = lower_fd >= 0 && fstatat(lower_fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
	if (lower_fd >= 0 && !has_lower && errno != ENOENT)
		return error_set_errno(w->err, errno, "stat %s in the workspace", rel);

	if (fstatat(upper_fd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
		return error_set_errno(w->err, errno, "stat %s in the snapshot", rel);
	if (S_ISCHR(ust.st_mode) && major(ust.st_rdev) == 0 && minor(ust.st_rdev) == 0)
		return deleted(w, lower_fd, name, rel);
	w->refused = changeset_privilege(upper_fd, name, &ust);

	if (S_ISDIR(ust.st_mode))
		return entry_dir(w, upper_fd, lower_fd, name, rel, parent_opaque, depth, &ust,
				 has_lower, &lst);
	if (!has_lower) {
		json_t *c;
		int r = add_change(w, rel, "created", ust.st_mode, &c);
		if (r == 0)
			r = describe(w, upper_fd, name, &ust, c, false);
		return r == 0 ? carried_identity(w, upper_fd, name, rel, c, &ust, NULL) : r;
	}
	if ((ust.st_mode & S_IFMT) != (lst.st_mode & S_IFMT))
		return entry_retyped(w, upper_fd, lower_fd, name, rel, &ust, &lst);
	return entry_same_type(w, upper_fd, lower_fd, name, rel, &ust, &lst);
}

static int walk_dir(struct walk *w, int upper_fd, int lower_fd, const char *rel, bool opaque, int depth)
{
	int fd = dup(upper_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return error_set_errno(w->err, errno, "read %s in the snapshot", *rel ? rel : ".");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		cleanup_free char *child = join_rel(rel, de->d_name);
		if (!child) {
			r = error_set(w->err, ENOMEM, "out of memory");
			break;
		}
		r = entry(w, upper_fd, lower_fd, de->d_name, child, opaque, depth);
	}
	closedir(d);
	if (r < 0 || !opaque || lower_fd < 0)
		return r;
	/* An opaque directory hides the lower one: what it does not hold again
	 * was deleted. */
	fd = dup(lower_fd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return error_set_errno(w->err, errno, "read %s in the workspace", *rel ? rel : ".");
	}
	while (r == 0 && (de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(upper_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		cleanup_free char *child = join_rel(rel, de->d_name);
		r = child ? deleted(w, lower_fd, de->d_name, child)
			  : error_set(w->err, ENOMEM, "out of memory");
	}
	closedir(d);
	return r;
}

static int compare_paths(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;

	return strcmp(json_string_value(json_object_get(x, "path")),
		      json_string_value(json_object_get(y, "path")));
}

int changeset_compute(const char *upper, const char *workspace, mode_t root_mode, bool owners,
		      json_t **ret_changes, struct error *err)
{
	cleanup_close int upper_fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (upper_fd < 0)
		return error_set_errno(err, errno, "open the snapshot's upper directory %s", upper);
	cleanup_close int lower_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lower_fd < 0)
		return error_set_errno(err, errno, "open the workspace %s", workspace);
	cleanup_with(json_decrefp) json_t *changes = json_array();
	if (!changes)
		return error_set(err, ENOMEM, "out of memory");
	struct walk w = { .changes = changes, .err = err, .owners = owners };
	int r = walk_dir(&w, upper_fd, lower_fd, "", false, 0);
	if (r < 0)
		return r;
	/* The workspace root itself: the upper's root is the overlay's root,
	 * so its mode (as the command left it, root_mode) and attributes are
	 * the root's. It is never created, deleted or retyped. */
	struct stat ust, lst;
	if (fstat(upper_fd, &ust) < 0 || fstat(lower_fd, &lst) < 0)
		return error_set_errno(err, errno, "stat the workspace %s", workspace);
	if (root_mode)
		ust.st_mode = S_IFDIR | (root_mode & 07777);
	w.refused = changeset_privilege(upper_fd, ".", &ust);
	cleanup_with(json_decrefp) json_t *xattrs = NULL;
	r = root_xattrs(upper_fd, root_mode, &xattrs, err);
	if (r == 0)
		r = meta_change_with(&w, upper_fd, lower_fd, ".", ".", &ust, &lst, xattrs, NULL);
	if (r < 0)
		return r;
	if (jsonutil_array_sort(changes, compare_paths) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret_changes = TAKE_PTR(changes);
	return 0;
}

/* One character of a pattern against c: '?', a [class] or itself. Sets
 * *ret_next to the pattern index after it; false when it does not match. */
static bool char_matches(const char *p, size_t pn, size_t pi, char c, size_t *ret_next)
{
	if (p[pi] == '?') {
		*ret_next = pi + 1;
		return true;
	}
	if (p[pi] == '[') {
		size_t q = pi + 1;
		bool negate = q < pn && (p[q] == '!' || p[q] == '^'), found = false;
		if (negate)
			q++;
		size_t first = q;
		for (; q < pn && (p[q] != ']' || q == first); q++) {
			if (q + 2 < pn && p[q + 1] == '-' && p[q + 2] != ']') {
				found |= c >= p[q] && c <= p[q + 2];
				q += 2;
			} else {
				found |= c == p[q];
			}
		}
		if (q < pn) { /* a closed class */
			*ret_next = q + 1;
			return found != negate;
		}
		/* an unclosed '[' is a literal */
	}
	*ret_next = pi + 1;
	return p[pi] == c;
}

/* Wildcards within one path component: the classic matcher that backtracks
 * only to the last '*', O(pattern x name) at worst. */
static bool component_matches(const char *p, size_t pn, const char *s, size_t sn)
{
	size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0, next;

	while (si < sn) {
		if (pi < pn && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < pn && char_matches(p, pn, pi, s[si], &next)) {
			pi = next;
			si++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			si = ++mark;
		} else {
			return false;
		}
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

/* A path of the change set: its directories and the name below them. */
#define MAX_COMPONENTS (CHANGESET_MAX_DEPTH + 2)

struct component {
	const char *s;
	size_t n;
};

static size_t split_components(const char *path, struct component *ret)
{
	size_t n = 0;

	while (*path) {
		while (*path == '/')
			path++;
		if (!*path)
			break;
		size_t len = strcspn(path, "/");
		if (n == MAX_COMPONENTS)
			return SIZE_MAX;
		if (!(len == 1 && path[0] == '.'))
			ret[n++] = (struct component){ path, len };
		path += len;
	}
	return n;
}

/* Component by component: a `**` component matches any number of them,
 * found by dynamic programming over (pattern, path) positions, so no
 * pattern costs more than O(components^2) component matches. */
bool changeset_path_matches(const char *pattern, const char *path)
{
	static struct component pc[MAX_COMPONENTS], sc[MAX_COMPONENTS];
	size_t np = split_components(pattern, pc);
	size_t ns = split_components(path, sc);

	if (np == SIZE_MAX || ns == SIZE_MAX)
		return false;
	/* "." is the workspace root: it matches the root's own change, and
	 * so, like any pattern, everything below it. */
	if (np == 0)
		return *pattern != '\0';
	/* ok[i * (ns + 1) + j]: pattern components i.. match path components j.. */
	bool *ok = calloc((np + 1) * (ns + 1), sizeof(bool));
	if (!ok)
		return false;
	for (size_t j = 0; j <= ns; j++)
		ok[np * (ns + 1) + j] = true; /* what is left of the path lies below */
	for (size_t i = np; i-- > 0;) {
		bool globstar = pc[i].n == 2 && pc[i].s[0] == '*' && pc[i].s[1] == '*';
		for (size_t j = ns + 1; j-- > 0;) {
			bool m;
			if (globstar)
				m = ok[(i + 1) * (ns + 1) + j] || (j < ns && ok[i * (ns + 1) + j + 1]);
			else
				m = j < ns && ok[(i + 1) * (ns + 1) + j + 1] &&
				    component_matches(pc[i].s, pc[i].n, sc[j].s, sc[j].n);
			ok[i * (ns + 1) + j] = m;
		}
	}
	bool matched = ok[0];
	free(ok);
	return matched;
}

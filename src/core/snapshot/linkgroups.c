/* SPDX-License-Identifier: MIT */
#include "core/snapshot/linkgroups.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "basic/macro.h"
#include "core/snapshot/changeset.h"
#include "core/store/jsonutil.h"

/* A lower inode with st_nlink > 1 that the upper holds under a name. */
struct linkgroups_inode {
	dev_t dev;
	ino_t ino;
	nlink_t nlink;
	size_t n_names; /* found in the workspace */
};

/* A name of such an inode in the workspace. */
struct linkgroups_name {
	char *rel;
	size_t inode; /* index into inodes */
};

struct linkgroups {
	int upper_fd, lower_fd;
	struct changeset *cs;
	json_t *problems;
	const struct linkgroups_trace *trace;
	const struct sandbox_path_event **events; /* sorted by path */
	struct linkgroups_inode *inodes;
	size_t n_inodes, cap_inodes;
	struct linkgroups_name *names;
	size_t n_names, cap_names;
	bool changes_added; /* changes must be sorted again */
	struct error *err;
};

static int linkgroups_problem(struct linkgroups *g, const char *rel, const char *reason)
{
	json_t *p = json_object();

	if (!p || json_array_append_new(g->problems, p) < 0 ||
	    changeset_set_bytes(p, "link_group", rel) < 0 ||
	    json_object_set_new(p, "reason", json_string(reason)) < 0)
		return error_set(g->err, ENOMEM, "out of memory");
	return 0;
}

static char *linkgroups_join(const char *rel, const char *name)
{
	char *s = NULL;

	if (!*rel)
		return strdup(name);
	return asprintf(&s, "%s/%s", rel, name) < 0 ? NULL : s;
}

static int compare_inodes(const void *a, const void *b)
{
	const struct linkgroups_inode *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static struct linkgroups_inode *linkgroups_find_inode(struct linkgroups *g, dev_t dev, ino_t ino)
{
	struct linkgroups_inode key = { .dev = dev, .ino = ino };

	return g->n_inodes ? bsearch(&key, g->inodes, g->n_inodes, sizeof(key), compare_inodes) : NULL;
}

static int linkgroups_add_inode(struct linkgroups *g, const struct stat *st)
{
	for (size_t i = 0; i < g->n_inodes; i++)
		if (g->inodes[i].dev == st->st_dev && g->inodes[i].ino == st->st_ino)
			return 0;
	if (g->n_inodes == g->cap_inodes) {
		size_t cap = g->cap_inodes ? 2 * g->cap_inodes : 16;
		void *p = reallocarray(g->inodes, cap, sizeof(*g->inodes));
		if (!p)
			return error_set(g->err, ENOMEM, "out of memory");
		g->inodes = p;
		g->cap_inodes = cap;
	}
	g->inodes[g->n_inodes++] =
		(struct linkgroups_inode){ .dev = st->st_dev, .ino = st->st_ino, .nlink = st->st_nlink };
	return 0;
}

/* The lower inodes with more than one link that the upper holds a name of
 * (copied up, or made again under a name of theirs). */
static int linkgroups_collect(struct linkgroups *g, int upper_fd, int lower_fd, const char *rel,
			      int depth)
{
	int fd = dup(upper_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return error_set_errno(g->err, errno, "read %s in the snapshot", *rel ? rel : ".");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		struct stat ust, lst;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(upper_fd, de->d_name, &ust, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(lower_fd, de->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(ust.st_mode) && S_ISDIR(lst.st_mode)) {
			if (depth >= CHANGESET_MAX_DEPTH)
				continue; /* changeset_compute() refuses the tree */
			cleanup_close int us = openat(upper_fd, de->d_name,
						      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			cleanup_close int ls = openat(lower_fd, de->d_name,
						      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			cleanup_free char *child = linkgroups_join(rel, de->d_name);
			if (!child)
				r = error_set(g->err, ENOMEM, "out of memory");
			else if (us >= 0 && ls >= 0)
				r = linkgroups_collect(g, us, ls, child, depth + 1);
			continue;
		}
		if (!S_ISREG(ust.st_mode) || !S_ISREG(lst.st_mode) || lst.st_nlink < 2)
			continue;
		r = linkgroups_add_inode(g, &lst);
	}
	closedir(d);
	return r;
}

/* The lower inodes with more than one link that the trace saw changed in
 * place under a name the upper no longer holds (removed after, or its
 * directory removed and made again): the group is judged all the same. */
static int linkgroups_collect_traced(struct linkgroups *g)
{
	for (size_t i = 0; i < g->trace->n_events; i++) {
		const struct sandbox_path_event *e = &g->trace->events[i];
		struct stat st;
		if (!(e->ops & SANDBOX_PATH_IN_PLACE) || !*e->path ||
		    fstatat(g->lower_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_nlink < 2)
			continue;
		int r = linkgroups_add_inode(g, &st);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every name in the workspace of the collected inodes, never following a
 * symlink; below a directory of another file system nothing is one of
 * them. With inodes NULL-sized, whether any regular file below has more
 * than one link (*ret_any). */
static int linkgroups_find_names(struct linkgroups *g, int dir_fd, const char *rel, dev_t dev,
				 int depth, bool *ret_any)
{
	int fd = dup(dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return error_set_errno(g->err, errno, "read %s in the workspace", *rel ? rel : ".");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG) ||
		    fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth >= CHANGESET_MAX_DEPTH)
				continue;
			cleanup_close int sub =
				openat(dir_fd, de->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			cleanup_free char *child = linkgroups_join(rel, de->d_name);
			if (!child)
				r = error_set(g->err, ENOMEM, "out of memory");
			else if (sub >= 0)
				r = linkgroups_find_names(g, sub, child, dev, depth + 1, ret_any);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_nlink < 2)
			continue;
		if (ret_any) {
			*ret_any = true;
			break;
		}
		struct linkgroups_inode *in = linkgroups_find_inode(g, st.st_dev, st.st_ino);
		if (!in)
			continue;
		if (g->n_names == g->cap_names) {
			size_t cap = g->cap_names ? 2 * g->cap_names : 16;
			void *p = reallocarray(g->names, cap, sizeof(*g->names));
			if (!p) {
				r = error_set(g->err, ENOMEM, "out of memory");
				break;
			}
			g->names = p;
			g->cap_names = cap;
		}
		char *child = linkgroups_join(rel, de->d_name);
		if (!child) {
			r = error_set(g->err, ENOMEM, "out of memory");
			break;
		}
		g->names[g->n_names++] =
			(struct linkgroups_name){ .rel = child, .inode = (size_t)(in - g->inodes) };
		in->n_names++;
	}
	closedir(d);
	return r;
}

static int compare_events(const void *a, const void *b)
{
	return strcmp((*(const struct sandbox_path_event *const *)a)->path,
		      (*(const struct sandbox_path_event *const *)b)->path);
}

/* What the trace says the command did to rel, or NULL. */
static const struct sandbox_path_event *linkgroups_event(const struct linkgroups *g, const char *rel)
{
	struct sandbox_path_event key = { .path = (char *)rel };
	const struct sandbox_path_event *kp = &key;

	if (!g->events)
		return NULL;
	const struct sandbox_path_event **e =
		bsearch(&kp, g->events, g->trace->n_events,
			sizeof(const struct sandbox_path_event *), compare_events);
	return e ? *e : NULL;
}

static unsigned linkgroups_ops(const struct linkgroups *g, const char *rel)
{
	const struct sandbox_path_event *e = linkgroups_event(g, rel);

	return e ? e->ops : 0;
}

/* The index of the change set's entry of rel (its exact bytes), or
 * LINKGROUPS_NONE. */
#define LINKGROUPS_NONE SIZE_MAX

static size_t linkgroups_entry(const struct linkgroups *g, const char *rel)
{
	for (size_t i = 0; i < g->cs->n_entries; i++)
		if (!strcmp(g->cs->entries[i].path.bytes, rel))
			return i;
	return LINKGROUPS_NONE;
}

enum linkgroups_state {
	LINKGROUPS_UNTOUCHED, /* the upper holds nothing of the name: it shows the lower */
	LINKGROUPS_PRESENT, /* the upper holds a regular file under the name */
	LINKGROUPS_REMOVED, /* whited out, hidden by an opaque directory, or another type */
};

static enum linkgroups_state linkgroups_upper_state(int upper_fd, const char *rel)
{
	cleanup_close int fd = dup(upper_fd);
	bool opaque = false;
	const char *p = rel;

	while (fd >= 0) {
		size_t n = strcspn(p, "/");
		char comp[NAME_MAX + 1];
		struct stat st;
		if (n > NAME_MAX)
			return LINKGROUPS_REMOVED;
		memcpy(comp, p, n);
		comp[n] = '\0';
		bool last = p[n] == '\0';
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return opaque ? LINKGROUPS_REMOVED : LINKGROUPS_UNTOUCHED;
		if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0)
			return LINKGROUPS_REMOVED;
		if (last)
			return S_ISREG(st.st_mode) ? LINKGROUPS_PRESENT : LINKGROUPS_REMOVED;
		if (!S_ISDIR(st.st_mode))
			return LINKGROUPS_REMOVED;
		int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		char value[4] = "";
		if (sub >= 0 && fgetxattr(sub, "user.overlay.opaque", value, sizeof(value) - 1) > 0 &&
		    value[0] == 'y')
			opaque = true;
		close(fd);
		fd = sub;
		p += n + 1;
	}
	return LINKGROUPS_REMOVED; /* cannot look: never taken for untouched */
}

/* Size and SHA-256 of root_fd/rel, a regular file: the entry's size and
 * sha256 (old: old_size and old_sha256). */
static int linkgroups_hash(int root_fd, const char *rel, struct changeset_entry *c, bool old)
{
	char hex[SHA256_HEX_SIZE];
	struct stat st;
	int fd = fd_open_beneath(root_fd, rel, O_RDONLY | O_NOFOLLOW | O_NOCTTY);

	if (fd < 0)
		return fd;
	int r = fstat(fd, &st) < 0 ? -errno : sha256_fd_hex(fd, hex);
	close(fd);
	if (r < 0)
		return r;
	char **sha = old ? &c->old_sha256 : &c->sha256;
	free(*sha);
	*sha = strdup(hex);
	*(old ? &c->old_size : &c->size) = (int64_t)st.st_size;
	if (!*sha || changeset_entry_key_set(c, old ? CHANGESET_KEY_OLD_SIZE : CHANGESET_KEY_SIZE) < 0 ||
	    changeset_entry_key_set(c, old ? CHANGESET_KEY_OLD_SHA256 : CHANGESET_KEY_SHA256) < 0)
		return -ENOMEM;
	return 0;
}

static int linkgroups_mode_set(struct changeset_entry *c, enum changeset_key key, mode_t mode)
{
	*(key == CHANGESET_KEY_MODE ? &c->mode : &c->old_mode) = mode & 07777;
	return changeset_entry_key_set(c, key);
}

/* The workspace's object, which apply checks before: old_mode and
 * old_xattrs where they differ from the new one's (an entry lists them
 * only then). */
static int linkgroups_split_old(struct linkgroups *g, const char *rel, struct changeset_entry *c,
				const struct stat *st, json_t *xattrs)
{
	const char *lname;
	cleanup_close int ldir = fd_open_parent(g->lower_fd, rel, O_RDONLY, &lname);
	struct stat lst;
	cleanup_with(json_decrefp) json_t *old_xattrs = NULL;

	if (ldir < 0 || fstatat(ldir, lname, &lst, AT_SYMLINK_NOFOLLOW) < 0 ||
	    changeset_read_xattrs(ldir, lname, CHANGESET_XATTRS_ALL, &old_xattrs) < 0)
		return error_set_errno(g->err, ldir < 0 ? -ldir : errno, "stat %s in the workspace",
				       rel);
	if ((lst.st_mode & 07777) != (st->st_mode & 07777) &&
	    linkgroups_mode_set(c, CHANGESET_KEY_OLD_MODE, lst.st_mode) < 0)
		return error_set(g->err, ENOMEM, "out of memory");
	if (!json_equal(old_xattrs, xattrs) &&
	    (changeset_xattr_list_from_raw(old_xattrs, &c->old_xattrs) < 0 ||
	     changeset_entry_key_set(c, CHANGESET_KEY_OLD_XATTRS) < 0))
		return error_set(g->err, ENOMEM, "out of memory");
	return 0;
}

/* A replaced name of a group: its own new inode, whatever its bytes, mode
 * and attributes, so `modified` (apply exchanges it in under this name
 * alone) with `link_split`. ci: its entry, or LINKGROUPS_NONE. */
static int linkgroups_split(struct linkgroups *g, const char *rel, size_t ci)
{
	struct changeset_entry *c = ci == LINKGROUPS_NONE ? NULL : &g->cs->entries[ci];

	if (c && c->change == CHANGESET_MODIFIED) {
		c->link_split = true;
		return changeset_entry_key_set(c, CHANGESET_KEY_LINK_SPLIT) < 0
			       ? error_set(g->err, ENOMEM, "out of memory")
			       : 0;
	}
	if (c && c->change != CHANGESET_MODE_CHANGED && c->change != CHANGESET_XATTRS_CHANGED)
		return linkgroups_problem(g, rel, "replaced by a change the trace does not explain");
	if (!c) {
		c = changeset_add_entry(g->cs);
		if (!c || changeset_entry_set_bytes(c, CHANGESET_KEY_PATH, rel) < 0 ||
		    changeset_entry_key_set(c, CHANGESET_KEY_TYPE) < 0)
			return error_set(g->err, ENOMEM, "out of memory");
		c->type = CHANGESET_TYPE_FILE;
		g->changes_added = true;
	}
	changeset_entry_key_unset(c, CHANGESET_KEY_OLD_MODE);
	changeset_entry_key_unset(c, CHANGESET_KEY_OLD_XATTRS);
	changeset_entry_key_unset(c, CHANGESET_KEY_XATTRS);
	const char *name;
	cleanup_close int dir = fd_open_parent(g->upper_fd, rel, O_RDONLY, &name);
	struct stat st;
	if (dir < 0 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return error_set_errno(g->err, dir < 0 ? -dir : errno, "stat %s in the snapshot", rel);
	const char *refused = changeset_privilege(dir, name, &st);
	cleanup_with(json_decrefp) json_t *xattrs = NULL;
	int r = changeset_read_xattrs(dir, name, CHANGESET_XATTRS_ALL, &xattrs);
	if (r == 0)
		r = linkgroups_hash(g->upper_fd, rel, c, false);
	if (r == 0)
		r = linkgroups_hash(g->lower_fd, rel, c, true);
	if (r < 0)
		return error_set_errno(g->err, -r, "read %s", rel);
	/* The whole identity, as every entry of the change set but a deletion
	 * carries it (core/snapshot/changeset.h): mode and xattrs, even when empty. */
	c->change = CHANGESET_MODIFIED;
	c->link_split = true;
	if (changeset_entry_key_set(c, CHANGESET_KEY_CHANGE) < 0 ||
	    changeset_entry_key_set(c, CHANGESET_KEY_LINK_SPLIT) < 0 ||
	    linkgroups_mode_set(c, CHANGESET_KEY_MODE, st.st_mode) < 0 ||
	    changeset_xattr_list_from_raw(xattrs, &c->xattrs) < 0 ||
	    changeset_entry_key_set(c, CHANGESET_KEY_XATTRS) < 0)
		return error_set(g->err, ENOMEM, "out of memory");
	if (refused) {
		free(c->refused);
		c->refused = strdup(refused);
		if (!c->refused || changeset_entry_key_set(c, CHANGESET_KEY_REFUSED) < 0)
			return error_set(g->err, ENOMEM, "out of memory");
	}
	return linkgroups_split_old(g, rel, c, &st, xattrs);
}

/* Links rel in the upper to the upper's object of target (making the
 * directories on the way, mode 0700, and replacing an unchanged copy):
 * apply then moves that one inode in under both names. */
static int linkgroups_link_upper(struct linkgroups *g, const char *target, const char *rel)
{
	const char *tname;
	cleanup_close int tdir = fd_open_parent(g->upper_fd, target, O_RDONLY, &tname);
	if (tdir < 0)
		return error_set_errno(g->err, -tdir, "open the snapshot's %s", target);
	cleanup_close int fd = dup(g->upper_fd);
	const char *p = rel;
	for (;;) {
		size_t n = strcspn(p, "/");
		if (p[n] == '\0')
			break;
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX)
			return error_set(g->err, ENAMETOOLONG, "a name of %s is too long", rel);
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (mkdirat(fd, comp, 0700) < 0 && errno != EEXIST)
			return error_set_errno(g->err, errno,
					       "make the snapshot's directory for %s", rel);
		int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return error_set_errno(g->err, errno,
					       "open the snapshot's directory for %s", rel);
		close(fd);
		fd = sub;
		p += n + 1;
	}
	if (unlinkat(fd, p, 0) < 0 && errno != ENOENT)
		return error_set_errno(g->err, errno, "replace the snapshot's %s", rel);
	if (linkat(tdir, tname, fd, p, 0) < 0)
		return error_set_errno(g->err, errno, "link the snapshot's %s to %s", rel, target);
	return 0;
}

/* The target's identity is this name's too (one inode, changeset.h). */
static int linkgroups_copy_identity(struct changeset_entry *c, const struct changeset_entry *tc)
{
	static const enum changeset_key copied[] = {
		CHANGESET_KEY_SIZE,	  CHANGESET_KEY_SHA256,	  CHANGESET_KEY_OLD_SIZE,
		CHANGESET_KEY_OLD_SHA256, CHANGESET_KEY_XATTRS,	  CHANGESET_KEY_REFUSED,
		CHANGESET_KEY_MODE,	  CHANGESET_KEY_OLD_MODE, CHANGESET_KEY_UID,
		CHANGESET_KEY_GID,
	};

	for (size_t i = 0; i < ARRAY_SIZE(copied); i++) {
		if (!changeset_entry_has(tc, copied[i]))
			continue;
		if (changeset_entry_key_set(c, copied[i]) < 0)
			return -ENOMEM;
		switch (copied[i]) {
		case CHANGESET_KEY_SHA256:
			c->sha256 = strdup(tc->sha256);
			if (!c->sha256)
				return -ENOMEM;
			break;
		case CHANGESET_KEY_OLD_SHA256:
			c->old_sha256 = strdup(tc->old_sha256);
			if (!c->old_sha256)
				return -ENOMEM;
			break;
		case CHANGESET_KEY_REFUSED:
			c->refused = strdup(tc->refused);
			if (!c->refused)
				return -ENOMEM;
			break;
		case CHANGESET_KEY_XATTRS:
			if (changeset_xattr_list_copy(&tc->xattrs, &c->xattrs) < 0)
				return -ENOMEM;
			break;
		default:
			break;
		}
	}
	c->size = tc->size;
	c->old_size = tc->old_size;
	c->mode = tc->mode;
	c->old_mode = tc->old_mode;
	c->uid = tc->uid;
	c->gid = tc->gid;
	return 0;
}

/* rel still holds the group's old object, which the real run changed in
 * place under target (entry ti): a `modified` entry like target's, with
 * `link_to`. */
static int linkgroups_link_to(struct linkgroups *g, const char *target, size_t ti, const char *rel)
{
	struct changeset_entry *c = changeset_add_entry(g->cs);

	if (!c || changeset_entry_set_bytes(c, CHANGESET_KEY_PATH, rel) < 0 ||
	    changeset_entry_key_set(c, CHANGESET_KEY_CHANGE) < 0 ||
	    changeset_entry_key_set(c, CHANGESET_KEY_TYPE) < 0 ||
	    changeset_entry_key_set(c, CHANGESET_KEY_HARD_LINK) < 0 ||
	    changeset_entry_set_bytes(c, CHANGESET_KEY_LINK_TO, target) < 0 ||
	    linkgroups_copy_identity(c, &g->cs->entries[ti]) < 0)
		return error_set(g->err, ENOMEM, "out of memory");
	c->change = CHANGESET_MODIFIED;
	c->type = CHANGESET_TYPE_FILE;
	c->hard_link = true;
	g->changes_added = true;
	return linkgroups_link_upper(g, target, rel);
}

/* Whether the group keeps a name of the workspace: the command neither
 * removed it nor replaced it (a rename over it, or an entry of its own). */
static bool linkgroups_kept(struct linkgroups *g, const char *rel)
{
	enum linkgroups_state state = linkgroups_upper_state(g->upper_fd, rel);

	return state != LINKGROUPS_REMOVED && !(linkgroups_ops(g, rel) & SANDBOX_PATH_REPLACED) &&
	       !(state == LINKGROUPS_PRESENT && linkgroups_entry(g, rel) != LINKGROUPS_NONE);
}

/* A mode or attributes changed in place under rel, the one name the
 * upper holds changed: apply sets them on the shared inode, so every other
 * name the group keeps (neither removed nor replaced) changes too, and
 * names outside the workspace as well. The entry lists them (also_names,
 * stored like `path`; also_outside, a count) to be shown for review: no
 * work of their own, one inode. */
static int linkgroups_also(struct linkgroups *g, const struct linkgroups_inode *in, size_t *idx,
			   size_t n, const char *rel, size_t ci)
{
	struct changeset_entry *c = &g->cs->entries[ci];
	size_t before = c->n_also_names;

	for (size_t k = 0; k < n; k++) {
		const char *other = g->names[idx[k]].rel;
		if (other == rel)
			continue;
		if (!linkgroups_kept(g, other))
			continue;
		if (changeset_entry_add_name(c, other) < 0)
			return error_set(g->err, ENOMEM, "out of memory");
	}
	if (c->n_also_names > before && changeset_entry_key_set(c, CHANGESET_KEY_ALSO_NAMES) < 0)
		return error_set(g->err, ENOMEM, "out of memory");
	if (in->n_names < in->nlink) {
		c->also_outside = (int64_t)(in->nlink - in->n_names);
		if (changeset_entry_key_set(c, CHANGESET_KEY_ALSO_OUTSIDE) < 0)
			return error_set(g->err, ENOMEM, "out of memory");
	}
	return 0;
}

/* What one group's names show: the names changed in place, and how. */
struct linkgroups_group {
	const char *changer; /* the one name changed in place with new bytes or a new link */
	size_t changer_entry;
	const char *in_place_name; /* the one name changed in place, in any way */
	/* A name the command linked to a new one or changed in place with no
	 * change the snapshot shows (a change that failed, or that the old
	 * mode the snapshot still showed there refused). */
	const char *touched;
	const char *meta; /* the one name whose mode or attributes changed in place */
	size_t meta_entry;
	size_t n_in_place;
};

/* One name of a group: split off where replaced, a problem where the
 * snapshot cannot show what the real run did, else noted in gr. */
static int linkgroups_judge_name(struct linkgroups *g, const char *rel, struct linkgroups_group *gr)
{
	enum linkgroups_state state = linkgroups_upper_state(g->upper_fd, rel);
	unsigned ops = linkgroups_ops(g, rel);
	size_t ci = linkgroups_entry(g, rel);
	bool c = ci != LINKGROUPS_NONE;
	bool in_place = ops & SANDBOX_PATH_IN_PLACE, replaced = ops & SANDBOX_PATH_REPLACED;

	if (in_place && !replaced && !c && state != LINKGROUPS_REMOVED)
		gr->touched = rel;
	if (state == LINKGROUPS_UNTOUCHED)
		return 0;
	if (in_place && (replaced || state == LINKGROUPS_REMOVED))
		return linkgroups_problem(g, rel,
					  "changed in place under one name of a hard-link group, then replaced or removed: the other names hold the change in the real run");
	if (state == LINKGROUPS_REMOVED)
		return 0;
	if (replaced)
		return linkgroups_split(g, rel, ci);
	if (!c && !in_place)
		/* A copy-up no traced call on the name explains: made through
		 * another name (a symlink's), it may have changed the group's
		 * inode for real, and a later replacement of the copy (one
		 * link in the snapshot) is not traced either. */
		return linkgroups_problem(g, rel,
					  "held by the snapshot, and no call the trace shows made it so (changed through a symlink?)");
	if (!c)
		return 0; /* an unchanged copy: still the old object */
	if (!in_place)
		return linkgroups_problem(g, rel,
					  "a name of a hard-link group changed by a call the trace does not show");
	gr->n_in_place++;
	gr->in_place_name = rel;
	enum changeset_change kind = g->cs->entries[ci].change;
	if (kind == CHANGESET_MODIFIED) {
		gr->changer = rel;
		gr->changer_entry = ci;
	} else if (kind == CHANGESET_MODE_CHANGED || kind == CHANGESET_XATTRS_CHANGED) {
		gr->meta = rel;
		gr->meta_entry = ci;
	} else {
		return linkgroups_problem(g, rel,
					  "a name of a hard-link group changed in place in a way the snapshot cannot show");
	}
	return 0;
}

/* In the snapshot the other names kept the old bytes, mode and
 * attributes: a read of one after the change saw what the real run's
 * would not (`cp b t` copies b's mode too). A name the command made (or
 * put over a workspace name) may be a link it made to the group: the
 * trace does not say to which object, so one read after the change counts
 * too. 1 when a problem was found. */
static int linkgroups_read_after(struct linkgroups *g, size_t *idx, size_t n, const char *in_place_name)
{
	const struct sandbox_path_event *ce = in_place_name ? linkgroups_event(g, in_place_name) : NULL;
	int r;

	for (size_t k = 0; ce && k < n; k++) {
		const struct sandbox_path_event *e = linkgroups_event(g, g->names[idx[k]].rel);
		if (e && e != ce && e->read_seq > ce->in_place_seq)
			return (r = linkgroups_problem(g, g->names[idx[k]].rel,
						       "read after another name of its hard-link group was changed in place: the snapshot showed it the old object, the real run the changed one")) <
					       0
				       ? r
				       : 1;
	}
	for (size_t i = 0; ce && i < g->trace->n_events; i++) {
		const struct sandbox_path_event *e = &g->trace->events[i];
		struct stat st;
		if (e == ce || e->read_seq <= ce->in_place_seq || !*e->path)
			continue;
		if (!(e->ops & SANDBOX_PATH_REPLACED) &&
		    fstatat(g->lower_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			continue; /* the workspace's object: a name of its own group */
		return (r = linkgroups_problem(g, e->path,
					       "made by the command, maybe as a link to a hard-link group, and read after another name of the group was changed in place: the snapshot showed it the old object")) <
				       0
			       ? r
			       : 1;
	}
	return 0;
}

/* One group: its names in the workspace are names[first..first+n). */
static int linkgroups_judge_group(struct linkgroups *g, const struct linkgroups_inode *in,
				  size_t *idx, size_t n)
{
	struct linkgroups_group gr = { 0 };
	int r;

	for (size_t k = 0; k < n; k++)
		if ((r = linkgroups_judge_name(g, g->names[idx[k]].rel, &gr)) < 0)
			return r;
	if (gr.n_in_place > 1) {
		for (size_t k = 0; k < n; k++)
			if ((linkgroups_ops(g, g->names[idx[k]].rel) & SANDBOX_PATH_IN_PLACE) &&
			    (r = linkgroups_problem(g, g->names[idx[k]].rel,
						    "more than one name of a hard-link group changed in place: the snapshot holds a copy for each")) <
				    0)
				return r;
		return 0;
	}
	/* The snapshot holds a copy for the changed name and another for
	 * the touched one: a name linked to the touched one, or a change the
	 * old mode refused there, is not the real run's. */
	if (gr.n_in_place == 1 && gr.touched)
		return linkgroups_problem(g, gr.touched,
					  "linked to a new name, or changed in place with no effect in the snapshot, while another name of its hard-link group changed in place: the snapshot holds a copy for each");
	/* Reads went untraced (the workspace held no linked file when the
	 * dry run started: this group was linked since, outside the
	 * quarantine): the read that linkgroups_read_after() looks for may
	 * have happened unseen, so it is taken as having happened. */
	if (gr.in_place_name && !g->trace->reads_traced)
		return linkgroups_problem(g, gr.in_place_name,
					  "changed in place under one name of a hard-link group made after the dry run began (the workspace had none then, so reads were not traced): a read of another name after the change, which the snapshot showed the old object, cannot be ruled out");
	r = linkgroups_read_after(g, idx, n, gr.in_place_name);
	if (r != 0)
		return r < 0 ? r : 0;
	/* A mode or attributes changed in place: apply sets them on the
	 * shared inode, and the entry lists the other names it reaches. */
	if (!gr.changer)
		return gr.meta ? linkgroups_also(g, in, idx, n, gr.meta, gr.meta_entry) : 0;
	if (in->n_names < in->nlink)
		return linkgroups_problem(g, gr.changer,
					  "changed in place, and the hard-link group has names outside the workspace, which the real run changes too");
	for (size_t k = 0; k < n; k++) {
		const char *rel = g->names[idx[k]].rel;
		if (rel == gr.changer || !linkgroups_kept(g, rel))
			continue;
		r = linkgroups_link_to(g, gr.changer, gr.changer_entry, rel);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A directory the command renamed (a copy and a removal in the snapshot,
 * which cannot rename a lower directory) with a linked file below it, or a
 * linked file renamed: the real rename keeps the file's inode, the copy
 * does not. */
static int linkgroups_renamed_dirs(struct linkgroups *g)
{
	for (size_t i = 0; i < g->trace->n_events; i++) {
		const struct sandbox_path_event *e = &g->trace->events[i];
		struct stat st;
		if (!(e->ops & SANDBOX_PATH_RENAMED) || !*e->path ||
		    fstatat(g->lower_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* A linked file of the workspace moved away: the real rename
		 * keeps its inode under the new name, the snapshot's copy-up
		 * does not. */
		if (S_ISREG(st.st_mode) && st.st_nlink > 1 && (e->ops & SANDBOX_PATH_RENAMED_AWAY)) {
			int r = linkgroups_problem(g, e->path,
						   "a hard-linked file renamed: the snapshot renames a copy, a new inode");
			if (r < 0)
				return r;
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		cleanup_close int fd = fd_open_beneath(g->lower_fd, e->path, O_RDONLY | O_DIRECTORY);
		/* The supervisor looked at the snapshot's directory when the
		 * call came (links the command made count too). */
		bool any = e->ops & SANDBOX_PATH_RENAMED_LINKS;
		int r = fd < 0 || any ? 0 : linkgroups_find_names(g, fd, e->path, st.st_dev, 0, &any);
		if (r < 0)
			return r;
		if (any &&
		    (r = linkgroups_problem(g, e->path,
					    "a directory renamed with a hard-linked file below it: the snapshot renames by copying")) <
			    0)
			return r;
	}
	return 0;
}

static int compare_names_by_inode(const void *a, const void *b)
{
	const struct linkgroups_name *x = a, *y = b;

	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

int linkgroups_judge(const char *upper, const char *workspace, struct changeset *cs,
		     const struct linkgroups_trace *trace, json_t **ret_problems, struct error *err)
{
	cleanup_close int upper_fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int lower_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_with(json_decrefp) json_t *problems = json_array();
	struct stat ws;

	if (upper_fd < 0 || lower_fd < 0 || fstat(lower_fd, &ws) < 0)
		return error_set_errno(err, errno, "open the snapshot of %s", workspace);
	if (!problems)
		return error_set(err, ENOMEM, "out of memory");
	struct linkgroups g = { .upper_fd = upper_fd,
				.lower_fd = lower_fd,
				.cs = cs,
				.problems = problems,
				.trace = trace,
				.err = err };
	int r = 0;
	if (trace->n_events) {
		g.events = calloc(trace->n_events, sizeof(const struct sandbox_path_event *));
		if (!g.events)
			return error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < trace->n_events; i++)
			g.events[i] = &trace->events[i];
		qsort(g.events, trace->n_events, sizeof(const struct sandbox_path_event *),
		      compare_events);
	}
	/* A trace past its cap shows nothing after it: a linked file changed
	 * and then removed, a directory renamed, a set-id file written
	 * (dryrun.c reads the same trace) would go unseen. Any change at all
	 * is refused as a whole; none changed nothing. */
	if (trace->overflow)
		r = cs->n_entries == 0
			    ? 0
			    : linkgroups_problem(&g, ".",
						 "the trace of the command's calls is incomplete (more than 4,096 paths, or one it could not read): the hard-link groups, renamed directories and set-id files it touched cannot be judged");
	else
		r = linkgroups_renamed_dirs(&g);
	if (r == 0 && !trace->overflow)
		r = linkgroups_collect(&g, upper_fd, lower_fd, "", 0);
	if (r == 0 && !trace->overflow)
		r = linkgroups_collect_traced(&g);
	if (r == 0 && g.n_inodes > 0) {
		qsort(g.inodes, g.n_inodes, sizeof(*g.inodes), compare_inodes);
		r = linkgroups_find_names(&g, lower_fd, "", ws.st_dev, 0, NULL);
	}
	if (r == 0 && g.n_names > 0) {
		qsort(g.names, g.n_names, sizeof(*g.names), compare_names_by_inode);
		size_t *idx = calloc(g.n_names, sizeof(*idx));
		if (!idx)
			r = error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; r == 0 && i < g.n_names;) {
			size_t n = 0, inode = g.names[i].inode;
			while (i < g.n_names && g.names[i].inode == inode)
				idx[n++] = i++;
			r = linkgroups_judge_group(&g, &g.inodes[inode], idx, n);
		}
		free(idx);
	}
	if (r == 0 && g.changes_added && changeset_sort(cs) < 0)
		r = error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < g.n_names; i++)
		free(g.names[i].rel);
	free(g.names);
	free(g.inodes);
	free(g.events);
	if (r < 0)
		return r;
	*ret_problems = TAKE_PTR(problems);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "core/snapshot/changeset_lost.h"

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
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/store/jsonutil.h"

/* SHA-256 of a regular file, read through dir_fd/name without following
 * a symlink; the hex digest goes into hex. */
static int changeset_lost_hash_file(int dir_fd, const char *name, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? -errno : sha256_fd_hex(fd, hex);
}

static char *changeset_lost_join_rel(const char *rel, const char *name)
{
	char *s = NULL;

	if (!*rel)
		return strdup(name);
	return asprintf(&s, "%s/%s", rel, name) < 0 ? NULL : s;
}

/* ---- attributes a copy in the snapshot lost -------------------------------- */

/* At most this many `attrs_lost` problems; the rest are counted. */
#define CHANGESET_MAX_LOST 32

struct lost {
	json_t *problems;
	size_t dropped;
	/* The copy must have the lower object's modification time too (as mv
	 * and cp -a keep it): the lower one is gone by a weaker sign. */
	bool same_times;
	/* The change set, when a name the lower directory held may be missing
	 * from its copy because the command moved it out first (`mv d/s x;
	 * mv d e`): a new object of its type (and a file's size) elsewhere. */
	const struct changeset *cs;
	int upper_fd; /* with cs */
};

/* Whether an entry is a new object (created, or of a new type) of that
 * type. */
static bool lost_entry_new(const struct changeset_entry *c, enum changeset_file_type type)
{
	return (c->change == CHANGESET_CREATED || c->change == CHANGESET_TYPE_CHANGED) &&
	       changeset_entry_has(c, CHANGESET_KEY_TYPE) && c->type == type;
}

/* Whether the object dir_fd/name or anything below it carries attributes
 * (changeset_xattr_carried): only such a directory can lose any. */
static bool subtree_has_attrs(int dir_fd, const char *name, int depth)
{
	cleanup_with(json_decrefp) json_t *list = NULL;
	struct stat st;

	if (changeset_read_xattrs(dir_fd, name, CHANGESET_XATTRS_ALL, &list) < 0 ||
	    json_array_size(list) > 0)
		return true; /* unreadable: look closer rather than miss a loss */
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    depth >= CHANGESET_MAX_DEPTH)
		return false;
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			found = subtree_has_attrs(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	return found;
}

/* Whether the upper directory holds every name the lower one holds, each
 * of the same type (a file of the same size), and whether the lower one is
 * empty. */
/* Whether the change set holds a new directory at path (created, or of a
 * new type). */
static bool lost_new_dir(const struct changeset *cs, const char *path)
{
	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *c = &cs->entries[i];
		if (lost_entry_new(c, CHANGESET_TYPE_DIR) && c->path.bytes &&
		    !strcmp(c->path.bytes, path))
			return true;
	}
	return false;
}

/* Whether the change set holds a new object like lst (its type, its
 * modification time, as a rename or mv's copy keeps it, and a file's size)
 * in a directory that was there before (not inside a new directory, which
 * may be a whole copy of the lower one): where a name the copy lacks may
 * have been moved to before the directory was. */
static bool lost_moved_out(const struct lost *l, const struct stat *lst)
{
	if (!l || !l->cs)
		return false;
	for (size_t i = 0; i < l->cs->n_entries; i++) {
		const struct changeset_entry *c = &l->cs->entries[i];
		const char *type = changeset_file_type_name(c->type);
		int64_t size = changeset_entry_has(c, CHANGESET_KEY_SIZE) ? c->size : 0;
		if (!lost_entry_new(c, c->type) || !type ||
		    strcmp(type, changeset_type_name(lst->st_mode)) ||
		    (S_ISREG(lst->st_mode) && size != (int64_t)lst->st_size))
			continue;
		if (!c->path.bytes)
			continue;
		cleanup_free char *path = strdup(c->path.bytes);
		if (!path)
			continue;
		char *slash = strrchr(path, '/');
		if (slash) {
			*slash = '\0';
			bool inside_new = lost_new_dir(l->cs, path);
			*slash = '/';
			if (inside_new)
				continue;
		}
		const char *name;
		struct stat st;
		cleanup_close int dir = fd_open_parent(l->upper_fd, path, O_PATH, &name);
		if (dir >= 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_mtim.tv_sec == lst->st_mtim.tv_sec &&
		    st.st_mtim.tv_nsec == lst->st_mtim.tv_nsec)
			return true;
	}
	return false;
}

static bool holds_names_of(int lower_dir, const char *lname, int upper_dir, const char *uname,
			   bool *ret_empty, const struct lost *l)
{
	cleanup_close int ufd =
		openat(upper_dir, uname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = openat(lower_dir, lname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	struct stat st;
	bool all = true;

	*ret_empty = true;
	if (!d || ufd < 0) {
		if (!d && fd >= 0)
			close(fd);
		if (d)
			closedir(d);
		return false;
	}
	while (all && (de = readdir(d))) {
		struct stat lst;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		*ret_empty = false;
		if (fstatat(dirfd(d), de->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
			all = false;
			break;
		}
		if (fstatat(ufd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			all = errno == ENOENT && lost_moved_out(l, &lst);
		else
			all = (st.st_mode & S_IFMT) == (lst.st_mode & S_IFMT) &&
			      (!S_ISREG(st.st_mode) || st.st_size == lst.st_size);
	}
	closedir(d);
	return all;
}

/* The lower object (ls) and the upper one (us) of the same type, mode
 * (write bits aside) and relative place below a gone directory and a new
 * one: when the lower carried attributes the upper lacks (or holds with
 * another value), and the upper is the same content (a file's bytes; a
 * directory holding every name the lower held, and, when it held none, the
 * same modification time, as a copy that keeps times makes it), it is a
 * copy that lost them. */
static __attribute__((noinline)) int
attrs_check_object(struct lost *l, int lower_dir, const char *lname, int upper_dir, const char *uname,
		   const struct stat *ls, const struct stat *us, const char *lrel, const char *urel)
{
	cleanup_with(json_decrefp) json_t *had = NULL, *has = NULL, *missing = json_array();
	size_t i, k;
	json_t *x, *y;

	if (!missing)
		return -ENOMEM;
	if (changeset_read_xattrs(lower_dir, lname, CHANGESET_XATTRS_ALL, &had) < 0 ||
	    json_array_size(had) == 0 ||
	    changeset_read_xattrs(upper_dir, uname, CHANGESET_XATTRS_ALL, &has) < 0)
		return 0;
	json_array_foreach(had, i, x) {
		bool kept = false;
		json_array_foreach(has, k, y)
			kept |= json_equal(x, y);
		const char *name = jsonutil_str(x, "name");
		size_t n;
		cleanup_free char *shown = kept ? NULL : utf8_sanitize(name, strlen(name), &n);
		if (!kept && (!shown || json_array_append_new(missing, json_stringn(shown, n)) < 0))
			return -ENOMEM;
	}
	if (json_array_size(missing) == 0)
		return 0;
	if (l->same_times &&
	    (ls->st_mtim.tv_sec != us->st_mtim.tv_sec || ls->st_mtim.tv_nsec != us->st_mtim.tv_nsec))
		return 0;
	if (S_ISREG(ls->st_mode)) {
		char a[SHA256_HEX_SIZE], b[SHA256_HEX_SIZE];
		if (ls->st_size != us->st_size || changeset_lost_hash_file(lower_dir, lname, a) < 0 ||
		    changeset_lost_hash_file(upper_dir, uname, b) < 0 || strcmp(a, b) != 0)
			return 0;
	} else if (S_ISDIR(ls->st_mode)) {
		bool empty;
		if (!holds_names_of(lower_dir, lname, upper_dir, uname, &empty,
				    l->same_times ? NULL : l) ||
		    (empty && (ls->st_mtim.tv_sec != us->st_mtim.tv_sec ||
			       ls->st_mtim.tv_nsec != us->st_mtim.tv_nsec)))
			return 0;
	}
	if (json_array_size(l->problems) >= CHANGESET_MAX_LOST) {
		l->dropped++;
		return 0;
	}
	json_t *p = json_object();
	if (!p || json_array_append_new(l->problems, p) < 0 ||
	    changeset_set_bytes(p, "attrs_lost", urel) < 0 ||
	    changeset_set_bytes(p, "from", lrel) < 0 || json_object_set(p, "names", missing) < 0)
		return -ENOMEM;
	return 0;
}

/* Walks a gone lower object and a new upper one side by side, by name
 * (below directories only when recurse). */
static int attrs_compare(struct lost *l, int lower_dir, const char *lname, int upper_dir,
			 const char *uname, const char *lrel, const char *urel, bool recurse, int depth)
{
	struct stat ls, us;

	if (fstatat(lower_dir, lname, &ls, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fstatat(upper_dir, uname, &us, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (ls.st_mode & S_IFMT) != (us.st_mode & S_IFMT))
		return 0;
	int r = 0;
	if ((ls.st_mode & 07555) == (us.st_mode & 07555))
		r = attrs_check_object(l, lower_dir, lname, upper_dir, uname, &ls, &us, lrel, urel);
	if (r < 0 || !recurse || !S_ISDIR(ls.st_mode) || depth >= CHANGESET_MAX_DEPTH)
		return r;
	cleanup_close int ufd =
		openat(upper_dir, uname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = ufd < 0 ? -1
			 : openat(lower_dir, lname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	struct dirent *de;
	struct stat st;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(ufd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		cleanup_free char *lchild = changeset_lost_join_rel(lrel, de->d_name);
		cleanup_free char *uchild = changeset_lost_join_rel(urel, de->d_name);
		r = lchild && uchild ? attrs_compare(l, dirfd(d), de->d_name, ufd, de->d_name,
						     lchild, uchild, true, depth + 1)
				     : -ENOMEM;
	}
	closedir(d);
	return r;
}

/* Whether the upper holds a whiteout at path: the lower object there was
 * removed through the overlay (as `mv` removes what it copied), not hidden
 * by a directory made again above it. */
static bool upper_whiteout_at(int upper_fd, const char *path)
{
	const char *name;
	struct stat st;
	cleanup_close int parent = fd_open_parent(upper_fd, path, O_PATH, &name);

	return parent >= 0 && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0;
}

/* Whether the upper directory path is opaque: the lower one was removed
 * and made again, so what the lower held there is gone too. */
static bool upper_opaque_at(int upper_fd, const char *path)
{
	char value[4] = "";
	cleanup_close int fd = fd_open_beneath(upper_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	return fd >= 0 && fgetxattr(fd, "user.overlay.opaque", value, sizeof(value) - 1) > 0 &&
	       value[0] == 'y';
}

/* Whether a directory above path (path itself not) is opaque in the upper:
 * then the lower object at path is hidden by a directory made again, not
 * removed through the overlay. path is modified and restored. */
static bool upper_opaque_above(int upper_fd, char *path)
{
	bool found = false;

	for (char *slash = strchr(path, '/'); slash && !found; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		found = upper_opaque_at(upper_fd, path);
		*slash = '/';
	}
	return found;
}

static int compare_cstrings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

/* The directories to compare: gone (removed or retyped), remade (made
 * again over their lower one, opaque), made (new). Paths owned. */
struct lost_dirs {
	char **gone, **remade, **made;
	size_t n_gone, n_remade, n_made;
};

static void lost_dirs_release(struct lost_dirs *dirs)
{
	free_strings(dirs->gone, dirs->n_gone);
	free_strings(dirs->remade, dirs->n_remade);
	free_strings(dirs->made, dirs->n_made);
	free(dirs->gone);
	free(dirs->remade);
	free(dirs->made);
}

/* What of the lower is gone: directories removed through the overlay (a
 * whiteout; only a directory of the lower is copied, and mv then removes
 * it so) or now of another type; and directories made again over their
 * lower one (opaque) that lost an entry (`mv d e; mkdir d`). And the new
 * directories (created, or of a new type). */
static int lost_classify(const struct changeset *cs, int upper_fd, struct lost_dirs *dirs)
{
	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *c = &cs->entries[i];
		bool deleted = c->change == CHANGESET_DELETED;
		bool is_dir =
			changeset_entry_has(c, CHANGESET_KEY_TYPE) && c->type == CHANGESET_TYPE_DIR;
		bool retyped = c->change == CHANGESET_TYPE_CHANGED &&
			       changeset_entry_has(c, CHANGESET_KEY_OLD_TYPE) &&
			       c->old_type == CHANGESET_TYPE_DIR;
		bool new_dir = lost_entry_new(c, CHANGESET_TYPE_DIR);
		int r = 0;
		if (!deleted && !retyped && !new_dir)
			continue;
		char *path = strdup(c->path.bytes ? c->path.bytes : "");
		if (!path)
			return -ENOMEM;
		char *slash = deleted ? strrchr(path, '/') : NULL;
		if (slash) {
			*slash = '\0';
			if (upper_opaque_at(upper_fd, path)) {
				char *parent = strdup(path);
				if (parent)
					dirs->remade[dirs->n_remade++] = parent;
				else
					r = -ENOMEM;
			}
			*slash = '/';
		}
		if ((retyped && !upper_opaque_above(upper_fd, path)) ||
		    (deleted && is_dir && upper_whiteout_at(upper_fd, path)))
			dirs->gone[dirs->n_gone++] = path;
		else if (new_dir)
			dirs->made[dirs->n_made++] = path;
		else
			free(path);
		if (r < 0)
			return r;
	}
	/* Each directory made again once, however many entries it lost. */
	qsort(dirs->remade, dirs->n_remade, sizeof(char *), compare_cstrings);
	size_t i, k;
	for (i = 1, k = dirs->n_remade ? 1 : 0; i < dirs->n_remade; i++) {
		if (strcmp(dirs->remade[i], dirs->remade[k - 1]) == 0)
			free(dirs->remade[i]);
		else
			dirs->remade[k++] = dirs->remade[i];
	}
	dirs->n_remade = k;
	return 0;
}

/* Each gone or remade directory that carried attributes below it, side by
 * side with each new one. */
static int lost_compare_all(struct lost *l, int lower_fd, int upper_fd, const struct lost_dirs *dirs)
{
	int r = 0;

	for (size_t i = 0; r == 0 && dirs->n_made > 0 && i < dirs->n_gone + dirs->n_remade; i++) {
		bool again = i >= dirs->n_gone;
		l->same_times = again;
		const char *path = again ? dirs->remade[i - dirs->n_gone] : dirs->gone[i], *lname;
		cleanup_close int lparent = fd_open_parent(lower_fd, path, O_PATH, &lname);
		if (lparent < 0 || !subtree_has_attrs(lparent, lname, 0))
			continue;
		for (size_t k = 0; r == 0 && k < dirs->n_made; k++) {
			const char *uname;
			bool empty;
			cleanup_close int uparent =
				fd_open_parent(upper_fd, dirs->made[k], O_PATH, &uname);
			/* A directory made again is gone by a weaker sign (it may
			 * have been removed and refilled, `tar -x`, with the copy
			 * elsewhere never made from it): its copy must hold every
			 * name it held, and each object its time (same_times). */
			if (uparent >= 0 &&
			    (!again || holds_names_of(lparent, lname, uparent, uname, &empty, NULL)))
				r = attrs_compare(l, lparent, lname, uparent, uname, path,
						  dirs->made[k], true, 0);
		}
	}
	return r;
}

int changeset_attrs_lost(const char *upper, const char *workspace, const struct changeset *cs,
			 json_t **ret_problems, struct error *err)
{
	cleanup_close int upper_fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int lower_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_with(json_decrefp) json_t *problems = json_array();
	size_t n = cs->n_entries;

	if (upper_fd < 0 || lower_fd < 0)
		return error_set_errno(err, errno, "open the snapshot to compare attributes");
	struct lost_dirs dirs = { .gone = calloc(n + 1, sizeof(char *)),
				  .remade = calloc(n + 1, sizeof(char *)),
				  .made = calloc(n + 1, sizeof(char *)) };
	if (!problems || !dirs.gone || !dirs.remade || !dirs.made) {
		lost_dirs_release(&dirs);
		return error_set(err, ENOMEM, "out of memory");
	}
	struct lost l = { .problems = problems, .cs = cs, .upper_fd = upper_fd };
	int r = lost_classify(cs, upper_fd, &dirs);
	if (r == 0)
		r = lost_compare_all(&l, lower_fd, upper_fd, &dirs);
	lost_dirs_release(&dirs);
	if (r < 0)
		return error_set_errno(err, -r, "compare the attributes of renamed directories");
	if (l.dropped &&
	    json_array_append_new(problems, json_pack("{s:s, s:I}", "attrs_lost", "...", "dropped",
						      (json_int_t)l.dropped)) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret_problems = TAKE_PTR(problems);
	return 0;
}

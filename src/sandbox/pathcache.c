/* SPDX-License-Identifier: MIT */
#include "sandbox/pathcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/dirread.h"

/* A directory's names, read once (pathcache_list()), sorted by strcmp(). */
struct pathcache_name {
	char *name;
	unsigned char type; /* its d_type */
};

struct pathcache_listing {
	struct pathcache_name *names;
	size_t n;
};

struct pathcache_entry {
	char *path; /* NULL: a free slot */
	bool resolved, stated;
	char *real; /* realpath()'s answer, NULL with real_errno */
	int real_errno;
	struct stat st; /* lstat()'s answer, valid without st_errno */
	int st_errno;
	/* As the resolved parent of other paths: how many of its names a
	 * readlink() answered (each proving it a searchable directory), and
	 * its listing: 0 not read yet, 1 read, -1 not to be read. */
	unsigned dir_asks;
	signed char dir_listed;
	struct pathcache_listing listing;
};

struct pathcache {
	struct pathcache_entry *slots;
	size_t n_slots, used; /* a power of two; open addressing */
};

/* One per process, open only while a run is planned (pathcache.h). */
static struct pathcache *pathcache_current;

void pathcache_open(size_t paths)
{
	if (pathcache_current)
		return;
	struct pathcache *c = calloc(1, sizeof(*c));
	if (!c)
		return; /* no cache: the plain calls */
	/* Room for paths under the load factor pathcache_entry() keeps (3/4). */
	c->n_slots = 16;
	while (c->n_slots * 3 < paths * 4 && c->n_slots < ((size_t)1 << 20))
		c->n_slots *= 2;
	c->slots = calloc(c->n_slots, sizeof(c->slots[0]));
	if (!c->slots) {
		free(c);
		return;
	}
	pathcache_current = c;
}

void pathcache_close(void)
{
	struct pathcache *c = pathcache_current;

	if (!c)
		return;
	for (size_t i = 0; i < c->n_slots; i++) {
		struct pathcache_listing *l = &c->slots[i].listing;
		for (size_t j = 0; j < l->n; j++)
			free(l->names[j].name);
		free(l->names);
		free(c->slots[i].path);
		free(c->slots[i].real);
	}
	free(c->slots);
	free(c);
	pathcache_current = NULL;
}

static size_t pathcache_hash(const char *path)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a: a table index, no more */

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (size_t)h;
}

static bool pathcache_grow(struct pathcache *c)
{
	size_t n = c->n_slots * 2;
	struct pathcache_entry *slots = calloc(n, sizeof(slots[0]));

	if (!slots)
		return false;
	for (size_t i = 0; i < c->n_slots; i++) {
		if (!c->slots[i].path)
			continue;
		size_t j = pathcache_hash(c->slots[i].path) & (n - 1);
		while (slots[j].path)
			j = (j + 1) & (n - 1);
		slots[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = slots;
	c->n_slots = n;
	return true;
}

/* path's entry, made if new; NULL when memory runs out. */
static struct pathcache_entry *pathcache_entry(struct pathcache *c, const char *path)
{
	if ((c->used + 1) * 4 > c->n_slots * 3 && !pathcache_grow(c))
		return NULL;
	size_t i = pathcache_hash(path) & (c->n_slots - 1);
	while (c->slots[i].path) {
		if (strcmp(c->slots[i].path, path) == 0)
			return &c->slots[i];
		i = (i + 1) & (c->n_slots - 1);
	}
	char *copy = strdup(path);
	if (!copy)
		return NULL;
	c->slots[i] = (struct pathcache_entry){ .path = copy };
	c->used++;
	return &c->slots[i];
}

/* An absolute path without ".", ".." or empty components and without a
 * trailing slash: its realpath is its parent's plus its last name, unless
 * that name is a symlink. */
static bool pathcache_plain(const char *path, size_t len)
{
	if (path[0] != '/' || len >= PATH_MAX || (len > 1 && path[len - 1] == '/'))
		return false;
	for (const char *p = path; *p; p++)
		if (p[0] == '/' &&
		    (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0' ||
						     (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))))
			return false;
	return true;
}

/* A directory is read once this many of its names were answered by a
 * readlink() each: the read costs ~6 calls (open, fstatfs, ioctl, two
 * getdents64, close), and most directories are asked one or two names. */
#define PATHCACHE_LIST_AFTER 4
/* Larger directories are not kept: their names are asked one by one.
 * Entries, "." and ".." counted (the listing holds neither). */
#define PATHCACHE_LIST_MAX 4096

static int pathcache_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pathcache_name *)a)->name,
		      ((const struct pathcache_name *)b)->name);
}

static void pathcache_listing_free(struct pathcache_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i].name);
	free(l->names);
	*l = (struct pathcache_listing){ 0 };
}

void pathcache_forget_below(const char *dir)
{
	struct pathcache *c = pathcache_current;
	size_t n = dir ? strlen(dir) : 0;

	if (!c || n == 0)
		return;
	if (dir[n - 1] == '/') /* "/" or a trailing slash: what lies below it */
		n--;
	for (size_t i = 0; i < c->n_slots; i++) {
		struct pathcache_entry *e = &c->slots[i];
		if (!e->path || strncmp(e->path, dir, n) != 0 ||
		    (e->path[n] != '\0' && e->path[n] != '/'))
			continue;
		free(e->real);
		e->real = NULL;
		e->resolved = e->stated = false;
		e->dir_asks = 0;
		e->dir_listed = 0;
		pathcache_listing_free(&e->listing);
	}
}

/* Reads dir's names into e->listing (dir_listed 1), or marks it as not to
 * be read (-1). Only where a listing holds exactly the names a lookup
 * finds (dirread_exact(): not overlayfs, nor a case-folded or encrypted
 * directory), and at most PATHCACHE_LIST_MAX names. Anything else is asked
 * name by name. */
static void pathcache_list(struct pathcache_entry *e, const char *dir)
{
	struct pathcache_listing l = { 0 };
	size_t room = 0;
	struct dirread dr;
	struct dirread_entry de;
	char buf[8192];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	e->dir_listed = -1;
	if (fd < 0)
		return;
	if (!dirread_exact(fd))
		goto out;
	dirread_init(&dr, fd, buf, sizeof(buf));
	for (;;) {
		int got = dirread_next(&dr, &de);
		if (got == 0)
			break;
		if (got < 0)
			goto out;
		if (l.n == PATHCACHE_LIST_MAX - 2)
			goto out;
		if (l.n == room) {
			room = room ? room * 2 : 64;
			struct pathcache_name *names = realloc(l.names, room * sizeof(l.names[0]));
			if (!names)
				goto out;
			l.names = names;
		}
		char *name = strndup(de.name, de.len);
		if (!name)
			goto out;
		l.names[l.n++] = (struct pathcache_name){ .name = name, .type = de.type };
	}
	if (l.n > 1) /* an empty directory's names are NULL, which qsort() may not take */
		qsort(l.names, l.n, sizeof(l.names[0]), pathcache_name_cmp);
	e->listing = l;
	e->dir_listed = 1;
	l = (struct pathcache_listing){ 0 };
out:
	pathcache_listing_free(&l);
	close(fd);
}

/* What the listing of dir (a resolved directory) says of its name: -1
 * nothing (not read, or a name longer than a component, or an entry that
 * may be a link: only a directory entry is surely none, as only a directory
 * can be mounted on a directory, where a file could have a link mounted on
 * it), 0 that it does not exist, 1 a directory. */
static int pathcache_dir_says(const char *dir, const char *name, size_t nlen)
{
	struct pathcache *c = pathcache_current;
	struct pathcache_entry *e = c ? pathcache_entry(c, dir) : NULL;

	if (!e || nlen > NAME_MAX)
		return -1;
	if (e->dir_listed == 0 && e->dir_asks >= PATHCACHE_LIST_AFTER)
		pathcache_list(e, dir);
	if (e->dir_listed <= 0)
		return -1;
	struct pathcache_name key = { .name = (char *)name };
	const struct pathcache_name *found = e->listing.n
						     ? bsearch(&key, e->listing.names, e->listing.n,
							       sizeof(key), pathcache_name_cmp)
						     : NULL;
	if (!found)
		return 0;
	return found->type == DT_DIR ? 1 : -1;
}

/* A readlink() of full's name answered as only a searchable directory can
 * (a link, none, or no link): one more towards reading its directory, the
 * first cut bytes of full. Keeps errno. */
static void pathcache_dir_asked(char *full, size_t cut)
{
	struct pathcache *c = pathcache_current;
	int saved = errno;
	char keep = full[cut];

	full[cut] = '\0';
	struct pathcache_entry *e = c ? pathcache_entry(c, full) : NULL;
	full[cut] = keep;
	if (e)
		e->dir_asks++;
	errno = saved;
}

/* realpath() of a plain path from its parent's: one readlink() of the
 * last name; NULL with errno as realpath() fails (ENOENT, ENOTDIR, EACCES
 * of a component). A symlink is left to realpath(). */
static char *pathcache_resolve(const char *path)
{
	size_t len = strlen(path);

	if (!pathcache_plain(path, len))
		return realpath(path, NULL);
	if (len == 1)
		return strdup("/");
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX];
	size_t plen = slash == path ? 1 : (size_t)(slash - path);
	memcpy(parent, path, plen);
	parent[plen] = '\0';
	char *base = pathcache_realpath(parent);
	if (!base)
		return NULL;
	size_t blen = strlen(base), nlen = len - (size_t)(slash - path) - 1;
	if (blen + 1 + nlen >= PATH_MAX) {
		free(base);
		return realpath(path, NULL);
	}
	int says = pathcache_dir_says(base, slash + 1, nlen);
	if (says == 0) {
		free(base);
		errno = ENOENT;
		return NULL;
	}
	size_t cut = blen > 1 ? blen : 1; /* full cut there is base */
	char *full = realloc(base, blen + 1 + nlen + 1);
	if (!full) {
		free(base);
		return NULL;
	}
	if (blen > 1)
		full[blen++] = '/';
	memcpy(full + blen, slash + 1, nlen + 1);
	if (says == 1)
		return full; /* listed, a directory */
	char byte;
	if (readlink(full, &byte, 1) >= 0) {
		pathcache_dir_asked(full, cut);
		free(full);
		return realpath(path, NULL);
	}
	if (errno == EINVAL || errno == ENOENT)
		pathcache_dir_asked(full, cut);
	if (errno == EINVAL)
		return full; /* there, and no symlink */
	int saved = errno;
	free(full);
	errno = saved;
	return NULL;
}

char *pathcache_realpath(const char *path)
{
	struct pathcache *c = pathcache_current;
	struct pathcache_entry *e = c ? pathcache_entry(c, path) : NULL;

	if (!e)
		return realpath(path, NULL);
	if (!e->resolved) {
		char *real = pathcache_resolve(path);
		int saved = errno;
		/* The recursion may have grown the table: find the entry again. */
		e = pathcache_entry(c, path);
		if (!e) {
			errno = saved;
			return real;
		}
		e->real = real;
		e->real_errno = real ? 0 : saved;
		e->resolved = true;
	}
	if (!e->real) {
		errno = e->real_errno;
		return NULL;
	}
	return strdup(e->real);
}

int pathcache_lstat(const char *path, struct stat *st)
{
	struct pathcache *c = pathcache_current;
	struct pathcache_entry *e = c ? pathcache_entry(c, path) : NULL;

	if (!e)
		return lstat(path, st);
	if (!e->stated) {
		e->st_errno = lstat(path, &e->st) < 0 ? errno : 0;
		e->stated = true;
	}
	if (e->st_errno) {
		errno = e->st_errno;
		return -1;
	}
	*st = e->st;
	return 0;
}

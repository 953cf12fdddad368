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
#include "basic/macro.h"

/* A directory's name in its listing: where it starts in the pool. */
struct pathcache_name {
	uint32_t at; /* offset in pool */
	unsigned char type; /* its d_type */
	bool used; /* false: a free slot */
};

/* A directory's names, read once (pathcache_list()): end to end in one
 * pool, found through an open-addressing table of n_slots (a power of two,
 * at least twice the names). A table, not a sorted array: sorting each
 * listing (qsort() with strcmp(), a strndup() per name) was ~13% of the
 * instructions before clone3. */
struct pathcache_listing {
	char *pool;
	struct pathcache_name *slots;
	size_t n_slots;
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

/* The slots hold pointers, each entry allocated when made: a table of the
 * entries themselves (about 200 bytes each, with their struct stat) was
 * 104 KiB zeroed at every run's start for the ~200 paths a plan asks,
 * ~25 pages faulted in on the start's path. An entry also keeps its
 * address when the table grows. */
struct pathcache {
	struct pathcache_entry **slots;
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
	c->slots = calloc(c->n_slots, sizeof(struct pathcache_entry *));
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
		struct pathcache_entry *e = c->slots[i];
		if (!e)
			continue;
		free(e->listing.pool);
		free(e->listing.slots);
		free(e->path);
		free(e->real);
		free(e);
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
	struct pathcache_entry **slots = calloc(n, sizeof(struct pathcache_entry *));

	if (!slots)
		return false;
	for (size_t i = 0; i < c->n_slots; i++) {
		if (!c->slots[i])
			continue;
		size_t j = pathcache_hash(c->slots[i]->path) & (n - 1);
		while (slots[j])
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
	while (c->slots[i]) {
		if (strcmp(c->slots[i]->path, path) == 0)
			return c->slots[i];
		i = (i + 1) & (c->n_slots - 1);
	}
	struct pathcache_entry *e = malloc(sizeof(*e));
	char *copy = strdup(path);
	if (!e || !copy) {
		free(e);
		free(copy);
		return NULL;
	}
	*e = (struct pathcache_entry){ .path = copy };
	c->slots[i] = e;
	c->used++;
	return e;
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

static void pathcache_listing_free(struct pathcache_listing *l)
{
	free(l->pool);
	free(l->slots);
	*l = (struct pathcache_listing){ 0 };
}

/* name's slot in l: a used one holding it, or the free one where it
 * would go. */
static struct pathcache_name *pathcache_listing_slot(const struct pathcache_listing *l, const char *name)
{
	size_t i = pathcache_hash(name) & (l->n_slots - 1);

	while (l->slots[i].used && strcmp(l->pool + l->slots[i].at, name) != 0)
		i = (i + 1) & (l->n_slots - 1);
	return &l->slots[i];
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
		struct pathcache_entry *e = c->slots[i];
		if (!e || strncmp(e->path, dir, n) != 0 || (e->path[n] != '\0' && e->path[n] != '/'))
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
 * directory), and at most PATHCACHE_LIST_MAX_NAMES names. Anything else is asked
 * name by name. */
static void pathcache_list(struct pathcache_entry *e, const char *dir)
{
	struct pathcache_listing l = { 0 };
	struct pathcache_name *names = NULL; /* in the order read */
	size_t n = 0, room = 0, pool_len = 0, pool_room = 0;
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
		if (n == PATHCACHE_LIST_MAX_NAMES) /* one more: not kept */
			goto out;
		if (n == room) {
			room = room ? room * 2 : 64;
			struct pathcache_name *more = realloc(names, room * sizeof(names[0]));
			if (!more)
				goto out;
			names = more;
		}
		if (pool_len + de.len + 1 > pool_room) {
			pool_room = MAX(pool_room * 2, pool_len + de.len + 1 + 4096);
			char *more = realloc(l.pool, pool_room);
			if (!more)
				goto out;
			l.pool = more;
		}
		memcpy(l.pool + pool_len, de.name, de.len);
		l.pool[pool_len + de.len] = '\0';
		names[n++] = (struct pathcache_name){ .at = (uint32_t)pool_len,
						      .type = de.type,
						      .used = true };
		pool_len += de.len + 1;
	}
	l.n_slots = 16;
	while (l.n_slots < n * 2)
		l.n_slots *= 2;
	l.slots = calloc(l.n_slots, sizeof(l.slots[0]));
	if (!l.slots)
		goto out;
	for (size_t i = 0; i < n; i++)
		*pathcache_listing_slot(&l, l.pool + names[i].at) = names[i];
	e->listing = l;
	e->dir_listed = 1;
	l = (struct pathcache_listing){ 0 };
out:
	free(names);
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
	const struct pathcache_name *found = pathcache_listing_slot(&e->listing, name);
	if (!found->used)
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

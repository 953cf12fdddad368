/* SPDX-License-Identifier: MIT */
#include "sandbox/pathcache.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pathcache_entry {
	char *path; /* NULL: a free slot */
	bool resolved, stated;
	char *real; /* realpath()'s answer, NULL with real_errno */
	int real_errno;
	struct stat st; /* lstat()'s answer, valid without st_errno */
	int st_errno;
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
	char *full = realloc(base, blen + 1 + nlen + 1);
	if (!full) {
		free(base);
		return NULL;
	}
	if (blen > 1)
		full[blen++] = '/';
	memcpy(full + blen, slash + 1, nlen + 1);
	char byte;
	if (readlink(full, &byte, 1) >= 0) {
		free(full);
		return realpath(path, NULL);
	}
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

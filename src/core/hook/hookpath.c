/* SPDX-License-Identifier: MIT */
#include "core/hook/hookpath.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"

/* path as the kernel will resolve it once the tool has created what is
 * missing: the longest existing prefix through realpath() (every symlink
 * followed), the rest lexically ("." dropped, ".." one up), because the
 * tool creates those directories itself, as plain ones. A dangling symlink
 * on the way is followed too: writing it creates its target. A relative
 * path is relative to base (the process's cwd when NULL). NULL: out of
 * memory, or more than 40 symlinks. */
static char *hookpath_resolve_at(const char *base, const char *path, unsigned depth)
{
	cleanup_free char *here = NULL;

	if (depth > 40)
		return NULL;
	if (path[0] != '/' && !base) {
		here = getcwd(NULL, 0);
		if (!here)
			return NULL;
		base = here;
	}
	cleanup_free char *prefix = path[0] == '/' ? strdup(path) : path_join(base, path);
	if (!prefix)
		return NULL;
	char *tail = prefix + strlen(prefix); /* the components realpath() did not resolve */
	cleanup_free char *real = NULL;
	for (;;) {
		char saved = *tail;
		*tail = '\0';
		real = realpath(prefix[0] ? prefix : "/", NULL);
		struct stat st;
		if (!real && prefix[0] && lstat(prefix, &st) == 0 && S_ISLNK(st.st_mode)) {
			/* Dangling: go on from its target, with the rest after it. */
			char target[PATH_MAX];
			ssize_t n = readlink(prefix, target, sizeof(target) - 1);
			cleanup_free char *dir = n > 0 ? path_dirname(prefix) : NULL;
			*tail = saved;
			if (!dir)
				return NULL;
			target[n] = '\0';
			cleanup_free char *next = NULL;
			if (asprintf(&next, "%s%s", target, tail) < 0)
				return NULL;
			return hookpath_resolve_at(dir, next, depth + 1);
		}
		*tail = saved;
		if (real || tail == prefix)
			break;
		do
			tail--;
		while (tail > prefix && *tail != '/');
	}
	if (!real)
		return NULL;
	size_t cap = strlen(real) + strlen(tail) + 2;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	strcpy(out, real);
	for (char *c = tail; *c;) {
		while (*c == '/')
			c++;
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.')) {
			/* nothing */
		} else if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *slash = strrchr(out, '/');
			if (slash)
				slash[slash == out ? 1 : 0] = '\0';
		} else {
			size_t len = strlen(out);
			if (len > 1)
				out[len++] = '/';
			memcpy(out + len, c, n);
			out[len + n] = '\0';
		}
		c += n;
	}
	return out;
}

/* The directories the walks of one hook call passed (hookpath_walk()):
 * each resolved prefix that is a directory (not a symlink), walked through
 * without another lstat(). Only a cache of what the call already asked: the check of one tool
 * call takes the host's paths as they were when first looked at, as one
 * list's walks always did. A hash table (FNV-1a, linear probing): the
 * check of a file tool walks ~200 paths of ~6 components each, and a list
 * of the directories seen was searched string by string at each. */

struct hookpath_slot {
	char *key;
	size_t len, hash;
};

struct hookpath_cache {
	struct hookpath_slot *slots;
	size_t cap, n; /* cap: 0 or a power of two */
};

void hookpath_cache_free(struct hookpath_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].key);
	free(c->slots);
	free(c);
}

/* FNV-1a of len more bytes of key, on from h (HOOKPATH_HASH0: none yet):
 * a walk hashes each prefix from the one before. */
#define HOOKPATH_HASH0 ((size_t)14695981039346656037ULL)
static size_t hookpath_hash(size_t h, const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * (size_t)1099511628211ULL;
	return h;
}

/* Whether key (len bytes, hashed h) is in the cache. */
static bool hookpath_seen(const struct hookpath_cache *c, const char *key, size_t len, size_t h)
{
	if (!c || c->cap == 0)
		return false;
	for (size_t i = h & (c->cap - 1); c->slots[i].key; i = (i + 1) & (c->cap - 1)) {
		const struct hookpath_slot *e = &c->slots[i];
		if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
			return true;
	}
	return false;
}

/* Adds key (len bytes, hashed h), not in it before; a failure only leaves
 * it out of the cache. */
static void hookpath_put(struct hookpath_cache *c, const char *key, size_t len, size_t h)
{
	if (!c)
		return;
	if (2 * (c->n + 1) > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct hookpath_slot *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return;
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->slots[i].key)
				continue;
			size_t k = c->slots[i].hash & (cap - 1);
			while (slots[k].key)
				k = (k + 1) & (cap - 1);
			slots[k] = c->slots[i];
		}
		free(c->slots);
		c->slots = slots;
		c->cap = cap;
	}
	char *copy = strndup(key, len);
	if (!copy)
		return;
	size_t k = h & (c->cap - 1);
	while (c->slots[k].key)
		k = (k + 1) & (c->cap - 1);
	c->slots[k] = (struct hookpath_slot){ .key = copy, .len = len, .hash = h };
	c->n++;
}

/* Appends "/" and the n bytes of c to *out (*len long, *cap allocated). */
static bool hookpath_append(char **out, size_t *len, size_t *cap, const char *c, size_t n)
{
	if (*len + n + 2 > *cap) {
		size_t want = 2 * (*len + n + 2);
		char *grown = realloc(*out, want);
		if (!grown)
			return false;
		*out = grown;
		*cap = want;
	}
	(*out)[(*len)++] = '/';
	memcpy(*out + *len, c, n);
	*len += n;
	(*out)[*len] = '\0';
	return true;
}

/* Drops the last component of out ("" is "/"). */
static void hookpath_up(char *out, size_t *len)
{
	while (*len > 0 && out[*len - 1] != '/')
		(*len)--;
	if (*len > 0)
		(*len)--;
	out[*len] = '\0';
}

/* hookpath_resolve_at() of an absolute path, in one walk from the root: each
 * component is lstat()ed once, a symlink (dangling or not) is replaced by
 * its target, and from the first component that does not exist on, the
 * rest is taken lexically. The same answer as realpath() of the longest
 * existing prefix, tried from the longest down, which readlink()ed every
 * component of every prefix: a hook call with a file tool resolves a
 * hundred paths (the hide list, the hosts' settings), 1,300 system calls. */
static char *hookpath_walk(const char *path, struct hookpath_cache *cache)
{
	cleanup_free char *todo = NULL; /* what is left after a symlink's target */
	size_t len = 0, cap = strlen(path) + 2;
	char *out = malloc(cap);
	const char *p = path;
	bool lexical = false, failed = false;
	unsigned links = 0;
	size_t hash = HOOKPATH_HASH0, hashed = 0; /* FNV-1a of out's first hashed bytes */

	if (!out)
		return NULL;
	out[0] = '\0';
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.')) {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			hookpath_up(out, &len);
			p += n;
			continue;
		}
		size_t before = len;
		if (!hookpath_append(&out, &len, &cap, p, n)) {
			failed = true;
			break;
		}
		p += n;
		struct stat sb;
		if (lexical)
			continue;
		if (cache) {
			/* out's hash from its parent's when that is the last one hashed */
			hash = hashed == before ? hookpath_hash(hash, out + before, len - before)
						: hookpath_hash(HOOKPATH_HASH0, out, len);
			hashed = len;
		}
		if (hookpath_seen(cache, out, len, hash))
			continue;
		if (lstat(out, &sb) < 0) {
			lexical = true;
			continue;
		}
		if (!S_ISLNK(sb.st_mode)) {
			/* Only a cache: without memory, the next walk looks again. */
			if (S_ISDIR(sb.st_mode))
				hookpath_put(cache, out, len, hash);
			continue;
		}
		char target[PATH_MAX];
		ssize_t t = ++links > 40 ? -1 : readlink(out, target, sizeof(target) - 1);
		if (t <= 0) {
			failed = true; /* a loop, or a link gone since lstat() */
			break;
		}
		target[t] = '\0';
		hookpath_up(out, &len);
		if (target[0] == '/')
			len = 0, out[0] = '\0';
		char *next = NULL;
		if (asprintf(&next, "%s/%s", target, p) < 0) {
			failed = true;
			break;
		}
		free(todo);
		todo = next;
		p = todo;
	}
	if (failed) {
		free(out);
		return NULL;
	}
	if (len == 0)
		return hookpath_append(&out, &len, &cap, "", 0) ? out : (free(out), NULL);
	return out;
}

/* An absolute path, or one relative to an absolute base, in one walk
 * (hookpath_walk()); relative to the cwd, hookpath_resolve_at(). cache
 * (when not NULL) holds the directories the walks so far passed, for the
 * walks that pass them again (the hide list is mostly below /etc and the
 * home). */
char *hookpath_resolve(const char *base, const char *path, struct hookpath_cache *cache)
{
	if (path[0] == '/')
		return hookpath_walk(path, cache);
	if (base && base[0] == '/') {
		cleanup_free char *joined = path_join(base, path);
		return joined ? hookpath_walk(joined, cache) : NULL;
	}
	return hookpath_resolve_at(base, path, 0);
}

struct hookpath_cache *hookpath_cache_new(void)
{
	return calloc(1, sizeof(struct hookpath_cache));
}

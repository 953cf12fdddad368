/* SPDX-License-Identifier: MIT */
/* The hook's path resolution (core/hook/hookpath.c) against the one it
 * replaced, kept here verbatim as the oracle (hook.c's hook_resolve_at()
 * and hook_resolve_walk() as of 9829951): on generated trees (symlinks
 * relative, absolute, dangling, in loops, to hidden paths, into and out of
 * the workspace; "..", "//", trailing slashes, missing components, case
 * and Unicode variants, long names, big directories, directories that can
 * be listed but not searched and the reverse) and generated paths, every
 * resolved path must be the same string and every verdict the same (a
 * target under a hidden path, or a root above one: what the hook refuses).
 * Except where a ".." drops a name that does not exist: the old walk took
 * the rest as text (and missed a symlink after it), so there, and
 * everywhere besides, each path must also be what a plain reference
 * (ref_walk(): openat() name by name) finds, and hookpath_resolve_both()'s
 * other reading what it finds after ".." is dropped as text. As root, the
 * same is checked again as nobody, where the permissions bite. Not
 * timed. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/host/hostview.h"
#include "core/hook/hooklinks.h"
#include "core/hook/hookpath.h"
#include "sandbox/pathcache.h"
#include "harness.h"

/* ---- the oracle: hook.c as it was (names prefixed oracle_) ---- */

/* path as the kernel will resolve it once the tool has created what is
 * missing: the longest existing prefix through realpath() (every symlink
 * followed), the rest lexically ("." dropped, ".." one up), because the
 * tool creates those directories itself, as plain ones. A dangling symlink
 * on the way is followed too: writing it creates its target. A relative
 * path is relative to base (the process's cwd when NULL). NULL: out of
 * memory, or more than 40 symlinks. */
static char *oracle_resolve_at(const char *base, const char *path, unsigned depth)
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
			return oracle_resolve_at(dir, next, depth + 1);
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

/* The directories the walks of one hook call passed (oracle_resolve_walk()):
 * each resolved prefix that is a directory (not a symlink), walked through
 * without another lstat(). Only a cache of what the call already asked: the check of one tool
 * call takes the host's paths as they were when first looked at, as one
 * list's walks always did. A hash table (FNV-1a, linear probing): the
 * check of a file tool walks ~200 paths of ~6 components each, and a list
 * of the directories seen was searched string by string at each. */

struct oracle_walk_slot {
	char *key;
	size_t len, hash;
};

struct oracle_walk_cache {
	struct oracle_walk_slot *slots;
	size_t cap, n; /* cap: 0 or a power of two */
};

static void oracle_walk_cache_free(struct oracle_walk_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].key);
	free(c->slots);
	free(c);
}

/* FNV-1a of len more bytes of key, on from h (ORACLE_WALK_HASH0: none yet):
 * a walk hashes each prefix from the one before. */
#define ORACLE_WALK_HASH0 ((size_t)14695981039346656037ULL)
static size_t oracle_walk_hash(size_t h, const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * (size_t)1099511628211ULL;
	return h;
}

/* Whether key (len bytes, hashed h) is in the cache. */
static bool oracle_walk_seen(const struct oracle_walk_cache *c, const char *key, size_t len, size_t h)
{
	if (!c || c->cap == 0)
		return false;
	for (size_t i = h & (c->cap - 1); c->slots[i].key; i = (i + 1) & (c->cap - 1)) {
		const struct oracle_walk_slot *e = &c->slots[i];
		if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
			return true;
	}
	return false;
}

/* Adds key (len bytes, hashed h), not in it before; a failure only leaves
 * it out of the cache. */
static void oracle_walk_put(struct oracle_walk_cache *c, const char *key, size_t len, size_t h)
{
	if (!c)
		return;
	if (2 * (c->n + 1) > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct oracle_walk_slot *slots = calloc(cap, sizeof(*slots));
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
	c->slots[k] = (struct oracle_walk_slot){ .key = copy, .len = len, .hash = h };
	c->n++;
}

/* Appends "/" and the n bytes of c to *out (*len long, *cap allocated). */
static bool oracle_walk_append(char **out, size_t *len, size_t *cap, const char *c, size_t n)
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
static void oracle_walk_up(char *out, size_t *len)
{
	while (*len > 0 && out[*len - 1] != '/')
		(*len)--;
	if (*len > 0)
		(*len)--;
	out[*len] = '\0';
}

/* oracle_resolve_at() of an absolute path, in one walk from the root: each
 * component is lstat()ed once, a symlink (dangling or not) is replaced by
 * its target, and from the first component that does not exist on, the
 * rest is taken lexically. The same answer as realpath() of the longest
 * existing prefix, tried from the longest down, which readlink()ed every
 * component of every prefix: a hook call with a file tool resolves a
 * hundred paths (the hide list, the hosts' settings), 1,300 system calls. */
static char *oracle_resolve_walk(const char *path, struct oracle_walk_cache *cache)
{
	cleanup_free char *todo = NULL; /* what is left after a symlink's target */
	size_t len = 0, cap = strlen(path) + 2;
	char *out = malloc(cap);
	const char *p = path;
	bool lexical = false, failed = false;
	unsigned links = 0;
	size_t hash = ORACLE_WALK_HASH0, hashed = 0; /* FNV-1a of out's first hashed bytes */

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
			oracle_walk_up(out, &len);
			p += n;
			continue;
		}
		size_t before = len;
		if (!oracle_walk_append(&out, &len, &cap, p, n)) {
			failed = true;
			break;
		}
		p += n;
		struct stat sb;
		if (lexical)
			continue;
		if (cache) {
			/* out's hash from its parent's when that is the last one hashed */
			hash = hashed == before ? oracle_walk_hash(hash, out + before, len - before)
						: oracle_walk_hash(ORACLE_WALK_HASH0, out, len);
			hashed = len;
		}
		if (oracle_walk_seen(cache, out, len, hash))
			continue;
		if (lstat(out, &sb) < 0) {
			lexical = true;
			continue;
		}
		if (!S_ISLNK(sb.st_mode)) {
			/* Only a cache: without memory, the next walk looks again. */
			if (S_ISDIR(sb.st_mode))
				oracle_walk_put(cache, out, len, hash);
			continue;
		}
		char target[PATH_MAX];
		ssize_t t = ++links > 40 ? -1 : readlink(out, target, sizeof(target) - 1);
		if (t <= 0) {
			failed = true; /* a loop, or a link gone since lstat() */
			break;
		}
		target[t] = '\0';
		oracle_walk_up(out, &len);
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
		return oracle_walk_append(&out, &len, &cap, "", 0) ? out : (free(out), NULL);
	return out;
}

/* oracle_resolve() of many paths: cache (when not NULL) holds the
 * directories the walks so far passed (oracle_walk_cache), for the walks that
 * pass them again (the hide list is mostly below /etc and the home). */
static char *oracle_resolve_known(const char *base, const char *path, struct oracle_walk_cache *cache)
{
	if (path[0] == '/')
		return oracle_resolve_walk(path, cache);
	if (base && base[0] == '/') {
		cleanup_free char *joined = path_join(base, path);
		return joined ? oracle_resolve_walk(joined, cache) : NULL;
	}
	return oracle_resolve_at(base, path, 0);
}

/* core/host/hostview.c's hostview_resolve() as of f474e2b, verbatim (names
 * prefixed oracle_): glibc's realpath() of the path, else of its longest
 * prefix that resolves, the rest appended as written; the path itself
 * when realpath() fails otherwise than with ENOENT. */
static char *oracle_hostview_resolve(const char *path)
{
	if (!path || path[0] != '/')
		return NULL;
	char *resolved = pathcache_realpath(path);
	if (resolved || errno != ENOENT)
		return resolved ? resolved : strdup(path);
	/* The longest prefix that exists, resolved, plus the rest. */
	cleanup_free char *head = strdup(path);
	if (!head)
		return NULL;
	for (char *slash = strrchr(head, '/'); slash; slash = strrchr(head, '/')) {
		*slash = '\0';
		cleanup_free char *base = pathcache_realpath(head[0] ? head : "/");
		if (!base)
			continue;
		const char *rest = path + (slash - head) + 1;
		char *out = NULL;
		return asprintf(&out, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", rest) < 0
			       ? NULL
			       : out;
	}
	return strdup(path);
}

/* ---- generated trees and paths ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*: the same sequence on every run of a seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

/* Names the trees and paths are made of: hidden-looking, case and Unicode
 * variants (é composed and decomposed), a space, dots, a 255-byte name. */
static const char *const names[] = {
	"a",	    "b",      "ws",   "home",	".ssh",	    ".aws",	 ".config",
	"gh",	    "Foo",    "foo",  "FOO",	"\xc3\xa9", "e\xcc\x81", "sp ace",
	"x..",	    "...",    ".git", "config", "hooks",    ".claude",	 "settings.json",
	".airlock", "README", "src",  "link",	"loop",	    "etc",	 NULL,
};

static char long_name[256]; /* 255 bytes: the longest a component may be */
static char too_long[300]; /* one no directory holds */

static const char *any_name(void)
{
	size_t n = 0;

	while (names[n])
		n++;
	uint32_t k = rnd((uint32_t)n + 2);
	return k == n ? long_name : k == n + 1 ? too_long : names[k];
}

struct tree {
	char root[64];
	char **nodes; /* every path made (absolute), dirs first */
	char **dirs;
};

static void tree_add(char ***list, const char *path)
{
	if (strv_push(list, path) < 0)
		abort();
}

/* ---- the reference: both readings, straightforwardly ---- */

/* An absolute path as the kernel resolves it once a tool has made what is
 * missing, resolved the plain way, independently of hookpath.c: a
 * directory held open (O_PATH) and looked in by name (fstatat(),
 * readlinkat(), openat() of the name or of ".."), the name of where it
 * ends up read back from /proc/self/fd; below a name that does not exist
 * (or a file), the names as text, each ".." dropping one of them, and with
 * none left, lookups go on. *ret_dropped: a ".." dropped a name that does
 * not exist (where the old walk took the rest as text). NULL: more than 40
 * symlinks (or a failure). */
static char *ref_walk(const char *path, bool *ret_dropped)
{
	cleanup_free char *rest = strdup(path);
	cleanup_strv char **tail = calloc(1, sizeof(char *)); /* the names as text */
	bool other = false; /* tail[0] is a file that exists, not a missing name */
	unsigned links = 0;
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *p;

	if (!rest || !tail || dir < 0)
		abort();
	p = rest;
	*ret_dropped = false;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		cleanup_free char *name = strndup(p, n);
		p += n;
		size_t nt = strv_length(tail);
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			if (nt > 0) {
				if (!(other && nt == 1))
					*ret_dropped = true;
				else
					other = false;
				free(tail[nt - 1]);
				tail[nt - 1] = NULL;
				continue;
			}
			int up = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (up < 0 && errno == EACCES) {
				/* a directory that cannot be searched: its parent by name */
				char fdpath[64], here[PATH_MAX];
				snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dir);
				ssize_t r = readlink(fdpath, here, sizeof(here) - 1);
				if (r <= 0)
					abort();
				here[r] = '\0';
				cleanup_free char *parent = path_dirname(here);
				up = parent ? open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
			}
			if (up < 0)
				abort();
			close(dir);
			dir = up;
			continue;
		}
		struct stat sb;
		if (nt > 0 || fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			tree_add(&tail, name); /* missing, or below what is */
			continue;
		}
		if (S_ISDIR(sb.st_mode)) {
			int down = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (down < 0)
				abort();
			close(dir);
			dir = down;
			continue;
		}
		if (!S_ISLNK(sb.st_mode)) {
			tree_add(&tail, name);
			other = true;
			continue;
		}
		char target[PATH_MAX];
		ssize_t t = ++links > 40 ? -1 : readlinkat(dir, name, target, sizeof(target) - 1);
		if (t <= 0) {
			close(dir);
			return NULL;
		}
		target[t] = '\0';
		if (target[0] == '/') {
			close(dir);
			dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
		char *next = NULL;
		if (asprintf(&next, "%s/%s", target, p) < 0)
			abort();
		free(rest);
		rest = next;
		p = rest;
	}
	char fdpath[64], real[PATH_MAX];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dir);
	ssize_t r = readlink(fdpath, real, sizeof(real) - 1);
	close(dir);
	if (r <= 0)
		abort();
	real[r] = '\0';
	char *out = strdup(real);
	for (size_t i = 0; out && tail[i]; i++) {
		char *joined = path_join(out, tail[i]);
		free(out);
		out = joined;
	}
	if (!out)
		abort();
	return out;
}

/* path (absolute) with each ".." taking the name before it, as text. */
static char *ref_normalize(const char *path)
{
	cleanup_strv char **parts = calloc(1, sizeof(char *));
	cleanup_free char *copy = strdup(path);
	char *save = NULL;

	if (!parts || !copy)
		abort();
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		size_t n = strv_length(parts);
		if (strcmp(c, "..") == 0) {
			if (n > 0) {
				free(parts[n - 1]);
				parts[n - 1] = NULL;
			}
		} else if (strcmp(c, ".") != 0) {
			tree_add(&parts, c);
		}
	}
	char *out = strdup("/");
	for (size_t i = 0; out && parts[i]; i++) {
		char *joined = path_join(out, parts[i]);
		free(out);
		out = joined;
	}
	if (!out)
		abort();
	return out;
}

/* base/path made absolute as hookpath_resolve() takes it (the cwd below
 * a relative base). */
static char *ref_absolute(const char *base, const char *path)
{
	char here[PATH_MAX];

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(here, sizeof(here)))
		abort();
	cleanup_free char *from = !base		   ? strdup(here)
				  : base[0] == '/' ? strdup(base)
						   : path_join(here, base);
	return path_join(from, path);
}

static char *tree_pick(char **list)
{
	return list[rnd((uint32_t)strv_length(list))];
}

/* A symlink's target: absolute or relative, to what exists or not, through
 * "..", "//" or ending in "/", to itself, to the root, to the host's /etc. */
static char *tree_link_target(struct tree *t, const char *link)
{
	char *s = NULL;
	int r;

	switch (rnd(10)) {
	case 0:
		r = asprintf(&s, "%s", tree_pick(t->nodes));
		break;
	case 1:
		r = asprintf(&s, "%s/%s", tree_pick(t->dirs), any_name());
		break;
	case 2:
		r = asprintf(&s, "../%s", any_name());
		break;
	case 3:
		r = asprintf(&s, "%s", any_name());
		break;
	case 4:
		r = asprintf(&s, "%s", link); /* itself: a loop */
		break;
	case 5:
		r = asprintf(&s, "%s/", tree_pick(t->dirs));
		break;
	case 6:
		r = asprintf(&s, "%s//%s/../%s", tree_pick(t->dirs), any_name(), any_name());
		break;
	case 7:
		r = asprintf(&s, rnd(2) ? "/" : "/etc");
		break;
	case 8:
		r = asprintf(&s, "./%s/.", any_name());
		break;
	default:
		r = asprintf(&s, "../../%s/%s", any_name(), any_name());
		break;
	}
	if (r < 0)
		abort();
	return s;
}

static void tree_make(struct tree *t, unsigned steps, bool seed_first)
{
	static const char *const skel[] = { "ws",     "ws/src",	      "ws/.git",   "ws/.git/hooks",
					    "home",   "home/.config", "home/.ssh", "big",
					    "locked", "xonly",	      "ronly",	   "etc",
					    NULL };
	char p[PATH_MAX];

	strcpy(t->root, "/tmp/test-hookpath-XXXXXX");
	if (!mkdtemp(t->root) || chmod(t->root, 0755) < 0)
		abort();
	t->nodes = calloc(1, sizeof(char *));
	t->dirs = calloc(1, sizeof(char *));
	tree_add(&t->dirs, t->root);
	for (size_t i = 0; skel[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", t->root, skel[i]);
		if (mkdir(p, 0755) < 0)
			abort();
		tree_add(&t->nodes, p);
		tree_add(&t->dirs, p);
	}
	/* A directory too big to be listed cheaply (in the first tree). */
	for (unsigned i = 0; i < 1100 && strv_length(t->nodes) < 16 && seed_first; i++) {
		snprintf(p, sizeof(p), "%s/big/f%u", t->root, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			abort();
		close(fd);
	}
	for (unsigned i = 0; i < steps; i++) {
		const char *dir = tree_pick(t->dirs);
		const char *name = any_name();
		if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
			continue;
		struct stat sb;
		if (lstat(p, &sb) == 0 || errno != ENOENT)
			continue;
		switch (rnd(4)) {
		case 0:
			if (mkdir(p, 0755) == 0) {
				tree_add(&t->nodes, p);
				tree_add(&t->dirs, p);
			}
			break;
		case 1: {
			int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd >= 0) {
				close(fd);
				tree_add(&t->nodes, p);
			}
			break;
		}
		default: {
			cleanup_free char *target = tree_link_target(t, p);
			if (symlink(target, p) == 0)
				tree_add(&t->nodes, p);
			break;
		}
		}
	}
	/* Directories that cannot be searched, or listed, or neither (for
	 * nobody; root passes them all). */
	snprintf(p, sizeof(p), "%s/locked", t->root);
	(void)chmod(p, 0);
	snprintf(p, sizeof(p), "%s/xonly", t->root);
	(void)chmod(p, 0111);
	snprintf(p, sizeof(p), "%s/ronly", t->root);
	(void)chmod(p, 0444);
}

static void tree_remove(struct tree *t)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s && rm -rf %s", t->root, t->root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", t->root);
	strv_free(t->nodes);
	strv_free(t->dirs);
}

/* A path to resolve: from the tree's root, one of its nodes or the host's
 * root, then components (names, ".", "..", empty ones: "//"), maybe with a
 * trailing slash; sometimes relative (to a base). */
static char *gen_path(struct tree *t, bool *ret_relative)
{
	char p[2 * PATH_MAX];
	size_t n = 0;
	unsigned parts = rnd(6);

	*ret_relative = rnd(8) == 0;
	if (!*ret_relative) {
		const char *start = rnd(4) == 0 ? t->root : rnd(10) == 0 ? "" : tree_pick(t->nodes);
		n = (size_t)snprintf(p, sizeof(p), "%s", start);
	}
	for (unsigned i = 0; i < parts && n < sizeof(p) - 400; i++) {
		const char *c;
		switch (rnd(12)) {
		case 0:
			c = ".";
			break;
		case 1:
		case 2:
			c = "..";
			break;
		case 3:
			c = "";
			break;
		default:
			c = any_name();
			break;
		}
		n += (size_t)snprintf(p + n, sizeof(p) - n, "%s%s", n || !*ret_relative ? "/" : "", c);
	}
	if (rnd(6) == 0 && n < sizeof(p) - 2)
		p[n++] = '/', p[n] = '\0';
	if (n == 0)
		strcpy(p, *ret_relative ? "." : "/");
	char *s = strdup(p);
	if (!s)
		abort();
	return s;
}

/* ---- the comparison ---- */

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* What the hook refuses of targets against a hide list (hook.c's
 * hook_targets_hidden() and hook_targets_config()): a bit for each target
 * under a hidden path, or, for a root, above one. */
static unsigned verdict(char **targets, const bool *roots, size_t nt, char **hidden, size_t nh)
{
	unsigned refused = 0;

	for (size_t i = 0; i < nt; i++)
		for (size_t k = 0; k < nh && targets[i]; k++)
			if (hidden[k] && (path_is_under(targets[i], hidden[k]) ||
					  (roots[i] && path_is_under(hidden[k], targets[i]))))
				refused |= 1u << i;
	return refused;
}

/* hostview_resolve_in() against the oracle (oracle_hostview_resolve())
 * for one call's paths, through one cache (as a hook call's lists share
 * one), each asked twice, with the host's system directories and some of
 * the tree's own nodes (and a name below each); the number of differences,
 * each printed. */
static unsigned compare_hostview(struct tree *t, char **named, size_t nt, char **hid, size_t nh)
{
	static const char *const host[] = { "/",
					    "/var",
					    "/var/tmp",
					    "/tmp",
					    "/etc",
					    "/usr",
					    "/bin",
					    "/sbin",
					    "/lib",
					    "/lib64",
					    "/proc",
					    "/root",
					    "/home",
					    "/snap",
					    "/libx32",
					    "/proc/self/root/etc",
					    "/proc/self/cwd/a",
					    NULL };
	struct hostview_cache *c = hostview_cache_new();
	cleanup_strv char **paths = NULL;
	unsigned diffs = 0;

	if (!c)
		abort();
	for (size_t i = 0; host[i]; i++)
		tree_add(&paths, host[i]);
	for (size_t i = 0; i < nt; i++)
		tree_add(&paths, named[i]);
	for (size_t k = 0; k < nh; k++)
		tree_add(&paths, hid[k]);
	size_t n_nodes = strv_length(t->nodes);
	for (size_t i = rnd(8); i < n_nodes; i += 1 + rnd(16)) {
		tree_add(&paths, t->nodes[i]);
		char *p = NULL;
		if (asprintf(&p, "%s/%s%s", t->nodes[i], any_name(), rnd(4) ? "" : "/x") < 0)
			abort();
		tree_add(&paths, p);
		free(p);
	}
	/* each asked twice: the second answer comes from the cache */
	for (size_t i = 0; paths[i]; i++) {
		cleanup_free char *a = oracle_hostview_resolve(paths[i]);
		for (size_t round = 0; round < 2; round++) {
			cleanup_free char *b = hostview_resolve_in(c, paths[i]);
			cleanup_free char *u = round ? NULL : hostview_resolve_in(NULL, paths[i]);
			if (!same(a, b) || (!round && !same(a, u))) {
				printf("# hostview %s: %s, now %s, uncached %s\n", paths[i],
				       a ? a : "(null)", b ? b : "(null)", u ? u : "(null)");
				diffs++;
			}
		}
	}
	hostview_cache_free(c);
	return diffs;
}

#define CALL_TARGETS 8
#define CALL_HIDDEN  160

/* One hook call's worth, resolved both ways; the number of differences
 * (each printed). */
static unsigned compare_call(struct tree *t, unsigned *ret_blocked)
{
	char *named[CALL_TARGETS], *bases[CALL_TARGETS], *hid[CALL_HIDDEN];
	char *old_t[CALL_TARGETS], *new_t[CALL_TARGETS], *cached_t[CALL_TARGETS];
	char *old_h[CALL_HIDDEN], *new_h[CALL_HIDDEN], *plain_h[CALL_HIDDEN];
	char *ref_t[CALL_TARGETS], *lex_t[CALL_TARGETS], *ref_h[CALL_HIDDEN];
	bool roots[CALL_TARGETS];
	struct oracle_walk_cache *oc = calloc(1, sizeof(*oc));
	struct hookpath_cache *nc = hookpath_cache_new(), *tc = hookpath_cache_new();
	unsigned diffs = 0;

	if (!oc || !nc || !tc)
		abort();
	for (size_t i = 0; i < CALL_TARGETS; i++) {
		bool rel;
		named[i] = gen_path(t, &rel);
		bases[i] = !rel ? NULL : rnd(3) ? strdup(tree_pick(t->dirs)) : strdup("ws");
		roots[i] = rnd(3) == 0;
	}
	/* A hide list: mostly names below a few directories, as the real one
	 * is below the home and /etc (enough lookups in one directory for any
	 * shortcut that takes a directory whole). */
	const char *home = tree_pick(t->dirs);
	/* as the hook hints its cache at the home and its .config (read at the
	 * first lookup, not the 16th), and the targets' at the tree's root and
	 * some directory */
	cleanup_free char *home_config = path_join(home, ".config");
	hookpath_cache_hint(nc, home);
	hookpath_cache_hint(nc, home_config);
	hookpath_cache_hint(tc, t->root);
	hookpath_cache_hint(tc, tree_pick(t->dirs));
	for (size_t k = 0; k < CALL_HIDDEN; k++) {
		bool rel;
		char *p = NULL;
		if (rnd(12)) {
			unsigned v = rnd(5);
			if (asprintf(&p, "%s/%s%s%s", rnd(4) ? home : tree_pick(t->dirs),
				     v == 0   ? any_name()
				     : v == 1 ? ".hidden"
					      : ".h",
				     v >= 2 ? "/" : "", v >= 2 ? any_name() : "") < 0)
				abort();
			if (v == 4) {
				char *q = NULL;
				if (asprintf(&q, "%s%u", p, rnd(1000)) < 0)
					abort();
				free(p);
				p = q;
			}
		} else {
			p = gen_path(t, &rel);
			if (rel || p[0] != '/' || strncmp(p, t->root, strlen(t->root)) != 0) {
				char *q = path_join(t->root, p);
				free(p);
				p = q;
			}
		}
		hid[k] = p;
	}
	for (size_t i = 0; i < CALL_TARGETS; i++) {
		bool dropped, dropped_lex;
		cleanup_free char *abs = ref_absolute(bases[i], named[i]);
		cleanup_free char *norm = ref_normalize(abs);
		cleanup_free char *ref_lex = ref_walk(norm, &dropped_lex);
		ref_t[i] = ref_walk(abs, &dropped);
		old_t[i] = oracle_resolve_known(bases[i], named[i], NULL);
		new_t[i] = hookpath_resolve(bases[i], named[i], NULL);
		cached_t[i] = hookpath_resolve(bases[i], named[i], tc);
		/* the old walk's answer, but where a ".." dropped a missing name */
		if (!same(ref_t[i], new_t[i]) || !same(ref_t[i], cached_t[i]) ||
		    (!dropped && !same(old_t[i], new_t[i]))) {
			printf("# target %s (base %s): %s, now %s, cached %s, reference %s\n",
			       named[i], bases[i] ? bases[i] : "-", old_t[i] ? old_t[i] : "(null)",
			       new_t[i] ? new_t[i] : "(null)", cached_t[i] ? cached_t[i] : "(null)",
			       ref_t[i] ? ref_t[i] : "(null)");
			diffs++;
		}
		/* both readings: the kernel's, and the kernel's after ".." as text */
		char *both = NULL, *lex = NULL;
		int r = hookpath_resolve_both(bases[i], named[i], rnd(2) ? tc : NULL, &both, &lex);
		const char *want_lex = same(ref_lex, ref_t[i]) ? NULL : ref_lex;
		if ((r == 0) != (ref_t[i] && ref_lex) ||
		    (r == 0 && (!same(both, ref_t[i]) || !same(lex, want_lex)))) {
			printf("# both %s (base %s): %d %s %s, reference %s %s\n", named[i],
			       bases[i] ? bases[i] : "-", r, both ? both : "(null)",
			       lex ? lex : "(null)", ref_t[i] ? ref_t[i] : "(null)",
			       want_lex ? want_lex : "(null)");
			diffs++;
		}
		lex_t[i] = lex;
		free(both);
	}
	for (size_t k = 0; k < CALL_HIDDEN; k++) {
		if (k == CALL_HIDDEN / 2) /* a directory the walks may have passed */
			hookpath_cache_hint(nc, tree_pick(t->dirs));
		bool dropped;
		ref_h[k] = ref_walk(hid[k], &dropped);
		old_h[k] = oracle_resolve_known(NULL, hid[k], oc);
		new_h[k] = hookpath_resolve(NULL, hid[k], nc);
		plain_h[k] = hookpath_resolve(NULL, hid[k], NULL);
		if (!same(ref_h[k], new_h[k]) || !same(ref_h[k], plain_h[k]) ||
		    (!dropped && !same(old_h[k], new_h[k]))) {
			printf("# hidden %s: %s, now %s, uncached %s, reference %s\n", hid[k],
			       old_h[k] ? old_h[k] : "(null)", new_h[k] ? new_h[k] : "(null)",
			       plain_h[k] ? plain_h[k] : "(null)", ref_h[k] ? ref_h[k] : "(null)");
			diffs++;
		}
	}
	diffs += compare_hostview(t, named, CALL_TARGETS, hid, CALL_HIDDEN);
	unsigned v_ref = verdict(ref_t, roots, CALL_TARGETS, ref_h, CALL_HIDDEN);
	unsigned v_new = verdict(new_t, roots, CALL_TARGETS, new_h, CALL_HIDDEN);
	if (v_ref != v_new) {
		printf("# refused targets %#x, now %#x\n", v_ref, v_new);
		diffs++;
	}
	/* and the other reading refuses what it reaches */
	*ret_blocked += (unsigned)__builtin_popcount(
		v_new | verdict(lex_t, roots, CALL_TARGETS, new_h, CALL_HIDDEN));
	for (size_t i = 0; i < CALL_TARGETS; i++) {
		free(named[i]);
		free(bases[i]);
		free(old_t[i]);
		free(new_t[i]);
		free(cached_t[i]);
		free(ref_t[i]);
		free(lex_t[i]);
	}
	for (size_t k = 0; k < CALL_HIDDEN; k++) {
		free(ref_h[k]);
		free(hid[k]);
		free(old_h[k]);
		free(new_h[k]);
		free(plain_h[k]);
	}
	oracle_walk_cache_free(oc);
	hookpath_cache_free(nc);
	hookpath_cache_free(tc);
	return diffs;
}

/* calls of one tree, as this process's user; the differences. */
static unsigned compare_calls(struct tree *t, unsigned calls, unsigned *ret_blocked)
{
	unsigned diffs = 0;

	/* relative bases and paths: from the tree's root */
	if (chdir(t->root) < 0)
		return 1;
	for (unsigned c = 0; c < calls; c++)
		diffs += compare_call(t, ret_blocked);
	if (chdir("/") < 0)
		diffs++;
	return diffs;
}

/* seeds x calls on trees of the given size, and as root the same again as
 * nobody (in a child); the differences, all printed. */
static unsigned compare_trees(unsigned seeds, unsigned calls, unsigned steps)
{
	unsigned diffs = 0, blocked = 0;

	memset(long_name, 'L', sizeof(long_name) - 1);
	memset(too_long, 'T', sizeof(too_long) - 1);
	for (unsigned seed = 1; seed <= seeds; seed++) {
		struct tree t = { 0 };
		rng_state = 0x9e3779b97f4a7c15ULL * seed;
		tree_make(&t, steps, seed == 1);
		uint64_t state = rng_state;
		diffs += compare_calls(&t, calls, &blocked);
		if (geteuid() == 0) {
			rng_state = state;
			pid_t pid = fork();
			if (pid < 0)
				abort();
			if (pid == 0) {
				unsigned b = 0;
				if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
				    setresuid(65534, 65534, 65534) < 0)
					_exit(100);
				_exit(compare_calls(&t, calls, &b) ? 1 : 0);
			}
			int status;
			if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0) {
				printf("# as nobody, seed %u: status %d\n", seed, status);
				diffs++;
			}
		}
		tree_remove(&t);
	}
	printf("# %u seeds x %u calls of %u targets%s: %u refused\n", seeds, calls, CALL_TARGETS,
	       geteuid() == 0 ? " (and as nobody)" : "", blocked);
	return diffs;
}

static void test_resolve_as_before(void)
{
	ASSERT_EQ_INT(compare_trees(8, 40, 400), 0);
}

/* The host's own paths (the real hide list's shape: below /etc, /root,
 * /home, /proc/self), and the test's. */
static void test_resolve_host_paths_as_before(void)
{
	static const char *const paths[] = {
		"/",
		"/etc",
		"/etc/shadow",
		"/etc/ssh/../ssl/private",
		"/root/.ssh",
		"/root//.config/gh/",
		"/home/../root/.aws",
		"/proc/self/root/etc",
		"/proc/self/cwd/x",
		"/var/run/docker.sock",
		"/dev/fd/0",
		"/tmp/./a/../b",
		"//etc//",
		"/bin/sh",
		"/lib/../lib64",
		"/nonexistent/a/../../etc/passwd",
		NULL,
	};
	struct oracle_walk_cache *oc = calloc(1, sizeof(*oc));
	struct hookpath_cache *nc = hookpath_cache_new();

	ASSERT_TRUE(oc && nc);
	for (size_t i = 0; paths[i]; i++) {
		cleanup_free char *a = oracle_resolve_known(NULL, paths[i], oc);
		cleanup_free char *b = hookpath_resolve(NULL, paths[i], nc);
		cleanup_free char *c = hookpath_resolve(NULL, paths[i], NULL);
		ASSERT_TRUE(a != NULL);
		/* /proc/self is the hook's own, not the tool's: no answer */
		if (strncmp(paths[i], "/proc/self/", 11) == 0 || strncmp(paths[i], "/dev/fd/", 8) == 0) {
			ASSERT_TRUE(b == NULL && c == NULL);
			continue;
		}
		ASSERT_EQ_STR(b, a);
		ASSERT_EQ_STR(c, a);
	}
	oracle_walk_cache_free(oc);
	hookpath_cache_free(nc);
}

/* hooklinks_walk(): every symlink below a directory, none followed (a
 * loop to the directory itself, a link to a directory, a dangling one),
 * a start walked once, the bound on entries. */
static void test_links_walk(void)
{
	char root[] = "/tmp/test-hooklinks.XXXXXX";
	char path[PATH_MAX];
	struct hooklinks w = { .max = HOOKLINKS_MAX };
	cleanup_strv char **links = NULL, **again = NULL, **few = NULL;

	ASSERT_TRUE(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/a/b/c", root);
	ASSERT_TRUE(mkdir_parents(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/a/b/file", root);
	ASSERT_TRUE(close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) == 0);
	snprintf(path, sizeof(path), "%s/a/b/c/loop", root);
	ASSERT_TRUE(symlink(root, path) == 0);
	snprintf(path, sizeof(path), "%s/a/etc", root);
	ASSERT_TRUE(symlink("/etc", path) == 0);
	snprintf(path, sizeof(path), "%s/dangling", root);
	ASSERT_TRUE(symlink("nowhere/x", path) == 0);

	ASSERT_EQ_INT(hooklinks_walk(&w, root, false, &links), 0);
	ASSERT_EQ_INT(strv_length(links), 3);
	snprintf(path, sizeof(path), "%s/a/b/c/loop", root);
	ASSERT_TRUE(strv_contains(links, path));
	snprintf(path, sizeof(path), "%s/a/etc", root);
	ASSERT_TRUE(strv_contains(links, path));
	snprintf(path, sizeof(path), "%s/dangling", root);
	ASSERT_TRUE(strv_contains(links, path));
	ASSERT_EQ_INT(w.entries, 7); /* a, dangling, b, etc, c, file, loop */
	/* the loop's target, a start before: not walked again */
	ASSERT_EQ_INT(hooklinks_walk(&w, root, false, &again), 0);
	ASSERT_TRUE(again == NULL);
	hooklinks_release(&w);
	/* past the bound: -E2BIG, not a partial answer taken for whole */
	struct hooklinks small = { .max = 4 };
	ASSERT_EQ_INT(hooklinks_walk(&small, root, false, &few), -E2BIG);
	hooklinks_release(&small);
	/* a missing directory holds none */
	snprintf(path, sizeof(path), "%s/none", root);
	struct hooklinks none = { .max = 10 };
	ASSERT_EQ_INT(hooklinks_walk(&none, path, false, &few), 0);
	hooklinks_release(&none);

	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* hooklinks_walk() with prune: a node_modules or .git directory below the
 * start is not listed, the start itself is (however named), a symlink
 * named so is found, a name differing in case is listed, and a start
 * walked pruned is walked again whole. */
static void test_links_walk_prune(void)
{
	char root[] = "/tmp/test-hooklinks.XXXXXX";
	char path[PATH_MAX];
	struct hooklinks w = { .max = HOOKLINKS_MAX };
	cleanup_strv char **links = NULL, **again = NULL, **whole = NULL, **inside = NULL;

	ASSERT_TRUE(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/a/node_modules/p", root);
	ASSERT_TRUE(mkdir_parents(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/a/node_modules/p/k", root);
	ASSERT_TRUE(symlink("/etc", path) == 0);
	snprintf(path, sizeof(path), "%s/.git", root);
	ASSERT_TRUE(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/.git/k", root);
	ASSERT_TRUE(symlink("/etc", path) == 0);
	snprintf(path, sizeof(path), "%s/Node_Modules", root);
	ASSERT_TRUE(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/Node_Modules/k", root);
	ASSERT_TRUE(symlink("/etc", path) == 0);
	snprintf(path, sizeof(path), "%s/bower_components", root);
	ASSERT_TRUE(symlink("/etc", path) == 0);

	ASSERT_EQ_INT(hooklinks_walk(&w, root, true, &links), 0);
	ASSERT_EQ_INT(strv_length(links), 2);
	snprintf(path, sizeof(path), "%s/Node_Modules/k", root);
	ASSERT_TRUE(strv_contains(links, path));
	snprintf(path, sizeof(path), "%s/bower_components", root);
	ASSERT_TRUE(strv_contains(links, path));
	/* pruned before, pruned again: not walked */
	ASSERT_EQ_INT(hooklinks_walk(&w, root, true, &again), 0);
	ASSERT_TRUE(again == NULL);
	/* pruned before, whole now: walked again */
	ASSERT_EQ_INT(hooklinks_walk(&w, root, false, &whole), 0);
	ASSERT_EQ_INT(strv_length(whole), 4);
	hooklinks_release(&w);
	/* a start named node_modules is listed */
	struct hooklinks w2 = { .max = HOOKLINKS_MAX };
	snprintf(path, sizeof(path), "%s/a/node_modules", root);
	ASSERT_EQ_INT(hooklinks_walk(&w2, path, true, &inside), 0);
	ASSERT_EQ_INT(strv_length(inside), 1);
	hooklinks_release(&w2);

	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* A process's open file in /proc is kept as named, not taken for the
 * path its target reads as (a deleted file, a pipe, a memfd have none). */
static void test_resolve_proc_fd_as_named(void)
{
	char path[64];
	cleanup_close int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ASSERT_TRUE(fd >= 0);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
	cleanup_free char *r = hookpath_resolve(NULL, path, NULL);
	ASSERT_EQ_STR(r, path);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/fd/%d/x", (int)getpid(), (int)getpid(), fd);
	cleanup_free char *below = hookpath_resolve(NULL, path, NULL);
	ASSERT_EQ_STR(below, path);
}

/* ---- /proc: the one parser both the walk and the hide check use ---- */

/* The two parsers it replaced, verbatim but for their names (hookpath.c's
 * hookpath_is_self() and hookpath_is_proc_fd(), hook.c's
 * hook_proc_hidden() as of ddf0c6b): the new one must keep as named, and
 * hide, at least what they did. */
static bool oracle_is_self(const char *out)
{
	return strcmp(out, "/proc/self") == 0 || strcmp(out, "/proc/thread-self") == 0;
}

static bool oracle_is_proc_fd(const char *out)
{
	const char *p = out;

	if (strncmp(p, "/proc/", 6) != 0)
		return false;
	p += 6;
	size_t n = strspn(p, "0123456789");
	if (n == 0 || p[n] != '/')
		return false;
	p += n + 1;
	if (strncmp(p, "task/", 5) == 0) {
		p += 5;
		n = strspn(p, "0123456789");
		if (n == 0 || p[n] != '/')
			return false;
		p += n + 1;
	}
	n = strcspn(p, "/");
	return p[n] == '/' && strchr(p + n + 1, '/') == NULL &&
	       ((n == 2 && strncmp(p, "fd", 2) == 0) || (n == 9 && strncmp(p, "map_files", 9) == 0));
}

static const char *const oracle_proc_shown[] = {
	"comm",	     "stat",	      "statm",	  "status",    "limits", "cgroup",    "io",
	"oom_score", "oom_score_adj", "loginuid", "sessionid", "wchan",	 "schedstat", NULL
};

static bool oracle_proc_is_id(const char *s, size_t n)
{
	return n > 0 && strspn(s, "0123456789") >= n;
}

static bool oracle_proc_hidden(const char *p, bool root)
{
	if (root && (strcmp(p, "/") == 0 || strcmp(p, "/proc") == 0))
		return true;
	if (strncmp(p, "/proc/", 6) != 0)
		return false;
	p += 6;
	size_t n = strcspn(p, "/");
	if (!oracle_proc_is_id(p, n))
		return false;
	p += n;
	if (!*p)
		return root;
	p++;
	n = strcspn(p, "/");
	if (n == 4 && strncmp(p, "task", 4) == 0) {
		if (!p[n])
			return root;
		p += n + 1;
		n = strcspn(p, "/");
		if (!oracle_proc_is_id(p, n))
			return true; /* no thread: nothing the kernel finds there */
		if (!p[n])
			return root;
		p += n + 1;
		n = strcspn(p, "/");
	}
	return p[n] != '\0' || !strv_contains((char **)oracle_proc_shown, p);
}

/* Whether the parse of path is who, pid, tid (NULL: none) and rest. */
static bool proc_parsed(const char *path, enum hookpath_proc_who who, const char *pid,
			const char *tid, const char *rest)
{
	struct hookpath_proc r;

	hookpath_proc_parse(path, &r);
	bool ok = r.who == who && strcmp(r.rest, rest) == 0 &&
		  (pid ? r.pid && r.pid_len == strlen(pid) && strncmp(r.pid, pid, r.pid_len) == 0
		       : !r.pid) &&
		  (tid ? r.tid && r.tid_len == strlen(tid) && strncmp(r.tid, tid, r.tid_len) == 0
		       : !r.tid);
	if (!ok)
		printf("# %s: who %d, pid %.*s, tid %.*s, rest \"%s\"\n", path, (int)r.who,
		       (int)r.pid_len, r.pid ? r.pid : "", (int)r.tid_len, r.tid ? r.tid : "", r.rest);
	return ok;
}

static void test_proc_parse(void)
{
	static const struct {
		const char *path;
		enum hookpath_proc_who who;
		const char *pid, *tid, *rest;
	} rows[] = {
		{ "/", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/cpuinfo", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/sys/kernel", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/procs/1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/home/proc/1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "proc/1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/+1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/-1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/1x/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/ 1/environ", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/1", HOOKPATH_PROC_PID, "1", NULL, "" },
		{ "/proc/1/", HOOKPATH_PROC_PID, "1", NULL, "" },
		{ "/proc/1//", HOOKPATH_PROC_PID, "1", NULL, "" },
		{ "/proc/1/environ", HOOKPATH_PROC_PID, "1", NULL, "environ" },
		{ "//proc//1//environ", HOOKPATH_PROC_PID, "1", NULL, "environ" },
		{ "/./proc/./1/./environ", HOOKPATH_PROC_PID, "1", NULL, "environ" },
		{ "/proc/1/environ/", HOOKPATH_PROC_PID, "1", NULL, "environ/" },
		{ "/proc/01/environ", HOOKPATH_PROC_PID, "01", NULL, "environ" },
		{ "/proc/0/environ", HOOKPATH_PROC_PID, "0", NULL, "environ" },
		{ "/proc/99999999999999999999999/environ", HOOKPATH_PROC_PID,
		  "99999999999999999999999", NULL, "environ" },
		{ "/proc/1/fd/3", HOOKPATH_PROC_PID, "1", NULL, "fd/3" },
		{ "/proc/1/task", HOOKPATH_PROC_PID, "1", NULL, "task" },
		{ "/proc/1/task/", HOOKPATH_PROC_PID, "1", NULL, "task/" },
		{ "/proc/1/task/x", HOOKPATH_PROC_PID, "1", NULL, "task/x" },
		{ "/proc/1/task/2", HOOKPATH_PROC_PID, "1", "2", "" },
		{ "/proc/1/task/2/", HOOKPATH_PROC_PID, "1", "2", "" },
		{ "/proc/1//task//2//environ", HOOKPATH_PROC_PID, "1", "2", "environ" },
		{ "/proc/1/task/2/fd/3", HOOKPATH_PROC_PID, "1", "2", "fd/3" },
		{ "/proc/1/task/1/task/1", HOOKPATH_PROC_PID, "1", "1", "task/1" },
		{ "/proc/1/task/+2/environ", HOOKPATH_PROC_PID, "1", NULL, "task/+2/environ" },
		{ "/proc/self", HOOKPATH_PROC_SELF, NULL, NULL, "" },
		{ "/proc/self/environ", HOOKPATH_PROC_SELF, NULL, NULL, "environ" },
		{ "/proc/self/task/7/root", HOOKPATH_PROC_SELF, NULL, "7", "root" },
		{ "/proc/thread-self", HOOKPATH_PROC_THREAD_SELF, NULL, NULL, "" },
		{ "/proc/thread-self/task/7", HOOKPATH_PROC_THREAD_SELF, NULL, NULL, "task/7" },
		{ "/proc/selfish", HOOKPATH_PROC_NONE, NULL, NULL, "" },
		{ "/proc/self/../1/environ", HOOKPATH_PROC_UNKNOWN, NULL, NULL, "" },
		{ "/proc/1/cwd/../../.ssh/k", HOOKPATH_PROC_UNKNOWN, NULL, NULL, "" },
		{ "/x/../proc/1/environ", HOOKPATH_PROC_UNKNOWN, NULL, NULL, "" },
		{ "/proc/1/..", HOOKPATH_PROC_UNKNOWN, NULL, NULL, "" },
		{ "/proc/1/x..", HOOKPATH_PROC_PID, "1", NULL, "x.." },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ASSERT_TRUE(proc_parsed(rows[i].path, rows[i].who, rows[i].pid, rows[i].tid,
					rows[i].rest));
}

static void test_proc_hidden(void)
{
	static const struct {
		const char *path;
		bool root, hidden;
	} rows[] = {
		{ "/", true, true },
		{ "/", false, false },
		{ "/proc", true, true },
		{ "//proc/", true, true },
		{ "/proc", false, false },
		{ "/proc/cpuinfo", false, false },
		{ "/proc/sys", true, false },
		{ "/proc/+1/environ", false, false },
		{ "/home/u", true, false },
		{ "/proc/1", false, false },
		{ "/proc/1", true, true },
		{ "/proc/1/", true, true },
		{ "/proc/1/task", false, true },
		{ "/proc/1/task", true, true },
		{ "/proc/1/task/1", true, true },
		{ "/proc/1/task/1", false, false },
		{ "/proc/1/status", false, false },
		{ "/proc/1/status", true, false },
		{ "/proc//1//status", false, false },
		{ "/proc/1/./status", false, false },
		{ "/proc/1/status/", false, true },
		{ "/proc/1/status/x", false, true },
		{ "/proc/1/task/1/status", false, false },
		{ "/proc/1/task/1/oom_score_adj", false, false },
		{ "/proc/1/environ", false, true },
		{ "//proc//1//environ", false, true },
		{ "/proc/01/environ", false, true },
		{ "/proc/99999999999999999999999/environ", false, true },
		{ "/proc/1/task/1/environ", false, true },
		{ "/proc/1/task/1/task/1", false, true },
		{ "/proc/1/task/x/status", false, true },
		{ "/proc/1/cmdline", false, true },
		{ "/proc/1/mem", false, true },
		{ "/proc/1/fdinfo/0", false, true },
		{ "/proc/1/fd", true, true },
		{ "/proc/1/fd/0", false, true },
		{ "/proc/1/map_files", true, true },
		{ "/proc/1/root", false, true },
		{ "/proc/1/root/etc/passwd", false, true },
		{ "/proc/1/cwd", true, true },
		{ "/proc/1/exe", false, true },
		{ "/proc/1/ns/mnt", false, true },
		{ "/proc/1/task/2/cwd/x", false, true },
		{ "/proc/self/status", false, true },
		{ "/proc/thread-self/status", false, true },
		{ "/proc/self/../1/status", false, true },
		{ "/proc/1/cwd/../../etc/passwd", false, true },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (hookpath_proc_hidden(rows[i].path, rows[i].root) != rows[i].hidden) {
			printf("# %s (root %d): hidden %d\n", rows[i].path, rows[i].root,
			       !rows[i].hidden);
			ASSERT_TRUE(false);
		}
}

/* Over generated paths (as the walk spells them: absolute, no empty, "."
 * or ".." component), the new parser keeps as named and hides at least
 * what the two it replaced did, and each spelling of a path with "//",
 * "/./" or a trailing "/" more is parsed, and hidden, alike. */
static void test_proc_as_before(void)
{
	static const char *const parts[] = {
		"proc",
		"self",
		"thread-self",
		"1",
		"01",
		"42",
		"+1",
		"99999999999999999999",
		"task",
		"fd",
		"3",
		"map_files",
		"environ",
		"status",
		"comm",
		"root",
		"cwd",
		"exe",
		"x",
		"ns",
		"mnt",
		"stat",
		"",
		NULL,
	};
	size_t n_parts = 0, hidden = 0, links = 0;

	while (parts[n_parts])
		n_parts++;
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (unsigned i = 0; i < 200000; i++) {
		char path[256] = "", spelled[512] = "";
		unsigned depth = rnd(7);
		for (unsigned k = 0; k < depth; k++) {
			const char *c =
				k == 0 && rnd(4) != 0 ? "proc" : parts[rnd((uint32_t)n_parts - 1)];
			strcat(path, "/");
			strcat(path, c);
			strcat(spelled, rnd(3) == 0 ? "//" : rnd(3) == 0 ? "/./" : "/");
			strcat(spelled, c);
		}
		if (!path[0])
			strcpy(path, "/");
		if (rnd(3) == 0)
			strcat(spelled, "/");
		if (!spelled[0])
			strcpy(spelled, "/");
		bool root = rnd(2) == 0;
		struct hookpath_proc a, b;
		hookpath_proc_parse(path, &a);
		hookpath_proc_parse(spelled, &b);
		bool is_link = a.who == HOOKPATH_PROC_PID && a.rest[0];
		bool is_self = a.who != HOOKPATH_PROC_NONE && a.who != HOOKPATH_PROC_PID && !a.rest[0];
		bool hides = hookpath_proc_hidden(path, root);
		hidden += hides;
		links += is_link;
		if ((oracle_proc_hidden(path, root) && !hides) ||
		    (oracle_is_proc_fd(path) && !is_link) || (oracle_is_self(path) && !is_self)) {
			printf("# %s (root %d): hidden %d, a link %d, self %d\n", path, root, hides,
			       is_link, is_self);
			ASSERT_TRUE(false);
		}
		size_t rest_len = strlen(a.rest);
		bool same = a.who == b.who && a.pid_len == b.pid_len && a.tid_len == b.tid_len &&
			    (a.pid == NULL) == (b.pid == NULL) && (a.tid == NULL) == (b.tid == NULL) &&
			    (a.pid == NULL || strncmp(a.pid, b.pid, a.pid_len) == 0) &&
			    (a.tid == NULL || strncmp(a.tid, b.tid, a.tid_len) == 0) &&
			    (rest_len == 0) == (b.rest[0] == '\0');
		/* a trailing "/" makes a shown file a directory: ENOTDIR, hidden */
		if (!same || (hookpath_proc_hidden(spelled, root) != hides &&
			      !(spelled[strlen(spelled) - 1] == '/' && !hides && rest_len))) {
			printf("# %s as %s (root %d)\n", path, spelled, root);
			ASSERT_TRUE(false);
		}
	}
	printf("# 200000 paths: %zu hidden, %zu a process's links\n", hidden, links);
	ASSERT_TRUE(hidden > 10000 && links > 10000);
}

/* The walk keeps every link in a process's directory as named (root,
 * cwd, exe, ns/ as fd/ and map_files/ were), and refuses a ".." that
 * leaves one: its parent is that of what the link reaches. */
static void test_resolve_proc_links(void)
{
	char pid[32], path[PATH_MAX], want[PATH_MAX];
	cleanup_close int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	static const struct {
		const char *tail; /* after /proc/PID */
		const char *want; /* NULL: refused; "=": as named */
	} rows[] = {
		{ "/cwd", "=" },
		{ "/cwd/x/y", "=" },
		{ "/cwd/x/..", "/cwd" },
		{ "/cwd/x/../y", "/cwd/y" },
		{ "/cwd/..", NULL },
		{ "/cwd/x/../..", NULL },
		{ "/cwd/../../etc", NULL },
		{ "/root", "=" },
		{ "/root/etc/passwd", "=" },
		{ "/root/..", NULL },
		{ "/exe", "=" },
		{ "/ns/mnt", "=" },
		{ "/fd/FD", "=" },
		{ "/fd/FD/..", NULL },
		{ "/fd/FD/x/../../etc", NULL },
		{ "/task/PID/cwd", "=" },
		{ "/task/PID/root/..", NULL },
		{ "/task/PID/fd/FD/etc", "=" },
		{ "/status", "=" },
		{ "/environ", "=" },
		{ "/../cpuinfo", "-/proc/cpuinfo" },
		{ "/task/../status", "=/status" },
	};

	ASSERT_TRUE(fd >= 0);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char tail[256] = "";
		for (const char *t = rows[i].tail; *t;) {
			if (strncmp(t, "PID", 3) == 0)
				strcat(tail, pid), t += 3;
			else if (strncmp(t, "FD", 2) == 0)
				snprintf(tail + strlen(tail), 16, "%d", fd), t += 2;
			else
				strncat(tail, t++, 1);
		}
		snprintf(path, sizeof(path), "/proc/%s%s", pid, tail);
		cleanup_free char *r = hookpath_resolve(NULL, path, NULL);
		if (!rows[i].want) {
			if (r)
				printf("# %s: %s\n", path, r);
			ASSERT_TRUE(!r);
			continue;
		}
		if (rows[i].want[0] == '-')
			snprintf(want, sizeof(want), "%s", rows[i].want + 1);
		else if (rows[i].want[0] == '=' && rows[i].want[1])
			snprintf(want, sizeof(want), "/proc/%s%s", pid, rows[i].want + 1);
		else if (rows[i].want[0] == '=')
			snprintf(want, sizeof(want), "%s", path);
		else
			snprintf(want, sizeof(want), "/proc/%s%s", pid, rows[i].want);
		ASSERT_EQ_STR(r, want);
	}
	/* the hook's own, by any name */
	for (const char *const *p = (const char *const[]){ "/proc/self", "/proc/self/status",
							   "/proc/thread-self/cwd", "/dev/fd/0",
							   "/proc/self/../1", NULL };
	     *p; p++) {
		cleanup_free char *r = hookpath_resolve(NULL, *p, NULL);
		if (r)
			printf("# %s: %s\n", *p, r);
		ASSERT_TRUE(!r);
	}
	/* a symlink to one, and a relative one after it that climbs out */
	char dir[] = "/tmp/airlock-proc.XXXXXX";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cwd", dir);
	snprintf(want, sizeof(want), "/proc/%s/cwd", pid);
	ASSERT_EQ_INT(symlink(want, path), 0);
	cleanup_free char *via = hookpath_resolve(NULL, path, NULL);
	snprintf(path, sizeof(path), "%s/cwd/..", dir);
	cleanup_free char *up = hookpath_resolve(NULL, path, NULL);
	char cmd[PATH_MAX];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ_INT(system(cmd), 0);
	ASSERT_EQ_STR(via, want);
	ASSERT_TRUE(!up);
}

/* A thread that is not its process's leader: its id names it in /proc as
 * a pid does (the kernel finds /proc/TID, though it does not list it). */
static pthread_mutex_t proc_thread_lock = PTHREAD_MUTEX_INITIALIZER;
static long proc_thread_tid;

static void *proc_thread(void *arg)
{
	(void)arg;
	proc_thread_tid = syscall(SYS_gettid);
	pthread_mutex_lock(&proc_thread_lock); /* held by the test until it is done */
	pthread_mutex_unlock(&proc_thread_lock);
	return NULL;
}

static void test_resolve_proc_thread(void)
{
	pthread_t th;
	char path[64], environ_[64];
	struct stat sb;

	pthread_mutex_lock(&proc_thread_lock);
	ASSERT_EQ_INT(pthread_create(&th, NULL, proc_thread, NULL), 0);
	while (__atomic_load_n(&proc_thread_tid, __ATOMIC_SEQ_CST) == 0)
		usleep(1000);
	snprintf(path, sizeof(path), "/proc/%ld/cwd", proc_thread_tid);
	snprintf(environ_, sizeof(environ_), "/proc/%ld/environ", proc_thread_tid);
	bool found = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
	char *kept = hookpath_resolve(NULL, path, NULL);
	snprintf(path, sizeof(path), "/proc/%ld/cwd/..", proc_thread_tid);
	char *up = hookpath_resolve(NULL, path, NULL);
	pthread_mutex_unlock(&proc_thread_lock);
	pthread_join(th, NULL);
	snprintf(path, sizeof(path), "/proc/%ld/cwd", proc_thread_tid);
	ASSERT_TRUE(found && (long)getpid() != proc_thread_tid);
	ASSERT_EQ_STR(kept, path);
	free(kept);
	ASSERT_TRUE(!up);
	ASSERT_TRUE(hookpath_proc_hidden(environ_, false));
}

/* hostview_nss_files_first(): glibc asks the files service first, and
 * nothing goes on past its answer, only when every passwd line says so. */
static void test_nss_files_first(void)
{
	static const struct {
		const char *text;
		bool first;
	} cases[] = {
		{ "passwd:         files systemd\ngroup: files\n", true },
		{ "# comment\npasswd: files\n", true },
		{ "  passwd :\tfiles # and a comment\n", true },
		{ "passwd files", true }, /* glibc reads a name without ':' too */
		{ "passwd: files\n# passwd: ldap\n", true },
		{ "passwd: sss files\n", false },
		{ "passwd: ldap [NOTFOUND=return] files\n", false },
		{ "passwd: files [SUCCESS=continue] ldap\n", false },
		{ "passwd: files[SUCCESS=merge] ldap\n", false },
		{ "passwd: compat\n", false },
		{ "passwd: filesx\n", false },
		{ "passwd: FILES\n", false },
		{ "Passwd: files\n", false }, /* glibc's, or its default's */
		{ "passwd: files\nPASSWD: ldap\n", false }, /* any line glibc might read */
		{ "passwd: files\npasswd: sss files\n", false },
		{ "passwd:\n", false },
		{ "group: files\n", false }, /* none: NSS's default, asked */
		{ "passwdx: files\nshadow: files\n", false },
		{ "", false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (hostview_nss_files_first(cases[i].text) != cases[i].first)
			printf("# case %zu: %s\n", i, cases[i].text);
		ASSERT_TRUE(hostview_nss_files_first(cases[i].text) == cases[i].first);
	}
}

/* The caller's home from the password database (hostview_caller_keep_homes()
 * without $HOME) is getpwuid_r()'s, whether /etc/passwd was read directly
 * (nsswitch.conf asks files first) or NSS was asked. */
static void test_passwd_home_as_nss(void)
{
	const uid_t uids[] = { geteuid(), 0, 65534, 4000000 };

	for (size_t i = 0; i < ARRAY_SIZE(uids); i++) {
		struct hostview_caller c = { .uid = uids[i] };
		struct passwd pw, *found = NULL;
		char buf[16384];
		const char *want = getpwuid_r(uids[i], &pw, buf, sizeof(buf), &found) == 0 &&
						   found && pw.pw_dir && pw.pw_dir[0] == '/'
					   ? pw.pw_dir
					   : NULL;
		ASSERT_EQ_INT(hostview_caller_keep_homes(&c), 0);
		ASSERT_TRUE(c.homes != NULL);
		if (want)
			ASSERT_EQ_STR(c.homes[0], want);
		else
			ASSERT_TRUE(c.homes[0] == NULL);
		strv_free(c.homes);
	}
}

/* A directory of n names (files n0, n1, ...) in root, each looked up
 * through a cache (answered as without one); then a symlink made there
 * after the lookups: read whole, the directory's listing answers it
 * (missing, so the path is as written); looked up name by name, it is
 * followed. */
static void hookpath_cap_one(const char *root, size_t n, bool listed)
{
	char dir[256], path[512], target[256], want[512];

	snprintf(dir, sizeof(dir), "%s/d%zu", root, n);
	ASSERT_EQ_INT(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/n%zu", dir, i);
		ASSERT_TRUE(close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) == 0);
	}
	struct hookpath_cache *c = hookpath_cache_new();
	ASSERT_TRUE(c != NULL);
	for (size_t i = 0; i <= n; i++) { /* n<n> is missing */
		snprintf(path, sizeof(path), "%s/n%zu", dir, i);
		cleanup_free char *a = hookpath_resolve(NULL, path, c);
		cleanup_free char *b = hookpath_resolve(NULL, path, NULL);
		ASSERT_TRUE(a && same(a, b));
	}
	snprintf(target, sizeof(target), "%s/target", root);
	snprintf(path, sizeof(path), "%s/late", dir);
	ASSERT_EQ_INT(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/late/x", dir);
	if (listed)
		snprintf(want, sizeof(want), "%s", path);
	else
		snprintf(want, sizeof(want), "%s/x", target);
	cleanup_free char *late = hookpath_resolve(NULL, path, c);
	ASSERT_TRUE(late && strcmp(late, want) == 0);
	hookpath_cache_free(c);
}

/* The listing's cap counts names: a directory of exactly
 * HOOKPATH_LIST_MAX_NAMES is read whole, one of one more is not. */
static void test_hookpath_list_cap(void)
{
	char root[] = "/tmp/test-hookcap.XXXXXX", cmd[64];

	ASSERT_TRUE(mkdtemp(root) != NULL);
	hookpath_cap_one(root, HOOKPATH_LIST_MAX_NAMES, true);
	hookpath_cap_one(root, HOOKPATH_LIST_MAX_NAMES + 1, false);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ASSERT_EQ_INT(system(cmd), 0);
}

/* Writes text to the file at path (one of /proc/self's): whether all of
 * it was taken. */
static bool write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* In a child chrooted to dir (in a user namespace of its own, the caller
 * mapped to 0), whose n names are directories n0, n1, ...: each "/n<i>/x"
 * through a cache as without one, then "/late/x", late a symlink to n0
 * made after: read whole, the root's listing answers it (missing, so the
 * path is as written), else it is followed. The child's exit status: 0,
 * 77 without user namespaces, else the step that failed. */
static int hostview_cap_child(const char *dir, size_t n, bool listed)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return 77;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (!write_proc("/proc/self/setgroups", "deny") || !write_proc("/proc/self/uid_map", map))
		return 2;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (!write_proc("/proc/self/gid_map", map))
		return 3;
	if (chroot(dir) < 0 || chdir("/") < 0)
		return 4;
	struct hostview_cache *c = hostview_cache_new();
	if (!c)
		return 5;
	for (size_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/n%zu/x", i);
		char *a = hostview_resolve_in(c, path), *b = hostview_resolve(path);
		bool ok = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
		if (!ok)
			return 6;
	}
	if (symlink("n0", "/late") < 0)
		return 7;
	char *late = hostview_resolve_in(c, "/late/x");
	bool ok = late && strcmp(late, listed ? "/late/x" : "/n0/x") == 0;
	free(late);
	hostview_cache_free(c);
	return ok ? 0 : 8;
}

/* The root's listing cap counts names: a root of exactly
 * HOSTVIEW_ROOT_MAX_NAMES is read whole, one of one more is not (a
 * chroot in a child's user namespace stands for the root). */
static void test_hostview_root_cap(void)
{
	for (size_t n = HOSTVIEW_ROOT_MAX_NAMES; n <= HOSTVIEW_ROOT_MAX_NAMES + 1; n++) {
		char root[] = "/tmp/test-hostcap.XXXXXX", path[128], cmd[64];
		ASSERT_TRUE(mkdtemp(root) != NULL);
		ASSERT_EQ_INT(chmod(root, 0755), 0);
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/n%zu", root, i);
			ASSERT_EQ_INT(mkdir(path, 0755), 0);
		}
		fflush(NULL);
		pid_t pid = fork();
		ASSERT_TRUE(pid >= 0);
		if (pid == 0)
			_exit(hostview_cap_child(root, n, n == HOSTVIEW_ROOT_MAX_NAMES));
		int status;
		ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		ASSERT_EQ_INT(system(cmd), 0);
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) == 77) {
			printf("# skipped: no user namespaces\n");
			return;
		}
		if (WEXITSTATUS(status) != 0)
			printf("# %zu names: the child failed at step %d\n", n, WEXITSTATUS(status));
		ASSERT_EQ_INT(WEXITSTATUS(status), 0);
	}
}

RUN_TESTS(T_(test_nss_files_first), T_(test_passwd_home_as_nss),
	  T_(test_resolve_host_paths_as_before), T_(test_resolve_as_before), T_(test_links_walk),
	  T_(test_links_walk_prune), T_(test_resolve_proc_fd_as_named), T_(test_proc_parse),
	  T_(test_proc_hidden), T_(test_proc_as_before), T_(test_resolve_proc_links),
	  T_(test_resolve_proc_thread), T_(test_hookpath_list_cap), T_(test_hostview_root_cap))

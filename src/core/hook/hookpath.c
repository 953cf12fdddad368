/* SPDX-License-Identifier: MIT */
#include "core/hook/hookpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "basic/error.h"
#include "basic/fileio.h"
#include "basic/path.h"

/* What the walks of one hook call found (hookpath_walk()): each resolved
 * prefix lstat() looked at, as a directory (walked through), something
 * else that is no symlink (nothing is below it: a lookup under it fails
 * with ENOTDIR) or nothing (lstat() failed: what follows is taken as
 * text until a ".." drops it); symlinks are looked at again each time. Only a memory of
 * what the call already asked: the check of one tool call takes the host's
 * paths as they were when first looked at, as one list's walks always did.
 * A hash table (FNV-1a, linear probing): the check of a file tool walks
 * ~200 paths of ~6 components each, most of them names that do not exist
 * (a settings file of every host in every directory down to the file, a
 * credential of every tool in the home), asked again by each list.
 *
 * A small directory many names are looked up in (the home, .config) is
 * read once instead (hookpath_list()): a name it does not hold is then
 * known to fail lstat() without a lookup (ENOENT; or EACCES where the
 * directory cannot be searched: failing either way); a name it holds is
 * still lstat()ed, whatever its type. Only where a listing holds exactly
 * the names a lookup finds (dirread_exact(): ext2-4, tmpfs or btrfs, not
 * overlayfs, and there neither a case-folded nor an encrypted directory). */

enum hookpath_kind {
	HOOKPATH_DIR,
	HOOKPATH_OTHER, /* exists, neither a directory nor a symlink */
	HOOKPATH_ABSENT, /* lstat() failed */
};

/* A directory's entries (hookpath_list()): a hash set of names. */
struct hookpath_names {
	struct hookpath_name {
		const char *name; /* in the cache's arena; NULL: free slot */
		size_t len, hash;
	} * slots;
	size_t cap; /* a power of two */
};

struct hookpath_slot {
	const char *key; /* in the arena; NULL: free slot */
	size_t hash;
	uint32_t len;
	/* a directory's: lookups in it so far, its listing (listed 1) or
	 * that there is none (-1) */
	uint16_t lookups;
	unsigned char kind; /* enum hookpath_kind */
	signed char listed;
	bool hinted; /* hookpath_cache_hint(): read at its first lookup */
	struct hookpath_names *names;
};

/* Keys and names, freed together: a few hundred small strings. */
struct hookpath_block {
	struct hookpath_block *next;
	size_t used, cap;
	char data[];
};

#define HOOKPATH_HINTS 8

struct hookpath_cache {
	struct hookpath_slot *slots;
	size_t cap, n; /* cap: 0 or a power of two */
	struct hookpath_block *arena;
	const char *hints[HOOKPATH_HINTS]; /* hookpath_cache_hint(), in the arena */
	size_t hint_len[HOOKPATH_HINTS], n_hints;
};

/* Lookups in a directory before it is read whole instead, and the most
 * names a listing holds (HOOKPATH_LIST_MAX_NAMES, hookpath.h):
 * reading pays when the names still to be looked up in it are more than
 * its entries. Measured on ext4: a failing lookup ~1 us; a listing ~12 us
 * and ~0.7 us an entry. A file edit's check looks up ~85 names in the home (16 entries here: 19 us to read), ~25 in
 * .config, ~20 in /etc (160 entries, 130 us: not read, more than a
 * listing holds), under 16 in the workspace and each host's directory. A
 * directory found to hold more than HOOKPATH_LIST_MAX_NAMES costs one read of
 * 4 KiB of entries for nothing, once per hook call; one of more than a
 * block, or with more subdirectories, is never read. */
#define HOOKPATH_LIST_AFTER 16

void hookpath_cache_free(struct hookpath_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].names) {
			free(c->slots[i].names->slots);
			free(c->slots[i].names);
		}
	free(c->slots);
	while (c->arena) {
		struct hookpath_block *next = c->arena->next;
		free(c->arena);
		c->arena = next;
	}
	free(c);
}

/* A copy of the n bytes at s, NUL-terminated, in c's arena; NULL without
 * memory. */
static const char *hookpath_keep(struct hookpath_cache *c, const char *s, size_t n)
{
	struct hookpath_block *b = c->arena;

	if (!b || b->cap - b->used < n + 1) {
		size_t cap = n + 1 > 8192 ? n + 1 : 8192;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = c->arena;
		b->used = 0;
		b->cap = cap;
		c->arena = b;
	}
	char *copy = b->data + b->used;
	memcpy(copy, s, n);
	copy[n] = '\0';
	b->used += n + 1;
	return copy;
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

/* key's slot (len bytes, hashed h); NULL: not in the cache. Valid until
 * the next hookpath_put(). */
static struct hookpath_slot *hookpath_find(const struct hookpath_cache *c, const char *key,
					   size_t len, size_t h)
{
	if (!c || c->cap == 0 || len > UINT32_MAX)
		return NULL;
	for (size_t i = h & (c->cap - 1); c->slots[i].key; i = (i + 1) & (c->cap - 1)) {
		struct hookpath_slot *e = &c->slots[i];
		if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
	return NULL;
}

/* Adds key (len bytes, hashed h), not in it before, as kind; a failure only
 * leaves it out of the cache. */
static void hookpath_put(struct hookpath_cache *c, const char *key, size_t len, size_t h,
			 enum hookpath_kind kind, bool unlisted)
{
	if (!c || len > UINT32_MAX)
		return;
	if (2 * (c->n + 1) > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 512;
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
	const char *copy = hookpath_keep(c, key, len);
	if (!copy)
		return;
	size_t k = h & (c->cap - 1);
	while (c->slots[k].key)
		k = (k + 1) & (c->cap - 1);
	bool hinted = false;
	for (size_t i = 0; i < c->n_hints && kind == HOOKPATH_DIR && !unlisted && !hinted; i++)
		hinted = c->hint_len[i] == len && memcmp(c->hints[i], key, len) == 0;
	c->slots[k] = (struct hookpath_slot){ .key = copy,
					      .hash = h,
					      .len = (uint32_t)len,
					      .kind = (unsigned char)kind,
					      .listed = unlisted ? -1 : 0,
					      .hinted = hinted };
	c->n++;
}

/* Whether the listed directory holds the name (n bytes). */
static bool hookpath_names_has(const struct hookpath_names *s, const char *name, size_t n)
{
	size_t h = hookpath_hash(HOOKPATH_HASH0, name, n);

	for (size_t i = h & (s->cap - 1); s->slots[i].name; i = (i + 1) & (s->cap - 1))
		if (s->slots[i].hash == h && s->slots[i].len == n &&
		    memcmp(s->slots[i].name, name, n) == 0)
			return true;
	return false;
}

/* Reads the directory dir (d, a directory slot) whole into d->names, or
 * marks it as one that is not (d->listed -1). */
static void hookpath_list(struct hookpath_cache *c, struct hookpath_slot *d, const char *dir)
{
	cleanup_close int fd =
		open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct hookpath_names names = { 0 };
	size_t n = 0;
	struct dirread dr;
	struct dirread_entry de;
	char buf[4096];

	d->listed = -1;
	if (fd < 0 || !dirread_exact(fd))
		return;
	names.cap = 2 * HOOKPATH_LIST_MAX_NAMES;
	names.slots = calloc(names.cap, sizeof(*names.slots));
	if (!names.slots)
		return;
	dirread_init(&dr, fd, buf, sizeof(buf));
	for (;;) {
		int got = dirread_next(&dr, &de);
		if (got == 0)
			break;
		if (got < 0)
			goto fail;
		if (++n > HOOKPATH_LIST_MAX_NAMES)
			goto fail;
		const char *name = hookpath_keep(c, de.name, de.len);
		if (!name)
			goto fail;
		size_t h = hookpath_hash(HOOKPATH_HASH0, name, de.len);
		size_t k = h & (names.cap - 1);
		while (names.slots[k].name)
			k = (k + 1) & (names.cap - 1);
		names.slots[k] = (struct hookpath_name){ .name = name, .len = de.len, .hash = h };
	}
	d->names = malloc(sizeof(*d->names));
	if (!d->names)
		goto fail;
	*d->names = names;
	d->listed = 1;
	return;
fail:
	free(names.slots);
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

/* What lstat() says of out (len bytes; its parent directory the first
 * before bytes, hashed parent_hash), through the parent's listing when it
 * has one (hookpath_list()). 0 with *ret: a directory, something else, or
 * nothing; 1: a symlink (not kept: looked at again each time); -errno:
 * lstat() could not tell. Nothing is only what lstat() says of a name that
 * is not there or that the tool cannot reach either (ENOENT, ENOTDIR,
 * EACCES, a name longer than the file system takes): out longer than
 * PATH_MAX, which lstat() refuses (ENAMETOOLONG), is a place the kernel
 * still reaches through links. */
static int hookpath_lookup(struct hookpath_cache *c, char *out, size_t before, size_t parent_hash,
			   size_t len, enum hookpath_kind *ret, bool *ret_big)
{
	struct hookpath_slot *d = NULL;
	struct stat sb;

	if (c) {
		d = hookpath_find(c, out, before, parent_hash);
		if (!d && before == 0) {
			/* the root: not read (its size unknown) */
			hookpath_put(c, out, 0, parent_hash, HOOKPATH_DIR, true);
			d = hookpath_find(c, out, 0, parent_hash);
		}
	}
	if (d && d->kind == HOOKPATH_DIR && d->listed == 0 && d->hinted) {
		char saved = out[before];
		out[before] = '\0';
		hookpath_list(c, d, out);
		out[before] = saved;
	}
	if (d && d->kind == HOOKPATH_DIR && d->listed == 1 &&
	    !hookpath_names_has(d->names, out + before + 1, len - before - 1)) {
		*ret = HOOKPATH_ABSENT;
		return 0;
	}
	int r = lstat(out, &sb);
	if (d && d->kind == HOOKPATH_DIR) {
		if (d->lookups < UINT16_MAX)
			d->lookups++;
		if (d->listed == 0 && d->lookups >= HOOKPATH_LIST_AFTER) {
			char saved = out[before];
			out[before] = '\0';
			hookpath_list(c, d, out);
			out[before] = saved;
		}
	}
	*ret_big = false;
	if (r < 0 && errno != ENOENT && errno != ENOTDIR && errno != EACCES &&
	    !(errno == ENAMETOOLONG && len + 1 < PATH_MAX))
		return -errno;
	if (r < 0) {
		*ret = HOOKPATH_ABSENT;
	} else if (S_ISDIR(sb.st_mode)) {
		/* more than a block (ext4), or more subdirectories than a
		 * listing holds: never read whole (reading even part of it
		 * costs more than the lookups it could save); st_nlink is 2
		 * and one a subdirectory */
		*ret = HOOKPATH_DIR;
		*ret_big = sb.st_size > 4096 || sb.st_nlink > HOOKPATH_LIST_MAX_NAMES + 2;
	} else if (!S_ISLNK(sb.st_mode))
		*ret = HOOKPATH_OTHER;
	else
		return 1;
	return 0;
}

/* Whether path has a ".." component. */
static bool hookpath_has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p++)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* The next component of *p (empty ones and "." skipped), *p moved to it
 * and its length in *n; false: none left. */
static bool hookpath_proc_next(const char **p, size_t *n)
{
	for (;;) {
		while (**p == '/')
			(*p)++;
		*n = strcspn(*p, "/");
		if (*n == 0)
			return false;
		if (*n != 1 || **p != '.')
			return true;
		(*p)++;
	}
}

/* Whether the n bytes at s are a name of digits only. */
static bool hookpath_proc_is_id(const char *s, size_t n)
{
	return n > 0 && strspn(s, "0123456789") >= n;
}

void hookpath_proc_parse(const char *path, struct hookpath_proc *ret)
{
	const char *p = path;
	size_t n;

	*ret = (struct hookpath_proc){ .who = HOOKPATH_PROC_NONE, .rest = "" };
	if (path[0] != '/')
		return;
	if (hookpath_has_dotdot(path)) {
		/* /proc/self/../1 is /proc/1 (self is the hook's, a
		 * directory in /proc); after a process's link, .. is the
		 * parent of what it reaches: nothing the text tells */
		ret->who = HOOKPATH_PROC_UNKNOWN;
		return;
	}
	if (!hookpath_proc_next(&p, &n) || n != 4 || strncmp(p, "proc", 4) != 0)
		return;
	p += n;
	if (!hookpath_proc_next(&p, &n))
		return; /* /proc itself */
	if (n == 4 && strncmp(p, "self", 4) == 0) {
		ret->who = HOOKPATH_PROC_SELF;
	} else if (n == 11 && strncmp(p, "thread-self", 11) == 0) {
		ret->who = HOOKPATH_PROC_THREAD_SELF;
	} else if (hookpath_proc_is_id(p, n)) {
		ret->who = HOOKPATH_PROC_PID;
		ret->pid = p;
		ret->pid_len = n;
	} else {
		return; /* /proc/cpuinfo, /proc/+1: no process's */
	}
	p += n;
	/* a thread below it: thread-self is one, and has no task/ */
	const char *t = p;
	if (ret->who != HOOKPATH_PROC_THREAD_SELF && hookpath_proc_next(&t, &n) && n == 4 &&
	    strncmp(t, "task", 4) == 0) {
		t += n;
		if (hookpath_proc_next(&t, &n) && hookpath_proc_is_id(t, n)) {
			ret->tid = t;
			ret->tid_len = n;
			p = t + n;
		}
	}
	if (hookpath_proc_next(&p, &n))
		ret->rest = p;
}

/* The entries of a process's directory in /proc that a file tool reads:
 * its name, state, usage and limits. */
static const char *const hookpath_proc_shown[] = {
	"comm",	     "stat",	      "statm",	  "status",    "limits", "cgroup",    "io",
	"oom_score", "oom_score_adj", "loginuid", "sessionid", "wchan",	 "schedstat", NULL
};

bool hookpath_proc_hidden(const char *path, bool root)
{
	struct hookpath_proc proc;
	const char *p = path;
	size_t n;

	hookpath_proc_parse(path, &proc);
	switch (proc.who) {
	case HOOKPATH_PROC_NONE:
		/* "/" and /proc hold every process's directory */
		if (!root || !hookpath_proc_next(&p, &n))
			return root;
		if (n != 4 || strncmp(p, "proc", 4) != 0)
			return false;
		p += n;
		return !hookpath_proc_next(&p, &n);
	case HOOKPATH_PROC_PID:
		if (!proc.rest[0])
			return root;
		n = strcspn(proc.rest, "/");
		if (proc.rest[n])
			return true; /* below an entry, or task/ (no thread) */
		for (size_t i = 0; hookpath_proc_shown[i]; i++)
			if (strlen(hookpath_proc_shown[i]) == n &&
			    strncmp(hookpath_proc_shown[i], proc.rest, n) == 0)
				return false;
		return true;
	case HOOKPATH_PROC_SELF:
	case HOOKPATH_PROC_THREAD_SELF:
	case HOOKPATH_PROC_UNKNOWN:
		break;
	}
	return true;
}

/* What the walk does at the symlink out in /proc (hookpath_proc_parse()):
 * 1, keep it as named: a process's link, the kernel's to what that
 * process holds (an open file, its root, cwd, exe); -1, refuse it:
 * /proc/self or thread-self, the hook's; 0: follow it. */
static int hookpath_walk_proc(const char *out)
{
	struct hookpath_proc proc;

	hookpath_proc_parse(out, &proc);
	if (proc.who == HOOKPATH_PROC_PID)
		return proc.rest[0] ? 1 : 0;
	return proc.who == HOOKPATH_PROC_NONE ? 0 : -1;
}

/* Whether the symlink at out (its parent: out's first before bytes) is in
 * a procfs the text does not name /proc (one mounted elsewhere, a bind
 * mount of part of one): its self, thread-self and each process's links
 * are what hookpath_walk_proc() tells of /proc's. A statfs() per symlink
 * met, none per other component. */
static bool hookpath_proc_elsewhere(char *out, size_t before)
{
	struct statfs sf;
	char saved = out[before];
	bool in_proc =
		out[0] == '/' && strncmp(out, "/proc", 5) == 0 && (out[5] == '/' || out[5] == '\0');

	if (in_proc || before == 0)
		return false;
	out[before] = '\0';
	int r = statfs(out, &sf);
	out[before] = saved;
	return r == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* An absolute path as the kernel resolves it once the tool has made what
 * is missing, in one walk from the root: each component is lstat()ed once
 * (or known from cache: struct hookpath_cache), a symlink (dangling or not)
 * is replaced by its target (a ".." after it goes to the target's parent),
 * a component that does not exist is taken as a plain directory the tool
 * makes, and so is all below it, until a ".." drops it: from the directory
 * that exists above it, lookups go on (a tool that makes x/ for x/../link,
 * or drops "x/.." first, reaches what link leads to). Where no ".." follows
 * a missing component, the same answer as realpath() of the longest
 * existing prefix with the rest appended, which readlink()ed every
 * component of every prefix: a hook call with a file tool resolves a
 * hundred paths (the hide list, the hosts' settings), 1,300 system calls. */
static char *hookpath_walk(const char *path, struct hookpath_cache *cache)
{
	cleanup_free char *todo = NULL; /* what is left after a symlink's target */
	size_t len = 0, cap = strlen(path) + 2;
	char *out = malloc(cap);
	const char *p = path;
	/* out's last components that do not exist (from the first one lstat()
	 * did not find on): taken as text, as the directories the tool makes;
	 * ".." drops one, and with none left, lookups go on from a directory
	 * that exists */
	size_t missing = 0;
	bool failed = false;
	bool in_other = false; /* out is neither a directory nor a symlink */
	/* out's length up to the last process's link in /proc kept as named
	 * (0: none): a ".." that drops it goes where the text does not tell */
	size_t proc_link = 0;
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
			if (proc_link > 0 && len == proc_link) {
				failed = true; /* the parent of what the link reaches */
				break;
			}
			hookpath_up(out, &len);
			if (missing > 0)
				missing--;
			if (hashed > len)
				hashed = SIZE_MAX; /* hash is of what was dropped */
			in_other = false; /* a directory walked through, or made */
			p += n;
			continue;
		}
		size_t before = len;
		if (!hookpath_append(&out, &len, &cap, p, n)) {
			failed = true;
			break;
		}
		p += n;
		if (missing > 0) {
			missing++;
			continue;
		}
		size_t parent_hash = HOOKPATH_HASH0;
		if (cache) {
			/* out's hash from its parent's when that is the last one hashed */
			if (hashed == before)
				parent_hash = hash;
			else if (before > 0)
				parent_hash = hookpath_hash(HOOKPATH_HASH0, out, before);
			hash = hookpath_hash(parent_hash, out + before, len - before);
			hashed = len;
		}
		enum hookpath_kind kind = HOOKPATH_ABSENT;
		struct hookpath_slot *seen = hookpath_find(cache, out, len, hash);
		bool link = false, big = false;
		int r = 0;
		if (seen)
			kind = (enum hookpath_kind)seen->kind;
		else if (in_other)
			kind = HOOKPATH_ABSENT; /* below a file: lstat() fails, ENOTDIR */
		else if ((r = hookpath_lookup(cache, out, before, parent_hash, len, &kind, &big)) == 0)
			hookpath_put(cache, out, len, hash, kind, big);
		else if (r > 0)
			link = true;
		if (r < 0) {
			failed = true; /* not known: not taken for nothing */
			break;
		}
		if (!link) {
			in_other = kind == HOOKPATH_OTHER;
			if (kind == HOOKPATH_ABSENT)
				missing = 1;
			continue;
		}
		in_other = false;
		int proc = hookpath_walk_proc(out);
		if (proc == 0 && hookpath_proc_elsewhere(out, before)) {
			failed = true; /* its self and links: not told by the text */
			break;
		}
		if (proc < 0) {
			failed = true; /* /proc/self: the hook's, not the host's */
			break;
		}
		if (proc > 0) {
			in_other = true; /* a file, nothing below it */
			proc_link = len;
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
		if (len < proc_link)
			proc_link = 0; /* out left the link */
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

/* base/path made absolute (relative to the cwd when base is NULL or
 * relative itself), as written: NULL without memory. */
static char *hookpath_absolute(const char *base, const char *path)
{
	cleanup_free char *here = NULL, *from = NULL;

	if (path[0] == '/')
		return strdup(path);
	if (!base || base[0] != '/') {
		here = getcwd(NULL, 0);
		if (!here)
			return NULL;
		if (base) {
			from = path_join(here, base);
			if (!from)
				return NULL;
		}
		base = from ? from : here;
	}
	return path_join(base, path);
}

/* path with "." and empty components dropped and each ".." taking the one
 * before it, as text (Node's path.resolve(), Python's os.path.normpath());
 * "/" for none. NULL without memory. */
static char *hookpath_lexical(const char *path)
{
	size_t len = 0, cap = strlen(path) + 2;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			hookpath_up(out, &len);
		else if (n > 0 && !(n == 1 && p[0] == '.') && !hookpath_append(&out, &len, &cap, p, n))
			return free(out), NULL;
		p += n;
	}
	if (len == 0)
		strcpy(out, "/");
	return out;
}

/* In one walk (hookpath_walk()). cache (when not NULL) holds the
 * directories the walks so far passed, for the walks that pass them again
 * (the hide list is mostly below /etc and the home). */
char *hookpath_resolve(const char *base, const char *path, struct hookpath_cache *cache)
{
	if (path[0] == '/')
		return hookpath_walk(path, cache);
	cleanup_free char *joined = hookpath_absolute(base, path);
	return joined ? hookpath_walk(joined, cache) : NULL;
}

int hookpath_resolve_both(const char *base, const char *path, struct hookpath_cache *cache,
			  char **ret, char **ret_lexical)
{
	cleanup_free char *joined = hookpath_absolute(base, path);
	cleanup_free char *walked = NULL, *lexical = NULL, *text = NULL;

	*ret = *ret_lexical = NULL;
	if (!joined)
		return -ENOMEM;
	walked = hookpath_walk(joined, cache);
	if (!walked)
		return -ELOOP;
	if (hookpath_has_dotdot(joined)) {
		text = hookpath_lexical(joined);
		if (!text)
			return -ENOMEM;
		lexical = hookpath_walk(text, cache);
		if (!lexical)
			return -ELOOP;
		if (strcmp(lexical, walked) == 0) {
			free(lexical);
			lexical = NULL; /* the same place */
		}
	}
	*ret = TAKE_PTR(walked);
	*ret_lexical = TAKE_PTR(lexical);
	return 0;
}

struct hookpath_cache *hookpath_cache_new(void)
{
	return calloc(1, sizeof(struct hookpath_cache));
}

void hookpath_cache_hint(struct hookpath_cache *c, const char *dir)
{
	size_t len = strlen(dir);

	if (!c || c->n_hints == HOOKPATH_HINTS || dir[0] != '/')
		return;
	if (len == 1)
		return; /* the root: never read (its size unknown) */
	/* a directory walked already: read at its next lookup */
	struct hookpath_slot *d = hookpath_find(c, dir, len, hookpath_hash(HOOKPATH_HASH0, dir, len));
	if (d) {
		if (d->kind == HOOKPATH_DIR && d->listed == 0)
			d->hinted = true;
		return;
	}
	const char *copy = hookpath_keep(c, dir, len);
	if (!copy)
		return; /* only a hint */
	c->hints[c->n_hints] = copy;
	c->hint_len[c->n_hints++] = len;
}

bool hookpath_on_procfs(const char *path)
{
	cleanup_free char *dir = NULL;
	struct statfs sf;

	if (path[0] != '/' || (strncmp(path, "/proc", 5) == 0 && (path[5] == '/' || !path[5])))
		return false; /* read by hookpath_proc_hidden() */
	if (statfs(path, &sf) == 0)
		return sf.f_type == PROC_SUPER_MAGIC;
	/* what a tool makes (or cannot reach): in its nearest directory
	 * that statfs() tells of */
	dir = path_dirname(path);
	while (dir && strcmp(dir, "/") != 0 && statfs(dir, &sf) < 0) {
		char *up = path_dirname(dir);
		free(dir);
		dir = up;
	}
	if (!dir)
		return true;
	return strcmp(dir, "/") != 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* A mount point field of mountinfo (proc(5): space, tab, newline and
 * backslash as \ooo), unescaped in place. */
static void hookpath_unescape(char *s)
{
	char *out = s;

	for (char *c = s; *c;) {
		if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' &&
		    c[3] >= '0' && c[3] <= '7') {
			*out++ = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
			c += 4;
		} else {
			*out++ = *c++;
		}
	}
	*out = '\0';
}

int hookpath_procfs_below(char *const *dirs, size_t *ret_index)
{
	cleanup_free char *text = NULL;
	size_t size = 0;
	struct error ignored = { 0 };
	int r = file_read_capped(AT_FDCWD, "/proc/self/mountinfo", 16 * 1024 * 1024, &text, &size,
				 &ignored);

	if (r < 0)
		return r;
	*ret_index = 0;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS... - FSTYPE SOURCE ... */
		char *sep = strstr(line, " - ");
		char *point = line;
		for (int field = 0; field < 4 && point; field++) {
			point = strchr(point, ' ');
			if (point)
				point++;
		}
		if (sep && point && point < sep && strncmp(sep + 3, "proc ", 5) == 0) {
			point[strcspn(point, " ")] = '\0';
			hookpath_unescape(point);
			for (size_t i = 0; dirs[i]; i++)
				if (path_is_under(point, dirs[i])) {
					*ret_index = i;
					return 1;
				}
		}
		line = next;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The ledger's loading and verifying the log, reconciling the records, recovering. */
#include <pthread.h>
#include <stdatomic.h>

#include "ledger/entryscan.h"
#include "ledger/internal.h"

/* ---- loading and verifying --------------------------------------------------- */

void ledger_log_release(struct ledger_log *l)
{
	ledger_map_release(&l->map);
	free(l->offsets);
	free(l->leaves);
	*l = (struct ledger_log){ 0 };
}

/* Reads every complete line; stops at the first that is not a valid entry
 * with the next seq (l->corrupt). each, when not NULL, is given every valid
 * entry in order; its error stops the load. */
static int ledger_log_load_each(const struct ledger_schema *schema, int dir_fd, struct ledger_log *l,
				int (*each)(void *ctx, size_t i, const struct ledger_entry *e),
				void *ctx, struct error *err)
{
	*l = (struct ledger_log){ 0 };
	cleanup_close int fd = openat(dir_fd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger");
	int r = ledger_map_fd(fd, &l->map, err);
	if (r < 0)
		return r;
	/* Read once, front to back. */
	if (l->map.data)
		(void)madvise(l->map.data, l->map.size, MADV_SEQUENTIAL);
	size_t cap = 0;
	for (size_t pos = 0; pos < l->map.size;) {
		const char *line = l->map.data + pos;
		const char *nl = memchr(line, '\n', l->map.size - pos);
		if (!nl)
			break;
		struct ledger_entry e;
		struct error why;
		why.msg[0] = '\0';
		if (ledger_entry_read(schema, line, (size_t)(nl - line), &e, &why) < 0) {
			l->corrupt = true;
			snprintf(l->why, sizeof(l->why), "entry %zu is not valid: %.250s", l->n,
				 why.msg);
			break;
		}
		if (e.seq != l->n) {
			l->corrupt = true;
			snprintf(l->why, sizeof(l->why),
				 "entry %zu has seq %llu: entries were deleted, reordered or replayed",
				 l->n, (unsigned long long)e.seq);
			break;
		}
		if (l->n == cap) {
			cap = cap ? 2 * cap : 1024;
			size_t *o = reallocarray(l->offsets, cap, sizeof(*o));
			if (o)
				l->offsets = o;
			merkle_hash *h = reallocarray(l->leaves, cap, sizeof(*h));
			if (h)
				l->leaves = h;
			if (!o || !h)
				return error_set(err, ENOMEM, "out of memory");
		}
		if (each && (r = each(ctx, l->n, &e)) < 0)
			return error_set(err, -r, "out of memory");
		l->offsets[l->n] = pos;
		merkle_leaf_hash(line, (size_t)(nl - line), l->leaves[l->n]);
		l->n++;
		pos = (size_t)(nl - l->map.data) + 1;
		l->good_end = pos;
	}
	return 0;
}

int ledger_log_load(const struct ledger_schema *schema, int dir_fd, struct ledger_log *l,
		    struct error *err)
{
	return ledger_log_load_each(schema, dir_fd, l, NULL, NULL, err);
}

void ledger_log_entry(const struct ledger_schema *schema, const struct ledger_log *l, size_t i,
		      struct ledger_entry *ret)
{
	const char *line = l->map.data + l->offsets[i];
	const char *nl = memchr(line, '\n', l->map.size - l->offsets[i]);
	struct error ignored;

	(void)ledger_entry_read(schema, line, (size_t)(nl - line), ret, &ignored);
}

void ledger_report_release(struct ledger_report *r)
{
	free(r->findings);
	*r = (struct ledger_report){ 0 };
}

static void ledger_report_add(struct ledger_report *r, enum ledger_finding_type type,
			      const char *fmt, ...) _printf_(3, 4);
static void ledger_report_add(struct ledger_report *r, enum ledger_finding_type type,
			      const char *fmt, ...)
{
	va_list ap;

	if (r->n_findings >= LEDGER_MAX_FINDINGS)
		return;
	if ((r->n_findings & (r->n_findings + 1)) == 0 || r->n_findings == 0) {
		struct ledger_finding *f =
			reallocarray(r->findings, 2 * r->n_findings + 2, sizeof(*f));
		if (!f)
			return;
		r->findings = f;
	}
	struct ledger_finding *f = &r->findings[r->n_findings++];
	f->type = type;
	va_start(ap, fmt);
	vsnprintf(f->what, sizeof(f->what), fmt, ap);
	va_end(ap);
}

static void ledger_report_unbacked(struct ledger_report *rep, const char *path)
{
	ledger_report_add(rep, LEDGER_FINDING_UNBACKED, "%s: not committed by the ledger", path);
	if (rep->n_findings > 0 && rep->findings[rep->n_findings - 1].type == LEDGER_FINDING_UNBACKED)
		snprintf(rep->findings[rep->n_findings - 1].path, sizeof(rep->findings[0].path),
			 "%s", path);
}

/* ---- sets of strings ---------------------------------------------------------- */

/* Strings, each with a value, listed in the order they were first added
 * (the order verify reports in); open addressing over a 64-bit FNV-1a hash,
 * the keys copied into chunks freed together. */
struct ledger_strset_item {
	const char *key;
	size_t value;
	int tag;
};

struct ledger_strset {
	uint64_t *hashes; /* per slot */
	uint32_t *slots; /* item index + 1; 0: empty */
	size_t nslots;
	struct ledger_strset_item *items;
	size_t n, cap;
	char **chunks;
	size_t n_chunks;
	char *free_at;
	size_t free_left;
};

static void ledger_strset_release(struct ledger_strset *set)
{
	for (size_t i = 0; i < set->n_chunks; i++)
		free(set->chunks[i]);
	free(set->chunks);
	free(set->hashes);
	free(set->slots);
	free(set->items);
	*set = (struct ledger_strset){ 0 };
}

static uint64_t ledger_strset_hash(const char *key, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ULL;
	return h;
}

/* The slot of key, or of where it goes. */
static size_t ledger_strset_slot(const struct ledger_strset *set, const char *key, uint64_t h)
{
	size_t mask = set->nslots - 1, i = (size_t)h & mask;

	while (set->slots[i] &&
	       (set->hashes[i] != h || strcmp(set->items[set->slots[i] - 1].key, key) != 0))
		i = (i + 1) & mask;
	return i;
}

static struct ledger_strset_item *ledger_strset_get(const struct ledger_strset *set, const char *key)
{
	if (set->n == 0)
		return NULL;
	size_t i = ledger_strset_slot(set, key, ledger_strset_hash(key, strlen(key)));
	return set->slots[i] ? &set->items[set->slots[i] - 1] : NULL;
}

static int ledger_strset_grow(struct ledger_strset *set)
{
	size_t nslots = set->nslots ? 2 * set->nslots : 1024;
	uint64_t *hashes = calloc(nslots, sizeof(*hashes));
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!hashes || !slots || nslots > UINT32_MAX) {
		free(hashes);
		free(slots);
		return -ENOMEM;
	}
	for (size_t i = 0; i < set->nslots; i++) {
		if (!set->slots[i])
			continue;
		size_t j = (size_t)set->hashes[i] & (nslots - 1);
		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = set->slots[i];
		hashes[j] = set->hashes[i];
	}
	free(set->hashes);
	free(set->slots);
	set->hashes = hashes;
	set->slots = slots;
	set->nslots = nslots;
	return 0;
}

/* A copy of key (n bytes) in the set's chunks. */
static char *ledger_strset_copy(struct ledger_strset *set, const char *key, size_t n)
{
	if (set->free_left < n + 1) {
		size_t size = n + 1 > 65536 ? n + 1 : 65536;
		char **chunks = reallocarray(set->chunks, set->n_chunks + 1, sizeof(*chunks));
		if (!chunks)
			return NULL;
		set->chunks = chunks;
		if (!(set->chunks[set->n_chunks] = malloc(size)))
			return NULL;
		set->free_at = set->chunks[set->n_chunks++];
		set->free_left = size;
	}
	char *copy = set->free_at;
	memcpy(copy, key, n);
	copy[n] = '\0';
	set->free_at += n + 1;
	set->free_left -= n + 1;
	return copy;
}

/* Adds key, or finds it, and sets its value and tag. */
static int ledger_strset_put(struct ledger_strset *set, const char *key, size_t value, int tag)
{
	if ((set->n + 1) * 2 > set->nslots && ledger_strset_grow(set) < 0)
		return -ENOMEM;
	size_t n = strlen(key);
	uint64_t h = ledger_strset_hash(key, n);
	size_t i = ledger_strset_slot(set, key, h);
	if (set->slots[i]) {
		set->items[set->slots[i] - 1].value = value;
		set->items[set->slots[i] - 1].tag = tag;
		return 0;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 1024;
		struct ledger_strset_item *items = reallocarray(set->items, cap, sizeof(*items));
		if (!items)
			return -ENOMEM;
		set->items = items;
		set->cap = cap;
	}
	const char *copy = ledger_strset_copy(set, key, n);
	if (!copy)
		return -ENOMEM;
	set->items[set->n++] = (struct ledger_strset_item){ .key = copy, .value = value, .tag = tag };
	set->slots[i] = (uint32_t)set->n;
	set->hashes[i] = h;
	return 0;
}

/* ---- the state directory against the log --------------------------------------- */

/* What the log says of the root directory: each path's last entry (its
 * index and kind, in the order the paths first appear), the ids of the open
 * records closed, the paths retired. */
struct ledger_named {
	const struct ledger_schema *schema;
	struct ledger_strset paths;
	struct ledger_strset closed;
	struct ledger_strset retired;
};

static void ledger_named_release(struct ledger_named *named)
{
	ledger_strset_release(&named->paths);
	ledger_strset_release(&named->closed);
	ledger_strset_release(&named->retired);
}

/* ledger_log_load_each()'s step: entry i is e. */
static int ledger_named_add(void *ctx, size_t i, const struct ledger_entry *e)
{
	struct ledger_named *named = ctx;
	const struct ledger_schema *s = named->schema;

	if (ledger_strset_put(&named->paths, e->path, i, e->kind) < 0 ||
	    (e->kind == s->kind_close && ledger_strset_put(&named->closed, e->id, 0, 0) < 0) ||
	    (e->kind == s->kind_retire && ledger_strset_put(&named->retired, e->path, 0, 0) < 0))
		return -ENOMEM;
	return 0;
}

/* Records in dir (a directory below the root, no '*') whose paths the
 * ledger does not name: the names with a '*' listed, the others looked up. */
static void ledger_find_unbacked_in(struct ledger *ledger, const struct ledger_strset *paths,
				    const char *dir, const char *const *names,
				    struct ledger_report *rep)
{
	char path[LEDGER_PATH_MAX + 32];

	for (const char *const *name = names; *name; name++) {
		if (strchr(*name, '*'))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", *name) >=
		    sizeof(path))
			continue;
		if (!ledger_strset_get(paths, path) &&
		    faccessat(ledger->root_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			ledger_report_unbacked(rep, path);
	}
	bool listed = false;
	for (const char *const *name = names; *name; name++)
		listed |= strchr(*name, '*') != NULL;
	if (!listed)
		return;
	cleanup_close int fd =
		fd_open_beneath(ledger->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d)
		return;
	fd = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		for (const char *const *name = names; *name; name++) {
			if (!strchr(*name, '*') || fnmatch(*name, de->d_name, FNM_PERIOD) != 0)
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "",
					     de->d_name) >= sizeof(path))
				break;
			if (!ledger_strset_get(paths, path))
				ledger_report_unbacked(rep, path);
			break;
		}
	}
	closedir(d);
}

/* The directories matching pattern below prefix ('*' components are each
 * entry not starting with '.'), walked in readdir order. */
static void ledger_find_unbacked_at(struct ledger *ledger, const struct ledger_strset *paths,
				    const char *prefix, const char *pattern,
				    const char *const *names, struct ledger_report *rep)
{
	char dir[LEDGER_PATH_MAX + 1];
	const char *star = strstr(pattern, "*");

	if (!star) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s%s%s", prefix,
				     *prefix && *pattern ? "/" : "", pattern) >= sizeof(dir))
			return;
		ledger_find_unbacked_in(ledger, paths, dir, names, rep);
		return;
	}
	/* The star is a whole component: the directory is what precedes it,
	 * the pattern below each of its entries what follows. */
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s%.*s", prefix, *prefix && star > pattern ? "/" : "",
			     star > pattern ? (int)(star - pattern - 1) : 0, pattern) >= sizeof(dir))
		return;
	const char *rest = star[1] == '/' ? star + 2 : "";
	cleanup_close int fd =
		fd_open_beneath(ledger->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d)
		return;
	fd = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char sub[LEDGER_PATH_MAX + 1];
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", dir, *dir ? "/" : "", de->d_name) >=
		    sizeof(sub))
			continue;
		ledger_find_unbacked_at(ledger, paths, sub, rest, names, rep);
	}
	closedir(d);
}

/* The schema's records whose paths the ledger does not name. */
static void ledger_find_unbacked(struct ledger *ledger, const struct ledger_strset *paths,
				 struct ledger_report *rep)
{
	const struct ledger_schema *s = ledger->schema;

	for (size_t i = 0; i < s->n_records; i++)
		ledger_find_unbacked_at(ledger, paths, "", s->records[i].dir, s->records[i].names, rep);
}

/* Whether path, or a directory above it, is the path of an entry of the
 * schema's kind_retire. */
static bool ledger_retired(const struct ledger_strset *retired, const char *path)
{
	char dir[LEDGER_PATH_MAX + 1];

	if (retired->n == 0)
		return false;
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *slash = strchr(dir, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		bool hit = ledger_strset_get(retired, dir) != NULL;
		*slash = '/';
		if (hit)
			return true;
	}
	return ledger_strset_get(retired, dir) != NULL;
}

/* Whether the record at path is compared with its last entry, of kind: not
 * when that retires or recovers it, nor when a directory above it was
 * retired. */
static bool ledger_record_compared(const struct ledger_named *named, const char *path, int kind)
{
	const struct ledger_schema *s = named->schema;

	if (kind == s->kind_retire || kind == s->kind_recovered)
		return false;
	return !ledger_retired(&named->retired, path);
}

/* The entries whose records' caches are missing (recover writes them
 * back). */
struct ledger_caches {
	size_t *idx;
	size_t n, cap;
	bool oom;
};

static void ledger_caches_release(struct ledger_caches *c)
{
	free(c->idx);
	*c = (struct ledger_caches){ 0 };
}

static void ledger_caches_push(struct ledger_caches *c, size_t i)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		size_t *idx = reallocarray(c->idx, cap, sizeof(*idx));
		if (!idx) {
			c->oom = true;
			return;
		}
		c->idx = idx;
		c->cap = cap;
	}
	c->idx[c->n++] = i;
}

/* The record the line of entry i carries (ledger_entry_record()). */
static int ledger_log_record(const struct ledger_schema *s, const struct ledger_log *l, size_t i,
			     char **ret, size_t *ret_n, struct error *err)
{
	const char *line = l->map.data + l->offsets[i];
	const char *nl = memchr(line, '\n', l->map.size - l->offsets[i]);

	return ledger_entry_record(s, line, (size_t)(nl - line), ret, ret_n, err);
}

/* A record file's digest: ledger_file_digest()'s result and hex. */
struct ledger_digest {
	int r;
	char hex[SHA256_HEX_SIZE];
};

/* Whether the file at path is a torn copy of the bytes entry i carries (a
 * cache a power loss cut: written after its entry, never synced). */
static bool ledger_check_torn(struct ledger *ledger, const struct ledger_log *l, size_t i,
			      const char *path)
{
	cleanup_free char *bytes = NULL;
	size_t n;
	struct error ignored = { 0 };

	return ledger_log_record(ledger->schema, l, i, &bytes, &n, &ignored) == 0 &&
	       ledger_file_torn(ledger, path, bytes, n);
}

/* One record against the log l: the file at path must hold the bytes its
 * last entry e (entry i) committed, but for an open record since closed,
 * and a record since retired. d is the file's digest, taken when
 * ledger_record_compared(). A file that is a cache of the bytes its entry
 * carries may be missing (a kill after the commit, before the cache was
 * written; a cache deleted) or torn (a power loss cut an unsynced cache):
 * the log holds the record, and its readers rebuild it; such entries go to
 * caches when not NULL (recover writes them back). */
static void ledger_check_record(struct ledger *ledger, const struct ledger_named *named,
				const struct ledger_log *l, const char *path,
				const struct ledger_entry *e, size_t i, const struct ledger_digest *d,
				struct ledger_report *rep, struct ledger_caches *caches)
{
	const struct ledger_schema *s = ledger->schema;

	if (!ledger_record_compared(named, path, e->kind))
		return;
	if (d->r == -ENOENT) {
		if (e->kind == s->kind_open && ledger_strset_get(&named->closed, e->id))
			return;
		if (e->has_record) {
			cleanup_free char *bytes = NULL;
			size_t n;
			struct error why = { 0 };
			if (ledger_log_record(s, l, i, &bytes, &n, &why) < 0)
				ledger_report_add(rep, LEDGER_FINDING_DIFFERS, "%s: %.300s", path,
						  why.msg);
			else if (caches)
				ledger_caches_push(caches, i);
			return;
		}
		ledger_report_add(rep, LEDGER_FINDING_MISSING,
				  "%s: %s %s committed by entry %zu is missing", path,
				  ledger_schema_kind_name(s, e->kind), e->id, i);
	} else if (d->r < 0) {
		ledger_report_add(rep, LEDGER_FINDING_MISSING, "%s: cannot read: %s", path,
				  strerror(-d->r));
	} else if (strcmp(d->hex, e->sha256) != 0) {
		/* The bytes of an earlier entry for the same record, whose last
		 * entry carries the newer ones: a cache a power loss left at a
		 * version the log has moved past (its rename was not durable
		 * when the entry's fdatasync was). Its readers rebuild it from
		 * the log, as a missing one; bytes no entry ever carried are a
		 * rewritten record. */
		if (e->has_record && (ledger_scan_digest(s, &l->map, l->offsets[i], path, d->hex) ||
				      ledger_check_torn(ledger, l, i, path))) {
			if (caches)
				ledger_caches_push(caches, i);
			return;
		}
		ledger_report_add(rep, LEDGER_FINDING_DIFFERS,
				  "%s: %s %s differs from what entry %zu committed", path,
				  ledger_schema_kind_name(s, e->kind), e->id, i);
	}
}

/* The digests of a batch of record files, taken by up to
 * LEDGER_DIGEST_THREADS threads: opening, reading and hashing thousands of
 * small files is most of verify's time, and each file is independent. */
#define LEDGER_DIGEST_BATCH   8192
#define LEDGER_DIGEST_THREADS 4
#define LEDGER_DIGEST_CHUNK   32

struct ledger_digests {
	struct ledger *ledger;
	const char *paths[LEDGER_DIGEST_BATCH]; /* NULL: not compared */
	struct ledger_digest digests[LEDGER_DIGEST_BATCH];
	size_t n;
	atomic_size_t next;
};

static void *ledger_digests_work(void *arg)
{
	struct ledger_digests *ds = arg;

	for (;;) {
		size_t from = atomic_fetch_add(&ds->next, LEDGER_DIGEST_CHUNK);
		if (from >= ds->n)
			return NULL;
		size_t to = from + LEDGER_DIGEST_CHUNK < ds->n ? from + LEDGER_DIGEST_CHUNK : ds->n;
		for (size_t k = from; k < to; k++)
			if (ds->paths[k])
				ds->digests[k].r = ledger_file_digest(ds->ledger, ds->paths[k],
								      ds->digests[k].hex);
	}
}

static void ledger_digests_take(struct ledger_digests *ds)
{
	pthread_t threads[LEDGER_DIGEST_THREADS - 1];
	size_t n_threads = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	atomic_store(&ds->next, 0);
	size_t want = cpus > 1 ? (size_t)cpus - 1 : 0;
	if (want > LEDGER_DIGEST_THREADS - 1)
		want = LEDGER_DIGEST_THREADS - 1;
	/* A thread costs more than the few files it would take. */
	if (want > ds->n / 256)
		want = ds->n / 256;
	while (n_threads < want &&
	       pthread_create(&threads[n_threads], NULL, ledger_digests_work, ds) == 0)
		n_threads++;
	ledger_digests_work(ds);
	for (size_t t = 0; t < n_threads; t++)
		pthread_join(threads[t], NULL);
}

/* The root directory against the ledger, named from its log l: each path's
 * last entry against its file (ledger_check_record(), in the order the paths
 * first appear), then the records no entry names. */
static int ledger_reconcile(struct ledger *ledger, const struct ledger_log *l,
			    const struct ledger_named *named, struct ledger_report *rep,
			    struct ledger_caches *caches, struct error *err)
{
	const struct ledger_schema *s = ledger->schema;
	cleanup_free struct ledger_digests *ds = calloc(1, sizeof(*ds));
	if (!ds)
		return error_set(err, ENOMEM, "out of memory");
	ds->ledger = ledger;
	for (size_t k0 = 0; k0 < named->paths.n; k0 += LEDGER_DIGEST_BATCH) {
		const struct ledger_strset_item *items = named->paths.items + k0;
		ds->n = named->paths.n - k0 < LEDGER_DIGEST_BATCH ? named->paths.n - k0
								  : LEDGER_DIGEST_BATCH;
		for (size_t k = 0; k < ds->n; k++)
			ds->paths[k] = ledger_record_compared(named, items[k].key, items[k].tag)
					       ? items[k].key
					       : NULL;
		ledger_digests_take(ds);
		for (size_t k = 0; k < ds->n; k++) {
			struct ledger_entry e;
			ledger_log_entry(s, l, items[k].value, &e);
			ledger_check_record(ledger, named, l, items[k].key, &e, items[k].value,
					    &ds->digests[k], rep, caches);
		}
	}
	ledger_find_unbacked(ledger, &named->paths, rep);
	return caches && caches->oom ? error_set(err, ENOMEM, "out of memory") : 0;
}

int ledger_verify(struct ledger *ledger, const struct ledger_vkey *vkey, const char *old_checkpoint,
		  size_t old_n, struct ledger_report *ret, struct error *err)
{
	*ret = (struct ledger_report){ 0 };
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	if (dir_fd < 0 && dir_fd != -ENOENT)
		return dir_fd;
	cleanup_close int lock_fd = dir_fd >= 0 ? ledger_lock(dir_fd, LOCK_SH, err) : -1;
	if (dir_fd >= 0 && lock_fd < 0)
		return lock_fd;
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	cleanup_with(ledger_named_release) struct ledger_named named = { .schema = ledger->schema };
	int r = dir_fd >= 0 ? ledger_log_load_each(ledger->schema, dir_fd, &l, ledger_named_add,
						   &named, err)
			    : 0;
	if (r < 0)
		return r;

	struct ledger_checkpoint cp = { 0 };
	struct error cerr = { 0 };
	r = dir_fd >= 0 ? ledger_checkpoint_read(dir_fd, vkey, &cp, &cerr) : -ENOENT;
	struct ledger_checkpoint old = { 0 };
	if (old_checkpoint) {
		struct error oerr = { 0 };
		if (ledger_checkpoint_parse(old_checkpoint, old_n, vkey, &old, &oerr) < 0) {
			ledger_checkpoint_release(&cp);
			return error_prefix(&oerr, "the checkpoint given"), *err = oerr, -EINVAL;
		}
	}
	/* The roots the checks below compare, in one pass over the leaves: of
	 * the whole log, at the checkpoint's size, at the given one's. */
	uint64_t sizes[3] = { l.n, r == 0 && cp.size <= l.n ? cp.size : l.n,
			      old_checkpoint && old.size <= l.n ? old.size : l.n };
	merkle_hash roots[3];
	merkle_roots((const merkle_hash *)l.leaves, l.n, sizes, 3, roots);

	ret->size = l.n;
	memcpy(ret->root, roots[0], MERKLE_HASH_BYTES);
	if (l.corrupt)
		ledger_report_add(ret, LEDGER_FINDING_TAMPERED, "%s", l.why);
	if (r == -ENOENT) {
		if (l.n > 0 || (l.map.size > 0))
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the ledger has entries but no checkpoint");
	} else if (r < 0) {
		ledger_report_add(ret, LEDGER_FINDING_TAMPERED, "%s", cerr.msg);
	} else {
		ret->checkpoint_size = cp.size;
		if (cp.size > l.n) {
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the checkpoint signs %llu entries, the log holds %zu valid ones: truncated or rewritten",
					  (unsigned long long)cp.size, l.n);
		} else {
			if (memcmp(roots[1], cp.root, MERKLE_HASH_BYTES) != 0)
				ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
						  "the first %llu entries are not those the checkpoint signed: rewritten",
						  (unsigned long long)cp.size);
			ret->unsigned_entries = l.n - cp.size;
		}
	}
	if (old_checkpoint) {
		if (old.size > l.n) {
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the checkpoint given signs %llu entries, the log holds %zu: truncated",
					  (unsigned long long)old.size, l.n);
		} else {
			if (memcmp(roots[2], old.root, MERKLE_HASH_BYTES) != 0)
				ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
						  "the log does not extend the checkpoint given (size %llu): rewritten",
						  (unsigned long long)old.size);
		}
		if (r == 0 && old.size > cp.size)
			ledger_report_add(ret, LEDGER_FINDING_TAMPERED,
					  "the ledger's checkpoint (size %llu) is older than the one given (size %llu): rolled back",
					  (unsigned long long)cp.size, (unsigned long long)old.size);
		ledger_checkpoint_release(&old);
	}
	if (!l.corrupt && l.good_end < l.map.size) {
		if (l.n >= cp.size)
			ledger_report_add(ret, LEDGER_FINDING_TORN,
					  "%zu bytes after entry %zu are a torn tail (a crash mid-append): `airlock ledger recover` moves them aside",
					  l.map.size - l.good_end, l.n);
	}
	ledger_checkpoint_release(&cp);
	return ledger_reconcile(ledger, &l, &named, ret, NULL, err);
}

/* ledger_recover_cache() of a file that is there: replaced by the bytes
 * entry i (of e) carries when it still holds those of an earlier entry for
 * the same record (a stale cache, ledger_check_record()) or a torn copy of
 * them (ledger_file_torn()), durably; left
 * alone otherwise (written meanwhile, or rewritten: verify reports it). */
static int ledger_recover_stale(struct ledger_writer *w, const struct ledger_log *l, size_t i,
				const struct ledger_entry *e, int dir_fd, const char *name,
				const char *bytes, size_t n, struct error *err)
{
	char hex[SHA256_HEX_SIZE], tmp[NAME_MAX + 1];

	if (ledger_file_digest(w->ledger, e->path, hex) < 0 || strcmp(hex, e->sha256) == 0 ||
	    (!ledger_scan_digest(w->ledger->schema, &l->map, l->offsets[i], e->path, hex) &&
	     !ledger_file_torn(w->ledger, e->path, bytes, n)))
		return 0;
	snprintf(tmp, sizeof(tmp), ".%.200s.%d.stale", name, (int)getpid());
	(void)unlinkat(dir_fd, tmp, 0);
	cleanup_close int fd =
		openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "write back %s", e->path);
	int r = fd_write_all(fd, bytes, n);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dir_fd, tmp, 0);
		return error_set_errno(err, -r, "write back %s", e->path);
	}
	if (fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "sync the directory of %s", e->path);
	return 0;
}

/* Writes back the cache of the record entry i carries, at its path below
 * the root directory (never through a symlink, never elsewhere), durably. */
static int ledger_recover_cache(struct ledger_writer *w, const struct ledger_log *l, size_t i,
				struct error *err)
{
	const struct ledger_schema *s = w->ledger->schema;
	struct ledger_entry e;
	cleanup_free char *bytes = NULL;
	size_t n;
	const char *name;

	ledger_log_entry(s, l, i, &e);
	if (e.path[0] == '/')
		return 0;
	int r = ledger_log_record(s, l, i, &bytes, &n, err);
	if (r < 0)
		return r;
	for (char *slash = strchr(e.path, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		cleanup_close int fd =
			fd_open_beneath(w->ledger->root_fd, e.path, O_RDONLY | O_DIRECTORY);
		if (fd == -ENOENT)
			(void)mkdirat(w->ledger->root_fd, e.path, 0700);
		*slash = '/';
	}
	cleanup_close int dir_fd = fd_open_parent(w->ledger->root_fd, e.path, O_RDONLY, &name);
	if (dir_fd < 0)
		return error_set_errno(err, -dir_fd, "open the directory of %s", e.path);
	r = file_write_atomic(dir_fd, name, bytes, n, 0600, true, err);
	if (r == -EEXIST) {
		error_clear(err);
		return ledger_recover_stale(w, l, i, &e, dir_fd, name, bytes, n, err);
	}
	return r < 0 ? error_prefix(err, "write back %s", e.path) : 0;
}

/* Under the writer's lock: what no entry backs is adopted (an open
 * failure) or moved aside, each with its entry; a missing cache of a
 * record the log carries is written back. */
static int ledger_recover_unbacked(struct ledger_writer *w, struct error *err)
{
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	cleanup_with(ledger_named_release) struct ledger_named named = { .schema = w->ledger->schema };
	cleanup_with(ledger_caches_release) struct ledger_caches caches = { 0 };
	struct ledger_report rep = { 0 };
	int r = ledger_log_load_each(w->ledger->schema, w->dir_fd, &l, ledger_named_add, &named, err);
	if (r == 0)
		r = ledger_reconcile(w->ledger, &l, &named, &rep, &caches, err);
	for (size_t k = 0; r == 0 && k < caches.n; k++)
		r = ledger_recover_cache(w, &l, caches.idx[k], err);
	for (size_t i = 0; r == 0 && i < rep.n_findings; i++) {
		const char *path = rep.findings[i].path;
		char hex[SHA256_HEX_SIZE], id[LEDGER_ID_MAX + 1];
		if (rep.findings[i].type != LEDGER_FINDING_UNBACKED || !path[0])
			continue;
		if (ledger_file_digest(w->ledger, path, hex) < 0)
			continue; /* gone meanwhile */
		const char *base = strrchr(path, '/');
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(base ? base + 1 : path, "."),
			 base ? base + 1 : path);
		const char *adopt = w->ledger->schema->adopt_dir;
		if (adopt && strncmp(path, adopt, strlen(adopt)) == 0) {
			r = ledger_append_locked(w, w->ledger->schema->kind_open, id, path, hex,
						 NULL, 0, NULL, NULL, err);
			continue;
		}
		char aside[LEDGER_PATH_MAX + 64];
		snprintf(aside, sizeof(aside), LEDGER_DIR "/uncommitted/%s", path);
		for (char *slash = strchr(aside, '/'); slash; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			(void)mkdirat(w->ledger->root_fd, aside, 0700);
			*slash = '/';
		}
		if (renameat(w->ledger->root_fd, path, w->ledger->root_fd, aside) < 0) {
			r = error_set_errno(err, errno, "move %s aside", path);
			break;
		}
		if (!ledger_id_ok(id))
			snprintf(id, sizeof(id), "uncommitted");
		r = ledger_append_locked(w, w->ledger->schema->kind_recovered, id, aside, hex, NULL,
					 0, NULL, NULL, err);
	}
	ledger_report_release(&rep);
	return r;
}

int ledger_recover(struct ledger *ledger, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;

	int r = ledger_writer_open(ledger, &w, &lock_fd, err);
	cleanup_with(ledger_log_release) struct ledger_log l = { 0 };
	if (r == 0)
		r = ledger_log_load(ledger->schema, w.dir_fd, &l, err);
	if (r == 0 && l.corrupt)
		r = error_set(err, EBADMSG,
			      "%s: not repaired automatically (see `airlock ledger verify`)", l.why);
	if (r == 0 && faccessat(w.dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		char hex[SHA256_HEX_SIZE];
		cleanup_free char *text = NULL;
		size_t n = 0;
		struct error ignored;
		(void)file_read_capped(w.dir_fd, "poisoned", 4096, &text, &n, &ignored);
		sha256_hex(text ? text : "", n, hex);
		/* The file stays, renamed, as the evidence the entry names. */
		char name[96];
		snprintf(name, sizeof(name), "poisoned.%llu", (unsigned long long)l.n);
		/* Cleared under the sync lock too: an appender waiting there
		 * behind the sync that failed must still find the mark. */
		cleanup_close int sync_fd =
			openat(w.dir_fd, "sync", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (sync_fd >= 0)
			while (flock(sync_fd, LOCK_EX) < 0 && errno == EINTR)
				;
		if (renameat(w.dir_fd, "poisoned", w.dir_fd, name) < 0)
			r = error_set_errno(err, errno, "clear the poisoned mark");
		char path[128];
		snprintf(path, sizeof(path), LEDGER_DIR "/%s", name);
		if (r == 0)
			r = ledger_append_locked(&w, ledger->schema->kind_recovered, "poisoned",
						 path, hex, NULL, 0, NULL, NULL, err);
	} else if (r == 0 && l.good_end < l.map.size) {
		/* ledger_append_locked() moves a torn tail aside before it appends;
		 * here there is nothing else to append. */
		struct ledger_tail t;
		r = ledger_tail_read(ledger->schema, w.log_fd, &t, err);
		if (r == 0)
			r = ledger_quarantine_tail(&w, &t, err);
	}
	if (r == 0)
		r = ledger_recover_unbacked(&w, err);
	if (r == 0)
		r = ledger_checkpoint_locked(&w, err);
	ledger_index_update(&w);
	ledger_writer_close(&w);
	return r < 0 ? error_prefix(err, "ledger recover") : 0;
}

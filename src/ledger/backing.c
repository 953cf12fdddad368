/* SPDX-License-Identifier: MIT */
/* The ledger's backing: whether the ledger backs a record, the open ids. */
#include "ledger/entryscan.h"
#include "ledger/internal.h"

/* ---- backing ------------------------------------------------------------------ */

/* The whole log mapped under the shared lock, with the ledger's directory:
 * a reader's view. -ENOENT when there is no ledger or no log. */
struct ledger_reader {
	const struct ledger_schema *schema;
	int dir_fd;
	int lock_fd;
	struct ledger_map map;
	uint64_t good_end;
};

static void ledger_reader_close(struct ledger_reader *r)
{
	ledger_map_release(&r->map);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	*r = (struct ledger_reader){ .schema = r->schema, .dir_fd = -1, .lock_fd = -1 };
}

static int ledger_reader_open(struct ledger *ledger, struct ledger_reader *ret, struct error *err)
{
	*ret = (struct ledger_reader){ .schema = ledger->schema, .dir_fd = -1, .lock_fd = -1 };
	int r = ledger_dir(ledger, false, err);
	if (r < 0)
		return r;
	ret->dir_fd = r;
	r = ledger_lock(ret->dir_fd, LOCK_SH, err);
	if (r < 0)
		return r;
	ret->lock_fd = r;
	cleanup_close int fd = openat(ret->dir_fd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : error_set_errno(err, errno, "open the ledger");
	r = ledger_map_fd(fd, &ret->map, err);
	if (r < 0)
		return r;
	ret->good_end = ledger_good_end(&ret->map);
	return 0;
}

/* The last entry for path among the lines of the log in [from, end). */
static bool ledger_scan_path(const struct ledger_schema *schema, const struct ledger_map *m,
			     uint64_t from, uint64_t end, const char *path,
			     struct ledger_entry *ret, uint64_t *ret_off)
{
	/* The path is JSON-escaped as jansson writes it; a clean path has no
	 * character that needs escaping but '/', which jansson leaves alone. */
	char needle[LEDGER_PATH_MAX + 16];
	snprintf(needle, sizeof(needle), "\"path\":\"%s\"", path);
	size_t nn = strlen(needle);
	bool have = false;
	for (const char *p = m->data + from, *stop = m->data + end; p < stop;) {
		const char *hit = memmem(p, (size_t)(stop - p), needle, nn);
		if (!hit)
			break;
		const char *start = hit;
		while (start > m->data + from && start[-1] != '\n')
			start--;
		const char *nl = memchr(hit, '\n', (size_t)(stop - hit));
		if (!nl)
			break;
		struct ledger_entry e;
		struct error ignored;
		if (ledger_entry_read(schema, start, (size_t)(nl - start), &e, &ignored) == 0 &&
		    strcmp(e.path, path) == 0) {
			*ret = e;
			*ret_off = (uint64_t)(start - m->data);
			have = true;
		}
		p = nl + 1;
	}
	return have;
}

/* The log's last entry for path: from the index (each hit confirmed in the
 * log) and the lines after what it covers, or from a scan of the whole log
 * when the index cannot be used. */
static bool ledger_last_in(const struct ledger_reader *rd, const struct ledger_index *x,
			   const char *path, struct ledger_entry *ret, uint64_t *ret_off)
{
	uint64_t from = 0;
	bool have = false;

	if (x) {
		uint64_t h = ledger_path_hash(path), mask = x->head->nslots - 1;
		for (uint64_t i = h & mask, k = 0; k < x->head->nslots && x->slots[i].off1;
		     i = (i + 1) & mask, k++) {
			struct ledger_entry e;
			if (x->slots[i].hash == h &&
			    ledger_line_at(rd->schema, &rd->map, x->slots[i].off1 - 1,
					   x->head->covered, &e, NULL) == 0 &&
			    strcmp(e.path, path) == 0) {
				*ret = e;
				*ret_off = x->slots[i].off1 - 1;
				have = true;
				break;
			}
		}
		from = x->head->covered;
	}
	return ledger_scan_path(rd->schema, &rd->map, from, rd->good_end, path, ret, ret_off) || have;
}

static bool ledger_last_for_path(const struct ledger_reader *rd, const char *path,
				 struct ledger_entry *ret, uint64_t *ret_off)
{
	struct ledger_index x;
	if (!ledger_index_open_usable(rd->dir_fd, &rd->map, rd->good_end, &x))
		return ledger_last_in(rd, NULL, path, ret, ret_off);
	bool have = ledger_last_in(rd, &x, path, ret, ret_off);
	ledger_index_release(&x);
	return have;
}

int ledger_backs(struct ledger *ledger, int kind, const char *id, const char *path,
		 const char sha256[SHA256_HEX_SIZE], struct error *err)
{
	struct ledger_reader rd;
	struct ledger_entry found;
	uint64_t off;

	int r = ledger_reader_open(ledger, &rd, err);
	bool have = r == 0 && ledger_last_for_path(&rd, path, &found, &off);
	ledger_reader_close(&rd);
	if (r < 0)
		return r;
	if (!have)
		return -ENOENT;
	if ((ledger_kind_known(ledger->schema, kind) && found.kind != kind) ||
	    (id && strcmp(found.id, id) != 0) || strcmp(found.sha256, sha256) != 0)
		return -EBADMSG;
	return 0;
}

/* One reader for many ledger_backs() questions: the log mapped once under
 * the shared lock, held until ledger_lookup_free(). */
struct ledger_lookup {
	struct ledger_reader rd;
	struct ledger_index x;
	bool have_x; /* the index, checked once, usable for the log mapped */
};

int ledger_lookup_open(struct ledger *ledger, struct ledger_lookup **ret, struct error *err)
{
	struct ledger_lookup *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return error_set(err, ENOMEM, "out of memory");
	int r = ledger_reader_open(ledger, &lk->rd, err);
	if (r < 0) {
		ledger_reader_close(&lk->rd);
		free(lk);
		return r;
	}
	lk->have_x = ledger_index_open_usable(lk->rd.dir_fd, &lk->rd.map, lk->rd.good_end, &lk->x);
	*ret = lk;
	return 0;
}

void ledger_lookup_free(struct ledger_lookup *lk)
{
	if (!lk)
		return;
	if (lk->have_x)
		ledger_index_release(&lk->x);
	ledger_reader_close(&lk->rd);
	free(lk);
}

int ledger_lookup_backs(struct ledger_lookup *lk, int kind, const char *id, const char *path,
			const char sha256[SHA256_HEX_SIZE])
{
	struct ledger_entry found;
	uint64_t off;

	if (!ledger_last_in(&lk->rd, lk->have_x ? &lk->x : NULL, path, &found, &off))
		return -ENOENT;
	if ((ledger_kind_known(lk->rd.schema, kind) && found.kind != kind) ||
	    (id && strcmp(found.id, id) != 0) || strcmp(found.sha256, sha256) != 0)
		return -EBADMSG;
	return 0;
}

int ledger_record(struct ledger *ledger, int kind, const char *id, const char *path, char **ret,
		  size_t *ret_n, struct error *err)
{
	struct ledger_reader rd;
	struct ledger_entry found;
	uint64_t off = 0;

	int r = ledger_reader_open(ledger, &rd, err);
	bool have = r == 0 && ledger_last_for_path(&rd, path, &found, &off);
	if (r == 0 && !have)
		r = -ENOENT;
	if (r == 0 && ((ledger_kind_known(ledger->schema, kind) && found.kind != kind) ||
		       (id && strcmp(found.id, id) != 0)))
		r = error_set(err, EBADMSG, "the ledger's last entry for %s is another record", path);
	if (r == 0 && !found.has_record)
		r = -ENODATA;
	if (r == 0) {
		const char *line = rd.map.data + off;
		const char *nl = memchr(line, '\n', (size_t)(rd.good_end - off));
		r = nl ? ledger_entry_record(rd.schema, line, (size_t)(nl - line), ret, ret_n, err)
		       : -EBADMSG;
	}
	ledger_reader_close(&rd);
	return r;
}

bool ledger_scan_digest(const struct ledger_schema *schema, const struct ledger_map *m,
			uint64_t end, const char *path, const char sha256[SHA256_HEX_SIZE])
{
	/* The lines as the writer lays them out (entry.c); a needle inside a
	 * carried record is escaped ('\"'), and every hit is parsed anyway. */
	char needle[SHA256_HEX_SIZE + 16];
	int nn = snprintf(needle, sizeof(needle), "\"sha256\":\"%s\"", sha256);

	if (end > m->size)
		end = m->size;
	for (const char *p = m->data, *stop = m->data + end; p < stop;) {
		const char *hit = memmem(p, (size_t)(stop - p), needle, (size_t)nn);
		if (!hit)
			break;
		const char *start = hit;
		while (start > m->data && start[-1] != '\n')
			start--;
		const char *nl = memchr(hit, '\n', (size_t)(stop - hit));
		if (!nl)
			break;
		struct ledger_entry e;
		struct error ignored;
		if (ledger_entry_read(schema, start, (size_t)(nl - start), &e, &ignored) == 0 &&
		    strcmp(e.path, path) == 0 && strcmp(e.sha256, sha256) == 0)
			return true;
		p = nl + 1;
	}
	return false;
}

/* ledger_record_since() against the reader rd (and its index x, or NULL). */
static int ledger_since_in(const struct ledger_reader *rd, const struct ledger_index *x, int kind,
			   const char *id, const char *path, const char sha256[SHA256_HEX_SIZE],
			   char **ret, size_t *ret_n, struct error *err)
{
	struct ledger_entry found;
	uint64_t off = 0;

	*ret = NULL;
	if (!ledger_last_in(rd, x, path, &found, &off))
		return -ENOENT;
	if (strcmp(found.sha256, sha256) == 0)
		return 0;
	if ((ledger_kind_known(rd->schema, kind) && found.kind != kind) ||
	    (id && strcmp(found.id, id) != 0) || !found.has_record ||
	    !ledger_scan_digest(rd->schema, &rd->map, off, path, sha256))
		return -EBADMSG;
	const char *line = rd->map.data + off;
	const char *nl = memchr(line, '\n', (size_t)(rd->good_end - off));
	int r = nl ? ledger_entry_record(rd->schema, line, (size_t)(nl - line), ret, ret_n, err)
		   : -EBADMSG;
	return r < 0 ? r : 1;
}

int ledger_record_since(struct ledger *ledger, int kind, const char *id, const char *path,
			const char sha256[SHA256_HEX_SIZE], char **ret, size_t *ret_n,
			struct error *err)
{
	struct ledger_reader rd;
	struct ledger_index x;

	*ret = NULL;
	int r = ledger_reader_open(ledger, &rd, err);
	if (r == 0) {
		bool have_x = ledger_index_open_usable(rd.dir_fd, &rd.map, rd.good_end, &x);
		r = ledger_since_in(&rd, have_x ? &x : NULL, kind, id, path, sha256, ret, ret_n, err);
		if (have_x)
			ledger_index_release(&x);
	}
	ledger_reader_close(&rd);
	return r;
}

int ledger_lookup_record_since(struct ledger_lookup *lk, int kind, const char *id, const char *path,
			       const char sha256[SHA256_HEX_SIZE], char **ret, size_t *ret_n,
			       struct error *err)
{
	return ledger_since_in(&lk->rd, lk->have_x ? &lk->x : NULL, kind, id, path, sha256, ret,
			       ret_n, err);
}

int ledger_max_id(struct ledger *ledger, int kind, uint64_t *ret, struct error *err)
{
	struct ledger_reader rd;
	char needle[128];

	*ret = 0;
	if (!ledger_kind_known(ledger->schema, kind))
		return error_set(err, EINVAL, "unknown kind");
	int r = ledger_reader_open(ledger, &rd, err);
	if (r == -ENOENT) {
		ledger_reader_close(&rd);
		return 0;
	}
	if (r < 0) {
		ledger_reader_close(&rd);
		return r;
	}
	/* The lines as the writer lays them out (entry.c): kind, then id. */
	int nn = snprintf(needle, sizeof(needle), "\"kind\":\"%s\",\"id\":\"",
			  ledger->schema->kinds[kind]);
	for (const char *p = rd.map.data, *stop = rd.map.data + rd.good_end; p < stop;) {
		const char *hit = memmem(p, (size_t)(stop - p), needle, (size_t)nn);
		if (!hit)
			break;
		uint64_t id = 0;
		const char *d = hit + nn;
		int digits = 0;
		for (; d < stop && *d >= '0' && *d <= '9' && digits < 19; d++, digits++)
			id = id * 10 + (uint64_t)(*d - '0');
		if (digits > 0 && d < stop && *d == '"' && id > *ret)
			*ret = id;
		p = d;
	}
	ledger_reader_close(&rd);
	return 0;
}

/* Whether a line can be passed over without reading it: it begins as the
 * writer lays a line out (entry.c: v, seq, then kind) and its kind, taken
 * as written (no escape in it), is neither kopen nor kclose. The parser
 * rejects duplicate keys, so no later "kind" in such a line can make it an
 * open or close entry; any other line is read in full. This spares the
 * search through the records' bytes, most of the log. */
static bool ledger_scan_passes(const char *line, const char *nl, const char *kopen, const char *kclose)
{
	static const char head[] = "{\"v\":1,\"seq\":";
	static const char key[] = ",\"kind\":\"";
	const char *p = line;

	if ((size_t)(nl - p) < sizeof(head) - 1 || memcmp(p, head, sizeof(head) - 1) != 0)
		return false;
	p += sizeof(head) - 1;
	const char *digits = p;
	while (p < nl && *p >= '0' && *p <= '9')
		p++;
	if (p == digits || (size_t)(nl - p) < sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1) != 0)
		return false;
	p += sizeof(key) - 1;
	const char *q = memchr(p, '"', (size_t)(nl - p));
	if (!q || memchr(p, '\\', (size_t)(q - p)))
		return false;
	size_t n = (size_t)(q - p);
	return !(strlen(kopen) == n && memcmp(p, kopen, n) == 0) &&
	       !(strlen(kclose) == n && memcmp(p, kclose, n) == 0);
}

/* Applies the open and close entries of the lines in [from, end) to the
 * open ids. */
static int ledger_scan_open(const struct ledger_schema *schema, const struct ledger_map *m,
			    uint64_t from, uint64_t end, const char *dir_prefix, uint64_t **ids,
			    size_t *n, size_t *cap, struct error *err)
{
	if (!ledger_kind_known(schema, schema->kind_open) ||
	    !ledger_kind_known(schema, schema->kind_close))
		return 0;
	/* Lines are found by what the two kinds' names have in common. */
	const char *kopen = schema->kinds[schema->kind_open];
	const char *kclose = schema->kinds[schema->kind_close];
	size_t common = 0;
	while (kopen[common] && kopen[common] == kclose[common])
		common++;
	char needle[96];
	int nn = snprintf(needle, sizeof(needle), "\"kind\":\"%.*s", (int)common, kopen);
	/* Line by line (memchr is much faster than memmem over the records'
	 * bytes); a line that may be an open or close entry is searched for
	 * the needle as before. */
	for (const char *start = m->data + from, *stop = m->data + end; start < stop;) {
		const char *nl = memchr(start, '\n', (size_t)(stop - start));
		if (!nl)
			break;
		const char *line = start;
		start = nl + 1;
		if (ledger_scan_passes(line, nl, kopen, kclose) ||
		    !memmem(line, (size_t)(nl - line), needle, (size_t)nn))
			continue;
		struct ledger_entry e;
		struct error ignored;
		uint64_t id;
		if (ledger_entry_read(schema, line, (size_t)(nl - line), &e, &ignored) < 0 ||
		    parse_u64(e.id, &id) < 0)
			continue;
		if (e.kind == schema->kind_close) {
			for (size_t i = 0; i < *n; i++)
				if ((*ids)[i] == id)
					(*ids)[i--] = (*ids)[--*n];
		} else if (e.kind == schema->kind_open &&
			   strncmp(e.path, dir_prefix, strlen(dir_prefix)) == 0) {
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : 16;
				uint64_t *more = reallocarray(*ids, *cap, sizeof(*more));
				if (!more)
					return error_set(err, ENOMEM, "out of memory");
				*ids = more;
			}
			(*ids)[(*n)++] = id;
		}
	}
	return 0;
}

int ledger_open_ids(struct ledger *ledger, const char *dir_prefix, uint64_t **ret_ids,
		    size_t *ret_n, struct error *err)
{
	*ret_ids = NULL;
	*ret_n = 0;
	struct ledger_reader rd;
	int r = ledger_reader_open(ledger, &rd, err);
	if (r < 0) {
		ledger_reader_close(&rd);
		return r;
	}
	cleanup_free uint64_t *ids = NULL;
	size_t n = 0, cap = 0;
	uint64_t from = 0;
	struct ledger_index x;
	if (ledger_index_open_usable(rd.dir_fd, &rd.map, rd.good_end, &x)) {
		/* Each open entry the index names is confirmed in the log. */
		for (uint32_t i = 0; !x.head->open_overflow && i < x.head->n_open; i++) {
			struct ledger_entry e;
			uint64_t id;
			if (ledger_line_at(rd.schema, &rd.map, x.head->open[i].off, x.head->covered,
					   &e, NULL) < 0 ||
			    e.kind != ledger->schema->kind_open || parse_u64(e.id, &id) < 0 ||
			    id != x.head->open[i].id ||
			    strncmp(e.path, dir_prefix, strlen(dir_prefix)) != 0)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				uint64_t *more = reallocarray(ids, cap, sizeof(*more));
				if (!more) {
					ledger_index_release(&x);
					ledger_reader_close(&rd);
					return error_set(err, ENOMEM, "out of memory");
				}
				ids = more;
			}
			ids[n++] = id;
		}
		if (!x.head->open_overflow)
			from = x.head->covered;
		ledger_index_release(&x);
	}
	r = ledger_scan_open(ledger->schema, &rd.map, from, rd.good_end, dir_prefix, &ids, &n, &cap,
			     err);
	ledger_reader_close(&rd);
	if (r < 0)
		return r;
	*ret_ids = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

int ledger_file_digest(struct ledger *ledger, const char *path, char hex[SHA256_HEX_SIZE])
{
	cleanup_close int fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
					      : fd_open_beneath(ledger->root_fd, path, O_RDONLY);
	if (fd < 0)
		return path[0] == '/' ? -errno : fd;
	return sha256_fd_hex(fd, hex);
}

bool ledger_torn_copy(const char *have, size_t have_n, const char *want, size_t want_n)
{
	bool holes = false;

	if (have_n > want_n)
		return false;
	for (size_t i = 0; i < have_n; i++) {
		if (have[i] == want[i])
			continue;
		if (have[i] != '\0')
			return false;
		holes = true;
	}
	return holes || have_n < want_n;
}

bool ledger_file_torn(struct ledger *ledger, const char *path, const char *want, size_t want_n)
{
	cleanup_close int fd = path[0] == '/' ? -1 : fd_open_beneath(ledger->root_fd, path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > want_n)
		return false;
	cleanup_free char *have = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (have && n < (size_t)st.st_size) {
		ssize_t k = pread(fd, have + n, (size_t)st.st_size - n, (off_t)n);
		if (k <= 0)
			return false;
		n += (size_t)k;
	}
	return have && ledger_torn_copy(have, n, want, want_n);
}

int ledger_backs_file(struct ledger *ledger, int kind, const char *id, const char *path,
		      struct error *err)
{
	char hex[SHA256_HEX_SIZE];
	int r = ledger_file_digest(ledger, path, hex);

	if (r < 0)
		return error_set_errno(err, -r, "read %s", path);
	return ledger_backs(ledger, kind, id, path, hex, err);
}

int ledger_require(struct ledger *ledger, int kind, const char *id, const char *path, int errnum,
		   const char *what, const char *why, const char *refusal, struct error *err)
{
	int r = ledger_backs_file(ledger, kind, id, path, err);
	if (r == 0)
		return 0;
	return error_set(err, errnum,
			 "the ledger does not back %s (%s): %s; `airlock ledger verify` says more",
			 what,
			 why		 ? why
			 : r == -EBADMSG ? "rewritten"
					 : "never committed",
			 refusal);
}

/* SPDX-License-Identifier: MIT */
/* The ledger's index (docs/ledger.md, "The index"): the reader's and the appender's side. */
#include "basic/clock.h"
#include "ledger/entryscan.h"
#include "ledger/internal.h"

/* ---- the index ------------------------------------------------------------------ */

/* ledger/index (docs/ledger.md, "The index"): derived from the log, owned
 * here, never trusted on its own. A head page, then an open-addressing hash
 * table from a path to the offset of the log line of its last entry:
 *	head	magic, the boot it was written in, how much of the log it
 *		covers (up to the end of the line at last_off, whose leaf hash
 *		it keeps), the table's size, the gate-open entries no gate-close
 *		has closed yet (offset and id), and a SHA-256 of the head up
 *		to the last of those
 *	slots	nslots x { 8 bytes of SHA-256(path), offset + 1 (0: empty) }
 * An appender updates it under the exclusive lock whenever it signs a
 * checkpoint, and never syncs it: a head written in another boot is not trusted (a power
 * loss may have kept some of its pages and not others), nor one whose
 * covered line is not in the log; either is rebuilt from the log by the next
 * append. A reader confirms every hit by parsing the line at the offset, and
 * reads the log after what the index covers itself. */

_Static_assert(sizeof(struct ledger_index_head) <= LEDGER_INDEX_HEAD, "index head too big");

void ledger_boot_id(char ret[40])
{
	clock_boot_id(ret);
}

uint64_t ledger_path_hash(const char *path)
{
	uint8_t d[SHA256_DIGEST_BYTES];
	uint64_t h;

	sha256_raw(path, strlen(path), d);
	memcpy(&h, d, sizeof(h));
	return h;
}

/* The SHA-256 of the head up to its last open failure listed (n_open of
 * them, at most LEDGER_INDEX_OPEN_MAX), with sum zeroed: the slots past
 * n_open are never read, and hashing all 480 of them cost every reader
 * 0.2 M instructions. n_open is taken from the bytes hashed. */
static void ledger_index_sum(const struct ledger_index_head *h, uint8_t ret[SHA256_DIGEST_BYTES])
{
	struct ledger_index_head copy;
	size_t fixed = offsetof(struct ledger_index_head, open);

	memcpy(&copy, h, fixed);
	size_t n = copy.n_open < LEDGER_INDEX_OPEN_MAX ? copy.n_open : LEDGER_INDEX_OPEN_MAX;
	memcpy(copy.open, h->open, n * sizeof(copy.open[0]));
	memset(copy.sum, 0, sizeof(copy.sum));
	sha256_raw(&copy, fixed + n * sizeof(copy.open[0]), ret);
}

/* The end of the log's complete lines. */
uint64_t ledger_good_end(const struct ledger_map *m)
{
	const char *nl = m->size ? memrchr(m->data, '\n', m->size) : NULL;

	return nl ? (uint64_t)(nl - m->data) + 1 : 0;
}

/* The entry whose line starts at off in m, off being a line start below
 * end: 0, or -EBADMSG when it is not one (or not a valid entry). The byte
 * after its line goes to *ret_next. */
int ledger_line_at(const struct ledger_schema *schema, const struct ledger_map *m, uint64_t off,
		   uint64_t end, struct ledger_entry *ret, uint64_t *ret_next)
{
	struct error ignored;

	if (off >= end || end > m->size || (off > 0 && m->data[off - 1] != '\n'))
		return -EBADMSG;
	const char *line = m->data + off;
	const char *nl = memchr(line, '\n', (size_t)(end - off));
	if (!nl)
		return -EBADMSG;
	if (ret_next)
		*ret_next = (uint64_t)(nl - m->data) + 1;
	return ledger_entry_read(schema, line, (size_t)(nl - line), ret, &ignored) < 0 ? -EBADMSG : 0;
}

/* Whether head h, of an index file of file_size bytes, may be used with the
 * log m: written in this boot, intact, and what it covers still in the log. */
static bool ledger_index_usable(const struct ledger_index_head *h, uint64_t file_size,
				const struct ledger_map *m, uint64_t good_end)
{
	uint8_t sum[SHA256_DIGEST_BYTES];
	char boot[40];

	if (memcmp(h->magic, LEDGER_INDEX_MAGIC, sizeof(LEDGER_INDEX_MAGIC)) != 0)
		return false;
	ledger_index_sum(h, sum);
	if (memcmp(sum, h->sum, sizeof(sum)) != 0)
		return false;
	ledger_boot_id(boot);
	if (!boot[0] || memcmp(boot, h->boot_id, sizeof(boot)) != 0)
		return false;
	if (h->nslots < LEDGER_INDEX_SLOTS_MIN || (h->nslots & (h->nslots - 1)) ||
	    h->nslots > (UINT64_MAX - LEDGER_INDEX_HEAD) / sizeof(struct ledger_index_slot) ||
	    file_size < LEDGER_INDEX_HEAD + h->nslots * sizeof(struct ledger_index_slot) ||
	    h->used >= h->nslots || h->n_open > LEDGER_INDEX_OPEN_MAX || h->covered > good_end)
		return false;
	if (h->covered == 0)
		return true;
	if (h->last_off >= h->covered || m->data[h->covered - 1] != '\n' ||
	    (h->last_off > 0 && m->data[h->last_off - 1] != '\n') ||
	    memchr(m->data + h->last_off, '\n', (size_t)(h->covered - 1 - h->last_off)))
		return false;
	/* The whole line is hashed (80 K instructions a reader under callgrind,
	 * which hides SHA-NI; natively SHA-NI hashes 3x as fast): a hash of its head
	 * (seq, kind, id, path, the record's digest) would be cheaper but
	 * weaker, since nothing on this path checks the record's bytes against
	 * that digest, and the log's identity (device, inode, size) says
	 * nothing of a log rewritten in place. */
	merkle_hash leaf;
	merkle_leaf_hash(m->data + h->last_off, (size_t)(h->covered - 1 - h->last_off), leaf);
	return memcmp(leaf, h->last_leaf, MERKLE_HASH_BYTES) == 0;
}

void ledger_index_release(struct ledger_index *x)
{
	if (x->data)
		munmap(x->data, x->size);
	if (x->fd >= 0)
		close(x->fd);
	*x = (struct ledger_index){ .fd = -1 };
}

static int ledger_index_map(int fd, bool writable, struct ledger_index *ret)
{
	struct stat st;

	*ret = (struct ledger_index){ .fd = fd };
	if (fstat(fd, &st) < 0 || st.st_size < LEDGER_INDEX_HEAD)
		return -EBADMSG;
	void *p = mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		       writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ret->data = p;
	ret->size = (size_t)st.st_size;
	ret->head = p;
	ret->slots = (struct ledger_index_slot *)(ret->data + LEDGER_INDEX_HEAD);
	return 0;
}

/* Opens the index for reading, when it may be used with the log m. */
bool ledger_index_open_usable(int dir_fd, const struct ledger_map *m, uint64_t good_end,
			      struct ledger_index *ret)
{
	*ret = (struct ledger_index){ .fd = -1 };
	int fd = openat(dir_fd, "index", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (ledger_index_map(fd, false, ret) < 0 ||
	    !ledger_index_usable(ret->head, ret->size, m, good_end)) {
		ledger_index_release(ret);
		return false;
	}
	return true;
}

/* The slot of hash h: its own, or the empty one where it goes. */
static struct ledger_index_slot *ledger_index_probe(const struct ledger_index *x, uint64_t h)
{
	uint64_t mask = x->head->nslots - 1;

	for (uint64_t i = h & mask, k = 0; k < x->head->nslots; i = (i + 1) & mask, k++)
		if (x->slots[i].off1 == 0 || x->slots[i].hash == h)
			return &x->slots[i];
	return NULL;
}

/* ---- the index: the appender's side ---- */

/* A new empty index in index.new with nslots slots, mapped. */
static int ledger_index_create(int dir_fd, uint64_t nslots, struct ledger_index *ret)
{
	*ret = (struct ledger_index){ .fd = -1 };
	(void)unlinkat(dir_fd, "index.new", 0);
	int fd = openat(dir_fd, "index.new", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(LEDGER_INDEX_HEAD + nslots * sizeof(struct ledger_index_slot))) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	int r = ledger_index_map(fd, true, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	memcpy(ret->head->magic, LEDGER_INDEX_MAGIC, sizeof(LEDGER_INDEX_MAGIC));
	ledger_boot_id(ret->head->boot_id);
	ret->head->nslots = nslots;
	ret->is_new = true;
	return 0;
}

/* Doubles the table into index.new; *x becomes the new one. */
static int ledger_index_grow(int dir_fd, struct ledger_index *x)
{
	struct ledger_index bigger;
	int r = ledger_index_create(dir_fd, 2 * x->head->nslots, &bigger);
	if (r < 0)
		return r;
	uint64_t nslots = bigger.head->nslots;
	memcpy(bigger.head, x->head, sizeof(*x->head));
	bigger.head->nslots = nslots;
	for (uint64_t i = 0; i < x->head->nslots; i++)
		if (x->slots[i].off1)
			*ledger_index_probe(&bigger, x->slots[i].hash) = x->slots[i];
	ledger_index_release(x);
	*x = bigger;
	return 0;
}

/* Adds the entries of the lines of m in [x->head->covered, good_end). */
static int ledger_index_add_lines(const struct ledger_schema *schema, int dir_fd,
				  struct ledger_index *x, const struct ledger_map *m, uint64_t good_end)
{
	struct ledger_index_head *h;

	for (uint64_t off = x->head->covered, next; off < good_end; off = next) {
		struct ledger_entry e;
		const char *nl = memchr(m->data + off, '\n', (size_t)(good_end - off));
		next = (uint64_t)(nl - m->data) + 1;
		if (2 * (x->head->used + 1) > x->head->nslots) {
			int r = ledger_index_grow(dir_fd, x);
			if (r < 0)
				return r;
		}
		h = x->head;
		/* A line that is not an entry backs nothing; verify reports it. */
		if (ledger_line_at(schema, m, off, good_end, &e, NULL) == 0) {
			struct ledger_index_slot *s = ledger_index_probe(x, ledger_path_hash(e.path));
			if (!s)
				return -EBADMSG; /* full: a head that lies about its slots */
			if (s->off1 == 0)
				h->used++;
			*s = (struct ledger_index_slot){ ledger_path_hash(e.path), off + 1 };
			uint64_t id;
			int kopen = schema->kind_open, kclose = schema->kind_close;
			if ((e.kind == kopen || e.kind == kclose) && parse_u64(e.id, &id) == 0) {
				for (uint32_t i = 0; e.kind == kclose && i < h->n_open; i++)
					if (h->open[i].id == id)
						h->open[i--] = h->open[--h->n_open];
				if (e.kind == kopen && h->n_open < LEDGER_INDEX_OPEN_MAX)
					h->open[h->n_open++] = (struct ledger_index_open){ off, id };
				else if (e.kind == kopen)
					h->open_overflow = 1;
			}
		}
		h->last_off = off;
		merkle_leaf_hash(m->data + off, (size_t)(next - 1 - off), h->last_leaf);
		h->covered = next;
	}
	return 0;
}

/* Under the exclusive lock, when a checkpoint is signed: brings the index
 * up to the log's end, rebuilding it when it is missing, from another boot, damaged
 * or not about this log. Best effort: the index is derived, and a reader
 * that cannot use it scans the log. */
void ledger_index_update(struct ledger_writer *w)
{
	cleanup_with(ledger_map_release) struct ledger_map m = { 0 };
	struct error ignored;
	struct ledger_index x = { .fd = -1 };

	if (ledger_map_fd(w->log_fd, &m, &ignored) < 0)
		return;
	uint64_t good_end = ledger_good_end(&m);
	int fd = openat(w->dir_fd, "index", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && (ledger_index_map(fd, true, &x) < 0 ||
			!ledger_index_usable(x.head, x.size, &m, good_end))) {
		ledger_index_release(&x);
		fd = -1;
	}
	if (fd < 0 && ledger_index_create(w->dir_fd, LEDGER_INDEX_SLOTS_MIN, &x) < 0)
		return;
	if (ledger_index_add_lines(w->ledger->schema, w->dir_fd, &x, &m, good_end) == 0) {
		/* The head last, after the slots it vouches for. */
		ledger_index_sum(x.head, x.head->sum);
		if (x.is_new)
			(void)renameat(w->dir_fd, "index.new", w->dir_fd, "index");
	} else if (!x.is_new) {
		/* Not to be used, and rebuilt by the next update. */
		memset(x.head->magic, 0, sizeof(x.head->magic));
	}
	ledger_index_release(&x);
}

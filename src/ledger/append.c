/* SPDX-License-Identifier: MIT */
/* The ledger's appending: the tail, torn tails, poisoning, the writer. */
#include "ledger/internal.h"

/* ---- appending ------------------------------------------------------------------ */

/* Reads the last want bytes (or the whole file) at the log's end. */
static int ledger_tail_window(int fd, uint64_t size, size_t want, char **ret, size_t *ret_n,
			      struct error *err)
{
	size_t window = size < want ? (size_t)size : want;
	cleanup_free char *buf = malloc(window);
	if (!buf)
		return error_set(err, ENOMEM, "out of memory");
	off_t base = (off_t)(size - window);
	for (size_t got = 0; got < window;) {
		ssize_t k = pread(fd, buf + got, window - got, base + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return error_set_errno(err, k < 0 ? errno : EIO, "read the ledger");
		got += (size_t)k;
	}
	*ret = TAKE_PTR(buf);
	*ret_n = window;
	return 0;
}

/* Finds the last complete line of the log and parses it. */
int ledger_tail_read(const struct ledger_schema *schema, int fd, struct ledger_tail *ret,
		     struct error *err)
{
	struct stat st;

	*ret = (struct ledger_tail){ 0 };
	if (fstat(fd, &st) < 0)
		return error_set_errno(err, errno, "stat the ledger");
	ret->size = (uint64_t)st.st_size;
	if (ret->size == 0)
		return 0;
	/* A small read finds the last line almost always; the full window
	 * (two of the largest entries) only after a long entry or a torn tail. */
	static const size_t windows[] = { 8192, LEDGER_TAIL_WINDOW };
	for (size_t w = 0; w < 2; w++) {
		cleanup_free char *buf = NULL;
		size_t window = 0;
		int r = ledger_tail_window(fd, ret->size, windows[w], &buf, &window, err);
		if (r < 0)
			return r;
		bool whole = (uint64_t)window == ret->size;
		uint64_t base = ret->size - window;
		char *nl = memrchr(buf, '\n', window);
		if (!nl) {
			if (!whole && w == 0)
				continue;
			if (!whole)
				return error_set(err, EBADMSG,
						 "the ledger's last %zu bytes hold no line end",
						 window);
			ret->good_end = 0; /* all of it is a torn first line */
			return 0;
		}
		char *prev = memrchr(buf, '\n', (size_t)(nl - buf));
		if (!prev && !whole && w == 0)
			continue;
		if (!prev && !whole)
			return error_set(err, EBADMSG, "the ledger's last line is too long");
		ret->good_end = base + (uint64_t)(nl - buf) + 1;
		char *start = prev ? prev + 1 : buf;
		r = ledger_entry_parse(schema, start, (size_t)(nl - start), &ret->last, err);
		if (r < 0)
			return error_prefix(err, "the ledger's last entry");
		ret->has_last = true;
		return 0;
	}
	return error_set(err, EBADMSG, "the ledger's end is unreadable");
}

static int ledger_poison(struct ledger_writer *w, int e)
{
	char text[128];
	int n = snprintf(text, sizeof(text), "fdatasync of the log failed: %s\n", strerror(e));
	int fd = openat(w->dir_fd, "poisoned", O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd >= 0) {
		(void)fd_write_all(fd, text, (size_t)n);
		close(fd);
	}
	return -EIO;
}

static int ledger_write_line(struct ledger_writer *w, uint64_t good_end, uint64_t seq, int kind,
			     const char *id, const char *path, const char *sha, struct error *err)
{
	cleanup_free char *line = NULL;
	size_t n;
	int r = ledger_entry_format(w->ledger->schema, seq, kind, id, path, sha, &line, &n, err);
	if (r < 0)
		return r;
	r = fd_write_all(w->log_fd, line, n);
	if (r < 0) {
		/* A short write or ENOSPC: take the part back. */
		int e = -r;
		if (ftruncate(w->log_fd, (off_t)good_end) < 0 || fdatasync(w->log_fd) < 0)
			(void)ledger_poison(w, errno);
		return error_set_errno(err, e, "append to the ledger");
	}
	/* Never retried: after a failed fsync the kernel may have dropped the
	 * pages and a second fsync would report success (fsyncgate). Skipped
	 * only when the policy turned receipts.fsync off: records are then not
	 * synced either, and a crash is a torn or lost tail. */
	if (w->ledger->durable && fdatasync(w->log_fd) < 0) {
		int e = errno;
		ledger_poison(w, e);
		return error_set_errno(err, EIO,
				       "the ledger could not be synced (%s); it is poisoned until `airlock ledger recover`",
				       strerror(e));
	}
	return 0;
}

/* A torn tail (bytes after the last line end, from a crash mid-append) is
 * moved to torn/<offset>-<sha256>.bin, cut off, and recorded. */
int ledger_quarantine_tail(struct ledger_writer *w, const struct ledger_tail *t, struct error *err)
{
	size_t n = (size_t)(t->size - t->good_end);
	cleanup_free char *bytes = malloc(n ? n : 1);
	if (!bytes)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(w->log_fd, bytes + got, n - got, (off_t)(t->good_end + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return error_set_errno(err, k < 0 ? errno : EIO, "read the torn tail");
		got += (size_t)k;
	}
	char hex[SHA256_HEX_SIZE], name[128], path[192], id[32];
	sha256_hex(bytes, n, hex);
	snprintf(name, sizeof(name), "%llu-%.16s.bin", (unsigned long long)t->good_end, hex);
	snprintf(path, sizeof(path), LEDGER_DIR "/torn/%s", name);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)t->good_end);
	if (mkdirat(w->dir_fd, "torn", 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the ledger's torn/");
	cleanup_close int torn_fd = openat(w->dir_fd, "torn", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (torn_fd < 0)
		return error_set_errno(err, errno, "open the ledger's torn/");
	int r = file_write_atomic(torn_fd, name, bytes, n, 0600, true, err);
	if (r < 0 && r != -EEXIST)
		return error_prefix(err, "quarantine the ledger's torn tail");
	error_clear(err);
	if (ftruncate(w->log_fd, (off_t)t->good_end) < 0)
		return error_set_errno(err, errno, "cut the ledger's torn tail");
	if (fdatasync(w->log_fd) < 0)
		return ledger_poison(w, errno), error_set(err, EIO, "the ledger could not be synced");
	uint64_t seq = t->has_last ? t->last.seq + 1 : 0;
	return ledger_write_line(w, t->good_end, seq, w->ledger->schema->kind_recovered, id, path,
				 hex, err);
}

/* How many entries the last checkpoint signed (0 without one). */
static uint64_t ledger_signed_size(int dir_fd)
{
	struct ledger_checkpoint cp;
	struct error ignored;

	if (ledger_checkpoint_read(dir_fd, NULL, &cp, &ignored) < 0)
		return 0;
	ledger_checkpoint_release(&cp);
	return cp.size;
}

int ledger_append_locked(struct ledger_writer *w, int kind, const char *id, const char *path,
			 const char *sha, uint64_t *ret_seq, struct error *err)
{
	struct ledger_tail t;
	int r = ledger_tail_read(w->ledger->schema, w->log_fd, &t, err);
	if (r < 0)
		return r;
	if (t.good_end != t.size) {
		uint64_t complete = t.has_last ? t.last.seq + 1 : 0;
		if (complete < ledger_signed_size(w->dir_fd))
			return error_set(err, EBADMSG,
					 "the ledger ends inside its signed prefix: tampering (see `airlock ledger verify`)");
		r = ledger_quarantine_tail(w, &t, err);
		if (r < 0)
			return r;
		r = ledger_tail_read(w->ledger->schema, w->log_fd, &t, err);
		if (r < 0)
			return r;
	}
	uint64_t seq = t.has_last ? t.last.seq + 1 : 0;
	r = ledger_write_line(w, t.good_end, seq, kind, id, path, sha, err);
	if (r < 0)
		return r;
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

int ledger_writer_open(struct ledger *ledger, struct ledger_writer *w, int *ret_lock, struct error *err)
{
	*w = (struct ledger_writer){ .ledger = ledger, .dir_fd = -1, .log_fd = -1 };
	int r = ledger_dir(ledger, true, err);
	if (r < 0)
		return r;
	w->dir_fd = r;
	r = ledger_lock(w->dir_fd, LOCK_EX, err);
	if (r < 0)
		return r;
	*ret_lock = r;
	w->log_fd =
		openat(w->dir_fd, "log", O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (w->log_fd < 0)
		return error_set_errno(err, errno, "open the ledger");
	return 0;
}

void ledger_writer_close(struct ledger_writer *w)
{
	if (w->log_fd >= 0)
		close(w->log_fd);
	if (w->dir_fd >= 0)
		close(w->dir_fd);
}

int ledger_append(struct ledger *ledger, int kind, const char *id, const char *path,
		  const char sha256[SHA256_HEX_SIZE], bool checkpoint, uint64_t *ret_seq,
		  struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;
	uint64_t seq = 0;
	bool signed_one = false;

	int r = ledger_writer_open(ledger, &w, &lock_fd, err);
	if (r == 0 && faccessat(w.dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = error_set(err, EIO,
			      "the ledger is poisoned after an fsync error; run `airlock ledger recover`");
	if (r == 0)
		r = ledger_append_locked(&w, kind, id, path, sha256, &seq, err);
	/* The index follows the checkpoints: an append that signs none leaves
	 * it alone (its pages dirtied on every append made each fdatasync of
	 * the log slower), and a reader reads the few entries since. */
	if (r == 0 && (checkpoint || seq == 0 || (seq + 1) % LEDGER_CHECKPOINT_EVERY == 0)) {
		r = ledger_checkpoint_locked(&w, err);
		signed_one = r == 0;
		ledger_index_update(&w);
	}
	ledger_writer_close(&w);
	if (r < 0)
		return error_prefix(err, "ledger");
	if (ret_seq)
		*ret_seq = seq;
	if (signed_one) {
		close(TAKE_FD(lock_fd)); /* the remotes are called without the lock */
		ledger_push_quietly(ledger);
	}
	return 0;
}

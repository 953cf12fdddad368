/* SPDX-License-Identifier: MIT */
/* The ledger's appending: the tail, torn tails, poisoning, the writer. */
#include "ledger/entryscan.h"
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
		/* Its seq is all the appender needs: the canonical reading
		 * (ledger/entryscan.h), which the strict parser decides for a
		 * line it does not recognise, with the same verdict. */
		r = ledger_entry_read(schema, start, (size_t)(nl - start), &ret->last, err);
		if (r < 0)
			return error_prefix(err, "the ledger's last entry");
		ret->has_last = true;
		return 0;
	}
	return error_set(err, EBADMSG, "the ledger's end is unreadable");
}

bool ledger_poisoned(struct ledger *ledger)
{
	return faccessat(ledger->root_fd, LEDGER_DIR "/poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
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

/* Writes one line at the log's end, good_end (one write(); a short write or
 * ENOSPC takes the part back). Not synced: ledger_sync() makes it durable. */
static int ledger_write_line(struct ledger_writer *w, uint64_t good_end, uint64_t seq, int kind,
			     const char *id, const char *path, const char *sha, const char *record,
			     size_t record_n, uint64_t *ret_end, struct error *err)
{
	cleanup_free char *line = NULL;
	size_t n;
	int r = ledger_entry_format(w->ledger->schema, seq, kind, id, path, sha, record, record_n,
				    &line, &n, err);
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
	if (ret_end)
		*ret_end = good_end + n;
	return 0;
}

/* ---- group commit ---------------------------------------------------------------- */

/* ledger/sync (docs/ledger.md, "Group commit"): flock()ed by the process
 * that syncs the log, and holding how far the log is known durable: every
 * byte below `synced` was written before an fdatasync of the log that
 * succeeded, in this boot, of this log file. Not synced itself, never
 * trusted from another boot or for another file: at worst an append syncs
 * when it need not have. */
#define LEDGER_SYNC_MAGIC "airlock-ledger-sync/1"

struct ledger_sync_mark {
	char magic[24];
	char boot_id[40];
	uint64_t dev, ino;
	uint64_t synced;
};

/* The end of the last complete line of the log's first size bytes, or 0. */
static uint64_t ledger_last_line_end(int log_fd, uint64_t size)
{
	char buf[4096];
	size_t want = size < sizeof(buf) ? (size_t)size : sizeof(buf);
	if (want == 0 || pread(log_fd, buf, want, (off_t)(size - want)) != (ssize_t)want)
		return 0;
	char *nl = memrchr(buf, '\n', want);
	return nl ? size - want + (uint64_t)(nl - buf) + 1 : 0;
}

int ledger_sync(struct ledger_writer *w, int lock_fd, bool locked, uint64_t end, struct error *err)
{
	struct ledger_sync_mark mark, now = { .magic = LEDGER_SYNC_MAGIC };
	struct stat st;

	if (!w->ledger->durable)
		return 0;
	cleanup_close int fd =
		openat(w->dir_fd, "sync", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger's sync lock");
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return error_set_errno(err, errno, "lock the ledger's sync lock");
	/* An earlier sync failed (its holder poisoned the ledger before it let
	 * go of this lock): what this append wrote after it may be lost too. */
	if (faccessat(w->dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return error_set(err, EIO,
				 "the ledger is poisoned after an fsync error; run `airlock ledger recover`");
	if (fstat(w->log_fd, &st) < 0)
		return error_set_errno(err, errno, "stat the ledger");
	ledger_boot_id(now.boot_id);
	now.dev = (uint64_t)st.st_dev;
	now.ino = (uint64_t)st.st_ino;
	/* Under the exclusive lock, every complete line is to be durable (a
	 * checkpoint is about to sign them). */
	if (locked) {
		uint64_t last = ledger_last_line_end(w->log_fd, (uint64_t)st.st_size);
		if (last > end)
			end = last;
	}
	bool valid = now.boot_id[0] && pread(fd, &mark, sizeof(mark), 0) == (ssize_t)sizeof(mark) &&
		     memcmp(&mark, &now, offsetof(struct ledger_sync_mark, synced)) == 0;
	if (valid && mark.synced >= end)
		return 0; /* a sync that started after these lines were written covered them */
	/* What this fdatasync covers: every line complete before it starts.
	 * Lines are written only under the exclusive lock, so while it (or a
	 * shared lock) is held the log's complete lines are all written; else
	 * only this append's own line is known complete. Never past the last
	 * line end: a torn tail is cut off, and what is written there later
	 * is not covered by this sync. */
	uint64_t cover = end;
	bool stable = locked || flock(lock_fd, LOCK_SH | LOCK_NB) == 0;
	/* A log that ends where this append's line ends (no one wrote since)
	 * needs no look for a later line end. */
	if (stable && fstat(w->log_fd, &st) == 0 && (uint64_t)st.st_size > cover) {
		uint64_t last = ledger_last_line_end(w->log_fd, (uint64_t)st.st_size);
		if (last > cover)
			cover = last;
	}
	if (stable && !locked)
		(void)flock(lock_fd, LOCK_UN);
	/* Never retried: after a failed fsync the kernel may have dropped the
	 * pages and a second fsync would report success (fsyncgate). */
	if (fdatasync(w->log_fd) < 0) {
		int e = errno;
		ledger_poison(w, e);
		return error_set_errno(err, EIO,
				       "the ledger could not be synced (%s); it is poisoned until `airlock ledger recover`",
				       strerror(e));
	}
	now.synced = cover;
	if (pwrite(fd, &now, sizeof(now), 0) != (ssize_t)sizeof(now))
		ignore_result(ftruncate(fd, 0)); /* an append syncs when it need not: harmless */
	return 0; /* closing fd releases the sync lock */
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
				 hex, NULL, 0, NULL, err);
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
			 const char *sha, const char *record, size_t record_n, uint64_t *ret_seq,
			 uint64_t *ret_end, struct error *err)
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
	r = ledger_write_line(w, t.good_end, seq, kind, id, path, sha, record, record_n, ret_end, err);
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

int ledger_append_record(struct ledger *ledger, int kind, const char *id, const char *path,
			 const char sha256[SHA256_HEX_SIZE], const void *record, size_t record_n,
			 bool checkpoint, uint64_t *ret_seq, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;
	uint64_t seq = 0, end = 0;
	bool signed_one = false;

	if (record && !ledger_record_embeddable(record, record_n))
		return error_set(err, E2BIG, "ledger: the record cannot be carried by its entry");
	int r = ledger_writer_open(ledger, &w, &lock_fd, err);
	if (r == 0 && faccessat(w.dir_fd, "poisoned", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = error_set(err, EIO,
			      "the ledger is poisoned after an fsync error; run `airlock ledger recover`");
	if (r == 0)
		r = ledger_append_locked(&w, kind, id, path, sha256, record, record_n, &seq, &end, err);
	/* The index follows the checkpoints: an append that signs none leaves
	 * it alone (its pages dirtied on every append made each fdatasync of
	 * the log slower), and a reader reads the few entries since. A
	 * checkpoint syncs the log first, under the lock (it never signs a
	 * line not yet durable). */
	bool signs = checkpoint || seq == 0 || (seq + 1) % LEDGER_CHECKPOINT_EVERY == 0;
	if (r == 0 && signs) {
		r = ledger_checkpoint_locked(&w, err);
		signed_one = r == 0;
		ledger_index_update(&w);
	}
	/* Group commit: the line is written; the lock goes to the next
	 * appender while this one syncs, and one fdatasync covers every line
	 * written before it (docs/ledger.md, "Group commit"). */
	if (r == 0 && !signs) {
		(void)flock(lock_fd, LOCK_UN);
		if (!ledger->sync_deferred)
			r = ledger_sync(&w, lock_fd, false, end, err);
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

int ledger_sync_written(struct ledger *ledger, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;

	int r = ledger_writer_open(ledger, &w, &lock_fd, err);
	if (r == 0)
		r = ledger_sync(&w, lock_fd, true, 0, err);
	ledger_writer_close(&w);
	return r < 0 ? error_prefix(err, "ledger") : 0;
}

int ledger_append(struct ledger *ledger, int kind, const char *id, const char *path,
		  const char sha256[SHA256_HEX_SIZE], bool checkpoint, uint64_t *ret_seq,
		  struct error *err)
{
	return ledger_append_record(ledger, kind, id, path, sha256, NULL, 0, checkpoint, ret_seq, err);
}

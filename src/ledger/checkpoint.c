/* SPDX-License-Identifier: MIT */
/* The ledger's checkpoints: signing, the range cache, the kept history, the public key. */
#include "ledger/internal.h"

/* ---- checkpoints ------------------------------------------------------------- */

/* The leaf hashes of the complete lines of map[from..), appended to range;
 * *ret_end is the byte after the last complete line. */
static void ledger_hash_lines(const struct ledger_map *m, size_t from, struct merkle_range *range,
			      uint64_t stop_at, merkle_hash ret_root_at, size_t *ret_end)
{
	size_t pos = from;

	while (pos < m->size) {
		const char *nl = memchr(m->data + pos, '\n', m->size - pos);
		if (!nl)
			break;
		merkle_hash leaf;
		merkle_leaf_hash(m->data + pos, (size_t)(nl - (m->data + pos)), leaf);
		merkle_range_append(range, leaf);
		if (ret_root_at && range->size == stop_at)
			merkle_range_root(range, ret_root_at);
		pos = (size_t)(nl - m->data) + 1;
	}
	*ret_end = pos;
}

/* ledger/range caches the compact range at the last checkpoint, so the next
 * one hashes only what was appended since. Untrusted: it is used only when
 * its root is the signed root at its size. */
struct ledger_range_cache {
	char magic[24];
	uint64_t offset;
	struct merkle_range range;
};

/* Every checkpoint signed is also kept as checkpoints/<size>, so proofs
 * and checks go between any two. One already kept at that size stays: it
 * signs the same root (the log extends it, or signing was refused). The
 * kept one is a hard link of the checkpoint just installed (the caller
 * holds the writer's lock, so "checkpoint" is that note): its bytes are
 * already synced, and only checkpoints/ needs a sync. The next checkpoint
 * is renamed over "checkpoint" and leaves the kept one as it is. Where the
 * file system has no hard links, a copy is written and synced. */
static int ledger_checkpoint_keep(int dir_fd, uint64_t size, const char *note, struct error *err)
{
	char name[32], path[48];

	if (mkdirat(dir_fd, "checkpoints", 0755) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the ledger's checkpoints/");
	cleanup_close int fd =
		openat(dir_fd, "checkpoints", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return error_set_errno(err, errno, "open the ledger's checkpoints/");
	snprintf(name, sizeof(name), "%llu", (unsigned long long)size);
	snprintf(path, sizeof(path), "checkpoints/%s", name);
	if (linkat(dir_fd, "checkpoint", dir_fd, path, 0) == 0) {
		if (fsync(fd) < 0)
			return error_set_errno(err, errno, "keep the checkpoint: sync checkpoints/");
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	int r = file_write_atomic(fd, name, note, strlen(note), 0644, true, err);
	if (r == -EEXIST) {
		error_clear(err);
		return 0;
	}
	return r < 0 ? error_prefix(err, "keep the checkpoint") : 0;
}

/* Replaces the checkpoint: a temporary file, fsync, rename over the old
 * one, fsync of the directory. The rename replaces (we hold the writer's
 * lock), so no intermediate name and its own directory sync are needed: a
 * crash leaves the old checkpoint or the new one, and at most a temporary
 * file named for the process. */
static int ledger_checkpoint_install(int dir_fd, const char *note, struct error *err)
{
	char tmp[64];

	snprintf(tmp, sizeof(tmp), ".checkpoint.%d.tmp", (int)getpid());
	(void)unlinkat(dir_fd, tmp, 0);
	cleanup_close int fd =
		openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return error_set_errno(err, errno, "write the checkpoint");
	int r = fd_write_all(fd, note, strlen(note));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, "checkpoint") < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dir_fd, tmp, 0);
		return error_set_errno(err, -r, "install the checkpoint");
	}
	if (fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "sync the ledger directory");
	return 0;
}

int ledger_checkpoint_locked(struct ledger_writer *w, struct error *err)
{
	struct ledger_key key;
	/* Never a line not yet durable: appenders sync after they let go of
	 * the lock ("Group commit"); the log's complete lines are synced (or
	 * known synced) first, and an earlier sync's failure refuses. */
	int r = ledger_sync(w, -1, true, 0, err);
	if (r < 0)
		return r;
	r = ledger_key_load(w->dir_fd, true, &key, err);
	if (r < 0)
		return r;
	struct ledger_checkpoint old = { 0 };
	bool have_old = ledger_checkpoint_read(w->dir_fd, &key.vkey, &old, err) == 0;
	if (!have_old && faccessat(w->dir_fd, "checkpoint", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		explicit_bzero(&key, sizeof(key));
		return error_prefix(err, "refusing to sign");
	}
	error_clear(err);
	ledger_checkpoint_release(&old);

	cleanup_with(ledger_map_release) struct ledger_map m = { 0 };
	r = ledger_map_fd(w->log_fd, &m, err);
	if (r < 0)
		return r;
	struct ledger_range_cache cache;
	merkle_hash root, old_root;
	size_t end = 0;
	cleanup_close int cfd = openat(w->dir_fd, "range", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool cached = false;
	if (have_old && cfd >= 0 && read(cfd, &cache, sizeof(cache)) == (ssize_t)sizeof(cache) &&
	    memcmp(cache.magic, LEDGER_RANGE_MAGIC, sizeof(LEDGER_RANGE_MAGIC)) == 0 &&
	    cache.range.n <= MERKLE_MAX_PROOF && cache.range.size == old.size &&
	    cache.offset <= m.size) {
		merkle_range_root(&cache.range, root);
		cached = memcmp(root, old.root, MERKLE_HASH_BYTES) == 0;
	}
	if (!cached) {
		memset(&cache, 0, sizeof(cache));
		merkle_range_init(&cache.range);
		cache.offset = 0;
		if (have_old && old.size == 0)
			merkle_empty_root(old_root);
	}
	ledger_hash_lines(&m, (size_t)cache.offset, &cache.range, have_old && !cached ? old.size : 0,
			  have_old && !cached ? old_root : NULL, &end);
	if (have_old && cache.range.size < old.size) {
		explicit_bzero(&key, sizeof(key));
		return error_set(err, EBADMSG,
				 "the log holds %llu entries, fewer than the %llu its last checkpoint signed: tampering; refusing to sign",
				 (unsigned long long)cache.range.size, (unsigned long long)old.size);
	}
	if (have_old && !cached && memcmp(old_root, old.root, MERKLE_HASH_BYTES) != 0) {
		explicit_bzero(&key, sizeof(key));
		return error_set(err, EBADMSG,
				 "the log's first %llu entries are not those its last checkpoint signed: tampering; refusing to sign",
				 (unsigned long long)old.size);
	}
	merkle_range_root(&cache.range, root);
	cleanup_free char *note = ledger_note_sign(&key, cache.range.size, root);
	explicit_bzero(&key, sizeof(key));
	if (!note)
		return error_set(err, EINVAL, "cannot sign the checkpoint");
	r = ledger_checkpoint_install(w->dir_fd, note, err);
	if (r == 0)
		r = ledger_checkpoint_keep(w->dir_fd, cache.range.size, note, err);
	if (r < 0)
		return r;
	/* The cache needs no fsync: it is checked before use. */
	memcpy(cache.magic, LEDGER_RANGE_MAGIC, sizeof(LEDGER_RANGE_MAGIC));
	cache.offset = end;
	(void)unlinkat(w->dir_fd, "range.new", 0);
	struct error ignored;
	if (file_write_atomic(w->dir_fd, "range.new", &cache, sizeof(cache), 0600, false, &ignored) == 0)
		(void)renameat(w->dir_fd, "range.new", w->dir_fd, "range");
	return 0;
}

int ledger_checkpoint(struct ledger *ledger, struct error *err)
{
	struct ledger_writer w;
	cleanup_close int lock_fd = -1;

	int r = ledger_writer_open(ledger, &w, &lock_fd, err);
	if (r == 0)
		r = ledger_checkpoint_locked(&w, err);
	if (r == 0)
		ledger_index_update(&w);
	ledger_writer_close(&w);
	if (r < 0)
		return error_prefix(err, "ledger checkpoint");
	close(TAKE_FD(lock_fd)); /* the remotes are called without the lock */
	ledger_push_quietly(ledger);
	return 0;
}

int ledger_checkpoint_text(struct ledger *ledger, char **ret_text, size_t *ret_n, struct error *err)
{
	cleanup_close int dir_fd = ledger_dir(ledger, false, err);
	if (dir_fd < 0)
		return dir_fd;
	return file_read_capped(dir_fd, "checkpoint", 1 << 16, ret_text, ret_n, err);
}

int ledger_public_key(struct ledger *ledger, bool create, char **ret_vkey, struct error *err)
{
	cleanup_close int dir_fd = ledger_dir(ledger, create, err);
	if (dir_fd == -ENOENT)
		return error_set(err, ENOENT, "the ledger has no key yet");
	if (dir_fd < 0)
		return dir_fd;
	cleanup_close int lock_fd = create ? ledger_lock(dir_fd, LOCK_EX, err) : -1;
	if (create && lock_fd < 0)
		return lock_fd;
	struct ledger_key key;
	int r = ledger_key_load(dir_fd, create, &key, err);
	explicit_bzero(key.seed, sizeof(key.seed));
	if (r < 0)
		return r;
	*ret_vkey = ledger_vkey_format(&key.vkey);
	return *ret_vkey ? 0 : error_set(err, ENOMEM, "out of memory");
}

/* SPDX-License-Identifier: MIT */
#include "core/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "basic/clock.h"
#include "basic/ed25519.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/sha256.h"
#include "core/store/statepath.h"
#include <limits.h>

struct store {
	char *path;
	int dir_fd;
	int receipts_fd;
	bool durable; /* fsync receipts and the directory */
	struct ledger *ledger; /* over dir_fd, ledger_state_schema */
	bool checkpoint_deferred; /* store_checkpoint_defer() until the flush */
	bool checkpoint_owed; /* a deferred commit asked for one */
	bool checkpoint_preloading; /* ed25519_preload() started by a defer */
	bool sync_deferred; /* store_sync_defer() until store_sync_resume() */
	bool sync_owed; /* an entry appended while deferred awaits its sync */
	/* store_prepare_receipt(): the made-ahead inode of receipt pre_id's
	 * cache, pre_dir_fd/pre_name (receipts/.pre) open as pre_fd; -1 when
	 * none. */
	int pre_dir_fd, pre_fd;
	uint64_t pre_id;
	char pre_name[64];
	/* The caches of carried records whose entries were appended while
	 * deferred (a change set's): written once a sync covers the entry, so
	 * that no cache outlives its entry; dropped when none does (a reader
	 * then reads the log, store_read_record()). */
	struct store_pending_cache *pending;
	size_t n_pending;
};

struct store_pending_cache {
	int dir_fd;
	char *name, *data;
	size_t n;
};

/* The largest record store_settle() reads: a permit record's cap. */
#define STORE_SETTLE_MAX (16 << 20)

#define SEQ_WIDTH	  20
#define RECEIPT_MAX_BYTES (16 << 20)
#define INDEX_MAX_BYTES	  (1ULL << 30)

char *store_default_path(void)
{
	const char *dir = getenv("AIRLOCK_STATE_DIR");
	char *path = NULL;

	if (dir && *dir)
		return strdup(dir);
	dir = getenv("XDG_STATE_HOME");
	if (dir && dir[0] == '/')
		return asprintf(&path, "%s/airlock", dir) < 0 ? NULL : path;
	dir = getenv("HOME");
	if (dir && dir[0] == '/')
		return asprintf(&path, "%s/.local/state/airlock", dir) < 0 ? NULL : path;
	return NULL;
}

/* Lets go of a made-ahead receipt cache that no commit took. */
static void store_prepared_drop(struct store *store)
{
	if (store->pre_fd >= 0) {
		close(TAKE_FD(store->pre_fd));
		(void)unlinkat(store->pre_dir_fd, store->pre_name, 0);
	}
	if (store->pre_dir_fd >= 0)
		close(TAKE_FD(store->pre_dir_fd));
}

static void store_pending_drop(struct store *store)
{
	for (size_t i = 0; i < store->n_pending; i++) {
		close(store->pending[i].dir_fd);
		free(store->pending[i].name);
		free(store->pending[i].data);
	}
	free(store->pending);
	store->pending = NULL;
	store->n_pending = 0;
}

static int store_write_cache(int dir_fd, const char *name, const void *data, size_t n,
			     struct error *err);

/* Once a sync has covered their entries: best effort, as any cache. */
static void store_pending_write(struct store *store)
{
	for (size_t i = 0; i < store->n_pending; i++) {
		struct store_pending_cache *c = &store->pending[i];
		struct error ignored = { 0 };
		(void)store_write_cache(c->dir_fd, c->name, c->data, c->n, &ignored);
	}
	store_pending_drop(store);
}

/* Keeps a cache for store_pending_write(); none kept (out of memory) is
 * a cache lost, which the log makes up for. */
static void store_pending_add(struct store *store, int dir_fd, const char *name, const void *data,
			      size_t n)
{
	struct store_pending_cache c = { .dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3),
					 .name = strdup(name),
					 .data = malloc(n ? n : 1),
					 .n = n };
	struct store_pending_cache *grown =
		c.dir_fd < 0 || !c.name || !c.data
			? NULL
			: realloc(store->pending, (store->n_pending + 1) * sizeof(*grown));
	if (!grown) {
		if (c.dir_fd >= 0)
			close(c.dir_fd);
		free(c.name);
		free(c.data);
		return;
	}
	memcpy(c.data, data, n);
	store->pending = grown;
	store->pending[store->n_pending++] = c;
}

void store_free(struct store *store)
{
	if (!store)
		return;
	/* A deferral's signer loading (store_checkpoint_defer) ends with
	 * the store that started it. */
	if (store->checkpoint_preloading)
		ed25519_preload_wait();
	store_prepared_drop(store);
	store_pending_drop(store);
	if (store->dir_fd >= 0)
		close(store->dir_fd);
	if (store->receipts_fd >= 0)
		close(store->receipts_fd);
	ledger_free(store->ledger);
	free(store->path);
	free(store);
}

static int store_open_dir(int at_fd, const char *path, bool create, struct error *err)
{
	int fd = openat(at_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(at_fd, path, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "cannot create '%s'", path);
		fd = openat(at_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return error_set_errno(err, errno, "cannot open '%s'", path);
	return fd;
}

int store_open(const char *path, bool create, struct store **ret, struct error *err)
{
	cleanup_with(store_freep) struct store *store = calloc(1, sizeof(*store));
	if (!store)
		return error_set(err, ENOMEM, "out of memory");
	store->dir_fd = store->receipts_fd = store->pre_dir_fd = store->pre_fd = -1;
	store->durable = true;
	store->path = strdup(path);
	if (!store->path)
		return error_set(err, ENOMEM, "out of memory");

	/* Made only when missing: a run finds it, without a mkdir a parent. */
	int r = store_open_dir(AT_FDCWD, path, false, err);
	if (r == -ENOENT && create) {
		error_clear(err);
		/* Parents as for any XDG directory; the state dir itself is private. */
		cleanup_free char *parent = strdup(path);
		char *slash = parent ? strrchr(parent, '/') : NULL;
		if (slash && slash != parent) {
			*slash = '\0';
			(void)mkdir_parents(parent, 0755);
		}
		r = store_open_dir(AT_FDCWD, path, true, err);
	}
	if (r < 0)
		return error_prefix(err, "state directory");
	store->dir_fd = r;
	r = store_open_dir(store->dir_fd, STATEPATH_RECEIPTS, create, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s'", path);
	store->receipts_fd = r;
	r = ledger_open(store->dir_fd, path, &ledger_state_schema, &store->ledger, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s'", path);
	*ret = TAKE_PTR(store);
	return 0;
}

int store_dir_fd(const struct store *store)
{
	return store->dir_fd;
}

const char *store_path(const struct store *store)
{
	return store->path;
}

bool store_durable(const struct store *store)
{
	return store->durable;
}

int store_receipts_fd(const struct store *store)
{
	return store->receipts_fd;
}

void store_set_durable(struct store *store, bool durable)
{
	store->durable = durable;
}

struct ledger *store_ledger(struct store *store)
{
	ledger_set_durable(store->ledger, store->durable);
	return store->ledger;
}

/* Whether id is taken: records_fd/<id>.json exists, or, with dirs_fd >= 0,
 * dirs_fd/<id> (a receipt id names its dry run's directory too). */
static bool store_record_exists(int records_fd, int dirs_fd, uint64_t id)
{
	char name[32];

	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	if (faccessat(records_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return true;
	snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
	return dirs_fd >= 0 && faccessat(dirs_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* This boot's id (/proc/sys/kernel/random/boot_id), "" when unknown. */
static void store_boot_id(char ret[40])
{
	clock_boot_id(ret);
	ret[strcspn(ret, "\n")] = '\0';
}

/* The one id allocator: the counter dir_fd/seq, under dir_fd/lock, skipping
 * any id whose records_fd/<id>.json exists. dir names dir_fd in messages.
 * The counter is not synced and a record's file (a receipt's, a permit's)
 * is a cache of the ledger's entry that commits it, unsynced too
 * (docs/ledger.md, "One commit path"), so after a power loss neither may
 * remember an id the ledger committed. The counter therefore notes the boot
 * it was written in; the first id handed out in another boot is past every
 * id of kind the ledger names (a scan of the log, once a boot). */
static int store_allocate(int dir_fd, const char *dir, int records_fd, int dirs_fd,
			  struct ledger *ledger, enum ledger_kind kind, uint64_t *ret_id,
			  struct error *err)
{
	cleanup_close int lock_fd =
		openat(dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock_fd < 0)
		return error_set_errno(err, errno, "cannot open '%s/lock'", dir);
	while (flock(lock_fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return error_set_errno(err, errno, "cannot lock '%s/lock'", dir);

	cleanup_close int seq_fd =
		openat(dir_fd, "seq", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (seq_fd < 0)
		return error_set_errno(err, errno, "cannot open '%s/seq'", dir);
	/* "<20 digits>\n", then with ledger "<boot id>\n". */
	char buf[SEQ_WIDTH + 1 + 40 + 1] = { 0 }, boot[40] = "";
	ssize_t n = pread(seq_fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return error_set_errno(err, errno, "cannot read '%s/seq'", dir);
	buf[n > 0 ? n : 0] = '\0';
	char *seq_boot = strchr(buf, '\n');
	if (seq_boot) {
		*seq_boot++ = '\0';
		seq_boot[strcspn(seq_boot, "\n")] = '\0';
	}

	uint64_t last = 0;
	if (n > 0 && parse_u64(buf, &last) < 0)
		last = 0; /* damaged counter: the existence check below recovers */
	if (ledger) {
		store_boot_id(boot);
		uint64_t committed = 0;
		struct error ignored = { 0 };
		if ((!boot[0] || !seq_boot || strcmp(seq_boot, boot) != 0) &&
		    ledger_max_id(ledger, kind, &committed, &ignored) == 0 && committed > last)
			last = committed;
	}
	if (last >= UINT64_MAX / 2)
		return error_set(err, EOVERFLOW, "'%s/seq': no id left", dir);
	uint64_t id = last + 1;
	while (store_record_exists(records_fd, dirs_fd, id))
		id++;

	int len = snprintf(buf, sizeof(buf), "%0*llu\n%s%s", SEQ_WIDTH, (unsigned long long)id,
			   boot, boot[0] ? "\n" : "");
	/* One small write at offset 0 replaces the fixed-width value whole (a
	 * shorter value an earlier version wrote included); a boot id of
	 * another length than the one before leaves a tail the next read
	 * ignores, or makes it scan once more. */
	if (pwrite(seq_fd, buf, (size_t)len, 0) != len)
		return error_set_errno(err, errno ? errno : ENOSPC, "cannot update '%s/seq'", dir);
	*ret_id = id;
	return 0; /* closing lock_fd releases the lock */
}

int store_allocate_id(struct store *store, uint64_t *ret_id, struct error *err)
{
	/* A dry run's directory, dryruns/<id>, is made before its receipt is
	 * committed and outlives a power loss that loses the receipt's entry
	 * and the counter's update: its id is taken too, else the next dry run
	 * fails to make it (EEXIST). */
	cleanup_close int dryruns_fd = openat(store->dir_fd, STATEPATH_DRYRUNS,
					      O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return store_allocate(store->dir_fd, store->path, store->receipts_fd, dryruns_fd,
			      store->ledger, LEDGER_RECEIPT, ret_id, err);
}

int store_allocate_id_in(struct store *store, const char *dir, enum ledger_kind kind,
			 uint64_t *ret_id, struct error *err)
{
	cleanup_free char *name = NULL;
	int r = store_open_dir(store->dir_fd, dir, true, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s'", store->path);
	cleanup_close int fd = r;
	if (asprintf(&name, "%s/%s", store->path, dir) < 0)
		return error_set(err, ENOMEM, "out of memory");
	return store_allocate(fd, name, fd, -1, store->ledger, kind, ret_id, err);
}

/* Opens the directory that holds path (below the state directory, made
 * with mode 0700 as needed, never through a symlink). */
static int store_commit_parent(struct store *store, const char *path, const char **ret_name,
			       struct error *err)
{
	if (path[0] == '/') {
		cleanup_free char *dir = strdup(path);
		if (!dir)
			return error_set(err, ENOMEM, "out of memory");
		char *slash = strrchr(dir, '/');
		*ret_name = path + (slash - dir) + 1;
		*slash = '\0';
		int fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? error_set_errno(err, errno, "open %s", dir) : fd;
	}
	char buf[PATH_MAX];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return error_set(err, ENAMETOOLONG, "path too long");
	for (char *slash = strchr(buf, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdirat(store->dir_fd, buf, 0700) < 0 && errno != EEXIST)
			return error_set_errno(err, errno, "create %s/%s", store->path, buf);
		*slash = '/';
	}
	int fd = fd_open_parent(store->dir_fd, path, O_RDONLY, ret_name);
	return fd < 0 ? error_set_errno(err, -fd, "open the directory of %s/%s", store->path, path)
		      : fd;
}

/* Records whose commit is a human's decision or changes what is trusted
 * are signed into a checkpoint at once; the rest wait for the next one
 * (every LEDGER_CHECKPOINT_EVERY entries), so a run stays cheap. */
static bool store_commit_checkpoints(enum ledger_kind kind)
{
	switch (kind) {
	case LEDGER_APPLY:
	case LEDGER_ROLLBACK:
	case LEDGER_APPROVER_ENROL:
	case LEDGER_APPROVER_CHANGE:
	case LEDGER_PERMIT_TRANSITION:
	case LEDGER_DISCARD:
	case LEDGER_POLICY_APPROVAL:
	case LEDGER_MIRROR_RESOLVE:
		return true;
	default:
		return false;
	}
}

/* Whether this commit signs at once: the kind asks for it and no
 * store_checkpoint_defer() is in effect; a deferred one is owed to the
 * flush. */
static bool store_commit_signs(struct store *store, enum ledger_kind kind)
{
	if (!store_commit_checkpoints(kind))
		return false;
	if (!store->checkpoint_deferred)
		return true;
	store->checkpoint_owed = true;
	return false;
}

void store_checkpoint_defer(struct store *store)
{
	store->checkpoint_deferred = true;
	/* The flush signs at the command's end, the first signature of the
	 * process: libcrypto is loaded and its provider set up meanwhile, on a
	 * thread, while the command's own work (a dry run's quarantine, git)
	 * goes on. */
	if (!store->checkpoint_preloading) {
		store->checkpoint_preloading = true;
		ed25519_preload();
	}
}

void store_sync_defer(struct store *store)
{
	store->sync_deferred = true;
}

void store_sync_resume(struct store *store)
{
	store->sync_deferred = false;
}

int store_sync_flush(struct store *store, struct error *err)
{
	store->sync_deferred = false;
	if (!store->sync_owed)
		return 0;
	int r = ledger_sync_written(store_ledger(store), err);
	if (r < 0)
		return error_prefix(err, "committed, but not yet durable");
	store->sync_owed = false;
	store_pending_write(store);
	return 0;
}

/* The append of a commit. Deferred (store_sync_defer) only when the
 * record is written before its entry: a power loss that loses the line
 * then leaves what a kill before the append leaves (a record file with no
 * entry, or a replaced one whose `.prev` store_settle() puts back). A
 * record whose entry carries it and whose file is written after the
 * append (a receipt) always syncs: its cache must never outlive its entry.
 * A receipt too big for its entry, written first, syncs too: another
 * process's gate counts a receipt (a close) without a commit of its own
 * that would sync it first. A synced append covers every line before it. */
static int store_append(struct store *store, enum ledger_kind kind, const char *id,
			const char *path, const char hex[SHA256_HEX_SIZE], const void *record,
			size_t n, bool written_first, struct error *err)
{
	struct ledger *ledger = store_ledger(store);
	bool defer = store->sync_deferred && written_first && store->durable && kind != LEDGER_RECEIPT;
	ledger_defer_sync(ledger, defer);
	int r = ledger_append_record(ledger, kind, id, path, hex, record, n,
				     store_commit_signs(store, kind), NULL, err);
	ledger_defer_sync(ledger, false);
	if (r == 0)
		store->sync_owed = defer;
	if (r == 0 && !defer)
		store_pending_write(store); /* this sync covers their entries */
	return r;
}

int store_checkpoint_flush(struct store *store, struct error *err)
{
	int r = store_sync_flush(store, err);
	if (r < 0)
		return r;
	store->checkpoint_deferred = false;
	if (!store->checkpoint_owed)
		return 0;
	r = ledger_checkpoint(store_ledger(store), err);
	if (r < 0)
		return error_prefix(err, "committed, but the checkpoint was not signed");
	store->checkpoint_owed = false;
	return 0;
}

/* The kinds whose entry carries the record's bytes, so that the one append
 * commits it and the file is a cache of the log (docs/ledger.md, "One
 * commit path"): a run's receipt, whose commit is the one durable write of
 * a run, and a dry run's change set (its readers go through
 * dryrun_dir_read_changeset(), which reads a missing or torn cache from the
 * log). Records that move on (replace), the system approver outside the
 * state directory and the records whose readers take the file alone (gate
 * entries, permits) keep the file written first. */
static bool store_commit_embeds(enum ledger_kind kind, const char *path, bool replace)
{
	return (kind == LEDGER_RECEIPT || kind == LEDGER_DRYRUN) && !replace && path[0] != '/';
}

/* The records that move on (replace) whose entry carries their bytes: a
 * permit's record, and a dry run's state (apply, rollback). The new
 * version is renamed in first, as for any replaced record (store_settle()
 * undoes a rename whose entry a crash cut off), but neither the temporary
 * nor the directory is synced: the entry's append, which carries the
 * bytes, is the one durable write of the transition, and the file is a
 * cache of the log (docs/ledger.md, "One commit path"). A state file a
 * power loss left missing is read from the log (dryrun_dir_open(), through
 * store_read_record(), which writes it back); one left torn or at an
 * earlier entry's bytes is written back by store_settle(), which every
 * command on a dry run runs under its lock.
 * The approver keeps the written-first order: its readers take the file
 * alone. */
static bool store_commit_carries_replaced(enum ledger_kind kind, const char *path, bool replace)
{
	if (!replace || path[0] == '/')
		return false;
	return kind == LEDGER_PERMIT_TRANSITION || kind == LEDGER_APPLY || kind == LEDGER_ROLLBACK;
}

/* Writes the cache of a committed record: a temporary file and a rename
 * that never replaces, not synced (the entry holds the bytes; after a crash
 * a cache lost is rebuilt from the log). One already there with the same
 * bytes (a reader rebuilt it meanwhile) is as good. */
static int store_write_cache(int dir_fd, const char *name, const void *data, size_t n, struct error *err)
{
	int r = file_write_atomic(dir_fd, name, data, n, 0600, false, err);
	if (r != -EEXIST)
		return r;
	cleanup_free char *have = NULL;
	size_t have_n;
	struct error ignored;
	if (file_read_capped(dir_fd, name, RECEIPT_MAX_BYTES, &have, &have_n, &ignored) == 0 &&
	    have_n == n && memcmp(have, data, n) == 0) {
		error_clear(err);
		return 0;
	}
	return r;
}

/* Removes the made-ahead files of processes that are gone (killed before
 * their commit): "<id>.<pid>" in receipts/.pre, open at dir_fd. A pid that
 * lives again, or one of another pid namespace, keeps or loses a file that
 * is only ever an empty inode: its maker's rename then fails and it writes
 * its cache the usual way. */
static void store_prepared_sweep(int dir_fd)
{
	char buf[4096];
	struct dirread dr;
	struct dirread_entry de;
	cleanup_close int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	dirread_init(&dr, fd, buf, sizeof(buf));
	for (size_t seen = 0; seen < 64 && dirread_next(&dr, &de) > 0; seen++) {
		char name[64];
		if (de.len >= sizeof(name))
			continue;
		memcpy(name, de.name, de.len);
		name[de.len] = '\0';
		const char *dot = strrchr(name, '.');
		uint64_t pid;
		if (!dot || parse_u64(dot + 1, &pid) < 0 || pid == 0 || pid > INT32_MAX ||
		    (pid_t)pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(dir_fd, name, 0);
	}
}

void store_prepare_receipt(struct store *store, uint64_t id)
{
	store_prepared_drop(store);
	if (mkdirat(store->receipts_fd, STATEPATH_RECEIPTS_PRE, 0700) < 0 && errno != EEXIST)
		return;
	store->pre_dir_fd = openat(store->receipts_fd, STATEPATH_RECEIPTS_PRE,
				   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (store->pre_dir_fd < 0)
		return;
	store_prepared_sweep(store->pre_dir_fd);
	snprintf(store->pre_name, sizeof(store->pre_name), "%llu.%d", (unsigned long long)id,
		 (int)getpid());
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	store->pre_fd = openat(store->pre_dir_fd, store->pre_name, flags, 0600);
	store->pre_id = id;
}

/* The cache of receipt id written into its made-ahead inode and renamed to
 * dir_fd/name, never over a file there: 0, or a negative errno (none made
 * for id, or it failed) after which the caller writes it the usual way. */
static int store_write_prepared(struct store *store, uint64_t id, int dir_fd, const char *name,
				const void *data, size_t n)
{
	if (store->pre_fd < 0 || store->pre_id != id)
		return -ENOENT;
	cleanup_close int fd = TAKE_FD(store->pre_fd);
	int r = fd_write_all(fd, data, n);
	if (r == 0 && renameat2(store->pre_dir_fd, store->pre_name, dir_fd, name, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(store->pre_dir_fd, store->pre_name, 0);
	return r;
}

/* The commit of a record its entry carries: the append first (one write,
 * one fdatasync shared with the appenders at the same moment: the commit
 * point), then the cache, unsynced. A kill between the two leaves no file,
 * which readers rebuild from the log and `ledger verify` does not count. */
static int store_commit_embedded(struct store *store, enum ledger_kind kind, const char *id,
				 const char *path, int dir_fd, const char *name, const void *data,
				 size_t n, struct error *err)
{
	char hex[SHA256_HEX_SIZE];

	/* Never over an existing file, as the rename of the other order. */
	if (faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return error_set_errno(err, EEXIST, "cannot write '%s'", name);
	sha256_hex(data, n, hex);
	/* A receipt's entry is synced at once: its cache is written next, and
	 * a run reports on it. A change set's may share the next sync
	 * (store_sync_defer()): its cache waits for that sync
	 * (store_pending_add()), so a power loss before it leaves neither. */
	int r = store_append(store, kind, id, path, hex, data, n, kind != LEDGER_RECEIPT, err);
	if (r == -E2BIG)
		return r;
	if (r < 0)
		return error_prefix(err, "%s %s was not committed", ledger_kind_name(kind), id);
	uint64_t rid;
	struct error cache_err = { 0 };
	if (store->sync_owed) {
		store_pending_add(store, dir_fd, name, data, n); /* this entry awaits its sync */
		return 0;
	}
	if (kind != LEDGER_RECEIPT || parse_u64(id, &rid) < 0 ||
	    store_write_prepared(store, rid, dir_fd, name, data, n) < 0)
		(void)store_write_cache(dir_fd, name, data, n, &cache_err);
	return 0;
}

/* The new version of a replaced record, under a temporary name: its bytes
 * synced, its name not (the rename over the record and the directory's
 * fsync after it make both durable; a crash before leaves the committed
 * record and a stray temporary, as a crash before that rename always did). */
static int store_write_temporary(int dir_fd, const char *tmp, const void *data, size_t n,
				 mode_t mode, bool durable, struct error *err)
{
	cleanup_close int fd =
		openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot create '%s'", tmp);
	int r = fd_write_all(fd, data, n);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	return r < 0 ? error_set_errno(err, -r, "cannot write '%s'", tmp) : 0;
}

/* The written-first order's syncs, after the fact: the record installed
 * at name (its bytes), then its directory (its name). */
static int store_sync_installed(int dir_fd, const char *name, bool durable, struct error *err)
{
	if (!durable)
		return 0;
	cleanup_close int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		return error_set_errno(err, errno, "cannot sync '%s'", name);
	if (fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "cannot sync the directory of '%s'", name);
	return 0;
}

int store_commit(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		 const void *data, size_t n, bool replace, struct error *err)
{
	struct statepath usual;

	if (!path) {
		if (kind != LEDGER_RECEIPT)
			return error_set(err, EINVAL, "a %s record needs a path",
					 ledger_kind_name(kind));
		if (statepath_receipt_text(id, &usual) < 0)
			return error_set(err, ENAMETOOLONG, "receipt %s: id too long", id);
		path = usual.s;
	}
	const char *name;
	cleanup_close int dir_fd = store_commit_parent(store, path, &name, err);
	if (dir_fd < 0)
		return error_prefix(err, "%s %s", ledger_kind_name(kind), id);
	mode_t mode = path[0] == '/' ? 0644 : 0600;
	int r;
	if (store_commit_embeds(kind, path, replace)) {
		r = store_commit_embedded(store, kind, id, path, dir_fd, name, data, n, err);
		if (r != -E2BIG)
			return r;
		error_clear(err); /* too big, or not UTF-8: the file first, as below */
	}
	bool carried = store_commit_carries_replaced(kind, path, replace);
	if (replace) {
		char tmp[NAME_MAX + 1];
		snprintf(tmp, sizeof(tmp), ".%.200s.%d.new", name, (int)getpid());
		(void)unlinkat(dir_fd, tmp, 0);
		r = store_write_temporary(dir_fd, tmp, data, n, mode, store->durable && !carried, err);
		/* The version being replaced, for store_settle(); the directory's
		 * fsync below makes the link durable with the rename. */
		if (r == 0 && path[0] != '/') {
			char prev[NAME_MAX + 1];
			snprintf(prev, sizeof(prev), ".%.200s.prev", name);
			(void)unlinkat(dir_fd, prev, 0);
			if (linkat(dir_fd, name, dir_fd, prev, 0) < 0 && errno != ENOENT)
				r = error_set_errno(err, errno, "cannot keep the previous '%s'", name);
		}
		if (r == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
			r = error_set_errno(err, errno, "cannot install '%s'", name);
		if (r == 0 && store->durable && !carried && fsync(dir_fd) < 0)
			r = error_set_errno(err, errno, "cannot sync the directory of '%s'", name);
		if (r < 0)
			(void)unlinkat(dir_fd, tmp, 0);
	} else {
		r = file_write_atomic(dir_fd, name, data, n, mode, store->durable, err);
	}
	if (r < 0)
		return r == -EEXIST ? r
				    : error_prefix(err, "%s %s in '%s'", ledger_kind_name(kind), id,
						   store->path);
	char hex[SHA256_HEX_SIZE];
	sha256_hex(data, n, hex);
	if (carried) {
		r = store_append(store, kind, id, path, hex, data, n, true, err);
		if (r != -E2BIG)
			return r < 0 ? error_prefix(err, "%s %s was written but not committed",
						    ledger_kind_name(kind), id)
				     : 0;
		/* Too big for its entry, or not UTF-8: the file is made
		 * durable first after all, and its entry names it alone. */
		error_clear(err);
		r = store_sync_installed(dir_fd, name, store->durable, err);
		if (r < 0)
			return error_prefix(err, "%s %s in '%s'", ledger_kind_name(kind), id,
					    store->path);
	}
	r = store_append(store, kind, id, path, hex, NULL, 0, true, err);
	if (r < 0)
		return error_prefix(err, "%s %s was written but not committed",
				    ledger_kind_name(kind), id);
	return 0;
}

static int store_file_sha256(int dir_fd, const char *name, char hex[SHA256_HEX_SIZE], struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(dir_fd, name, STORE_SETTLE_MAX, &text, &n, err);
	if (r == 0)
		sha256_hex(text, n, hex);
	return r;
}

/* A cache put back over what is at name: a temporary renamed over it,
 * unsynced (the log holds the record). 1 when it was, 0 when not. */
static int store_rewrite_cache(int dir_fd, const char *name, const char *data, size_t n)
{
	char tmp[NAME_MAX + 1];
	struct error ignored = { 0 };

	snprintf(tmp, sizeof(tmp), ".%.200s.%d.new", name, (int)getpid());
	(void)unlinkat(dir_fd, tmp, 0);
	if (store_write_temporary(dir_fd, tmp, data, n, 0600, false, &ignored) < 0)
		return 0;
	if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
		(void)unlinkat(dir_fd, tmp, 0);
		return 0;
	}
	return 1;
}

/* store_settle() of a record whose entry carries its bytes (a permit's,
 * store_commit_carries_replaced()) and whose file is a cache the log has
 * moved past: the bytes of an earlier entry for it (a power loss kept the
 * rename of an older version, not that of the one the last entry commits:
 * a file system need not order a rename before a later fdatasync of the
 * log), or a torn copy of the last entry's. It is written back from the
 * log (unsynced: the log holds the record). Any other difference is left
 * for the reader to refuse: a cache is never trusted over the log, and a
 * rewritten record is reported, not silently mended. */
static int store_settle_cache(struct store *store, int dir_fd, const char *name, const char *path)
{
	cleanup_free char *have = NULL, *want = NULL;
	size_t have_n, want_n = 0;
	char hex[SHA256_HEX_SIZE];
	struct error ignored = { 0 };

	if (file_read_capped(dir_fd, name, STORE_SETTLE_MAX, &have, &have_n, &ignored) < 0)
		return 0;
	sha256_hex(have, have_n, hex);
	if (ledger_record_since(store_ledger(store), LEDGER_KIND_MAX, NULL, path, hex, &want,
				&want_n, &ignored) != 1) {
		free(TAKE_PTR(want));
		if (ledger_record(store_ledger(store), LEDGER_KIND_MAX, NULL, path, &want, &want_n,
				  &ignored) < 0 ||
		    !ledger_torn_copy(have, have_n, want, want_n))
			return 0;
	}
	return store_rewrite_cache(dir_fd, name, want, want_n);
}

int store_settle(struct store *store, const char *path, struct error *err)
{
	const char *name;
	char hex[SHA256_HEX_SIZE], prev[NAME_MAX + 1], kept[NAME_MAX + 1];
	struct error ignored = { 0 };

	if (path[0] == '/')
		return 0;
	cleanup_close int dir_fd = fd_open_parent(store->dir_fd, path, O_RDONLY, &name);
	if (dir_fd == -ENOENT)
		return 0;
	if (dir_fd < 0)
		return error_set_errno(err, -dir_fd, "open the directory of %s/%s", store->path, path);
	snprintf(prev, sizeof(prev), ".%.200s.prev", name);
	snprintf(kept, sizeof(kept), ".%.200s.uncommitted", name);
	/* Nothing to settle while the record is what the last entry committed,
	 * or when it is not and its previous version is not either (a record
	 * rewritten: the readers refuse it). */
	if (store_file_sha256(dir_fd, name, hex, &ignored) < 0)
		return 0;
	int backed = ledger_backs(store_ledger(store), LEDGER_KIND_MAX, NULL, path, hex, err);
	bool first = faccessat(dir_fd, prev, F_OK, AT_SYMLINK_NOFOLLOW) < 0;
	if (backed != -EBADMSG && backed != -ENOENT)
		return backed; /* backed (0), or the ledger could not be read */
	*err = (struct error){ 0 };
	if (backed == -ENOENT && !first)
		return 0;
	if (backed == -EBADMSG &&
	    (store_file_sha256(dir_fd, prev, hex, &ignored) < 0 ||
	     ledger_backs(store_ledger(store), LEDGER_KIND_MAX, NULL, path, hex, &ignored) != 0))
		return store_settle_cache(store, dir_fd, name, path);
	(void)unlinkat(dir_fd, kept, 0);
	if (linkat(dir_fd, name, dir_fd, kept, 0) < 0)
		return error_set_errno(err, errno, "keep the uncommitted %s", path);
	/* A first version no entry names was never committed: the record is
	 * absent. Else the previous version is the committed one. */
	if (backed == -ENOENT ? unlinkat(dir_fd, name, 0) < 0 : renameat(dir_fd, prev, dir_fd, name) < 0)
		return error_set_errno(err, errno, "put back the committed %s", path);
	if (store->durable && fsync(dir_fd) < 0)
		return error_set_errno(err, errno, "sync the directory of %s", path);
	return 1;
}

int store_write_receipt(struct store *store, uint64_t id, const char *text, size_t n, struct error *err)
{
	char name[32];

	snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
	return store_commit(store, LEDGER_RECEIPT, name, NULL, text, n, false, err);
}

int store_append_index(struct store *store, const char *line, struct error *err)
{
	cleanup_close int fd = openat(store->dir_fd, STATEPATH_INDEX,
				      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot open '%s/index.jsonl'", store->path);
	/* One write() per line with O_APPEND: concurrent appends do not interleave. */
	int r = fd_write_all(fd, line, strlen(line));
	if (r < 0)
		return error_set_errno(err, -r, "cannot append to '%s/index.jsonl'", store->path);
	return 0;
}

/* A carried record is a JSON document ending in a newline (a receipt, a
 * change set): a cache that is not one may be a torn copy, worth the log's
 * lookup. A cut just before the newline is still a JSON document, and
 * ledger verify calls it torn: taken as one here too, else a reader would
 * use bytes no entry carries. One larger than any entry carries is the
 * record's own file, written first. */
static bool store_cache_looks_torn(const char *text, size_t n)
{
	if (n > LEDGER_ENTRY_MAX)
		return false;
	if (n == 0 || text[n - 1] != '\n')
		return true;
	json_t *doc = json_loadb(text, n, 0, NULL);
	json_decref(doc);
	return !doc;
}

int store_read_record(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		      size_t max, char **ret_text, size_t *ret_n, struct error *err)
{
	const char *name;
	size_t n = 0;

	cleanup_close int dir_fd = fd_open_parent(store->dir_fd, path, O_RDONLY, &name);
	if (dir_fd < 0)
		return error_set_errno(err, -dir_fd, "cannot open the directory of '%s'", path);
	int r = file_read_capped(dir_fd, name, max, ret_text, &n, err);
	if (r == 0 && store_commit_carries_replaced(kind, path, true)) {
		/* A record that moves on: its file may be a cache the log has
		 * moved past (store_settle_cache()); then the log's bytes are the
		 * record's. The file is written back under the record's lock
		 * (store_settle()) or by `ledger recover`, not here. */
		char hex[SHA256_HEX_SIZE];
		char *newer = NULL;
		size_t newer_n = 0;
		struct error ignored = { 0 };
		sha256_hex(*ret_text, n, hex);
		if (ledger_record_since(store_ledger(store), (int)kind, id, path, hex, &newer,
					&newer_n, &ignored) == 1) {
			if (newer_n > max) {
				free(newer);
				return error_set(err, EFBIG, "%s: more than %zu bytes", path, max);
			}
			free(*ret_text);
			*ret_text = newer;
			n = newer_n;
		} else {
			free(newer);
		}
	}
	if (r == 0 && store_commit_embeds(kind, path, false) && store_cache_looks_torn(*ret_text, n)) {
		/* An unsynced cache a power loss cut: the log's bytes, when the
		 * file is a torn copy of them, written back (best effort). */
		cleanup_free char *bytes = NULL;
		size_t bytes_n = 0;
		struct error ignored = { 0 };
		if (ledger_record(store_ledger(store), (int)kind, id, path, &bytes, &bytes_n,
				  &ignored) == 0 &&
		    bytes_n <= max && ledger_torn_copy(*ret_text, n, bytes, bytes_n)) {
			(void)store_rewrite_cache(dir_fd, name, bytes, bytes_n);
			free(*ret_text);
			*ret_text = TAKE_PTR(bytes);
			n = bytes_n;
		}
	}
	if (r != -ENOENT) {
		if (r == 0 && ret_n)
			*ret_n = n;
		return r;
	}
	/* The cache is missing: the bytes the log's last entry for path
	 * carries, when it is this record, and the cache written back (best
	 * effort: a reader may not be allowed to write). */
	struct error why = { 0 };
	cleanup_free char *bytes = NULL;
	r = ledger_record(store_ledger(store), (int)kind, id, path, &bytes, &n, &why);
	if (r == -ENOENT || r == -ENODATA)
		return -ENOENT; /* err says the file is missing */
	if (r < 0)
		return error_set(err, -r, "%s: %.300s", path, why.msg);
	if (n > max)
		return error_set(err, EFBIG, "%s: more than %zu bytes", path, max);
	error_clear(err);
	struct error ignored = { 0 };
	(void)store_write_cache(dir_fd, name, bytes, n, &ignored);
	*ret_text = TAKE_PTR(bytes);
	if (ret_n)
		*ret_n = n;
	return 0;
}

int store_read_receipt(struct store *store, uint64_t id, char **ret_text, struct error *err)
{
	char id_text[24];
	struct statepath path = statepath_receipt(id);

	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	int r = store_read_record(store, LEDGER_RECEIPT, id_text, path.s, RECEIPT_MAX_BYTES,
				  ret_text, NULL, err);
	if (r < 0)
		return error_set(err, -r, "no receipt %llu in '%s'", (unsigned long long)id,
				 store->path);
	return 0;
}

int store_read_index(struct store *store, char **ret_text, size_t *ret_size, struct error *err)
{
	int r = file_read_capped(store->dir_fd, STATEPATH_INDEX, INDEX_MAX_BYTES, ret_text,
				 ret_size, err);
	if (r == -ENOENT) {
		*ret_text = strdup("");
		*ret_size = 0;
		return *ret_text ? 0 : error_set(err, ENOMEM, "out of memory");
	}
	if (r < 0)
		return error_prefix(err, "index of '%s'", store->path);
	return 0;
}

int store_open_spill(struct store *store, uint64_t id, const char *stream, bool create, int *ret_fd,
		     struct error *err)
{
	char name[48];

	snprintf(name, sizeof(name), "%llu.%s", (unsigned long long)id, stream);
	int flags = create ? O_WRONLY | O_CREAT | O_EXCL : O_RDONLY;
	int fd = openat(store->receipts_fd, name, flags | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(err, errno, "cannot open '%s/receipts/%s'", store->path, name);
	*ret_fd = fd;
	return 0;
}

static bool store_entry_failed(json_t *entry)
{
	return !json_is_true(json_object_get(entry, "match_expected")) ||
	       json_is_true(json_object_get(entry, "host_code_failed"));
}

int store_list(struct store *store, bool failed_only, uint64_t last, json_t **ret_entries,
	       size_t *ret_skipped, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t size, skipped = 0;
	int r = store_read_index(store, &text, &size, err);
	if (r < 0)
		return r;

	json_t *list = json_array();
	if (!list)
		return error_set(err, ENOMEM, "out of memory");
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');
		json_t *e = json_loadb(line, (size_t)(end - line), 0, NULL);
		if (!json_is_object(e))
			skipped += end > line;
		else if (!failed_only || store_entry_failed(e))
			json_array_append(list, e);
		json_decref(e);
		line = *end ? end + 1 : end;
	}
	size_t n = json_array_size(list);
	if (last && n > last) {
		json_t *tail = json_array();
		for (size_t i = n - last; tail && i < n; i++)
			json_array_append(tail, json_array_get(list, i));
		json_decref(list);
		if (!tail)
			return error_set(err, ENOMEM, "out of memory");
		list = tail;
	}
	*ret_entries = list;
	*ret_skipped = skipped;
	return 0;
}

int store_open_quarantine(struct store *store, uint64_t id, int *ret_fd, struct error *err)
{
	char rel[64];

	int r = store_open_dir(store->dir_fd, STATEPATH_QUARANTINE, true, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s'", store->path);
	cleanup_close int qfd = r;
	snprintf(rel, sizeof(rel), "%llu", (unsigned long long)id);
	r = store_open_dir(qfd, rel, true, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s/quarantine'", store->path);
	*ret_fd = r;
	return 0;
}

int store_open_permits(struct store *store, bool create, int *ret_fd, struct error *err)
{
	int r = store_open_dir(store->dir_fd, STATEPATH_PERMITS, create, err);
	if (r < 0)
		return error_prefix(err, "state directory '%s'", store->path);
	*ret_fd = r;
	return 0;
}

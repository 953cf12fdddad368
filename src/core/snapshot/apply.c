/* SPDX-License-Identifier: MIT */
#include "core/snapshot/apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/faultpoint.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/applyfs.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/applycheck.h"
#include "core/snapshot/applyplan.h"
#include "core/snapshot/applymark.h"
#include "core/snapshot/applyop.h"
#include "core/snapshot/journal.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

static int conflict(struct apply_outcome *ret, struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int conflict(struct apply_outcome *ret, struct error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ret->conflict, sizeof(ret->conflict), fmt, ap);
	va_end(ap);
	return error_set(err, EBUSY, "CONFLICT: %s; nothing was changed", ret->conflict);
}

/* Finishes what a crash left of a locked dry run's apply or rollback (the
 * process that ran it is gone: it held the lock), from the journal's last
 * mark: none, an apply that never reached "committed", is rolled back;
 * "rolling_back", a rollback cut short, is finished; and a state that the
 * crash kept from following its mark ("committed" but not "applied",
 * "rolled_back" but still "applied") is committed now. */
static int recover_locked_do(struct dryrun_dir *d, bool *ret_recovered, bool *ret_left,
			     struct error *err)
{
	cleanup_with(applyop_list_release) struct applyop_list ops = { 0 };
	char mark[32];
	struct apply_outcome ignored = { 0 };

	*ret_recovered = false;
	*ret_left = false;
	int r = journal_read(d, &ops, mark, sizeof(mark), err);
	if (r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0;
	}
	if (r < 0)
		return r;
	/* No final mark, and the state the ledger committed (store_settle(),
	 * dryrun_dir_open()) is "applied": the apply's "committed" mark, not
	 * synced (apply_run_ops()), was lost after its state's entry was
	 * committed. The apply stands; its mark is put back, synced. */
	if (!mark[0] && d->state == DRYRUN_STATE_APPLIED) {
		r = journal_append(d->fd, "{\"mark\":\"committed\"}\n", true, err);
		return r < 0 ? error_prefix(err, "recover dry run %llu", (unsigned long long)d->id)
			     : 0;
	}
	if (!strcmp(mark, "committed") && d->state != DRYRUN_STATE_APPLIED)
		r = dryrun_dir_set_state(d, DRYRUN_STATE_APPLIED, err);
	else if (!strcmp(mark, "rolled_back") && d->state == DRYRUN_STATE_APPLIED)
		r = dryrun_dir_set_state(d, DRYRUN_STATE_ROLLED_BACK, err);
	if (r < 0 || (mark[0] && strcmp(mark, "rolling_back") != 0))
		return r < 0 ? error_prefix(err, "recover dry run %llu", (unsigned long long)d->id)
			     : 0;
	if (d->ws_fd < 0) {
		*ret_left = true;
		return 0; /* not the workspace it ran on: left for when it is back */
	}
	if (mark[0]) {
		/* Each undo step checks the tree, so what the cut rollback
		 * already undid is skipped. */
		r = journal_undo_all(d, &ops, &ignored.ops, err);
		if (r == 0)
			r = dryrun_dir_set_state(d, DRYRUN_STATE_ROLLED_BACK, err);
		*ret_recovered = r == 0;
		return r < 0 ? error_prefix(err, "finish the rollback of dry run %llu",
					    (unsigned long long)d->id)
			     : 0;
	}
	/* An apply that never reached "committed": back to entirely old. */
	r = journal_undo_all(d, &ops, &ignored.ops, err);
	if (r == 0)
		r = dryrun_dir_set_state(d, DRYRUN_STATE_PENDING, err);
	*ret_recovered = r == 0;
	return r < 0 ? error_prefix(err, "recover dry run %llu", (unsigned long long)d->id) : 0;
}

/* recover_locked_do(), then the dry run's name in dryruns/.applying removed
 * once nothing of an apply or rollback is left unfinished (the lock is
 * held: no apply of it is making its name meanwhile). */
static int recover_locked(struct dryrun_dir *d, bool *ret_recovered, struct error *err)
{
	bool left;
	int r = recover_locked_do(d, ret_recovered, &left, err);

	if (r == 0 && !left)
		applymark_remove(d->store, d->id);
	return r;
}

static int recover_one(struct store *store, uint64_t id, bool *ret_recovered, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };

	*ret_recovered = false;
	int r = dryrun_dir_open(store, id, DRYRUN_DIR_LOCK_TRY, &d, err);
	if (r == -ENOENT)
		applymark_remove(store, id); /* gone, or never applied: nothing under way */
	if (r == -EAGAIN || r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0; /* in use by a live process, or gone */
	}
	return r < 0 ? r : recover_locked(&d, ret_recovered, err);
}

/* The state directory's dryruns/, to list; *ret is NULL when there is none. */
static int dryruns_open(struct store *store, DIR **ret, struct error *err)
{
	int fd = openat(store_dir_fd(store), STATEPATH_DRYRUNS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*ret = NULL;
	if (fd < 0)
		return errno == ENOENT
			       ? 0
			       : error_set_errno(err, errno, "open %s/dryruns", store_path(store));
	*ret = fdopendir(fd);
	if (!*ret) {
		int e = errno;
		close(fd);
		return error_set_errno(err, e, "read %s/dryruns", store_path(store));
	}
	return 0;
}

/* Whether recover_one() would find nothing to do for dry run id, read
 * without its lock and without parsing its change set or journal: the
 * journal's last line is a final mark ("committed", "rolled_back"), the
 * state follows it (what recover_locked() checks), and the state file is
 * the one the ledger committed (what store_settle() checks). Anything else
 * (no final mark, a state a crash kept from following it, a state whose
 * commit a crash cut) takes the whole way. A dry run that changes while it
 * is read is in use: its lock holder finishes it, as with the lock's try.
 * Every dry run the state directory keeps is read here once a pass (its
 * caller has stat'ed the journal), each in the fewest calls: the journal
 * opened, stat'ed and the longer mark's bytes read once; the state file
 * opened and read with one read() of one byte more than its cap. */
static bool recover_settled(struct store *store, struct ledger_lookup **lk, int dir_fd,
			    const char *name, uint64_t id)
{
	static const char committed[] = "\n{\"mark\":\"committed\"}\n";
	static const char rolled_back[] = "\n{\"mark\":\"rolled_back\"}\n";
	const size_t n_committed = strlen(committed), n_rolled_back = strlen(rolled_back);
	char path[PATH_MAX], tail[sizeof(rolled_back)];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" STATEPATH_JOURNAL, name);
	cleanup_close int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	/* The shorter mark is the end of the longer one's bytes. */
	size_t want = (size_t)MIN(st.st_size, (off_t)n_rolled_back);
	if (pread(fd, tail, want, st.st_size - (off_t)want) != (ssize_t)want)
		return false;
	bool is_committed = want >= n_committed &&
			    memcmp(tail + want - n_committed, committed, n_committed) == 0;
	if (!is_committed && !(want == n_rolled_back && memcmp(tail, rolled_back, want) == 0))
		return false;
	enum dryrun_state state;
	char hex[SHA256_HEX_SIZE];
	int r = dryrun_dir_peek_state(dir_fd, name, &state, hex);
	if (r == -ENOENT)
		return !is_committed; /* pending: nothing to settle */
	if (r < 0 || is_committed != (state == DRYRUN_STATE_APPLIED))
		return false;
	struct statepath rel = statepath_dryrun_state(id);
	struct error ignored = { 0 };
	/* One reader for the pass (*lk, opened here the first time). */
	if (!*lk && ledger_lookup_open(store_ledger(store), lk, &ignored) < 0)
		return false;
	return ledger_lookup_backs(*lk, LEDGER_KIND_MAX, NULL, rel.s, hex) == 0;
}

/* The directory open at fd (the state directory's name, for the error)
 * for readdir(), on a descriptor of its own. */
static int recover_opendir(struct store *store, int fd, const char *name, DIR **ret, struct error *err)
{
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*ret = own < 0 ? NULL : fdopendir(own);
	if (*ret)
		return 0;
	int e = errno;
	if (own >= 0)
		close(own);
	return error_set_errno(err, e, "read %s/%s", store_path(store), name);
}

/* The whole pass, over every dry run dryruns/ (dir_fd) keeps: for a state
 * directory that dryruns/.applying (mark_fd) does not yet cover (made by an
 * older airlock), and for gc. What it cannot settle (in use, its workspace
 * gone) is named in dryruns/.applying first; those names synced, the
 * directory is marked complete. */
static int recover_all(struct store *store, int dir_fd, int mark_fd, size_t *ret_recovered,
		       struct error *err)
{
	DIR *dir = NULL;
	int r = recover_opendir(store, dir_fd, STATEPATH_DRYRUNS, &dir, err);
	if (r < 0)
		return r;
	struct dirent *de;
	struct ledger_lookup *lk = NULL;
	bool named = false;
	while (r == 0 && (de = readdir(dir))) {
		char journal[PATH_MAX];
		struct stat jst;
		uint64_t id = strtoull(de->d_name, NULL, 10);
		snprintf(journal, sizeof(journal), "%s/" STATEPATH_JOURNAL, de->d_name);
		/* No journal, or the dry run's empty one: no apply began. */
		if (id == 0 || fstatat(dir_fd, journal, &jst, 0) < 0 || jst.st_size == 0 ||
		    recover_settled(store, &lk, dir_fd, de->d_name, id))
			continue;
		/* The reader holds the ledger's shared lock: let it go before a
		 * recovery that commits. */
		ledger_lookup_free(lk);
		lk = NULL;
		r = applymark_add(mark_fd, id, err);
		named = named || r == 0;
		bool recovered = false;
		if (r == 0)
			r = recover_one(store, id, &recovered, err);
		*ret_recovered += recovered;
	}
	ledger_lookup_free(lk);
	closedir(dir);
	if (r == 0 && named && fsync(mark_fd) < 0)
		r = error_set_errno(err, errno, "sync %s/" APPLYMARK_DIR, store_path(store));
	return r < 0 ? r : applymark_set_complete(mark_fd, err);
}

/* The pass over dryruns/.applying alone: each dry run named there taken
 * the whole way, under its lock (tried: one in use is its holder's). */
static int recover_marked(struct store *store, int mark_fd, size_t *ret_recovered, struct error *err)
{
	DIR *dir = NULL;
	int r = recover_opendir(store, mark_fd, APPLYMARK_DIR, &dir, err);
	if (r < 0)
		return r;
	struct dirent *de;
	while (r == 0 && (de = readdir(dir))) {
		uint64_t id = strtoull(de->d_name, NULL, 10);
		bool recovered = false;
		if (id == 0)
			continue;
		r = recover_one(store, id, &recovered, err);
		*ret_recovered += recovered;
	}
	closedir(dir);
	return r;
}

/* whole: every dry run kept, not only those dryruns/.applying names. */
static int recover_pass(struct store *store, bool whole, size_t *ret_recovered, struct error *err)
{
	*ret_recovered = 0;
	cleanup_close int dir_fd =
		openat(store_dir_fd(store), STATEPATH_DRYRUNS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return errno == ENOENT
			       ? 0
			       : error_set_errno(err, errno, "open %s/dryruns", store_path(store));
	/* The recovery lock: one recovery pass at a time. It only ever tries
	 * a dry run's lock, never waits for one, so it cannot deadlock with a
	 * command that holds a dry run's lock and then recovers. */
	if (flock(dir_fd, LOCK_EX) < 0)
		return error_set_errno(err, errno, "lock %s/dryruns", store_path(store));
	cleanup_close int mark_fd = -1;
	int r = applymark_open(store, &mark_fd, err);
	if (r < 0)
		return r;
	/* The whole pass leaves names of its own only for what it could not
	 * settle; a name whose journal it passed over (an apply marked, cut
	 * before its journal) is visited after it. */
	if (whole || !applymark_complete(mark_fd))
		r = recover_all(store, dir_fd, mark_fd, ret_recovered, err);
	size_t n = 0;
	if (r == 0)
		r = recover_marked(store, mark_fd, &n, err);
	*ret_recovered += n;
	return r;
}

/* The store whose dry runs this process has recovered: one pass a
 * process. A crash after it (a lock holder killed since) is what the next
 * command finds, as a crash after any command is; a permit's exec (apply,
 * verify, rollback) would otherwise pass over every dry run up to four
 * times. The pass lists dryruns/.applying (applymark.h): its cost follows
 * the applies under way, not the dry runs kept. */
static const struct store *apply_recovered_store;

int apply_recover(struct store *store, size_t *ret_recovered, struct error *err)
{
	*ret_recovered = 0;
	if (apply_recovered_store == store)
		return 0;
	int r = recover_pass(store, false, ret_recovered, err);
	if (r == 0)
		apply_recovered_store = store;
	return r;
}

/* Every command on a dry run starts by finishing what a crash left. */
static int dryrun_begin(struct store *store, uint64_t id, struct dryrun_dir *d, struct error *err)
{
	size_t recovered;
	bool mine;
	int r = apply_recover(store, &recovered, err);

	if (r == 0)
		r = dryrun_dir_open(store, id, DRYRUN_DIR_LOCK_WAIT, d, err);
	/* A crash of this dry run's apply since the pass above. */
	return r < 0 ? r : recover_locked(d, &mine, err);
}

/* Apply puts what the change set says into the real tree: one the ledger
 * does not back (rewritten after the dry run) is refused. The bytes asked
 * about are those d was read from (d->changeset_sha256), not the file as
 * it is now: the log's when the cache was missing or torn (and perhaps not
 * written back), and never a file swapped in after the read. */
static int apply_changeset_backed(struct store *store, const struct dryrun_dir *d, struct error *err)
{
	return dryrun_dir_changeset_backed(store, d->id, d->changeset_sha256,
					   "refusing to apply it", err);
}

/* Whether the dry run may be applied at all: whose it is, the change set
 * reviewed, its workspace, verdict and state, one file system. */
static int apply_admit(struct dryrun_dir *d, uint64_t id, unsigned flags,
		       const char *changeset_sha256, struct apply_outcome *ret, struct error *err)
{
	/* A permit's dry run is applied by its permit, after its checks. */
	if (!changeset_sha256 && faccessat(d->fd, STATEPATH_PERMIT_MARK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return error_set(err, EPERM,
				 "dry run %llu belongs to a permit: airlock permit exec applies it, after its checks",
				 (unsigned long long)id);
	/* Checked under the lock: what is applied is what was reviewed. */
	if (changeset_sha256 && strcmp(changeset_sha256, d->changeset_sha256) != 0)
		return error_set(err, EPERM,
				 "dry run %llu: its change set is not the one that was reviewed (sha256 %.16s..., reviewed %.16s...); nothing was changed",
				 (unsigned long long)id, d->changeset_sha256, changeset_sha256);
	if (d->ws_fd < 0)
		return conflict(ret, err, "%s", d->ws_mismatch);
	switch (d->verdict) {
	case DRYRUN_VERDICT_DRY_RUN_OK:
		break;
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
		if (!(flags & APPLY_ALLOW_OUTSIDE_WRITES))
			return error_set(err, EPERM,
					 "dry run %llu's verdict is OUTSIDE_WRITE: the command attempted writes outside the workspace (see its receipt); apply --allow-outside-writes applies the rest anyway",
					 (unsigned long long)id);
		break;
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case DRYRUN_VERDICT_NO_EFFECT:
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
		return error_set(err, EPERM, "dry run %llu's verdict is %s: only DRY_RUN_OK is applied",
				 (unsigned long long)id, dryrun_verdict_name(d->verdict));
	case DRYRUN_VERDICT_NONE:
	case _DRYRUN_VERDICT_MAX:
		/* dryrun_dir_parse_changeset() refused the change set already */
		return error_set(err, EINVAL, "dry run %llu has no known verdict",
				 (unsigned long long)id);
	}
	if (d->state != DRYRUN_STATE_PENDING && d->state != DRYRUN_STATE_ROLLED_BACK)
		return error_set(err, EPERM, "dry run %llu is %s", (unsigned long long)id,
				 dryrun_state_describe(d->state));
	struct stat ws, up;
	if (fstat(d->ws_fd, &ws) < 0 || fstatat(d->fd, STATEPATH_UPPER, &up, 0) < 0)
		return error_set_errno(err, errno, "dry run %llu: stat its snapshot",
				       (unsigned long long)id);
	if (ws.st_dev != up.st_dev)
		return error_set(err, EXDEV,
				 "the state directory and the workspace are on different file systems: applying by copy is not built yet");
	return 0;
}

/* What lands is what was reviewed, and nothing apply never installs:
 * owners only root gives, set-id files, a staged object edited since, a new
 * directory holding more than the change set lists below it. */
static int apply_check_staged(struct dryrun_dir *d, uint64_t id, struct error *err)
{
	size_t i;
	const struct changeset_entry *c;

	for (i = 0; i < d->cs->n_entries; i++) {
		c = &d->cs->entries[i];
		if (changeset_entry_has(c, CHANGESET_KEY_UID) && geteuid() != 0 &&
		    (c->uid != geteuid() || c->gid != getegid()))
			return error_set(err, EPERM,
					 "dry run %llu: %s is to be owned by %u:%u, which only root can give (the dry run ran as root); nothing was changed",
					 (unsigned long long)id, c->path.bytes, (unsigned)c->uid,
					 (unsigned)c->gid);
	}
	for (i = 0; i < d->cs->n_entries; i++) {
		c = &d->cs->entries[i];
		const char *why = applycheck_staged_privilege(d, c);
		if (why)
			return error_set(err, EPERM,
					 "dry run %llu: %s (%s): apply never installs a set-id file, a file capability or a device node",
					 (unsigned long long)id, c->path.bytes, why);
	}
	if (applyplan_cover_build(d) < 0)
		return error_set(err, ENOMEM, "out of memory");
	/* A new directory moves whole: it must hold what the change set lists
	 * below it, nothing more. */
	size_t listed_below = 0;
	long staged_below = 0;
	for (i = 0; i < d->cs->n_entries; i++) {
		char why[600];
		c = &d->cs->entries[i];
		const char *path = c->path.bytes;
		if (!applycheck_staged_matches(d, c, why, sizeof(why)))
			return error_set(err, EPERM, "dry run %llu: %s; nothing was changed",
					 (unsigned long long)id, why);
		if (applyplan_covered(d, path)) {
			listed_below++;
		} else if (c->type == CHANGESET_TYPE_DIR &&
			   (c->change == CHANGESET_CREATED || c->change == CHANGESET_TYPE_CHANGED)) {
			char staged[PATH_MAX];
			snprintf(staged, sizeof(staged), STATEPATH_UPPER "/%s", path);
			staged_below += MAX(applyfs_count_entries_at(d->fd, staged), 0L);
		}
	}
	if ((long)listed_below != staged_below)
		return error_set(err, EPERM,
				 "dry run %llu: its new directories hold %ld entries, the change set lists %zu: the staged object differs from the change set (edited after the dry run); nothing was changed",
				 (unsigned long long)id, staged_below, listed_below);
	return 0;
}

/* Optimistic concurrency: everything the dry run saw must still be so. */
static int apply_check_workspace(struct dryrun_dir *d, struct apply_outcome *ret, struct error *err)
{
	for (size_t i = 0; i < d->cs->n_entries; i++) {
		char why[600];
		const struct changeset_entry *c = &d->cs->entries[i];
		if (c->change == CHANGESET_RENAMED) {
			/* its source: a file deleted, of the content it moved with */
			const struct changeset_entry src = { .change = CHANGESET_DELETED,
							     .type = CHANGESET_TYPE_FILE,
							     .path = c->from,
							     .old_sha256 = c->sha256 };
			if (!applycheck_matches(d, &src, c->from.bytes, false, why, sizeof(why)))
				return conflict(ret, err, "%s", why);
		}
		if (!applyplan_covered(d, c->path.bytes) &&
		    !applycheck_matches(d, c, c->path.bytes, false, why, sizeof(why)))
			return conflict(ret, err, "%s", why);
	}
	return 0;
}

/* Before an apply's or rollback's first operation: its dry run named in
 * dryruns/.applying (applymark.h) by a link of its journal, then the
 * journal written (ops) or its "rolling_back" mark appended (mark), synced,
 * and dryruns/.applying synced for the name (journal.h). */
static int apply_mark_begin(struct dryrun_dir *d, const struct applyop_list *ops, const char *mark,
			    struct error *err)
{
	cleanup_close int mark_fd = -1;
	int r = applymark_open(d->store, &mark_fd, err);

	if (r < 0)
		return r;
	return ops ? journal_write(d, ops, mark_fd, err)
		   : journal_append_marked(d, mark, mark_fd, err);
}

/* Once the state is committed: nothing of the apply or rollback is left to
 * finish. The name's removal is not synced (applymark.h). */
static void apply_mark_end(struct dryrun_dir *d)
{
	FAULT_POINT("apply.committed"); /* a crash between the commit and the removal */
	applymark_remove(d->store, d->id);
}

/* The operations: planned, journaled and synced, carried out one by one
 * (undone, all of them, when one fails), then the "committed" mark. */
static int apply_run_ops(struct dryrun_dir *d, uint64_t id, unsigned flags,
			 struct apply_outcome *ret, struct error *err)
{
	cleanup_with(applyop_list_release) struct applyop_list ops = { 0 };
	int r = applyplan_ops(d, &ops);
	if (r < 0)
		return error_set(err, -r, "dry run %llu: its snapshot is incomplete",
				 (unsigned long long)id);
	if (mkdirat(d->fd, STATEPATH_BACKUP, 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create the backup directory");
	r = apply_mark_begin(d, &ops, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ops.n; i++) {
		const struct applyop *op = &ops.items[i];
		FAULT_POINT("apply.operation"); /* a crash between two operations */
		r = applyop_do(d, op);
		if (r < 0) {
			struct error undo_err = { 0 };
			struct apply_outcome ignored = { 0 };
			error_set_errno(err, -r, "%s %s", applyop_kind_name(op->kind), op->path);
			if (journal_undo_all(d, &ops, &ignored.ops, &undo_err) < 0)
				return error_prefix(err,
						    "apply %llu stopped, and undoing it failed too (%s)",
						    (unsigned long long)id, undo_err.msg);
			applymark_remove(d->store, id); /* its journal ends "rolled_back" */
			return error_prefix(err, "apply %llu stopped and was undone",
					    (unsigned long long)id);
		}
		ret->ops++;
	}
	if (syncfs(d->ws_fd) < 0)
		return error_set_errno(err, errno, "sync the workspace");
	/* The commit point is the state's entry (its one fdatasync, or under
	 * a permit's exec APPLIED's right after it, which covers it:
	 * store_sync_defer), after the workspace's syncfs; the mark before it
	 * is written, not synced:
	 * after a power loss that kept the entry and lost the mark, the state
	 * the ledger committed says "applied" and recover_locked() puts the
	 * mark back; one that kept neither rolls the apply back, as a crash
	 * before the mark always did. */
	r = journal_append(d->fd, "{\"mark\":\"committed\"}\n", false, err);
	if (r == 0)
		r = dryrun_dir_set_state(d, DRYRUN_STATE_APPLIED, err);
	if (r == 0 && !(flags & APPLY_LEAVE_MARK))
		apply_mark_end(d);
	return r;
}

static int apply_changes_checked(struct store *store, uint64_t id, unsigned flags,
				 const char *changeset_sha256, struct apply_outcome *ret,
				 struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };

	*ret = (struct apply_outcome){ 0 };
	int r = dryrun_begin(store, id, &d, err);
	/* The change set's entry (and this apply's commit) may not be durable:
	 * nothing is put into the tree on it. */
	if (r == 0 && ledger_poisoned(store_ledger(store)))
		r = error_set(err, EIO,
			      "the ledger is poisoned after an fsync error (dry run %llu's change set may not be durable): nothing was changed; run `airlock ledger recover`",
			      (unsigned long long)id);
	if (r == 0)
		r = apply_changeset_backed(store, &d, err);
	if (r == 0)
		r = apply_admit(&d, id, flags, changeset_sha256, ret, err);
	if (r == 0)
		r = apply_check_staged(&d, id, err);
	if (r == 0)
		r = apply_check_workspace(&d, ret, err);
	if (r == 0)
		r = apply_run_ops(&d, id, flags, ret, err);
	return r;
}

int apply_changes(struct store *store, uint64_t id, unsigned flags, struct apply_outcome *ret,
		  struct error *err)
{
	return apply_changes_checked(store, id, flags, NULL, ret, err);
}

int apply_changes_reviewed(struct store *store, uint64_t id, unsigned flags,
			   const char *changeset_sha256, struct apply_outcome *ret, struct error *err)
{
	return apply_changes_checked(store, id, flags, changeset_sha256, ret, err);
}

int apply_state(struct store *store, uint64_t id, enum dryrun_state *ret, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	int r = dryrun_begin(store, id, &d, err);

	if (r == 0)
		*ret = d.state;
	return r;
}

int apply_rollback(struct store *store, uint64_t id, struct apply_outcome *ret, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	cleanup_with(applyop_list_release) struct applyop_list ops = { 0 };
	char mark[32];

	*ret = (struct apply_outcome){ 0 };
	int r = dryrun_begin(store, id, &d, err);
	if (r < 0)
		return r;
	if (d.state != DRYRUN_STATE_APPLIED)
		return error_set(err, EPERM, "dry run %llu is %s, not applied",
				 (unsigned long long)id, dryrun_state_describe(d.state));
	if (d.ws_fd < 0)
		return conflict(ret, err, "%s", d.ws_mismatch);
	r = journal_read(&d, &ops, mark, sizeof(mark), err);
	if (r < 0)
		return r;
	/* Nothing is put back over a path someone changed after the apply,
	 * including below a directory the apply created. */
	for (size_t i = 0; i < d.cs->n_entries; i++) {
		char why[600];
		if (!applycheck_matches(&d, &d.cs->entries[i], d.cs->entries[i].path.bytes, true,
					why, sizeof(why)))
			return conflict(ret, err, "%s", why);
	}
	/* From here a crash leaves a tree part undone, which no longer matches
	 * the apply: recovery finishes the rollback (recover_locked). */
	r = apply_mark_begin(&d, NULL, "{\"mark\":\"rolling_back\"}\n", err);
	if (r == 0)
		r = journal_undo_all(&d, &ops, &ret->ops, err);
	if (r == 0)
		r = dryrun_dir_set_state(&d, DRYRUN_STATE_ROLLED_BACK, err);
	if (r == 0)
		apply_mark_end(&d);
	return r;
}

void apply_unmark(struct store *store, uint64_t id)
{
	bool recovered;
	struct error ignored = { 0 };

	/* The dry run's lock was let go since the apply: what another
	 * process's rollback of it, cut short meanwhile, named under way stays
	 * so until it is finished, as in a pass. */
	(void)recover_one(store, id, &recovered, &ignored);
}

/* A discard entry names the dry run's directory (the digest of nothing):
 * `ledger verify` then expects its files gone. */
static int apply_commit_discard(struct store *store, uint64_t id, struct error *err)
{
	char id_text[24], hex[SHA256_HEX_SIZE];

	struct statepath path = statepath_dryrun(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	sha256_hex("", 0, hex);
	return ledger_append(store_ledger(store), LEDGER_DISCARD, id_text, path.s, hex, true, NULL,
			     err);
}

int apply_discard(struct store *store, uint64_t id, struct error *err)
{
	cleanup_with(dryrun_dir_release) struct dryrun_dir d = { .fd = -1, .ws_fd = -1 };
	size_t recovered;

	int r = apply_recover(store, &recovered, err);
	if (r < 0)
		return r;
	struct statepath rel = statepath_dryrun(id);
	r = dryrun_dir_open(store, id, DRYRUN_DIR_LOCK_WAIT, &d, err);
	if (r == -ENOENT && (d.fd < 0 || faccessat(store_dir_fd(store), rel.s, F_OK, 0) < 0))
		return r;
	if (r == 0 && d.state == DRYRUN_STATE_APPLIED)
		return error_set(err, EPERM, "dry run %llu is applied: roll it back first",
				 (unsigned long long)id);
	/* Recorded, then removed with its lock held (d is released after). */
	r = apply_commit_discard(store, id, err);
	if (r < 0)
		return r;
	r = remove_tree_at(store_dir_fd(store), rel.s);
	if (r == 0)
		applymark_remove(store, id);
	return r < 0 ? error_set_errno(err, -r, "remove %s/%s", store_path(store), rel.s) : 0;
}

int apply_gc(struct store *store, uint64_t older_than_ms, bool include_applied, size_t *ret_removed,
	     struct error *err)
{
	size_t recovered;
	*ret_removed = 0;
	/* gc lists every dry run anyway: its pass is the whole one, which
	 * also settles what a power loss left unnamed in dryruns/.applying
	 * (a state file and mark lost after the name's removal was kept). */
	int r = recover_pass(store, true, &recovered, err);
	if (r < 0)
		return r;
	apply_recovered_store = store;
	DIR *dir = NULL;
	r = dryruns_open(store, &dir, err);
	if (r < 0 || !dir)
		return r;
	uint64_t now_ms = clock_realtime_ns() / 1000000;
	struct dirent *de;
	while (r == 0 && (de = readdir(dir))) {
		uint64_t id = strtoull(de->d_name, NULL, 10);
		struct stat st;
		if (id == 0 || fstatat(dirfd(dir), de->d_name, &st, 0) < 0)
			continue;
		uint64_t age_ms = now_ms - (uint64_t)st.st_mtim.tv_sec * 1000;
		enum dryrun_state state = DRYRUN_STATE_PENDING;
		/* Its lock, or leave it: a dry run in use is not garbage. */
		cleanup_close int fd =
			openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		/* A file that cannot be read: pending. */
		if (dryrun_dir_peek_state(fd, ".", &state, NULL) < 0)
			state = DRYRUN_STATE_PENDING;
		if (age_ms < older_than_ms || (!include_applied && state == DRYRUN_STATE_APPLIED))
			continue;
		int q = apply_commit_discard(store, id, err);
		if (q < 0) {
			r = q;
			break;
		}
		q = remove_tree_at(dirfd(dir), de->d_name);
		if (q < 0) {
			r = error_set_errno(err, -q, "remove dry run %s", de->d_name);
		} else {
			applymark_remove(store, id);
			++*ret_removed;
		}
	}
	closedir(dir);
	return r;
}

int apply_parse_changeset(const char *text, size_t n, json_t **ret,
			  enum dryrun_verdict *ret_verdict, struct error *err)
{
	return dryrun_dir_parse_changeset(text, n, ret, ret_verdict, err);
}

int apply_parse_journal(char *text, struct applyop_list *ret_ops, char *mark, size_t mark_size,
			struct error *err)
{
	return journal_parse(text, ret_ops, mark, mark_size, err);
}

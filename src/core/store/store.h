/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/store/ledger.h"

/* The state directory (docs/state-dir.md; its paths are built by
 * core/store/statepath.h and nowhere else):
 *	lock		flock()ed while an id is allocated
 *	seq		the last id handed out, fixed-width decimal
 *	receipts/N.json	one receipt per attempt, written atomically
 *	receipts/N.stdout, N.stderr	spilled full streams (--spill)
 *	index.jsonl	one summary line per receipt, appended in order
 *	quarantine/N/	what run N left in the workspace that would run code on
 *			the host, moved aside under its workspace path
 *			(core/host/hostsafety.h)
 *	permits/	permits (core/permit/permit.h): N.json, N.lock, lock, seq
 *	ledger/		the ledger every record is committed to (src/ledger) */
/* Opaque: store_dir_fd(), store_path(), store_durable() and
 * store_receipts_fd() for what callers need. */
struct store;

/* $AIRLOCK_STATE_DIR, else $XDG_STATE_HOME/airlock, else ~/.local/state/airlock.
 * Returns a heap string, or NULL when none can be derived. */
char *store_default_path(void);

/* Opens (creating with mode 0700 when create) the state directory. */
int store_open(const char *path, bool create, struct store **ret, struct error *err);
void store_free(struct store *store);
static inline void store_freep(struct store **s)
{
	store_free(*s);
}

/* What callers outside core/store use of it: the directory's descriptor
 * (paths below it from core/store/statepath.h), its path as given, and
 * whether records are fsynced (the policy's output.fsync_receipts). */
int store_dir_fd(const struct store *store);
const char *store_path(const struct store *store);
bool store_durable(const struct store *store);
/* The receipts/ directory, opened once with the store. */
int store_receipts_fd(const struct store *store);
void store_set_durable(struct store *store, bool durable);

/* The state directory's ledger, which fsyncs as the store does (durable). */
struct ledger *store_ledger(struct store *store);

/* A new id, unique and increasing across concurrent airlock processes:
 * allocated under the lock, skipping any id whose receipt or dry run
 * directory (dryruns/<id>) already exists (a counter that lost its last
 * update in a crash never reissues one). */
int store_allocate_id(struct store *store, uint64_t *ret_id, struct error *err);
/* The same for another kind of record, DIR/<id>.json (DIR below the state
 * directory, created mode 0700): its own counter DIR/seq under DIR/lock,
 * bounded after a reboot by the largest id of the ledger's entries of kind
 * (the records' files are caches of the log, as receipts'). */
int store_allocate_id_in(struct store *store, const char *dir, enum ledger_kind kind,
			 uint64_t *ret_id, struct error *err);

/* The one commit path (docs/ledger.md, "One commit path"): every record
 * airlock keeps (receipt, gate open and close, dry run change set, apply,
 * rollback, approver, permit transition) is written here and nowhere else.
 * Writes data to path, relative to the state directory (NULL: the kind's
 * usual place, receipts/<id>.json for a receipt; the only absolute path
 * allowed is the system approver's, written mode 0644), atomically and
 * durably (temporary file, fsync, rename, fsync of the directory), THEN
 * appends the ledger entry naming kind, id, path and the SHA-256 of data
 * (fdatasync). The append is the commit point: a crash between the two
 * leaves a record the ledger does not back, which readers that check
 * (gate, ack, apply) treat as never written and `airlock ledger verify`
 * reports as unbacked. Without replace an existing file is never replaced
 * (-EEXIST, nothing appended); with it, the file's new bytes are committed
 * (a state that moves on: approver.json, dryruns/<id>/state). A permit's
 * record (replaced) and a receipt have their bytes carried by their entry:
 * its append is the one durable write, the file an unsynced cache of the
 * log (docs/ledger.md, "One commit path"). Any error, including the
 * ledger's (an fsync error poisons it), fails the commit. */
int store_commit(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		 const void *data, size_t n, bool replace, struct error *err);

/* The commits of one command that ask for a checkpoint at once (a human
 * decision or a change of trust, docs/ledger.md "When one is signed") sign
 * one checkpoint at its end instead of one each: from
 * store_checkpoint_defer() to the next store_checkpoint_flush() such a
 * commit appends and syncs its entry as always (durable before the next
 * step acts on it) and leaves the signature owed; the flush signs once if
 * one is owed and ends the deferral (a second defer before it changes
 * nothing, so a command that defers around another's defer and flush is
 * signed by that flush). A crash before the flush leaves entries committed
 * but not yet signed, as any entry after the last checkpoint (signed by
 * the next one). The flush comes before the command reports its result. */
void store_checkpoint_defer(struct store *store);
int store_checkpoint_flush(struct store *store, struct error *err);

/* Commits whose entries the caller acts on only once a later commit's
 * entry is synced share that one sync: from store_sync_defer() to
 * store_sync_resume(), a commit whose record is written before its entry
 * (a replaced record, a change set; not a receipt, whose file is written
 * after) appends its entry without the fdatasync; the next commit that
 * syncs (any after the resume, or a receipt) makes it durable with its
 * own, one fdatasync covering every line before it. A power loss before
 * that sync loses the deferred entries and leaves what a kill before their
 * appends leaves (docs/ledger.md, "Group commit"); a kill loses nothing
 * written. store_sync_flush() ends the deferral and syncs what is still
 * owed; store_checkpoint_flush() flushes first, so a command that reports
 * after its checkpoint flush reports nothing not yet durable. */
void store_sync_defer(struct store *store);
void store_sync_resume(struct store *store);
int store_sync_flush(struct store *store, struct error *err);

/* A replaced record inside the state directory keeps its previous version
 * as .<name>.prev (a hard link made before the rename), so that a crash
 * between the rename and the entry can be undone: store_settle() finds the
 * record at path not backed by the ledger's last entry for it while the
 * previous version is, and puts the previous version back; a first version
 * that no entry names (and no previous one) is removed. The bytes taken
 * away are kept as .<name>.uncommitted (a crash and a forgery look alike).
 * A record whose last entry carries its bytes and whose file is a torn copy
 * of them (a strict prefix, or only NULs: an unsynced cache after a power
 * loss) is written back from the log; any other difference is left for the
 * reader to refuse. Returns 1 when it settled, 0 when there was nothing to
 * settle. For
 * records that move on (permits/<id>.json, dryruns/<id>/state); the caller
 * holds the record's lock, so no commit of it is in flight. */
int store_settle(struct store *store, const char *path, struct error *err);

/* Makes receipt id's cache file (receipts/<id>.json, unsynced, written
 * after its entry's append) ahead of the commit, under a temporary name:
 * its inode's allocation (~0.05-1 ms on ext4 without a journal, which
 * scans past recently deleted inodes) is taken while the command runs, and
 * the commit only writes and renames it. Best effort: without it the
 * commit makes the file itself. A temporary no commit takes goes with the
 * store (store_free); a kill leaves it as a kill inside any file's atomic
 * write does (a dot file, which no reader lists). */
void store_prepare_receipt(struct store *store, uint64_t id);

/* Writes receipts/<id>.json through store_commit(); never replaces one. */
int store_write_receipt(struct store *store, uint64_t id, const char *text, size_t n,
			struct error *err);
int store_append_index(struct store *store, const char *line, struct error *err);

/* The bytes of the record at path (below the state directory), at most max:
 * the file's, or, when it is missing and the record is one whose entry
 * carries its bytes (store_commit()), the bytes the ledger's last entry for
 * path carries when it is of this kind and id (the file is written back as
 * their cache). NUL terminated; their size goes to *ret_n when not NULL.
 * -ENOENT when neither has it. */
int store_read_record(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		      size_t max, char **ret_text, size_t *ret_n, struct error *err);
/* receipts/<id>.json, through store_read_record(). */
int store_read_receipt(struct store *store, uint64_t id, char **ret_text, struct error *err);
int store_read_index(struct store *store, char **ret_text, size_t *ret_size, struct error *err);

/* The index entries, oldest first: only those that did not match their
 * expected exit or left code for the host when failed_only, only the last
 * `last` when last > 0. A
 * torn or damaged line (a crash mid-append) is skipped and counted. */
int store_list(struct store *store, bool failed_only, uint64_t last, json_t **ret_entries,
	       size_t *ret_skipped, struct error *err);

/* receipts/<id>.<stream>: created exclusively for writing, or opened to read. */
int store_open_spill(struct store *store, uint64_t id, const char *stream, bool create, int *ret_fd,
		     struct error *err);

/* quarantine/<id>/, created (mode 0700) for a run's moved-aside files and
 * opened into *ret_fd. */
int store_open_quarantine(struct store *store, uint64_t id, int *ret_fd, struct error *err);

/* permits/, created (mode 0700) when create, opened into *ret_fd; -ENOENT
 * when it does not exist and create is false. */
int store_open_permits(struct store *store, bool create, int *ret_fd, struct error *err);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <linux/limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/store/store.h"

/* A dry run's directory as apply reads it: dryruns/<id>/ locked, its
 * change set parsed and checked, its workspace opened, its state. */

/* A dry run's state, as its last apply, rollback or recovery recorded it
 * (dryrun_dir_set_state()); parsed from its file in one place,
 * dryrun_dir.c. */
enum dryrun_state {
	DRYRUN_STATE_NONE, /* none recorded: never applied, so pending */
	DRYRUN_STATE_PENDING, /* recorded: a recovery undid an apply */
	DRYRUN_STATE_APPLIED,
	DRYRUN_STATE_ROLLED_BACK,
	DRYRUN_STATE_UNKNOWN, /* a state airlock never records (a damaged file) */
};

/* One dry run's directory and the workspace it belongs to. */
struct dryrun_dir {
	struct store *store;
	uint64_t id;
	int fd; /* dryruns/<id> */
	int ws_fd; /* the workspace */
	char *workspace;
	enum dryrun_verdict verdict;
	struct changeset *cs; /* its change set, names as their exact bytes */
	enum changeset_xattrs xattrs; /* which attributes its version carries */
	bool identity; /* its entries carry the whole identity (changeset_carries_identity) */
	/* Never DRYRUN_STATE_NONE: none recorded (or a state file that cannot
	 * be read) is DRYRUN_STATE_PENDING here. */
	enum dryrun_state state;
	char changeset_sha256[SHA256_HEX_SIZE]; /* of changeset.json as read */
	char ws_mismatch[PATH_MAX + 128]; /* set when ws_fd is -1: why the workspace is not opened */
	/* The paths of created and type-changed directories, sorted (strcmp):
	 * what lies below one moves with it (applyplan_covered()). */
	const char **new_dirs;
	size_t n_new_dirs;
};

enum dryrun_dir_lock { DRYRUN_DIR_LOCK_WAIT, DRYRUN_DIR_LOCK_TRY };

int dryrun_dir_parse_changeset(const char *text, size_t n, json_t **ret,
			       enum dryrun_verdict *ret_verdict, struct error *err);
void dryrun_dir_release(struct dryrun_dir *d);
/* A relative path of one or more components, none empty, "." or "..". */
bool dryrun_dir_path_is_clean(const char *p);
bool dryrun_dir_one_of(const char *s, const char *const *set);
/* The workspace root's own change: "." with a mode or attribute change. */
bool dryrun_dir_is_root(const char *path);
/* uid and gid (and old_uid, old_gid) all or none; an owner_changed
 * change, and a chown operation, must have all four. */
bool dryrun_dir_owner_valid(json_t *c, bool required);
uid_t dryrun_dir_id(json_t *c, const char *key);
/* Whether a change is applied in place: mode, attributes or owner. */
bool dryrun_dir_is_meta(const char *change);
/* A change's or an operation's optional attribute lists: both or none;
 * from version 4 (identity) a mode_changed entry lists `xattrs` alone when
 * its attributes did not change. */
bool dryrun_dir_meta_valid(json_t *c, bool required, enum changeset_xattrs which, bool identity);
/* dryruns/<id>/changeset.json's bytes (at most max), NUL terminated: the
 * file, a cache of the dry run's entry, which carries them
 * (store_commit()); or, when the file is missing or a torn copy (an
 * unsynced cache a power loss cut), the entry's (store_read_record(),
 * which writes the cache back). -ENOENT, err set, when neither has them. */
int dryrun_dir_read_changeset(struct store *store, uint64_t id, size_t max, char **ret_text,
			      size_t *ret_n, struct error *err);
/* Whether the ledger backs a change set of dry run id read as bytes whose
 * SHA-256 is sha256: the dry run's entry commits (or carries) them. Asked
 * of the bytes a reader read (dryrun_dir_read_changeset(): the log's for a
 * missing or torn cache), never of the file as it is at the check, so a
 * file swapped in after the read is no way past it. 0, or -EPERM with
 * "the ledger does not back the change set of dry run <id> (<why>):
 * <refusal>; `airlock ledger verify` says more". */
int dryrun_dir_changeset_backed(struct store *store, uint64_t id, const char sha256[SHA256_HEX_SIZE],
				const char *refusal, struct error *err);
/* The state's name as recorded ("pending", "applied", "rolled_back");
 * NULL for DRYRUN_STATE_NONE and DRYRUN_STATE_UNKNOWN. */
const char *dryrun_state_name(enum dryrun_state state);
/* The state for a message: its name, or what stands for none. */
const char *dryrun_state_describe(enum dryrun_state state);
/* Dry run id's state for a reader that only shows it (the report): read
 * as dryrun_dir_open() reads it (a cache a power loss lost is the log's),
 * without its lock and settling nothing. -ENOENT (no message) when the dry
 * run is gone; -EBADMSG a state airlock never records. */
int dryrun_dir_read_state(struct store *store, uint64_t id, enum dryrun_state *ret, struct error *err);
/* For a pass over dry runs that settles nothing itself: the state file of
 * the dry run <name> in the directory open at dir_fd (dryruns/, or "." in
 * the dry run's own directory), read with one read() of one byte more than
 * its cap of 64 bytes; *ret its state (DRYRUN_STATE_UNKNOWN: none airlock
 * records) and, when hex is not NULL, the SHA-256 of its bytes (what the
 * ledger's entry for it commits). -ENOENT when there is none; another
 * -errno (-EFBIG: over the cap) when it cannot be read. */
int dryrun_dir_peek_state(int dir_fd, const char *name, enum dryrun_state *ret,
			  char hex[SHA256_HEX_SIZE]);
/* Opens dryruns/<id> and takes its lock (flock on the directory, held until
 * d is released), then reads it. Every command that reads or changes a dry
 * run holds its lock, so apply, rollback, discard, gc and recovery never
 * interleave on one dry run; a lock held means a live process, so recovery
 * never mistakes an apply in progress for a crash. DRYRUN_DIR_LOCK_TRY: -EAGAIN
 * (no message) when another process holds it. */
int dryrun_dir_open(struct store *store, uint64_t id, enum dryrun_dir_lock lock,
		    struct dryrun_dir *d, struct error *err);
/* The state moves on through the one commit path: DRYRUN_STATE_APPLIED is
 * an apply record, DRYRUN_STATE_ROLLED_BACK (and DRYRUN_STATE_PENDING after
 * a recovery undid an apply) a rollback record; the file holds its name
 * and a newline. -EINVAL for a state that is never recorded. */
int dryrun_dir_set_state(struct dryrun_dir *d, enum dryrun_state state, struct error *err);

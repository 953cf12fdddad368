/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/error.h"
#include "core/snapshot/applyop.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/store/store.h"

/* Applying a dry run's change set to the real workspace, and undoing it
 * (docs/dryrun.md, "Apply, rollback, discard, gc"). Nothing runs: the
 * objects the command made are moved out of the snapshot's upper layer.
 *
 * dryruns/<id>/ holds
 *   upper/           the snapshot's layer: the staged new objects
 *   changeset.json   what the dry run saw (core/snapshot/changeset.h)
 *   backup/N         the old objects an apply replaced or removed
 *   journal          airlock.journal/2: the operations of the last apply,
 *                    then a mark, "committed" or "rolled_back"
 *   state            pending | applied | rolled_back | discarded
 *
 * Each path switches with one rename (or RENAME_EXCHANGE), so it is always
 * entirely old or entirely new. The journal is written and synced before the
 * first operation; an apply that did not reach its "committed" mark (a
 * crash) is rolled back by apply_recover(), which every apply, rollback,
 * discard and gc runs first. It visits the dry runs named in
 * dryruns/.applying (applymark.h), not every one kept. Undo steps inspect the tree (inode numbers,
 * presence) so that running them twice is harmless. */

struct apply_outcome {
	size_t ops; /* operations applied or undone */
	char conflict[1024]; /* set with -EBUSY: what no longer matches; nothing was changed */
};

enum {
	/* Apply a dry run whose verdict is OUTSIDE_WRITE too: the command
	 * attempted writes outside the workspace, and the caller accepts that
	 * only the workspace's part lands. */
	APPLY_ALLOW_OUTSIDE_WRITES = 1 << 0,
	/* The state's entry is synced later by the caller (store_sync_defer):
	 * the dry run's name in dryruns/.applying (the apply under way) is
	 * left for apply_unmark() after that sync. */
	APPLY_LEAVE_MARK = 1 << 1,
};

/* -ENOENT: no such dry run; -EPERM: its verdict or state does not allow it
 * (the message says which), or it belongs to a permit (dryruns/<id>/permit:
 * only apply_changes_reviewed() applies it); -EBUSY: CONFLICT. flags: APPLY_*.
 * Fault points (basic/faultpoint.h): "apply.operation", before each
 * operation on the workspace; "apply.marked", once the dry run is named
 * under way (dryruns/.applying, core/snapshot/applymark.h), before its
 * journal; "apply.committed", once its state is committed, before that name
 * is removed (rollback's too). */
int apply_changes(struct store *store, uint64_t id, unsigned flags, struct apply_outcome *ret,
		  struct error *err);
/* apply_changes(), only when changeset.json, read under the dry run's lock,
 * is the one whose SHA-256 (hex) is changeset_sha256: what a permit's
 * approver reviewed (core/permit/permit.h). -EPERM otherwise. */
int apply_changes_reviewed(struct store *store, uint64_t id, unsigned flags,
			   const char *changeset_sha256, struct apply_outcome *ret, struct error *err);
int apply_rollback(struct store *store, uint64_t id, struct apply_outcome *ret, struct error *err);
/* After APPLY_LEAVE_MARK's sync: the dry run no longer named under way,
 * taken as a recovery pass takes it (its lock tried: one in use keeps its
 * name, which the next pass visits; errors are left to that pass). */
void apply_unmark(struct store *store, uint64_t id);
/* The dry run's state (pending when none is recorded: never
 * DRYRUN_STATE_NONE), read under its lock once whatever a crash left of its
 * apply or rollback is finished. */
int apply_state(struct store *store, uint64_t id, enum dryrun_state *ret, struct error *err);
/* Drops a dry run that was not applied (or was rolled back). */
int apply_discard(struct store *store, uint64_t id, struct error *err);
/* Removes the dry runs last changed more than older_than_ms ago, except one
 * that is applied and younger (its backups are its rollback). */
int apply_gc(struct store *store, uint64_t older_than_ms, bool include_applied, size_t *ret_removed,
	     struct error *err);
/* The parsers of what apply reads back (tests/fuzz/fuzz_apply.c). A change
 * set (airlock.changeset/1 or /2): a known verdict (*ret_verdict), every
 * change has a known change and type and a clean relative path (no "", ".",
 * ".." component), names and targets decoded to their bytes
 * (changeset_decode_bytes). */
int apply_parse_changeset(const char *text, size_t n, json_t **ret,
			  enum dryrun_verdict *ret_verdict, struct error *err);
/* A journal (airlock.journal/1 or /2, text is changed): the operations after the
 * header, each of a known kind with clean paths, and the mark ("" when
 * there is none, else "committed" or "rolled_back" as written). A line
 * that is not JSON (a torn last line) is skipped; an operation that is
 * JSON but not one apply writes is -EINVAL. */
int apply_parse_journal(char *text, struct applyop_list *ret_ops, char *mark, size_t mark_size,
			struct error *err);

/* Rolls back every apply that a crash interrupted: once a process (a
 * second call for the same store returns at once). A dry run whose journal
 * ends in a final mark that its state follows, the state being the one the
 * ledger committed, is passed over without its lock or a parse. */
int apply_recover(struct store *store, size_t *ret_recovered, struct error *err);

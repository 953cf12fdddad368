/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/store/statepath.h"
#include "core/store/store.h"

/* The applies under way (docs/state-dir.md, "Recovery"): dryruns/.applying/
 * names every dry run whose apply or rollback may be unfinished: a hard
 * link of its journal (or, made by the whole pass, an empty file). An apply
 * or rollback makes its name before its first operation, durable with the
 * journal's own sync (applymark_link()), and removes it,
 * unsynced, once its state is committed: a removal a crash lost costs the
 * next recovery pass one visit. The recovery pass lists this directory
 * alone once dryruns/.applying/.complete says every apply under way is
 * named here; a state directory without it (made by an older airlock) gets
 * one whole pass first, which names what it cannot settle and then makes
 * the mark. The directory's name is no number: every lister of dryruns/
 * (this airlock's and older ones) passes over it. */

#define APPLYMARK_DIR	   STATEPATH_APPLYING
#define APPLYMARK_COMPLETE ".complete"

/* dryruns/.applying opened (created when missing) into *ret_fd. Its own
 * name needs no sync: lost, it takes its .complete with it, and the next
 * pass is a whole one. */
int applymark_open(struct store *store, int *ret_fd, struct error *err);
/* dryruns/.applying/<id> made (an existing one kept), in dir_fd
 * (applymark_open()); durable once dir_fd is fsync'ed. */
int applymark_add(int dir_fd, uint64_t id, struct error *err);
/* dryruns/.applying/<id> made a hard link of the journal (name, in
 * journal_dir_fd), replacing an older name: durable with the journal's
 * fsync. On Linux's journaling file systems (ext4, xfs, btrfs) an fsync
 * of a file makes its new links durable (the link is logged with the
 * inode's change the fsync forces; xfstests generic/041, generic/498
 * check it), so the name costs no sync of its own. */
int applymark_link(int journal_dir_fd, const char *name, int dir_fd, uint64_t id, struct error *err);
/* dryruns/.applying/<id> removed; a failure is ignored (the next pass visits
 * it again). Called with the dry run's lock held: a marker is never removed
 * from under an apply that is making one. */
void applymark_remove(struct store *store, uint64_t id);
/* Whether dir_fd (dryruns/.applying) names every apply under way. */
bool applymark_complete(int dir_fd);
/* The mark applymark_complete() reads, made unsynced: lost, it costs one
 * more whole pass. */
int applymark_set_complete(int dir_fd, struct error *err);

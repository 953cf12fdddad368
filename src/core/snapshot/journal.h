/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "core/snapshot/applyop.h"
#include "core/snapshot/dryrun_dir.h"

/* The journal of an apply (dryruns/<id>/journal): its operations, then a
 * mark; read back to finish what a crash left. */

/* The journal's text (changed) read: its operations, each checked and read
 * by applyop_from_json(), and its mark. */
int journal_parse(char *text, struct applyop_list *ret_ops, char *mark, size_t mark_size,
		  struct error *err);
/* A mark appended to the journal; synced when sync (the apply's
 * "committed" mark is not: the state's ledger entry after it commits the
 * apply, recover_locked()). */
int journal_append(int dir_fd, const char *text, bool sync, struct error *err);
/* A mark appended to the journal and synced, the journal linked first as
 * dryruns/.applying/<id> in mark_fd (applymark_link()): the rollback's
 * "rolling_back"; mark_fd is synced after it for the name. */
int journal_append_marked(struct dryrun_dir *d, const char *text, int mark_fd, struct error *err);
/* A new journal: its header, then one line per operation
 * (applyop_to_json(), names encoded), synced; linked first as
 * dryruns/.applying/<id> in mark_fd (applymark_link()), which is synced
 * after the journal for the name. */
int journal_write(struct dryrun_dir *d, const struct applyop_list *ops, int mark_fd, struct error *err);
/* The operations of the journal, and its mark ("" when there is none). */
int journal_read(struct dryrun_dir *d, struct applyop_list *ret_ops, char *mark, size_t mark_size,
		 struct error *err);
int journal_undo_all(struct dryrun_dir *d, const struct applyop_list *ops, size_t *ret_ops,
		     struct error *err);

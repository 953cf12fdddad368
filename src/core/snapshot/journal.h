/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "basic/error.h"
#include "core/snapshot/dryrun_dir.h"

/* The journal of an apply (dryruns/<id>/journal): its operations, then a
 * mark; read back to finish what a crash left. */

int journal_parse(char *text, json_t **ret_ops, char *mark, size_t mark_size, struct error *err);
int journal_append(int dir_fd, const char *text, struct error *err);
int journal_write(struct dryrun_dir *d, json_t *ops, struct error *err);
/* The operations of the journal, and its mark ("" when there is none). */
int journal_read(struct dryrun_dir *d, json_t **ret_ops, char *mark, size_t mark_size,
		 struct error *err);
int journal_undo_all(struct dryrun_dir *d, json_t *ops, size_t *ret_ops, struct error *err);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "core/snapshot/dryrun_dir.h"

/* Doing and undoing one planned operation on the workspace. */

int applyop_do(struct dryrun_dir *d, json_t *op);
/* Undo by inspection: each step checks whether it happened, so an undo of
 * an operation that never ran, or ran halfway, is right too. */
int applyop_undo(struct dryrun_dir *d, json_t *op);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/snapshot/applyop.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/store/store.h"

/* A dry run for a reader that only shows it (the report's diffs): its
 * state, and where each side of a file's change is kept, read without its
 * lock and settling nothing. The reader names no file of dryruns/<id>:
 * the directory's layout stays core/snapshot's. */

struct dryrun_view {
	int dir_fd; /* dryruns/<id> */
	int ws_fd; /* the workspace, or -1 */
	int upper_fd; /* its upper layer, or -1 */
	/* dryrun_dir_read_state()'s; DRYRUN_STATE_NONE too when it refuses one */
	enum dryrun_state state;
	struct applyop_list ops; /* applied: the journal's operations */
};

/* Where one side of a file's change is kept: a path below an open
 * directory, to be opened beneath it (fd_open_beneath()). */
struct dryrun_view_place {
	int dir_fd;
	const char *path;
};

/* Opens dry run id's directory and reads its state: 0, or the -errno of
 * the directory's open (gone: gc or discard). */
int dryrun_view_open(struct store *store, uint64_t id, struct dryrun_view *ret);
/* Opens what the sides are read from: workspace (the change set's, or
 * NULL), the upper layer, and, for an applied dry run, the journal's
 * operations (at most 64 MiB of it read). What cannot be opened or read
 * keeps no side: dryrun_view_old() and dryrun_view_new() say so. */
void dryrun_view_open_contents(struct dryrun_view *v, const char *workspace);
/* The old content of path, a file the change set names (modified or
 * deleted): once applied, the backup the journal moved it to; before, the
 * workspace's. false when it is no longer kept. */
bool dryrun_view_old(const struct dryrun_view *v, const char *path, struct dryrun_view_place *ret);
/* The new content of path (created or modified): once applied, the
 * workspace's; before, the upper layer's. false when it is no longer
 * kept. */
bool dryrun_view_new(const struct dryrun_view *v, const char *path, struct dryrun_view_place *ret);
void dryrun_view_release(struct dryrun_view *v);

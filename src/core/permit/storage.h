/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/permit/record.h"
#include "core/store/store.h"

/* Permits in the state directory: permits/<id>.json, its lock, the one
 * commit path of a transition. */

/* The largest permit record read. */
#define PERMIT_RECORD_MAX (16 << 20)

/* The one commit path of a permit: sets p's state to `to`, appends
 * {at, from, to, event} and the members of detail (may be NULL) to its
 * history, renames the new permits/<id>.json over the old one and commits
 * it by its ledger entry, which carries the record's bytes (store_commit():
 * the entry's fdatasync is the one durable write; the file is a cache of
 * the log). A transition the state machine does not allow is -EPERM and
 * writes nothing. */
int permit_commit_transition(struct store *store, struct permit *p, enum permit_state to,
			     const char *event, json_t *detail, struct error *err);

/* Permit id's record: the file, or, when it is missing, the bytes its
 * last entry carries (store_read_record()). */
int permit_load(struct store *store, uint64_t id, struct permit *ret, struct error *err);
/* Every permit's record, oldest first; a damaged record is counted. */
int permit_list(struct store *store, struct permit **ret, size_t *ret_n, size_t *ret_damaged,
		struct error *err);

int permit_open_dir(struct store *store, bool create, int *ret_fd, struct error *err);
/* Holds permits/<id>.lock for the caller's whole step. */
int permit_lock(int dir_fd, uint64_t id, int *ret_fd, struct error *err);
int permit_load_at(int dir_fd, uint64_t id, struct permit *ret, struct error *err);

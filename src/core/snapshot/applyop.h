/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_dir.h"

/* One planned operation of an apply (applyplan.h), as the journal holds it
 * (dryruns/<id>/journal): one reader, applyop_from_json(), and one writer,
 * applyop_to_json(); JSON only at the journal file. Doing and undoing it
 * on the workspace. */

enum applyop_kind {
	APPLYOP_RENAME,
	APPLYOP_BACKUP,
	APPLYOP_CREATE,
	APPLYOP_EXCHANGE,
	APPLYOP_CHMOD,
	APPLYOP_XATTRS,
	APPLYOP_CHOWN,
	_APPLYOP_KIND_MAX,
};

struct applyop {
	enum applyop_kind kind;
	/* Exact bytes: path (every kind), from (rename), staged (create,
	 * exchange), backup (backup, exchange); NULL when the kind has none. */
	char *path, *from, *staged, *backup;
	/* chmod: the mode it sets; any other kind: the mode recorded where
	 * the operation may lift the owner's write bit (struct applyfs_lift). */
	bool has_mode;
	mode_t mode;
	mode_t old_mode; /* chmod */
	uid_t uid, old_uid; /* chown */
	gid_t gid, old_gid;
	/* xattrs: the whole lists of carried attributes after and before
	 * (names as their exact bytes) */
	struct changeset_xattr_list xattrs, old_xattrs;
	int64_t new_ino; /* exchange: the staged object's inode */
};

struct applyop_list {
	struct applyop *items;
	size_t n;
};

/* "rename", ...: the journal's names; NULL out of range. */
const char *applyop_kind_name(enum applyop_kind kind);
/* An operation read back from the journal, checked (journal_parse()), its
 * names decoded (changeset_decode_bytes()). */
int applyop_from_json(json_t *o, struct applyop *ret);
/* Its journal line's object, names as raw bytes (the journal encodes
 * them); NULL when out of memory. */
json_t *applyop_to_json(const struct applyop *op);
/* A new zeroed operation at the end of list; NULL when out of memory. */
struct applyop *applyop_list_add(struct applyop_list *list, enum applyop_kind kind);
void applyop_list_release(struct applyop_list *list);

int applyop_do(struct dryrun_dir *d, const struct applyop *op);
/* Undo by inspection: each step checks whether it happened, so an undo of
 * an operation that never ran, or ran halfway, is right too. */
int applyop_undo(struct dryrun_dir *d, const struct applyop *op);

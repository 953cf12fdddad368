/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/dryrun_verdict.h"

/* The change set (changeset.json, docs/dryrun.md) as a C type: one reader,
 * changeset_from_json(), that checks it (strict types, bounded), and one
 * writer, changeset_to_json(). JSON exists only at the file and the wire.
 *
 * The file's bytes are what a permit reviewed and what apply checks
 * (changeset_sha256), so the writer gives back the very document the reader
 * took: every object remembers the order of its keys (the writer's order of
 * insertion), a name shown with U+FFFD beside its _b64 keeps the shown
 * string, and an entry's or the document's keys this version does not know
 * are kept as they were (extra). */

enum changeset_change {
	CHANGESET_CREATED,
	CHANGESET_MODIFIED,
	CHANGESET_DELETED,
	CHANGESET_TYPE_CHANGED,
	CHANGESET_MODE_CHANGED,
	CHANGESET_XATTRS_CHANGED,
	CHANGESET_OWNER_CHANGED,
	CHANGESET_RENAMED, /* read from older change sets only */
	_CHANGESET_CHANGE_MAX,
};

enum changeset_file_type {
	CHANGESET_TYPE_FILE,
	CHANGESET_TYPE_DIR,
	CHANGESET_TYPE_SYMLINK,
	CHANGESET_TYPE_FIFO,
	CHANGESET_TYPE_SOCKET,
	CHANGESET_TYPE_OTHER,
	_CHANGESET_TYPE_MAX,
};

/* Every key any object of a change set holds; an object's `keys` lists
 * the ones it has, in the order they are written. */
enum changeset_key {
	CHANGESET_KEY_PATH,
	CHANGESET_KEY_PATH_B64,
	CHANGESET_KEY_CHANGE,
	CHANGESET_KEY_TYPE,
	CHANGESET_KEY_OLD_TYPE,
	CHANGESET_KEY_SIZE,
	CHANGESET_KEY_SHA256,
	CHANGESET_KEY_OLD_SIZE,
	CHANGESET_KEY_OLD_SHA256,
	CHANGESET_KEY_MODE,
	CHANGESET_KEY_OLD_MODE,
	CHANGESET_KEY_XATTRS,
	CHANGESET_KEY_OLD_XATTRS,
	CHANGESET_KEY_FROM,
	CHANGESET_KEY_FROM_B64,
	CHANGESET_KEY_TARGET,
	CHANGESET_KEY_TARGET_B64,
	CHANGESET_KEY_OLD_TARGET,
	CHANGESET_KEY_OLD_TARGET_B64,
	CHANGESET_KEY_ENTRIES,
	CHANGESET_KEY_HARD_LINK,
	CHANGESET_KEY_UID,
	CHANGESET_KEY_GID,
	CHANGESET_KEY_OLD_UID,
	CHANGESET_KEY_OLD_GID,
	CHANGESET_KEY_LINK_SPLIT,
	CHANGESET_KEY_LINK_TO,
	CHANGESET_KEY_LINK_TO_B64,
	CHANGESET_KEY_ALSO_NAMES,
	CHANGESET_KEY_ALSO_OUTSIDE,
	CHANGESET_KEY_REFUSED,
	/* an attribute: */
	CHANGESET_KEY_NAME,
	CHANGESET_KEY_NAME_B64,
	CHANGESET_KEY_BASE64,
	/* the document: */
	CHANGESET_KEY_SCHEMA,
	CHANGESET_KEY_RECEIPT,
	CHANGESET_KEY_WORKSPACE,
	CHANGESET_KEY_WORKSPACE_DEV,
	CHANGESET_KEY_WORKSPACE_INO,
	CHANGESET_KEY_VERDICT,
	CHANGESET_KEY_CHANGES,
	CHANGESET_KEY_SCRATCH,
	/* scratch: */
	CHANGESET_KEY_SCRATCH_ENTRIES,
	CHANGESET_KEY_SCRATCH_BYTES,
	/* the next key of the object's extra */
	CHANGESET_KEY_EXTRA,
	_CHANGESET_KEY_MAX,
};

#define CHANGESET_KEYS_MAX 48

struct changeset_keys {
	uint8_t order[CHANGESET_KEYS_MAX];
	uint8_t n;
};

/* A name or a link target: its exact bytes (no NUL); shown is the plain
 * key's value when the bytes came from key_b64 (NULL: the writer makes it
 * from the bytes, changeset_set_bytes()). */
struct changeset_bytes {
	char *bytes;
	char *shown;
};

struct changeset_xattr {
	struct changeset_keys keys;
	struct changeset_bytes name;
	char *base64;
};

struct changeset_xattr_list {
	struct changeset_xattr *items;
	size_t n;
};

struct changeset_name {
	struct changeset_keys keys;
	struct changeset_bytes path;
};

/* One change (changeset.h lists the keys); a member is set when its key is
 * in keys (changeset_entry_has()). */
struct changeset_entry {
	struct changeset_keys keys;
	json_t *extra; /* keys this version does not know, in order; NULL: none */
	enum changeset_change change;
	enum changeset_file_type type, old_type;
	struct changeset_bytes path, from, target, old_target, link_to;
	int64_t size, old_size, entries, also_outside;
	char *sha256, *old_sha256, *refused;
	mode_t mode, old_mode;
	struct changeset_xattr_list xattrs, old_xattrs;
	bool hard_link, link_split;
	uid_t uid, old_uid;
	gid_t gid, old_gid;
	struct changeset_name *also_names;
	size_t n_also_names;
};

struct changeset {
	struct changeset_keys keys;
	json_t *extra;
	char *schema;
	int64_t receipt;
	char *workspace;
	int64_t workspace_dev, workspace_ino;
	enum dryrun_verdict verdict;
	struct changeset_keys scratch_keys;
	int64_t scratch_entries, scratch_bytes;
	struct changeset_entry *entries;
	size_t n_entries;
	/* what the schema says (changeset_xattrs_of, changeset_carries_identity) */
	enum changeset_xattrs xattrs;
	bool identity;
};

/* A relative path of one or more components, none empty, "." or "..". */
bool changeset_path_is_clean(const char *p);
bool changeset_keys_has(const struct changeset_keys *keys, enum changeset_key key);
static inline bool changeset_entry_has(const struct changeset_entry *e, enum changeset_key key)
{
	return changeset_keys_has(&e->keys, key);
}

const char *changeset_change_name(enum changeset_change change);
const char *changeset_file_type_name(enum changeset_file_type type);
/* Whether a change is applied in place: mode, attributes or owner. */
bool changeset_change_is_meta(enum changeset_change change);

/* Reads and checks a change set document (what dryrun_dir_open() reads):
 * -EINVAL with the reason ("its change set is damaged (change N)", "... of
 * an unknown version", ...) when it is not one apply may act on. Paths and
 * targets are then the exact bytes: clean relative paths (but the root's
 * own "." mode or attribute change), of the kinds apply knows. */
int changeset_from_json(json_t *doc, struct changeset **ret, struct error *err);
/* changeset_from_json() of a change set's text (changeset.json). */
int changeset_parse(const char *text, size_t n, struct changeset **ret, struct error *err);
/* The document: to_json(from_json(x)) dumps (jsonutil_dump_line) to the
 * very bytes x dumps to. */
json_t *changeset_to_json(const struct changeset *cs);
/* One entry of the document's "changes", as changeset_to_json() writes it
 * (a receipt shows the first ones). */
json_t *changeset_entry_to_json(const struct changeset_entry *e);
/* An attribute list as changeset_read_xattrs() gives it: [{name (the
 * exact bytes, unchecked), base64}], for an apply's operations. */
json_t *changeset_xattr_list_to_json(const struct changeset_xattr_list *list);
/* Whether have (changeset_read_xattrs()) is exactly the list. */
bool changeset_xattr_list_equal(const struct changeset_xattr_list *list, json_t *have);
/* The verdict of a dry run, in this order of precedence:
 *   DRY_RUN_FAILED         the command did not succeed
 *   NO_EFFECT              nothing changed
 *   PRIVILEGED_FILE        a change is `refused` (set-id or capability),
 *                          declared or not
 *   UNEXPECTED_PATH        a change no pattern declares; deletions (and the
 *                          source of a rename) need a --expect-delete pattern
 *   EXPECTED_PATH_MISSING  a declared pattern that no change matched
 *   DRY_RUN_OK
 * ret_problems lists the refused changes ({refused, change, reason}), or the
 * unexpected paths, then the missing patterns. Names are matched as the
 * change set shows them (U+FFFD for a byte that is not UTF-8). */
enum dryrun_verdict changeset_verdict(const struct changeset *cs, bool succeeded, char *const *expect,
				      char *const *expect_delete, json_t **ret_problems);
/* changeset_verdict() of a change set read back: names are matched as
 * their exact bytes. */
enum dryrun_verdict changeset_verdict_of(const struct changeset *cs, bool succeeded,
					 char *const *expect, char *const *expect_delete,
					 json_t **ret_problems);
/* Editing a change set in memory (the hard-link groups, linkgroups.c).
 * Keys keep a JSON object's order: a key set anew goes last, one set again
 * keeps its place, one unset and set again goes last; the member is the
 * caller's to fill. Unsetting XATTRS or OLD_XATTRS frees the list. */
int changeset_entry_key_set(struct changeset_entry *e, enum changeset_key key);
void changeset_entry_key_unset(struct changeset_entry *e, enum changeset_key key);
/* PATH or LINK_TO from the exact bytes, as changeset_set_bytes() stores
 * them (key_b64 after the plain key when they are not UTF-8). */
int changeset_entry_set_bytes(struct changeset_entry *e, enum changeset_key key, const char *bytes);
/* One more name in also_names, stored the same way (the caller sets the
 * ALSO_NAMES key). */
int changeset_entry_add_name(struct changeset_entry *e, const char *bytes);
/* A list as changeset_read_xattrs() gives it (names as raw bytes). */
int changeset_xattr_list_from_raw(json_t *raw, struct changeset_xattr_list *ret);
int changeset_xattr_list_copy(const struct changeset_xattr_list *from, struct changeset_xattr_list *to);
void changeset_xattr_list_release(struct changeset_xattr_list *list);
/* A new empty entry at the end; NULL when out of memory. It (and every
 * other entry) moves on the next addition: hold indices, not pointers. */
struct changeset_entry *changeset_add_entry(struct changeset *cs);
/* The entries sorted by path as the document shows it (strcmp), ties in
 * their order. */
int changeset_sort(struct changeset *cs);
void changeset_free(struct changeset *cs);
void changeset_freep(struct changeset **cs);

/* SPDX-License-Identifier: MIT */
#include "core/snapshot/changeset_json.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/store/jsonutil.h"

/* A path is at most CHANGESET_MAX_DEPTH names below the workspace; an
 * attribute's name XATTR_NAME_MAX bytes and its value XATTR_SIZE_MAX. */
#define CHANGESET_JSON_PATH_MAX	  ((size_t)(CHANGESET_MAX_DEPTH + 2) * 256)
#define CHANGESET_JSON_NAME_MAX	  255
#define CHANGESET_JSON_BASE64_MAX (((size_t)65536 + 2) / 3 * 4)
#define CHANGESET_JSON_STRING_MAX 4096

static const char *const changeset_json_keys[_CHANGESET_KEY_MAX] = {
	[CHANGESET_KEY_PATH] = "path",
	[CHANGESET_KEY_PATH_B64] = "path_b64",
	[CHANGESET_KEY_CHANGE] = "change",
	[CHANGESET_KEY_TYPE] = "type",
	[CHANGESET_KEY_OLD_TYPE] = "old_type",
	[CHANGESET_KEY_SIZE] = "size",
	[CHANGESET_KEY_SHA256] = "sha256",
	[CHANGESET_KEY_OLD_SIZE] = "old_size",
	[CHANGESET_KEY_OLD_SHA256] = "old_sha256",
	[CHANGESET_KEY_MODE] = "mode",
	[CHANGESET_KEY_OLD_MODE] = "old_mode",
	[CHANGESET_KEY_XATTRS] = "xattrs",
	[CHANGESET_KEY_OLD_XATTRS] = "old_xattrs",
	[CHANGESET_KEY_FROM] = "from",
	[CHANGESET_KEY_FROM_B64] = "from_b64",
	[CHANGESET_KEY_TARGET] = "target",
	[CHANGESET_KEY_TARGET_B64] = "target_b64",
	[CHANGESET_KEY_OLD_TARGET] = "old_target",
	[CHANGESET_KEY_OLD_TARGET_B64] = "old_target_b64",
	[CHANGESET_KEY_ENTRIES] = "entries",
	[CHANGESET_KEY_HARD_LINK] = "hard_link",
	[CHANGESET_KEY_UID] = "uid",
	[CHANGESET_KEY_GID] = "gid",
	[CHANGESET_KEY_OLD_UID] = "old_uid",
	[CHANGESET_KEY_OLD_GID] = "old_gid",
	[CHANGESET_KEY_LINK_SPLIT] = "link_split",
	[CHANGESET_KEY_LINK_TO] = "link_to",
	[CHANGESET_KEY_LINK_TO_B64] = "link_to_b64",
	[CHANGESET_KEY_ALSO_NAMES] = "also_names",
	[CHANGESET_KEY_ALSO_OUTSIDE] = "also_outside",
	[CHANGESET_KEY_REFUSED] = "refused",
	[CHANGESET_KEY_NAME] = "name",
	[CHANGESET_KEY_NAME_B64] = "name_b64",
	[CHANGESET_KEY_BASE64] = "base64",
	[CHANGESET_KEY_SCHEMA] = "schema",
	[CHANGESET_KEY_RECEIPT] = "receipt",
	[CHANGESET_KEY_WORKSPACE] = "workspace",
	[CHANGESET_KEY_WORKSPACE_DEV] = "workspace_dev",
	[CHANGESET_KEY_WORKSPACE_INO] = "workspace_ino",
	[CHANGESET_KEY_VERDICT] = "verdict",
	[CHANGESET_KEY_CHANGES] = "changes",
	[CHANGESET_KEY_SCRATCH] = "scratch",
	[CHANGESET_KEY_SCRATCH_ENTRIES] = "entries",
	[CHANGESET_KEY_SCRATCH_BYTES] = "bytes",
};

static const char *const changeset_json_changes[_CHANGESET_CHANGE_MAX] = {
	[CHANGESET_CREATED] = "created",
	[CHANGESET_MODIFIED] = "modified",
	[CHANGESET_DELETED] = "deleted",
	[CHANGESET_TYPE_CHANGED] = "type_changed",
	[CHANGESET_MODE_CHANGED] = "mode_changed",
	[CHANGESET_XATTRS_CHANGED] = "xattrs_changed",
	[CHANGESET_OWNER_CHANGED] = "owner_changed",
	[CHANGESET_RENAMED] = "renamed",
};

static const char *const changeset_json_types[_CHANGESET_TYPE_MAX] = {
	[CHANGESET_TYPE_FILE] = "file",	      [CHANGESET_TYPE_DIR] = "dir",
	[CHANGESET_TYPE_SYMLINK] = "symlink", [CHANGESET_TYPE_FIFO] = "fifo",
	[CHANGESET_TYPE_SOCKET] = "socket",   [CHANGESET_TYPE_OTHER] = "other",
};

const char *changeset_change_name(enum changeset_change change)
{
	return (unsigned)change < _CHANGESET_CHANGE_MAX ? changeset_json_changes[change] : NULL;
}

const char *changeset_file_type_name(enum changeset_file_type type)
{
	return (unsigned)type < _CHANGESET_TYPE_MAX ? changeset_json_types[type] : NULL;
}

bool changeset_change_is_meta(enum changeset_change change)
{
	return change == CHANGESET_MODE_CHANGED || change == CHANGESET_XATTRS_CHANGED ||
	       change == CHANGESET_OWNER_CHANGED;
}

static int changeset_json_lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return (int)i;
	return -1;
}

bool changeset_keys_has(const struct changeset_keys *keys, enum changeset_key key)
{
	for (size_t i = 0; i < keys->n; i++)
		if (keys->order[i] == key)
			return true;
	return false;
}

static int changeset_json_keys_add(struct changeset_keys *keys, enum changeset_key key)
{
	if (key != CHANGESET_KEY_EXTRA && changeset_keys_has(keys, key))
		return 0;
	if (keys->n >= CHANGESET_KEYS_MAX)
		return -EINVAL;
	keys->order[keys->n++] = (uint8_t)key;
	return 0;
}

/* Which key of first..last name is. */
static int changeset_json_key_of(const char *name, enum changeset_key first, enum changeset_key last)
{
	for (int k = first; k <= (int)last; k++)
		if (changeset_json_keys[k] && !strcmp(name, changeset_json_keys[k]))
			return k;
	return -1;
}

static const char *changeset_json_string(json_t *v, size_t max)
{
	if (!json_is_string(v) || json_string_length(v) > max)
		return NULL;
	return json_string_value(v);
}

static int changeset_json_strdup(json_t *v, size_t max, char **ret)
{
	const char *s = changeset_json_string(v, max);

	if (!s)
		return -EINVAL;
	/* a NUL inside is never a name, a hash or a mode */
	if (strlen(s) != json_string_length(v))
		return -EINVAL;
	free(*ret);
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int changeset_json_int(json_t *v, int64_t *ret)
{
	if (!json_is_integer(v))
		return -EINVAL;
	*ret = json_integer_value(v);
	return 0;
}

/* The plain key of a name: its value is shown, its bytes unless key_b64
 * gives them. */
static int changeset_json_bytes_plain(json_t *v, size_t max, struct changeset_bytes *b)
{
	if (b->bytes) /* from key_b64, read first: the value is only shown */
		return changeset_json_strdup(v, max * 3 + 3, &b->shown);
	return changeset_json_strdup(v, max, &b->bytes);
}

/* key_b64: the exact bytes (changeset_decode_bytes()); a plain key read
 * before is the shown value. */
static int changeset_json_bytes_b64(json_t *v, size_t max, struct changeset_bytes *b)
{
	size_t n;
	const char *text = changeset_json_string(v, (max + 2) / 3 * 4 + 4);

	if (!text)
		return -EINVAL;
	cleanup_free char *bytes = base64_decode(text, &n);
	if (!bytes || n == 0 || n > max || memchr(bytes, '\0', n))
		return -EINVAL;
	free(b->shown);
	b->shown = b->bytes; /* the plain key's value, when it came first */
	b->bytes = TAKE_PTR(bytes);
	return 0;
}

static void changeset_json_bytes_free(struct changeset_bytes *b)
{
	free(b->bytes);
	free(b->shown);
}

/* key and key_b64 of a name as changeset_set_bytes() writes them: shown,
 * when kept, is written as it was read. */
static int changeset_json_set_bytes(json_t *obj, enum changeset_key key,
				    const struct changeset_bytes *b, bool b64)
{
	const char *name = changeset_json_keys[key];

	if (!b->bytes)
		return -EINVAL;
	size_t n = strlen(b->bytes);
	if (b64) {
		cleanup_free char *text = base64_encode(b->bytes, n);
		return !text || json_object_set_new(obj, name, json_string(text)) < 0 ? -ENOMEM : 0;
	}
	if (b->shown)
		return json_object_set_new(obj, name, json_string(b->shown)) < 0 ? -ENOMEM : 0;
	if (utf8_is_valid(b->bytes, n))
		return json_object_set_new(obj, name, json_string(b->bytes)) < 0 ? -ENOMEM : 0;
	size_t clean_n;
	cleanup_free char *clean = utf8_sanitize(b->bytes, n, &clean_n);
	return !clean || json_object_set_new(obj, name, json_stringn(clean, clean_n)) < 0 ? -ENOMEM
											  : 0;
}

static int changeset_json_read_xattrs(json_t *list, struct changeset_xattr_list *ret)
{
	size_t i;
	json_t *x;

	if (!json_is_array(list))
		return -EINVAL;
	ret->items = calloc(json_array_size(list) + 1, sizeof(*ret->items));
	if (!ret->items)
		return -ENOMEM;
	json_array_foreach(list, i, x) {
		struct changeset_xattr *a = &ret->items[ret->n++];
		const char *key;
		json_t *v;
		if (!json_is_object(x))
			return -EINVAL;
		json_object_foreach(x, key, v) {
			int k = changeset_json_key_of(key, CHANGESET_KEY_NAME, CHANGESET_KEY_BASE64), r;
			if (k < 0)
				return -EINVAL;
			if (k == CHANGESET_KEY_NAME)
				r = changeset_json_bytes_plain(v, CHANGESET_JSON_NAME_MAX, &a->name);
			else if (k == CHANGESET_KEY_NAME_B64)
				r = changeset_json_bytes_b64(v, CHANGESET_JSON_NAME_MAX, &a->name);
			else
				r = changeset_json_strdup(v, CHANGESET_JSON_BASE64_MAX, &a->base64);
			if (r < 0 || changeset_json_keys_add(&a->keys, (enum changeset_key)k) < 0)
				return r < 0 ? r : -EINVAL;
		}
	}
	return 0;
}

static json_t *changeset_json_write_xattrs(const struct changeset_xattr_list *list)
{
	cleanup_with(json_decrefp) json_t *array = json_array();

	for (size_t i = 0; array && i < list->n; i++) {
		const struct changeset_xattr *a = &list->items[i];
		json_t *x = json_object();
		if (!x || json_array_append_new(array, x) < 0)
			return NULL;
		for (size_t k = 0; k < a->keys.n; k++) {
			int r;
			if (a->keys.order[k] == CHANGESET_KEY_BASE64)
				r = json_object_set_new(x, "base64",
							json_string(a->base64 ? a->base64 : "")) < 0
					    ? -ENOMEM
					    : 0;
			else
				r = changeset_json_set_bytes(x, a->keys.order[k], &a->name,
							     a->keys.order[k] == CHANGESET_KEY_NAME_B64);
			if (r < 0)
				return NULL;
		}
	}
	return TAKE_PTR(array);
}

static void changeset_json_xattrs_free(struct changeset_xattr_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		changeset_json_bytes_free(&list->items[i].name);
		free(list->items[i].base64);
	}
	free(list->items);
}

static int changeset_json_read_names(json_t *list, struct changeset_entry *e)
{
	size_t i;
	json_t *o;

	if (!json_is_array(list))
		return -EINVAL;
	e->also_names = calloc(json_array_size(list) + 1, sizeof(*e->also_names));
	if (!e->also_names)
		return -ENOMEM;
	json_array_foreach(list, i, o) {
		struct changeset_name *name = &e->also_names[e->n_also_names++];
		const char *key;
		json_t *v;
		if (!json_is_object(o))
			return -EINVAL;
		json_object_foreach(o, key, v) {
			int k = changeset_json_key_of(key, CHANGESET_KEY_PATH, CHANGESET_KEY_PATH_B64),
			    r;
			if (k < 0)
				return -EINVAL;
			r = k == CHANGESET_KEY_PATH
				    ? changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &name->path)
				    : changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &name->path);
			if (r < 0 || changeset_json_keys_add(&name->keys, (enum changeset_key)k) < 0)
				return r < 0 ? r : -EINVAL;
		}
	}
	return 0;
}

static int changeset_json_mode(json_t *v, mode_t *ret)
{
	const char *m = changeset_json_string(v, 4);

	if (!m || strlen(m) != 4 || strspn(m, "01234567") != 4)
		return -EINVAL;
	*ret = (mode_t)strtoul(m, NULL, 8);
	return 0;
}

static int changeset_json_id(json_t *v, uint32_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) >= (json_int_t)UINT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)json_integer_value(v);
	return 0;
}

static int changeset_json_enum(json_t *v, const char *const *names, size_t n, int *ret)
{
	int i = changeset_json_lookup(names, n, changeset_json_string(v, 32));

	if (i < 0)
		return -EINVAL;
	*ret = i;
	return 0;
}

static int changeset_json_read_key(struct changeset_entry *e, enum changeset_key k, json_t *v)
{
	int r, i = 0;
	uint32_t id = 0;

	switch (k) {
	case CHANGESET_KEY_PATH:
		return changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &e->path);
	case CHANGESET_KEY_PATH_B64:
		return changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &e->path);
	case CHANGESET_KEY_FROM:
		return changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &e->from);
	case CHANGESET_KEY_FROM_B64:
		return changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &e->from);
	case CHANGESET_KEY_TARGET:
		return changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &e->target);
	case CHANGESET_KEY_TARGET_B64:
		return changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &e->target);
	case CHANGESET_KEY_OLD_TARGET:
		return changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &e->old_target);
	case CHANGESET_KEY_OLD_TARGET_B64:
		return changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &e->old_target);
	case CHANGESET_KEY_LINK_TO:
		return changeset_json_bytes_plain(v, CHANGESET_JSON_PATH_MAX, &e->link_to);
	case CHANGESET_KEY_LINK_TO_B64:
		return changeset_json_bytes_b64(v, CHANGESET_JSON_PATH_MAX, &e->link_to);
	case CHANGESET_KEY_CHANGE:
		r = changeset_json_enum(v, changeset_json_changes, _CHANGESET_CHANGE_MAX, &i);
		e->change = (enum changeset_change)i;
		return r;
	case CHANGESET_KEY_TYPE:
		r = changeset_json_enum(v, changeset_json_types, _CHANGESET_TYPE_MAX, &i);
		e->type = (enum changeset_file_type)i;
		return r;
	case CHANGESET_KEY_OLD_TYPE:
		r = changeset_json_enum(v, changeset_json_types, _CHANGESET_TYPE_MAX, &i);
		e->old_type = (enum changeset_file_type)i;
		return r;
	case CHANGESET_KEY_SIZE:
		return changeset_json_int(v, &e->size);
	case CHANGESET_KEY_OLD_SIZE:
		return changeset_json_int(v, &e->old_size);
	case CHANGESET_KEY_ENTRIES:
		return changeset_json_int(v, &e->entries);
	case CHANGESET_KEY_ALSO_OUTSIDE:
		return changeset_json_int(v, &e->also_outside);
	case CHANGESET_KEY_SHA256:
		return changeset_json_strdup(v, SHA256_HEX_SIZE - 1, &e->sha256);
	case CHANGESET_KEY_OLD_SHA256:
		return changeset_json_strdup(v, SHA256_HEX_SIZE - 1, &e->old_sha256);
	case CHANGESET_KEY_REFUSED:
		return changeset_json_strdup(v, 32, &e->refused);
	case CHANGESET_KEY_MODE:
		return changeset_json_mode(v, &e->mode);
	case CHANGESET_KEY_OLD_MODE:
		return changeset_json_mode(v, &e->old_mode);
	case CHANGESET_KEY_XATTRS:
		return changeset_json_read_xattrs(v, &e->xattrs);
	case CHANGESET_KEY_OLD_XATTRS:
		return changeset_json_read_xattrs(v, &e->old_xattrs);
	case CHANGESET_KEY_HARD_LINK:
	case CHANGESET_KEY_LINK_SPLIT:
		if (!json_is_boolean(v))
			return -EINVAL;
		*(k == CHANGESET_KEY_HARD_LINK ? &e->hard_link : &e->link_split) = json_is_true(v);
		return 0;
	case CHANGESET_KEY_UID:
	case CHANGESET_KEY_GID:
	case CHANGESET_KEY_OLD_UID:
	case CHANGESET_KEY_OLD_GID:
		r = changeset_json_id(v, &id);
		if (k == CHANGESET_KEY_UID)
			e->uid = id;
		else if (k == CHANGESET_KEY_GID)
			e->gid = id;
		else if (k == CHANGESET_KEY_OLD_UID)
			e->old_uid = id;
		else
			e->old_gid = id;
		return r;
	case CHANGESET_KEY_ALSO_NAMES:
		return changeset_json_read_names(v, e);
	default:
		return -EINVAL;
	}
}

static int changeset_json_read_entry(json_t *c, struct changeset_entry *e)
{
	const char *key;
	json_t *v;

	if (!json_is_object(c))
		return -EINVAL;
	json_object_foreach(c, key, v) {
		int k = changeset_json_key_of(key, CHANGESET_KEY_PATH, CHANGESET_KEY_REFUSED), r;
		if (k < 0) {
			size_t kn = strlen(key);
			/* a name's bytes this version cannot read */
			if (kn > 4 && !strcmp(key + kn - 4, "_b64"))
				return -EINVAL;
			/* kept as it was, in its place */
			if (!e->extra && !(e->extra = json_object()))
				return -ENOMEM;
			if (json_object_set(e->extra, key, v) < 0)
				return -ENOMEM;
			k = CHANGESET_KEY_EXTRA;
		} else {
			r = changeset_json_read_key(e, (enum changeset_key)k, v);
			if (r < 0)
				return r;
		}
		if (changeset_json_keys_add(&e->keys, (enum changeset_key)k) < 0)
			return -EINVAL;
	}
	return 0;
}

bool changeset_path_is_clean(const char *p)
{
	if (!p || !*p || *p == '/')
		return false;
	for (;;) {
		size_t len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!p[len])
			return true;
		p += len + 1;
	}
}

static bool changeset_json_clean(const struct changeset_bytes *b)
{
	return changeset_path_is_clean(b->bytes);
}

/* An attribute list as changeset_read_xattrs() gives it: each name
 * carried, each value base64. */
static bool changeset_json_xattrs_valid(const struct changeset_xattr_list *list,
					enum changeset_xattrs which)
{
	size_t n;

	for (size_t i = 0; i < list->n; i++) {
		const struct changeset_xattr *a = &list->items[i];
		cleanup_free char *value = a->base64 ? base64_decode(a->base64, &n) : NULL;
		if (!a->name.bytes || !changeset_xattr_carried(a->name.bytes, which) || !value)
			return false;
	}
	return true;
}

/* A change's or an operation's optional attribute lists: both or none;
 * from version 4 (identity) a mode_changed entry lists `xattrs` alone when
 * its attributes did not change. */
static bool changeset_json_meta_valid(const struct changeset_entry *e, bool required,
				      enum changeset_xattrs which, bool identity)
{
	bool now = changeset_entry_has(e, CHANGESET_KEY_XATTRS),
	     before = changeset_entry_has(e, CHANGESET_KEY_OLD_XATTRS);

	if (!now && !before)
		return !required;
	if (identity && now && !before)
		return !required && changeset_json_xattrs_valid(&e->xattrs, which);
	return now && before && changeset_json_xattrs_valid(&e->xattrs, which) &&
	       changeset_json_xattrs_valid(&e->old_xattrs, which);
}

/* uid and gid (and old_uid, old_gid) all or none; an owner_changed
 * change must have all four. */
static bool changeset_json_owner_valid(const struct changeset_entry *e, bool required)
{
	bool any = changeset_entry_has(e, CHANGESET_KEY_UID) ||
		   changeset_entry_has(e, CHANGESET_KEY_GID);
	bool any_old = changeset_entry_has(e, CHANGESET_KEY_OLD_UID) ||
		       changeset_entry_has(e, CHANGESET_KEY_OLD_GID);

	if (required && !(any && any_old))
		return false;
	if ((any || any_old) &&
	    !(changeset_entry_has(e, CHANGESET_KEY_UID) && changeset_entry_has(e, CHANGESET_KEY_GID)))
		return false;
	return !any_old || (changeset_entry_has(e, CHANGESET_KEY_OLD_UID) &&
			    changeset_entry_has(e, CHANGESET_KEY_OLD_GID));
}

/* also_names (core/snapshot/linkgroups.h): clean names, on a mode,
 * attribute or owner change only; also_outside a count of at least one. */
static bool changeset_json_also_valid(const struct changeset_entry *e, bool meta)
{
	bool list = changeset_entry_has(e, CHANGESET_KEY_ALSO_NAMES),
	     outside = changeset_entry_has(e, CHANGESET_KEY_ALSO_OUTSIDE);

	if (!list && !outside)
		return true;
	if (!meta || (outside && e->also_outside < 1))
		return false;
	for (size_t i = 0; i < e->n_also_names; i++)
		if (!changeset_json_clean(&e->also_names[i].path))
			return false;
	return true;
}

/* Version 4: an entry of an object apply installs or changes in place
 * carries its whole identity, which apply checks the staged object
 * against (applycheck_staged_matches): mode (and old_mode when given), the
 * whole attribute list, a file's size and SHA-256, a symlink's target. */
static bool changeset_json_identity_valid(const struct changeset_entry *e)
{
	if (e->change == CHANGESET_DELETED)
		return true;
	if (!changeset_entry_has(e, CHANGESET_KEY_MODE) ||
	    !changeset_entry_has(e, CHANGESET_KEY_XATTRS))
		return false;
	if (e->type == CHANGESET_TYPE_FILE)
		return changeset_entry_has(e, CHANGESET_KEY_SIZE) && e->size >= 0 && e->sha256 &&
		       strlen(e->sha256) == SHA256_HEX_SIZE - 1 &&
		       strspn(e->sha256, "0123456789abcdef") == SHA256_HEX_SIZE - 1;
	if (e->type == CHANGESET_TYPE_SYMLINK)
		return e->target.bytes != NULL;
	return true;
}

static bool changeset_json_entry_valid(const struct changeset_entry *e, enum changeset_xattrs which,
				       bool identity)
{
	bool meta = changeset_change_is_meta(e->change);

	if (!changeset_entry_has(e, CHANGESET_KEY_CHANGE) ||
	    !changeset_entry_has(e, CHANGESET_KEY_TYPE))
		return false;
	if (!(changeset_json_clean(&e->path) ||
	      (meta && e->path.bytes && !strcmp(e->path.bytes, ".") && e->type == CHANGESET_TYPE_DIR)))
		return false;
	if (e->change == CHANGESET_RENAMED && !changeset_json_clean(&e->from))
		return false;
	if (e->change == CHANGESET_MODE_CHANGED && !(changeset_entry_has(e, CHANGESET_KEY_MODE) &&
						     changeset_entry_has(e, CHANGESET_KEY_OLD_MODE)))
		return false;
	if (meta &&
	    !changeset_json_meta_valid(e, e->change == CHANGESET_XATTRS_CHANGED, which, identity))
		return false;
	if (!changeset_json_owner_valid(e, e->change == CHANGESET_OWNER_CHANGED) ||
	    !changeset_json_also_valid(e, meta))
		return false;
	if (!meta && changeset_entry_has(e, CHANGESET_KEY_XATTRS) &&
	    !changeset_json_xattrs_valid(&e->xattrs, which))
		return false;
	if (!meta && changeset_entry_has(e, CHANGESET_KEY_OLD_XATTRS) &&
	    !changeset_json_xattrs_valid(&e->old_xattrs, which))
		return false;
	return !identity || changeset_json_identity_valid(e);
}

static int changeset_json_read_scratch(json_t *v, struct changeset *cs)
{
	const char *key;
	json_t *x;

	if (!json_is_object(v))
		return -EINVAL;
	json_object_foreach(v, key, x) {
		int k = changeset_json_key_of(key, CHANGESET_KEY_SCRATCH_ENTRIES,
					      CHANGESET_KEY_SCRATCH_BYTES);
		if (k < 0 ||
		    changeset_json_int(x, k == CHANGESET_KEY_SCRATCH_ENTRIES ? &cs->scratch_entries
									     : &cs->scratch_bytes) < 0 ||
		    changeset_json_keys_add(&cs->scratch_keys, (enum changeset_key)k) < 0)
			return -EINVAL;
	}
	return 0;
}

/* One key of the document: 0, 1 when it is not recorded (a verdict no
 * reader knows: as if there were none), -EINVAL (damaged) or -ENOMEM. An
 * unknown schema is noted, not damaged: its reason comes after. */
static int changeset_json_read_doc_key(struct changeset *cs, int *k, const char *key, json_t *v,
				       json_t **changes, bool *unknown_schema)
{
	int r = 0;

	switch (*k) {
	case CHANGESET_KEY_SCHEMA:
		r = changeset_json_strdup(v, 64, &cs->schema);
		if (r == -EINVAL || (r == 0 && !changeset_schema_known(cs->schema)))
			*unknown_schema = true;
		return r == -EINVAL ? 0 : r;
	case CHANGESET_KEY_RECEIPT:
		return changeset_json_int(v, &cs->receipt);
	case CHANGESET_KEY_WORKSPACE:
		return changeset_json_strdup(v, PATH_MAX - 1, &cs->workspace);
	case CHANGESET_KEY_WORKSPACE_DEV:
		return changeset_json_int(v, &cs->workspace_dev);
	case CHANGESET_KEY_WORKSPACE_INO:
		return changeset_json_int(v, &cs->workspace_ino);
	case CHANGESET_KEY_VERDICT: {
		int verdict = dryrun_verdict_from_name(changeset_json_string(v, 64));
		if (verdict < 0)
			return 1;
		cs->verdict = (enum dryrun_verdict)verdict;
		return 0;
	}
	case CHANGESET_KEY_CHANGES:
		*changes = v;
		return json_is_array(v) ? 0 : -EINVAL;
	case CHANGESET_KEY_SCRATCH:
		return changeset_json_read_scratch(v, cs);
	default:
		*k = CHANGESET_KEY_EXTRA;
		if (!cs->extra && !(cs->extra = json_object()))
			return -ENOMEM;
		return json_object_set(cs->extra, key, v) < 0 ? -ENOMEM : 0;
	}
}

/* The changes, each read and checked against the schema's rules. */
static int changeset_json_read_changes(struct changeset *cs, json_t *changes, struct error *err)
{
	size_t i;
	json_t *c;

	cs->entries = calloc(json_array_size(changes) + 1, sizeof(*cs->entries));
	if (!cs->entries)
		return error_set(err, ENOMEM, "out of memory");
	json_array_foreach(changes, i, c) {
		struct changeset_entry *e = &cs->entries[cs->n_entries++];
		int r = changeset_json_read_entry(c, e);
		if (r == -ENOMEM)
			return error_set(err, ENOMEM, "out of memory");
		if (r < 0 || !changeset_json_entry_valid(e, cs->xattrs, cs->identity))
			return error_set(err, EINVAL, "its change set is damaged (change %zu)", i);
	}
	return 0;
}

int changeset_from_json(json_t *doc, struct changeset **ret, struct error *err)
{
	cleanup_with(changeset_freep) struct changeset *cs = calloc(1, sizeof(*cs));
	json_t *changes = NULL, *v;
	const char *key;
	bool damaged = false, unknown_schema = false;

	if (!cs)
		return error_set(err, ENOMEM, "out of memory");
	if (!json_is_object(doc))
		return error_set(err, EINVAL, "its change set is damaged");
	/* Every key read, then the reasons in their order of precedence:
	 * damaged, of an unknown version, of no known verdict, a change. */
	json_object_foreach(doc, key, v) {
		int k = changeset_json_key_of(key, CHANGESET_KEY_SCHEMA, CHANGESET_KEY_SCRATCH);
		int r = changeset_json_read_doc_key(cs, &k, key, v, &changes, &unknown_schema);
		if (r == 1)
			continue;
		if (r == -ENOMEM)
			return error_set(err, ENOMEM, "out of memory");
		if (r < 0 || changeset_json_keys_add(&cs->keys, (enum changeset_key)k) < 0)
			damaged = true;
	}
	if (damaged || !changes || !cs->workspace || cs->workspace[0] != '/')
		return error_set(err, EINVAL, "its change set is damaged");
	if (unknown_schema)
		return error_set(err, EINVAL, "its change set is of an unknown version");
	if (!changeset_keys_has(&cs->keys, CHANGESET_KEY_VERDICT))
		return error_set(err, EINVAL, "its change set is damaged (no known verdict)");
	cs->xattrs = changeset_xattrs_of(cs->schema);
	cs->identity = changeset_carries_identity(cs->schema);
	int r = changeset_json_read_changes(cs, changes, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cs);
	return 0;
}

int changeset_parse(const char *text, size_t n, struct changeset **ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *doc = NULL;
	int r = jsonutil_parse_object(text, n, &doc, err);

	return r < 0 ? r : changeset_from_json(doc, ret, err);
}

static json_t *changeset_json_mode_string(mode_t mode)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%04o", (unsigned)(mode & 07777));
	return json_string(buf);
}

static json_t *changeset_json_write_names(const struct changeset_entry *e)
{
	cleanup_with(json_decrefp) json_t *array = json_array();

	for (size_t i = 0; array && i < e->n_also_names; i++) {
		const struct changeset_name *name = &e->also_names[i];
		json_t *o = json_object();
		if (!o || json_array_append_new(array, o) < 0)
			return NULL;
		for (size_t k = 0; k < name->keys.n; k++)
			if (changeset_json_set_bytes(o, name->keys.order[k], &name->path,
						     name->keys.order[k] == CHANGESET_KEY_PATH_B64) < 0)
				return NULL;
	}
	return TAKE_PTR(array);
}

/* The name member a key of an entry writes (key and key_b64 alike), or
 * NULL when the key is not a name's; *ret_b64 whether it is key_b64. */
static const struct changeset_bytes *changeset_json_entry_bytes(const struct changeset_entry *e,
								enum changeset_key k, bool *ret_b64)
{
	*ret_b64 = k == CHANGESET_KEY_PATH_B64 || k == CHANGESET_KEY_FROM_B64 ||
		   k == CHANGESET_KEY_TARGET_B64 || k == CHANGESET_KEY_OLD_TARGET_B64 ||
		   k == CHANGESET_KEY_LINK_TO_B64;
	switch (k) {
	case CHANGESET_KEY_PATH:
	case CHANGESET_KEY_PATH_B64:
		return &e->path;
	case CHANGESET_KEY_FROM:
	case CHANGESET_KEY_FROM_B64:
		return &e->from;
	case CHANGESET_KEY_TARGET:
	case CHANGESET_KEY_TARGET_B64:
		return &e->target;
	case CHANGESET_KEY_OLD_TARGET:
	case CHANGESET_KEY_OLD_TARGET_B64:
		return &e->old_target;
	case CHANGESET_KEY_LINK_TO:
	case CHANGESET_KEY_LINK_TO_B64:
		return &e->link_to;
	default:
		return NULL;
	}
}

/* The value of any other key an entry knows; NULL when out of memory or
 * the key is not an entry's. */
static json_t *changeset_json_entry_value(const struct changeset_entry *e, enum changeset_key k)
{
	switch (k) {
	case CHANGESET_KEY_CHANGE:
		return json_string(changeset_change_name(e->change));
	case CHANGESET_KEY_TYPE:
		return json_string(changeset_file_type_name(e->type));
	case CHANGESET_KEY_OLD_TYPE:
		return json_string(changeset_file_type_name(e->old_type));
	case CHANGESET_KEY_SIZE:
		return json_integer(e->size);
	case CHANGESET_KEY_OLD_SIZE:
		return json_integer(e->old_size);
	case CHANGESET_KEY_ENTRIES:
		return json_integer(e->entries);
	case CHANGESET_KEY_ALSO_OUTSIDE:
		return json_integer(e->also_outside);
	case CHANGESET_KEY_SHA256:
		return json_string(e->sha256);
	case CHANGESET_KEY_OLD_SHA256:
		return json_string(e->old_sha256);
	case CHANGESET_KEY_REFUSED:
		return json_string(e->refused);
	case CHANGESET_KEY_MODE:
		return changeset_json_mode_string(e->mode);
	case CHANGESET_KEY_OLD_MODE:
		return changeset_json_mode_string(e->old_mode);
	case CHANGESET_KEY_XATTRS:
		return changeset_json_write_xattrs(&e->xattrs);
	case CHANGESET_KEY_OLD_XATTRS:
		return changeset_json_write_xattrs(&e->old_xattrs);
	case CHANGESET_KEY_HARD_LINK:
		return json_boolean(e->hard_link);
	case CHANGESET_KEY_LINK_SPLIT:
		return json_boolean(e->link_split);
	case CHANGESET_KEY_UID:
		return json_integer(e->uid);
	case CHANGESET_KEY_GID:
		return json_integer(e->gid);
	case CHANGESET_KEY_OLD_UID:
		return json_integer(e->old_uid);
	case CHANGESET_KEY_OLD_GID:
		return json_integer(e->old_gid);
	case CHANGESET_KEY_ALSO_NAMES:
		return changeset_json_write_names(e);
	default:
		return NULL;
	}
}

json_t *changeset_entry_to_json(const struct changeset_entry *e)
{
	cleanup_with(json_decrefp) json_t *c = json_object();
	void *extra_iter = e->extra ? json_object_iter(e->extra) : NULL;

	if (!c)
		return NULL;
	for (size_t i = 0; i < e->keys.n; i++) {
		enum changeset_key k = e->keys.order[i];
		const char *name = changeset_json_keys[k];
		bool b64;
		const struct changeset_bytes *b = changeset_json_entry_bytes(e, k, &b64);
		json_t *v;
		if (b) {
			if (changeset_json_set_bytes(c, k, b, b64) < 0)
				return NULL;
			continue;
		}
		if (k == CHANGESET_KEY_EXTRA) {
			if (!extra_iter)
				return NULL;
			name = json_object_iter_key(extra_iter);
			v = json_incref(json_object_iter_value(extra_iter));
			extra_iter = json_object_iter_next(e->extra, extra_iter);
		} else {
			v = changeset_json_entry_value(e, k);
		}
		if (!v || json_object_set_new(c, name, v) < 0)
			return NULL;
	}
	return TAKE_PTR(c);
}

json_t *changeset_to_json(const struct changeset *cs)
{
	cleanup_with(json_decrefp) json_t *doc = json_object();
	void *extra_iter = cs->extra ? json_object_iter(cs->extra) : NULL;

	if (!doc)
		return NULL;
	for (size_t i = 0; i < cs->keys.n; i++) {
		enum changeset_key k = cs->keys.order[i];
		const char *name = changeset_json_keys[k];
		json_t *v = NULL;
		switch (k) {
		case CHANGESET_KEY_SCHEMA:
			v = json_string(cs->schema);
			break;
		case CHANGESET_KEY_RECEIPT:
			v = json_integer(cs->receipt);
			break;
		case CHANGESET_KEY_WORKSPACE:
			v = json_string(cs->workspace);
			break;
		case CHANGESET_KEY_WORKSPACE_DEV:
			v = json_integer(cs->workspace_dev);
			break;
		case CHANGESET_KEY_WORKSPACE_INO:
			v = json_integer(cs->workspace_ino);
			break;
		case CHANGESET_KEY_VERDICT:
			v = json_string(dryrun_verdict_name(cs->verdict));
			break;
		case CHANGESET_KEY_CHANGES:
			v = json_array();
			for (size_t j = 0; v && j < cs->n_entries; j++)
				if (json_array_append_new(v, changeset_entry_to_json(&cs->entries[j])) <
				    0) {
					json_decref(v);
					v = NULL;
				}
			break;
		case CHANGESET_KEY_SCRATCH:
			v = json_object();
			for (size_t j = 0; v && j < cs->scratch_keys.n; j++) {
				bool entries =
					cs->scratch_keys.order[j] == CHANGESET_KEY_SCRATCH_ENTRIES;
				if (json_object_set_new(v, entries ? "entries" : "bytes",
							json_integer(entries ? cs->scratch_entries
									     : cs->scratch_bytes)) < 0) {
					json_decref(v);
					v = NULL;
				}
			}
			break;
		case CHANGESET_KEY_EXTRA:
			if (!extra_iter)
				return NULL;
			name = json_object_iter_key(extra_iter);
			v = json_incref(json_object_iter_value(extra_iter));
			extra_iter = json_object_iter_next(cs->extra, extra_iter);
			break;
		default:
			return NULL;
		}
		if (!v || json_object_set_new(doc, name, v) < 0)
			return NULL;
	}
	return TAKE_PTR(doc);
}

json_t *changeset_xattr_list_to_json(const struct changeset_xattr_list *list)
{
	cleanup_with(json_decrefp) json_t *array = json_array();

	for (size_t i = 0; array && i < list->n; i++) {
		const struct changeset_xattr *a = &list->items[i];
		json_t *x = json_object();
		if (!x || json_array_append_new(array, x) < 0 ||
		    json_object_set_new(x, "name",
					json_stringn_nocheck(a->name.bytes, strlen(a->name.bytes))) < 0 ||
		    json_object_set_new(x, "base64", json_string(a->base64)) < 0)
			return NULL;
	}
	return TAKE_PTR(array);
}

bool changeset_xattr_list_equal(const struct changeset_xattr_list *list, json_t *have)
{
	if (!json_is_array(have) || json_array_size(have) != list->n)
		return false;
	for (size_t i = 0; i < list->n; i++) {
		json_t *x = json_array_get(have, i);
		const char *name = json_string_value(json_object_get(x, "name"));
		const char *b64 = json_string_value(json_object_get(x, "base64"));
		if (json_object_size(x) != 2 || !name || !b64 ||
		    strcmp(name, list->items[i].name.bytes) != 0 ||
		    strcmp(b64, list->items[i].base64) != 0)
			return false;
	}
	return true;
}

static bool changeset_json_any_matches(char *const *patterns, const char *path)
{
	for (size_t i = 0; patterns && patterns[i]; i++)
		if (changeset_path_matches(patterns[i], path))
			return true;
	return false;
}

/* A name as the verdict matches it: the exact bytes (a change set read
 * back) or as the document shows it (the dry run's own verdict, which a
 * receipt and the change set record). */
static const char *changeset_json_name_of(const struct changeset_bytes *b, bool shown)
{
	return shown && b->shown ? b->shown : b->bytes;
}

static json_t *changeset_json_name_value(const struct changeset_bytes *b, bool shown)
{
	const char *name = changeset_json_name_of(b, shown);
	if (!name)
		return NULL;
	return shown ? json_string(name) : json_stringn_nocheck(name, strlen(name));
}

static enum dryrun_verdict changeset_json_verdict(const struct changeset *cs, bool shown,
						  bool succeeded, char *const *expect,
						  char *const *expect_delete, json_t **ret_problems)
{
	json_t *problems = json_array();
	*ret_problems = problems;
	if (!succeeded)
		return DRYRUN_VERDICT_DRY_RUN_FAILED;
	if (cs->n_entries == 0)
		return DRYRUN_VERDICT_NO_EFFECT;
	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *c = &cs->entries[i];
		if (c->refused)
			json_array_append_new(problems,
					      json_pack("{s:o, s:s, s:s}", "refused",
							changeset_json_name_value(&c->path, shown),
							"change", changeset_change_name(c->change),
							"reason", c->refused));
	}
	if (json_array_size(problems) > 0)
		return DRYRUN_VERDICT_PRIVILEGED_FILE;
	for (size_t i = 0; i < cs->n_entries; i++) {
		const struct changeset_entry *c = &cs->entries[i];
		const char *path = changeset_json_name_of(&c->path, shown);
		bool removes = c->change == CHANGESET_DELETED || c->change == CHANGESET_TYPE_CHANGED;
		bool ok = removes ? changeset_json_any_matches(expect_delete, path)
				  : changeset_json_any_matches(expect, path);
		if (ok && c->change == CHANGESET_RENAMED)
			ok = changeset_json_any_matches(expect_delete,
							changeset_json_name_of(&c->from, shown));
		if (!ok)
			json_array_append_new(problems,
					      json_pack("{s:s, s:s}", "unexpected", path, "change",
							changeset_change_name(c->change)));
	}
	if (json_array_size(problems) > 0)
		return DRYRUN_VERDICT_UNEXPECTED_PATH;
	char *const *lists[] = { expect, expect_delete };
	for (size_t l = 0; l < 2; l++)
		for (size_t k = 0; lists[l] && lists[l][k]; k++) {
			bool hit = false;
			for (size_t i = 0; i < cs->n_entries && !hit; i++) {
				const struct changeset_entry *c = &cs->entries[i];
				const char *from = changeset_json_name_of(&c->from, shown);
				hit = changeset_path_matches(lists[l][k],
							     changeset_json_name_of(&c->path, shown)) ||
				      (from && changeset_path_matches(lists[l][k], from));
			}
			if (!hit)
				json_array_append_new(problems,
						      json_pack("{s:s}", "missing", lists[l][k]));
		}
	return json_array_size(problems) > 0 ? DRYRUN_VERDICT_EXPECTED_PATH_MISSING
					     : DRYRUN_VERDICT_DRY_RUN_OK;
}

enum dryrun_verdict changeset_verdict(const struct changeset *cs, bool succeeded, char *const *expect,
				      char *const *expect_delete, json_t **ret_problems)
{
	return changeset_json_verdict(cs, true, succeeded, expect, expect_delete, ret_problems);
}

/* The same problems as changeset_verdict(), names as their bytes (the
 * document read back holds them so, changeset_decode_bytes()). */
enum dryrun_verdict changeset_verdict_of(const struct changeset *cs, bool succeeded,
					 char *const *expect, char *const *expect_delete,
					 json_t **ret_problems)
{
	return changeset_json_verdict(cs, false, succeeded, expect, expect_delete, ret_problems);
}

static void changeset_json_entry_free(struct changeset_entry *e)
{
	json_decref(e->extra);
	changeset_json_bytes_free(&e->path);
	changeset_json_bytes_free(&e->from);
	changeset_json_bytes_free(&e->target);
	changeset_json_bytes_free(&e->old_target);
	changeset_json_bytes_free(&e->link_to);
	free(e->sha256);
	free(e->old_sha256);
	free(e->refused);
	changeset_json_xattrs_free(&e->xattrs);
	changeset_json_xattrs_free(&e->old_xattrs);
	for (size_t i = 0; i < e->n_also_names; i++)
		changeset_json_bytes_free(&e->also_names[i].path);
	free(e->also_names);
}

void changeset_free(struct changeset *cs)
{
	if (!cs)
		return;
	json_decref(cs->extra);
	free(cs->schema);
	free(cs->workspace);
	for (size_t i = 0; i < cs->n_entries; i++)
		changeset_json_entry_free(&cs->entries[i]);
	free(cs->entries);
	free(cs);
}

void changeset_freep(struct changeset **cs)
{
	changeset_free(*cs);
	*cs = NULL;
}

int changeset_entry_key_set(struct changeset_entry *e, enum changeset_key key)
{
	return changeset_json_keys_add(&e->keys, key);
}

void changeset_entry_key_unset(struct changeset_entry *e, enum changeset_key key)
{
	size_t j = 0;

	for (size_t i = 0; i < e->keys.n; i++)
		if (e->keys.order[i] != key)
			e->keys.order[j++] = e->keys.order[i];
	e->keys.n = (uint8_t)j;
	if (key == CHANGESET_KEY_XATTRS || key == CHANGESET_KEY_OLD_XATTRS) {
		struct changeset_xattr_list *list =
			key == CHANGESET_KEY_XATTRS ? &e->xattrs : &e->old_xattrs;
		changeset_json_xattrs_free(list);
		*list = (struct changeset_xattr_list){ 0 };
	}
}

/* bytes, and shown when they are not UTF-8: what changeset_set_bytes()
 * writes under the plain key. */
static int changeset_json_bytes_set(struct changeset_bytes *b, const char *bytes, bool *ret_b64)
{
	size_t n = strlen(bytes);

	changeset_json_bytes_free(b);
	*b = (struct changeset_bytes){ .bytes = strdup(bytes) };
	*ret_b64 = !utf8_is_valid(bytes, n);
	if (*ret_b64)
		b->shown = utf8_sanitize(bytes, n, NULL);
	return b->bytes && (!*ret_b64 || b->shown) ? 0 : -ENOMEM;
}

int changeset_entry_set_bytes(struct changeset_entry *e, enum changeset_key key, const char *bytes)
{
	struct changeset_bytes *b;
	bool b64;

	switch (key) {
	case CHANGESET_KEY_PATH:
		b = &e->path;
		break;
	case CHANGESET_KEY_LINK_TO:
		b = &e->link_to;
		break;
	default:
		return -EINVAL;
	}
	int r = changeset_json_bytes_set(b, bytes, &b64);
	if (r == 0)
		r = changeset_json_keys_add(&e->keys, key);
	if (r == 0 && b64)
		r = changeset_json_keys_add(&e->keys, key == CHANGESET_KEY_PATH
							      ? CHANGESET_KEY_PATH_B64
							      : CHANGESET_KEY_LINK_TO_B64);
	return r;
}

int changeset_entry_add_name(struct changeset_entry *e, const char *bytes)
{
	struct changeset_name *names =
		realloc(e->also_names, (e->n_also_names + 1) * sizeof(*e->also_names));
	bool b64;

	if (!names)
		return -ENOMEM;
	e->also_names = names;
	struct changeset_name *name = &names[e->n_also_names++];
	*name = (struct changeset_name){ 0 };
	int r = changeset_json_bytes_set(&name->path, bytes, &b64);
	if (r == 0)
		r = changeset_json_keys_add(&name->keys, CHANGESET_KEY_PATH);
	if (r == 0 && b64)
		r = changeset_json_keys_add(&name->keys, CHANGESET_KEY_PATH_B64);
	return r;
}

int changeset_xattr_list_from_raw(json_t *raw, struct changeset_xattr_list *ret)
{
	cleanup_with(json_decrefp) json_t *holder = json_pack("{s:O}", "xattrs", raw);
	cleanup_with(json_decrefp) json_t *enc = holder ? changeset_encode_bytes(holder) : NULL;

	changeset_json_xattrs_free(ret);
	*ret = (struct changeset_xattr_list){ 0 };
	if (!enc)
		return -ENOMEM;
	return changeset_json_read_xattrs(json_object_get(enc, "xattrs"), ret);
}

void changeset_xattr_list_release(struct changeset_xattr_list *list)
{
	changeset_json_xattrs_free(list);
	*list = (struct changeset_xattr_list){ 0 };
}

int changeset_xattr_list_copy(const struct changeset_xattr_list *from, struct changeset_xattr_list *to)
{
	changeset_json_xattrs_free(to);
	*to = (struct changeset_xattr_list){ .items = calloc(from->n + 1, sizeof(*to->items)) };
	if (!to->items)
		return -ENOMEM;
	for (size_t i = 0; i < from->n; i++) {
		const struct changeset_xattr *a = &from->items[i];
		struct changeset_xattr *b = &to->items[to->n++];
		b->keys = a->keys;
		b->name.bytes = a->name.bytes ? strdup(a->name.bytes) : NULL;
		b->name.shown = a->name.shown ? strdup(a->name.shown) : NULL;
		b->base64 = a->base64 ? strdup(a->base64) : NULL;
		if ((a->name.bytes && !b->name.bytes) || (a->name.shown && !b->name.shown) ||
		    (a->base64 && !b->base64))
			return -ENOMEM;
	}
	return 0;
}

struct changeset_entry *changeset_add_entry(struct changeset *cs)
{
	struct changeset_entry *entries =
		realloc(cs->entries, (cs->n_entries + 1) * sizeof(*cs->entries));

	if (!entries)
		return NULL;
	cs->entries = entries;
	entries[cs->n_entries] = (struct changeset_entry){ 0 };
	return &entries[cs->n_entries++];
}

struct changeset_json_sorted {
	const char *shown;
	size_t index;
};

static int changeset_json_compare_sorted(const void *a, const void *b)
{
	const struct changeset_json_sorted *x = a, *y = b;
	int c = strcmp(x->shown, y->shown);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

int changeset_sort(struct changeset *cs)
{
	size_t n = cs->n_entries;
	cleanup_free struct changeset_json_sorted *order = calloc(n + 1, sizeof(*order));
	cleanup_free struct changeset_entry *sorted = calloc(n + 1, sizeof(*sorted));

	if (!order || !sorted)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct changeset_bytes *p = &cs->entries[i].path;
		order[i] = (struct changeset_json_sorted){ p->shown ? p->shown : p->bytes, i };
	}
	qsort(order, n, sizeof(*order), changeset_json_compare_sorted);
	for (size_t i = 0; i < n; i++)
		sorted[i] = cs->entries[order[i].index];
	memcpy(cs->entries, sorted, n * sizeof(*sorted));
	return 0;
}

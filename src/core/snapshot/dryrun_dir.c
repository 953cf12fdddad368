/* SPDX-License-Identifier: MIT */
#include "core/snapshot/dryrun_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "core/snapshot/changeset.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/applyfs.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

#define CHANGESET_MAX (256 << 20)

void dryrun_dir_release(struct dryrun_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->ws_fd >= 0)
		close(d->ws_fd);
	free(d->workspace);
	free(d->new_dirs);
	changeset_free(d->cs);
	*d = (struct dryrun_dir){ .fd = -1, .ws_fd = -1 };
}

bool dryrun_dir_path_is_clean(const char *p)
{
	return changeset_path_is_clean(p);
}

bool dryrun_dir_one_of(const char *s, const char *const *set)
{
	for (size_t i = 0; s && set[i]; i++)
		if (!strcmp(s, set[i]))
			return true;
	return false;
}

/* An attribute list as changeset_read_xattrs() gives it, names decoded:
 * [{name, base64}], each name carried, each value base64. */
static bool dryrun_dir_xattrs_valid(json_t *list, enum changeset_xattrs which)
{
	size_t i, n;
	json_t *x;

	if (!json_is_array(list))
		return false;
	json_array_foreach(list, i, x) {
		const char *name = jsonutil_str(x, "name"), *b64 = jsonutil_str(x, "base64");
		cleanup_free char *value = b64 ? base64_decode(b64, &n) : NULL;
		if (!name || !changeset_xattr_carried(name, which) || !value)
			return false;
	}
	return true;
}

bool dryrun_dir_is_root(const char *path)
{
	return path && strcmp(path, ".") == 0;
}

/* A change's (or an operation's) owner key: absent, or an id. */
static bool dryrun_dir_id_valid(json_t *c, const char *key, bool required)
{
	json_t *v = json_object_get(c, key);

	if (!v)
		return !required;
	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) < (json_int_t)UINT32_MAX;
}

bool dryrun_dir_owner_valid(json_t *c, bool required)
{
	bool any = json_object_get(c, "uid") || json_object_get(c, "gid");
	bool any_old = json_object_get(c, "old_uid") || json_object_get(c, "old_gid");

	if (required && !(any && any_old))
		return false;
	return dryrun_dir_id_valid(c, "uid", any || any_old) &&
	       dryrun_dir_id_valid(c, "gid", any || any_old) &&
	       dryrun_dir_id_valid(c, "old_uid", any_old) &&
	       dryrun_dir_id_valid(c, "old_gid", any_old);
}

uid_t dryrun_dir_id(json_t *c, const char *key)
{
	return (uid_t)json_integer_value(json_object_get(c, key));
}

bool dryrun_dir_is_meta(const char *change)
{
	return change && (!strcmp(change, "mode_changed") || !strcmp(change, "xattrs_changed") ||
			  !strcmp(change, "owner_changed"));
}

bool dryrun_dir_meta_valid(json_t *c, bool required, enum changeset_xattrs which, bool identity)
{
	json_t *now = json_object_get(c, "xattrs"), *before = json_object_get(c, "old_xattrs");

	if (!now && !before)
		return !required;
	if (identity && now && !before)
		return !required && dryrun_dir_xattrs_valid(now, which);
	return dryrun_dir_xattrs_valid(now, which) && dryrun_dir_xattrs_valid(before, which);
}

int dryrun_dir_parse_changeset(const char *text, size_t n, json_t **ret,
			       enum dryrun_verdict *ret_verdict, struct error *err)
{
	cleanup_with(json_decrefp) json_t *doc = NULL;
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	int r = jsonutil_parse_object(text, n, &doc, err);

	if (r < 0)
		return r;
	r = changeset_from_json(doc, &cs, err);
	if (r < 0)
		return r;
	/* From here on paths and targets are the exact bytes; every change has
	 * the fields apply reads, of the kinds it knows (changeset_from_json). */
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(doc, "changes"), i, c)
		if (changeset_decode_bytes(c) < 0)
			return error_set(err, EINVAL, "its change set is damaged (change %zu)", i);
	*ret = TAKE_PTR(doc);
	*ret_verdict = cs->verdict;
	return 0;
}

int dryrun_dir_read_changeset(struct store *store, uint64_t id, size_t max, char **ret_text,
			      size_t *ret_n, struct error *err)
{
	char id_text[24];
	struct statepath path = statepath_dryrun_changeset(id);

	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	return store_read_record(store, LEDGER_DRYRUN, id_text, path.s, max, ret_text, ret_n, err);
}

int dryrun_dir_changeset_backed(struct store *store, uint64_t id, const char sha256[SHA256_HEX_SIZE],
				const char *refusal, struct error *err)
{
	char id_text[24];
	struct error why = { 0 };

	struct statepath path = statepath_dryrun_changeset(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	int r = ledger_backs(store_ledger(store), LEDGER_DRYRUN, id_text, path.s, sha256, &why);
	if (r == 0)
		return 0;
	return error_set(err, EPERM,
			 "the ledger does not back the change set of dry run %llu (%s): %s; `airlock ledger verify` says more",
			 (unsigned long long)id,
			 r == -EBADMSG	? "rewritten"
			 : r == -ENOENT ? "never committed"
					: why.msg,
			 refusal);
}

/* The state a state file's text (its newline cut) names: the one parse of
 * it. */
static enum dryrun_state dryrun_state_parse(const char *text)
{
	static const enum dryrun_state recorded[] = { DRYRUN_STATE_PENDING, DRYRUN_STATE_APPLIED,
						      DRYRUN_STATE_ROLLED_BACK };

	for (size_t i = 0; i < ARRAY_SIZE(recorded); i++)
		if (strcmp(text, dryrun_state_name(recorded[i])) == 0)
			return recorded[i];
	return DRYRUN_STATE_UNKNOWN;
}

/* The state recorded in dryruns/<id> (open at fd), NUL terminated, its
 * newline cut. It is carried by its ledger entry (store_commit()), its file
 * a cache a power loss may have lost: a dry run with a journal was applied
 * at least once, so its state is then asked of the ledger (and the file
 * written back); one without (or with the dry run's empty one) has none.
 * -ENOENT when none is recorded. */
static int dryrun_dir_state_text(struct store *store, int fd, uint64_t id, char **ret, struct error *err)
{
	size_t n;
	struct stat jst;

	int r = file_read_capped(fd, STATEPATH_STATE, 64, ret, &n, err);
	if (r == -ENOENT && fstatat(fd, STATEPATH_JOURNAL, &jst, AT_SYMLINK_NOFOLLOW) == 0 &&
	    jst.st_size > 0) {
		struct statepath path = statepath_dryrun_state(id);
		r = store_read_record(store, LEDGER_KIND_MAX, NULL, path.s, 64, ret, &n, err);
	}
	if (r == 0)
		(*ret)[strcspn(*ret, "\n")] = '\0';
	return r;
}

int dryrun_dir_open(struct store *store, uint64_t id, enum dryrun_dir_lock lock,
		    struct dryrun_dir *d, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	struct stat dst;

	*d = (struct dryrun_dir){ .store = store, .id = id, .fd = -1, .ws_fd = -1 };
	struct statepath rel = statepath_dryrun(id);
	d->fd = openat(store_dir_fd(store), rel.s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return errno == ENOENT
			       ? error_set(err, ENOENT, "no dry run %llu", (unsigned long long)id)
			       : error_set_errno(err, errno, "open %s/%s", store_path(store), rel.s);
	if (flock(d->fd, LOCK_EX | (lock == DRYRUN_DIR_LOCK_TRY ? LOCK_NB : 0)) < 0)
		return errno == EWOULDBLOCK && lock == DRYRUN_DIR_LOCK_TRY
			       ? -EAGAIN
			       : error_set_errno(err, errno, "lock dry run %llu",
						 (unsigned long long)id);
	/* Removed (discard, gc) while this process waited for the lock. */
	if (fstat(d->fd, &dst) < 0 || dst.st_nlink == 0)
		return error_set(err, ENOENT, "no dry run %llu", (unsigned long long)id);
	int r = dryrun_dir_read_changeset(store, id, CHANGESET_MAX, &text, &n, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "dry run %llu has no change set (it did not run)",
				 (unsigned long long)id);
	if (r == 0) {
		sha256_hex(text, n, d->changeset_sha256);
		r = changeset_parse(text, n, &d->cs, err);
	}
	if (r < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	d->verdict = d->cs->verdict;
	d->xattrs = d->cs->xattrs;
	d->identity = d->cs->identity;
	const char *ws = d->cs->workspace;
	d->workspace = strdup(ws);
	if (!d->workspace)
		return error_set(err, ENOMEM, "out of memory");
	/* No symlink on the way (the path was canonical when the dry run
	 * recorded it), and the very directory the dry run saw. */
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	bool known = changeset_keys_has(&d->cs->keys, CHANGESET_KEY_WORKSPACE_DEV) &&
		     changeset_keys_has(&d->cs->keys, CHANGESET_KEY_WORKSPACE_INO);
	struct stat st;
	d->ws_fd = (int)syscall(SYS_openat2, AT_FDCWD, ws, &how, sizeof(how));
	if (d->ws_fd < 0 && errno != ELOOP && errno != ENOENT && errno != ENOTDIR)
		return error_set_errno(err, errno, "open the workspace %s", ws);
	if (d->ws_fd < 0 || fstat(d->ws_fd, &st) < 0 || !known ||
	    (int64_t)st.st_dev != d->cs->workspace_dev || (int64_t)st.st_ino != d->cs->workspace_ino) {
		snprintf(d->ws_mismatch, sizeof(d->ws_mismatch),
			 "the workspace %s is not the directory the dry run saw (moved, replaced, or reached through a symlink)",
			 ws);
		if (d->ws_fd >= 0)
			close(d->ws_fd);
		d->ws_fd = -1;
	}
	cleanup_free char *state = NULL;
	/* A state whose commit a crash cut between its rename and its entry is
	 * put back to what the ledger committed (recovery then follows the
	 * journal). */
	struct statepath state_path = statepath_dryrun_state(id);
	if (store_settle(store, state_path.s, err) < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	/* None recorded, or a file that cannot be read: pending. */
	d->state = DRYRUN_STATE_PENDING;
	if (dryrun_dir_state_text(store, d->fd, id, &state, err) == 0)
		d->state = dryrun_state_parse(state);
	*err = (struct error){ 0 };
	return 0;
}

const char *dryrun_state_name(enum dryrun_state state)
{
	switch (state) {
	case DRYRUN_STATE_PENDING:
		return "pending";
	case DRYRUN_STATE_APPLIED:
		return "applied";
	case DRYRUN_STATE_ROLLED_BACK:
		return "rolled_back";
	case DRYRUN_STATE_NONE:
	case DRYRUN_STATE_UNKNOWN:
		break;
	}
	return NULL;
}

const char *dryrun_state_describe(enum dryrun_state state)
{
	if (state == DRYRUN_STATE_NONE)
		return "pending";
	return dryrun_state_name(state) ? dryrun_state_name(state) : "in a state airlock never records";
}

int dryrun_dir_read_state(struct store *store, uint64_t id, enum dryrun_state *ret, struct error *err)
{
	cleanup_free char *state = NULL;

	struct statepath rel = statepath_dryrun(id);
	cleanup_close int fd =
		openat(store_dir_fd(store), rel.s, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT
			       ? -ENOENT
			       : error_set_errno(err, errno, "open %s/%s", store_path(store), rel.s);
	int r = dryrun_dir_state_text(store, fd, id, &state, err);
	if (r == -ENOENT) {
		error_clear(err);
		*ret = DRYRUN_STATE_NONE;
		return 0;
	}
	if (r < 0)
		return error_prefix(err, "dry run %llu", (unsigned long long)id);
	*ret = dryrun_state_parse(state);
	if (*ret == DRYRUN_STATE_UNKNOWN)
		return error_set(err, EBADMSG, "dry run %llu: its state is none airlock records",
				 (unsigned long long)id);
	return 0;
}

int dryrun_dir_peek_state(int dir_fd, const char *name, enum dryrun_state *ret,
			  char hex[SHA256_HEX_SIZE])
{
	char path[PATH_MAX], text[65];

	if ((size_t)snprintf(path, sizeof(path), "%s/" STATEPATH_STATE, name) >= sizeof(path))
		return -ENAMETOOLONG;
	cleanup_close int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, text, sizeof(text));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(text)) /* longer than 64 bytes */
		return -EFBIG;
	if (hex)
		sha256_hex(text, (size_t)n, hex);
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	*ret = dryrun_state_parse(text);
	return 0;
}

int dryrun_dir_set_state(struct dryrun_dir *d, enum dryrun_state state, struct error *err)
{
	char line[64], id_text[24];
	const char *name = dryrun_state_name(state);

	if (!name)
		return error_set(err, EINVAL, "dry run %llu: a state airlock never records",
				 (unsigned long long)d->id);
	int n = snprintf(line, sizeof(line), "%s\n", name);
	struct statepath path = statepath_dryrun_state(d->id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)d->id);
	int r = store_commit(d->store, state == DRYRUN_STATE_APPLIED ? LEDGER_APPLY : LEDGER_ROLLBACK,
			     id_text, path.s, line, (size_t)n, true, err);
	if (r < 0)
		r = error_prefix(err, "dry run %llu: write its state", (unsigned long long)d->id);
	if (r == 0)
		d->state = state;
	return r;
}

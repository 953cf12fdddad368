/* SPDX-License-Identifier: MIT */
/* The configured remotes of the state directory's ledger (remotes.h). */
#include "core/store/remotes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "core/store/store.h"
#include "ledger/witness.h"

#define REMOTES_FILE_MAX (64 << 10)

static bool remotes_name_ok(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= 64 && name[0] != '.' &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* witnesses.json's array (an empty one when there is no file). */
static int remotes_load(struct store *store, json_t **ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	json_t *root = NULL;

	int r = file_read_capped(store_dir_fd(store), STATEPATH_WITNESSES, REMOTES_FILE_MAX, &text,
				 &n, err);
	if (r == -ENOENT) {
		error_clear(err);
		*ret = json_array();
		return *ret ? 0 : error_set(err, ENOMEM, "out of memory");
	}
	if (r < 0 || (r = jsonutil_parse_object(text, n, &root, err)) < 0)
		return error_prefix(err, "%s", STATEPATH_WITNESSES);
	static const char *const keys[] = { "witnesses", NULL };
	json_t *list = json_object_get(root, "witnesses");
	r = jsonutil_check_keys(root, STATEPATH_WITNESSES, keys, err);
	if (r == 0 && !json_is_array(list))
		r = error_set(err, EINVAL, "%s: 'witnesses' is an array", STATEPATH_WITNESSES);
	size_t i;
	json_t *w;
	json_array_foreach(r == 0 ? list : NULL, i, w) {
		static const char *const wkeys[] = { "name", "url", "vkey", NULL };
		const char *name = jsonutil_str(w, "name");
		if (!json_is_object(w) || jsonutil_check_keys(w, "witness", wkeys, err) < 0 || !name ||
		    !remotes_name_ok(name) || !jsonutil_str(w, "url") || !jsonutil_str(w, "vkey")) {
			error_clear(err);
			r = error_set(err, EINVAL, "%s: witness %zu is not {name, url, vkey}",
				      STATEPATH_WITNESSES, i);
			break;
		}
	}
	if (r == 0)
		*ret = json_incref(list);
	json_decref(root);
	return r;
}

static int remotes_save(struct store *store, json_t *list, struct error *err)
{
	json_t *root = json_pack("{s:O}", "witnesses", list);
	cleanup_free char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
	json_decref(root);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	int dir_fd = store_dir_fd(store);
	static const char tmp[] = STATEPATH_WITNESSES ".new";
	size_t n = strlen(text);
	text[n] = '\n'; /* over the NUL: written by length */
	(void)unlinkat(dir_fd, tmp, 0);
	int r = file_write_atomic(dir_fd, tmp, text, n + 1, 0600, true, err);
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, STATEPATH_WITNESSES) < 0)
		r = error_set_errno(err, errno, "replace %s", STATEPATH_WITNESSES);
	if (r == 0 && fsync(dir_fd) < 0)
		r = error_set_errno(err, errno, "sync the state directory");
	return r;
}

static ssize_t remotes_find(json_t *list, const char *name)
{
	size_t i;
	json_t *w;

	json_array_foreach(list, i, w)
		if (strcmp(jsonutil_str(w, "name"), name) == 0)
			return (ssize_t)i;
	return -1;
}

int remotes_witness_add(struct store *store, const char *name, const char *url, const char *vkey,
			struct error *err)
{
	struct ledger_vkey v;
	json_t *list = NULL;

	if (!remotes_name_ok(name))
		return error_set(err, EINVAL, "a witness's name is [a-z0-9._-], at most 64 bytes");
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return error_set(err, EINVAL, "a witness's URL is http:// or https://");
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return error_set(err, EINVAL, "a witness's URL has no space or control");
	if (witness_vkey_parse(vkey, &v, err) < 0)
		return error_prefix(err, "witness %s", name);
	int r = remotes_load(store, &list, err);
	if (r < 0)
		return r;
	if (remotes_find(list, name) >= 0) {
		json_decref(list);
		return error_set(err, EEXIST, "witness %s is configured already", name);
	}
	json_t *w = json_pack("{s:s,s:s,s:s}", "name", name, "url", url, "vkey", vkey);
	r = w && json_array_append_new(list, w) == 0 ? remotes_save(store, list, err)
						     : error_set(err, ENOMEM, "out of memory");
	json_decref(list);
	return r;
}

int remotes_witness_remove(struct store *store, const char *name, struct error *err)
{
	json_t *list = NULL;
	int r = remotes_load(store, &list, err);
	if (r < 0)
		return r;
	ssize_t i = remotes_find(list, name);
	if (i < 0)
		r = error_set(err, ENOENT, "no witness named %s", name);
	else if (json_array_remove(list, (size_t)i) < 0)
		r = error_set(err, ENOMEM, "out of memory");
	else
		r = remotes_save(store, list, err);
	json_decref(list);
	return r;
}

int remotes_witness_list(struct store *store, json_t **ret, struct error *err)
{
	return remotes_load(store, ret, err);
}

int remotes_register(struct store *store, struct error *err)
{
	json_t *list = NULL;
	int r = remotes_load(store, &list, err);
	size_t i;
	json_t *w;

	json_array_foreach(r == 0 ? list : NULL, i, w) {
		r = witness_remote_add(store_ledger(store), jsonutil_str(w, "name"),
				       jsonutil_str(w, "url"), jsonutil_str(w, "vkey"), err);
		if (r < 0)
			break;
	}
	json_decref(list);
	return r;
}

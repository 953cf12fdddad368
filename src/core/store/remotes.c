/* SPDX-License-Identifier: MIT */
/* The configured remotes of the state directory's ledger (remotes.h). */
#include "core/store/remotes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "core/store/store.h"
#include "ledger/pgmirror.h"
#include "ledger/witness.h"

#define REMOTES_FILE_MAX (64 << 10)
/* How long the background pusher waits for more runs before it pushes. */
#define REMOTES_COALESCE_NS (100 * 1000 * 1000L)

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

static int remotes_register_witnesses(struct store *store, struct error *err)
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

void remotes_mirror_release(struct remotes_mirror *m)
{
	free(m->conninfo);
	free(m->host);
	*m = (struct remotes_mirror){ 0 };
}

static int remotes_dir(struct store *store, struct error *err)
{
	if (mkdirat(store_dir_fd(store), STATEPATH_MIRROR, 0700) < 0 && errno != EEXIST)
		return error_set_errno(err, errno, "create %s/%s", store_path(store), STATEPATH_MIRROR);
	return 0;
}

/* A small JSON object of the state directory: -ENOENT when absent. */
static int remotes_read_json(struct store *store, const char *path, json_t **ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(store_dir_fd(store), path, REMOTES_FILE_MAX, &text, &n, err);
	if (r < 0)
		return r;
	r = jsonutil_parse_object(text, n, ret, err);
	return r < 0 ? error_prefix(err, "%s/%s", store_path(store), path) : 0;
}

static int remotes_write_json(struct store *store, const char *path, json_t *doc, struct error *err)
{
	cleanup_free char *text = doc ? jsonutil_dump_line(doc) : NULL;
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	int r = remotes_dir(store, err);
	if (r < 0)
		return r;
	cleanup_close int dir_fd = openat(store_dir_fd(store), STATEPATH_MIRROR,
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dir_fd < 0)
		return error_set_errno(err, errno, "open %s/%s", store_path(store), STATEPATH_MIRROR);
	/* path is mirror/<name>: written as <name>.new beside it, renamed over */
	const char *name = strrchr(path, '/') + 1;
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	(void)unlinkat(dir_fd, tmp, 0);
	r = file_write_atomic(dir_fd, tmp, text, strlen(text), 0600, true, err);
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
		r = error_set_errno(err, errno, "replace %s/%s", store_path(store), path);
	return r;
}

int remotes_mirror_get(struct store *store, struct remotes_mirror *ret, struct error *err)
{
	json_t *doc = NULL;
	*ret = (struct remotes_mirror){ 0 };
	int r = remotes_read_json(store, STATEPATH_MIRROR_CONFIG, &doc, err);
	if (r < 0)
		return r;
	const char *conninfo = jsonutil_str(doc, "conninfo"), *host = jsonutil_str(doc, "host");
	if (!conninfo || !host) {
		json_decref(doc);
		return error_set(err, EBADMSG, "%s/%s: no conninfo or host", store_path(store),
				 STATEPATH_MIRROR_CONFIG);
	}
	ret->conninfo = strdup(conninfo);
	ret->host = strdup(host);
	json_decref(doc);
	if (!ret->conninfo || !ret->host) {
		remotes_mirror_release(ret);
		return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int remotes_mirror_set(struct store *store, const char *conninfo, const char *host, struct error *err)
{
	char name[HOST_NAME_MAX + 1] = "localhost";
	cleanup_free char *real = realpath(store_path(store), NULL);
	cleanup_free char *fallback = NULL;

	if (!host) {
		(void)gethostname(name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		if (asprintf(&fallback, "%s:%s", name, real ? real : store_path(store)) < 0)
			return error_set(err, ENOMEM, "out of memory");
		host = fallback;
	}
	if (!*conninfo || !*host || strlen(host) > 200)
		return error_set(err, EINVAL,
				 "a mirror has a connection string and a host name (at most 200 bytes)");
	json_t *doc = json_pack("{s:s, s:s}", "conninfo", conninfo, "host", host);
	int r = remotes_write_json(store, STATEPATH_MIRROR_CONFIG, doc, err);
	json_decref(doc);
	return r;
}

int remotes_mirror_unset(struct store *store, struct error *err)
{
	if (unlinkat(store_dir_fd(store), STATEPATH_MIRROR_CONFIG, 0) < 0 && errno != ENOENT)
		return error_set_errno(err, errno, "remove %s/%s", store_path(store),
				       STATEPATH_MIRROR_CONFIG);
	return 0;
}

/* The pg mirror, when configured; *ret_m its context (owned by the ledger
 * once registered). */
static int remotes_register_mirror(struct store *store, struct pgmirror **ret_m, struct error *err)
{
	struct remotes_mirror cfg;
	*ret_m = NULL;
	int r = remotes_mirror_get(store, &cfg, err);
	if (r == -ENOENT) {
		error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	cleanup_free char *vkey = NULL;
	struct pgmirror *m = NULL;
	r = ledger_public_key(store_ledger(store), false, &vkey, err);
	if (r == 0)
		r = pgmirror_new(cfg.conninfo, cfg.host, vkey, &m, err);
	remotes_mirror_release(&cfg);
	if (r == 0)
		r = ledger_add_remote(store_ledger(store), &pgmirror_ops, m, err);
	if (r < 0) {
		if (m)
			pgmirror_ops.free(m);
		return r;
	}
	*ret_m = m;
	return 1;
}

int remotes_register(struct store *store, struct error *err)
{
	struct pgmirror *m;
	int r = remotes_register_mirror(store, &m, err);
	return r < 0 ? r : remotes_register_witnesses(store, err);
}

static void remotes_record(struct store *store, const struct error *failure, bool is_conflict)
{
	char now[64];
	struct error ignored = { 0 };

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *status = json_pack("{s:s, s:s?}", "time", now, "error", failure ? failure->msg : NULL);
	(void)remotes_write_json(store, STATEPATH_MIRROR_STATUS, status, &ignored);
	json_decref(status);
	if (failure && is_conflict) {
		json_t *conflict = json_pack("{s:s, s:s}", "time", now, "error", failure->msg);
		(void)remotes_write_json(store, STATEPATH_MIRROR_CONFLICT, conflict, &ignored);
		json_decref(conflict);
	}
}

static uint64_t remotes_acknowledged(struct store *store, const char *name);

/* The witnesses' cosignatures of the checkpoint the mirror acknowledged,
 * when it is the ledger's latest, sent to it (schema version 2's
 * airlock.cosignatures): the fleet's view of each host's last cosigned
 * checkpoint. Sent again at every push that has any (a line the mirror
 * holds is skipped): one that failed is made by the next. */
static int remotes_send_cosignatures(struct store *store, struct error *err)
{
	struct ledger *ledger = store_ledger(store);
	uint64_t size = remotes_acknowledged(store, PGMIRROR_NAME);
	char **lines = NULL;
	size_t n = 0;
	if (size == 0)
		return 0;
	int r = ledger_remote_cosignatures(ledger, size, &lines, &n, err);
	if (r < 0 || n == 0) {
		strv_free(lines);
		return r;
	}
	cleanup_free char *text = NULL;
	size_t text_n;
	struct ledger_checkpoint cp = { 0 };
	struct remotes_mirror cfg = { 0 };
	uint64_t added;
	r = ledger_checkpoint_text(ledger, &text, &text_n, err);
	if (r == 0)
		r = ledger_checkpoint_parse(text, text_n, NULL, &cp, err);
	/* The mirror behind the checkpoint (this push failed): the next. */
	if (r == 0 && cp.size != size) {
		ledger_checkpoint_release(&cp);
		strv_free(lines);
		return 0;
	}
	if (r == 0)
		r = remotes_mirror_get(store, &cfg, err);
	if (r == 0)
		r = pgmirror_cosign(cfg.conninfo, cp.origin, size, lines, n, &added, err);
	ledger_checkpoint_release(&cp);
	remotes_mirror_release(&cfg);
	strv_free(lines);
	return r;
}

int remotes_push(struct store *store, struct error *err)
{
	struct ledger *ledger = store_ledger(store);
	bool mirror = faccessat(store_dir_fd(store), STATEPATH_MIRROR_CONFIG, F_OK,
				AT_SYMLINK_NOFOLLOW) == 0;
	int r = 0;

	/* With a mirror, what is pushed is the whole log: sign it first. */
	if (mirror)
		r = ledger_checkpoint(ledger, err);
	if (r == 0 && ledger_n_remotes(ledger) == 0)
		r = remotes_register(store, err);
	bool conflict = false;
	if (r >= 0 && ledger_n_remotes(ledger) > 0) {
		r = ledger_push(ledger, err);
		conflict = r == -EEXIST || r == -EBADMSG;
	}
	/* A witness that failed (down, refusing) does not keep the others'
	 * cosignatures from the mirror; a conflict does. */
	if (mirror && !conflict) {
		struct error one = { 0 };
		int q = remotes_send_cosignatures(store, r < 0 ? &one : err);
		if (r >= 0)
			r = q;
	}
	if (mirror)
		remotes_record(store, r < 0 ? err : NULL, conflict);
	return r < 0 ? r : 0;
}

void remotes_push_background(struct store *store)
{
	int dir_fd = store_dir_fd(store);
	if (faccessat(dir_fd, STATEPATH_MIRROR_CONFIG, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	/* Asked for: the pusher running now, if any, makes it before it exits. */
	int fd = openat(dir_fd, STATEPATH_MIRROR_PENDING,
			O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	close(fd);
	/* A pusher running now sees pending before it exits: no new one. */
	cleanup_close int lock =
		openat(dir_fd, STATEPATH_MIRROR_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		return;
	if (lock >= 0)
		(void)flock(lock, LOCK_UN);
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		/* A new session, then a grandchild: no terminal, no parent to
		 * wait for it, nothing of the run's stdio. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(1);
		(void)close_range(3, ~0U, 0);
		char *argv[] = { (char *)"airlock",
				 (char *)"ledger",
				 (char *)"push",
				 (char *)"--background",
				 (char *)"--state-dir",
				 (char *)store_path(store),
				 NULL };
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	(void)waitpid(pid, NULL, 0);
}

int remotes_push_pending(struct store *store, struct error *err)
{
	int dir_fd = store_dir_fd(store), r = 0;

	for (;;) {
		cleanup_close int lock = openat(dir_fd, STATEPATH_MIRROR_LOCK,
						O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lock < 0)
			return error_set_errno(err, errno, "open %s/%s", store_path(store),
					       STATEPATH_MIRROR_LOCK);
		if (flock(lock, LOCK_EX | LOCK_NB) < 0)
			return 0; /* the pusher that holds it makes this push */
		/* A burst of runs is one push: the runs of the next moment
		 * join this one rather than each costing a connection. */
		(void)nanosleep(&(struct timespec){ .tv_nsec = REMOTES_COALESCE_NS }, NULL);
		while (unlinkat(dir_fd, STATEPATH_MIRROR_PENDING, 0) == 0) {
			error_clear(err);
			r = remotes_push(store, err);
		}
		/* Asked for after the last look, before the lock went: again. */
		if (flock(lock, LOCK_UN) < 0 ||
		    faccessat(dir_fd, STATEPATH_MIRROR_PENDING, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			return r;
	}
}

/* ledger/remotes/<name>: the size it acknowledged, on the first line. */
static uint64_t remotes_acknowledged(struct store *store, const char *name)
{
	char path[STATEPATH_MAX];
	cleanup_free char *text = NULL;
	size_t n;
	uint64_t size = 0;
	struct error ignored = { 0 };

	snprintf(path, sizeof(path), STATEPATH_LEDGER_REMOTES "/%s", name);
	if (file_read_capped(store_dir_fd(store), path, 4096, &text, &n, &ignored) < 0)
		return 0;
	text[strcspn(text, "\n")] = '\0';
	return parse_u64(text, &size) < 0 ? 0 : size;
}

int remotes_status(struct store *store, struct remotes_status *ret, struct error *err)
{
	struct remotes_mirror cfg;
	*ret = (struct remotes_status){ 0 };
	int r = remotes_mirror_get(store, &cfg, err);
	if (r == -ENOENT)
		error_clear(err);
	else if (r < 0)
		return r;
	else {
		ret->configured = true;
		snprintf(ret->host, sizeof(ret->host), "%s", cfg.host);
		remotes_mirror_release(&cfg);
	}
	cleanup_free char *text = NULL;
	size_t n;
	struct ledger_checkpoint cp;
	struct error ignored = { 0 };
	if (ledger_checkpoint_text(store_ledger(store), &text, &n, &ignored) == 0 &&
	    ledger_checkpoint_parse(text, n, NULL, &cp, &ignored) == 0) {
		ret->signed_size = cp.size;
		ledger_checkpoint_release(&cp);
	}
	ret->pushed = remotes_acknowledged(store, PGMIRROR_NAME);
	json_t *doc = NULL;
	if (remotes_read_json(store, STATEPATH_MIRROR_STATUS, &doc, &ignored) == 0) {
		snprintf(ret->last_time, sizeof(ret->last_time), "%s",
			 jsonutil_str(doc, "time") ? jsonutil_str(doc, "time") : "");
		snprintf(ret->last_error, sizeof(ret->last_error), "%s",
			 jsonutil_str(doc, "error") ? jsonutil_str(doc, "error") : "");
		json_decref(doc);
	}
	if (remotes_read_json(store, STATEPATH_MIRROR_CONFLICT, &doc, &ignored) == 0) {
		const char *why = jsonutil_str(doc, "error");
		snprintf(ret->conflict, sizeof(ret->conflict), "%s", why && *why ? why : "conflict");
		json_decref(doc);
	}
	return 0;
}

int remotes_conflict_resolve(struct store *store, struct error *err)
{
	if (unlinkat(store_dir_fd(store), STATEPATH_MIRROR_CONFLICT, 0) < 0)
		return error_set_errno(err, errno, "no open conflict with the mirror (%s/%s)",
				       store_path(store), STATEPATH_MIRROR_CONFLICT);
	return 0;
}

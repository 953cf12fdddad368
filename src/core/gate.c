/* SPDX-License-Identifier: MIT */
#include "core/gate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "core/approver.h"
#include "core/jsonutil.h"
#include "core/shellwords.h"

#define GATE_ENTRY_MAX_BYTES (64 << 10)
#define GATE_TAIL_LINES	     5
#define GATE_TAIL_BYTES	     1000

int gate_scope(const char *dir, char **ret_scope, struct error *err)
{
	cleanup_free char *real = realpath(dir, NULL);
	if (!real)
		return error_set_errno(err, errno, "resolve %s", dir);
	/* The nearest directory holding a .git (directory, or a worktree's file). */
	cleanup_free char *cur = strdup(real);
	while (cur) {
		cleanup_free char *git = path_join(cur, ".git");
		struct stat st;
		if (!git)
			return error_set(err, ENOMEM, "out of memory");
		if (lstat(git, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) &&
		    st.st_size > 0) {
			*ret_scope = TAKE_PTR(cur);
			return 0;
		}
		if (strcmp(cur, "/") == 0)
			break;
		char *up = path_dirname(cur);
		free(cur);
		cur = up;
	}
	if (!cur)
		return error_set(err, ENOMEM, "out of memory");
	*ret_scope = TAKE_PTR(real);
	return 0;
}

/* gate/open/<first 32 hex digits of sha256(scope)> */
static void gate_scope_dir(const char *scope, char buf[static 64])
{
	char hex[SHA256_HEX_SIZE];

	sha256_hex(scope, strlen(scope), hex);
	snprintf(buf, 64, "gate/open/%.32s", hex);
}

static int gate_open_dir(struct store *store, const char *rel, bool create, struct error *err)
{
	if (create) {
		char path[128];
		snprintf(path, sizeof(path), "%s", rel);
		/* mkdir -p below the state directory */
		for (char *slash = strchr(path, '/');; slash = strchr(slash + 1, '/')) {
			if (slash)
				*slash = '\0';
			if (mkdirat(store->dir_fd, path, 0700) < 0 && errno != EEXIST)
				return error_set_errno(err, errno, "create %s/%s", store->path, path);
			if (!slash)
				break;
			*slash = '/';
		}
	}
	int fd = openat(store->dir_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !create ? -ENOENT
						  : error_set_errno(err, errno, "open %s/%s",
								    store->path, rel);
	return fd;
}

void gate_effect_release(struct gate_effect *e)
{
	free(e->scope);
	*e = (struct gate_effect){ 0 };
}

/* Code left for the host (moved aside, or not ruled out) is a failure
 * whatever the exit status (docs/sandbox.md, "Code for the host"). */
static bool gate_host_code_clean(json_t *receipt)
{
	json_t *host_code = json_object_get(receipt, "host_code");

	return !json_is_object(host_code) ||
	       (json_is_true(json_object_get(host_code, "complete")) &&
		json_array_size(json_object_get(host_code, "moved_aside")) == 0);
}

/* The last lines of the output that tells most: stderr, else stdout, else
 * the error airlock recorded; that error first when it is about code left
 * for the host, which no output mentions. */
static char *gate_tail(json_t *receipt)
{
	const char *text = gate_host_code_clean(receipt) ? NULL : jsonutil_str(receipt, "error");
	if (!text || !*text)
		text = jsonutil_str(receipt, "stderr");
	if (!text || !*text)
		text = jsonutil_str(receipt, "stdout");
	if (!text || !*text)
		text = jsonutil_str(receipt, "error");
	if (!text)
		return strdup("");
	size_t n = strlen(text);
	while (n > 0 && text[n - 1] == '\n')
		n--;
	size_t start = n, lines = 0;
	while (start > 0 && n - start < GATE_TAIL_BYTES) {
		if (text[start - 1] == '\n' && ++lines == GATE_TAIL_LINES)
			break;
		start--;
	}
	return strndup(text + start, n - start);
}

static json_t *gate_failure_entry(json_t *receipt, const char *scope)
{
	cleanup_free char *tail = gate_tail(receipt);
	char now[64];

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *entry = json_pack("{s:s, s:O, s:s, s:O?, s:O, s:O?, s:O, s:O?, s:O?, s:O, s:s?, s:s}",
				  "schema", GATE_FAILURE_SCHEMA, "receipt",
				  json_object_get(receipt, "id"), "scope", scope, "source",
				  json_object_get(receipt, "source"), "argv",
				  json_object_get(receipt, "argv"), "shell",
				  json_object_get(receipt, "shell"), "cwd", json_object_get(receipt, "cwd"),
				  "status", json_object_get(receipt, "status"), "exit_code",
				  json_object_get(receipt, "exit_code"), "expected_exits",
				  json_object_get(receipt, "expected_exits"), "tail", tail, "opened_at",
				  now);
	/* A shell receipt from a host hook has no expected_exits: 0 was wanted. */
	if (entry && !json_object_get(entry, "expected_exits"))
		json_object_set_new(entry, "expected_exits", json_pack("[i]", 0));
	return entry;
}

static int gate_read_json(int dir_fd, const char *name, json_t **ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n;
	int r = file_read_capped(dir_fd, name, GATE_ENTRY_MAX_BYTES, &text, &n, err);
	if (r < 0)
		return r;
	return jsonutil_parse_object(text, n, ret, err);
}

static bool gate_receipt_succeeded(json_t *receipt)
{
	const char *status = jsonutil_str(receipt, "status");

	return status && strcmp(status, "exited") == 0 &&
	       json_is_true(json_object_get(receipt, "match_expected")) &&
	       gate_host_code_clean(receipt);
}

static void gate_entry_verdict(const struct rules *rules, json_t *entry,
			       struct rules_verdict *ret);

int gate_prepare(struct store *store, json_t *receipt, const struct rules *rules,
		 const char *scope, uint64_t fixes, bool trivial, bool verified,
		 struct gate_effect *ret, struct error *err)
{
	*ret = (struct gate_effect){ .fixes = fixes, .verified = verified };
	ret->scope = strdup(scope);
	if (!ret->scope)
		return error_set(err, ENOMEM, "out of memory");
	uint64_t id = (uint64_t)json_integer_value(json_object_get(receipt, "id"));

	if (!gate_receipt_succeeded(receipt)) {
		char dir[64];
		gate_scope_dir(scope, dir);
		cleanup_close int fd = gate_open_dir(store, dir, true, err);
		if (fd < 0)
			return fd;
		cleanup_with(json_decrefp) json_t *entry = gate_failure_entry(receipt, scope);
		if (!entry)
			return error_set(err, ENOMEM, "out of memory");
		if (rules) {
			struct rules_verdict v;
			gate_entry_verdict(rules, entry, &v);
			json_object_set_new(entry, "risk", json_integer(v.risk));
			json_object_set_new(entry, "rule", json_string(v.rule));
		}
		char rel[128], id_text[24];
		snprintf(rel, sizeof(rel), "%s/%llu.json", dir, (unsigned long long)id);
		snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
		cleanup_free char *text = jsonutil_dump_line(entry);
		int r = text ? store_commit(store, LEDGER_GATE_OPEN, id_text, rel, text, strlen(text),
					    false, err)
			     : error_set(err, ENOMEM, "out of memory");
		if (r < 0)
			return error_prefix(err, "open failure %llu", (unsigned long long)id);
		ret->opened = true; /* a failed run closes nothing; its own status says why */
		return 0;
	}
	if (!verified) {
		if (fixes)
			snprintf(ret->note, sizeof(ret->note), "its status is not verified");
		return 0;
	}

	cleanup_with(json_decrefp) json_t *open = NULL;
	int r = gate_list_open(store, scope, &open, err);
	if (r < 0)
		return r;
	json_t *exit_code = json_object_get(receipt, "exit_code");
	bool fixes_found = false;
	size_t i;
	json_t *entry;
	json_array_foreach(open, i, entry) {
		uint64_t failed = (uint64_t)json_integer_value(json_object_get(entry, "receipt"));
		const char *move = NULL;
		if (json_equal(json_object_get(entry, "argv"), json_object_get(receipt, "argv")) &&
		    json_equal(json_object_get(entry, "cwd"), json_object_get(receipt, "cwd")) &&
		    json_equal(json_object_get(entry, "expected_exits"),
			       json_object_get(receipt, "expected_exits")))
			move = "rerun";
		if (failed == fixes) {
			fixes_found = true;
			if (!move && trivial)
				snprintf(ret->note, sizeof(ret->note),
					 "a trivial success closes nothing");
			else if (!move && json_integer_value(exit_code) != 0)
				snprintf(ret->note, sizeof(ret->note),
					 "only an exit status of 0 closes a failure");
			else if (!move)
				move = "fixes";
		}
		if (move && ret->n_closes < GATE_MAX_CLOSES) {
			ret->closes[ret->n_closes] = failed;
			ret->moves[ret->n_closes++] = move;
		}
	}
	if (fixes && !fixes_found)
		snprintf(ret->note, sizeof(ret->note), "receipt %llu is not an open failure in %s",
			 (unsigned long long)fixes, scope);
	return 0;
}

json_t *gate_effect_to_json(const struct gate_effect *e)
{
	json_t *closes = json_array();
	for (size_t i = 0; closes && i < e->n_closes; i++)
		json_array_append_new(closes, json_pack("{s:I, s:s}", "receipt",
							(json_int_t)e->closes[i], "move",
							e->moves[i]));
	return json_pack("{s:s, s:b, s:b, s:o?, s:o, s:s?}", "scope", e->scope, "opened", e->opened,
			 "verified", e->verified,
			 "fixes", e->fixes ? json_integer((json_int_t)e->fixes) : NULL, "closes",
			 closes, "note", e->note[0] ? e->note : NULL);
}

int gate_commit(struct store *store, const struct gate_effect *e, json_t *receipt,
		struct error *err)
{
	uint64_t by = (uint64_t)json_integer_value(json_object_get(receipt, "id"));

	for (size_t i = 0; i < e->n_closes; i++) {
		cleanup_with(json_decrefp) json_t *entry = NULL;
		int r = gate_find_open(store, e->closes[i], &entry, err);
		if (r == -ENOENT)
			continue; /* closed meanwhile by another run */
		if (r == 0)
			r = gate_close(store, entry, e->moves[i], by, NULL, NULL, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int compare_newest_first(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "receipt"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "receipt"));

	return (x < y) - (x > y);
}

/* A close record counts only when the ledger backs it: one written by
 * anything but store_commit() (a forged close) leaves the failure open. */
static bool gate_is_closed(struct store *store, uint64_t id)
{
	char name[64], id_text[24];
	struct error ignored;

	snprintf(name, sizeof(name), "gate/closed/%llu.json", (unsigned long long)id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	return faccessat(store->dir_fd, name, F_OK, 0) == 0 &&
	       ledger_backs_file(store, LEDGER_GATE_CLOSE, id_text, name, &ignored) == 0;
}

static bool parse_entry_name(const char *name, uint64_t *ret_id)
{
	char *end;

	if (name[0] < '1' || name[0] > '9')
		return false;
	errno = 0;
	unsigned long long id = strtoull(name, &end, 10);
	if (errno || strcmp(end, ".json") != 0)
		return false;
	*ret_id = id;
	return true;
}

/* A failure the ledger has open whose entry file is gone (deleted to pass
 * the gate) is still open. */
static int gate_add_deleted(struct store *store, const char *scope, const char *dir,
			    json_t *entries, struct error *err)
{
	cleanup_free uint64_t *ids = NULL;
	size_t n = 0;
	char prefix[80];
	struct error ignored;

	snprintf(prefix, sizeof(prefix), "%s/", dir);
	if (ledger_open_failures(store, prefix, &ids, &n, &ignored) < 0)
		return 0; /* no ledger: nothing more to know */
	for (size_t i = 0; i < n; i++) {
		bool listed = false;
		size_t k;
		json_t *e;
		json_array_foreach(entries, k, e)
			listed |= (uint64_t)json_integer_value(json_object_get(e, "receipt")) == ids[i];
		if (listed || gate_is_closed(store, ids[i]))
			continue;
		json_t *entry = json_pack("{s:s, s:I, s:s, s:s}", "schema", GATE_FAILURE_SCHEMA,
					  "receipt", (json_int_t)ids[i], "scope", scope, "damaged",
					  "its entry was deleted; the ledger has it open");
		if (!entry || json_array_append_new(entries, entry) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int gate_list_open(struct store *store, const char *scope, json_t **ret_entries,
		   struct error *err)
{
	char dir[64];
	cleanup_with(json_decrefp) json_t *entries = json_array();

	if (!entries)
		return error_set(err, ENOMEM, "out of memory");
	gate_scope_dir(scope, dir);
	int fd = gate_open_dir(store, dir, false, err);
	if (fd == -ENOENT) {
		*ret_entries = TAKE_PTR(entries);
		return 0;
	}
	if (fd < 0)
		return fd;
	cleanup_closedir DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return error_set_errno(err, errno, "read %s/%s", store->path, dir);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t id;
		if (!parse_entry_name(de->d_name, &id))
			continue;
		if (gate_is_closed(store, id)) {
			/* A close that crashed before removing the entry. */
			(void)unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		json_t *entry = NULL;
		struct error ignored = { 0 };
		if (gate_read_json(dirfd(d), de->d_name, &entry, &ignored) < 0) {
			/* Unreadable but present: it still counts as open. */
			entry = json_pack("{s:s, s:I, s:s, s:s}", "schema", GATE_FAILURE_SCHEMA,
					  "receipt", (json_int_t)id, "scope", scope, "damaged",
					  ignored.msg);
		}
		if (!entry || json_array_append_new(entries, entry) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	if (gate_add_deleted(store, scope, dir, entries, err) < 0)
		return -ENOMEM;
	if (jsonutil_array_sort(entries, compare_newest_first) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret_entries = TAKE_PTR(entries);
	return 0;
}

int gate_find_open(struct store *store, uint64_t id, json_t **ret_entry, struct error *err)
{
	char name[32];
	cleanup_close int fd = gate_open_dir(store, "gate/open", false, err);

	if (fd < 0)
		return fd;
	if (gate_is_closed(store, id))
		return -ENOENT;
	cleanup_closedir DIR *d = fdopendir(fd);
	if (!d)
		return error_set_errno(err, errno, "read %s/gate/open", store->path);
	fd = -1; /* owned by d now */
	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		cleanup_close int scope_fd =
			openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (scope_fd < 0 || faccessat(scope_fd, name, F_OK, 0) < 0)
			continue;
		return gate_read_json(scope_fd, name, ret_entry, err);
	}
	return -ENOENT;
}

int gate_find_closed(struct store *store, uint64_t id, json_t **ret_record, struct error *err)
{
	char name[64];

	snprintf(name, sizeof(name), "gate/closed/%llu.json", (unsigned long long)id);
	if (faccessat(store->dir_fd, name, F_OK, 0) < 0)
		return -ENOENT;
	return gate_read_json(store->dir_fd, name, ret_record, err);
}

int gate_close(struct store *store, json_t *entry, const char *move, uint64_t by_receipt,
	       const char *reason, json_t *approval, struct error *err)
{
	uint64_t id = (uint64_t)json_integer_value(json_object_get(entry, "receipt"));
	const char *scope = jsonutil_str(entry, "scope");
	char now[64], name[32], dir[64];

	if (!scope)
		return error_set(err, EINVAL, "open failure %llu names no scope",
				 (unsigned long long)id);
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_with(json_decrefp) json_t *record = json_pack(
		"{s:s, s:I, s:s, s:s, s:o?, s:s?, s:O?, s:s}", "schema", GATE_CLOSE_SCHEMA,
		"receipt", (json_int_t)id, "scope", scope, "move", move, "by_receipt",
		by_receipt ? json_integer((json_int_t)by_receipt) : NULL, "reason", reason,
		"approval", approval, "closed_at", now);
	if (!record)
		return error_set(err, ENOMEM, "out of memory");
	char rel[64], id_text[24];
	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	snprintf(rel, sizeof(rel), "gate/closed/%s", name);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	/* The record first, through the one commit path: a crash after it leaves
	 * an entry the listing recognises as closed, once the ledger backs the
	 * record. Two closers race on RENAME_NOREPLACE; one wins. */
	cleanup_free char *text = jsonutil_dump_line(record);
	int r = text ? store_commit(store, LEDGER_GATE_CLOSE, id_text, rel, text, strlen(text), false,
				    err)
		     : error_set(err, ENOMEM, "out of memory");
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return error_prefix(err, "close failure %llu", (unsigned long long)id);
	gate_scope_dir(scope, dir);
	cleanup_close int open_fd = gate_open_dir(store, dir, false, err);
	if (open_fd >= 0)
		(void)unlinkat(open_fd, name, 0);
	return 0;
}

static bool gate_word_is_trivial(const struct policy *policy, const char *word)
{
	const char *slash = strrchr(word, '/');

	return strv_contains(policy->gate_trivial, slash ? slash + 1 : word);
}

bool gate_is_trivial(const struct policy *policy, const struct rules *rules, char *const *argv)
{
	char *const *cmd = rules_strip_wrappers(rules, argv);
	if (!cmd)
		return true; /* only wrappers: `env`, `nice` */
	const char *script = rules_shell_script(rules, cmd);
	if (!script)
		return gate_word_is_trivial(policy, cmd[0]);
	/* A script is trivial when every command in it is. */
	struct shell_script s;
	bool trivial = shell_script_parse(script, strlen(script), &s) == 0;
	for (size_t i = 0; trivial && i < s.n_commands; i++)
		trivial = gate_is_trivial(policy, rules, s.commands[i].argv);
	shell_script_release(&s);
	return trivial;
}

static void gate_entry_verdict(const struct rules *rules, json_t *entry,
			       struct rules_verdict *ret)
{
	const char *shell = jsonutil_str(entry, "shell");

	if (shell) {
		rules_classify_shell(rules, shell, ret);
		return;
	}
	cleanup_strv char **words = jsonutil_strv_from_array(json_object_get(entry, "argv"));
	rules_classify(rules, words, ret);
}

/* ack decides from the open entry (its command's risk): one the ledger does
 * not back (rewritten to look read-only) is refused. */
static int gate_entry_backed(struct store *store, json_t *entry, struct error *err)
{
	uint64_t id = (uint64_t)json_integer_value(json_object_get(entry, "receipt"));
	const char *scope = jsonutil_str(entry, "scope");
	char dir[64], rel[128], id_text[24];

	if (!scope || json_object_get(entry, "damaged"))
		return error_set(err, EPERM, "open failure %llu is damaged or deleted; `airlock ledger verify` says more",
				 (unsigned long long)id);
	gate_scope_dir(scope, dir);
	snprintf(rel, sizeof(rel), "%s/%llu.json", dir, (unsigned long long)id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	int r = ledger_backs_file(store, LEDGER_GATE_OPEN, id_text, rel, err);
	if (r < 0)
		return error_set(err, EPERM, "the ledger does not back open failure %llu (%s): refusing to trust it; `airlock ledger verify` says more",
				 (unsigned long long)id, r == -ENOENT ? "never committed" : "rewritten");
	return 0;
}

int gate_ack(struct store *store, const struct rules *rules, uint64_t id, const char *reason,
	     const char *passphrase, struct gate_ack_result *ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *entry = NULL;
	*ret = (struct gate_ack_result){ 0 };

	if (!reason || !*reason)
		return error_set(err, EINVAL, "an acknowledgement needs a reason");
	int r = gate_find_open(store, id, &entry, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "receipt %llu is not an open failure",
				 (unsigned long long)id);
	if (r < 0)
		return r;
	r = gate_entry_backed(store, entry, err);
	if (r < 0)
		return r;
	gate_entry_verdict(rules, entry, &ret->verdict);
	if (ret->verdict.risk == 1) {
		ret->move = "ack-read-only";
		return gate_close(store, entry, ret->move, 0, reason, NULL, err);
	}
	if (!passphrase) {
		ret->needs_approval = true;
		return error_set(err, EACCES,
				 "receipt %llu ran a command of risk %d (%s, rule %s): acknowledging it needs the approver",
				 (unsigned long long)id, ret->verdict.risk, ret->verdict.level,
				 ret->verdict.rule);
	}
	cleanup_with(approver_release) struct approver approver = { 0 };
	r = approver_load(store, &approver, err);
	if (r == -ENOENT)
		return error_set(err, EACCES,
				 "no approver is enrolled: a human enrols one with `airlock approver init` in their own terminal");
	if (r < 0)
		return r;
	/* The state directory's approver counts only as the ledger committed it
	 * (a swapped approver.json is refused); the system one is protected by
	 * its owner and mode (core/approver.h). */
	if (strcmp(approver.origin, APPROVER_SYSTEM_PATH) != 0 &&
	    ledger_backs_file(store, LEDGER_KIND_MAX, "approver", "approver.json", err) < 0)
		return error_set(err, EACCES, "the ledger does not back %s (replaced outside `airlock approver`): refusing it; `airlock ledger verify` says more",
				 approver.origin);
	char now[64];
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	cleanup_free char *argv_text = json_dumps(json_object_get(entry, "argv"), JSON_COMPACT);
	cleanup_free char *message = NULL;
	if (asprintf(&message, "airlock.ack/1\nreceipt=%llu\nscope=%s\nargv=%s\nreason=%s\nat=%s\n",
		     (unsigned long long)id, jsonutil_str(entry, "scope"), argv_text ? argv_text : "null",
		     reason, now) < 0)
		return error_set(err, ENOMEM, "out of memory");
	cleanup_with(json_decrefp) json_t *approval = NULL;
	r = approver_sign(&approver, passphrase, message, &approval, err);
	if (r < 0)
		return r;
	approver_fingerprint(&approver, ret->fingerprint);
	ret->move = "ack-approved";
	return gate_close(store, entry, ret->move, 0, reason, approval, err);
}

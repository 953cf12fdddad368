/* SPDX-License-Identifier: MIT */
#include "core/gate/gate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/dirread.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "core/gate/approver.h"
#include "core/net/netdecide.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"
#include "core/record/receipt.h"
#include "core/policy/rules.h"
#include "core/policy/shellwords.h"

#define GATE_ENTRY_MAX_BYTES   (64 << 10)
#define GATE_TAIL_LINES	       5
#define GATE_TAIL_BYTES	       1000
#define GATE_RECEIPT_MAX_BYTES (16 << 20)
/* File systems stamp times with a clock one tick (at most 10 ms at HZ=100)
 * behind the realtime clock; a marker born this close to a run's start is
 * taken as born during it, which only ever widens what the gate sees. */
#define GATE_MARKER_SLACK_NS (20ULL * 1000000ULL)

/* Whether dir/.git marks a scope (a directory, or a worktree's non-empty
 * file), and in *ret_born_ns when it appeared: its birth time, or on a file
 * system that keeps none its ctime, which is never earlier. */
static bool gate_marker(const char *dir, uint64_t *ret_born_ns)
{
	cleanup_free char *git = path_join(dir, ".git");
	struct statx stx;

	if (!git || statx(AT_FDCWD, git, AT_SYMLINK_NOFOLLOW,
			  STATX_TYPE | STATX_SIZE | STATX_BTIME | STATX_CTIME, &stx) < 0)
		return false;
	if (!(S_ISDIR(stx.stx_mode) || S_ISREG(stx.stx_mode)) || stx.stx_size == 0)
		return false;
	struct statx_timestamp t = (stx.stx_mask & STATX_BTIME) ? stx.stx_btime : stx.stx_ctime;
	*ret_born_ns = t.tv_sec < 0 ? 0 : (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
	return true;
}

int gate_scope_before(const char *dir, uint64_t born_before_ns, char **ret_scope, struct error *err)
{
	cleanup_free char *real = realpath(dir, NULL);
	if (!real)
		return error_set_errno(err, errno, "resolve %s", dir);
	/* The nearest directory holding a .git that was there before. */
	cleanup_free char *cur = strdup(real);
	while (cur) {
		uint64_t born = 0;
		if (gate_marker(cur, &born) &&
		    (born_before_ns == UINT64_MAX || born + GATE_MARKER_SLACK_NS < born_before_ns)) {
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

int gate_scope(const char *dir, char **ret_scope, struct error *err)
{
	return gate_scope_before(dir, UINT64_MAX, ret_scope, err);
}

/* Whether a failure of scope outer (an ancestor of scope) whose run started
 * at started_ns lies in scope's area too: every marker from scope up to
 * outer appeared after that run began, so when it failed, scope was part
 * of outer. A scope made later does not hide it. */
static bool gate_markers_newer(const char *scope, const char *outer, uint64_t started_ns)
{
	cleanup_free char *cur = strdup(scope);

	while (cur && strcmp(cur, outer) != 0 && path_is_under(cur, outer)) {
		uint64_t born = 0;
		if (gate_marker(cur, &born) && born + GATE_MARKER_SLACK_NS < started_ns)
			return false;
		char *up = path_dirname(cur);
		free(cur);
		cur = up;
	}
	return cur != NULL;
}

/* "2026-11-30T01:16:23.123Z" (clock_format_rfc3339) as nanoseconds; 0 when
 * it is not one. */
static uint64_t gate_parse_time(const char *s)
{
	struct tm tm = { 0 };
	unsigned ms = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3uZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	return t < 0 ? 0 : (uint64_t)t * 1000000000ULL + ms * 1000000ULL;
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
			if (mkdirat(store_dir_fd(store), path, 0700) < 0 && errno != EEXIST)
				return error_set_errno(err, errno, "create %s/%s",
						       store_path(store), path);
			if (!slash)
				break;
			*slash = '/';
		}
	}
	int fd = openat(store_dir_fd(store), rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !create
			       ? -ENOENT
			       : error_set_errno(err, errno, "open %s/%s", store_path(store), rel);
	return fd;
}

/* A directory's names (basic/dirread), "." and ".." not among them; a
 * read that fails ends the listing, as readdir() returning NULL did. fd is
 * read from its offset on and stays the caller's. */
struct gate_dir {
	struct dirread r;
	struct dirread_entry e;
	char buf[4096];
};

static void gate_dir_init(struct gate_dir *d, int fd)
{
	dirread_init(&d->r, fd, d->buf, sizeof(d->buf));
}

/* The next name in d; NULL at the end. */
static const char *gate_dir_next(struct gate_dir *d)
{
	return dirread_next(&d->r, &d->e) > 0 ? d->e.name : NULL;
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
static char *gate_output_tail(json_t *receipt)
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

/* The tail, after the hosts the network allowlist refused (at most 3;
 * docs/network.md): "denied by net policy: HOST:PORT (WHY); allow it in
 * .airlock/policy.json sandbox.net.allow", so the agent sees what to allow
 * when a download failed. */
static char *gate_tail(json_t *receipt)
{
	char *tail = gate_output_tail(receipt);
	cleanup_free char *denied =
		netdecide_denied_text(json_object_get(json_object_get(receipt, "sandbox"), "network"),
				      3);
	if (!tail || !denied)
		return tail;
	char *both = NULL;
	if (asprintf(&both, "%s%s%s", denied, *tail ? "\n" : "", tail) < 0)
		return tail;
	free(tail);
	return both;
}

static void gate_entry_verdict(const struct rules *rules, json_t *entry, struct rules_verdict *ret);

/* The open-failure entry (docs/gate.md) of a failed receipt: its one writer,
 * from the receipt's document (the values a re-run must match are the
 * receipt's own, byte for byte). With rules, it records the failed command's
 * risk and rule. */
static json_t *gate_failure_entry(json_t *receipt, const char *scope, const struct rules *rules)
{
	cleanup_free char *tail = gate_tail(receipt);
	char now[64];

	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *entry =
		json_pack("{s:s, s:O, s:s, s:O?, s:O, s:O?, s:O, s:O?, s:O?, s:O, s:s?, s:s}",
			  "schema", GATE_FAILURE_SCHEMA, "receipt", json_object_get(receipt, "id"),
			  "scope", scope, "source", json_object_get(receipt, "source"), "argv",
			  json_object_get(receipt, "argv"), "shell",
			  json_object_get(receipt, "shell"), "cwd", json_object_get(receipt, "cwd"),
			  "status", json_object_get(receipt, "status"), "exit_code",
			  json_object_get(receipt, "exit_code"), "expected_exits",
			  json_object_get(receipt, "expected_exits"), "tail", tail, "opened_at", now);
	/* A shell receipt from a host hook has no expected_exits: 0 was wanted. */
	if (entry && !json_object_get(entry, "expected_exits"))
		json_object_set_new(entry, "expected_exits", json_pack("[i]", 0));
	/* When its run began: a scope marker that appeared later hides nothing. */
	uint64_t started = gate_parse_time(jsonutil_str(receipt, "started_at"));
	if (entry && started)
		json_object_set_new(entry, "started_ns", json_integer((json_int_t)started));
	/* What a rerun must match (gate_same_command), kept so the match needs
	 * no receipt read back. */
	static const char *const same[] = { "argv_b64", "exec_path",	 "exec_identity",
					    "policy",	"policy_sha256", NULL };
	for (size_t i = 0; entry && same[i]; i++)
		if (json_object_get(receipt, same[i]))
			json_object_set(entry, same[i], json_object_get(receipt, same[i]));
	if (entry)
		json_object_set(entry, "sandbox_profile",
				json_object_get(json_object_get(receipt, "sandbox"), "profile"));
	if (entry && rules) {
		struct rules_verdict v;
		gate_entry_verdict(rules, entry, &v);
		json_object_set_new(entry, "risk", json_integer(v.risk));
		json_object_set_new(entry, "rule", json_string(v.rule));
	}
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

/* key of doc as a string; a null or missing key is NULL. */
static int gate_failure_str(json_t *doc, const char *key, const char **ret, struct error *err)
{
	json_t *v = json_object_get(doc, key);

	*ret = json_string_value(v);
	if (v && !json_is_null(v) && !json_is_string(v))
		return error_set(err, EBADMSG, "its %s is not a string", key);
	return 0;
}

/* A record's string fields, each at its offset in the record's struct. */
struct gate_str_field {
	const char *key;
	size_t offset;
};

/* Every field of fields read into base (gate_failure_str()); -EBADMSG
 * when one is not a string (err names the last), after all were read. */
static int gate_read_strs(json_t *doc, void *base, const struct gate_str_field *fields, size_t n,
			  struct error *err)
{
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (gate_failure_str(doc, fields[i].key,
				     (const char **)((char *)base + fields[i].offset), err) < 0)
			r = -EBADMSG;
	return r;
}

static int gate_failure_int(json_t *doc, const char *key, bool *ret_has, int64_t *ret, struct error *err)
{
	json_t *v = json_object_get(doc, key);

	*ret_has = json_is_integer(v);
	*ret = (int64_t)json_integer_value(v);
	if (v && !json_is_null(v) && !json_is_integer(v))
		return error_set(err, EBADMSG, "its %s is not an integer", key);
	return 0;
}

static int gate_failure_read_lists(json_t *doc, struct gate_failure *ret, struct error *err);

int gate_failure_from_json(json_t *doc, struct gate_failure *ret, struct error *err)
{
	static const struct gate_str_field strs[] = {
		{ "scope", offsetof(struct gate_failure, scope) },
		{ "source", offsetof(struct gate_failure, source) },
		{ "shell", offsetof(struct gate_failure, shell) },
		{ "cwd", offsetof(struct gate_failure, cwd) },
		{ "status", offsetof(struct gate_failure, status) },
		{ "tail", offsetof(struct gate_failure, tail) },
		{ "opened_at", offsetof(struct gate_failure, opened_at) },
		{ "rule", offsetof(struct gate_failure, rule) },
		{ "damaged", offsetof(struct gate_failure, damaged) },
		{ "close_rejected", offsetof(struct gate_failure, close_rejected) },
	};
	bool has;
	int64_t v;
	int r = 0;

	*ret = (struct gate_failure){ .doc = json_incref(doc) };
	if (!json_is_object(doc))
		return error_set(err, EBADMSG, "it is not an object");
	if (gate_failure_int(doc, "receipt", &has, &v, err) < 0)
		return -EBADMSG;
	ret->receipt = (uint64_t)v;
	if (gate_read_strs(doc, ret, strs, ARRAY_SIZE(strs), err) < 0)
		r = -EBADMSG;
	if (gate_failure_int(doc, "exit_code", &ret->has_exit_code, &ret->exit_code, err) < 0 ||
	    gate_failure_int(doc, "risk", &has, &ret->risk, err) < 0)
		r = -EBADMSG;
	if (gate_failure_int(doc, "started_ns", &has, &v, err) < 0)
		r = -EBADMSG;
	ret->started_ns = v > 0 ? (uint64_t)v : 0;
	int lists = gate_failure_read_lists(doc, ret, err);
	if (lists == -ENOMEM)
		return -ENOMEM;
	return lists < 0 ? -EBADMSG : r;
}

/* gate_failure_from_json(): argv and expected_exits. */
static int gate_failure_read_lists(json_t *doc, struct gate_failure *ret, struct error *err)
{
	int r = 0;

	json_t *argv = json_object_get(doc, "argv");
	if (json_is_array(argv)) {
		ret->argv = calloc(json_array_size(argv) + 1, sizeof(char *));
		if (!ret->argv)
			return error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < json_array_size(argv); i++) {
			ret->argv[i] = json_string_value(json_array_get(argv, i));
			if (!ret->argv[i]) {
				ret->argv[i] = "";
				r = error_set(err, EBADMSG, "its argv holds a non-string");
			}
		}
	} else if (argv && !json_is_null(argv)) {
		r = error_set(err, EBADMSG, "its argv is not an array");
	}
	json_t *exp = json_object_get(doc, "expected_exits");
	if (json_is_array(exp) && json_array_size(exp) > 0) {
		ret->expected_exits = calloc(json_array_size(exp), sizeof(int64_t));
		if (!ret->expected_exits)
			return error_set(err, ENOMEM, "out of memory");
		ret->n_expected_exits = json_array_size(exp);
		for (size_t i = 0; i < ret->n_expected_exits; i++) {
			json_t *e = json_array_get(exp, i);
			ret->expected_exits[i] = (int64_t)json_integer_value(e);
			if (!json_is_integer(e))
				r = error_set(err, EBADMSG, "its expected_exits holds a non-integer");
		}
	} else if (exp && !json_is_null(exp) && !json_is_array(exp)) {
		r = error_set(err, EBADMSG, "its expected_exits is not an array");
	}
	return r;
}

json_t *gate_failure_to_json(const struct gate_failure *f)
{
	if (!f->owned_rejected)
		return json_incref(f->doc);
	json_t *doc = json_copy(f->doc);
	if (doc && json_object_set_new(doc, "close_rejected", json_string(f->close_rejected)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

void gate_failure_release(struct gate_failure *f)
{
	json_decref(f->doc);
	free(f->argv);
	free(f->expected_exits);
	free(f->owned_why);
	free(f->owned_rejected);
	*f = (struct gate_failure){ 0 };
}

void gate_failures_release(struct gate_failures *l)
{
	for (size_t i = 0; i < l->n; i++)
		gate_failure_release(&l->v[i]);
	free(l->v);
	*l = (struct gate_failures){ 0 };
}

/* An entry read from gate/open as a gate_failure: one with a key of the wrong
 * type (written by something else than airlock) is kept, as damaged, with the
 * fields that could be read; it stays open. */
static int gate_failure_read(json_t *doc, struct gate_failure *ret, struct error *err)
{
	struct error why = { 0 };
	int r = gate_failure_from_json(doc, ret, &why);
	if (r == -ENOMEM)
		return error_set(err, ENOMEM, "out of memory");
	if (r < 0 && !ret->damaged) {
		ret->owned_why = strdup(why.msg);
		if (!ret->owned_why)
			return error_set(err, ENOMEM, "out of memory");
		ret->damaged = ret->owned_why;
	}
	return 0;
}

/* Whether a receipt's "dryrun" object, if it is one, lets it count as a
 * success: a dry run that failed (its change set unreadable too) is a
 * failure, and so is a verdict that is not one airlock writes. */
static bool gate_dryrun_passed(json_t *dryrun)
{
	if (!dryrun || json_is_null(dryrun))
		return true; /* not a dry run */
	int verdict = dryrun_verdict_from_name(jsonutil_str(dryrun, "verdict"));
	if (verdict < 0)
		return false;
	switch ((enum dryrun_verdict)verdict) {
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case DRYRUN_VERDICT_NONE:
	case _DRYRUN_VERDICT_MAX:
		return false;
	/* The command did what it was expected to; apply decides on the rest. */
	case DRYRUN_VERDICT_DRY_RUN_OK:
	case DRYRUN_VERDICT_NO_EFFECT:
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
	case DRYRUN_VERDICT_HOST_CODE:
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
	case DRYRUN_VERDICT_ATTRS_LOST:
	case DRYRUN_VERDICT_LINK_GROUP:
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
		return true;
	}
	return false;
}

bool gate_receipt_succeeded(json_t *receipt)
{
	const char *status = jsonutil_str(receipt, "status");

	return status && strcmp(status, "exited") == 0 &&
	       json_is_true(json_object_get(receipt, "match_expected")) &&
	       gate_host_code_clean(receipt) &&
	       gate_dryrun_passed(json_object_get(receipt, "dryrun"));
}

/* From the fields receipt_to_json() writes those keys from: status,
 * match_expected, host_code (null when not checked; else complete and
 * nothing moved aside: hostsafety_report_failed()) and the dry run's
 * summary, the very object the document holds. */
bool gate_receipt_struct_succeeded(const struct receipt *r)
{
	return r->status == RECEIPT_EXITED && r->match_expected &&
	       !(r->host_code && hostsafety_report_failed(r->host_code)) &&
	       gate_dryrun_passed(r->dryrun);
}

/* The receipt's document (receipt_to_json(), without its "gate"), built when
 * gate_prepare() first needs it: for a failure's entry, or to match the open
 * failures of its scope. A success in a scope with none open, the common
 * run, decides on the struct alone and never builds it. */
struct gate_receipt_doc {
	const struct receipt *receipt;
	json_t *doc;
};

static json_t *gate_receipt_doc_get(struct gate_receipt_doc *d, struct error *err)
{
	if (d->doc)
		return d->doc;
	struct receipt undecided = *d->receipt;
	undecided.gate = NULL;
	d->doc = receipt_to_json(&undecided);
	if (!d->doc)
		error_set(err, ENOMEM, "cannot build receipt %llu", (unsigned long long)d->receipt->id);
	return d->doc;
}


/* Equal, where missing equals null. */
static bool gate_equal(json_t *x, json_t *y)
{
	if (json_is_null(x))
		x = NULL;
	if (json_is_null(y))
		y = NULL;
	return (!x && !y) || (x && y && json_equal(x, y));
}

static bool gate_equal_key(json_t *a, json_t *b, const char *key)
{
	return gate_equal(json_object_get(a, key), json_object_get(b, key));
}

/* rerun: receipt is the re-run run.c made of entry's receipt. A failure
 * whose command was never resolved (not found) then accepts what the re-run
 * resolved afresh, and a command the host ran was re-run in the quarantine. */
static bool gate_command_matches(json_t *entry, json_t *receipt, bool rerun)
{
	static const char *const keys[] = { "argv",	      "argv_b64",      "cwd",
					    "expected_exits", "policy",	       "policy_sha256",
					    "exec_path",      "exec_identity", NULL };
	json_t *identity = json_object_get(receipt, "exec_identity");
	/* Entries older than exec_path have no key at all: never matched. */
	bool any_exec = rerun && json_is_null(json_object_get(entry, "exec_path"));

	if (!json_object_get(entry, "argv") || !json_object_get(entry, "cwd") ||
	    json_is_true(json_object_get(identity, "changed_during_run")))
		return false;
	for (size_t i = 0; keys[i]; i++)
		if (!(any_exec && strncmp(keys[i], "exec_", 5) == 0) &&
		    !gate_equal_key(entry, receipt, keys[i]))
			return false;
	json_t *profile = json_object_get(json_object_get(receipt, "sandbox"), "profile");
	json_t *was = json_object_get(entry, "sandbox_profile");
	if (rerun && json_is_string(was) && strcmp(json_string_value(was), "host") == 0)
		return json_is_string(profile) && strcmp(json_string_value(profile), "default") == 0;
	return gate_equal(was, profile);
}

/* Whether receipt ran the failure's command again exactly: the same argv
 * bytes, cwd, expected exits, resolved executable (path and identity, not
 * changed during the run), policy (origin and digest) and sandbox profile. */
static bool gate_same_command(json_t *entry, json_t *receipt)
{
	return gate_command_matches(entry, receipt, false);
}

/* gate_prepare() of a failed receipt: its failure opened, with its entry
 * (from the receipt's document) written before the receipt is. */
static int gate_open_failure(struct store *store, struct gate_receipt_doc *d, const struct rules *rules,
			     const char *scope, struct gate_effect *ret, struct error *err)
{
	uint64_t id = d->receipt->id;
	json_t *receipt = gate_receipt_doc_get(d, err);
	if (!receipt)
		return -ENOMEM;
	cleanup_with(json_decrefp) json_t *entry = gate_failure_entry(receipt, scope, rules);
	if (!entry)
		return error_set(err, ENOMEM, "out of memory");
	struct statepath dir = statepath_gate_open(scope);
	char id_text[24];
	struct statepath rel = statepath_gate_open_entry(scope, id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	cleanup_free char *text = jsonutil_dump_line(entry);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	int r = -ENOENT;
	/* A close may remove the scope's directory between our open and
	 * our write (gate_prune_scope_dir): the write then finds it gone
	 * (-ENOENT), and the directory is made again. */
	for (int tries = 0; r == -ENOENT && tries < 3; tries++) {
		*err = (struct error){ 0 };
		cleanup_close int fd = gate_open_dir(store, dir.s, true, err);
		if (fd < 0)
			return fd;
		/* The scope's path beside its entries, so that a gate
		 * elsewhere can tell whether this scope is nested in its own. */
		struct error ignored = { 0 };
		if (faccessat(fd, "scope", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			(void)file_write_atomic(fd, "scope", scope, strlen(scope), 0600,
						store_durable(store), &ignored);
		r = store_commit(store, LEDGER_GATE_OPEN, id_text, rel.s, text, strlen(text), false,
				 err);
	}
	if (r < 0)
		return error_prefix(err, "open failure %llu", (unsigned long long)id);
	ret->opened = true; /* a failed run closes nothing; its own status says why */
	return 0;
}

/* gate_prepare() of a verified success: the open failures of scope it
 * closes, matched against its document, or, for a --fixes run, the re-run
 * it needs. */
static int gate_match_open(struct store *store, struct gate_receipt_doc *d, const char *scope,
			   uint64_t fixes, uint64_t rerun_of, bool trivial, struct gate_effect *ret,
			   struct error *err)
{
	cleanup_with(gate_failures_release) struct gate_failures open = { 0 };
	int r = gate_list_open(store, scope, &open, err);
	if (r < 0)
		return r;
	json_t *receipt = NULL;
	if (open.n > 0 && !(receipt = gate_receipt_doc_get(d, err)))
		return -ENOMEM;
	json_t *exit_code = json_object_get(receipt, "exit_code");
	bool fixes_found = false, rerun_found = false;
	for (size_t i = 0; i < open.n; i++) {
		/* A re-run must match the entry's values as stored. */
		json_t *entry = open.v[i].doc;
		uint64_t failed = open.v[i].receipt;
		const char *move = NULL;
		if (failed == rerun_of && gate_command_matches(entry, receipt, true))
			move = "fixes";
		else if (gate_same_command(entry, receipt))
			move = "rerun";
		if (failed == rerun_of) {
			rerun_found = true;
			if (!move)
				snprintf(ret->note, sizeof(ret->note),
					 "the re-run is not the command of receipt %llu exactly",
					 (unsigned long long)rerun_of);
		}
		if (failed == fixes) {
			fixes_found = true;
			if (!move && json_integer_value(exit_code) != 0) {
				snprintf(ret->note, sizeof(ret->note),
					 "only an exit status of 0 closes a failure");
			} else if (!move) {
				/* What CMD did proves nothing by itself: the failed
				 * command must now pass. */
				ret->needs_rerun = true;
				snprintf(ret->note, sizeof(ret->note),
					 "%sit closes only if the re-run of receipt %llu succeeds",
					 trivial ? "a trivial success; " : "",
					 (unsigned long long)fixes);
			}
		}
		if (move && ret->n_closes < GATE_MAX_CLOSES) {
			ret->closes[ret->n_closes] = failed;
			ret->moves[ret->n_closes++] = move;
		}
	}
	if (fixes && !fixes_found)
		snprintf(ret->note, sizeof(ret->note), "receipt %llu is not an open failure in %s",
			 (unsigned long long)fixes, scope);
	if (rerun_of && !rerun_found)
		snprintf(ret->note, sizeof(ret->note), "receipt %llu is no longer open in %s",
			 (unsigned long long)rerun_of, scope);
	return 0;
}

/* gate_prepare() with the receipt's document built only when needed. */
static int gate_prepare_doc(struct store *store, struct gate_receipt_doc *d,
			    const struct rules *rules, const char *scope, uint64_t fixes,
			    uint64_t rerun_of, bool trivial, bool verified, bool cancelled_opens,
			    struct gate_effect *ret, struct error *err)
{
	bool cancelled = d->receipt->status == RECEIPT_CANCELLED;
	bool succeeded = gate_receipt_struct_succeeded(d->receipt);

	*ret = (struct gate_effect){
		.fixes = fixes, .verified = verified, .trivial = trivial, .rerun_of = rerun_of
	};
	ret->scope = strdup(scope);
	if (!ret->scope)
		return error_set(err, ENOMEM, "out of memory");

	if (!succeeded && rerun_of) {
		/* The same command failed again: the failure it re-ran says so. */
		snprintf(ret->note, sizeof(ret->note), "the re-run of receipt %llu %s; it stays open",
			 (unsigned long long)rerun_of, cancelled ? "was cancelled" : "failed");
		return 0;
	}
	/* Not a success (never closes), and, unless the policy says so, not a
	 * failure: the client ended it, nothing proved the command wrong. */
	if (cancelled && !cancelled_opens) {
		if (fixes)
			snprintf(ret->note, sizeof(ret->note),
				 "cancelled: no fix; receipt %llu stays open",
				 (unsigned long long)fixes);
		else
			snprintf(ret->note, sizeof(ret->note),
				 "cancelled: it opens no failure and closes none");
		return 0;
	}
	if (!succeeded)
		return gate_open_failure(store, d, rules, scope, ret, err);
	if (!verified) {
		if (fixes)
			snprintf(ret->note, sizeof(ret->note), "its status is not verified");
		return 0;
	}
	return gate_match_open(store, d, scope, fixes, rerun_of, trivial, ret, err);
}

int gate_prepare(struct store *store, const struct receipt *receipt, const struct rules *rules,
		 const char *scope, uint64_t fixes, uint64_t rerun_of, bool trivial, bool verified,
		 bool cancelled_opens, struct gate_effect *ret, struct error *err)
{
	struct gate_receipt_doc d = { .receipt = receipt };
	int r = gate_prepare_doc(store, &d, rules, scope, fixes, rerun_of, trivial, verified,
				 cancelled_opens, ret, err);
	json_decref(d.doc);
	return r;
}

void gate_effect_to_receipt(const struct gate_effect *e, struct receipt_gate *ret)
{
	*ret = (struct receipt_gate){
		.scope = e->scope,
		.opened = e->opened,
		.verified = e->verified,
		.fixes = e->fixes,
		.n_closes = e->n_closes,
		.note = e->note,
		.rerun = e->rerun,
		.rerun_of = e->rerun_of,
		.fix = e->fix,
	};
	for (size_t i = 0; i < e->n_closes; i++) {
		ret->closes[i] = e->closes[i];
		ret->moves[i] = e->moves[i];
	}
}

/* Closes the open failure entry by move; by_receipt 0 for acks. With
 * approver, the record is signed with passphrase's key (ack-approved). A
 * record already in place that does not hold is moved to gate/rejected/. */
static int gate_close(struct store *store, const struct gate_failure *entry, const char *move,
		      uint64_t by_receipt, const char *reason, const struct approver *approver,
		      const char *passphrase, struct error *err);

int gate_commit(struct store *store, const struct gate_effect *e, uint64_t by, struct error *err)
{
	for (size_t i = 0; i < e->n_closes; i++) {
		cleanup_with(gate_failure_release) struct gate_failure entry = { 0 };
		int r = gate_find_open(store, e->closes[i], &entry, err);
		if (r == -ENOENT)
			continue; /* closed meanwhile by another run */
		if (r == 0)
			r = gate_close(store, &entry, e->moves[i], by, NULL, NULL, NULL, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int gate_commit_receipt(struct store *store, struct receipt *receipt,
			const struct gate_effect *effect, const char *gate_error, json_t **ret_doc,
			char *warning, size_t warning_size, struct error *err)
{
	uint64_t id = receipt->id;
	struct receipt_gate gate = { .error = gate_error };

	warning[0] = '\0';
	if (effect)
		gate_effect_to_receipt(effect, &gate);
	receipt->gate = &gate;
	cleanup_with(json_decrefp) json_t *receipt_json = receipt_to_json(receipt);
	receipt->gate = NULL;
	if (!receipt_json)
		return error_set(err, ENOMEM, "cannot build receipt %llu", (unsigned long long)id);
	cleanup_free char *text = json_dumps(receipt_json, JSON_INDENT(2));
	if (!text)
		return error_set(err, ENOMEM, "cannot serialize receipt %llu", (unsigned long long)id);
	size_t n = strlen(text);
	text[n] = '\n'; /* json_dumps left room for the NUL only: swap it */
	int r = store_write_receipt(store, id, text, n + 1, err);
	if (r < 0)
		return r;
	struct error commit_err = { 0 };
	if (effect && gate_commit(store, effect, id, &commit_err) < 0)
		snprintf(warning, warning_size, "receipt %llu: gate: %.900s",
			 (unsigned long long)id, commit_err.msg);
	json_t *entry = receipt_index_entry(receipt_json);
	cleanup_free char *line = entry ? jsonutil_dump_line(entry) : NULL;
	json_decref(entry);
	struct error index_err = { 0 };
	if (!line || store_append_index(store, line, &index_err) < 0)
		snprintf(warning, warning_size, "receipt %llu is not in the index: %.900s",
			 (unsigned long long)id, index_err.msg[0] ? index_err.msg : "out of memory");
	if (ret_doc)
		*ret_doc = TAKE_PTR(receipt_json);
	return 0;
}

static int compare_newest_first(const void *a, const void *b)
{
	json_int_t x = (json_int_t)((const struct gate_failure *)a)->receipt;
	json_int_t y = (json_int_t)((const struct gate_failure *)b)->receipt;

	return (x < y) - (x > y);
}

/* doc (a reference taken) read into one more entry of l (gate_failure_read). */
static int gate_failures_add(struct gate_failures *l, json_t *doc, struct error *err)
{
	struct gate_failure *v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return error_set(err, ENOMEM, "out of memory");
	l->v = v;
	return gate_failure_read(doc, &l->v[l->n++], err);
}

/* The last entry of l, dropped. */
static void gate_failures_drop_last(struct gate_failures *l)
{
	gate_failure_release(&l->v[--l->n]);
}

/* A close record counts only when the ledger backs it: one written by
 * anything but store_commit() (a forged close) leaves the failure open. */
static bool gate_is_closed(struct store *store, uint64_t id)
{
	char id_text[24];
	struct error ignored;

	struct statepath name = statepath_gate_closed(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	return faccessat(store_dir_fd(store), name.s, F_OK, 0) == 0 &&
	       ledger_backs_file(store_ledger(store), LEDGER_GATE_CLOSE, id_text, name.s, &ignored) ==
		       0;
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
			    struct gate_failures *entries, struct error *err)
{
	cleanup_free uint64_t *ids = NULL;
	size_t n = 0;
	char prefix[sizeof(((struct statepath *)0)->s) + 1];
	struct error ignored;

	snprintf(prefix, sizeof(prefix), "%s/", dir);
	if (ledger_open_ids(store_ledger(store), prefix, &ids, &n, &ignored) < 0)
		return 0; /* no ledger: nothing more to know */
	for (size_t i = 0; i < n; i++) {
		bool listed = false;
		for (size_t k = 0; k < entries->n; k++)
			listed |= entries->v[k].receipt == ids[i];
		if (listed || gate_is_closed(store, ids[i]))
			continue;
		cleanup_with(json_decrefp) json_t *entry =
			json_pack("{s:s, s:I, s:s, s:s}", "schema", GATE_FAILURE_SCHEMA, "receipt",
				  (json_int_t)ids[i], "scope", scope, "damaged",
				  "its entry was deleted; the ledger has it open");
		if (!entry || gate_failures_add(entries, entry, err) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* receipts/<id>.json, its SHA-256 over the file's bytes and, when ret_doc,
 * the parsed document. -ENOENT when there is no such receipt. */
static int gate_read_receipt(struct store *store, uint64_t id, char hex[SHA256_HEX_SIZE],
			     json_t **ret_doc, struct error *err)
{
	char name[32];
	cleanup_free char *text = NULL;
	size_t n;

	/* The file, or the bytes the ledger commits when the file (a cache of
	 * the log: docs/ledger.md) is missing. */
	struct statepath path = statepath_receipt(id);
	snprintf(name, sizeof(name), "%llu", (unsigned long long)id);
	int r = store_read_record(store, LEDGER_RECEIPT, name, path.s, GATE_RECEIPT_MAX_BYTES,
				  &text, &n, err);
	if (r < 0)
		return r;
	sha256_hex(text, n, hex);
	return ret_doc ? jsonutil_parse_object(text, n, ret_doc, err) : 0;
}

static char *gate_json_text(json_t *v)
{
	return json_dumps(v ? v : json_null(), JSON_ENCODE_ANY | JSON_COMPACT);
}

/* The bytes an approver signs for an ack-approved close: the record's own
 * fields, each JSON-encoded, one a line (docs/close-format.md). Verifying
 * rebuilds them from the record, so an approval moved to another record,
 * or a record edited after signing, does not verify. */
static char *gate_close_message(json_t *record)
{
	static const char *const keys[] = { "receipt", "failed_sha256", "scope",
					    "move",    "reason",	"closed_at" };
	char *msg = strdup(GATE_CLOSE_SCHEMA "\n");

	for (size_t i = 0; msg && i < sizeof(keys) / sizeof(keys[0]); i++) {
		cleanup_free char *v = gate_json_text(json_object_get(record, keys[i]));
		char *next = NULL;
		if (!v || asprintf(&next, "%s%s=%s\n", msg, keys[i], v) < 0)
			next = NULL;
		free(msg);
		msg = next;
	}
	return msg;
}

/* Whether receipt doc says it closed failure id by move. */
static bool gate_receipt_closes(json_t *doc, uint64_t id, const char *move)
{
	json_t *gate = json_object_get(doc, "gate");
	size_t i;
	json_t *c;

	if (!json_is_true(json_object_get(gate, "verified")))
		return false;
	json_array_foreach(json_object_get(gate, "closes"), i, c) {
		const char *m = jsonutil_str(c, "move");
		if ((uint64_t)json_integer_value(json_object_get(c, "receipt")) == id && m &&
		    strcmp(m, move) == 0)
			return true;
	}
	return false;
}

/* gate_close_check(): the failed receipt, when it was written, is the one
 * the close names. ret_failed: its document, NULL when it was not written. */
static int gate_check_failed_digest(struct store *store, uint64_t id,
				    const struct gate_close_record *record, json_t **ret_failed,
				    struct error *why)
{
	struct error io = { 0 };
	char failed_hex[SHA256_HEX_SIZE];
	int r = gate_read_receipt(store, id, failed_hex, ret_failed, &io);

	if (r == -ENOENT) {
		if (!record->failed_sha256_null)
			return error_set(why, EBADMSG,
					 "it names a digest of receipt %llu, which does not exist",
					 (unsigned long long)id);
	} else if (r < 0) {
		return error_set(why, EBADMSG, "receipt %llu cannot be read: %.200s",
				 (unsigned long long)id, io.msg);
	} else if (!record->failed_sha256 || strcmp(record->failed_sha256, failed_hex) != 0) {
		return error_set(why, EBADMSG,
				 "receipt %llu does not have the digest it names (failed_sha256)",
				 (unsigned long long)id);
	}
	return 0;
}

/* gate_close_check() of a rerun or fixes close: the closing receipt. */
static int gate_check_closing_receipt(struct store *store, uint64_t id,
				      const struct gate_close_record *record, struct error *why)
{
	struct error io = { 0 };
	const char *move = record->move;
	uint64_t by = record->by_receipt;
	char by_hex[SHA256_HEX_SIZE];
	cleanup_with(json_decrefp) json_t *doc = NULL;

	if (by <= id)
		return error_set(why, EBADMSG, "it names no later closing receipt");
	int r = gate_read_receipt(store, by, by_hex, &doc, &io);
	if (r == -ENOENT)
		return error_set(why, EBADMSG, "its closing receipt %llu does not exist",
				 (unsigned long long)by);
	if (r < 0)
		return error_set(why, EBADMSG, "its closing receipt %llu cannot be read: %.200s",
				 (unsigned long long)by, io.msg);
	if (!record->by_sha256 || strcmp(record->by_sha256, by_hex) != 0)
		return error_set(why, EBADMSG,
				 "its closing receipt %llu does not have the digest it names (by_sha256)",
				 (unsigned long long)by);
	if ((uint64_t)json_integer_value(json_object_get(doc, "id")) != by ||
	    !gate_receipt_succeeded(doc) || !gate_receipt_closes(doc, id, move))
		return error_set(why, EBADMSG,
				 "its closing receipt %llu is not a verified success that closes %llu by %s",
				 (unsigned long long)by, (unsigned long long)id, move);
	/* Since receipt/2 only the re-run of the failure closes it by
	 * "fixes" (the --fixes run itself closes nothing). */
	const char *doc_schema = jsonutil_str(doc, "schema");
	json_t *rerun_of = json_object_get(json_object_get(doc, "gate"), "rerun_of");
	if (strcmp(move, "fixes") == 0 && doc_schema && strcmp(doc_schema, "airlock.receipt/1") != 0 &&
	    (!json_is_integer(rerun_of) || (uint64_t)json_integer_value(rerun_of) != id))
		return error_set(why, EBADMSG, "its closing receipt %llu is not the re-run of %llu",
				 (unsigned long long)by, (unsigned long long)id);
	return 0;
}

/* gate_close_check() of an ack-read-only close: the failed command (its
 * receipt's, else its entry's) is read-only by the built-in rules. */
static int gate_check_read_only(const struct gate_close_record *record, json_t *failed,
				const struct gate_failure *entry, struct error *why)
{
	json_t *source = failed ? failed : entry ? entry->doc : NULL;
	struct error io = { 0 };
	cleanup_with(rules_freep) struct rules *rules = NULL;
	struct rules_verdict v;

	if (!record->reason || !*record->reason)
		return error_set(why, EBADMSG, "an acknowledgement without a reason");
	if (!source || rules_load_default(&rules, &io) < 0)
		return error_set(why, EBADMSG, "the failed command cannot be judged");
	gate_entry_verdict(rules, source, &v);
	if (v.risk != 1)
		return error_set(why, EBADMSG, "the failed command is risk %d (rule %s), not read-only",
				 v.risk, v.rule);
	return 0;
}

/* gate_close_check() of an ack-approved close: signed by the enrolled
 * approver, over the record's fields as stored. */
static int gate_check_approved(struct store *store, const struct gate_close_record *record,
			       struct error *why)
{
	const char *key = record->public_key;
	cleanup_with(json_decrefp) json_t *doc = gate_close_record_to_json(record);
	cleanup_free char *msg = doc ? gate_close_message(doc) : NULL;

	if (!msg)
		return error_set(why, ENOMEM, "out of memory");
	if (!key || !approver_trusts(store, key))
		return error_set(why, EBADMSG,
				 "it is signed by %.16s, which is not the enrolled approver",
				 key ? key : "no key");
	if (!approver_verify_key(key, msg, record->signature))
		return error_set(why, EBADMSG, "its approver signature does not verify");
	return 0;
}

int gate_close_check(struct store *store, uint64_t id, const struct gate_close_record *record,
		     const struct gate_failure *entry, struct error *why)
{
	const char *move = record->move;

	if (!record->schema || strcmp(record->schema, GATE_CLOSE_SCHEMA) != 0)
		return error_set(why, EBADMSG, "it is not an %s record", GATE_CLOSE_SCHEMA);
	/* receipt is 0 when the record's is not an integer. */
	if (!record->receipt || record->receipt != id)
		return error_set(why, EBADMSG, "it is about receipt %lld, not %llu",
				 (long long)record->receipt, (unsigned long long)id);
	cleanup_with(json_decrefp) json_t *failed = NULL;
	int r = gate_check_failed_digest(store, id, record, &failed, why);
	if (r < 0)
		return r;
	if (move && (strcmp(move, "rerun") == 0 || strcmp(move, "fixes") == 0))
		return gate_check_closing_receipt(store, id, record, why);
	if (move && strcmp(move, "ack-read-only") == 0)
		return gate_check_read_only(record, failed, entry, why);
	if (move && strcmp(move, "ack-approved") == 0)
		return gate_check_approved(store, record, why);
	return error_set(why, EBADMSG, "it names no move airlock makes");
}

/* Whether failure id is closed: 1 by a valid record, 0 when there is no
 * record, -1 when the record is rejected (why says so). entry: its open
 * entry, when there is one. */
static int gate_closed_state(struct store *store, uint64_t id, const struct gate_failure *entry,
			     struct error *why)
{
	cleanup_with(json_decrefp) json_t *doc = NULL;

	struct statepath name = statepath_gate_closed(id);
	if (faccessat(store_dir_fd(store), name.s, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : (error_set_errno(why, errno, "%s", name.s), -1);
	if (!gate_is_closed(store, id)) {
		error_set(why, EPERM, "the ledger does not back %s", name.s);
		return -1;
	}
	if (gate_read_json(store_dir_fd(store), name.s, &doc, why) < 0)
		return -1;
	/* A record the reader refuses is checked as read: the check says why
	 * it does not hold. */
	struct gate_close_record record;
	struct error ignored = { 0 };
	(void)gate_close_record_from_json(doc, &record, &ignored);
	int r = gate_close_check(store, id, &record, entry, why);
	gate_close_record_release(&record);
	return r == 0 ? 1 : -1;
}

/* A failure of entry_scope, seen from scope: its own, one nested below it,
 * or one of an enclosing scope that covered scope when it failed (its cwd
 * is inside, or entry_scope is a git root and every marker in between is
 * newer than its run). Placed by its entry's values as stored (doc), which
 * an entry the reader refuses (its receipt of another type) still has. */
static bool gate_entry_visible(const char *scope, json_t *doc, const char *entry_scope)
{
	if (path_is_under(entry_scope, scope))
		return true;
	if (!path_is_under(scope, entry_scope))
		return false;
	const char *cwd = jsonutil_str(doc, "cwd");
	if (cwd && cwd[0] == '/' && path_is_under(cwd, scope))
		return true;
	/* A scope without a .git is a directory alone, not a tree: it never
	 * covered the directories below it. */
	uint64_t born;
	if (!gate_marker(entry_scope, &born))
		return false;
	json_int_t started = json_integer_value(json_object_get(doc, "started_ns"));
	return gate_markers_newer(scope, entry_scope, started > 0 ? (uint64_t)started : 0);
}

/* The open failures in one gate/open/<key>/ directory that scope sees.
 * dir_scope: the scope the directory is for, when known. dir_fd: the
 * directory, just opened (read from its start: gate_dir). */
static int gate_list_dir(struct store *store, int dir_fd, const char *dir_scope, bool own,
			 const char *scope, struct gate_failures *entries, struct error *err)
{
	struct gate_dir d;
	const char *name;
	gate_dir_init(&d, dir_fd);
	while ((name = gate_dir_next(&d))) {
		uint64_t id;
		if (!parse_entry_name(name, &id))
			continue;
		cleanup_with(json_decrefp) json_t *doc = NULL;
		struct error ignored = { 0 };
		if (gate_read_json(dir_fd, name, &doc, &ignored) < 0) {
			if (!dir_scope)
				continue; /* whose it is cannot be told */
			/* Unreadable but present: it still counts as open. */
			doc = json_pack("{s:s, s:I, s:s, s:s}", "schema", GATE_FAILURE_SCHEMA,
					"receipt", (json_int_t)id, "scope", dir_scope, "damaged",
					ignored.msg);
			if (!doc)
				return error_set(err, ENOMEM, "out of memory");
		}
		int r = gate_failures_add(entries, doc, err);
		if (r < 0)
			return r;
		struct gate_failure *f = &entries->v[entries->n - 1];
		const char *entry_scope = jsonutil_str(doc, "scope");
		if (!entry_scope)
			entry_scope = dir_scope;
		if (!own && (!entry_scope || !gate_entry_visible(scope, doc, entry_scope))) {
			gate_failures_drop_last(entries);
			continue;
		}
		struct error why = { 0 };
		int closed = gate_closed_state(store, id, f, &why);
		if (closed > 0) {
			/* A close that crashed before removing the entry. */
			(void)unlinkat(dir_fd, name, 0);
			gate_failures_drop_last(entries);
			continue;
		}
		if (closed < 0) {
			f->owned_rejected = strdup(why.msg);
			if (!f->owned_rejected)
				return error_set(err, ENOMEM, "out of memory");
			f->close_rejected = f->owned_rejected;
		}
	}
	return 0;
}

/* gate_list_open(): the directories of gate/open/, one per scope with open
 * failures: its own, and those of scopes nested below it or enclosing it
 * count. fd: gate/open/ (taken). */
static int gate_list_dirs(struct store *store, int fd, const char *scope, const char *own_key,
			  struct gate_failures *entries, struct error *err)
{
	cleanup_close int open_fd = fd;
	struct gate_dir d;
	const char *name;
	gate_dir_init(&d, open_fd);
	while ((name = gate_dir_next(&d))) {
		if (name[0] == '.')
			continue;
		cleanup_close int key_fd =
			openat(open_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (key_fd < 0)
			continue;
		bool own_dir = strcmp(name, own_key) == 0;
		cleanup_free char *dir_scope = NULL;
		if (own_dir) {
			dir_scope = strdup(scope);
		} else {
			size_t n;
			struct error ignored = { 0 };
			if (file_read_capped(key_fd, "scope", PATH_MAX, &dir_scope, &n, &ignored) == 0 &&
			    (strlen(dir_scope) != n || dir_scope[0] != '/' ||
			     (!path_is_under(dir_scope, scope) && !path_is_under(scope, dir_scope))))
				continue; /* a scope beside this one */
		}
		int r = gate_list_dir(store, key_fd, dir_scope, own_dir, scope, entries, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int gate_list_open(struct store *store, const char *scope, struct gate_failures *ret, struct error *err)
{
	cleanup_with(gate_failures_release) struct gate_failures entries = { 0 };

	*ret = (struct gate_failures){ 0 };
	struct statepath own = statepath_gate_open(scope);
	const char *own_key = own.s + strlen(STATEPATH_GATE_OPEN "/");
	int fd = gate_open_dir(store, STATEPATH_GATE_OPEN, false, err);
	/* Even with gate/open/ removed whole, the ledger's open failures stay
	 * open. */
	if (fd < 0 && fd != -ENOENT)
		return fd;
	if (fd >= 0) {
		int r = gate_list_dirs(store, fd, scope, own_key, &entries, err);
		if (r < 0)
			return r;
	}
	if (gate_add_deleted(store, scope, own.s, &entries, err) < 0)
		return -ENOMEM;
	if (entries.n > 1)
		qsort(entries.v, entries.n, sizeof(*entries.v), compare_newest_first);
	*ret = entries;
	entries = (struct gate_failures){ 0 };
	return 0;
}

int gate_find_open(struct store *store, uint64_t id, struct gate_failure *ret, struct error *err)
{
	char name[32];

	*ret = (struct gate_failure){ 0 };
	cleanup_close int fd = gate_open_dir(store, STATEPATH_GATE_OPEN, false, err);
	if (fd < 0)
		return fd;
	struct gate_dir d;
	const char *key;
	gate_dir_init(&d, fd);
	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	while ((key = gate_dir_next(&d))) {
		if (key[0] == '.')
			continue;
		cleanup_close int scope_fd = openat(fd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (scope_fd < 0 || faccessat(scope_fd, name, F_OK, 0) < 0)
			continue;
		cleanup_with(json_decrefp) json_t *doc = NULL;
		int r = gate_read_json(scope_fd, name, &doc, err);
		if (r == 0)
			r = gate_failure_read(doc, ret, err);
		if (r < 0) {
			gate_failure_release(ret);
			return r;
		}
		struct error why = { 0 };
		int closed = gate_closed_state(store, id, ret, &why);
		if (closed > 0) {
			(void)unlinkat(scope_fd, name, 0);
			gate_failure_release(ret);
			return -ENOENT;
		}
		if (closed < 0) {
			ret->owned_rejected = strdup(why.msg);
			if (!ret->owned_rejected) {
				gate_failure_release(ret);
				return error_set(err, ENOMEM, "out of memory");
			}
			ret->close_rejected = ret->owned_rejected;
		}
		return 0;
	}
	return -ENOENT;
}

int gate_close_record_from_json(json_t *doc, struct gate_close_record *ret, struct error *err)
{
	static const struct gate_str_field strs[] = {
		{ "schema", offsetof(struct gate_close_record, schema) },
		{ "scope", offsetof(struct gate_close_record, scope) },
		{ "move", offsetof(struct gate_close_record, move) },
		{ "reason", offsetof(struct gate_close_record, reason) },
		{ "approver", offsetof(struct gate_close_record, approver) },
		{ "closed_at", offsetof(struct gate_close_record, closed_at) },
		{ "failed_sha256", offsetof(struct gate_close_record, failed_sha256) },
		{ "by_sha256", offsetof(struct gate_close_record, by_sha256) },
	};
	bool has;
	int64_t v;
	int r = 0;

	*ret = (struct gate_close_record){ .doc = json_incref(doc) };
	if (!json_is_object(doc))
		return error_set(err, EBADMSG, "it is not an object");
	if (gate_read_strs(doc, ret, strs, ARRAY_SIZE(strs), err) < 0)
		r = -EBADMSG;
	if (gate_failure_int(doc, "receipt", &has, &v, err) < 0)
		r = -EBADMSG;
	ret->receipt = (uint64_t)v;
	if (gate_failure_int(doc, "by_receipt", &has, &v, err) < 0)
		r = -EBADMSG;
	ret->by_receipt = has ? (uint64_t)v : 0;
	ret->failed_sha256_null = json_is_null(json_object_get(doc, "failed_sha256"));
	json_t *approval = json_object_get(doc, "approval");
	if (approval && !json_is_null(approval) && !json_is_object(approval))
		r = error_set(err, EBADMSG, "its approval is not an object");
	if (gate_failure_str(approval, "public_key", &ret->public_key, err) < 0 ||
	    gate_failure_str(approval, "signature", &ret->signature, err) < 0)
		r = -EBADMSG;
	/* What approver_sign() writes besides; only the above are checked. */
	ret->approval_by = jsonutil_str(approval, "approver");
	ret->message = jsonutil_str(approval, "message");
	return r;
}

json_t *gate_close_record_to_json(const struct gate_close_record *r)
{
	if (r->doc)
		return json_incref(r->doc);
	/* Every key, null where it has no value (docs/close-format.md). */
	json_t *doc = json_pack("{s:s, s:I, s:s, s:s, s:s?, s:o?, s:s?, s:s?, s:s?, s:s}", "schema",
				r->schema, "receipt", (json_int_t)r->receipt, "scope", r->scope,
				"move", r->move, "failed_sha256", r->failed_sha256, "by_receipt",
				r->by_receipt ? json_integer((json_int_t)r->by_receipt) : NULL,
				"by_sha256", r->by_sha256, "reason", r->reason, "approver",
				r->approver, "closed_at", r->closed_at);
	if (doc && r->signature &&
	    json_object_set_new(doc, "approval",
				json_pack("{s:s, s:s, s:s, s:s}", "approver", r->approval_by,
					  "public_key", r->public_key, "message", r->message,
					  "signature", r->signature)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

void gate_close_record_release(struct gate_close_record *r)
{
	json_decref(r->doc);
	*r = (struct gate_close_record){ 0 };
}

int gate_find_closed(struct store *store, uint64_t id, struct gate_close_record *ret, struct error *err)
{
	cleanup_with(json_decrefp) json_t *doc = NULL;
	struct statepath name = statepath_gate_closed(id);

	*ret = (struct gate_close_record){ 0 };
	if (faccessat(store_dir_fd(store), name.s, F_OK, 0) < 0)
		return -ENOENT;
	int r = gate_read_json(store_dir_fd(store), name.s, &doc, err);
	if (r < 0)
		return r;
	r = gate_close_record_from_json(doc, ret, err);
	if (r < 0) {
		gate_close_record_release(ret);
		return error_prefix(err, "%s", name.s);
	}
	return 0;
}

/* A scope directory left without failures goes, so that listing gate/open/
 * costs what is open, not every scope that ever failed. An opener racing
 * with this makes it again (gate_prepare); an entry that lands between the
 * two steps keeps it, and its scope file is put back. */
static void gate_prune_scope_dir(struct store *store, const char *rel, int fd, const char *scope)
{
	int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0)
		return;
	cleanup_closedir DIR *d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "scope") != 0)
			return;
	(void)unlinkat(fd, "scope", 0);
	if (unlinkat(store_dir_fd(store), rel, AT_REMOVEDIR) < 0) {
		struct error ignored = { 0 };
		(void)file_write_atomic(fd, "scope", scope, strlen(scope), 0600,
					store_durable(store), &ignored);
	}
}

/* A close record that does not hold goes to gate/rejected/, kept for
 * whoever looks into how it got there, so the honest close can be written. */
static int gate_reject_record(struct store *store, int closed_fd, const char *name, struct error *err)
{
	char aside[96];

	cleanup_close int fd = gate_open_dir(store, STATEPATH_GATE_REJECTED, true, err);
	if (fd < 0)
		return fd;
	snprintf(aside, sizeof(aside), "%.*s.%llu.json", (int)(strlen(name) - strlen(".json")),
		 name, (unsigned long long)clock_realtime_ns());
	if (renameat(closed_fd, name, fd, aside) < 0 && errno != ENOENT)
		return error_set_errno(err, errno, "move %s/" STATEPATH_GATE_CLOSED "/%s aside",
				       store_path(store), name);
	return 0;
}

/* gate_close(): record (its document) committed as failure entry's close;
 * then the entry removed. */
static int gate_close_commit(struct store *store, const struct gate_failure *entry, json_t *record,
			     struct error *err)
{
	uint64_t id = entry->receipt;
	const char *scope = entry->scope;
	char name[32];

	cleanup_close int closed_fd = gate_open_dir(store, STATEPATH_GATE_CLOSED, true, err);
	if (closed_fd < 0)
		return closed_fd;
	char id_text[24];
	snprintf(name, sizeof(name), "%llu.json", (unsigned long long)id);
	struct statepath rel = statepath_gate_closed(id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	cleanup_free char *text = jsonutil_dump_line(record);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	/* The record first: a crash after it leaves an entry the listing
	 * recognises as closed. Two closers race on RENAME_NOREPLACE; one wins.
	 * A record already there counts only when it holds. Through the one
	 * commit path: the ledger backs the record. */
	int r = store_commit(store, LEDGER_GATE_CLOSE, id_text, rel.s, text, strlen(text), false, err);
	for (int tries = 0; r == -EEXIST && tries < 2; tries++) {
		struct error why = { 0 };
		if (gate_closed_state(store, id, entry, &why) > 0)
			return 0;
		*err = (struct error){ 0 };
		r = gate_reject_record(store, closed_fd, name, err);
		if (r == 0)
			r = store_commit(store, LEDGER_GATE_CLOSE, id_text, rel.s, text,
					 strlen(text), false, err);
	}
	if (r < 0)
		return error_prefix(err, "close failure %llu", (unsigned long long)id);
	struct statepath dir = statepath_gate_open(scope);
	cleanup_close int open_fd = gate_open_dir(store, dir.s, false, err);
	if (open_fd >= 0) {
		(void)unlinkat(open_fd, name, 0);
		gate_prune_scope_dir(store, dir.s, open_fd, scope);
	}
	return 0;
}

static int gate_close(struct store *store, const struct gate_failure *entry, const char *move,
		      uint64_t by_receipt, const char *reason, const struct approver *approver,
		      const char *passphrase, struct error *err)
{
	uint64_t id = entry->receipt;
	const char *scope = entry->scope;
	char now[64], failed_hex[SHA256_HEX_SIZE], by_hex[SHA256_HEX_SIZE];
	struct error ignored = { 0 };

	if (!scope)
		return error_set(err, EINVAL, "open failure %llu names no scope",
				 (unsigned long long)id);
	bool has_failed = gate_read_receipt(store, id, failed_hex, NULL, &ignored) == 0;
	if (by_receipt) {
		int r = gate_read_receipt(store, by_receipt, by_hex, NULL, err);
		if (r < 0)
			return error_prefix(err, "close failure %llu: closing receipt %llu",
					    (unsigned long long)id, (unsigned long long)by_receipt);
	}
	/* The approver in effect, for whoever audits the record later. */
	struct approver_check check = { 0 };
	(void)approver_check(store, &check, &ignored);
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	struct gate_close_record close = {
		.schema = GATE_CLOSE_SCHEMA,
		.receipt = id,
		.scope = scope,
		.move = move,
		.failed_sha256 = has_failed ? failed_hex : NULL,
		.failed_sha256_null = !has_failed,
		.by_receipt = by_receipt,
		.by_sha256 = by_receipt ? by_hex : NULL,
		.reason = reason,
		.approver = check.trusted[0] ? check.trusted : NULL,
		.closed_at = now,
	};
	cleanup_with(json_decrefp) json_t *approval = NULL;
	if (approver) {
		/* Signed over the record's fields as the record writes them. */
		cleanup_with(json_decrefp) json_t *unsigned_record = gate_close_record_to_json(&close);
		cleanup_free char *message =
			unsigned_record ? gate_close_message(unsigned_record) : NULL;
		if (!message)
			return error_set(err, ENOMEM, "out of memory");
		int r = approver_sign(approver, passphrase, message, &approval, err);
		if (r < 0)
			return r;
		close.approval_by = jsonutil_str(approval, "approver");
		close.public_key = jsonutil_str(approval, "public_key");
		close.message = jsonutil_str(approval, "message");
		close.signature = jsonutil_str(approval, "signature");
	}
	cleanup_with(json_decrefp) json_t *record = gate_close_record_to_json(&close);
	if (!record)
		return error_set(err, ENOMEM, "out of memory");
	return gate_close_commit(store, entry, record, err);
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

static void gate_entry_verdict(const struct rules *rules, json_t *entry, struct rules_verdict *ret)
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
static int gate_entry_backed(struct store *store, const struct gate_failure *entry, struct error *err)
{
	uint64_t id = entry->receipt;
	/* As stored: an entry whose receipt the reader refuses still has
	 * one, and the ledger then says whether it backs the entry. */
	const char *scope = jsonutil_str(entry->doc, "scope");
	char id_text[24], what[48];

	if (!scope || json_object_get(entry->doc, "damaged"))
		return error_set(err, EPERM,
				 "open failure %llu is damaged or deleted; `airlock ledger verify` says more",
				 (unsigned long long)id);
	struct statepath rel = statepath_gate_open_entry(scope, id);
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	snprintf(what, sizeof(what), "open failure %llu", (unsigned long long)id);
	return ledger_require(store_ledger(store), LEDGER_GATE_OPEN, id_text, rel.s, EPERM, what,
			      NULL, "refusing to trust it", err);
}

int gate_ack(struct store *store, const struct rules *rules, uint64_t id, const char *reason,
	     const char *passphrase, struct gate_ack_result *ret, struct error *err)
{
	cleanup_with(gate_failure_release) struct gate_failure entry = { 0 };
	*ret = (struct gate_ack_result){ 0 };

	if (!reason || !*reason)
		return error_set(err, EINVAL, "an acknowledgement needs a reason");
	int r = gate_find_open(store, id, &entry, err);
	if (r == -ENOENT)
		return error_set(err, ENOENT, "receipt %llu is not an open failure",
				 (unsigned long long)id);
	if (r < 0)
		return r;
	r = gate_entry_backed(store, &entry, err);
	if (r < 0)
		return r;
	gate_entry_verdict(rules, entry.doc, &ret->verdict);
	if (ret->verdict.risk == 1) {
		ret->move = "ack-read-only";
		return gate_close(store, &entry, ret->move, 0, reason, NULL, NULL, err);
	}
	if (!passphrase) {
		ret->needs_approval = true;
		return error_set(err, EACCES,
				 "receipt %llu ran a command of risk %d (%s, rule %s): acknowledging it needs the approver",
				 (unsigned long long)id, ret->verdict.risk, ret->verdict.level,
				 ret->verdict.rule);
	}
	/* Only the approver airlock enrolled signs: not one put in place of
	 * approver.json behind its back (core/gate/approver.h). */
	cleanup_with(approver_release) struct approver approver = { 0 };
	r = approver_load_in_effect(store, &approver, err);
	if (r < 0)
		return r;
	r = gate_close(store, &entry, "ack-approved", 0, reason, &approver, passphrase, err);
	if (r < 0)
		return r;
	approver_fingerprint(&approver, ret->fingerprint);
	ret->move = "ack-approved";
	return 0;
}

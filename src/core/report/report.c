/* SPDX-License-Identifier: MIT */
/* The report's data (report.h): read from the state directory through the
 * domains that own each record (store's index, the gate's entries and
 * close records, the permits' records, the dry runs' change sets, the
 * ledger), never written. */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/text.h"
#include "core/gate/gate.h"
#include "core/permit/record.h"
#include "core/permit/storage.h"
#include "core/report/diff.h"
#include "core/report/report.h"
#include "core/snapshot/dryrun_dir.h"
#include "core/snapshot/dryrun_view.h"
#include "core/store/statepath.h"
#include "core/store/store.h"
#include "ledger/ledger.h"

static char *report_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static char *report_json_strdup(json_t *o, const char *key)
{
	return report_strdup(json_string_value(json_object_get(o, key)));
}

/* Whether path is dir or lies below it. */
static bool report_path_in(const char *path, const char *dir)
{
	if (!path || !dir)
		return false;
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static char *report_join_argv(json_t *argv)
{
	size_t i, len = 1;
	json_t *a;
	json_array_foreach(argv, i, a)
		len += json_string_length(a) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	json_array_foreach(argv, i, a) {
		if (i)
			*p++ = ' ';
		size_t n = json_string_length(a);
		memcpy(p, json_string_value(a) ? json_string_value(a) : "", n);
		p += n;
	}
	*p = '\0';
	return s;
}

static char *report_join_strv(char *const *argv)
{
	size_t len = 1;
	for (size_t i = 0; argv && argv[i]; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (size_t i = 0; argv && argv[i]; i++) {
		if (i)
			*p++ = ' ';
		p = stpcpy(p, argv[i]);
	}
	*p = '\0';
	return s;
}

static int report_count_add(struct report *r, const char *name)
{
	for (size_t i = 0; i < r->n_statuses; i++)
		if (strcmp(r->statuses[i].name, name) == 0) {
			r->statuses[i].n++;
			return 0;
		}
	struct report_count *v = realloc(r->statuses, (r->n_statuses + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->statuses = v;
	v[r->n_statuses] = (struct report_count){ strdup(name), 1 };
	if (!v[r->n_statuses].name)
		return -ENOMEM;
	r->n_statuses++;
	return 0;
}

static int report_workspace_add(struct report *r, const char *cwd)
{
	for (size_t i = 0; i < r->n_workspaces; i++)
		if (strcmp(r->workspaces[i], cwd) == 0)
			return 0;
	if (r->n_workspaces >= REPORT_WORKSPACES_MAX)
		return 0;
	char **v = realloc(r->workspaces, (r->n_workspaces + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->workspaces = v;
	v[r->n_workspaces] = strdup(cwd);
	if (!v[r->n_workspaces])
		return -ENOMEM;
	v[++r->n_workspaces] = NULL;
	return 0;
}

static int report_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool report_run_kept(json_t *e, const struct report_options *o)
{
	const char *started = json_string_value(json_object_get(e, "started_at"));
	if (o->since && (!started || strcmp(started, o->since) < 0))
		return false;
	if (o->workspace && !report_path_in(json_string_value(json_object_get(e, "cwd")), o->workspace))
		return false;
	return true;
}

/* A cancelled run neither failed nor passed (docs/gate.md, "Cancelled
 * runs"): its own status says so. */
static bool report_entry_failed(json_t *e)
{
	const char *status = json_string_value(json_object_get(e, "status"));

	if (status && strcmp(status, "cancelled") == 0)
		return false;
	return !json_is_true(json_object_get(e, "match_expected")) ||
	       json_is_true(json_object_get(e, "host_code_failed"));
}

static int report_run_from_entry(json_t *e, struct report_run *ret)
{
	json_t *exit_code = json_object_get(e, "exit_code"), *argv = json_object_get(e, "argv");
	size_t n = json_array_size(argv);

	*ret = (struct report_run){
		.id = (uint64_t)json_integer_value(json_object_get(e, "id")),
		.started_at = report_json_strdup(e, "started_at"),
		.status = report_json_strdup(e, "status"),
		.cwd = report_json_strdup(e, "cwd"),
		.has_exit = json_is_integer(exit_code),
		.exit_code = json_integer_value(exit_code),
		.duration_ms = json_integer_value(json_object_get(e, "duration_ms")),
		.failed = report_entry_failed(e),
		.argv = calloc(n + 1, sizeof(char *)),
	};
	if (!ret->argv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(argv, i));
		if (!(ret->argv[i] = strdup(s ? s : "")))
			return -ENOMEM;
	}
	return 0;
}

/* The runs: counted by the filters, the newest timeline_max kept. kept_ids
 * gets every kept run's id, ascending (the failures are filtered by it). */
static int report_runs(struct report *r, json_t *entries, const struct report_options *o,
		       uint64_t **kept_ids, size_t *n_kept)
{
	size_t max = o->timeline_max ? o->timeline_max : REPORT_TIMELINE_DEFAULT;
	size_t n = json_array_size(entries);
	uint64_t *ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	*kept_ids = ids;
	*n_kept = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(entries, i);
		if (!report_run_kept(e, o))
			continue;
		ids[(*n_kept)++] = (uint64_t)json_integer_value(json_object_get(e, "id"));
		r->runs_total++;
		r->runs_failed += report_entry_failed(e);
		const char *status = json_string_value(json_object_get(e, "status"));
		const char *cwd = json_string_value(json_object_get(e, "cwd"));
		if (report_count_add(r, status ? status : "unknown") < 0 ||
		    (cwd && report_workspace_add(r, cwd) < 0))
			return -ENOMEM;
	}
	if (r->n_workspaces > 1)
		qsort(r->workspaces, r->n_workspaces, sizeof(char *), report_cmp_str);
	r->runs = calloc(MIN(max, r->runs_total) + 1, sizeof(*r->runs));
	if (!r->runs)
		return -ENOMEM;
	for (size_t i = n; i-- > 0 && r->n_runs < max;) {
		json_t *e = json_array_get(entries, i);
		if (!report_run_kept(e, o))
			continue;
		if (report_run_from_entry(e, &r->runs[r->n_runs++]) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The index entry of receipt id (entries are oldest first, ids increasing). */
static json_t *report_find_entry(json_t *entries, uint64_t id)
{
	size_t lo = 0, hi = json_array_size(entries);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		json_t *e = json_array_get(entries, mid);
		uint64_t v = (uint64_t)json_integer_value(json_object_get(e, "id"));
		if (v == id)
			return e;
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int report_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether failure id (its run started at `at`, in `cwd`) is in the report:
 * its run is, or, when the index has no run of it, by the same filters. */
static bool report_failure_kept(json_t *entries, const uint64_t *kept, size_t n_kept, uint64_t id,
				const char *at, const char *cwd, const struct report_options *o)
{
	if (report_find_entry(entries, id))
		return bsearch(&id, kept, n_kept, sizeof(*kept), report_cmp_u64) != NULL;
	if (o->since && (!at || strcmp(at, o->since) < 0))
		return false;
	return !o->workspace || report_path_in(cwd, o->workspace);
}

static struct report_failure *report_failure_new(struct report *r)
{
	struct report_failure *v = realloc(r->failures, (r->n_failures + 1) * sizeof(*v));
	if (!v)
		return NULL;
	r->failures = v;
	v[r->n_failures] = (struct report_failure){ 0 };
	return &v[r->n_failures++];
}

/* The end of a receipt's kept stdout and stderr, labelled. */
static char *report_output_of(struct store *store, uint64_t id)
{
	cleanup_free char *text = NULL;
	struct error err = { 0 };
	if (store_read_receipt(store, id, &text, &err) < 0)
		return NULL;
	cleanup_with(json_decrefp) json_t *doc = json_loads(text, 0, NULL);
	const char *out = json_string_value(json_object_get(doc, "stdout"));
	const char *errs = json_string_value(json_object_get(doc, "stderr"));
	size_t on = out ? strlen(out) : 0, en = errs ? strlen(errs) : 0;
	size_t ot = MIN(on, (size_t)REPORT_OUTPUT_TAIL), et = MIN(en, (size_t)REPORT_OUTPUT_TAIL);
	char *s = NULL;
	if (asprintf(&s, "%s%.*s%s%s%.*s",
		     ot < on ? "[stdout, end]\n"
		     : on    ? "[stdout]\n"
			     : "",
		     (int)ot, out ? out + on - ot : "", on && en ? "\n" : "",
		     et < en ? "[stderr, end]\n"
		     : en    ? "[stderr]\n"
			     : "",
		     (int)et, errs ? errs + en - et : "") < 0)
		return NULL;
	return s;
}

static int report_open_failures(struct report *r, struct store *store, json_t *entries,
				const uint64_t *kept, size_t n_kept, const struct report_options *o,
				struct error *err)
{
	cleanup_with(gate_failures_release) struct gate_failures open = { 0 };
	int ret = gate_list_open(store, "/", &open, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < open.n; i++) {
		const struct gate_failure *f = &open.v[i];
		if (!report_failure_kept(entries, kept, n_kept, f->receipt, f->opened_at, f->cwd, o))
			continue;
		struct report_failure *x = report_failure_new(r);
		if (!x)
			return -ENOMEM;
		x->receipt = f->receipt;
		x->open = true;
		x->scope = report_strdup(f->scope);
		x->opened_at = report_strdup(f->opened_at);
		x->argv_text = f->shell	 ? strdup(f->shell)
			       : f->argv ? report_join_strv((char *const *)f->argv)
					 : NULL;
		x->rejected = report_strdup(f->close_rejected ? f->close_rejected : f->damaged);
		x->output = report_output_of(store, f->receipt);
		if (!x->output)
			x->output = report_strdup(f->tail);
	}
	return 0;
}

/* The `--fixes` run a re-run followed: its receipt's gate.fix. */
static uint64_t report_fix_of(struct store *store, uint64_t rerun)
{
	cleanup_free char *text = NULL;
	struct error err = { 0 };
	if (store_read_receipt(store, rerun, &text, &err) < 0)
		return 0;
	cleanup_with(json_decrefp) json_t *doc = json_loads(text, 0, NULL);
	json_t *fix = json_object_get(json_object_get(doc, "gate"), "fix");
	return json_is_integer(fix) ? (uint64_t)json_integer_value(fix) : 0;
}

static int report_closed_failures(struct report *r, struct store *store, json_t *entries,
				  const uint64_t *kept, size_t n_kept, const struct report_options *o)
{
	cleanup_close int fd = openat(store_dir_fd(store), STATEPATH_GATE_CLOSED,
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	cleanup_closedir DIR *d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	size_t n_ids = 0, size = 0;
	cleanup_free uint64_t *ids = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		errno = 0;
		unsigned long long id = strtoull(de->d_name, &end, 10);
		if (errno || end == de->d_name || strcmp(end, ".json") != 0 || id == 0)
			continue;
		if (n_ids == size) {
			size = size ? size * 2 : 64;
			uint64_t *v = realloc(ids, size * sizeof(*v));
			if (!v)
				return -ENOMEM;
			ids = v;
		}
		ids[n_ids++] = id;
	}
	if (n_ids > 1)
		qsort(ids, n_ids, sizeof(*ids), report_cmp_u64);
	for (size_t i = n_ids; i-- > 0;) {
		struct gate_close_record rec = { 0 };
		struct error err = { 0 };
		if (gate_find_closed(store, ids[i], &rec, &err) < 0) {
			gate_close_record_release(&rec);
			continue;
		}
		json_t *e = report_find_entry(entries, ids[i]);
		const char *at = json_string_value(json_object_get(e, "started_at"));
		if (!report_failure_kept(entries, kept, n_kept, ids[i], at, rec.scope, o)) {
			gate_close_record_release(&rec);
			continue;
		}
		struct report_failure *x = report_failure_new(r);
		if (!x) {
			gate_close_record_release(&rec);
			return -ENOMEM;
		}
		x->receipt = ids[i];
		x->scope = report_strdup(rec.scope);
		x->opened_at = report_strdup(at);
		x->argv_text = e ? report_join_argv(json_object_get(e, "argv")) : NULL;
		x->move = report_strdup(rec.move);
		x->reason = report_strdup(rec.reason);
		x->approver = report_strdup(rec.public_key ? rec.public_key : rec.approver);
		x->closed_at = report_strdup(rec.closed_at);
		x->by_receipt = rec.by_receipt;
		x->output = report_output_of(store, ids[i]);
		if (rec.move && strcmp(rec.move, "fixes") == 0 && rec.by_receipt)
			x->fix_receipt = report_fix_of(store, rec.by_receipt);
		gate_close_record_release(&rec);
	}
	return 0;
}

/* ---- permits and their change sets ---- */

/* Reads dir_fd/path, a regular file reached without a symlink, at most
 * REPORT_DIFF_MAX_BYTES: 0, -EFBIG (too big: *size says how big), or
 * another -errno. */
static int report_read_beneath(int dir_fd, const char *path, char **ret, size_t *ret_n, int64_t *size)
{
	cleanup_close int fd = fd_open_beneath(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = st.st_size;
	if (st.st_size > REPORT_DIFF_MAX_BYTES)
		return -EFBIG;
	struct error err = { 0 };
	return fd_read_capped(fd, REPORT_DIFF_MAX_BYTES, ret, ret_n, &err);
}

static bool report_is_text(const char *s, size_t n)
{
	return memchr(s, '\0', n) == NULL && utf8_is_valid(s, n);
}

/* Where one side of a file's change is: a directory and a path below it. */
struct report_side {
	int dir_fd; /* -1: this side is empty (created, deleted) */
	const char *path;
	const char *sha256; /* what the change set recorded, or NULL */
};

static int report_file_summary(struct report_file *f, const char *fmt, ...) _printf_(2, 3);
static int report_file_summary(struct report_file *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&f->summary, fmt, ap);
	va_end(ap);
	if (r < 0) {
		f->summary = NULL;
		return -ENOMEM;
	}
	return 1;
}

/* Reads one side into *ret (an empty side is ""): 0, or 1 when the file
 * got a summary instead. */
static int report_side_read(struct report_file *f, const struct report_side *s, const char *which,
			    char **ret, size_t *ret_n)
{
	if (s->dir_fd < 0) {
		*ret = strdup("");
		*ret_n = 0;
		return *ret ? 0 : -ENOMEM;
	}
	int64_t size = -1;
	int r = report_read_beneath(s->dir_fd, s->path, ret, ret_n, &size);
	if (r == -EFBIG)
		return report_file_summary(f, "%s content: %lld bytes, above the %d KiB a diff shows",
					   which, (long long)size, REPORT_DIFF_MAX_BYTES / 1024);
	if (r < 0)
		return report_file_summary(f, "%s content is no longer kept: %s", which, strerror(-r));
	if (s->sha256) {
		char hex[SHA256_HEX_SIZE];
		sha256_hex(*ret, *ret_n, hex);
		if (strcmp(hex, s->sha256) != 0)
			return report_file_summary(f, "%s content changed since the dry run recorded it (SHA-256 %.16s... now, %.16s... recorded)",
						   which, hex, s->sha256);
	}
	if (!report_is_text(*ret, *ret_n))
		return report_file_summary(f, "binary %s content (%zu bytes)", which, *ret_n);
	return 0;
}

static int report_file_diff(struct report_file *f, const struct report_side *old,
			    const struct report_side *new)
{
	cleanup_free char *a = NULL, *b = NULL;
	size_t a_n = 0, b_n = 0;
	int r = report_side_read(f, old, "old", &a, &a_n);
	if (r != 0)
		return r < 0 ? r : 0;
	r = report_side_read(f, new, "new", &b, &b_n);
	if (r != 0)
		return r < 0 ? r : 0;
	struct error err = { 0 };
	size_t n;
	r = diff_unified(a, a_n, b, b_n, &f->diff, &n, &err);
	if (r == -E2BIG)
		return report_file_summary(f, "%s", err.msg) < 0 ? -ENOMEM : 0;
	return r;
}

static int report_change(struct report_permit *p, json_t *c, const struct dryrun_view *dr)
{
	struct report_file *f = &p->files[p->n_files++];
	json_t *size = json_object_get(c, "size"), *old_size = json_object_get(c, "old_size");
	f->path = report_json_strdup(c, "path");
	f->change = report_json_strdup(c, "change");
	f->type = report_json_strdup(c, "type");
	f->size = json_is_integer(size) ? json_integer_value(size) : -1;
	f->old_size = json_is_integer(old_size) ? json_integer_value(old_size) : -1;
	if (!f->path || !f->change)
		return -ENOMEM;
	if (!f->type || strcmp(f->type, "file") != 0)
		return 0; /* directories, links, modes: the change's own line says it all */
	bool created = strcmp(f->change, "created") == 0, deleted = strcmp(f->change, "deleted") == 0;
	if (!created && !deleted && strcmp(f->change, "modified") != 0)
		return 0;
	if (json_object_get(c, "path_b64"))
		return report_file_summary(f, "the name is not UTF-8: no diff");
	struct report_side old = { -1, f->path, json_string_value(json_object_get(c, "old_sha256")) };
	struct report_side new = { -1, f->path, json_string_value(json_object_get(c, "sha256")) };
	struct dryrun_view_place place;
	bool old_kept = true, new_kept = true;
	if (!created && (old_kept = dryrun_view_old(dr, f->path, &place)))
		old = (struct report_side){ place.dir_fd, place.path, old.sha256 };
	if (!deleted && (new_kept = dryrun_view_new(dr, f->path, &place)))
		new = (struct report_side){ place.dir_fd, place.path, new.sha256 };
	if (!old_kept || !new_kept)
		return report_file_summary(f, "the dry run's %s content is no longer kept",
					   !new_kept ? "new" : "old");
	return report_file_diff(f, &old, &new);
}

static int report_changeset(struct report_permit *p, struct store *store)
{
	cleanup_with(dryrun_view_release) struct dryrun_view dr = { .dir_fd = -1,
								    .ws_fd = -1,
								    .upper_fd = -1 };
	cleanup_free char *text = NULL;
	size_t n;
	struct error err = { 0 };
	int ret;

	if (dryrun_view_open(store, p->dryrun_id, &dr) < 0)
		return asprintf(&p->files_error, "the dry run's directory is gone (gc or discard)") < 0
			       ? -ENOMEM
			       : 0;
	p->dryrun_state = dryrun_state_name(dr.state);
	cleanup_with(json_decrefp) json_t *cs = NULL;
	if (dryrun_dir_read_changeset(store, p->dryrun_id, 256u << 20, &text, &n, &err) < 0 ||
	    !(cs = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL)))
		return asprintf(&p->files_error, "the change set cannot be read: %s",
				err.msg[0] ? err.msg : "not JSON") < 0
			       ? -ENOMEM
			       : 0;
	p->verdict = report_json_strdup(cs, "verdict");
	dryrun_view_open_contents(&dr, json_string_value(json_object_get(cs, "workspace")));
	json_t *changes = json_object_get(cs, "changes");
	p->files_total = json_array_size(changes);
	p->files = calloc(MIN(p->files_total, (size_t)REPORT_DIFF_MAX_FILES) + 1, sizeof(*p->files));
	if (!p->files)
		return -ENOMEM;
	for (size_t i = 0; i < p->files_total && i < REPORT_DIFF_MAX_FILES; i++)
		if ((ret = report_change(p, json_array_get(changes, i), &dr)) < 0)
			return ret;
	return 0;
}

static int report_history(struct report_permit *x, json_t *history)
{
	size_t n = json_array_size(history);
	x->history = calloc(n + 1, sizeof(*x->history));
	if (!x->history)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(history, i);
		struct report_event *e = &x->history[x->n_history++];
		e->at = report_json_strdup(h, "at");
		e->from = report_json_strdup(h, "from");
		e->to = report_json_strdup(h, "to");
		e->event = report_json_strdup(h, "event");
		cleanup_with(json_decrefp) json_t *rest = json_deep_copy(h);
		if (!rest)
			return -ENOMEM;
		json_object_del(rest, "at");
		json_object_del(rest, "from");
		json_object_del(rest, "to");
		json_object_del(rest, "event");
		if (json_object_size(rest))
			e->detail = json_dumps(rest, JSON_COMPACT | JSON_SORT_KEYS);
	}
	return 0;
}

static int report_permits(struct report *r, struct store *store, const struct report_options *o,
			  struct error *err)
{
	struct permit *list = NULL;
	size_t n = 0;
	int ret = permit_list(store, &list, &n, &r->permits_damaged, err);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	r->permits = calloc(n + 1, sizeof(*r->permits));
	if (!r->permits)
		ret = -ENOMEM;
	for (size_t i = n; ret == 0 && i-- > 0;) {
		const struct permit *p = &list[i];
		if (o->since && (!p->created_at || strcmp(p->created_at, o->since) < 0))
			continue;
		if (o->workspace && !report_path_in(p->workspace, o->workspace))
			continue;
		struct report_permit *x = &r->permits[r->n_permits++];
		x->id = p->id;
		x->label = report_strdup(p->p.label);
		x->reason = report_strdup(p->p.reason);
		x->state = report_strdup(permit_state_to_string(p->state));
		x->workspace = report_strdup(p->workspace);
		x->created_at = report_strdup(p->created_at);
		x->via_shell = p->p.via_shell;
		x->argv_text = p->p.via_shell && p->p.candidate ? strdup(p->p.candidate)
								: report_join_strv(p->p.argv);
		x->risk = p->risk;
		x->risk_declared = p->p.declared_risk;
		x->risk_classified = p->risk_classified;
		x->risk_observed = p->risk_observed;
		x->classify_rule = strdup(p->classify_rule);
		x->observed_why = strdup(p->observed_why);
		x->dryrun_id = p->dryrun_id;
		x->approver_key = report_json_strdup(p->approval, "public_key");
		ret = report_history(x, p->history);
		if (ret == 0 && x->dryrun_id)
			ret = report_changeset(x, store);
	}
	for (size_t i = 0; i < n; i++)
		permit_release(&list[i]);
	free(list);
	return ret == -ENOMEM ? error_set(err, ret, "out of memory") : ret;
}

/* ---- the ledger ---- */

static const char *const report_finding_names[] = {
	[LEDGER_FINDING_TAMPERED] = "TAMPERED", [LEDGER_FINDING_DIFFERS] = "DIFFERS",
	[LEDGER_FINDING_MISSING] = "MISSING",	[LEDGER_FINDING_UNBACKED] = "UNBACKED",
	[LEDGER_FINDING_TORN] = "TORN",
};

static int report_ledger(struct report_ledger *l, struct store *store, const struct report_options *o)
{
	struct ledger *ledger = store_ledger(store);
	struct ledger_vkey own;
	struct error err = { 0 };
	cleanup_free char *vkey_text = NULL;
	size_t n;

	if (faccessat(store_dir_fd(store), "ledger", F_OK, 0) < 0)
		return 0;
	l->present = true;
	const struct ledger_vkey *vkey = o->vkey;
	if (!vkey) {
		if (ledger_public_key(ledger, false, &vkey_text, &err) < 0 ||
		    ledger_vkey_parse(vkey_text, &own, &err) < 0)
			return asprintf(&l->error, "no key to verify with: %s", err.msg) < 0 ? -ENOMEM
											     : 0;
		vkey = &own;
		l->own_key = true;
	}
	if (ledger_checkpoint_text(ledger, &l->checkpoint, &n, &err) < 0)
		l->checkpoint = NULL;
	struct ledger_report rep;
	err = (struct error){ 0 };
	if (ledger_verify(ledger, vkey, NULL, 0, &rep, &err) < 0)
		return asprintf(&l->error, "verification could not run: %s", err.msg) < 0 ? -ENOMEM
											  : 0;
	bool tampered = false, differs = false, torn = false;
	l->findings = calloc(MIN(rep.n_findings, (size_t)REPORT_FINDINGS_MAX) + 1, sizeof(char *));
	for (size_t i = 0; i < rep.n_findings; i++) {
		const struct ledger_finding *f = &rep.findings[i];
		tampered |= f->type == LEDGER_FINDING_TAMPERED;
		differs |= f->type == LEDGER_FINDING_DIFFERS || f->type == LEDGER_FINDING_MISSING ||
			   f->type == LEDGER_FINDING_UNBACKED;
		torn |= f->type == LEDGER_FINDING_TORN;
		if (l->findings && l->n_findings < REPORT_FINDINGS_MAX &&
		    asprintf(&l->findings[l->n_findings], "%s %s", report_finding_names[f->type],
			     f->what) >= 0)
			l->n_findings++;
	}
	l->size = rep.size;
	l->checkpoint_size = rep.checkpoint_size;
	l->unsigned_entries = rep.unsigned_entries;
	l->root_b64 = base64_encode(rep.root, MERKLE_HASH_BYTES);
	l->verdict = strdup(tampered  ? "TAMPERED"
			    : differs ? "RECORDS_DIFFER"
			    : torn    ? "TORN_TAIL"
				      : "OK");
	ledger_report_release(&rep);
	return l->verdict && l->findings ? 0 : -ENOMEM;
}

int report_gather(struct store *store, const char *state_dir, const struct report_options *o,
		  struct report *ret, struct error *err)
{
	char now[64];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	clock_format_rfc3339((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, now,
			     sizeof(now));
	*ret = (struct report){ 0 };
	ret->state_dir = report_strdup(state_dir);
	ret->generated_at = strdup(now);
	if (!ret->generated_at)
		return error_set(err, ENOMEM, "out of memory");
	if (!store) {
		ret->no_state = true;
		return 0;
	}
	cleanup_with(json_decrefp) json_t *entries = NULL;
	int r = store_list(store, false, 0, &entries, &ret->index_skipped, err);
	if (r < 0)
		return r;
	cleanup_free uint64_t *kept = NULL;
	size_t n_kept = 0;
	if (report_runs(ret, entries, o, &kept, &n_kept) < 0)
		return error_set(err, ENOMEM, "out of memory");
	r = report_open_failures(ret, store, entries, kept, n_kept, o, err);
	if (r < 0)
		return error_prefix(err, "open failures");
	r = report_closed_failures(ret, store, entries, kept, n_kept, o);
	if (r < 0)
		return error_set_errno(err, -r, "read %s/%s", store_path(store), STATEPATH_GATE_CLOSED);
	r = report_permits(ret, store, o, err);
	if (r < 0)
		return error_prefix(err, "permits");
	r = report_ledger(&ret->ledger, store, o);
	if (r < 0)
		return error_set(err, -r, "out of memory");
	return 0;
}

static void report_file_release(struct report_file *f)
{
	free(f->path);
	free(f->change);
	free(f->type);
	free(f->diff);
	free(f->summary);
}

static void report_permit_release(struct report_permit *p)
{
	free(p->label);
	free(p->reason);
	free(p->state);
	free(p->workspace);
	free(p->argv_text);
	free(p->created_at);
	free(p->classify_rule);
	free(p->observed_why);
	free(p->verdict);
	free(p->approver_key);
	free(p->files_error);
	for (size_t i = 0; i < p->n_history; i++) {
		free(p->history[i].at);
		free(p->history[i].from);
		free(p->history[i].to);
		free(p->history[i].event);
		free(p->history[i].detail);
	}
	free(p->history);
	for (size_t i = 0; i < p->n_files; i++)
		report_file_release(&p->files[i]);
	free(p->files);
}

void report_release(struct report *r)
{
	free(r->state_dir);
	free(r->generated_at);
	for (size_t i = 0; i < r->n_statuses; i++)
		free(r->statuses[i].name);
	free(r->statuses);
	for (size_t i = 0; i < r->n_workspaces; i++)
		free(r->workspaces[i]);
	free(r->workspaces);
	for (size_t i = 0; i < r->n_runs; i++) {
		free(r->runs[i].started_at);
		free(r->runs[i].status);
		free(r->runs[i].cwd);
		strv_free(r->runs[i].argv);
	}
	free(r->runs);
	for (size_t i = 0; i < r->n_failures; i++) {
		struct report_failure *f = &r->failures[i];
		free(f->scope);
		free(f->argv_text);
		free(f->opened_at);
		free(f->move);
		free(f->reason);
		free(f->approver);
		free(f->closed_at);
		free(f->rejected);
		free(f->output);
	}
	free(r->failures);
	for (size_t i = 0; i < r->n_permits; i++)
		report_permit_release(&r->permits[i]);
	free(r->permits);
	free(r->ledger.error);
	free(r->ledger.root_b64);
	free(r->ledger.checkpoint);
	free(r->ledger.verdict);
	for (size_t i = 0; i < r->ledger.n_findings; i++)
		free(r->ledger.findings[i]);
	free(r->ledger.findings);
	*r = (struct report){ 0 };
}

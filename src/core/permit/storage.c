/* SPDX-License-Identifier: MIT */
#include "core/permit/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse.h"
#include "core/permit/proposal.h"
#include "core/permit/record.h"
#include "core/store/jsonutil.h"
#include "core/store/statepath.h"

int permit_open_dir(struct store *store, bool create, int *ret_fd, struct error *err)
{
	return store_open_permits(store, create, ret_fd, err);
}

int permit_lock(int dir_fd, uint64_t id, int *ret_fd, struct error *err)
{
	struct statepath name = statepath_permit_lock_name(id);
	int fd = openat(dir_fd, name.s, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return error_set_errno(err, e, "lock permit %llu", (unsigned long long)id);
	}
	*ret_fd = fd;
	return 0;
}

int permit_commit_transition(struct store *store, struct permit *p, enum permit_state to,
			     const char *event, json_t *detail, struct error *err)
{
	bool first = !p->history || json_array_size(p->history) == 0;
	enum permit_state from = p->state;
	char now[64], tmp[80];

	if (first ? !(to == PERMIT_PROPOSED || to == PERMIT_REJECTED || to == PERMIT_INVALID)
		  : !permit_transition_allowed(from, to))
		return error_set(err, EPERM, "permit %llu is %s: it cannot become %s",
				 (unsigned long long)p->id, permit_state_to_string(from),
				 permit_state_to_string(to));
	cleanup_close int dir_fd = -1;
	int r = permit_open_dir(store, true, &dir_fd, err);
	if (r < 0)
		return r;
	if (!p->history && !(p->history = json_array()))
		return error_set(err, ENOMEM, "out of memory");
	clock_format_rfc3339(clock_realtime_ns(), now, sizeof(now));
	json_t *entry = json_pack("{s:s, s:s, s:s, s:i}", "at", now, "to",
				  permit_state_to_string(to), "event", event, "risk", p->risk);
	if (!entry)
		return error_set(err, ENOMEM, "out of memory");
	if (!first)
		json_object_set_new(entry, "from", json_string(permit_state_to_string(from)));
	if (detail)
		json_object_update(entry, detail);
	if (json_array_append_new(p->history, entry) < 0)
		return error_set(err, ENOMEM, "out of memory");
	p->state = to;
	cleanup_with(json_decrefp) json_t *doc = permit_to_json(p);
	cleanup_free char *text =
		doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6)) : NULL;
	if (!text)
		r = error_set(err, ENOMEM, "out of memory");
	/* The one commit path: the record renamed in (its previous version
	 * kept for store_settle()), then its ledger entry, which carries its
	 * bytes and is the commit point: the one durable write of a
	 * transition (store_commit()). */
	struct statepath name = statepath_permit(p->id);
	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)p->id);
	if (r == 0) {
		size_t len = strlen(text);
		text[len] = '\n';
		r = store_commit(store, LEDGER_PERMIT_TRANSITION, tmp, name.s, text, len + 1, true,
				 err);
		text[len] = '\0';
	}
	if (r < 0) {
		/* Not committed: the caller's permit stays what the disk says. */
		json_array_remove(p->history, json_array_size(p->history) - 1);
		p->state = from;
		return error_prefix(err, "permit %llu: commit %s", (unsigned long long)p->id,
				    permit_state_to_string(to));
	}
	return 0;
}

/* permit_load_at() and permit_load(): the record's bytes (r, from
 * reading them) parsed as permit id. */
static int permit_load_text(int r, const char *text, size_t n, uint64_t id, struct permit *ret,
			    struct error *err)
{
	if (r == -ENOENT)
		return error_set(err, ENOENT, "no permit %llu", (unsigned long long)id);
	if (r == 0)
		r = permit_parse(text, n, ret, err);
	if (r == 0 && ret->id != id) {
		permit_release(ret);
		r = error_set(err, EINVAL, "its id is not %llu", (unsigned long long)id);
	}
	return r < 0 ? error_prefix(err, "permit %llu", (unsigned long long)id) : 0;
}

int permit_load_at(int dir_fd, uint64_t id, struct permit *ret, struct error *err)
{
	cleanup_free char *text = NULL;
	size_t n = 0;
	struct statepath name = statepath_permit_name(id);

	int r = file_read_capped(dir_fd, name.s, PERMIT_RECORD_MAX, &text, &n, err);
	return permit_load_text(r, text, n, id, ret, err);
}

int permit_load(struct store *store, uint64_t id, struct permit *ret, struct error *err)
{
	char id_text[24];
	cleanup_free char *text = NULL;
	size_t n = 0;
	struct statepath path = statepath_permit(id);

	/* The file, or when it is missing the bytes its last entry carries
	 * (the file written back as their cache). */
	snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
	int r = store_read_record(store, LEDGER_PERMIT_TRANSITION, id_text, path.s,
				  PERMIT_RECORD_MAX, &text, &n, err);
	return permit_load_text(r, text, n, id, ret, err);
}

static int permit_compare_id(const void *a, const void *b)
{
	uint64_t x = ((const struct permit *)a)->id, y = ((const struct permit *)b)->id;
	return x < y ? -1 : x > y;
}

/* permit_list()'s permit_load(): the file, or the log's newer bytes when
 * the file is a cache the log has moved past (store_read_record()), asked
 * of one reader for the whole list (*lk, opened at the first record). */
static int permit_list_load(struct store *store, struct ledger_lookup **lk, int dir_fd, uint64_t id,
			    struct permit *ret, struct error *err)
{
	char id_text[24], hex[SHA256_HEX_SIZE];
	cleanup_free char *text = NULL, *newer = NULL;
	size_t n = 0, newer_n = 0;
	struct statepath path = statepath_permit(id), name = statepath_permit_name(id);
	struct error ignored = { 0 };

	int r = file_read_capped(dir_fd, name.s, PERMIT_RECORD_MAX, &text, &n, err);
	if (r == 0 && (*lk || ledger_lookup_open(store_ledger(store), lk, &ignored) == 0)) {
		snprintf(id_text, sizeof(id_text), "%llu", (unsigned long long)id);
		sha256_hex(text, n, hex);
		if (ledger_lookup_record_since(*lk, LEDGER_PERMIT_TRANSITION, id_text, path.s, hex,
					       &newer, &newer_n, &ignored) == 1 &&
		    newer_n <= PERMIT_RECORD_MAX)
			return permit_load_text(0, newer, newer_n, id, ret, err);
	}
	return permit_load_text(r, text, n, id, ret, err);
}

int permit_list(struct store *store, struct permit **ret, size_t *ret_n, size_t *ret_damaged,
		struct error *err)
{
	cleanup_close int dir_fd = -1;
	*ret = NULL;
	*ret_n = *ret_damaged = 0;
	int r = permit_open_dir(store, false, &dir_fd, err);
	if (r == -ENOENT) {
		*err = (struct error){ 0 };
		return 0;
	}
	if (r < 0)
		return r;
	int dup = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup < 0 ? NULL : fdopendir(dup);
	if (!d) {
		if (dup >= 0)
			close(dup);
		return error_set_errno(err, errno, "list permits/");
	}
	struct permit *list = NULL;
	size_t count = 0;
	struct dirent *de;
	struct ledger_lookup *lk = NULL;
	while ((de = readdir(d))) {
		uint64_t id;
		char *dot = strchr(de->d_name, '.');
		if (!dot || strcmp(dot, STATEPATH_PERMIT_SUFFIX) != 0)
			continue;
		*dot = '\0';
		if (parse_u64(de->d_name, &id) < 0 || id == 0)
			continue;
		struct permit *grown = realloc(list, (count + 1) * sizeof(*list));
		if (!grown) {
			r = error_set(err, ENOMEM, "out of memory");
			break;
		}
		list = grown;
		struct error ignored = { 0 };
		if (permit_list_load(store, &lk, dir_fd, id, &list[count], &ignored) < 0)
			(*ret_damaged)++;
		else
			count++;
	}
	closedir(d);
	ledger_lookup_free(lk);
	if (r < 0) {
		for (size_t i = 0; i < count; i++)
			permit_release(&list[i]);
		free(list);
		return r;
	}
	if (count)
		qsort(list, count, sizeof(*list), permit_compare_id);
	*ret = list;
	*ret_n = count;
	return 0;
}

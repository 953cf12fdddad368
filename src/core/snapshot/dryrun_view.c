/* SPDX-License-Identifier: MIT */
#include "core/snapshot/dryrun_view.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/fileio.h"
#include "core/snapshot/journal.h"
#include "core/store/statepath.h"

/* A journal larger than this shows no backup: its old contents are not
 * shown. */
#define DRYRUN_VIEW_JOURNAL_MAX (64u << 20)

int dryrun_view_open(struct store *store, uint64_t id, struct dryrun_view *ret)
{
	struct error ignored = { 0 };

	*ret = (struct dryrun_view){ .dir_fd = -1, .ws_fd = -1, .upper_fd = -1 };
	struct statepath dir = statepath_dryrun(id);
	ret->dir_fd = openat(store_dir_fd(store), dir.s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ret->dir_fd < 0)
		return -errno;
	/* Shown, never acted on: a state the reader refuses is none. */
	if (dryrun_dir_read_state(store, id, &ret->state, &ignored) < 0)
		ret->state = DRYRUN_STATE_NONE;
	return 0;
}

void dryrun_view_open_contents(struct dryrun_view *v, const char *workspace)
{
	cleanup_free char *journal = NULL;
	size_t n;
	struct error ignored = { 0 };

	if (workspace)
		v->ws_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	v->upper_fd =
		openat(v->dir_fd, STATEPATH_UPPER, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (v->state == DRYRUN_STATE_APPLIED &&
	    file_read_capped(v->dir_fd, STATEPATH_JOURNAL, DRYRUN_VIEW_JOURNAL_MAX, &journal, &n,
			     &ignored) == 0) {
		char mark[64];
		if (journal_parse(journal, &v->ops, mark, sizeof(mark), &ignored) < 0)
			v->ops = (struct applyop_list){ 0 };
	}
}

/* The backup an applied dry run's journal moved path's old object to. */
static const char *dryrun_view_backup(const struct applyop_list *ops, const char *path)
{
	for (size_t i = 0; i < ops->n; i++)
		if (ops->items[i].backup && ops->items[i].path && strcmp(ops->items[i].path, path) == 0)
			return ops->items[i].backup;
	return NULL;
}

bool dryrun_view_old(const struct dryrun_view *v, const char *path, struct dryrun_view_place *ret)
{
	if (v->state == DRYRUN_STATE_APPLIED)
		*ret = (struct dryrun_view_place){ v->dir_fd, dryrun_view_backup(&v->ops, path) };
	else
		*ret = (struct dryrun_view_place){ v->ws_fd, path };
	return ret->dir_fd >= 0 && ret->path;
}

bool dryrun_view_new(const struct dryrun_view *v, const char *path, struct dryrun_view_place *ret)
{
	int fd = v->state == DRYRUN_STATE_APPLIED ? v->ws_fd : v->upper_fd;

	*ret = (struct dryrun_view_place){ fd, path };
	return ret->dir_fd >= 0;
}

void dryrun_view_release(struct dryrun_view *v)
{
	applyop_list_release(&v->ops);
	if (v->upper_fd >= 0)
		close(v->upper_fd);
	if (v->ws_fd >= 0)
		close(v->ws_fd);
	if (v->dir_fd >= 0)
		close(v->dir_fd);
	*v = (struct dryrun_view){ .dir_fd = -1, .ws_fd = -1, .upper_fd = -1 };
}

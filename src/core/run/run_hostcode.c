/* SPDX-License-Identifier: MIT */
#include "core/run/run_hostcode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/host/hostview.h"
#include "sandbox/pathcache.h"

void run_hostcode_release(struct run_hostcode *hc)
{
	hostsafety_report_release(&hc->report);
	strv_free(hc->known_gitdirs);
	strv_free(hc->sealed);
}

int run_hostcode_protect(struct run_hostcode *hc, const char *workspace, char ***read_only,
			 struct error *err)
{
	/* The repository's other files that would run code on the host, where
	 * they exist: read-only too (core/host/hostsafety.h). */
	if (hostsafety_protect_existing(workspace, read_only) < 0 ||
	    hostsafety_known_gitdirs(workspace, &hc->known_gitdirs) < 0)
		return -ENOMEM;
	for (size_t i = 0; *read_only && (*read_only)[i]; i++) {
		struct stat pst;
		if (pathcache_lstat((*read_only)[i], &pst) == 0 &&
		    (S_ISDIR(pst.st_mode) || (S_ISREG(pst.st_mode) && pst.st_nlink == 1)) &&
		    strv_push(&hc->sealed, (*read_only)[i]) < 0)
			return error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* The protected paths below the workspace, relative to it: with sealed
 * false those the walk judges, with sealed true those it leaves alone. In a
 * real run the sealed ones are those sealed before it and those below a
 * sealed directory (the command could not create them there:
 * run_hostcode.sealed). A dry run's snapshot holds only the command's own
 * changes: none is sealed. */
static char **run_hostcode_protected(const struct run_hostcode *hc,
				     const struct run_hostcode_where *w, bool sealed)
{
	char **rel = NULL;
	size_t n = strlen(w->workspace);

	for (size_t i = 0; w->read_only && w->read_only[i]; i++) {
		const char *p = w->read_only[i];
		bool is_sealed = false;
		for (size_t k = 0; !w->dryrun && hc->sealed && hc->sealed[k] && !is_sealed; k++)
			is_sealed = path_is_under(p, hc->sealed[k]);
		if (is_sealed != sealed)
			continue;
		if (strncmp(p, w->workspace, n) == 0 && p[n] == '/' && p[n + 1] &&
		    strv_push(&rel, p + n + 1) < 0) {
			strv_free(rel);
			return NULL;
		}
	}
	return rel;
}

/* A dry run's snapshot reaches nothing: its verdict names what it holds
 * (run_dryrun_finish), and no failure is opened for it. */
void run_hostcode_check(struct run_hostcode *hcs, const struct run_hostcode_where *w, struct receipt *rc)
{
	struct hostsafety_report *hc = &hcs->report;
	struct error err = { 0 };

	hcs->checked = true;
	if (!w->dryrun)
		rc->host_code = hc;
	cleanup_close int root_fd =
		open(w->dryrun ? w->upper : w->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int lower_fd =
		w->dryrun ? open(w->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	cleanup_strv char **protected_paths = run_hostcode_protected(hcs, w, false);
	cleanup_strv char **sealed_paths = run_hostcode_protected(hcs, w, true);
	cleanup_strv char **host_config_names = NULL;
	bool oom = hostview_config_names(&host_config_names) < 0;
	struct hostsafety_request req = {
		.root_fd = root_fd,
		.lower_fd = lower_fd,
		.protected_paths = protected_paths,
		.sealed_paths = sealed_paths,
		.since_ns = w->dryrun ? 0 : (int64_t)hcs->started_coarse_ns,
		.known_gitdirs = hcs->known_gitdirs,
		.host_config_names = host_config_names,
	};
	int r = oom ? error_set(&err, ENOMEM, "out of memory")
		: root_fd < 0 || (w->dryrun && lower_fd < 0)
			? error_set_errno(&err, errno, "cannot open the workspace")
			: hostsafety_scan(&req, hc, &err);
	if (r == 0 && !w->dryrun)
		r = hostsafety_move_aside(w->store, rc->id, root_fd, hc, &err);
	if (r < 0 && !hc->incomplete) {
		hc->incomplete = true;
		snprintf(hc->reason, sizeof(hc->reason), "%.250s", err.msg);
	}
	if (!hostsafety_report_failed(hc) || rc->error)
		return;
	if (w->dryrun && hc->n_items > 0)
		snprintf(hcs->message, sizeof(hcs->message),
			 "the snapshot holds %zu files that would run code on the host (dryrun.problems)",
			 hc->n_items);
	else if (w->dryrun)
		snprintf(hcs->message, sizeof(hcs->message),
			 "the snapshot could not be checked for code left for the host: %.300s",
			 hc->reason);
	else if (hc->n_items > 0)
		snprintf(hcs->message, sizeof(hcs->message),
			 "the command left %zu files that would run code on the host (first: %.200s); moved aside into %.200s/quarantine/%llu",
			 hc->n_items, hc->items[0].path, store_path(w->store),
			 (unsigned long long)rc->id);
	else
		snprintf(hcs->message, sizeof(hcs->message),
			 "the workspace could not be checked for code left for the host: %.300s",
			 hc->reason);
	rc->error = hcs->message;
}

/* SPDX-License-Identifier: MIT */
#include "core/run/run_dryrun.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/text.h"

void run_dryrun_release(struct run_dryrun *dr)
{
	free(dr->upper);
	free(dr->work);
	json_decref(dr->outside_writes);
	for (size_t i = 0; i < dr->n_path_events; i++)
		free(dr->path_events[i].path);
	free(dr->path_events);
}

int run_dryrun_prepare(struct run_dryrun *dr, struct store *store, uint64_t id, uint64_t permit_id,
		       const char *workspace, struct sandbox_isolation *iso, struct error *err)
{
	int r = dryrun_prepare(store, id, permit_id, workspace, &dr->upper, &dr->work, err);
	if (r < 0)
		return r;
	iso->overlay_upper = dr->upper;
	iso->overlay_work = dr->work;
	iso->trace_outside_writes = true;
	/* Honoured for root only (docs/dryrun.md, "Root"); plain run keeps
	 * the caller's own ids. */
	iso->map_ids_through = true;
	return 0;
}

int run_dryrun_collect(struct run_dryrun *dr, struct sandbox_result *res, struct error *err)
{
	int r;

	dr->ran = res->outcome != SANDBOX_SETUP_FAILED;
	if (dr->ran && (r = dryrun_settle(dr->upper, &dr->root_mode, err)) < 0)
		return r;
	dr->outside_writes = json_array();
	for (size_t i = 0; dr->outside_writes && i < res->n_outside_writes; i++)
		json_array_append_new(dr->outside_writes,
				      json_pack("{s:s, s:s, s:i}", "path", res->outside_writes[i].path,
						"syscall", res->outside_writes[i].syscall, "count",
						(int)res->outside_writes[i].count));
	dr->outside_writes_dropped = res->outside_writes_dropped;
	dr->path_events = TAKE_PTR(res->path_events);
	dr->n_path_events = res->n_path_events;
	dr->path_events_overflow = res->path_events_overflow;
	dr->reads_traced = res->reads_traced;
	res->n_path_events = 0;
	dr->scratch_counted = res->scratch_counted;
	dr->owners = res->manifest.ids_mapped;
	/* Root's real run would have made them; anyone else's fails too. */
	dr->device_nodes = geteuid() == 0 ? res->device_nodes : 0;
	dr->privileged_xattrs = geteuid() == 0 ? res->privileged_xattrs : 0;
	/* The owner's real run makes a set-id file as root's does. */
	dr->setid_refused = res->setid_refused;
	memcpy(dr->setid_syscall, res->setid_syscall, sizeof(dr->setid_syscall));
	dr->scratch_entries = res->scratch_entries;
	dr->scratch_bytes = res->scratch_bytes;
	return 0;
}

int run_dryrun_finish(const struct run_dryrun *dr, const struct dryrun_request *base,
		      struct store *store, uint64_t id, json_t *doc, json_t **ret_summary,
		      enum dryrun_verdict *ret_verdict, struct error *err)
{
	struct dryrun_summary summary = { .verdict = DRYRUN_VERDICT_DRY_RUN_FAILED };

	if (dr->ran) {
		struct dryrun_request req = *base;
		req.upper = dr->upper;
		req.work = dr->work;
		req.root_mode = dr->root_mode;
		req.outside_writes = dr->outside_writes;
		req.outside_writes_dropped = dr->outside_writes_dropped;
		req.path_events = dr->path_events;
		req.n_path_events = dr->n_path_events;
		req.path_events_overflow = dr->path_events_overflow;
		req.reads_traced = dr->reads_traced;
		req.scratch_counted = dr->scratch_counted;
		req.scratch_entries = dr->scratch_entries;
		req.scratch_bytes = dr->scratch_bytes;
		req.owners = dr->owners;
		req.device_nodes = dr->device_nodes;
		req.privileged_xattrs = dr->privileged_xattrs;
		req.setid_refused = dr->setid_refused;
		req.setid_syscall = dr->setid_syscall;
		struct error finish_err = { 0 };
		int r = dryrun_finish(store, id, &req, &summary, &finish_err);
		if (r == -ENOMEM) {
			dryrun_summary_release(&summary);
			*err = finish_err;
			return r;
		}
		/* The change set could not be read (a tree deeper than the walk
		 * goes, too few descriptors...): nothing can be applied, the
		 * receipt says why, and the gate opens a failure for it. */
		if (r < 0) {
			dryrun_summary_release(&summary);
			/* The message may name a path that is not UTF-8. */
			cleanup_free char *msg =
				utf8_sanitize(finish_err.msg, strlen(finish_err.msg), NULL);
			summary.verdict = DRYRUN_VERDICT_DRY_RUN_FAILED;
			summary.problems = msg ? json_pack("[{s:s}]", "changeset_error", msg) : NULL;
			if (!summary.problems)
				return error_set(err, ENOMEM, "out of memory");
		}
	}
	if (!summary.problems && !(summary.problems = json_array()))
		return error_set(err, ENOMEM, "out of memory");
	summary.outside_writes = dr->outside_writes;
	summary.outside_writes_dropped = dr->outside_writes_dropped;
	if (!base->succeeded)
		(void)dryrun_explain_failure(&summary,
					     json_string_value(json_object_get(doc, "stdout")),
					     json_string_value(json_object_get(doc, "stderr")));
	json_t *o = dryrun_summary_to_json(&summary);
	enum dryrun_verdict verdict = summary.verdict;
	dryrun_summary_release(&summary);
	if (!o)
		return error_set(err, ENOMEM, "out of memory");
	*ret_summary = o;
	*ret_verdict = verdict;
	return 0;
}

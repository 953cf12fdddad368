/* SPDX-License-Identifier: MIT */
#include "core/snapshot/changeset_collect.h"

#include <errno.h>
#include <sys/stat.h>

#include "basic/cleanup.h"
#include "core/snapshot/changeset.h"

/* The document around the changes, as dryrun.c has always written it. */
static json_t *changeset_collect_doc(const struct changeset_collect_request *req,
				     const struct stat *ws, json_t *changes)
{
	cleanup_with(json_decrefp) json_t *doc =
		json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:O}", "schema", CHANGESET_SCHEMA, "receipt",
			  (json_int_t)req->receipt, "workspace", req->workspace, "workspace_dev",
			  (json_int_t)ws->st_dev, "workspace_ino", (json_int_t)ws->st_ino, "verdict",
			  dryrun_verdict_name(DRYRUN_VERDICT_DRY_RUN_OK), "changes", changes);
	if (!doc)
		return NULL;
	if (req->scratch_counted &&
	    json_object_set_new(doc, "scratch",
				json_pack("{s:I, s:I}", "entries", (json_int_t)req->scratch_entries,
					  "bytes", (json_int_t)req->scratch_bytes)) < 0)
		return NULL;
	return TAKE_PTR(doc);
}

int changeset_collect(const struct changeset_collect_request *req, struct changeset **ret,
		      json_t **ret_link_problems, struct error *err)
{
	cleanup_with(json_decrefp) json_t *changes = NULL;
	int r = changeset_compute(req->upper, req->workspace, req->root_mode, req->owners, &changes,
				  err);
	if (r < 0)
		return r;
	/* The workspace's identity: apply refuses another directory (or a
	 * symlink) put at its path since. */
	struct stat ws;
	if (stat(req->workspace, &ws) < 0)
		return error_set_errno(err, errno, "stat the workspace %s", req->workspace);
	cleanup_with(changeset_freep) struct changeset *cs = NULL;
	{
		cleanup_with(json_decrefp) json_t *doc = changeset_collect_doc(req, &ws, changes);
		if (!doc)
			return error_set(err, ENOMEM, "out of memory");
		r = changeset_from_json(doc, &cs, err);
		if (r < 0)
			return r;
	}
	cleanup_with(json_decrefp) json_t *link_problems = NULL;
	if (req->trace)
		r = linkgroups_judge(req->upper, req->workspace, cs, req->trace, &link_problems, err);
	else if (!(link_problems = json_array()))
		r = error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cs);
	*ret_link_problems = TAKE_PTR(link_problems);
	return 0;
}

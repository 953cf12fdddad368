/* SPDX-License-Identifier: MIT */
/* Approvals fetched from the mirror (core/permit/mirrorapproval.h). */
#include "core/permit/mirrorapproval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/cleanup.h"
#include "core/store/jsonutil.h"
#include "core/store/remotes.h"
#include "ledger/pgmirror.h"

#define MIRRORAPPROVAL_MAX 16 /* as airlock.approve() bounds them */

struct mirrorapproval_rows {
	char *approvals[MIRRORAPPROVAL_MAX];
	size_t n;
};

static int mirrorapproval_on_row(void *arg, int n, const char *const *v, struct error *err)
{
	struct mirrorapproval_rows *rows = arg;
	if (n < 1 || !v[0] || rows->n >= MIRRORAPPROVAL_MAX)
		return 0;
	if (!(rows->approvals[rows->n] = strdup(v[0])))
		return error_set(err, ENOMEM, "out of memory");
	rows->n++;
	return 0;
}

int mirrorapproval_fetch(struct store *store, const struct rules *rules, uint64_t id,
			 struct permit *ret, struct mirrorapproval_result *res, struct error *err)
{
	*res = (struct mirrorapproval_result){ .outcome = MIRRORAPPROVAL_NONE };
	*ret = (struct permit){ 0 };
	struct permit p;
	struct error ignored = { 0 };
	if (permit_load(store, id, &p, &ignored) < 0)
		return 0; /* the step itself says so */
	bool awaits = (p.state == PERMIT_DRY_RUN_OK || p.state == PERMIT_REJECTED_WITHOUT_APPROVAL) &&
		      p.risk >= 4 && !p.approval;
	permit_release(&p);
	if (!awaits)
		return 0;
	struct remotes_mirror cfg = { 0 };
	int r = remotes_mirror_get(store, &cfg, &ignored);
	if (r == -ENOENT || (r == 0 && (!cfg.conninfo || !cfg.host))) {
		remotes_mirror_release(&cfg);
		return 0;
	}
	if (r < 0) {
		snprintf(res->why, sizeof(res->why), "%.1000s", ignored.msg);
		res->outcome = MIRRORAPPROVAL_UNREACHABLE;
		return 0;
	}
	char sid[24];
	snprintf(sid, sizeof(sid), "%llu", (unsigned long long)id);
	const char *const params[] = { cfg.host, sid };
	struct mirrorapproval_rows rows = { 0 };
	struct error qerr = { 0 };
	r = pgmirror_query(cfg.conninfo,
			   "SELECT approval FROM airlock.approvals_for($1, $2::bigint) LIMIT 16", 2,
			   params, mirrorapproval_on_row, &rows, &qerr);
	remotes_mirror_release(&cfg);
	if (r < 0) {
		for (size_t i = 0; i < rows.n; i++)
			free(rows.approvals[i]);
		if (r == -ENOMEM)
			return error_set(err, ENOMEM, "out of memory");
		res->outcome = MIRRORAPPROVAL_UNREACHABLE;
		snprintf(res->why, sizeof(res->why), "%.1000s", qerr.msg);
		return 0;
	}
	res->held = rows.n;
	r = 0;
	for (size_t i = 0; i < rows.n; i++) {
		if (res->outcome != MIRRORAPPROVAL_APPROVED && r == 0) {
			cleanup_with(json_decrefp) json_t *approval =
				json_loads(rows.approvals[i], 0, NULL);
			struct error aerr = { 0 };
			int a = permit_approve_signed(store, rules, id, approval, "mirror", ret, &aerr);
			if (a == 0) {
				res->outcome = MIRRORAPPROVAL_APPROVED;
			} else if (a == -EACCES) {
				/* the newest one's reason is the one said */
				if (res->outcome != MIRRORAPPROVAL_REFUSED)
					snprintf(res->why, sizeof(res->why), "%.1000s", aerr.msg);
				res->outcome = MIRRORAPPROVAL_REFUSED;
			} else {
				/* the permit's own state or workspace: the step says it */
				r = a;
				*err = aerr;
			}
		}
		free(rows.approvals[i]);
	}
	return r;
}

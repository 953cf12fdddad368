/* SPDX-License-Identifier: MIT */
#include "core/snapshot/dryrun_verdict.h"

#include <errno.h>
#include <string.h>

static const char *const dryrun_verdict_names[_DRYRUN_VERDICT_MAX] = {
	[DRYRUN_VERDICT_DRY_RUN_OK] = "DRY_RUN_OK",
	[DRYRUN_VERDICT_DRY_RUN_FAILED] = "DRY_RUN_FAILED",
	[DRYRUN_VERDICT_NO_EFFECT] = "NO_EFFECT",
	[DRYRUN_VERDICT_PRIVILEGED_FILE] = "PRIVILEGED_FILE",
	[DRYRUN_VERDICT_UNEXPECTED_PATH] = "UNEXPECTED_PATH",
	[DRYRUN_VERDICT_EXPECTED_PATH_MISSING] = "EXPECTED_PATH_MISSING",
	[DRYRUN_VERDICT_OUTSIDE_WRITE] = "OUTSIDE_WRITE",
	[DRYRUN_VERDICT_LINK_GROUP] = "LINK_GROUP",
	[DRYRUN_VERDICT_HOST_CODE] = "HOST_CODE",
	[DRYRUN_VERDICT_NEEDS_PRIVILEGE] = "NEEDS_PRIVILEGE",
	[DRYRUN_VERDICT_ATTRS_LOST] = "ATTRS_LOST",
	[DRYRUN_VERDICT_RENAME_INCOMPLETE] = "RENAME_INCOMPLETE",
};

const char *dryrun_verdict_name(enum dryrun_verdict verdict)
{
	return (unsigned)verdict < _DRYRUN_VERDICT_MAX ? dryrun_verdict_names[verdict] : NULL;
}

int dryrun_verdict_from_name(const char *name)
{
	for (int v = 0; name && v < _DRYRUN_VERDICT_MAX; v++)
		if (dryrun_verdict_names[v] && strcmp(dryrun_verdict_names[v], name) == 0)
			return v;
	return -EINVAL;
}

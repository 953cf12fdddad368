/* SPDX-License-Identifier: MIT */
#pragma once

/* A dry run's verdict (docs/dryrun.md, "Verdicts"). Modules pass the enum;
 * the names are what receipts, change sets and permit records hold, and
 * they never change. */
enum dryrun_verdict {
	DRYRUN_VERDICT_NONE, /* no verdict: not a dry run, or none was recorded */
	DRYRUN_VERDICT_DRY_RUN_OK,
	DRYRUN_VERDICT_DRY_RUN_FAILED,
	DRYRUN_VERDICT_NO_EFFECT,
	DRYRUN_VERDICT_PRIVILEGED_FILE,
	DRYRUN_VERDICT_UNEXPECTED_PATH,
	DRYRUN_VERDICT_EXPECTED_PATH_MISSING,
	DRYRUN_VERDICT_OUTSIDE_WRITE,
	DRYRUN_VERDICT_HOST_CODE,
	/* the dry run met something root's real run would do and the quarantine
	 * cannot (a device node): the change set is not that run's */
	DRYRUN_VERDICT_NEEDS_PRIVILEGE,
	DRYRUN_VERDICT_ATTRS_LOST, /* a copy in the snapshot lost attributes a rename keeps */
	DRYRUN_VERDICT_LINK_GROUP,
	/* a directory of the workspace renamed, which the snapshot copies, and
	 * the copy's removal of the source did not finish: both names remain */
	DRYRUN_VERDICT_RENAME_INCOMPLETE,
	_DRYRUN_VERDICT_MAX,
};

/* "DRY_RUN_OK"...; NULL for DRYRUN_VERDICT_NONE and anything out of range,
 * so a record is never written with a verdict no reader accepts. */
const char *dryrun_verdict_name(enum dryrun_verdict verdict);

/* The verdict a record names; -EINVAL for NULL or an unknown name, which a
 * reader refuses (a record it cannot judge is never taken for DRY_RUN_OK). */
int dryrun_verdict_from_name(const char *name);

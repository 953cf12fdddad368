/* SPDX-License-Identifier: MIT */
#include "cli/exit_codes.h"

#include <errno.h>

int exit_status_for_receipt(enum receipt_status status, int exit_code, int signal)
{
	switch (status) {
	case RECEIPT_EXITED:
		return exit_code;
	case RECEIPT_SIGNALED:
		return 128 + signal;
	case RECEIPT_TIMEOUT:
	case RECEIPT_CANCELLED: /* as before it had its own status */
		return EXIT_TIMEOUT;
	case RECEIPT_NOT_FOUND:
		return EXIT_COMMAND_NOT_FOUND;
	case RECEIPT_NOT_EXECUTABLE:
	case RECEIPT_DENIED:
		return EXIT_CANNOT_EXECUTE;
	case RECEIPT_SETUP_ERROR:
	case RECEIPT_INVALID:
	case RECEIPT_UNKNOWN:
	case _RECEIPT_STATUS_MAX:
		break;
	}
	return EXIT_AIRLOCK_ERROR;
}

int exit_status_for_error(int r)
{
	switch (r) {
	case 0:
		return EXIT_OK;
	case -ENOENT:
		return EXIT_NOT_FOUND_ITEM;
	case -EBUSY:
		return EXIT_CONFLICT;
	case -EPERM:
		return EXIT_REFUSED;
	default:
		return EXIT_AIRLOCK_ERROR;
	}
}

int exit_status_for_permit_state(enum permit_state s)
{
	switch (s) {
	case PERMIT_INVALID:
		return EXIT_PERMIT_INVALID;
	case PERMIT_NO_EFFECT:
		return EXIT_PERMIT_NO_EFFECT;
	case PERMIT_UNEXPECTED_PATH:
		return EXIT_PERMIT_UNEXPECTED_PATH;
	case PERMIT_EXPECTED_PATH_MISSING:
		return EXIT_PERMIT_EXPECTED_PATH_MISSING;
	case PERMIT_DRY_RUN_FAILED:
		return EXIT_PERMIT_DRY_RUN_FAILED;
	case PERMIT_REJECTED:
		return EXIT_PERMIT_REJECTED;
	case PERMIT_REJECTED_WITHOUT_APPROVAL:
		return EXIT_PERMIT_NOT_APPROVED;
	case PERMIT_ROLLED_BACK:
		return EXIT_PERMIT_ROLLED_BACK;
	case PERMIT_CONFLICT:
		return EXIT_CONFLICT;
	default:
		return EXIT_OK;
	}
}

int exit_status_for_permit_error(int r, bool approving)
{
	if (r == -EACCES)
		return approving ? EXIT_NOT_APPROVED : EXIT_PERMIT_NOT_APPROVED;
	return exit_status_for_error(r);
}

int exit_status_for_dryrun_verdict(enum dryrun_verdict verdict, int run_status)
{
	switch (verdict) {
	case DRYRUN_VERDICT_NONE:
	case DRYRUN_VERDICT_DRY_RUN_FAILED:
	case _DRYRUN_VERDICT_MAX:
		break;
	case DRYRUN_VERDICT_DRY_RUN_OK:
		return EXIT_OK;
	case DRYRUN_VERDICT_NO_EFFECT:
		return EXIT_DRYRUN_NO_EFFECT;
	case DRYRUN_VERDICT_PRIVILEGED_FILE:
		return EXIT_DRYRUN_PRIVILEGED_FILE;
	case DRYRUN_VERDICT_OUTSIDE_WRITE:
		return EXIT_DRYRUN_OUTSIDE_WRITE;
	case DRYRUN_VERDICT_NEEDS_PRIVILEGE:
		return EXIT_DRYRUN_NEEDS_PRIVILEGE;
	case DRYRUN_VERDICT_UNEXPECTED_PATH:
		return EXIT_DRYRUN_UNEXPECTED_PATH;
	case DRYRUN_VERDICT_HOST_CODE:
		return EXIT_HOST_CODE;
	case DRYRUN_VERDICT_LINK_GROUP:
		return EXIT_DRYRUN_LINK_GROUP;
	case DRYRUN_VERDICT_EXPECTED_PATH_MISSING:
		return EXIT_DRYRUN_EXPECTED_PATH_MISSING;
	case DRYRUN_VERDICT_ATTRS_LOST:
		return EXIT_DRYRUN_ATTRS_LOST;
	case DRYRUN_VERDICT_RENAME_INCOMPLETE:
		return EXIT_DRYRUN_RENAME_INCOMPLETE;
	}
	return run_status ? run_status : EXIT_AIRLOCK_ERROR;
}

int exit_status_for_ledger_verify(bool tampered, bool differs, bool torn)
{
	return tampered	 ? EXIT_LEDGER_TAMPERED
	       : differs ? EXIT_LEDGER_RECORDS_DIFFER
	       : torn	 ? EXIT_LEDGER_TORN_TAIL
			 : EXIT_OK;
}

int exit_status_for_ledger_error(int r)
{
	return r == -EBADMSG  ? EXIT_LEDGER_TAMPERED
	       : r == -ENOENT ? EXIT_NOT_FOUND_ITEM
			      : EXIT_AIRLOCK_ERROR;
}

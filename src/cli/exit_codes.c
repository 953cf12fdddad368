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

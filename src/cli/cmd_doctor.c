/* SPDX-License-Identifier: MIT */
/* `airlock doctor`: what works on this host, and how to fix what does not. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/doctor.h"

int cmd_doctor(int argc, char **argv)
{
	struct doctor_report report;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		puts("usage: airlock doctor\n\nChecks every layer of the quarantine on this host; exits 0 when all required ones work.");
		return EXIT_OK;
	}
	if (argc > 1) {
		cli_error("doctor: unexpected argument '%s'", argv[1]);
		return EXIT_AIRLOCK_ERROR;
	}
	doctor_run(&report);
	for (size_t i = 0; i < report.n; i++) {
		const struct doctor_check *c = &report.checks[i];
		printf("%-5s %-17s %s\n", c->ok ? "ok" : c->required ? "FAIL" : "warn", c->layer,
		       c->detail);
		if (!c->ok && c->fix[0])
			printf("      %-17s fix: %s\n", "", c->fix);
	}
	bool ok = doctor_report_ok(&report);
	printf("%s\n", ok ? "the quarantine works on this host"
			  : "the quarantine cannot run here: airlock run refuses to run commands (exit 125) until this is fixed");
	return ok ? EXIT_OK : 1;
}

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* `airlock doctor`: each layer of the quarantine checked on this host, with
 * what to do about the ones that fail. */
struct doctor_check {
	const char *layer;
	bool ok;
	bool required; /* false: reported, but the quarantine works without it */
	char detail[256];
	char fix[512];
};

#define DOCTOR_MAX_CHECKS 12

struct doctor_report {
	struct doctor_check checks[DOCTOR_MAX_CHECKS];
	size_t n;
};

/* Runs every check, including one real quarantined run of /bin/true. */
void doctor_run(struct doctor_report *report);
/* True when every required check passed. */
bool doctor_report_ok(const struct doctor_report *report);

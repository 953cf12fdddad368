/* SPDX-License-Identifier: MIT */
#pragma once

/* Internal to core/run: the host-code check of a run (run.c). Before the
 * run the files that would make a host tool run code are made read-only;
 * after it, what the command left of them is found (core/host/hostsafety.h)
 * and, after a quarantined run, moved aside; the receipt names them. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/host/hostsafety.h"
#include "core/record/receipt.h"
#include "core/store/store.h"

struct run_hostcode {
	struct hostsafety_report report; /* valid when checked */
	bool checked;
	uint64_t started_coarse_ns; /* the run's start on the file systems' clock */
	char **known_gitdirs; /* core/host/hostsafety.h, read before the run */
	/* Protected paths that existed before the run as a directory, or as a
	 * file with no other link: their read-only mounts leave the command no
	 * way to change them, so a change seen after the run is the host's
	 * own (its tool writing .claude/settings.local.json meanwhile), not
	 * moved aside. Absolute. */
	char **sealed;
	char message[1024];
};

void run_hostcode_release(struct run_hostcode *hc);

/* Before the run: adds the workspace's existing host-code files to
 * *read_only, and notes which of *read_only are sealed. -ENOMEM. */
int run_hostcode_protect(struct run_hostcode *hc, const char *workspace, char ***read_only,
			 struct error *err);

struct run_hostcode_where {
	struct store *store;
	const char *workspace;
	bool dryrun;
	const char *upper; /* a dry run: the snapshot's upper directory */
	char *const *read_only; /* the paths the run held read-only, absolute */
};

/* After a run in the quarantine: scans (a dry run: its snapshot), moves
 * aside (a real run), and names a failure in rc->error unless it has one. */
void run_hostcode_check(struct run_hostcode *hc, const struct run_hostcode_where *where,
			struct receipt *rc);

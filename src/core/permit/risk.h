/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/permit/record.h"
#include "core/policy/rules.h"
#include "core/snapshot/changeset_json.h"
#include "core/snapshot/dryrun_verdict.h"
#include "core/store/store.h"

/* A permit's risk: the highest of declared, classified and observed, the
 * observed one from what its dry run changed (git ls-files on the host). */

/* What the permit's dry run holds now, recomputed from the files: used at
 * the dry run's end, and again by approve and exec, so no recorded field
 * is trusted for the decision. */
struct permit_check {
	enum dryrun_verdict verdict; /* recorded, or judged again when DRY_RUN_OK */
	int classified, observed, risk;
	char rule[64];
	char reason[256];
	char why[512];
	char changeset_sha256[SHA256_HEX_SIZE];
	struct changeset *cs;
	json_t *problems;
};

void permit_check_release(struct permit_check *c);
int permit_recheck(struct store *store, const struct rules *rules, const struct permit *p,
		   struct permit_check *c, struct error *err);
enum permit_state permit_state_for_verdict(enum dryrun_verdict verdict, int risk);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

/* A permit's proposal: the model's JSON, parsed strictly (docs/permit-format.md,
 * "The proposal"). */

#define PERMIT_PROPOSAL_MAX    (1 << 20)
#define PERMIT_TIMEOUT_DEFAULT 20
#define PERMIT_TIMEOUT_MAX     3600
#define PERMIT_MAX_PATHS       256
#define PERMIT_LABEL_MAX       128 /* bytes of the proposer's label */

/* What the model proposed. argv is what runs: the proposal's argv, or
 * {"sh", "-c", candidate} when it gave a shell string (via_shell). */
struct permit_proposal {
	char *label; /* the proposer's own name for it (the seed's "id"), or NULL */
	char **argv;
	char *candidate; /* the shell string as given, or NULL */
	bool via_shell;
	char *reason;
	char **expected_paths; /* clean relative patterns */
	char *rollback; /* recorded; a shell string, or NULL */
	char **verify; /* an argv run after exec on a snapshot, or NULL */
	unsigned timeout_seconds;
	int declared_risk; /* 0: none declared */
	bool has_confidence;
	double confidence;
};
void permit_proposal_release(struct permit_proposal *p);

/* The model's JSON (docs/permit-format.md, "The proposal"): unknown keys,
 * wrong types, an empty candidate or argv, absolute or ".." expected paths
 * are -EINVAL with a message naming what was wrong. */
int permit_parse_proposal(const char *text, size_t n, struct permit_proposal *ret, struct error *err);

/* An expected path is a pattern relative to the workspace (core/snapshot/changeset.h
 * matching): not empty, not absolute, no empty, "." or ".." component. */
int permit_check_path(const char *path, size_t i, struct error *err);
/* The proposer's label is model text a reviewer reads: 1 to
 * PERMIT_LABEL_MAX bytes of UTF-8 (jansson's), none of them a control
 * character (C0, DEL, C1) or a bidi embedding, override or isolate, which
 * would reorder what a terminal shows. */
int permit_get_label(json_t *v, const char *name, char **ret, struct error *err);
int permit_get_argv(json_t *v, const char *name, char ***ret, struct error *err);

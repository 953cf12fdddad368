/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

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

/* `git ls-files` of a workspace, started ahead of where its answer is read
 * (the observed risk): by a dry run's judged hook, permit_git_judged(), so
 * that git runs beside the change set's and the receipt's syncs. Git is
 * started only when the judged change set needs it (a verdict below risk
 * 5, something changed in the workspace), with the argv and environment
 * permit_recheck() always used. Its answer describes the index from a few
 * milliseconds before the judgement, as the judgement already describes it
 * up to the apply: the agent can stage a file at any moment before the
 * apply, and the exec of a permit dry-run earlier asks git again. The
 * owner ends it on every path: collected by permit_recheck(), or
 * permit_git_stop() (also where it is not needed after all).
 *
 * git never outlives airlock: it dies (PR_SET_PDEATHSIG, SIGKILL) with the
 * thread that started it, which lives until git has exited; so with
 * airlock, whatever ends it. */
struct permit_git {
	const char *workspace; /* borrowed: the permit's */
	bool started; /* being started, started, or found not startable (r) */
	bool threaded; /* a thread starts it: pid to err are its until spawned */
	pthread_mutex_t lock; /* spawned, with cond */
	pthread_cond_t cond;
	bool spawned; /* the thread has started git or failed (r) */
	pid_t pid; /* running or exited, not reaped; 0: none */
	int fd; /* its stdout's read end; -1: none */
	int pidfd; /* git's; -1: none */
	int r; /* the start's failure: -ESRCH (no git), or another, err set */
	struct error err;
};

#define PERMIT_GIT_INIT(ws)                                      \
	((struct permit_git){ .workspace = (ws),                 \
			      .lock = PTHREAD_MUTEX_INITIALIZER, \
			      .cond = PTHREAD_COND_INITIALIZER,  \
			      .fd = -1,                          \
			      .pidfd = -1 })

/* The dry run's judged hook (struct dryrun_judged_hook), data a struct
 * permit_git. */
void permit_git_judged(void *data, enum dryrun_verdict verdict, const struct changeset *cs);
/* Kills and reaps git if it runs or has not been reaped; idempotent. */
void permit_git_stop(struct permit_git *g);

void permit_check_release(struct permit_check *c);
/* git: one started for p's workspace (permit_git_judged()), collected or
 * stopped here; NULL: started here when needed. */
int permit_recheck(struct store *store, const struct rules *rules, const struct permit *p,
		   struct permit_git *git, struct permit_check *c, struct error *err);
enum permit_state permit_state_for_verdict(enum dryrun_verdict verdict, int risk);

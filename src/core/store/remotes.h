/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

struct store;

/* The remotes the user configured for the state directory's ledger
 * (docs/witness.md, "The client"): witnesses.json in the state directory,
 * which only the user's own commands write; nothing of a workspace or a
 * project names a remote. */

/* Adds witness name ([a-z0-9._-], at most 64 bytes) at url (http:// or
 * https://, its add-checkpoint prefix) with its cosigner vkey: -EEXIST
 * when the name is taken. */
int remotes_witness_add(struct store *store, const char *name, const char *url, const char *vkey,
			struct error *err);
/* -ENOENT when no witness has that name. */
int remotes_witness_remove(struct store *store, const char *name, struct error *err);
/* The configured witnesses: a JSON array of {"name","url","vkey"}. */
int remotes_witness_list(struct store *store, json_t **ret, struct error *err);

/* Registers every configured remote with the store's ledger: the one place
 * the remotes are registered (the mirror, then the witnesses), by `airlock
 * ledger push` (never by a run: a run only starts a detached push, below). */
int remotes_register(struct store *store, struct error *err);

/* Where the state directory's ledger is sent (docs/ledger.md, "The
 * mirror"). The configuration is the user's, kept in the state directory
 * (mirror/, docs/state-dir.md), which no quarantined command can write:
 * never the workspace's or a project policy's. */

struct remotes_mirror {
	char *conninfo; /* libpq's connection string */
	char *host; /* this installation's name in the mirror */
};
void remotes_mirror_release(struct remotes_mirror *m);

/* -ENOENT when no mirror is configured. */
int remotes_mirror_get(struct store *store, struct remotes_mirror *ret, struct error *err);
/* host NULL: "<hostname>:<state directory>". */
int remotes_mirror_set(struct store *store, const char *conninfo, const char *host, struct error *err);
int remotes_mirror_unset(struct store *store, struct error *err);


/* A push of the latest checkpoint to every configured remote (registering
 * them on the first call). With a mirror configured, a checkpoint of the
 * whole log is signed first and the outcome recorded in mirror/status.json;
 * a refusal that is a conflict (ledger_push()'s -EEXIST: a remote holds
 * another history; -EBADMSG: the ledger was cut, rolled back or does not
 * hold what it signed) is recorded in mirror/conflict.json as well. 0 with
 * no remote. */
int remotes_push(struct store *store, struct error *err);

/* After a run: when a remote is configured, starts `airlock ledger push
 * --background` detached (its own session, stdio on /dev/null) and returns
 * at once; the run never waits for the network. */
void remotes_push_background(struct store *store);
/* The background pusher's loop: one pusher at a time (a non-blocking lock;
 * a push asked for while one runs is made by it before it exits, and a run
 * that finds one running starts none), after 100 ms that gather a burst of
 * runs into one push. */
int remotes_push_pending(struct store *store, struct error *err);

struct remotes_status {
	bool configured;
	char host[256];
	uint64_t signed_size; /* the ledger's latest checkpoint's */
	uint64_t pushed; /* what the mirror acknowledged */
	char last_time[64]; /* of the last push attempt ("" none) */
	char last_error[512]; /* "" when it succeeded */
	char conflict[512]; /* "" when none is open */
};
int remotes_status(struct store *store, struct remotes_status *ret, struct error *err);

/* Closes the open conflict with the approver's approval (approver_sign()'s
 * object over "airlock.mirror-resolve/1 <conflict>", which the caller made
 * with the passphrase): committed first to the ledger (kind mirror-resolve,
 * mirror/resolved/<n>.json: the conflict, the approval, when), then the
 * conflict removed. A crash between leaves the conflict open and the
 * resolution recorded; resolving again records another. */
int remotes_conflict_resolve(struct store *store, const char *conflict, json_t *approval,
			     struct error *err);

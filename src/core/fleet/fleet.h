/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/fleet/fleetlog.h"
#include "ledger/witness.h"

/* Many hosts, one place (docs/fleet.md): what the ledger mirror on
 * PostgreSQL (ledger/pgmirror.h) holds of every host that pushes to it,
 * read with a read-only role and parsed here from the raw entry lines the
 * database keeps. Every string is the database's, written by the hosts'
 * agents in part (argv, labels): the front end sanitises it for a terminal.
 * Only what the database's own checks accepted is read: an entry is stored
 * with the checkpoint that covers it, in one transaction. And none of it is
 * taken on the database's word: every line shown carries its state against
 * the host's own signed checkpoint (core/fleet/fleetlog.h), which a
 * database superuser cannot forge without the host's key. */

struct fleet_cosignature;

struct fleet_host {
	char *host, *origin;
	uint64_t size; /* the verified size: the largest checkpoint accepted */
	char *checkpoint; /* its signed note; NULL before the first push */
	char *pushed; /* when it was accepted (the database's clock) */
	char *vkey; /* the log's key, pinned by the mirror at its first push */
	/* Its latest checkpoint with witness cosignatures (schema version 2's
	 * airlock.cosigned_heads): cosigned_size 0 when none. */
	uint64_t cosigned_size;
	char *cosigned_checkpoint;
	struct fleet_cosignature *cosignatures;
	size_t n_cosignatures;
	/* With a policy: NULL when its quorum is met by the cosignatures (and
	 * the checkpoint's signature by vkey verifies), else the one-line
	 * reason (witness_policy_check()'s). */
	char *quorum_failure;
	/* Its log checked against its latest checkpoint (fleetlog.h): the key
	 * that checkpoint was checked with, whether every line up to its
	 * signed size is the host's (else why not), and that size. */
	enum fleet_key_source key_source;
	bool log_verified;
	char *log_failure;
	uint64_t signed_size;
	uint64_t n_forged; /* lines whose leaf is not the signed tree's (any kind) */
};

/* One cosignature line the mirror keeps; its witness is the line's own key
 * name, as the mirror stored it. */
enum fleet_cosignature_state {
	FLEET_COSIG_UNVERIFIED, /* no policy was given */
	FLEET_COSIG_VERIFIED, /* by the policy's witness of that name and key id */
	FLEET_COSIG_UNKNOWN, /* by no witness of the policy */
	FLEET_COSIG_INVALID, /* a policy witness's, and it does not verify: forged */
};
struct fleet_cosignature {
	char *witness, *line;
	enum fleet_cosignature_state state;
	char *policy_name; /* the policy's name of the witness when verified */
};

struct fleet_run {
	char *host;
	size_t log; /* its log, its host's index in hosts (labels are the mirror's word) */
	uint64_t id;
	char *time; /* the entry's time (the run's commit) */
	char *source; /* run, dryrun, permit, ... */
	char *status; /* exited, signaled, timeout, not_found, ... */
	bool has_exit;
	int64_t exit_code;
	bool ok; /* it matched what it was expected to do */
	char **argv; /* NULL terminated */
	enum fleet_line_state line; /* its receipt entry's */
};

struct fleet_failure {
	char *host;
	size_t log; /* its log, its host's index in hosts (labels are the mirror's word) */
	uint64_t receipt; /* the failed run's receipt id */
	char *time; /* when it opened */
	/* Its receipt's, when the mirror holds it (else argv is empty and
	 * status NULL). */
	char *status;
	bool has_exit;
	int64_t exit_code;
	char **argv; /* NULL terminated */
	/* Its gate-open entry's, and its receipt's when read: the worse. */
	enum fleet_line_state line;
	/* A gate-close of it the mirror holds, and that entry's line: it
	 * closes the failure only when its line says as much as the
	 * gate-open's (one not covered leaves a verified failure open). */
	bool closed;
	enum fleet_line_state close_line;
};

struct fleet_approval {
	char *host;
	size_t log; /* its log, its host's index in hosts (labels are the mirror's word) */
	uint64_t permit;
	char *approver, *public_key;
	char *at; /* the "approve" event of the permit's history; NULL: unknown */
	enum fleet_line_state line; /* the permit's last transition entry's */
};

struct fleet_permit {
	char *host;
	size_t log; /* its log, its host's index in hosts (labels are the mirror's word) */
	uint64_t id;
	char *state; /* "not recorded" when the entry carries no record */
	int64_t risk;
	char *time; /* the last transition's */
	char **argv; /* NULL terminated; empty when not recorded */
	bool pending; /* its state is not final (docs/permit-format.md, "States") */
	bool approved; /* it carries an approval */
	enum fleet_line_state line; /* its last transition entry's */
};

struct fleet {
	struct fleet_host *hosts;
	size_t n_hosts;
	struct fleet_run *runs; /* oldest first, across hosts (by each host's clock) */
	size_t n_runs;
	struct fleet_failure *failures;
	size_t n_failures;
	struct fleet_permit *permits; /* every permit seen, by host and id */
	size_t n_permits;
	struct fleet_approval *approvals;
	size_t n_approvals;
	size_t n_unreadable; /* lines or records that did not parse: skipped */
};

struct fleet_query {
	const char *conninfo;
	const char *host; /* NULL: every host */
	const char *since; /* NULL: any time; else an RFC 3339 prefix the runs' times are >= */
	size_t runs_max; /* the newest runs kept (0: all) */
	/* NULL: cosignatures are listed unverified; else each is checked
	 * against the policy's witnesses and the quorum with the host's log
	 * key in place of the policy's log (the fleet has many logs). */
	const struct witness_policy *policy;
	/* NULL: each host's checkpoint is checked with the key the policy
	 * names for its origin, else the mirror's pin; else the console's own
	 * pins, a host whose origin it does not name verifying nothing. */
	const struct fleet_keys *keys;
};

/* Reads the mirror at q->conninfo. -ECONNREFUSED when it cannot be reached,
 * -EPROTO on its refusal (a role without SELECT, no schema). */
int fleet_load(const struct fleet_query *q, struct fleet *ret, struct error *err);
void fleet_release(struct fleet *f);

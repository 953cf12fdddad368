/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "basic/sha256.h"

/* The one owner of the state directory's layout (docs/state-dir.md): every
 * path below the state directory is named here, relative to it (openat()
 * on the store's directory), and nowhere else. Each domain owns its
 * subtree; this module only spells it. */

/* The directories, created mode 0700 by their owner when first needed. */
#define STATEPATH_RECEIPTS	"receipts" /* store: N.json, N.stdout, N.stderr */
#define STATEPATH_RECEIPTS_PRE	".pre" /* in receipts/: store_prepare_receipt()'s <id>.<pid> */
#define STATEPATH_QUARANTINE	"quarantine" /* store: N/ (core/host/hostsafety.h) */
#define STATEPATH_PERMITS	"permits" /* permit: N.json, N.lock, lock, seq */
#define STATEPATH_DRYRUNS	"dryruns" /* snapshot: N/ (changeset.json, state, ...) */
#define STATEPATH_APPLYING	"dryruns/.applying" /* snapshot: <id>, .complete (applymark.h) */
#define STATEPATH_POLICIES	"policies" /* gate: <sha256>.json policy approvals */
#define STATEPATH_GATE		"gate"
#define STATEPATH_GATE_OPEN	"gate/open" /* gate: <scope key>/<id>.json */
#define STATEPATH_GATE_CLOSED	"gate/closed" /* gate: <id>.json */
#define STATEPATH_GATE_REJECTED "gate/rejected" /* gate: refused closes */
#define STATEPATH_GATE_STOP	"gate/stop" /* hook: <session key>.json */
#define STATEPATH_MIRROR	"mirror" /* store: the ledger's mirror (core/store/remotes.h) */
#define STATEPATH_MIRROR_CONFIG "mirror/config.json" /* its connection and host name */
#define STATEPATH_MIRROR_STATUS "mirror/status.json" /* the last push's outcome */
#define STATEPATH_MIRROR_CONFLICT \
	"mirror/conflict.json" /* a refused push, open until the approver resolves it */
#define STATEPATH_MIRROR_RESOLVED "mirror/resolved" /* the approver's resolutions, <n>.json */
#define STATEPATH_MIRROR_LOCK	  "mirror/lock" /* flock()ed by the one background pusher */
#define STATEPATH_MIRROR_PENDING  "mirror/pending" /* a push asked for since */
#define STATEPATH_LEDGER_REMOTES  "ledger/remotes" /* ledger: what each remote acknowledged */
/* A cache, whose loss costs only time: run's digests of large executables
 * (core/store/exedigest.h). */
#define STATEPATH_CACHE		   "cache"
#define STATEPATH_EXE_DIGESTS_NAME "exe-digests"
#define STATEPATH_EXE_DIGESTS	   STATEPATH_CACHE "/" STATEPATH_EXE_DIGESTS_NAME
/* The files at the top. */
#define STATEPATH_INDEX	       "index.jsonl"
#define STATEPATH_APPROVER     "approver.json" /* gate: the enrolled approver */
#define STATEPATH_APPROVER_PIN "approver-pin.json" /* gate: its pin (core/gate/approver.h) */
#define STATEPATH_WITNESSES    "witnesses.json" /* store: core/store/remotes.h */
/* The files in a dry run's directory (docs/state-dir.md says what each
 * holds). */
#define STATEPATH_CHANGESET	   "changeset.json"
#define STATEPATH_STATE		   "state"
#define STATEPATH_JOURNAL	   "journal" /* the last apply's operations, then its mark */
#define STATEPATH_JOURNAL_PREVIOUS STATEPATH_JOURNAL ".previous" /* the one it replaced */
#define STATEPATH_UPPER		   "upper" /* the snapshot's upper layer */
#define STATEPATH_WORK		   "work" /* the overlay's work directory */
#define STATEPATH_BACKUP	   "backup" /* backup/<n>: what an apply replaced or removed */
#define STATEPATH_PERMIT_MARK	   "permit" /* the permit whose dry run this is */

/* Every input below is bounded (a 64-bit id, at most 64 hex digits), so a
 * path always fits: no truncation is possible. */
#define STATEPATH_MAX 128
struct statepath {
	char s[STATEPATH_MAX];
};

/* receipts/<id>.json */
struct statepath statepath_receipt(uint64_t id);
/* The same for an id given as text: -ENAMETOOLONG when it does not fit. */
int statepath_receipt_text(const char *id, struct statepath *ret);
/* quarantine/<id> */
struct statepath statepath_quarantine(uint64_t id);
/* dryruns/<id> */
struct statepath statepath_dryrun(uint64_t id);
/* dryruns/<id>/changeset.json */
struct statepath statepath_dryrun_changeset(uint64_t id);
/* dryruns/<id>/state */
struct statepath statepath_dryrun_state(uint64_t id);
/* permits/<id>.json */
struct statepath statepath_permit(uint64_t id);
/* The same names in permits/ (for a caller holding it open): <id>.json,
 * each permit's record, whose suffix its listing matches, and <id>.lock. */
#define STATEPATH_PERMIT_SUFFIX ".json"
struct statepath statepath_permit_name(uint64_t id);
struct statepath statepath_permit_lock_name(uint64_t id);
/* policies/<sha256>.json */
struct statepath statepath_policy(const char sha256[SHA256_HEX_SIZE]);
/* gate/open/<first 32 hex digits of sha256(scope)> */
struct statepath statepath_gate_open(const char *scope);
/* gate/open/<that>/<id>.json */
struct statepath statepath_gate_open_entry(const char *scope, uint64_t id);
/* gate/closed/<id>.json */
struct statepath statepath_gate_closed(uint64_t id);
/* gate/stop/<first 32 hex digits of sha256(session)>.json */
struct statepath statepath_gate_stop(const char *session);

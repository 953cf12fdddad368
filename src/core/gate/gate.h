/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "core/gate/approver.h"
#include "core/policy/policy.h"
#include "core/record/receipt.h"
#include "core/policy/rules.h"
#include "core/store/store.h"

/* The gate (docs/gate.md). A receipt that failed opens a failure in its
 * scope (the git root of its cwd, else the cwd); the failure stays open until
 * an honest move closes it:
 *   rerun          the same argv, in the same cwd, with the same expected
 *                  exits, later succeeds (the environment was repaired);
 *   fixes          a run that names it (--fixes ID) exits 0, and then the
 *                  failed command, re-run exactly (the same executable,
 *                  argv bytes, cwd, expectations and policy), succeeds;
 *   ack-read-only  `airlock ack`, where the failed command was read-only;
 *   ack-approved   `airlock ack` with the approver's passphrase.
 * State lives in the state directory:
 *   gate/open/<scope key>/<id>.json   one file per open failure
 *   gate/closed/<id>.json             how it was closed, never rewritten
 * so checking a scope reads one small directory, whatever the number of
 * receipts. */

#define GATE_FAILURE_SCHEMA "airlock.gate-failure/1"
#define GATE_CLOSE_SCHEMA   "airlock.gate-close/2"
#define GATE_MAX_CLOSES	    RECEIPT_GATE_MAX_CLOSES

/* The git root above dir (a directory holding .git), else dir itself. */
int gate_scope(const char *dir, char **ret_scope, struct error *err);
/* The same, counting only .git markers that appeared before born_before_ns
 * (a realtime clock value): a scope the failing command made itself does
 * not scope its failure. */
int gate_scope_before(const char *dir, uint64_t born_before_ns, char **ret_scope, struct error *err);

/* Whether a receipt is a success to the gate: it exited as expected, left
 * no code for the host (or none was looked for), and a dry run's verdict
 * is one that passes. gate_receipt_struct_succeeded() answers for the
 * struct (gate_prepare()), gate_receipt_succeeded() for the document
 * receipt_to_json() makes of it (a stored receipt, read back to verify a
 * close): the same answer for every receipt (tests/unit/test_gate.c). */
bool gate_receipt_struct_succeeded(const struct receipt *r);
bool gate_receipt_succeeded(json_t *receipt);

/* What one receipt does to the gate; filled by gate_prepare(). */
struct gate_effect {
	char *scope;
	bool opened;
	uint64_t fixes; /* 0: names no failure */
	bool trivial; /* fixes was attempted with a trivial command (a note only) */
	/* The fix run succeeded and the failure it names is still open: the
	 * caller re-runs that failure (rerun: the id it allocated for it). */
	bool needs_rerun;
	uint64_t rerun;
	uint64_t rerun_of, fix; /* this receipt is the re-run of rerun_of for fix */
	bool verified; /* airlock ran it, or the host's status is not masked */
	uint64_t closes[GATE_MAX_CLOSES];
	const char *moves[GATE_MAX_CLOSES];
	size_t n_closes;
	char note[256]; /* why --fixes closed nothing, if it did not */
};
void gate_effect_release(struct gate_effect *e);

/* Decides what receipt does in scope (its "gate", if set, is ignored). A receipt that
 * succeeds closes the failures whose command it ran again exactly (rerun:
 * gate_same_command), and, when it is the re-run of rerun_of, that one (fixes).
 * A --fixes run (fixes) closes nothing itself: it sets needs_rerun. A re-run
 * that fails opens nothing: the failure it re-ran stays open. A failure's entry
 * records the failed command's risk by rules (when given), so `airlock gate`
 * can say which kind of ack applies without loading them. A failure is
 * opened at once (before the receipt is written, so a crash in between
 * leaves the gate closed, not open to anything); closes wait for
 * gate_commit(). A cancelled receipt (status "cancelled": its client chose
 * when) closes nothing and needs no re-run; it opens a failure only with
 * cancelled_opens (the policy's gate.cancelled_opens_failure). */
int gate_prepare(struct store *store, const struct receipt *receipt, const struct rules *rules,
		 const char *scope, uint64_t fixes, uint64_t rerun_of, bool trivial, bool verified,
		 bool cancelled_opens, struct gate_effect *ret, struct error *err);
/* What the receipt records of e (its "gate"). Borrows e's strings. */
void gate_effect_to_receipt(const struct gate_effect *e, struct receipt_gate *ret);
/* Once receipt by is written: records and applies its closes. */
int gate_commit(struct store *store, const struct gate_effect *e, uint64_t by, struct error *err);

/* The one way a receipt is committed, for airlock's own runs (core/run/run.c)
 * and a host's reported runs (core/hook/hook.c) alike: the receipt's
 * document, with its "gate" (effect, or gate_error when the gate could not
 * decide and effect is NULL), through store_commit(), then the failures it
 * closes (gate_commit()), then its index line. The receipt and its ledger
 * entry are the commit: either failing fails the call and nothing after it
 * is done. A close that fails leaves the failure open (the safe side) and a
 * missing index line is a listing cache that `receipts` skips: both become a
 * warning, never an error, so every caller fails the same way. ret_doc, when
 * not NULL, gets the document written. */
int gate_commit_receipt(struct store *store, struct receipt *receipt,
			const struct gate_effect *effect, const char *gate_error, json_t **ret_doc,
			char *warning, size_t warning_size, struct error *err);

/* One open failure: a gate/open/<scope key>/<id>.json entry (docs/gate.md),
 * typed. Its strings and argv's elements are borrowed from doc, the entry as
 * it was read: entries older versions wrote can lack keys or hold nulls, and
 * `airlock gate --json` prints doc as it is (gate_failure_to_json); a re-run
 * is matched against doc's values as stored, byte for byte. */
struct gate_failure {
	json_t *doc;
	uint64_t receipt;
	const char *scope, *source, *shell, *cwd, *status, *tail, *opened_at;
	const char **argv; /* NULL-terminated; NULL when the entry has none */
	bool has_exit_code;
	int64_t exit_code;
	int64_t *expected_exits;
	size_t n_expected_exits;
	uint64_t started_ns; /* 0: not recorded */
	int64_t risk; /* 0: not recorded (an older entry) */
	const char *rule;
	/* Set when the entry cannot be read whole, or is gone while the ledger
	 * has it open; or when a key has the wrong type (then owned_why holds
	 * why, and the other fields are what could be read). */
	const char *damaged;
	char *owned_why;
	/* Why its close record does not hold (gate_close_check), when it does
	 * not: found by the listing (owned_rejected), or read from doc. */
	const char *close_rejected;
	char *owned_rejected;
};
struct gate_failures {
	struct gate_failure *v;
	size_t n;
};
/* doc as a gate_failure (it takes a reference). -EBADMSG when a key airlock
 * writes has another type than it writes (null counts as absent). */
int gate_failure_from_json(json_t *doc, struct gate_failure *ret, struct error *err);
/* The entry's document, as stored, with close_rejected when set (a new
 * reference; NULL when out of memory). */
json_t *gate_failure_to_json(const struct gate_failure *f);
void gate_failure_release(struct gate_failure *f);
void gate_failures_release(struct gate_failures *l);

/* The open failures scope sees, newest first: its own, those of scopes
 * nested below it, and those of an enclosing scope that covered it when
 * they failed (their cwd is inside it, or its .git appeared later). An
 * entry whose close record does not hold (gate_close_check) stays open and
 * carries close_rejected, the reason. */
int gate_list_open(struct store *store, const char *scope, struct gate_failures *ret,
		   struct error *err);
/* The open failure with this receipt id, in any scope; -ENOENT when none. */
int gate_find_open(struct store *store, uint64_t id, struct gate_failure *ret, struct error *err);
/* A gate/closed/<id>.json record (docs/close-format.md), typed. A record
 * read back borrows its strings from doc, the record as stored: the
 * approver's signature is over each field's JSON encoding, which
 * gate_close_check() takes from doc. A record gate_close() makes has no doc
 * until gate_close_record_to_json() writes it. */
struct gate_close_record {
	json_t *doc;
	const char *schema, *scope, *move, *reason, *approver, *closed_at;
	uint64_t receipt;
	const char *failed_sha256; /* NULL: null (the failed receipt was not written) or absent */
	bool failed_sha256_null; /* it is null, not absent */
	uint64_t by_receipt; /* 0: none (an ack) */
	const char *by_sha256;
	/* Its "approval", for ack-approved: who signed (approval_by, the
	 * approver's file), with which key, what and the signature. */
	const char *approval_by, *public_key, *message, *signature;
};
/* doc as a gate_close_record (it takes a reference, also on failure, so that
 * gate_close_check() can say why such a record does not hold). -EBADMSG when
 * a key airlock writes has another type than it writes (null counts as
 * absent). */
int gate_close_record_from_json(json_t *doc, struct gate_close_record *ret, struct error *err);
/* The record's document: as stored, for one read back; else written from
 * its fields (a new reference; NULL when out of memory). */
json_t *gate_close_record_to_json(const struct gate_close_record *r);
void gate_close_record_release(struct gate_close_record *r);
/* The close record of a failure; -ENOENT when it is not closed. */
int gate_find_closed(struct store *store, uint64_t id, struct gate_close_record *ret,
		     struct error *err);

/* Whether record (a gate/closed/<id>.json document) is a valid close of
 * failure id (docs/close-format.md); entry is its open entry, when there
 * is one. Valid means: the failed receipt, when it exists, has the digest
 * the record names; and by move,
 *   rerun, fixes    the closing receipt exists with the digest the record
 *                   names, is later, succeeded, is verified, and its
 *                   gate.closes names this failure with this move;
 *   ack-read-only   the failed command is read-only by the built-in rules;
 *   ack-approved    the signature verifies, over the record's canonical
 *                   encoding, by a key the approver pin trusts.
 * Returns 0, or -EBADMSG with why set. It is the one place that decides:
 * the ledger (issue 14) extends it by also requiring the digests it names
 * to be in the log. */
int gate_close_check(struct store *store, uint64_t id, const struct gate_close_record *record,
		     const struct gate_failure *entry, struct error *why);

/* `airlock ack ID --reason TEXT`. A failure whose command the rules call
 * read-only (risk 1) closes with the reason alone (ack-read-only); any other
 * needs the approver's passphrase (ack-approved, signed). Without one,
 * returns -EACCES with needs_approval set, so the front end can ask the human
 * and call again. -ENOENT: no such open failure. */
struct gate_ack_result {
	bool needs_approval;
	const char *move;
	struct rules_verdict verdict; /* of the failed command */
	char fingerprint[20]; /* the approver's, when one signed */
};
int gate_ack(struct store *store, const struct rules *rules, uint64_t id, const char *reason,
	     const char *passphrase, struct gate_ack_result *ret, struct error *err);

/* Whether argv is a trivial success by the policy's gate.trivial list,
 * seen through wrappers and `sh -c` scripts (rules give both). */
bool gate_is_trivial(const struct policy *policy, const struct rules *rules, char *const *argv);

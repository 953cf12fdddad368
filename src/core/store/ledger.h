/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/merkle.h"
#include "basic/sha256.h"

/* The ledger (docs/ledger.md): an append-only file whose lines are the
 * leaves of an RFC 9162 Merkle tree, one line per record airlock committed
 * (the record's kind, id, path in the state directory and the SHA-256 of its
 * bytes), with checkpoints in the C2SP tlog-checkpoint signed-note format,
 * signed with an Ed25519 key kept in the state directory. Lives in the
 * state directory's ledger/:
 *	log		the entries, one compact JSON object per line
 *	lock		flock()ed by every appender (and shared by readers)
 *	checkpoint	the latest signed checkpoint, replaced atomically
 *	checkpoints/	every checkpoint signed, by tree size
 *	index		derived: a path's last entry, the open failures
 *	key, key.pub	the signing key (0600) and its public half (vkey)
 *	torn/		torn tails cut off after a crash, never deleted
 *	poisoned	present after an fsync error: appends are refused */

struct store;

enum ledger_kind {
	LEDGER_RECEIPT,
	LEDGER_GATE_OPEN,
	LEDGER_GATE_CLOSE,
	LEDGER_DRYRUN,
	LEDGER_APPLY,
	LEDGER_ROLLBACK,
	LEDGER_APPROVER_ENROL,
	LEDGER_APPROVER_CHANGE,
	LEDGER_PERMIT_TRANSITION,
	LEDGER_RECOVERED,
	LEDGER_DISCARD,
	LEDGER_POLICY_APPROVAL,
	LEDGER_KIND_MAX,
};
const char *ledger_kind_name(enum ledger_kind kind);
/* -EINVAL for an unknown name. */
int ledger_kind_from_name(const char *name);

#define LEDGER_ENTRY_MAX     (64 << 10)
#define LEDGER_ID_MAX	     128
#define LEDGER_PATH_MAX	     512
/* A checkpoint is signed by the append that makes the log's size a multiple
 * of this (and by the first), by every append with checkpoint set, and by
 * `airlock ledger checkpoint`. */
#define LEDGER_CHECKPOINT_EVERY 64

struct ledger_entry {
	uint64_t seq;
	enum ledger_kind kind;
	char id[LEDGER_ID_MAX + 1];
	char path[LEDGER_PATH_MAX + 1];
	char sha256[SHA256_HEX_SIZE];
	char time[64];
};

/* Parses one line (without its newline) strictly: at most LEDGER_ENTRY_MAX
 * bytes of UTF-8 without control characters, one JSON object with exactly
 * the fields of version 1 and no duplicate keys, a clean relative path (or
 * the system approver's). -EBADMSG with the reason otherwise. */
int ledger_entry_parse(const char *line, size_t n, struct ledger_entry *ret, struct error *err);

/* Appends an entry for the record at path (relative to the state directory)
 * whose bytes have digest sha256, under the ledger's lock, durably
 * (fdatasync). A torn tail left by a crash is first moved to torn/ and
 * recorded; a torn tail inside the signed prefix is tampering (-EBADMSG).
 * An fsync error poisons the ledger and returns -EIO; so does any append
 * while it is poisoned. The entry's index goes to *ret_seq when not NULL. */
int ledger_append(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		  const char sha256[SHA256_HEX_SIZE], bool checkpoint, uint64_t *ret_seq,
		  struct error *err);

/* Signs a checkpoint of the whole log (creating the key on first use),
 * after checking the log still extends the last checkpoint. */
int ledger_checkpoint(struct store *store, struct error *err);

/* The vkey (C2SP signed-note verifier key, "<name>+<id>+<base64>") of the
 * ledger's key, creating the key when create. */
int ledger_public_key(struct store *store, bool create, char **ret_vkey, struct error *err);

/* Whether the ledger's last entry for path has this kind, id and digest:
 * 0 yes; -ENOENT no entry names path; -EBADMSG the last one differs.
 * LEDGER_KIND_MAX matches any kind, a NULL id any id. */
int ledger_backs(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		 const char sha256[SHA256_HEX_SIZE], struct error *err);
/* ledger_backs() of the current bytes of the file at path. */
int ledger_backs_file(struct store *store, enum ledger_kind kind, const char *id,
		      const char *path, struct error *err);

/* The one refusal of a record the ledger does not back: 0 when the
 * ledger's last entry for path has this kind (LEDGER_KIND_MAX: any), id and
 * the digest of the file's current bytes; else -errnum with "the ledger does
 * not back <what> (<why>): <refusal>; `airlock ledger verify` says more",
 * why being the caller's or, when NULL, "never committed" (no entry names
 * path, or the file cannot be read) or "rewritten" (the last one differs). */
int ledger_require(struct store *store, enum ledger_kind kind, const char *id, const char *path,
		   int errnum, const char *what, const char *why, const char *refusal,
		   struct error *err);

/* The ids of the gate-open entries whose path starts with dir_prefix and
 * that no later gate-close entry closes. */
int ledger_open_failures(struct store *store, const char *dir_prefix, uint64_t **ret_ids,
			 size_t *ret_n, struct error *err);

/* ---- verification ---------------------------------------------------------- */

struct ledger_vkey {
	char name[256];
	uint8_t id[4];
	uint8_t key[32];
};
/* "<name>+<8 hex>+<base64(0x01 || key)>"; checks the id. */
int ledger_vkey_parse(const char *text, struct ledger_vkey *ret, struct error *err);

struct ledger_checkpoint {
	char origin[256];
	uint64_t size;
	merkle_hash root;
	char *text; /* the whole note */
};
void ledger_checkpoint_release(struct ledger_checkpoint *c);
/* Parses a tlog-checkpoint note and checks it carries a valid signature by
 * vkey (when vkey is NULL, only parses). A signature line by vkey that does
 * not verify is a failure even when another does; lines by other keys are
 * ignored. -EBADMSG on any problem. */
int ledger_checkpoint_parse(const char *text, size_t n, const struct ledger_vkey *vkey,
			    struct ledger_checkpoint *ret, struct error *err);

enum ledger_finding_type {
	LEDGER_FINDING_TAMPERED, /* the log itself: corrupt, rewritten, truncated */
	LEDGER_FINDING_DIFFERS, /* a record differs from what the ledger committed */
	LEDGER_FINDING_MISSING, /* a committed record is gone */
	LEDGER_FINDING_UNBACKED, /* a record the ledger never committed */
	LEDGER_FINDING_TORN, /* a torn tail after the signed prefix (a crash) */
};
struct ledger_finding {
	enum ledger_finding_type type;
	char path[LEDGER_PATH_MAX + 32]; /* the record's, when about a record */
	char what[600];
};
struct ledger_report {
	uint64_t size; /* complete entries */
	merkle_hash root;
	uint64_t checkpoint_size;
	uint64_t unsigned_entries; /* after the checkpoint */
	struct ledger_finding *findings;
	size_t n_findings;
};
void ledger_report_release(struct ledger_report *r);

/* Checks the log against its latest checkpoint signed by vkey (and against
 * an older one kept elsewhere, when given: the log must extend it), then
 * the state directory against the log. Findings go into *ret; the return
 * is an error only when nothing could be checked. */
int ledger_verify(struct store *store, const struct ledger_vkey *vkey, const char *old_checkpoint,
		  size_t old_n, struct ledger_report *ret, struct error *err);

/* Repairs what a crash leaves, recording each repair as an entry: a torn
 * tail is moved to torn/; the poisoned mark is cleared; a record the ledger
 * never committed (a crash between its write and its entry, or a forgery:
 * they look alike) is moved to ledger/uncommitted/<its path>, but for an
 * open failure, which is committed (adopted: the gate stays closed rather
 * than open to anything). A complete entry that is not valid, or a log
 * shorter than its checkpoint, is tampering and is not repaired. */
int ledger_recover(struct store *store, struct error *err);

/* An inclusion proof (c2sp.org/tlog-proof@v1 text) of the last entry whose
 * "kind:id" is what, or of the entry with index what (digits), against the
 * latest checkpoint. */
int ledger_prove(struct store *store, const char *what, char **ret_text, struct error *err);
/* A consistency proof between the tree of the first old entries and the
 * checkpoint of new_size entries, a kept one (ledger/checkpoints/<size>: -ENOENT
 * when there is none, -EBADMSG when the log does not extend it), or with 0 the
 * latest (airlock.ledger/consistency@v1 text). */
int ledger_prove_consistency(struct store *store, uint64_t old, uint64_t new_size,
			     char **ret_text, struct error *err);
/* Checks a proof offline: an inclusion proof (and that record_sha256, when
 * given, is the digest it commits), or a consistency proof from
 * old_checkpoint. The entry an inclusion proof carries goes to *ret_entry. */
int ledger_verify_proof(const char *proof, size_t n, const struct ledger_vkey *vkey,
			const char *old_checkpoint, size_t old_n,
			const char record_sha256[SHA256_HEX_SIZE], struct ledger_entry *ret_entry,
			struct error *err);

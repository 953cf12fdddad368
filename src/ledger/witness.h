/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/merkle.h"
#include "ledger/ledger.h"

/* Witnesses (docs/witness.md): a process with its own Ed25519 key that
 * cosigns a log's checkpoint only when it extends the last one it cosigned
 * for that log (C2SP tlog-witness, tlog-cosignature), and the policy that
 * says how many cosignatures `ledger verify` wants (C2SP tlog-policy style).
 *
 * A witness's state directory:
 *	key, key.pub	its signing key (0600) and its vkey (type 0x04)
 *	logs/<h>.log	a log it accepts: the log's vkey ("add-log")
 *	logs/<h>.cp	the latest checkpoint it cosigned for that log
 *	lock		flock()ed by each add-checkpoint, check to store
 * where <h> is the hex SHA-256 of the log's origin. */

#define WITNESS_BODY_MAX   (32 << 10) /* an add-checkpoint body */
#define WITNESS_PROOF_MAX  63 /* consistency proof lines (tlog-witness) */
#define WITNESS_POLICY_MAX (64 << 10)

/* ---- the add-checkpoint request ----------------------------------------------- */

struct witness_request {
	uint64_t old_size;
	merkle_hash proof[WITNESS_PROOF_MAX];
	size_t n_proof;
	const char *checkpoint; /* into the body */
	size_t checkpoint_n;
};
/* "old N\n", up to 63 lines of base64 hashes, "\n", a checkpoint: -EBADMSG
 * with the reason otherwise (the checkpoint itself is not parsed). */
int witness_request_parse(const char *body, size_t n, struct witness_request *ret, struct error *err);
/* The body of a request (malloc'ed). */
char *witness_request_format(uint64_t old_size, const merkle_hash *proof, size_t n_proof,
			     const char *checkpoint, size_t checkpoint_n, size_t *ret_n);

/* ---- cosignatures ----------------------------------------------------------- */

/* A cosigner's vkey: "<name>+<8 hex id>+base64(0x04 || key)", the id
 * SHA-256(name "\n" 0x04 key)[:4]. */
int witness_vkey_parse(const char *text, struct ledger_vkey *ret, struct error *err);
/* Checks one signature line ("— name base64") as a cosignature/v1 by w of
 * the note body (the checkpoint's text up to and with its blank line's
 * first newline): 0 it verifies (its time in *ret_time), -ENOENT it is
 * not w's (another name or key id), -EBADMSG it is w's and does not verify. */
int witness_cosignature_verify(const struct ledger_vkey *w, const char *body, size_t body_n,
			       const char *line, uint64_t *ret_time);

/* ---- the witness -------------------------------------------------------------- */

struct witness;
/* The witness of the state directory dir_fd (duplicated); create makes its
 * key (named name, or airlock.local/witness/<random> when NULL) when there
 * is none. */
int witness_open(int dir_fd, bool create, const char *name, struct witness **ret, struct error *err);
void witness_free(struct witness *w);
static inline void witness_freep(struct witness **w)
{
	witness_free(*w);
}
/* Its vkey (malloc'ed). */
char *witness_vkey(const struct witness *w);
/* Accepts the log whose checkpoints vkey signs (origin: its name). */
int witness_add_log(struct witness *w, const char *origin, const char *vkey, struct error *err);

struct witness_reply {
	int status; /* HTTP */
	const char *content_type;
	char *body; /* malloc'ed; a one-line reason unless 200 or 409 */
	size_t body_n;
};
void witness_reply_release(struct witness_reply *r);
/* POST add-checkpoint: always fills *ret (200 with a cosignature line; 400
 * malformed, 404 unknown log, 403 no valid signature by the log's key, 409
 * with the size it holds when old differs or a same-size fork, 422 the
 * proof does not verify, 500 its own failure), storing the checkpoint
 * durably before it cosigns. now: the cosignature's time. */
void witness_add_checkpoint(struct witness *w, const char *body, size_t n, uint64_t now,
			    struct witness_reply *ret);

/* ---- the client: a ledger remote ------------------------------------------ */

/* A struct ledger_remote_ops that POSTs add-checkpoint to url (libcurl,
 * loaded on first use) and returns the cosignature by the witness whose
 * vkey is given, checked; a 409 is -EEXIST with the witness's size. */
int witness_remote_add(struct ledger *ledger, const char *name, const char *url, const char *vkey,
		       struct error *err);

/* ---- the policy ------------------------------------------------------------- */

#define WITNESS_POLICY_WITNESSES 64
#define WITNESS_POLICY_GROUPS	 64

struct witness_policy_group {
	char name[128];
	size_t threshold;
	size_t n_members;
	int members[WITNESS_POLICY_WITNESSES]; /* >= 0: a witness; < 0: group -1-i */
};

struct witness_policy {
	struct ledger_vkey log;
	bool has_log;
	struct ledger_vkey witnesses[WITNESS_POLICY_WITNESSES];
	char witness_names[WITNESS_POLICY_WITNESSES][128];
	size_t n_witnesses;
	struct witness_policy_group groups[WITNESS_POLICY_GROUPS];
	size_t n_groups;
	int quorum; /* as a member: a witness, a group, or INT32_MIN for none */
};
/* Lines: `log VKEY [URL]`, `witness NAME VKEY [URL]`, `group NAME
 * all|any|K MEMBER...`, `quorum NAME|none`; `#` comments and blank lines.
 * -EBADMSG with "line N: reason". */
int witness_policy_parse(const char *text, size_t n, struct witness_policy *ret, struct error *err);
/* Checks the checkpoint note (signed by the policy's log, checked here
 * too) and cosignature lines (the note's own after its first signature,
 * and lines) against the policy: 0 when its quorum is met, -EBADMSG with
 * a one-line reason otherwise (a cosignature by a policy witness that does
 * not verify is a refusal, whatever the quorum). *ret_n_valid: the
 * witnesses with a valid cosignature. */
int witness_policy_check(const struct witness_policy *p, const char *checkpoint, size_t n,
			 char *const *lines, size_t n_lines, size_t *ret_n_valid, struct error *err);

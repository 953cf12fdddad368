/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/merkle.h"
#include "ledger/ledger.h"

/* A host's log as the mirror holds it, checked at the console against the
 * host's own signed checkpoint (docs/fleet.md, "Checked at the console"):
 * the head's signature under the host's key, the tree of the mirror's
 * stored leaf hashes up to the checkpoint's size making its root, and each
 * line's own leaf hash being the stored one at its place. Nothing the
 * database says is taken on its word but the key when nothing pins it
 * (FLEET_KEY_MIRROR): a database superuser can alter any row, not sign for
 * a key it does not hold. */

enum fleet_line_state {
	FLEET_LINE_VERIFIED, /* the leaf at its place in the tree the host signed */
	FLEET_LINE_FORGED, /* the tree verifies and this line is not its leaf */
	FLEET_LINE_UNCOVERED, /* beyond the signed size: no checkpoint covers it yet */
	FLEET_LINE_UNVERIFIED, /* the checkpoint or the mirror's tree does not verify */
};
/* "verified", "forged", "not covered", "unverified". */
const char *fleet_line_state_name(enum fleet_line_state s);

enum fleet_key_source {
	FLEET_KEY_MIRROR, /* airlock.logs.vkey, pinned by the mirror: its word alone */
	FLEET_KEY_POLICY, /* the --policy file's log line names this origin */
	FLEET_KEY_PINNED, /* the console's --keys file names this origin */
	FLEET_KEY_UNPINNED, /* --keys names other logs only: nothing of it verifies */
};
/* "the mirror's", "the policy's", "pinned", "not pinned". */
const char *fleet_key_source_name(enum fleet_key_source s);

/* The logs a console trusts: vkeys, one a line (each host's `airlock ledger
 * key`), blank lines and '#' comments skipped. */
struct fleet_keys {
	struct ledger_vkey *keys;
	size_t n;
};
int fleet_keys_parse(const char *text, size_t n, struct fleet_keys *ret, struct error *err);
void fleet_keys_release(struct fleet_keys *k);

struct fleet_log {
	enum fleet_key_source key_source;
	bool checkpoint_ok; /* the head parses and its signature by the key verifies */
	struct ledger_checkpoint checkpoint; /* its origin, size, root when checkpoint_ok */
	struct merkle_range range; /* the stored leaves below its size, in order */
	uint64_t next_seq;
	uint64_t n_mismatched; /* lines whose own leaf is not the stored one */
	bool broken; /* a row out of sequence or a stored leaf that is not one */
	bool tree_ok; /* after fleet_log_finish(): every line below the size checks out */
	char failure[320]; /* why the log does not verify ("" when tree_ok) */
};

/* Begins the check of the log of origin whose latest checkpoint the mirror
 * gives as checkpoint (NULL: none yet), with the key: keys' for origin when
 * keys is not NULL (none: FLEET_KEY_UNPINNED), else policy_key when it is
 * named origin, else mirror_vkey. */
void fleet_log_begin(struct fleet_log *l, const char *origin, const char *checkpoint,
		     const char *mirror_vkey, const struct fleet_keys *keys,
		     const struct ledger_vkey *policy_key);
/* One row of the log, in sequence order from 0: its seq and stored leaf
 * (hex) as the mirror gives them and its line. The line's state if the tree
 * verifies (FLEET_LINE_VERIFIED, FLEET_LINE_FORGED, FLEET_LINE_UNCOVERED),
 * for fleet_log_state() once every row was added. */
enum fleet_line_state fleet_log_add(struct fleet_log *l, const char *seq, const char *leaf_hex,
				    const char *line, size_t n);
/* After the last row: the stored leaves' root against the checkpoint's. */
void fleet_log_finish(struct fleet_log *l);
/* A line's state, from what fleet_log_add() returned for it. */
enum fleet_line_state fleet_log_state(const struct fleet_log *l, enum fleet_line_state added);
void fleet_log_release(struct fleet_log *l);

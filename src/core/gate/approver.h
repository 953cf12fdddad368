/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/error.h"
#include "core/store/statepath.h"
#include "core/store/store.h"

/* The human approver (docs/gate.md, "The approver"). An approval is an
 * Ed25519 signature by a key derived with scrypt from a passphrase that
 * only the human knows; airlock keeps the salt and the public key, never the
 * passphrase or the private key. The approver is read from
 * /etc/airlock/approver.json when that file exists, is owned by root and
 * not writable by others (an agent running as the user can then neither
 * enrol nor replace it), else from approver.json in the state directory. */
#define APPROVER_SCHEMA	     "airlock.approver/1"
#define APPROVER_SYSTEM_PATH LEDGER_SYSTEM_APPROVER_PATH
/* The state directory's record of the approver airlock enrolled there
 * (docs/close-format.md, "The approver pin"): a copy of approver.json, the
 * keys it replaced, and the old key's signature over the handover. */
#define APPROVER_PIN_SCHEMA "airlock.approver-pin/1"
#define APPROVER_PIN_NAME   STATEPATH_APPROVER_PIN

struct approver {
	char *origin; /* the file it was read from */
	json_t *doc;
};
void approver_release(struct approver *a);

/* -ENOENT when no approver is enrolled. A system file that exists but is not
 * root-owned and protected is an error, not a fallback. */
int approver_load(struct store *store, struct approver *ret, struct error *err);
/* The approver whose signature counts now: the system one, or the state
 * directory's when it is the pinned one and the ledger backs approver.json;
 * never one put in its place behind airlock's back. -EACCES with the reason
 * otherwise (none enrolled, removed, replaced). */
int approver_load_in_effect(struct store *store, struct approver *ret, struct error *err);
/* Enrols an approver in path (the state directory's approver.json, or the
 * system path). Refuses to replace one unless old_passphrase matches it; in
 * the state directory "it" is the pinned approver when there is a pin, even
 * if approver.json was removed or replaced outside airlock. A state-directory
 * enrolment writes the pin too. */
int approver_enroll(struct store *store, bool system, const char *passphrase,
		    const char *old_passphrase, struct approver *ret, struct error *err);
/* Signs message with the passphrase's key. -EACCES when the passphrase is
 * not the approver's. The approval object carries the public key, message
 * and signature, so anyone can check it with approver_verify(). */
int approver_sign(const struct approver *a, const char *passphrase, const char *message,
		  json_t **ret_approval, struct error *err);
bool approver_verify(const struct approver *a, json_t *approval);
/* An approver document's bytes read elsewhere (a copy of a host's
 * approver.json, `airlock fleet approve`), parsed as approver_load() parses
 * the file; origin names it in approvals. -EINVAL when it is not one. */
int approver_parse_document(const char *text, size_t n, const char *origin, struct approver *ret,
			    struct error *err);
/* The first 16 hex digits of the public key, for people to compare. */
const char *approver_fingerprint(const struct approver *a, char buf[static 20]);

/* Whether `approver init` in the state directory must ask for the current
 * passphrase: an approver (or a pin of one) is there. */
bool approver_enrolled(struct store *store);

/* Where the approver stands against its pin. */
enum approver_state {
	APPROVER_NONE, /* nothing enrolled, nothing pinned */
	APPROVER_SYSTEM, /* /etc/airlock/approver.json is in effect */
	APPROVER_PINNED, /* approver.json is the pinned approver */
	APPROVER_UNPINNED, /* approver.json without a pin */
	APPROVER_REMOVED, /* a pin, but approver.json is gone */
	APPROVER_REPLACED, /* approver.json holds another key than the pin */
};
struct approver_check {
	enum approver_state state;
	bool changed; /* approver.json was removed or changed outside airlock */
	char trusted[65]; /* hex key whose signatures count ("" when none) */
	char pinned[20], current[20]; /* fingerprints, "" when none */
	char message[400]; /* what changed, for people, when changed */
};
const char *approver_state_to_string(enum approver_state s);
int approver_check(struct store *store, struct approver_check *ret, struct error *err);
/* Whether an approval by key_hex counts: it is the key in effect (system or
 * pinned), or one the pin says it legitimately replaced. */
bool approver_trusts(struct store *store, const char *key_hex);
/* Signature check of message under a hex key, for records that carry both. */
bool approver_verify_key(const char *key_hex, const char *message, const char *sig_hex);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/error.h"
#include "core/store.h"

/* The human approver (docs/gate.md, "The approver"). An approval is an
 * Ed25519 signature by a key derived with scrypt from a passphrase that
 * only the human knows; airlock keeps the salt and the public key, never the
 * passphrase or the private key. The approver is read from
 * /etc/airlock/approver.json when that file exists, is owned by root and
 * not writable by others (an agent running as the user can then neither
 * enrol nor replace it), else from approver.json in the state directory. */
#define APPROVER_SCHEMA	     "airlock.approver/1"
#define APPROVER_SYSTEM_PATH "/etc/airlock/approver.json"

struct approver {
	char *origin; /* the file it was read from */
	json_t *doc;
};
void approver_release(struct approver *a);

/* -ENOENT when no approver is enrolled. A system file that exists but is not
 * root-owned and protected is an error, not a fallback. */
int approver_load(struct store *store, struct approver *ret, struct error *err);
/* Enrols an approver in path (the state directory's approver.json, or the
 * system path). Refuses to replace one unless old_passphrase matches it. */
int approver_enroll(struct store *store, bool system, const char *passphrase,
		    const char *old_passphrase, struct approver *ret, struct error *err);
/* Signs message with the passphrase's key. -EACCES when the passphrase is
 * not the approver's. The approval object carries the public key, message
 * and signature, so anyone can check it with approver_verify(). */
int approver_sign(const struct approver *a, const char *passphrase, const char *message,
		  json_t **ret_approval, struct error *err);
bool approver_verify(const struct approver *a, json_t *approval);
/* The first 16 hex digits of the public key, for people to compare. */
const char *approver_fingerprint(const struct approver *a, char buf[static 20]);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

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
 * the remotes are registered, by `airlock ledger push` (never by a run:
 * pushing is not on a run's path). */
int remotes_register(struct store *store, struct error *err);

/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "ledger/ledger.h"

/* The ledger's mirror on PostgreSQL (docs/ledger.md, "The mirror"): a
 * struct ledger_remote_ops whose push sends the entries and the checkpoint
 * in one transaction through airlock.push(), the one function the schema
 * (src/ledger/mirror.sql) lets its pusher role call, which accepts only an
 * append that extends what the database holds. libpq is loaded when a
 * mirror is first used (dlopen), so a command that pushes nothing never
 * pays for it. */

#define PGMIRROR_NAME		"pg"
#define PGMIRROR_SCHEMA_VERSION 2

struct pgmirror;

/* A mirror at conninfo (libpq's connection string or URI) for the log of
 * host (this installation's name in the mirror), whose key is vkey. Nothing
 * is connected until a push. */
int pgmirror_new(const char *conninfo, const char *host, const char *vkey, struct pgmirror **ret,
		 struct error *err);
/* The remote's ops; its ctx is a struct pgmirror, which ops.free frees. */
extern const struct ledger_remote_ops pgmirror_ops;
/* The size the mirror said it holds after the last push (0: none yet). */
uint64_t pgmirror_held(const struct pgmirror *m);

/* Applies the schema (version PGMIRROR_SCHEMA_VERSION) in one transaction,
 * connected with conninfo's rights (the database's owner's): to a database
 * without it, version 1 and the migrations (*ret_from -1); to one at an
 * older version, the migrations from it (*ret_from that version); nothing
 * when it is there already (*ret_from 0). -EPROTO when the database holds
 * a version this airlock does not know. */
int pgmirror_init(const char *conninfo, int *ret_from, struct error *err);

/* Stores the n cosignature lines the witnesses gave for the checkpoint of
 * size entries of origin's log (schema version 2's airlock.cosign(): only
 * the log's own pusher role, only a checkpoint the mirror holds, lines of
 * the cosignature/v1 form; a line held already is skipped). *ret_added:
 * how many were new. */
int pgmirror_cosign(const char *conninfo, const char *origin, uint64_t size, char *const *lines,
		    size_t n, uint64_t *ret_added, struct error *err);

/* A read of the mirror (`airlock fleet`): sql with its text parameters,
 * run in a read-only transaction on a connection made as the mirror's
 * (conninfo's settings alone); fn is called for each row, a NULL value
 * standing for SQL NULL, and a negative return stops the read with it. At
 * most PGMIRROR_QUERY_FIELDS_MAX columns. */
#define PGMIRROR_QUERY_FIELDS_MAX 16
typedef int (*pgmirror_row_fn)(void *arg, int n_fields, const char *const *values, struct error *err);
int pgmirror_query(const char *conninfo, const char *sql, int n_params, const char *const *params,
		   pgmirror_row_fn fn, void *arg, struct error *err);

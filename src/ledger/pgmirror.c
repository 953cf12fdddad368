/* SPDX-License-Identifier: MIT */
/* The ledger's mirror on PostgreSQL (ledger/pgmirror.h). libpq is opened
 * with dlopen() at the first connection: linked, it would be loaded (with
 * its dynamic libssl, libcrypto, Kerberos and LDAP) at every start of
 * airlock, which runs for each command an agent makes. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "basic/cleanup.h"
#include "basic/parse.h"
#include "ledger/pgmirror.h"

/* the schema's text, generated from src/ledger/mirror.sql (version 1), and
 * the migration to version 2 (src/ledger/mirror2.sql) */
extern const char pgmirror_schema_sql[];
extern const char pgmirror_schema2_sql[];

static struct {
	void *handle;
	PGconn *(*connectdb_params)(const char *const *keywords, const char *const *values,
				    int expand_dbname);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	PGresult *(*exec)(PGconn *conn, const char *query);
	PGresult *(*exec_params)(PGconn *conn, const char *command, int n, const Oid *types,
				 const char *const *values, const int *lengths, const int *formats,
				 int result_format);
	ExecStatusType (*result_status)(const PGresult *res);
	char *(*result_error_field)(const PGresult *res, int field);
	char *(*result_error_message)(const PGresult *res);
	char *(*getvalue)(const PGresult *res, int row, int column);
	int (*ntuples)(const PGresult *res);
	int (*nfields)(const PGresult *res);
	int (*getisnull)(const PGresult *res, int row, int column);
	void (*clear)(PGresult *res);
	PQnoticeProcessor (*set_notice_processor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
} pq;

static int pgmirror_load(struct error *err)
{
	if (pq.handle)
		return 0;
	void *h = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return error_set(err, ENOPKG,
				 "the PostgreSQL client library (libpq.so.5) cannot be loaded: %s",
				 dlerror());
	struct {
		const char *name;
		void **slot;
	} syms[] = {
		{ "PQconnectdbParams", (void **)&pq.connectdb_params },
		{ "PQstatus", (void **)&pq.status },
		{ "PQerrorMessage", (void **)&pq.error_message },
		{ "PQfinish", (void **)&pq.finish },
		{ "PQexec", (void **)&pq.exec },
		{ "PQexecParams", (void **)&pq.exec_params },
		{ "PQresultStatus", (void **)&pq.result_status },
		{ "PQresultErrorField", (void **)&pq.result_error_field },
		{ "PQresultErrorMessage", (void **)&pq.result_error_message },
		{ "PQgetvalue", (void **)&pq.getvalue },
		{ "PQntuples", (void **)&pq.ntuples },
		{ "PQnfields", (void **)&pq.nfields },
		{ "PQgetisnull", (void **)&pq.getisnull },
		{ "PQclear", (void **)&pq.clear },
		{ "PQsetNoticeProcessor", (void **)&pq.set_notice_processor },
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			dlclose(h);
			return error_set(err, ENOPKG, "libpq.so.5 has no %s", syms[i].name);
		}
	}
	pq.handle = h;
	return 0;
}

static void pgmirror_notice_ignore(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* The first line of a libpq message, without its "ERROR:  " prefix. */
static void pgmirror_first_line(const char *msg, char *buf, size_t size)
{
	if (!msg || !*msg)
		msg = "unknown error";
	if (strncmp(msg, "ERROR:  ", 8) == 0)
		msg += 8;
	snprintf(buf, size, "%.*s", (int)strcspn(msg, "\n"), msg);
}

/* libpq fills what the connection string leaves out from PG* variables
 * (PGHOST, PGSERVICE, PGSSLMODE, ...): the environment of the command that
 * started the push is not the user's configuration, so none is used. */
static void pgmirror_scrub_environment(void)
{
	extern char **environ;

	for (size_t i = 0; environ && environ[i];) {
		if (strncmp(environ[i], "PG", 2) != 0 || !strchr(environ[i], '=')) {
			i++;
			continue;
		}
		char name[128];
		size_t n = strcspn(environ[i], "=");
		if (n >= sizeof(name)) { /* no libpq variable is that long */
			i++;
			continue;
		}
		memcpy(name, environ[i], n);
		name[n] = '\0';
		if (unsetenv(name) < 0)
			i++;
	}
}

/* A connection: conninfo's settings alone, with a connect timeout (the push
 * runs in the background, but a hung network must not keep it forever),
 * UTF-8 (the lines are hashed as UTF-8 bytes by the server) and a name. */
static int pgmirror_connect(const char *conninfo, PGconn **ret, struct error *err)
{
	int r = pgmirror_load(err);
	if (r < 0)
		return r;
	pgmirror_scrub_environment();
	const char *const keys[] = { "dbname", "connect_timeout", "client_encoding",
				     "application_name", NULL };
	const char *const values[] = { conninfo, "10", "UTF8", "airlock", NULL };
	PGconn *conn = pq.connectdb_params(keys, values, 1);
	if (!conn)
		return error_set(err, ENOMEM, "out of memory");
	if (pq.status(conn) != CONNECTION_OK) {
		char line[512];
		pgmirror_first_line(pq.error_message(conn), line, sizeof(line));
		pq.finish(conn);
		return error_set(err, ECONNREFUSED, "cannot connect to the mirror: %s", line);
	}
	pq.set_notice_processor(conn, pgmirror_notice_ignore, NULL);
	*ret = conn;
	return 0;
}

/* A failed result as an error: -EEXIST for the mirror's conflict (SQLSTATE
 * AL409, the size it holds in the detail, into *ret_held), -EPROTO for a
 * push it refuses as malformed (AL400: -EPROTO), -ECONNRESET when the connection was
 * lost, -EPROTO otherwise. */
static int pgmirror_result_error(PGconn *conn, PGresult *res, uint64_t *ret_held, struct error *err)
{
	const char *state = res ? pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res ? pq.result_error_field(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char line[768];

	pgmirror_first_line(primary ? primary
			    : res   ? pq.result_error_message(res)
				    : pq.error_message(conn),
			    line, sizeof(line));
	if (state && strcmp(state, "AL409") == 0) {
		const char *detail = pq.result_error_field(res, PG_DIAG_MESSAGE_DETAIL);
		uint64_t held = 0;
		if (!detail || parse_u64(detail, &held) < 0)
			return error_set(err, EPROTO, "the mirror's conflict names no size: %s", line);
		if (ret_held)
			*ret_held = held;
		return error_set(err, EEXIST, "%s", line);
	}
	if (state && strcmp(state, "AL400") == 0)
		return error_set(err, EPROTO, "the mirror refuses the push: %s", line);
	if (pq.status(conn) != CONNECTION_OK)
		return error_set(err, ECONNRESET, "the connection to the mirror was lost: %s", line);
	return error_set(err, EPROTO, "the mirror: %s%s%s", line, state ? " SQLSTATE " : "",
			 state ? state : "");
}

struct pgmirror {
	char *conninfo, *host, *vkey;
	uint64_t held;
};

int pgmirror_new(const char *conninfo, const char *host, const char *vkey, struct pgmirror **ret,
		 struct error *err)
{
	struct pgmirror *m = calloc(1, sizeof(*m));
	if (!m)
		return error_set(err, ENOMEM, "out of memory");
	m->conninfo = strdup(conninfo);
	m->host = strdup(host);
	m->vkey = strndup(vkey, strcspn(vkey, "\n"));
	if (!m->conninfo || !m->host || !m->vkey) {
		pgmirror_ops.free(m);
		return error_set(err, ENOMEM, "out of memory");
	}
	*ret = m;
	return 0;
}

uint64_t pgmirror_held(const struct pgmirror *m)
{
	return m->held;
}

static void pgmirror_free(void *ctx)
{
	struct pgmirror *m = ctx;

	if (!m)
		return;
	free(m->conninfo);
	free(m->host);
	free(m->vkey);
	free(m);
}

static void pgmirror_clear(PGresult **res)
{
	if (*res)
		pq.clear(*res);
	*res = NULL;
}

/* With test hooks, AIRLOCK_TEST_MIRROR_STALL=SECONDS holds the push's
 * transaction open that long after airlock.push() returned, before COMMIT:
 * for the test that kills the server in the middle of a push. */
static const char *pgmirror_stall(void)
{
#if AIRLOCK_TEST_HOOKS
	return getenv("AIRLOCK_TEST_MIRROR_STALL");
#else
	return NULL;
#endif
}

static int pgmirror_push(void *ctx, const struct ledger_push *p, struct ledger_push_reply *reply,
			 struct error *err)
{
	struct pgmirror *m = ctx;
	PGconn *conn = NULL;
	int r = pgmirror_connect(m->conninfo, &conn, err);
	if (r < 0)
		return r;

	char old[24];
	snprintf(old, sizeof(old), "%llu", (unsigned long long)p->old_size);
	size_t proof_n = p->n_proof * MERKLE_HASH_BYTES;
	cleanup_free char *proof = malloc(2 + 2 * proof_n + 1);
	cleanup_free char *checkpoint = strndup(p->checkpoint, p->checkpoint_n);
	cleanup_free char *entries = strndup(p->entries, p->entries_n);
	if (!proof || !checkpoint || !entries) {
		pq.finish(conn);
		return error_set(err, ENOMEM, "out of memory");
	}
	memcpy(proof, "\\x", 2);
	for (size_t i = 0; i < proof_n; i++)
		snprintf(proof + 2 + 2 * i, 3, "%02x", ((const uint8_t *)p->proof)[i]);
	proof[2 + 2 * proof_n] = '\0';

	const char *stall = pgmirror_stall();
	const char *const params[] = { m->host, m->vkey, old, checkpoint, proof, entries };
	PGresult *res = NULL;
	if (stall) {
		res = pq.exec(conn, "BEGIN");
		if (pq.result_status(res) != PGRES_COMMAND_OK)
			r = pgmirror_result_error(conn, res, NULL, err);
		pgmirror_clear(&res);
	}
	uint64_t held = 0;
	if (r == 0) {
		res = pq.exec_params(conn, "SELECT airlock.push($1, $2, $3::bigint, $4, $5::bytea, $6)",
				     6, NULL, params, NULL, NULL, 0);
		if (pq.result_status(res) != PGRES_TUPLES_OK || pq.ntuples(res) != 1)
			r = pgmirror_result_error(conn, res, &reply->remote_size, err);
		else if (parse_u64(pq.getvalue(res, 0, 0), &held) < 0)
			r = error_set(err, EPROTO, "the mirror answered no size");
		pgmirror_clear(&res);
	}
	if (r == 0 && stall) {
		const char *const sp[] = { stall };
		res = pq.exec_params(conn, "SELECT pg_sleep($1::float8)", 1, NULL, sp, NULL, NULL, 0);
		if (pq.result_status(res) != PGRES_TUPLES_OK)
			r = pgmirror_result_error(conn, res, NULL, err);
		pgmirror_clear(&res);
		if (r == 0) {
			res = pq.exec(conn, "COMMIT");
			if (pq.result_status(res) != PGRES_COMMAND_OK)
				r = pgmirror_result_error(conn, res, NULL, err);
			pgmirror_clear(&res);
		}
	}
	pq.finish(conn);
	if (r < 0)
		return r;
	if (held != p->new_size)
		return error_set(err, EPROTO, "the mirror holds %llu entries after the push of %llu",
				 (unsigned long long)held, (unsigned long long)p->new_size);
	m->held = held;
	reply->remote_size = held;
	reply->cosignature[0] = '\0'; /* a mirror keeps, it does not cosign */
	return 0;
}

const struct ledger_remote_ops pgmirror_ops = { PGMIRROR_NAME, pgmirror_push, pgmirror_free };

/* Runs the scripts in one transaction. */
static int pgmirror_apply(PGconn *conn, const char *const *scripts, size_t n, struct error *err)
{
	int r = 0;
	PGresult *res = pq.exec(conn, "BEGIN");
	if (pq.result_status(res) != PGRES_COMMAND_OK)
		r = pgmirror_result_error(conn, res, NULL, err);
	pgmirror_clear(&res);
	for (size_t i = 0; r == 0 && i < n; i++) {
		res = pq.exec(conn, scripts[i]);
		if (pq.result_status(res) != PGRES_COMMAND_OK && pq.result_status(res) != PGRES_TUPLES_OK)
			r = pgmirror_result_error(conn, res, NULL, err);
		pgmirror_clear(&res);
	}
	res = pq.exec(conn, r == 0 ? "COMMIT" : "ROLLBACK");
	if (r == 0 && pq.result_status(res) != PGRES_COMMAND_OK)
		r = pgmirror_result_error(conn, res, NULL, err);
	pgmirror_clear(&res);
	return r;
}

int pgmirror_init(const char *conninfo, int *ret_from, struct error *err)
{
	PGconn *conn = NULL;
	int r = pgmirror_connect(conninfo, &conn, err);
	if (r < 0)
		return r;
	*ret_from = 0;
	uint64_t version = 0;
	PGresult *res = pq.exec(conn, "SELECT (SELECT max(version) FROM airlock.schema_version)");
	bool present = pq.result_status(res) == PGRES_TUPLES_OK && pq.ntuples(res) == 1;
	if (present && (parse_u64(pq.getvalue(res, 0, 0), &version) < 0 || version < 1 ||
			version > PGMIRROR_SCHEMA_VERSION))
		r = error_set(err, EPROTO,
			      "the database holds the mirror's schema version %s; this airlock has version %d",
			      pq.getvalue(res, 0, 0), PGMIRROR_SCHEMA_VERSION);
	pgmirror_clear(&res);
	if (r == 0 && (!present || version < PGMIRROR_SCHEMA_VERSION)) {
		/* None: version 1 and the migrations, in one transaction; an
		 * older one: the migrations from it (each checks the version
		 * it starts from, under a lock: two inits at once). */
		const char *const scripts[] = { pgmirror_schema_sql, pgmirror_schema2_sql };
		size_t first = present ? (size_t)version : 0;
		r = pgmirror_apply(conn, scripts + first,
				   sizeof(scripts) / sizeof(scripts[0]) - first, err);
		if (r == 0)
			*ret_from = present ? (int)version : -1;
	}
	pq.finish(conn);
	return r < 0 ? error_prefix(err, "mirror init") : 0;
}

int pgmirror_cosign(const char *conninfo, const char *origin, uint64_t size, char *const *lines,
		    size_t n, uint64_t *ret_added, struct error *err)
{
	*ret_added = 0;
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(lines[i]) + 1;
	cleanup_free char *text = malloc(len);
	if (!text)
		return error_set(err, ENOMEM, "out of memory");
	char *p = text;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? "\n" : "", lines[i]);
	*p = '\0';
	PGconn *conn = NULL;
	int r = pgmirror_connect(conninfo, &conn, err);
	if (r < 0)
		return r;
	char sz[24];
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
	const char *const params[] = { origin, sz, text };
	PGresult *res = pq.exec_params(conn, "SELECT airlock.cosign($1, $2::bigint, $3)", 3, NULL,
				       params, NULL, NULL, 0);
	const char *state = res ? pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	if (state && strcmp(state, "42883") == 0) /* undefined_function */
		r = error_set(err, EPROTO,
			      "the mirror's schema is older than version 2 (no airlock.cosign()): apply `airlock ledger mirror init` as its owner");
	else if (pq.result_status(res) != PGRES_TUPLES_OK || pq.ntuples(res) != 1)
		r = pgmirror_result_error(conn, res, NULL, err);
	else if (parse_u64(pq.getvalue(res, 0, 0), ret_added) < 0)
		r = error_set(err, EPROTO, "the mirror answered no count");
	pgmirror_clear(&res);
	pq.finish(conn);
	return r < 0 ? error_prefix(err, "mirror cosignatures") : 0;
}

int pgmirror_query(const char *conninfo, const char *sql, int n_params, const char *const *params,
		   pgmirror_row_fn fn, void *arg, struct error *err)
{
	PGconn *conn = NULL;
	int r = pgmirror_connect(conninfo, &conn, err);
	if (r < 0)
		return r;
	/* Read-only, whatever the role may do. */
	PGresult *res = pq.exec(conn, "SET default_transaction_read_only = on");
	if (pq.result_status(res) != PGRES_COMMAND_OK)
		r = pgmirror_result_error(conn, res, NULL, err);
	pgmirror_clear(&res);
	if (r == 0) {
		res = pq.exec_params(conn, sql, n_params, NULL, params, NULL, NULL, 0);
		if (pq.result_status(res) != PGRES_TUPLES_OK)
			r = pgmirror_result_error(conn, res, NULL, err);
	}
	int rows = r == 0 ? pq.ntuples(res) : 0, fields = r == 0 ? pq.nfields(res) : 0;
	const char *values[PGMIRROR_QUERY_FIELDS_MAX];
	if (fields > PGMIRROR_QUERY_FIELDS_MAX)
		r = error_set(err, E2BIG, "the mirror answered %d columns", fields);
	for (int i = 0; r == 0 && i < rows; i++) {
		for (int j = 0; j < fields; j++)
			values[j] = pq.getisnull(res, i, j) ? NULL : pq.getvalue(res, i, j);
		r = fn(arg, fields, values, err);
	}
	pgmirror_clear(&res);
	pq.finish(conn);
	return r;
}

#!/bin/sh
# A private PostgreSQL cluster for a test (sourced): pg_start DIR makes one
# in DIR/data with its Unix socket in DIR and no TCP listener, pg_stop DIR
# stops it (pg_ctl stop -m immediate when asked: a crash). initdb refuses to
# run as root, so as root the cluster is nobody's (setpriv), in a directory
# nobody owns. The superuser is "postgres", trusted on the socket.

pg_bindir() {
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && echo "$d"
	done | sort -V | tail -n 1
}
PG_BIN=${PG_BIN:-$(pg_bindir)}

pg_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	else
		"$@"
	fi
}

pg_start() { # DIR
	mkdir -p "$1" || return 1
	[ "$(id -u)" -eq 0 ] && chown 65534:65534 "$1"
	chmod 0755 "$1"
	if [ ! -d "$1/data" ]; then
		pg_as_owner "$PG_BIN/initdb" -D "$1/data" -U postgres --auth=trust -E UTF8 \
			--locale=C --no-sync >"$1/initdb.log" 2>&1 || {
			cat "$1/initdb.log" >&2
			return 1
		}
	fi
	pg_as_owner "$PG_BIN/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 \
		-o "-k $1 -c listen_addresses='' -c max_connections=60" start >/dev/null || {
		cat "$1/server.log" >&2
		return 1
	}
}

pg_stop() { # DIR [MODE]
	[ -f "$1/data/postmaster.pid" ] || return 0
	pg_as_owner "$PG_BIN/pg_ctl" -D "$1/data" -w -t 60 -m "${2:-fast}" stop >/dev/null 2>&1
}

# A suite's cluster (setup_file/teardown_file): started once in a fresh
# directory, exported as PGDIR; nothing when PostgreSQL is not installed
# (each test then skips). Short paths: the socket's must fit in sun_path.
pg_suite_start() {
	[ -n "$PG_BIN" ] || return 0
	PGDIR=$(mktemp -d /tmp/airlock-pg.XXXXXX)
	export PGDIR
	pg_start "$PGDIR"
}

pg_suite_stop() {
	[ -n "${PGDIR:-}" ] || return 0
	pg_stop "$PGDIR"
	rm -rf "$PGDIR"
}

# libpq connection strings: the owner's, and the pusher's.
pg_owner() { echo "host=$1 dbname=postgres user=postgres"; }
pg_pusher() { echo "host=$1 dbname=postgres user=airlock_pusher"; }

pg_psql() { # DIR USER SQL: one value per line, no headers
	psql -X -q -A -t -v ON_ERROR_STOP=1 "host=$1 dbname=postgres user=$2" -c "$3"
}

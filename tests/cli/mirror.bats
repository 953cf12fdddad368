#!/usr/bin/env bats
# The ledger's mirror on a real PostgreSQL (docs/ledger.md, "The mirror";
# issue 23): a private cluster for this file (tests/helpers/pg.sh), on a
# Unix socket in a temporary directory, one database per test with the
# schema applied by `airlock ledger mirror init`. Several hosts are several
# state directories; entries in bulk come from bench/ledger_bench.c's
# `receipts` (receipts committed through store_write_receipt(), the commit
# path of a run, without the sandbox).
load helpers

# shellcheck disable=SC1091 # checked on its own (scripts/check-shell.sh)
. "$BATS_TEST_DIRNAME/../helpers/pg.sh"

LEDGER_BENCH=${AIRLOCK_LEDGER_BENCH:-$(dirname "$AIRLOCK")/tests/ledger_bench}

setup_file() { pg_suite_start; }
teardown_file() { pg_suite_stop; }

teardown() {
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	# A run's detached pusher (core/store/remotes.h) may still be at work in
	# a state directory: its lock is held until it ends (as in fleet.bats).
	for l in "$TEST_DIR"/*/mirror/lock "$TEST_DIR"/*/state/mirror/lock; do
		[ ! -e "$l" ] || flock -w 10 "$l" true || true
	done
	rm -rf "$TEST_DIR" 2>/dev/null || { sleep 1; rm -rf "$TEST_DIR"; }
}

setup() {
	[ -n "$PG_BIN" ] || skip "PostgreSQL is not installed (scripts/deps.sh installs postgresql)"
	setup_dirs
	chmod 0755 "$TEST_DIR"
	DB="t$BATS_SUITE_TEST_NUMBER"
	pg_psql "$PGDIR" postgres "CREATE DATABASE $DB" >/dev/null
	"$AIRLOCK" ledger mirror init "host=$PGDIR dbname=$DB user=postgres" >/dev/null
	PUSHER="host=$PGDIR dbname=$DB user=airlock_pusher"
}

# One value per line from the test's database, as role $2 (default postgres).
q() {
	psql -X -q -A -t -v ON_ERROR_STOP=1 "host=$PGDIR dbname=$DB user=${2:-postgres}" -c "$1"
}

# A state directory with n receipts committed, and the mirror configured.
host_with() { # dir n
	mkdir -p "$1"
	AIRLOCK_STATE_DIR="$1" "$AIRLOCK" run --sandbox=none -- true >/dev/null
	[ "$2" -gt 1 ] && "$LEDGER_BENCH" receipts "$1" $(($2 - 1)) "$1/receipts/1.json"
	"$AIRLOCK" ledger mirror set "$PUSHER" --state-dir "$1"
}

log_size() {
	wc -l <"$1/ledger/log" | tr -d ' '
}

@test "mirror: a push lands every entry once, byte for byte; a second push changes nothing" {
	host_with "$TEST_DIR/h" 5
	# the connection is the configured one: no PG* variable of the caller's
	# environment (an unknown service would fail it) reaches libpq
	PGSERVICE=elsewhere PGHOST=/nonexistent PGDATABASE=other run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM airlock.entries")" = "5|5|0|4" ]
	[ "$(q "SELECT line FROM airlock.entries ORDER BY seq")" = "$(cat "$TEST_DIR/h/ledger/log")" ]
	[ "$(q "SELECT string_agg(DISTINCT kind, ',') FROM airlock.entries")" = receipt ]
	[ "$(q "SELECT checkpoint FROM airlock.log_heads")" = "$(cat "$TEST_DIR/h/ledger/checkpoint")" ]
	[ "$(q "SELECT vkey FROM airlock.logs")" = "$("$AIRLOCK" ledger key --state-dir "$TEST_DIR/h")" ]
	before=$(q "SELECT count(*) FROM airlock.checkpoints")
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 0 ]
	# the state file lost: the database says it holds it all; accepted again
	rm -f "$TEST_DIR/h/ledger/remotes/pg"
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "5|5" ]
	[ "$(q "SELECT count(*) FROM airlock.checkpoints")" = "$before" ]
	# more entries: only they are sent, with a consistency proof
	AIRLOCK_STATE_DIR="$TEST_DIR/h" "$AIRLOCK" run --sandbox=none -- false >/dev/null || true
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	n=$(log_size "$TEST_DIR/h")
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "$n|$n" ]
	[ "$(q "SELECT size FROM airlock.log_heads")" = "$n" ]
	[ "$(q "SELECT line FROM airlock.entries ORDER BY seq")" = "$(cat "$TEST_DIR/h/ledger/log")" ]
	run "$AIRLOCK" ledger mirror show --state-dir "$TEST_DIR/h"
	[ "$(jq -r '.pushed == .signed_size and .last_error == null' <<<"$output")" = true ]
}

@test "mirror: the pusher may only call airlock.push(); nobody may change or remove a row" {
	host_with "$TEST_DIR/h" 3
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	for sql in "SELECT count(*) FROM airlock.entries" \
		"INSERT INTO airlock.entries VALUES ('o', 99, sha256(''), 'k', 'i', 'p', 'l')" \
		"UPDATE airlock.entries SET line = 'x'" "DELETE FROM airlock.entries" \
		"TRUNCATE airlock.entries" "INSERT INTO airlock.logs VALUES ('o', 'h', 'k')" \
		"UPDATE airlock.checkpoints SET size = 1" "DELETE FROM airlock.logs" \
		"SELECT airlock.conflict(1, 'x')"; do
		run q "$sql" airlock_pusher
		[ "$status" -ne 0 ]
		[[ "$output" == *"permission denied"* ]]
	done
	# the owner neither: triggers refuse every change
	for sql in "UPDATE airlock.entries SET line = 'x'" "DELETE FROM airlock.entries" \
		"TRUNCATE airlock.entries" "UPDATE airlock.logs SET vkey = 'x'" \
		"DELETE FROM airlock.checkpoints" "TRUNCATE airlock.checkpoints CASCADE" \
		"TRUNCATE airlock.logs CASCADE" "UPDATE airlock.schema_version SET version = 2"; do
		run q "$sql"
		[ "$status" -ne 0 ]
		[[ "$output" == *"append-only"* ]]
	done
	[ "$(q "SELECT count(*) FROM airlock.entries")" = 3 ]
	# A client that lies: the checkpoint of another host's log, with lines
	# that are not its leaves, is refused by the database itself.
	host_with "$TEST_DIR/liar" 3
	"$AIRLOCK" ledger mirror unset --state-dir "$TEST_DIR/liar" # it pushes by hand
	AIRLOCK_STATE_DIR="$TEST_DIR/liar" "$AIRLOCK" ledger checkpoint >/dev/null
	vkey=$("$AIRLOCK" ledger key --state-dir "$TEST_DIR/liar")
	cp="$(cat "$TEST_DIR/liar/ledger/checkpoint")"
	forged=$(sed 's/"kind":"receipt"/"kind":"discard"/' "$TEST_DIR/liar/ledger/log")
	run q "SELECT airlock.push('liar', \$\$$vkey\$\$, 0, \$\$$cp
\$\$, '\\x', \$\$$forged
\$\$)" airlock_pusher
	[ "$status" -ne 0 ]
	[[ "$output" == *"do not make the checkpoint's root"* ]]
	# with its true lines, the same call is accepted
	run q "SELECT airlock.push('liar', \$\$$vkey\$\$, 0, \$\$$cp
\$\$, '\\x', \$\$$(cat "$TEST_DIR/liar/ledger/log")
\$\$)" airlock_pusher
	[ "$status" -eq 0 ]
	[ "$output" = 3 ]
	# another login role, even one with the pusher's rights, cannot append
	# to a log it did not start
	q "CREATE ROLE other_host LOGIN IN ROLE airlock_pusher"
	"$LEDGER_BENCH" receipts "$TEST_DIR/h" 1 "$TEST_DIR/h/receipts/1.json"
	"$AIRLOCK" ledger mirror set "host=$PGDIR dbname=$DB user=other_host" --state-dir "$TEST_DIR/h"
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 1 ]
	[[ "$output" == *"holds 3 entries"* ]]
	[ "$(q "SELECT count(*) FROM airlock.entries")" = 6 ]
	# a checkpoint whose signature is by another key
	other=$("$AIRLOCK" ledger key --state-dir "$TEST_DIR/h")
	run q "SELECT airlock.push('liar2', \$\$$other\$\$, 0, \$\$$cp
\$\$, '\\x', '')" airlock_pusher
	[ "$status" -ne 0 ]
}

@test "mirror: the server killed in the middle of a push loses nothing, duplicates nothing" {
	host_with "$TEST_DIR/h" 300
	# The push's transaction is held open after airlock.push() (test hook);
	# the server dies before COMMIT.
	AIRLOCK_TEST_MIRROR_STALL=60 "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h" \
		>"$TEST_DIR/push.out" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do
		[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'")" = 1 ] && break
		sleep 0.1
	done
	[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'")" = 1 ]
	pg_stop "$PGDIR" immediate
	st=0
	wait "$pid" || st=$?
	[ "$st" -ne 0 ]
	grep -q "mirror" "$TEST_DIR/push.out"
	pg_start "$PGDIR"
	[ "$(q "SELECT count(*) FROM airlock.entries")" = 0 ]
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq), max(seq) FROM airlock.entries")" = "300|300|299" ]
	# and the same when the server dies after the commit, before the reply
	# is recorded: the next push finds it held
	"$LEDGER_BENCH" receipts "$TEST_DIR/h" 50 "$TEST_DIR/h/receipts/1.json"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	echo 300 >"$TEST_DIR/h/ledger/remotes/pg"
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "350|350" ]
}

@test "mirror: ten hosts push a thousand entries each at once: every entry once, every checkpoint consistent" {
	for h in $(seq 1 10); do
		host_with "$TEST_DIR/h$h" 500 &
	done
	wait
	for round in 1 2; do
		pids=()
		for h in $(seq 1 10); do
			"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h$h" &
			pids+=($!)
		done
		for p in "${pids[@]}"; do wait "$p"; done
		if [ "$round" = 1 ]; then
			for h in $(seq 1 10); do
				"$LEDGER_BENCH" receipts "$TEST_DIR/h$h" 500 "$TEST_DIR/h$h/receipts/1.json" &
			done
			wait
		fi
	done
	[ "$(q "SELECT count(*) FROM airlock.logs")" = 10 ]
	[ "$(q "SELECT count(*), count(DISTINCT (origin, seq)) FROM airlock.entries")" = "10000|10000" ]
	[ "$(q "SELECT count(*) FROM (SELECT origin FROM airlock.entries GROUP BY origin HAVING count(*) = 1000 AND max(seq) = 999) g")" = 10 ]
	for h in $(seq 1 10); do
		d="$TEST_DIR/h$h"
		origin=$(head -n 1 "$d/ledger/checkpoint")
		[ "$(q "SELECT line FROM airlock.entries WHERE origin = '$origin' ORDER BY seq")" = "$(cat "$d/ledger/log")" ]
		# every checkpoint the mirror holds is one the host signed, and
		# the host's log extends the mirror's head
		while IFS='|' read -r size; do
			[ "$(q "SELECT checkpoint FROM airlock.checkpoints WHERE origin = '$origin' AND size = $size")" = "$(cat "$d/ledger/checkpoints/$size")" ]
		done < <(q "SELECT size FROM airlock.checkpoints WHERE origin = '$origin'")
		[ "$(q "SELECT count(*) FROM airlock.checkpoints WHERE origin = '$origin'")" -ge 2 ]
		"$AIRLOCK" ledger key --state-dir "$d" >"$TEST_DIR/key$h"
		printf '%s\n' "$(q "SELECT checkpoint FROM airlock.log_heads WHERE origin = '$origin'")" >"$TEST_DIR/head$h"
		AIRLOCK_STATE_DIR="$d" run "$AIRLOCK" ledger verify --key "$TEST_DIR/key$h" --checkpoint "$TEST_DIR/head$h"
		[ "$status" -eq 0 ]
	done
}

# A host that pushed 6 entries, then a copy of it taken at 3 (its backup).
pushed_host() {
	host_with "$TEST_DIR/h" 3
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	cp -a "$TEST_DIR/h" "$TEST_DIR/backup"
	"$LEDGER_BENCH" receipts "$TEST_DIR/h" 3 "$TEST_DIR/h/receipts/1.json"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$(q "SELECT size FROM airlock.log_heads")" = 6 ]
}

# The push is refused naming what the mirror holds; the conflict is
# recorded, the gate is closed until the approver resolves it.
refused_with_6() {
	run --separate-stderr "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -eq 1 ]
	one_error_line "holds 6 entries"
	[ "$(q "SELECT size FROM airlock.log_heads")" = 6 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "6|6" ]
	[ -f "$TEST_DIR/h/mirror/conflict.json" ]
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"mirror refused a push"*"holds 6 entries"* ]]
}

@test "mirror: a ledger restored from an old backup is refused with the mirror's size" {
	pushed_host
	rm -rf "$TEST_DIR/h"
	mv "$TEST_DIR/backup" "$TEST_DIR/h"
	AIRLOCK_STATE_DIR="$TEST_DIR/h" "$AIRLOCK" run --sandbox=none -- true >/dev/null
	refused_with_6
}

@test "mirror: a truncated ledger, re-signed, is refused with the mirror's size" {
	pushed_host
	l="$TEST_DIR/h/ledger"
	head -n 4 "$l/log" >"$l/log.cut"
	mv "$l/log.cut" "$l/log"
	rm -rf "$l/checkpoint" "$l/checkpoints" "$l/index" "$l/range"
	refused_with_6
	# its record of the mirror lost too: the database itself refuses
	rm -rf "$l/remotes" "$TEST_DIR/h/mirror/conflict.json"
	refused_with_6
}

@test "mirror: a rewritten ledger, re-signed, is refused with the mirror's size" {
	pushed_host
	l="$TEST_DIR/h/ledger"
	sed -i '2s/"time":"[^"]*"/"time":"2020-01-01T00:00:00.000Z"/' "$l/log"
	rm -rf "$l/checkpoint" "$l/checkpoints" "$l/index" "$l/range" "$l/remotes"
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run "$AIRLOCK" ledger checkpoint
	[ "$status" -eq 0 ]
	refused_with_6
	# with a new entry, the consistency proof from the mirror's tree fails
	rm "$TEST_DIR/h/mirror/conflict.json"
	AIRLOCK_STATE_DIR="$TEST_DIR/h" "$AIRLOCK" run --sandbox=none -- true >/dev/null
	refused_with_6
}

@test "mirror: a ledger re-keyed is refused with the mirror's size; the approver resolves the conflict" {
	pushed_host
	l="$TEST_DIR/h/ledger"
	rm -rf "$l/key" "$l/key.pub" "$l/checkpoint" "$l/checkpoints" "$l/remotes"
	refused_with_6
	[[ "$(jq -r .error "$TEST_DIR/h/mirror/conflict.json")" == *"holds 6 entries"* ]]
	# the agent's hook blocks what changes anything, lets a read through
	payload() {
		sed -e "s|@CWD@|$WORK|g" -e "s|@ACTIVE@|false|g" -e "s|@PATH@||g" -e "s|@COMMAND@|$1|g" \
			"$BATS_TEST_DIRNAME/../fixtures/hosts/claude-code/2.1/pre-tool-use-bash.json"
	}
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$(payload "npm test")"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"mirror refused a push"*"airlock ledger mirror resolve"* ]]
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$(payload "git status")"
	[ "$status" -eq 0 ]
	# only the approver closes it
	run "$AIRLOCK" ledger mirror resolve --state-dir "$TEST_DIR/h" </dev/null
	[ "$status" -ne 0 ]
	[ -f "$TEST_DIR/h/mirror/conflict.json" ]
	printf '%s\n%s\n' "correct horse" "correct horse" |
		AIRLOCK_STATE_DIR="$TEST_DIR/h" script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
	run script -qec "'$AIRLOCK' ledger mirror resolve --state-dir '$TEST_DIR/h'" /dev/null <<<"a guess"
	[ -f "$TEST_DIR/h/mirror/conflict.json" ]
	[ "$(grep -c '"kind":"mirror-resolve"' "$TEST_DIR/h/ledger/log")" = 0 ]
	conflict=$(jq -r .error "$TEST_DIR/h/mirror/conflict.json")
	run script -qec "'$AIRLOCK' ledger mirror resolve --state-dir '$TEST_DIR/h'" /dev/null <<<"correct horse"
	[ "$status" -eq 0 ]
	[ ! -e "$TEST_DIR/h/mirror/conflict.json" ]
	# the approval is committed: a mirror-resolve entry, its record the
	# approver's signature over the conflict it closed
	[ "$(grep -c '"kind":"mirror-resolve","id":"1","path":"mirror/resolved/1.json"' "$TEST_DIR/h/ledger/log")" = 1 ]
	rec="$TEST_DIR/h/mirror/resolved/1.json"
	[ "$(jq -r .approval.public_key "$rec")" = "$(jq -r .public_key "$TEST_DIR/h/approver.json")" ]
	[[ "$(jq -r .approval.message "$rec")" == "airlock.mirror-resolve/1 "*"$(jq -r .conflict "$rec")"* ]]
	[[ "$(jq -r .conflict "$rec")" == *"$conflict"* ]]
	AIRLOCK_STATE_DIR="$TEST_DIR/h" "$AIRLOCK" ledger key >"$TEST_DIR/key.pub"
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run "$AIRLOCK" ledger verify --key "$TEST_DIR/key.pub"
	[ "$status" -eq 0 ]
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	AIRLOCK_STATE_DIR="$TEST_DIR/h" run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$(payload "npm test")"
	[ "$status" -eq 0 ]
	# the mirror still holds the old log only
	[ "$(q "SELECT count(*) FROM airlock.logs")" = 1 ]
}

@test "mirror: after a run a detached pusher sends it; an unreachable database never holds a run" {
	mkdir -p "$TEST_DIR/h"
	"$AIRLOCK" ledger mirror set "$PUSHER" --state-dir "$TEST_DIR/h"
	export AIRLOCK_STATE_DIR="$TEST_DIR/h"
	for _ in 1 2 3; do "$AIRLOCK" run --sandbox=none -- true >/dev/null; done
	for _ in $(seq 1 100); do
		[ "$(q "SELECT size FROM airlock.log_heads")" = 3 ] && break
		sleep 0.1
	done
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "3|3" ]
	# The database gone (a socket directory with no server in it).
	mkdir "$TEST_DIR/nopg"
	"$AIRLOCK" ledger mirror set "host=$TEST_DIR/nopg dbname=x user=airlock_pusher"
	start=$(date +%s%N)
	run "$AIRLOCK" run -- true
	[ "$status" -eq 0 ]
	[ $(($(date +%s%N) - start)) -lt 5000000000 ]
	for _ in $(seq 1 100); do
		grep -q "cannot connect" "$TEST_DIR/h/mirror/status.json" 2>/dev/null && break
		sleep 0.1
	done
	run "$AIRLOCK" doctor
	[[ "$output" == *"ledger mirror"*"3 of 4 signed entries pushed; last push failed: "*"cannot connect to the mirror"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	[[ "$output" == *"ledger mirror: 3 of 4 signed entries pushed; last push failed"* ]]
	run "$AIRLOCK" ledger push
	[ "$status" -eq 125 ]
	# back: the next push catches up
	"$AIRLOCK" ledger mirror set "$PUSHER"
	run "$AIRLOCK" ledger push
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries")" = "4|4" ]
	run "$AIRLOCK" doctor
	[[ "$output" == *"ok    ledger mirror     4 signed entries pushed"* ]]
}

@test "mirror: pushers in network namespaces of their own reach it over loopback TCP" {
	command -v ip >/dev/null && command -v unshare >/dev/null || skip "no ip or unshare"
	ns=(unshare -n)
	[ "$(id -u)" -eq 0 ] || ns=(unshare -rn)
	"${ns[@]}" true || skip "no network namespace here"
	fwd="$BATS_TEST_DIRNAME/../helpers/tcp2unix.py"
	port=$((20000 + RANDOM % 20000))
	for h in 1 2 3; do
		host_with "$TEST_DIR/n$h" 20
		"$AIRLOCK" ledger mirror set "host=127.0.0.1 port=$port dbname=$DB user=airlock_pusher" --state-dir "$TEST_DIR/n$h"
	done
	# each in its own namespace: its own loopback, where a relay to the
	# cluster's socket listens (the host's loopback has no such port)
	for h in 1 2 3; do
		"${ns[@]}" sh -c '
			ip link set lo up || exit 1
			/usr/bin/python3 "$1" "$5" "$2/.s.PGSQL.5432" >"$3/relay" &
			for _ in $(seq 1 100); do grep -q ready "$3/relay" && break; sleep 0.05; done
			"$4" ledger push --state-dir "$3"; s=$?
			kill $!
			exit $s' sh "$fwd" "$PGDIR" "$TEST_DIR/n$h" "$AIRLOCK" "$port" &
	done
	wait
	for h in 1 2 3; do
		origin=$(head -n 1 "$TEST_DIR/n$h/ledger/checkpoint")
		[ "$(q "SELECT count(*), count(DISTINCT seq) FROM airlock.entries WHERE origin = '$origin'")" = "20|20" ]
	done
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/n1"
	[ "$status" -eq 0 ] # held already: nothing sent
	"$LEDGER_BENCH" receipts "$TEST_DIR/n1" 1 "$TEST_DIR/n1/receipts/1.json"
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/n1"
	ss -ltn | grep -q ":$port " && skip "port $port is taken on this host"
	[ "$status" -eq 125 ] # from the host's namespace, nothing listens there
	[[ "$output" == *"cannot connect to the mirror"* ]]
}

@test "mirror: init is idempotent and refuses another schema version; set/show/unset" {
	run "$AIRLOCK" ledger mirror init "host=$PGDIR dbname=$DB user=postgres"
	[ "$status" -eq 0 ]
	[ "$output" = "mirror schema version 3 present already" ]
	q "INSERT INTO airlock.schema_version (version) VALUES (4)"
	run "$AIRLOCK" ledger mirror init "host=$PGDIR dbname=$DB user=postgres"
	[ "$status" -ne 0 ]
	[[ "$output" == *"schema version 4"* ]]
	run "$AIRLOCK" ledger mirror show
	[ "$(jq -r .configured <<<"$output")" = false ]
	"$AIRLOCK" ledger mirror set "$PUSHER" --host build-7
	run "$AIRLOCK" ledger mirror show
	[ "$(jq -r '.configured, .host' <<<"$output")" = "true
build-7" ]
	[ "$(stat -c %a "$AIRLOCK_STATE_DIR/mirror/config.json")" = 600 ]
	"$AIRLOCK" ledger mirror unset
	run "$AIRLOCK" ledger mirror show
	[ "$(jq -r .configured <<<"$output")" = false ]
	# without a mirror, push has nothing to do
	run "$AIRLOCK" ledger push
	[ "$status" -eq 0 ]
}

# A cosignature/v1 line of witness $1 (76 bytes of base64, not a valid
# signature: the database cannot check Ed25519).
cosig_line() {
	printf '— %s %s' "$1" "$(head -c 76 /dev/zero | tr '\0' '\1' | base64 -w0)"
}

@test "mirror: init migrates a database of schema version 1 to 3, keeping what it holds" {
	pg_psql "$PGDIR" postgres "CREATE DATABASE ${DB}v1" >/dev/null
	psql -X -q -v ON_ERROR_STOP=1 "host=$PGDIR dbname=${DB}v1 user=postgres" \
		-f "$BATS_TEST_DIRNAME/../../src/ledger/mirror.sql" >/dev/null
	old="host=$PGDIR dbname=${DB}v1"
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT max(version) FROM airlock.schema_version")" = 1 ]
	host_with "$TEST_DIR/h" 3
	"$AIRLOCK" ledger mirror set "$old user=airlock_pusher" --state-dir "$TEST_DIR/h"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	# a witness's cosignature kept (as ledger/remotes/<name> keeps one): a
	# mirror at version 1 cannot take it, and the push says what to do
	printf '3\n%s\n' "$(cosig_line w.example/a)" >"$TEST_DIR/h/ledger/remotes/wa"
	run "$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$status" -ne 0 ]
	[[ "$output" == *"older than version 2"*"ledger mirror init"* ]]
	run "$AIRLOCK" ledger mirror init "$old user=postgres"
	[ "$status" -eq 0 ]
	[ "$output" = "mirror schema version 3 applied (migrated from version 1)" ]
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT size, witness FROM airlock.cosignatures")" = "3|w.example/a" ]
	rm "$TEST_DIR/h/ledger/remotes/wa"
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT string_agg(version::text, ',' ORDER BY version) FROM airlock.schema_version")" = 1,2,3 ]
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT count(*) FROM airlock.entries")" = 3 ]
	run "$AIRLOCK" ledger mirror init "$old user=postgres"
	[ "$output" = "mirror schema version 3 present already" ]
	# and the pusher goes on where it was
	"$LEDGER_BENCH" receipts "$TEST_DIR/h" 2 "$TEST_DIR/h/receipts/1.json"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT count(*) FROM airlock.entries")" = "$(log_size "$TEST_DIR/h")" ]
}

@test "mirror: cosignatures only through airlock.cosign(), by the log's pusher, for a checkpoint it holds; append-only" {
	host_with "$TEST_DIR/h" 3
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	origin=$(q "SELECT origin FROM airlock.logs")
	a=$(cosig_line w.example/a)
	run q "SELECT airlock.cosign(\$\$$origin\$\$, 3, \$\$$a\$\$)" airlock_pusher
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
	# again: held already, nothing new
	run q "SELECT airlock.cosign(\$\$$origin\$\$, 3, \$\$$a\$\$)" airlock_pusher
	[ "$output" = 0 ]
	[ "$(q "SELECT origin = \$\$$origin\$\$, size, witness FROM airlock.cosignatures")" = "t|3|w.example/a" ]
	# a size the mirror holds no checkpoint of; lines that are not cosignatures
	run q "SELECT airlock.cosign(\$\$$origin\$\$, 2, \$\$$a\$\$)" airlock_pusher
	[ "$status" -ne 0 ]
	[[ "$output" == *"holds no checkpoint of 2 entries"* ]]
	for bad in "— w.example/a AAAA" "w.example/a ${a##* }" "— w.example/a ${a##* }x" "$a
garbage"; do
		run q "SELECT airlock.cosign(\$\$$origin\$\$, 3, \$\$$bad\$\$)" airlock_pusher
		[ "$status" -ne 0 ]
		[[ "$output" == *"not a cosignature line"* ]]
	done
	# at most 64 lines for one checkpoint
	many=$(for i in $(seq 64); do printf '— w.example/%s %s\n' "$i" "${a##* }"; done)
	run q "SELECT airlock.cosign(\$\$$origin\$\$, 3, \$\$$many\$\$)" airlock_pusher
	[ "$status" -ne 0 ]
	[[ "$output" == *"more than 64 cosignatures"* ]]
	# another role, even a pusher, cannot add to a log it does not push
	# (roles are the cluster's: a name no other test of this file makes)
	q "CREATE ROLE cosign_other LOGIN IN ROLE airlock_pusher"
	run q "SELECT airlock.cosign(\$\$$origin\$\$, 3, \$\$$(cosig_line w.example/b)\$\$)" cosign_other
	[ "$status" -ne 0 ]
	[[ "$output" == *"is not pushed by role cosign_other"* ]]
	# the pusher reads nothing and writes no table directly
	for sql in "SELECT count(*) FROM airlock.cosignatures" "SELECT count(*) FROM airlock.cosigned_heads" \
		"INSERT INTO airlock.cosignatures (origin, size, witness, line) VALUES ('o', 3, 'w', 'l')"; do
		run q "$sql" airlock_pusher
		[ "$status" -ne 0 ]
		[[ "$output" == *"permission denied"* ]]
	done
	run q "SELECT airlock.cosign('x', 1, 'y')" airlock_reader
	[[ "$output" == *"permission denied"* ]]
	# the owner cannot change or remove one either
	for sql in "UPDATE airlock.cosignatures SET line = 'x'" "DELETE FROM airlock.cosignatures" \
		"TRUNCATE airlock.cosignatures"; do
		run q "$sql"
		[ "$status" -ne 0 ]
		[[ "$output" == *"append-only"* ]]
	done
	[ "$(q "SELECT count(*) FROM airlock.cosignatures")" = 1 ]
}

@test "mirror: init migrates a database of schema version 2 to 3 (the approvals of docs/fleet.md)" {
	pg_psql "$PGDIR" postgres "CREATE DATABASE ${DB}v2" >/dev/null
	for f in mirror.sql mirror2.sql; do
		psql -X -q -1 -v ON_ERROR_STOP=1 "host=$PGDIR dbname=${DB}v2 user=postgres" \
			-f "$BATS_TEST_DIRNAME/../../src/ledger/$f" >/dev/null
	done
	old="host=$PGDIR dbname=${DB}v2"
	host_with "$TEST_DIR/h" 3
	"$AIRLOCK" ledger mirror set "$old user=airlock_pusher" --state-dir "$TEST_DIR/h"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/h"
	run "$AIRLOCK" ledger mirror init "$old user=postgres"
	[ "$status" -eq 0 ]
	[ "$output" = "mirror schema version 3 applied (migrated from version 2)" ]
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT string_agg(version::text, ',' ORDER BY version) FROM airlock.schema_version")" = 1,2,3 ]
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT count(*) FROM airlock.approvals")" = 0 ]
	[ "$(psql -X -A -t "$old user=postgres" -c "SELECT count(*) FROM airlock.entries")" = 3 ]
}

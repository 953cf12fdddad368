#!/usr/bin/env bats
# airlock fleet (docs/fleet.md; issue 23, "Many hosts, one place"): three
# installations (state directories) push to one mirror on a private
# PostgreSQL cluster (tests/helpers/pg.sh); `airlock fleet`, as the
# read-only role airlock_reader, lists each host's runs, open failures,
# pending permits and approvals.
load helpers

# shellcheck disable=SC1091 # checked on its own (scripts/check-shell.sh)
. "$BATS_TEST_DIRNAME/../helpers/pg.sh"

PASS='correct horse battery'

setup_file() { pg_suite_start; }
teardown_file() { pg_suite_stop; }

setup() {
	[ -n "$PG_BIN" ] || skip "PostgreSQL is not installed (scripts/deps.sh installs postgresql)"
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	setup_dirs
	chmod 0755 "$TEST_DIR"
	DB="t$BATS_SUITE_TEST_NUMBER"
	pg_psql "$PGDIR" postgres "CREATE DATABASE $DB" >/dev/null
	"$AIRLOCK" ledger mirror init "host=$PGDIR dbname=$DB user=postgres" >/dev/null
	PUSHER="host=$PGDIR dbname=$DB user=airlock_pusher"
	READER="host=$PGDIR dbname=$DB user=airlock_reader"
}

teardown() {
	for f in "$TEST_DIR"/*.pid; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	# A step's detached pusher (core/store/remotes.h) may still be at work
	# in a state directory: its lock is held until it ends.
	for l in "$TEST_DIR"/*/state/mirror/lock; do
		[ ! -e "$l" ] || flock -w 10 "$l" true || true
	done
	rm -rf "$TEST_DIR" 2>/dev/null || { sleep 1; rm -rf "$TEST_DIR"; }
}

q() {
	psql -X -q -A -t -v ON_ERROR_STOP=1 "host=$PGDIR dbname=$DB user=${2:-postgres}" -c "$1"
}

# A line of the mirror with $2 replaced by $3 in it, its sha256 made the
# SHA-256 of its record's new bytes: what a database superuser can write
# (the ledger's parser accepts it; only the host's signed tree refutes it).
forged_text() { # line old new
	OLD=$2 NEW=$3 python3 -c '
import hashlib, json, os, sys
line = sys.argv[1]
old, new = os.environ["OLD"], os.environ["NEW"]
rec = json.loads(line)["record"].replace(old, new)
h = json.loads(line)["sha256"]
print(line.replace(old, new).replace(h, hashlib.sha256(rec.encode()).hexdigest()))
' "$1"
}

# The line at seq $2 of host $1's log in the mirror so altered by the
# superuser, its leaf column left as pushed.
forge_line() { # host seq old new
	local origin line new
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = '$1'")
	line=$(q "SELECT line FROM airlock.entries WHERE origin = '$origin' AND seq = $2")
	new=$(forged_text "$line" "$3" "$4")
	[ "$new" != "$line" ]
	q "SET session_replication_role = replica; UPDATE airlock.entries SET line = \$l\$$new\$l\$ WHERE origin = '$origin' AND seq = $2" >/dev/null
}

# A host named $1: its own state directory and workspace, an approver, two
# runs that pass and one that fails (left open), a permit pending approval
# and one approved, all pushed to the mirror.
host() { # name [argv of one more run]
	local name=$1 dir="$TEST_DIR/$1"
	shift
	mkdir -p "$dir/work"
	(
		export AIRLOCK_STATE_DIR="$dir/state"
		cd "$dir/work" || exit 1
		git init -q . && git config user.email t@t && git config user.name t
		printf 'gen:\n\techo new > gen.txt\n' >Makefile
		printf 'gen.txt\n' >.gitignore
		git add -A . && git commit -qm init
		printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
		"$AIRLOCK" run --sandbox=none -- true >/dev/null
		"$AIRLOCK" run --sandbox=none -- echo "$name" >/dev/null
		[ $# -eq 0 ] || "$AIRLOCK" run --sandbox=none -- "$@" >/dev/null
		"$AIRLOCK" run --sandbox=none -- false >/dev/null && exit 1
		for label in pending approved; do
			"$AIRLOCK" permit propose - >/dev/null <<<"{\"candidate\":\"make gen && echo $label\",\"reason\":\"r\",\"expected_paths\":[\"gen.txt\"],\"rollback\":\"rm -f gen.txt\",\"confidence\":0.9}"
		done
		"$AIRLOCK" permit dryrun 1 >/dev/null
		"$AIRLOCK" permit dryrun 2 >/dev/null
		script -qec "'$AIRLOCK' permit approve 2" /dev/null <<<"$PASS" >/dev/null
		[ "$(jq -r .state "$AIRLOCK_STATE_DIR/permits/2.json")" = APPROVED ]
		"$AIRLOCK" ledger mirror set "$PUSHER" --host "$name"
		"$AIRLOCK" ledger push
	)
}

@test "fleet: three hosts on one mirror: each one's size, runs, open failure, pending permit and approval" {
	host alpha
	host beta
	host gamma
	al fleet --mirror "$READER" --json
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '[.hosts[].host] | join(",")' <<<"$doc")" = alpha,beta,gamma ]
	for h in alpha beta gamma; do
		n=$(wc -l <"$TEST_DIR/$h/state/ledger/log" | tr -d ' ')
		[ "$(jq -r ".hosts[] | select(.host == \"$h\") | .verified_size" <<<"$doc")" = "$n" ]
		[ "$(jq -r ".hosts[] | select(.host == \"$h\") | .cosigned" <<<"$doc")" = null ]
		# its runs, by receipt: true, echo NAME, false and the dry runs
		[ "$(jq -r "[.runs[] | select(.host == \"$h\" and .source == \"run\") | .argv | join(\" \")] | join(\",\")" <<<"$doc")" = "true,echo $h,false" ]
		[ "$(jq -r "[.runs[] | select(.host == \"$h\" and .argv == [\"false\"])][0] | \"\(.exit) \(.ok)\"" <<<"$doc")" = "1 false" ]
		# one open failure: the false
		[ "$(jq -c "[.open_failures[] | select(.host == \"$h\") | {receipt, exit, argv}]" <<<"$doc")" = '[{"receipt":3,"exit":1,"argv":["false"]}]' ]
		# both permits pending: one awaiting approval, one approved not yet run
		[ "$(jq -r "[.pending_permits[] | select(.host == \"$h\") | \"\(.id):\(.state):\(.risk)\"] | join(\",\")" <<<"$doc")" = "1:DRY_RUN_OK:3,2:APPROVED:3" ]
		# who approved which, and when
		[ "$(jq -r "[.approvals[] | select(.host == \"$h\") | .permit] | join(\",\")" <<<"$doc")" = 2 ]
		key=$(jq -r .public_key "$TEST_DIR/$h/state/approver.json")
		[ "$(jq -r ".approvals[] | select(.host == \"$h\") | .public_key" <<<"$doc")" = "$key" ]
		[ "$(jq -r ".approvals[] | select(.host == \"$h\") | .at" <<<"$doc")" != null ]
	done
	[ "$(jq -r .unreadable <<<"$doc")" = 0 ]
	# The newest runs across hosts: gamma's, pushed last, ordered by time.
	al fleet --mirror "$READER" --json --runs 3
	[ "$(jq -r '[.runs[].host] | unique | join(",")' <<<"$output")" = gamma ]
	[ "$(jq -r '[.runs[].time] | . == sort' <<<"$output")" = true ]
	# The table for humans, and one host alone.
	al fleet --mirror "$READER"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hosts (3)"* ]]
	[[ "$output" == *"open failures (3)"* ]]
	[[ "$output" == *"pending permits (6)"* ]]
	[[ "$output" == *"approvals (3)"* ]]
	[[ "$output" == *"cosigned: none"* ]]
	al fleet --mirror "$READER" --host beta --json
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.hosts[].host, .runs[].host, .open_failures[].host, .pending_permits[].host] | unique | join(",")' <<<"$output")" = beta ]

	# A permit applied and a failure closed on one host, pushed: gone from
	# the lists, the approval kept.
	(
		export AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state"
		cd "$TEST_DIR/alpha/work" || exit 1
		"$AIRLOCK" permit exec 2 >/dev/null
		"$AIRLOCK" ack 3 --reason "known flaky" >/dev/null
		"$AIRLOCK" ledger push
	)
	al fleet --mirror "$READER" --json --host alpha
	[ "$(jq -r '[.pending_permits[].id] | join(",")' <<<"$output")" = 1 ]
	[ "$(jq -r '.open_failures | length' <<<"$output")" = 0 ]
	[ "$(jq -r '[.approvals[].permit] | join(",")' <<<"$output")" = 2 ]
}

@test "fleet: --since and --runs cut the runs; the configured mirror is the default" {
	host alpha
	al fleet --mirror "$READER" --json --runs 2
	[ "$(jq -r '.runs | length' <<<"$output")" = 2 ]
	al fleet --mirror "$READER" --json --since 2999-01-01
	[ "$(jq -r '.runs | length' <<<"$output")" = 0 ]
	al fleet --mirror "$READER" --json --since 1d
	[ "$(jq -r '.runs | length' <<<"$output")" -ge 3 ]
	al fleet --mirror "$READER" --since yesterday
	[ "$status" -eq 125 ]
	# The configured mirror is the pusher's, which may not read: refused.
	al fleet --state-dir "$TEST_DIR/alpha/state"
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"permission denied"* ]]
	# No mirror configured, none named.
	al fleet --state-dir "$TEST_DIR/nothing"
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"pass --mirror"* ]]
}

@test "fleet: the reader role only reads" {
	host alpha
	run q "INSERT INTO airlock.logs (origin, host, vkey, pusher) VALUES ('x', 'x', 'x', 'x')" airlock_reader
	[ "$status" -ne 0 ]
	run q "SELECT airlock.push('x', 'x', 0, 'x', ''::bytea, '')" airlock_reader
	[ "$status" -ne 0 ]
	[[ "$output" == *"permission denied"* ]]
	[ "$(q "SELECT count(*) > 0 FROM airlock.entries" airlock_reader)" = t ]
}

@test "fleet: a terminal escape an agent put in argv is shown escaped" {
	host alpha
	host evil "echo" $'\e]0;pwned\a\e[2Jcleared'
	al fleet --mirror "$READER"
	[ "$status" -eq 0 ]
	[[ "$output" == *"echo cleared"* ]]
	[[ "$output" != *$'\e'* ]]
	[[ "$output" != *$'\a'* ]]
	al fleet --mirror "$READER" --json
	[ "$status" -eq 0 ]
	[[ "$output" != *$'\e'* ]]
	[ "$(jq -r '.runs[] | select(.host == "evil" and .argv[0] == "echo" and .argv[1] != "evil") | .argv[1]' <<<"$output")" = $'\e]0;pwned\a\e[2Jcleared' ]
}

# Witness $1 (its own state directory, port picked by the kernel) that
# accepts the logs of the hosts named after it; its vkey in $1.pub, its
# URL in $1.url.
witness() { # name host...
	local w=$1 dir="$TEST_DIR/$1" h
	shift
	"$AIRLOCK" witness init --state-dir "$dir" >/dev/null
	"$AIRLOCK" witness key --state-dir "$dir" >"$TEST_DIR/$w.pub"
	for h in "$@"; do
		local vkey
		vkey=$("$AIRLOCK" ledger key --state-dir "$TEST_DIR/$h/state")
		"$AIRLOCK" witness add-log "${vkey%%+*}" "$vkey" --state-dir "$dir"
	done
	"$AIRLOCK" witness serve --state-dir "$dir" --listen 127.0.0.1:0 \
		>"$TEST_DIR/$w.out" 2>&1 3>&- &
	echo $! >"$TEST_DIR/$w.pid"
	for _ in $(seq 100); do
		grep -q "listening on" "$TEST_DIR/$w.out" && break
		sleep 0.05
	done
	local port
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TEST_DIR/$w.out")
	[ -n "$port" ] || { cat "$TEST_DIR/$w.out" >&2; return 1; }
	echo "http://127.0.0.1:$port" >"$TEST_DIR/$w.url"
}

# Host $1 sends its checkpoint to witness $2 (and its cosignature on to
# the mirror) with `ledger push`.
cosign_by() { # host witness
	"$AIRLOCK" ledger witness add "$2" "$(cat "$TEST_DIR/$2.url")" "$(cat "$TEST_DIR/$2.pub")" \
		--state-dir "$TEST_DIR/$1/state"
	"$AIRLOCK" ledger push --state-dir "$TEST_DIR/$1/state"
}

@test "fleet attack: a permit's command altered in the mirror by the database's superuser is shown FORGED, never as the host's" {
	host alpha
	host beta
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	seq=$(q "SELECT max(seq) FROM airlock.entries WHERE origin = '$origin' AND kind = 'permit-transition' AND id = '1'")
	forge_line alpha "$seq" "echo pending" "echo harmless"
	al fleet --mirror "$READER" --json
	[ "$status" -eq 0 ]
	doc=$output
	# The altered command is listed, marked forged.
	[ "$(jq -r '.pending_permits[] | select(.host == "alpha" and .id == 1) | "\(.argv[-1]) \(.line)"' <<<"$doc")" = "make gen && echo harmless forged" ]
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | "\(.log.verified) \(.log.forged) \(.log.key)"' <<<"$doc")" = "true 1 the mirror's" ]
	# Every other line of both hosts verifies against its host's checkpoint.
	[ "$(jq -r '[.runs[], .open_failures[], .pending_permits[], .approvals[]] | map(select(.line != "verified")) | length' <<<"$doc")" = 1 ]
	[ "$(jq -r '[.runs[], .pending_permits[]] | map(select(.host == "beta" and .line == "verified")) | length' <<<"$doc")" = 7 ]
	al fleet --mirror "$READER"
	[ "$status" -eq 0 ]
	[[ "$output" == *"FORGED (not the host's signed line):  alpha  permit 1  DRY_RUN_OK"*"echo harmless"* ]]
	[[ "$output" == *"1 FORGED lines"* ]]
	[[ "$output" == *"log: verified to size"*"the mirror's key (not pinned here: --keys)"* ]]
	# The leaf column made to match the forged line too: the tree is no
	# longer the one alpha signed, and nothing of alpha's is believed.
	q "SET session_replication_role = replica; UPDATE airlock.entries SET leaf = sha256('\\x00'::bytea || convert_to(line, 'UTF8')) WHERE origin = '$origin' AND seq = $seq" >/dev/null
	al fleet --mirror "$READER" --json
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | "\(.log.verified) \(.log.failure)"' <<<"$doc")" = "false the mirror's leaf hashes do not make the root its checkpoint signs" ]
	[ "$(jq -r '[.runs[], .open_failures[], .pending_permits[], .approvals[]] | map(select(.host == "alpha") | .line) | unique | join(",")' <<<"$doc")" = unverified ]
	[ "$(jq -r '[.runs[], .open_failures[], .pending_permits[], .approvals[]] | map(select(.host == "beta") | .line) | unique | join(",")' <<<"$doc")" = verified ]
	al fleet --mirror "$READER"
	[[ "$output" == *"log: NOT verified (the mirror's key): the mirror's leaf hashes do not make the root"* ]]
	[[ "$output" == *"(unverified)  alpha  permit 1"* ]]
}

@test "fleet: a line the mirror holds beyond the host's signed checkpoint is shown as not covered" {
	host alpha
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	size=$(q "SELECT size FROM airlock.log_heads WHERE host = 'alpha'")
	line=$(q "SELECT line FROM airlock.entries WHERE origin = '$origin' AND kind = 'receipt' AND id = '2'")
	new=$(forged_text "$line" "alpha" "omega")
	# Written past airlock.push() at the next place, its leaf its own:
	# no checkpoint of alpha's covers it.
	q "INSERT INTO airlock.entries (origin, seq, leaf, kind, id, path, line) VALUES ('$origin', $size, sha256('\\x00'::bytea || convert_to(\$l\$$new\$l\$, 'UTF8')), 'receipt', '2', 'x', \$l\$$new\$l\$)" >/dev/null
	al fleet --mirror "$READER" --json --runs 0
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '.runs[] | select(.argv == ["echo", "omega"]) | .line' <<<"$doc")" = "not covered" ]
	[ "$(jq -r '[.runs[] | select(.line == "verified")] | length' <<<"$doc")" = "$(($(jq -r '.runs | length' <<<"$doc") - 1))" ]
	[ "$(jq -r '.hosts[0] | "\(.log.verified) \(.log.signed_size)"' <<<"$doc")" = "true $size" ]
	al fleet --mirror "$READER" --runs 0
	[[ "$output" == *"(not covered)  alpha  #2"*"echo omega"* ]]
}

@test "fleet: a checkpoint the database's superuser replaced under another key is refused; --keys pins the hosts' keys" {
	risky_host alpha
	host beta
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	size=$(q "SELECT size FROM airlock.log_heads WHERE host = 'alpha'")
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger key >"$TEST_DIR/alpha.keys"
	AIRLOCK_STATE_DIR="$TEST_DIR/beta/state" "$AIRLOCK" ledger key >"$TEST_DIR/beta.keys"

	# beta's checkpoint in place of alpha's: not signed by alpha's key.
	saved=$(q "SELECT checkpoint FROM airlock.checkpoints WHERE origin = '$origin' AND size = $size")
	q "SET session_replication_role = replica; UPDATE airlock.checkpoints SET checkpoint = (SELECT checkpoint FROM airlock.log_heads WHERE host = 'beta') WHERE origin = '$origin' AND size = $size" >/dev/null
	al fleet --mirror "$READER" --json --host alpha
	[ "$status" -eq 0 ]
	[[ "$(jq -r '.hosts[0].log | "\(.verified) \(.failure)"' <<<"$output")" == "false its latest checkpoint in the mirror is not signed by the mirror's key $origin"* ]]
	[ "$(jq -r '[.runs[], .pending_permits[]] | map(.line) | unique | join(",")' <<<"$output")" = unverified ]
	fleet_approve alpha 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"permit 1 of host alpha in the mirror is unverified: its latest checkpoint in the mirror is not signed by pinned key"* ]]
	q "SET session_replication_role = replica; UPDATE airlock.checkpoints SET checkpoint = \$c\$$saved\$c\$ WHERE origin = '$origin' AND size = $size" >/dev/null

	# The whole log replaced: a key of the superuser's own, named as
	# alpha's log (its id made to match), the mirror's pin of alpha's key
	# replaced with it, the permit's command altered and the tree signed.
	m="$TEST_DIR/mallory/state"
	mkdir -p "$m"
	AIRLOCK_STATE_DIR="$m" "$AIRLOCK" ledger key >"$TEST_DIR/mallory.keys"
	python3 - "$m/ledger" "$origin" <<-'PY'
		import base64, hashlib, sys
		d, name = sys.argv[1], sys.argv[2]
		seed = open(d + "/key").read().strip().split("+", 4)[4]
		pub = base64.b64decode(open(d + "/key.pub").read().strip().split("+", 2)[2])
		kid = hashlib.sha256(name.encode() + b"\n" + pub).digest()[:4].hex()
		open(d + "/key", "w").write("PRIVATE+KEY+%s+%s+%s\n" % (name, kid, seed))
		open(d + "/key.pub", "w").write("%s+%s+%s\n" % (name, kid, base64.b64encode(pub).decode()))
	PY
	seq=$(q "SELECT max(seq) FROM airlock.entries WHERE origin = '$origin' AND kind = 'permit-transition' AND id = '1'")
	line=$(q "SELECT line FROM airlock.entries WHERE origin = '$origin' AND seq = $seq")
	new=$(forged_text "$line" "out1.txt" "../../etc/cron.d/x")
	q "SELECT line FROM airlock.entries WHERE origin = '$origin' ORDER BY seq" |
		python3 -c 'import sys; ls = sys.stdin.read().split("\n"); ls[int(sys.argv[1])] = sys.argv[2]; sys.stdout.write("\n".join(ls))' "$seq" "$new" >"$m/ledger/log"
	rm -f "$m/ledger/checkpoint" "$m/ledger/index"
	rm -rf "$m/ledger/checkpoints"
	AIRLOCK_STATE_DIR="$m" "$AIRLOCK" ledger checkpoint >/dev/null
	forged=$(cat "$m/ledger/checkpoint" && echo .)
	forged=${forged%.}
	[[ "$forged" == "$origin"$'\n'"$size"$'\n'* ]]
	q "SET session_replication_role = replica;
	   UPDATE airlock.logs SET vkey = '$(cat "$m/ledger/key.pub")' WHERE origin = '$origin';
	   UPDATE airlock.entries SET line = \$l\$$new\$l\$, leaf = sha256('\\x00'::bytea || convert_to(\$l\$$new\$l\$, 'UTF8')) WHERE origin = '$origin' AND seq = $seq;
	   UPDATE airlock.checkpoints SET checkpoint = \$c\$$forged\$c\$ WHERE origin = '$origin' AND size = $size" >/dev/null
	# With the mirror's pin alone, the console cannot tell: what it says
	# is whose key it took (docs/fleet.md, "What a superuser can forge").
	al fleet --mirror "$READER" --json --host alpha
	[ "$(jq -r '.hosts[0].log | "\(.verified) \(.key)"' <<<"$output")" = "true the mirror's" ]
	[[ "$(jq -r '.pending_permits[] | select(.id == 1) | .argv[-1]' <<<"$output")" == *"../../etc/cron.d/x"* ]]
	# Pinned here (--keys), alpha's own key: refused, nothing believed.
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/alpha.keys"
	[ "$status" -eq 0 ]
	doc=$output
	[[ "$(jq -r '.hosts[] | select(.host == "alpha") | .log | "\(.verified) \(.key) \(.failure)"' <<<"$doc")" == "false pinned its latest checkpoint in the mirror is not signed by pinned key $origin"* ]]
	[ "$(jq -r '[.runs[], .pending_permits[]] | map(select(.host == "alpha") | .line) | unique | join(",")' <<<"$doc")" = unverified ]
	# beta is not named by that file: not pinned, nothing of it verifies.
	[ "$(jq -r '.hosts[] | select(.host == "beta") | .log | "\(.verified) \(.key)"' <<<"$doc")" = "false not pinned" ]
	[ "$(jq -r '[.runs[], .pending_permits[]] | map(select(.host == "beta") | .line) | unique | join(",")' <<<"$doc")" = unverified ]
	cat "$TEST_DIR/alpha.keys" "$TEST_DIR/beta.keys" >"$TEST_DIR/both.keys"
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/both.keys"
	[ "$(jq -r '.hosts[] | select(.host == "beta") | .log | "\(.verified) \(.key)"' <<<"$output")" = "true pinned" ]
	[ "$(jq -r '[.runs[], .pending_permits[]] | map(select(.host == "beta") | .line) | unique | join(",")' <<<"$output")" = verified ]
	al fleet --mirror "$READER" --keys "$TEST_DIR/both.keys"
	[[ "$output" == *"log: NOT verified (pinned key): its latest checkpoint in the mirror is not signed by pinned key"* ]]
	# The approver's console pins alpha's key: it refuses to sign.
	fleet_approve alpha 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"permit 1 of host alpha in the mirror is unverified: its latest checkpoint in the mirror is not signed by pinned key"* ]]
	[[ "$output" != *"cron.d"* ]]
	# A console without alpha's key pinned does not sign either.
	run script -qec "'$AIRLOCK' fleet approve alpha 1 --mirror '$APPROVER' --approver '$TEST_DIR/alpha/state/approver.json' --keys '$TEST_DIR/mallory.keys'" /dev/null <<<"$PASS"
	[ "$status" -eq 77 ]
	[[ "$output" == *"host alpha: its log $origin is not among the console's --keys"* ]]
	run script -qec "'$AIRLOCK' fleet approve alpha 1 --mirror '$APPROVER' --approver '$TEST_DIR/alpha/state/approver.json'" /dev/null <<<"$PASS"
	[ "$status" -eq 77 ]
	[[ "$output" == *"pass --keys FILE"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 0 ]
	# A keys file that is not one is refused.
	echo "not a key" >"$TEST_DIR/bad.keys"
	al fleet --mirror "$READER" --keys "$TEST_DIR/bad.keys"
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"bad.keys: line 1"* ]]
}

@test "fleet: each host's last cosigned checkpoint and its witnesses, unverified or checked against a policy" {
	host alpha
	host beta
	host gamma
	witness w1 alpha beta
	witness w2 alpha
	cosign_by alpha w1
	cosign_by alpha w2
	cosign_by beta w1
	size_a=$(wc -l <"$TEST_DIR/alpha/state/ledger/log" | tr -d ' ')
	# the mirror holds each line once, for the checkpoint it covers
	[ "$(q "SELECT count(*), count(DISTINCT line), min(size), max(size) FROM airlock.cosignatures WHERE origin = (SELECT origin FROM airlock.logs WHERE host = 'alpha')")" = "2|2|$size_a|$size_a" ]
	w1name=$(cut -d+ -f1 "$TEST_DIR/w1.pub")
	w2name=$(cut -d+ -f1 "$TEST_DIR/w2.pub")
	al fleet --mirror "$READER" --json
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | .cosigned | "\(.size) \([.witnesses[] | "\(.witness)=\(.status)"] | sort | join(","))"' <<<"$doc")" = "$size_a $(printf '%s\n' "$w1name=unverified" "$w2name=unverified" | sort | paste -sd,)" ]
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | .cosigned.checkpoint' <<<"$doc")" = "$(cat "$TEST_DIR/alpha/state/ledger/checkpoint")" ]
	[ "$(jq -r '.hosts[] | select(.host == "beta") | [.cosigned.witnesses[].witness] | join(",")' <<<"$doc")" = "$w1name" ]
	[ "$(jq -r '.hosts[] | select(.host == "gamma") | .cosigned' <<<"$doc")" = null ]
	[ "$(jq -r '[.hosts[].quorum_met] | unique | join(",")' <<<"$doc")" = "" ]
	al fleet --mirror "$READER"
	[[ "$output" == *"cosigned: size $size_a by"*"$w1name (unverified)"* ]]
	[[ "$output" == *"cosigned: none"* ]]

	# A policy: both witnesses, a quorum of both. The log line is alpha's
	# (its key must sign alpha's checkpoint); the others' keys are the
	# mirror's pins.
	{
		echo "log $("$AIRLOCK" ledger key --state-dir "$TEST_DIR/alpha/state")"
		echo "witness w1 $(cat "$TEST_DIR/w1.pub")"
		echo "witness w2 $(cat "$TEST_DIR/w2.pub")"
		echo "group both all w1 w2"
		echo "quorum both"
	} >"$TEST_DIR/policy"
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy"
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | [.cosigned.witnesses[] | "\(.policy_name)=\(.status)"] | sort | join(",")' <<<"$doc")" = "w1=verified,w2=verified" ]
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | .quorum_met' <<<"$doc")" = true ]
	[ "$(jq -r '.hosts[] | select(.host == "beta") | "\(.quorum_met) \(.cosigned.witnesses[0].status)"' <<<"$doc")" = "false verified" ]
	[[ "$(jq -r '.hosts[] | select(.host == "beta") | .quorum_failure' <<<"$doc")" == "no quorum: 1 of the policy's 2 witnesses"* ]]
	[ "$(jq -r '.hosts[] | select(.host == "gamma") | .quorum_met' <<<"$doc")" = false ]
	al fleet --mirror "$READER" --policy "$TEST_DIR/policy"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$w1name (verified as w1)"*"quorum met"* ]]
	[[ "$output" == *"quorum NOT met: no quorum"* ]]
	# The hosts' keys pinned here (--keys): the same quorums, under them.
	for h in alpha beta gamma; do "$AIRLOCK" ledger key --state-dir "$TEST_DIR/$h/state"; done >"$TEST_DIR/all.keys"
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy" --keys "$TEST_DIR/all.keys"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.hosts[] | "\(.host):\(.quorum_met):\(.log.key):\(.log.verified)"] | join(",")' <<<"$output")" = "alpha:true:pinned:true,beta:false:pinned:true,gamma:false:pinned:true" ]

	# A policy without w2: its cosignature is by a key not in the policy.
	{
		grep '^log ' "$TEST_DIR/policy"
		echo "witness w1 $(cat "$TEST_DIR/w1.pub")"
		echo "quorum w1"
	} >"$TEST_DIR/policy1"
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy1"
	[ "$status" -eq 0 ]
	[ "$(jq -r ".hosts[] | select(.host == \"alpha\") | .cosigned.witnesses[] | select(.witness == \"$w2name\") | .status" <<<"$output")" = "not in policy" ]
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | .quorum_met' <<<"$output")" = true ]

	# A forged line in w1's name, stored by the database's owner (the
	# mirror cannot check Ed25519): the fleet says so, and the quorum fails.
	line=$(q "SELECT line FROM airlock.cosignatures WHERE witness = '$w1name' AND origin = (SELECT origin FROM airlock.logs WHERE host = 'beta')")
	sig=${line##* }
	forged="— $w1name ${sig:0:40}$( [ "${sig:40:1}" = A ] && echo B || echo A )${sig:41}"
	q "INSERT INTO airlock.cosignatures (origin, size, witness, line) SELECT origin, size, witness, \$\$$forged\$\$ FROM airlock.cosignatures WHERE line = \$\$$line\$\$" >/dev/null
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.hosts[] | select(.host == "beta") | [.cosigned.witnesses[].status] | sort | join(",")' <<<"$output")" = "invalid,verified" ]
	[[ "$(jq -r '.hosts[] | select(.host == "beta") | .quorum_failure' <<<"$output")" == *"does not verify"* ]]
	al fleet --mirror "$READER" --json
	[ "$(jq -r '.hosts[] | select(.host == "beta") | [.cosigned.witnesses[].status] | unique | join(",")' <<<"$output")" = unverified ]

	# More entries, cosigned again: the newest cosigned checkpoint is shown.
	(
		export AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state"
		cd "$TEST_DIR/alpha/work" || exit 1
		"$AIRLOCK" run --sandbox=none -- true >/dev/null
		"$AIRLOCK" ledger push
	)
	size_a2=$(wc -l <"$TEST_DIR/alpha/state/ledger/log" | tr -d ' ')
	[ "$size_a2" -gt "$size_a" ]
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy"
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | "\(.cosigned.size) \(.quorum_met)"' <<<"$output")" = "$size_a2 true" ]

	# w2 down: the push fails (and says so), w1's cosignature of the new
	# checkpoint still reaches the mirror.
	kill -9 "$(cat "$TEST_DIR/w2.pid")"
	rm "$TEST_DIR/w2.pid"
	(
		export AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state"
		cd "$TEST_DIR/alpha/work" || exit 1
		"$AIRLOCK" run --sandbox=none -- true >/dev/null
		! "$AIRLOCK" ledger push 2>/dev/null
	)
	size_a3=$(wc -l <"$TEST_DIR/alpha/state/ledger/log" | tr -d ' ')
	al fleet --mirror "$READER" --json --policy "$TEST_DIR/policy"
	[ "$(jq -r '.hosts[] | select(.host == "alpha") | "\(.cosigned.size) \(.quorum_met) \([.cosigned.witnesses[].policy_name] | join(","))"' <<<"$output")" = "$size_a3 false w1" ]

	# A bad policy file is refused.
	echo "quorum none" >"$TEST_DIR/bad"
	al fleet --mirror "$READER" --policy "$TEST_DIR/bad"
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"no \`log\` line"* ]]
}

# Approving from one place (docs/fleet.md): a host named $1 with its own
# approver and $2 (default 1) permits of risk 4 (each rewrites a tracked
# file of its own), dry-run and awaiting the approver, pushed to the mirror.
risky_host() { # name [count]
	local name=$1 n=${2:-1} dir="$TEST_DIR/$1" i
	mkdir -p "$dir/work"
	(
		export AIRLOCK_STATE_DIR="$dir/state"
		cd "$dir/work" || exit 1
		git init -q . && git config user.email t@t && git config user.name t
		for i in $(seq "$n"); do printf 'old\n' >"out$i.txt"; done
		printf 'new\n' >input.txt
		printf 'input.txt\n' >.gitignore
		git add -A . && git commit -qm init
		printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
		for i in $(seq "$n"); do
			"$AIRLOCK" permit propose - >/dev/null <<<"{\"candidate\":\"cat input.txt > out$i.txt\",\"reason\":\"r\",\"expected_paths\":[\"out$i.txt\"],\"rollback\":\"git checkout out$i.txt\",\"confidence\":0.9}"
		done
		"$AIRLOCK" ledger mirror set "$PUSHER" --host "$name"
		# the state as proposed, for a test that proposes again
		cp -a "$AIRLOCK_STATE_DIR" "$dir/state.proposed"
		for i in $(seq "$n"); do "$AIRLOCK" permit dryrun "$i" >/dev/null; done
		[ "$(jq -r .risk "$AIRLOCK_STATE_DIR/permits/1.json")" = 4 ]
		"$AIRLOCK" ledger push
	)
	APPROVER="host=$PGDIR dbname=$DB user=airlock_approver"
}

# `airlock fleet approve HOST ID` on a terminal, with the passphrase $3
# (default $PASS) and the approver document $4 (default the host's own).
# The console pins the host's log key: KEYS names it (`ledger key` on it).
fleet_approve() { # host id [passphrase] [approver.json]
	AIRLOCK_STATE_DIR="$TEST_DIR/$1/state" "$AIRLOCK" ledger key >"$TEST_DIR/$1.keys"
	run script -qec "'$AIRLOCK' fleet approve $1 $2 --mirror '$APPROVER' --approver '${4:-$TEST_DIR/$1/state/approver.json}' --keys '$TEST_DIR/$1.keys'" /dev/null <<<"${3:-$PASS}"
}

# On host $1: `airlock permit exec $2`, its status and stderr.
host_exec() { # host id
	cd "$TEST_DIR/$1/work" || return 1
	AIRLOCK_STATE_DIR="$TEST_DIR/$1/state" run --separate-stderr "$AIRLOCK" permit exec "$2"
	cd - >/dev/null || return 1
}

# The number of approvals the host's ledger holds: APPROVED transitions.
approved_entries() { # host
	jq -r 'select(.kind == "permit-transition" and .record != null) | .record | fromjson | .state' \
		"$TEST_DIR/$1/state/ledger/log" | grep -c '^APPROVED$' || true
}

@test "fleet approve: a permit of another host approved from one place; the host verifies it, commits it and execs" {
	risky_host alpha
	fleet_approve alpha 1
	[ "$status" -eq 0 ]
	# what is signed, before the passphrase: the command, risk, change set
	[[ "$output" == *"permit 1 of host alpha"* ]]
	[[ "$output" == *"risk       4"* ]]
	[[ "$output" == *"command    sh -c cat input.txt > out1.txt"* ]]
	[[ "$output" == *"change set sha256 $(jq -r .changeset_sha256 "$TEST_DIR/alpha/state/permits/1.json")"* ]]
	[[ "$output" == *"airlock.permit-approval/1"*"permit=1"* ]]
	[[ "$output" == *'"state":"APPROVAL_SENT"'* ]]
	[ "$(q "SELECT permit, approved_by FROM airlock.approvals")" = "1|airlock_approver" ]
	# Nothing is committed on the host until it fetches and verifies.
	[ "$(jq -r .state "$TEST_DIR/alpha/state/permits/1.json")" = DRY_RUN_OK ]
	host_exec alpha 1
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"approved through the mirror"* ]]
	[[ "$output" == *'"state":"APPLIED"'* ]]
	[ "$(cat "$TEST_DIR/alpha/work/out1.txt")" = new ]
	# The approval IS in the ledger, saying it came through the mirror.
	[ "$(approved_entries alpha)" = 1 ]
	[ "$(jq -r '.history[] | select(.event == "approve") | .via' "$TEST_DIR/alpha/state/permits/1.json")" = mirror ]
	[ "$(jq -r .approval.public_key "$TEST_DIR/alpha/state/permits/1.json")" = "$(jq -r .public_key "$TEST_DIR/alpha/state/approver.json")" ]
	# A wrong passphrase signs nothing and sends nothing.
	risky_host beta
	fleet_approve beta 1 "a guess"
	[ "$status" -eq 77 ]
	[[ "$output" == *"not the approver's passphrase"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 1 ]
	# Without a terminal: refused.
	run "$AIRLOCK" fleet approve beta 1 --mirror "$APPROVER" --approver "$TEST_DIR/beta/state/approver.json" --keys "$TEST_DIR/beta.keys" </dev/null
	[ "$status" -eq 77 ]
	[[ "$output" == *"from a terminal"* ]]
	# A permit the mirror does not hold.
	run "$AIRLOCK" fleet approve beta 9 --mirror "$APPROVER" --approver "$TEST_DIR/beta/state/approver.json" --keys "$TEST_DIR/beta.keys"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no permit 9 of host beta"* ]]
}

# Each attack: refused on the host with one line, and nothing committed
# (no APPROVED in its ledger, the permit as it was, its file untouched).
refused_on_host() { # host id reason
	host_exec "$1" "$2"
	[ "$status" -eq 77 ]
	[ "$(wc -l <<<"$stderr")" = 1 ]
	[[ "$stderr" == *"the mirror's approval is refused: $3"* ]]
	[ "$(approved_entries "$1")" = 0 ]
	[ "$(jq -r .state "$TEST_DIR/$1/state/permits/$2.json")" = DRY_RUN_OK ]
	[ "$(cat "$TEST_DIR/$1/work/out$2.txt")" = old ]
}

@test "fleet approve attack: an approval of the permit as it was, re-proposed with other changes since, is refused" {
	risky_host alpha
	fleet_approve alpha 1
	[ "$status" -eq 0 ]
	# The host's permit 1 proposed again, its dry run changing out1.txt
	# to something else: the approval covers the old change set.
	rm -rf "$TEST_DIR/alpha/state"
	mv "$TEST_DIR/alpha/state.proposed" "$TEST_DIR/alpha/state"
	printf 'other\n' >"$TEST_DIR/alpha/work/input.txt"
	(cd "$TEST_DIR/alpha/work" && AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" permit dryrun 1 >/dev/null)
	refused_on_host alpha 1 "the approval does not cover this permit as it is now"
}

@test "fleet approve attack: a signature by a key that is not the host's approver is refused, at the console and on the host" {
	risky_host alpha
	risky_host beta
	# beta's approver document (the same passphrase, another key): the
	# console checks it against the key alpha's ledger pins.
	fleet_approve alpha 1 "$PASS" "$TEST_DIR/beta/state/approver.json"
	[ "$status" -eq 77 ]
	[[ "$output" == *"this approver document is not the host's"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 0 ]
	# A console that does not check (a test build's hook): the host does.
	AIRLOCK_TEST_FLEET_ANY_APPROVER=1 fleet_approve alpha 1 "$PASS" "$TEST_DIR/beta/state/approver.json"
	[ "$status" -eq 0 ]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 1 ]
	refused_on_host alpha 1 "the approval's signature is not by this host's approver"
}

@test "fleet approve attack: the pusher role cannot insert an approval (permission denied)" {
	risky_host alpha
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	run q "INSERT INTO airlock.approvals (origin, permit, message, approval) VALUES ('$origin', 1, 'm', '{}')" airlock_pusher
	[ "$status" -ne 0 ]
	[[ "$output" == *"permission denied"* ]]
	run q "SELECT airlock.approve('alpha', 1, '{}')" airlock_pusher
	[ "$status" -ne 0 ]
	[[ "$output" == *"permission denied"* ]]
	run q "SELECT airlock.approve('alpha', 1, '{}')" airlock_reader
	[ "$status" -ne 0 ]
	[[ "$output" == *"permission denied"* ]]
	# Nor read another host's approvals: airlock.approvals_for() is the
	# log's own pusher's.
	run q "SELECT * FROM airlock.approvals" airlock_pusher
	[[ "$output" == *"permission denied"* ]]
	run q "SELECT * FROM airlock.approvals_for('alpha', 1)" airlock_approver
	[[ "$output" == *"permission denied"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 0 ]
	# The table is append-only for its owner too.
	fleet_approve alpha 1
	run q "UPDATE airlock.approvals SET permit = 2"
	[[ "$output" == *"append-only"* ]]
	run q "DELETE FROM airlock.approvals"
	[[ "$output" == *"append-only"* ]]
}

@test "fleet approve attack: an approval replayed for another permit id is refused, by the mirror and on the host" {
	risky_host alpha 2
	fleet_approve alpha 1
	[ "$status" -eq 0 ]
	approval=$(q "SELECT approval FROM airlock.approvals WHERE permit = 1")
	# The approver role's function checks the message names the permit.
	run q "SELECT airlock.approve('alpha', 2, \$a\$$approval\$a\$)" airlock_approver
	[ "$status" -ne 0 ]
	[[ "$output" == *"not an approval of permit 2"* ]]
	# Written past the function by the database's superuser: the host
	# refuses it.
	q "INSERT INTO airlock.approvals (origin, permit, message, approval) SELECT origin, 2, message, approval FROM airlock.approvals WHERE permit = 1" >/dev/null
	refused_on_host alpha 2 "the approval does not cover this permit as it is now"
	# The approval of permit 1 still is one.
	host_exec alpha 1
	[ "$status" -eq 0 ]
	[[ "$output" == *'"state":"APPLIED"'* ]]
}

@test "fleet approve attack: the mirror's record altered by the database's superuser is refused at the console" {
	risky_host alpha
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	seq=$(q "SELECT max(seq) FROM airlock.entries WHERE origin = '$origin' AND kind = 'permit-transition' AND id = '1'")
	digest=$(jq -r .changeset_sha256 "$TEST_DIR/alpha/state/permits/1.json")
	# Another change set digest in the record, the entry's sha256 made to
	# match: the line's leaf is no longer the one alpha signed.
	forge_line alpha "$seq" "$digest" "$(printf 'f%.0s' $(seq 64))"
	fleet_approve alpha 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"permit 1 of host alpha in the mirror is FORGED"* ]]
	[[ "$output" != *"change set sha256"* ]]
	[[ "$output" != *"passphrase"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 0 ]
	# The leaf column made to match too: the tree no longer makes the
	# signed root, and nothing of alpha's log is believed.
	q "SET session_replication_role = replica; UPDATE airlock.entries SET leaf = sha256('\\x00'::bytea || convert_to(line, 'UTF8')) WHERE origin = '$origin' AND seq = $seq" >/dev/null
	fleet_approve alpha 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"permit 1 of host alpha in the mirror is unverified: the mirror's leaf hashes do not make the root its checkpoint signs"* ]]
	[ "$(q "SELECT count(*) FROM airlock.approvals")" = 0 ]
	# (An approval of a permit other than the host's own is refused on
	# the host too: "re-proposed with other changes since", above.)
}

@test "fleet approve attack: alpha's approval copied to beta's log (one approver, the same workspace path and permit) is refused on beta" {
	# Two hosts, one approver document: beta's state directory begins as a
	# copy of alpha's right after the approver's enrolment, with a ledger
	# key of its own (another log origin). Both propose the same permit 1
	# in turn in the same workspace directory, with the same content.
	local work="$TEST_DIR/work" name
	mkdir -p "$work"
	(
		cd "$work" || exit 1
		git init -q . && git config user.email t@t && git config user.name t
		printf 'old\n' >out1.txt
		printf 'new\n' >input.txt
		printf 'input.txt\n' >.gitignore
		git add -A . && git commit -qm init
		export AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state"
		mkdir -p "$TEST_DIR/alpha" "$TEST_DIR/beta"
		printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
		cp -a "$TEST_DIR/alpha/state" "$TEST_DIR/beta/state"
		rm -f "$TEST_DIR/beta/state/ledger/key" "$TEST_DIR/beta/state/ledger/key.pub" "$TEST_DIR/beta/state/ledger/checkpoint"
		for name in alpha beta; do
			export AIRLOCK_STATE_DIR="$TEST_DIR/$name/state"
			"$AIRLOCK" permit propose - >/dev/null <<<'{"candidate":"cat input.txt > out1.txt","reason":"r","expected_paths":["out1.txt"],"rollback":"git checkout out1.txt","confidence":0.9}'
			"$AIRLOCK" ledger mirror set "$PUSHER" --host "$name"
			"$AIRLOCK" permit dryrun 1 >/dev/null
			"$AIRLOCK" ledger push
		done
	)
	APPROVER="host=$PGDIR dbname=$DB user=airlock_approver"
	# The premise: one approver, two logs, permits alike in what v1 covers.
	cmp "$TEST_DIR/alpha/state/approver.json" "$TEST_DIR/beta/state/approver.json"
	[ "$(q "SELECT count(DISTINCT origin) FROM airlock.logs")" = 2 ]
	for f in workspace risk changeset_sha256 dryrun; do
		[ "$(jq -r ".$f" "$TEST_DIR/alpha/state/permits/1.json")" = "$(jq -r ".$f" "$TEST_DIR/beta/state/permits/1.json")" ]
	done
	origin_a=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	origin_b=$(q "SELECT origin FROM airlock.logs WHERE host = 'beta'")
	# The console shows the origin it signs for, in the message.
	fleet_approve alpha 1
	[ "$status" -eq 0 ]
	[[ "$output" == *"origin=$origin_a"* ]]
	# The approver role's function refuses it for beta (another origin).
	approval=$(q "SELECT approval FROM airlock.approvals WHERE permit = 1")
	run q "SELECT airlock.approve('beta', 1, \$a\$$approval\$a\$)" airlock_approver
	[ "$status" -ne 0 ]
	[[ "$output" == *"not an approval of permit 1"* ]]
	# Copied to beta's origin by the database's superuser: beta refuses it.
	q "INSERT INTO airlock.approvals (origin, permit, message, approval) SELECT '$origin_b', permit, message, approval FROM airlock.approvals WHERE permit = 1" >/dev/null
	cd "$work" || return 1
	AIRLOCK_STATE_DIR="$TEST_DIR/beta/state" run --separate-stderr "$AIRLOCK" permit exec 1
	cd - >/dev/null || return 1
	[ "$status" -eq 77 ]
	[ "$(wc -l <<<"$stderr")" = 1 ]
	[[ "$stderr" == *"the mirror's approval is refused: the approval is for another host's log (origin $origin_a)"* ]]
	[ "$(approved_entries beta)" = 0 ]
	[ "$(jq -r .state "$TEST_DIR/beta/state/permits/1.json")" = DRY_RUN_OK ]
	[ "$(cat "$work/out1.txt")" = old ]
	# alpha's own approval still is one on alpha.
	cd "$work" || return 1
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" run --separate-stderr "$AIRLOCK" permit exec 1
	cd - >/dev/null || return 1
	[ "$status" -eq 0 ]
	[[ "$output" == *'"state":"APPLIED"'* ]]
	[ "$(cat "$work/out1.txt")" = new ]
	[ "$(jq -j .approval.message "$TEST_DIR/alpha/state/permits/1.json" | tail -n 1)" = "origin=$origin_a" ]
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger key >"$TEST_DIR/alpha.vkey"
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger verify --key "$TEST_DIR/alpha.vkey" >/dev/null
}

@test "fleet approve attack: a local approval (no origin line) relayed through the mirror is refused" {
	risky_host alpha
	# The approver signs permit 1 on a copy of alpha's state, locally: a
	# message without the origin line.
	cp -a "$TEST_DIR/alpha/state" "$TEST_DIR/alpha/state.copy"
	(cd "$TEST_DIR/alpha/work" && AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state.copy" script -qec "'$AIRLOCK' permit approve 1" /dev/null <<<"$PASS" >/dev/null)
	approval=$(jq -c .approval "$TEST_DIR/alpha/state.copy/permits/1.json")
	[[ "$approval" != *origin=* ]]
	run q "SELECT airlock.approve('alpha', 1, \$a\$$approval\$a\$)" airlock_approver
	[ "$status" -ne 0 ]
	q "INSERT INTO airlock.approvals (origin, permit, message, approval) SELECT origin, 1, \$a\$m\$a\$, \$a\$$approval\$a\$ FROM airlock.logs WHERE host = 'alpha'" >/dev/null
	refused_on_host alpha 1 "the approval names no log origin"
}

@test "fleet attack: a second log labelled with a verified host's name is judged by its own tree, never the other's" {
	host alpha
	host beta
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger key >"$TEST_DIR/both.keys"
	AIRLOCK_STATE_DIR="$TEST_DIR/beta/state" "$AIRLOCK" ledger key >>"$TEST_DIR/both.keys"
	# The log read last (the greater origin) labelled with the other's
	# host name by the superuser, its pending permit altered, the leaf
	# column too: its tree no longer makes its root.
	late=$(q "SELECT max(origin) FROM airlock.logs")
	name=$(q "SELECT host FROM airlock.logs WHERE origin <> '$late'")
	seq=$(q "SELECT max(seq) FROM airlock.entries WHERE origin = '$late' AND kind = 'permit-transition' AND id = '1'")
	line=$(q "SELECT line FROM airlock.entries WHERE origin = '$late' AND seq = $seq")
	new=$(forged_text "$line" "echo pending" "echo harmless")
	q "ALTER TABLE airlock.logs DROP CONSTRAINT logs_host_key;
	   SET session_replication_role = replica;
	   UPDATE airlock.logs SET host = '$name' WHERE origin = '$late';
	   UPDATE airlock.entries SET line = \$l\$$new\$l\$, leaf = sha256('\\x00'::bytea || convert_to(\$l\$$new\$l\$, 'UTF8')) WHERE origin = '$late' AND seq = $seq" >/dev/null
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/both.keys"
	[ "$status" -eq 0 ]
	doc=$output
	[ "$(jq -r '.hosts | map("\(.host) \(.log.verified)") | sort | join(",")' <<<"$doc")" = "$name false,$name true" ]
	# The altered permit is never shown as verified, nor anything of the
	# relabelled log.
	[ "$(jq -r '[.pending_permits[] | select(.argv[-1] == "make gen && echo harmless") | .line] | join(",")' <<<"$doc")" = unverified ]
	by_line='[.runs[], .open_failures[], .pending_permits[], .approvals[]] | group_by(.line)'
	[ "$(jq -r "$by_line | map(.[0].line) | join(\",\")" <<<"$doc")" = "unverified,verified" ]
	[ "$(jq -r "$by_line | map(length) | unique | length" <<<"$doc")" = 1 ]
}

@test "fleet attack: a gate-close beyond the host's signed checkpoint does not hide an open failure" {
	host alpha
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger key >"$TEST_DIR/alpha.keys"
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	size=$(q "SELECT size FROM airlock.log_heads WHERE host = 'alpha'")
	id=$(q "SELECT id FROM airlock.entries WHERE origin = '$origin' AND kind = 'gate-open'")
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/alpha.keys"
	[ "$(jq -r '.open_failures | map("\(.receipt) \(.line)") | join(",")' <<<"$output")" = "$id verified" ]
	# Written past airlock.push(), its leaf its own: no checkpoint of
	# alpha's covers it, and the tree below the signed size verifies.
	close="{\"v\":1,\"seq\":$size,\"kind\":\"gate-close\",\"id\":\"$id\",\"path\":\"gate/closed/$id.json\",\"sha256\":\"$(printf x | sha256sum | cut -c1-64)\",\"time\":\"2099-01-01T00:00:00.000Z\"}"
	q "INSERT INTO airlock.entries (origin, seq, leaf, kind, id, path, line) VALUES ('$origin', $size, sha256('\\x00'::bytea || convert_to(\$l\$$close\$l\$, 'UTF8')), 'gate-close', '$id', 'x', \$l\$$close\$l\$)" >/dev/null
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/alpha.keys"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.hosts[0].log.verified' <<<"$output")" = true ]
	[ "$(jq -r '.open_failures | map("\(.receipt) \(.line)") | join(",")' <<<"$output")" = "$id verified" ]
}

@test "fleet attack: a permit transition beyond the host's signed checkpoint does not take a verified pending permit off the list" {
	host alpha
	AIRLOCK_STATE_DIR="$TEST_DIR/alpha/state" "$AIRLOCK" ledger key >"$TEST_DIR/alpha.keys"
	origin=$(q "SELECT origin FROM airlock.logs WHERE host = 'alpha'")
	size=$(q "SELECT size FROM airlock.log_heads WHERE host = 'alpha'")
	seq=$(q "SELECT max(seq) FROM airlock.entries WHERE origin = '$origin' AND kind = 'permit-transition' AND id = '1'")
	line=$(q "SELECT line FROM airlock.entries WHERE origin = '$origin' AND seq = $seq")
	new=$(forged_text "$line" "DRY_RUN_OK" "APPLIED")
	new=${new/\"seq\":$seq,/\"seq\":$size,}
	# Written past airlock.push() at the next place, its leaf its own.
	q "INSERT INTO airlock.entries (origin, seq, leaf, kind, id, path, line) VALUES ('$origin', $size, sha256('\\x00'::bytea || convert_to(\$l\$$new\$l\$, 'UTF8')), 'permit-transition', '1', 'x', \$l\$$new\$l\$)" >/dev/null
	al fleet --mirror "$READER" --json --keys "$TEST_DIR/alpha.keys"
	[ "$status" -eq 0 ]
	[ "$(jq -r '"\(.hosts[0].log.verified) \(.unreadable)"' <<<"$output")" = "true 0" ]
	[ "$(jq -r '.pending_permits[] | select(.id == 1) | "\(.state) \(.line)"' <<<"$output")" = "DRY_RUN_OK verified" ]
}

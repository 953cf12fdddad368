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
	rm -rf "$TEST_DIR"
}

q() {
	psql -X -q -A -t -v ON_ERROR_STOP=1 "host=$PGDIR dbname=$DB user=${2:-postgres}" -c "$1"
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

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
	[[ "$output" == *"cosigned: not recorded"* ]]
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

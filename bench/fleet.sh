#!/bin/sh
# `airlock fleet` over a mirror of HOSTS hosts of LINES lines each (receipts
# committed by `ledger_bench receipts` from a real run's, each host pushed
# to one private cluster: tests/helpers/pg.sh), as the reader role with
# `--runs 0 --json`: this tree's console, which checks every line against
# its host's signed checkpoint (docs/fleet.md, "Checked at the console"),
# against BEFORE's (default main), interleaved (hyperfine_rounds).
#   bench/fleet.sh BUILD_DIR [BEFORE]   (FLEET_BENCH_HOSTS=3,
#   FLEET_BENCH_LINES=1000, FLEET_BENCH_RUNS=10, FLEET_BENCH_ROUNDS=3)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
. tests/helpers/pg.sh
build=$1
before=${2:-main}
hosts=${FLEET_BENCH_HOSTS:-3}
lines=${FLEET_BENCH_LINES:-1000}
runs=${FLEET_BENCH_RUNS:-10}
rounds=${FLEET_BENCH_ROUNDS:-3}
meson compile -C "$build" >/dev/null
airlock=$PWD/$build/airlock
driver=$PWD/$build/tests/ledger_bench
work=$(mktemp -d /tmp/airlock-fleet-bench.XXXXXX)
chmod 0755 "$work"
old=$(bench_build_commit "$before" "$work/before")
pg=$work/pg
trap 'pg_stop "$pg"; rm -rf "$work"' EXIT
pg_start "$pg"
psql -X -q -v ON_ERROR_STOP=1 "host=$pg dbname=postgres user=postgres" -c "CREATE DATABASE fleet"
"$airlock" ledger mirror init "host=$pg dbname=fleet user=postgres" >/dev/null
mkdir -p "$work/ws"
cd "$work/ws"
i=1
while [ "$i" -le "$hosts" ]; do
	state=$work/host$i
	"$airlock" run --sandbox=none --state-dir "$state" -- true >/dev/null
	"$driver" receipts "$state" $((lines - 2)) "$state/receipts/1.json" >/dev/null
	"$airlock" ledger mirror set "host=$pg dbname=fleet user=airlock_pusher" --host "host$i" \
		--state-dir "$state" >/dev/null
	"$airlock" ledger push --state-dir "$state" >/dev/null
	i=$((i + 1))
done
cd - >/dev/null
reader="host=$pg dbname=fleet user=airlock_reader"
held=$(psql -X -q -A -t "host=$pg dbname=fleet user=postgres" -c "SELECT count(*) FROM airlock.entries")
# Both read the same rows; the new one says every line verifies.
"$airlock" fleet --mirror "$reader" --runs 0 --json |
	jq -e '[.runs[].line] | unique == ["verified"]' >/dev/null

load_before=$(cat /proc/loadavg)
hyperfine_rounds "$work/fleet.json" "$rounds" "$runs" \
	"$old fleet --mirror '$reader' --runs 0 --json" \
	"$airlock fleet --mirror '$reader' --runs 0 --json"
load_after=$(cat /proc/loadavg)
a=$(median_ms "$work/fleet.json" 0)
b=$(median_ms "$work/fleet.json" 1)
echo "fleet: $hosts hosts x $lines lines ($held rows in the mirror), --runs 0 --json, median of $rounds x $runs"
echo "  before ($before): ${a} ms"
echo "  after (checked):  ${b} ms   ratio $(ratio "$b" "$a")"
echo "  load average: before $load_before; after $load_after"

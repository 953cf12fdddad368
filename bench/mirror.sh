#!/bin/sh
# The ledger's mirror on PostgreSQL (docs/bench/mirror.md), against a private
# cluster on a Unix socket (tests/helpers/pg.sh), in one run:
#   throughput: `airlock ledger push` of a log of ENTRIES entries (receipts
#     committed by `ledger_bench receipts` from a real run's) into an empty
#     mirror, against `psql \copy` of the same rows (origin, seq, leaf, kind,
#     id, path, line) into a plain table of an empty database, without
#     triggers or checks: the floor. Each timed run gets a fresh database
#     (hyperfine --prepare: CREATE DATABASE ... TEMPLATE), interleaved.
#   latency: one push of one new entry and its checkpoint onto that log
#     (--prepare commits one more receipt).
#   run: `airlock run -- true` in a state directory with the mirror
#     configured (a detached push after each run) and in one without,
#     interleaved (hyperfine_rounds).
#   bench/mirror.sh BUILD_DIR   (MIRROR_BENCH_ENTRIES=5000,
#   MIRROR_BENCH_RUNS=10, MIRROR_BENCH_ROUNDS=3)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
. tests/helpers/pg.sh
build=$1
entries=${MIRROR_BENCH_ENTRIES:-5000}
runs=${MIRROR_BENCH_RUNS:-10}
rounds=${MIRROR_BENCH_ROUNDS:-3}
meson compile -C "$build" >/dev/null
airlock=$PWD/$build/airlock
driver=$PWD/$build/tests/ledger_bench
work=$(mktemp -d /tmp/airlock-mirror-bench.XXXXXX)
chmod 0755 "$work"
pg=$work/pg
trap 'pg_stop "$pg"; rm -rf "$work"' EXIT
pg_start "$pg"
owner="host=$pg dbname=postgres user=postgres"
sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$owner" -c "$1"; }

# The template databases: the mirror's schema, and the floor's plain table.
sql "CREATE DATABASE mirror_tmpl" >/dev/null
"$airlock" ledger mirror init "host=$pg dbname=mirror_tmpl user=postgres" >/dev/null
sql "CREATE DATABASE floor_tmpl" >/dev/null
psql -X -q "host=$pg dbname=floor_tmpl user=postgres" -c \
	"CREATE TABLE floor (origin text, seq bigint, leaf bytea, kind text, id text, path text, line text)"

mkdir -p "$work/ws"
cd "$work/ws"
state=$work/host
"$airlock" run --sandbox=none --state-dir "$state" -- true >/dev/null
"$driver" receipts "$state" $((entries - 1)) "$state/receipts/1.json"
cd - >/dev/null
fresh() { # database template
	echo "psql -X -q 'host=$pg dbname=postgres user=postgres' -c 'DROP DATABASE IF EXISTS $1' -c 'CREATE DATABASE $1 TEMPLATE $2'"
}
"$airlock" ledger mirror set "host=$pg dbname=m user=airlock_pusher" --state-dir "$state"
# The rows, as the mirror stores them: the floor's input.
eval "$(fresh m mirror_tmpl)"
"$airlock" ledger push --state-dir "$state"
psql -X -q "host=$pg dbname=m user=postgres" -c \
	"\\copy (SELECT origin, seq, leaf, kind, id, path, line FROM airlock.entries ORDER BY seq) TO '$work/rows'"
bytes=$(wc -c <"$state/ledger/log")

load_before=$(cat /proc/loadavg)
hyperfine --runs "$runs" --export-json "$work/throughput.json" \
	--prepare "$(fresh m mirror_tmpl) && rm -f '$state/ledger/remotes/pg'" \
	-n push "'$airlock' ledger push --state-dir '$state'" \
	--prepare "$(fresh f floor_tmpl)" \
	-n copy "psql -X -q 'host=$pg dbname=f user=postgres' -c \"\\\\copy floor FROM '$work/rows'\"" >/dev/null

# One entry more, pushed with its checkpoint onto the log of ENTRIES.
eval "$(fresh m mirror_tmpl)"
"$airlock" ledger push --state-dir "$state"
hyperfine --runs $((runs * 2)) --export-json "$work/latency.json" \
	--prepare "'$driver' receipts '$state' 1 '$state/receipts/1.json'" \
	-n push-one "'$airlock' ledger push --state-dir '$state'" \
	--prepare true \
	-n connect "psql -X -q 'host=$pg dbname=m user=airlock_pusher' -c 'SELECT 1'" >/dev/null

# A run with the mirror configured and without.
with=$work/with
without=$work/without
eval "$(fresh runs mirror_tmpl)"
cd "$work/ws"
"$airlock" run --state-dir "$with" -- true >/dev/null
"$airlock" run --state-dir "$without" -- true >/dev/null
"$airlock" ledger mirror set "host=$pg dbname=runs user=airlock_pusher" --state-dir "$with"
hyperfine_rounds "$work/run.json" "$rounds" "$runs" \
	-n without "$airlock run --state-dir $without -- true" \
	-n with-mirror "$airlock run --state-dir $with -- true"
cd - >/dev/null
sleep 2
held=$(psql -X -q -A -t "host=$pg dbname=runs user=postgres" -c "SELECT size FROM airlock.log_heads")
signed=$(sed -n 2p "$with/ledger/checkpoint")
load_after=$(cat /proc/loadavg)

push=$(median_ms "$work/throughput.json" 0)
copy=$(median_ms "$work/throughput.json" 1)
one=$(median_ms "$work/latency.json" 0)
connect=$(median_ms "$work/latency.json" 1)
run_without=$(median_ms "$work/run.json" 0)
run_with=$(median_ms "$work/run.json" 1)
cat <<MD
| what | median | ratio |
|---|---|---|
| \`ledger push\` of $entries entries ($bytes bytes of log) into an empty mirror | $push ms ($(echo "$entries * 1000 / $push" | bc) entries/s) | $(ratio "$push" "$copy") x the floor |
| \`psql \\copy\` of the same rows into a plain table (the floor) | $copy ms ($(echo "$entries * 1000 / $copy" | bc) entries/s) | 1 |
| \`ledger push\` of one entry and its checkpoint onto $entries | $one ms | $(ratio "$one" "$connect") x a connection |
| \`psql -c 'SELECT 1'\` as the pusher (a connection: its floor) | $connect ms | 1 |
| \`run -- true\`, no mirror | $run_without ms | 1 |
| \`run -- true\`, mirror configured (detached push) | $run_with ms | $(ratio "$run_with" "$run_without") |

The mirror held $held of the $signed entries the configured state directory
signed, two seconds after the last run. Load average before: $load_before;
after: $load_after.
MD

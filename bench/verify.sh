#!/bin/sh
# `airlock ledger verify --key K` against `sha256sum` of the ledger's files,
# with BASE (an airlock built from before issue 22 goal 4) side by side, in
# one interleaved run (docs/bench22/verify.md):
#   receipts: a state directory of ENTRIES entries, almost all receipts: a few
#     real `airlock run --sandbox=none` runs (one opening a failure), the bulk
#     committed through store_write_receipt() from the first real receipt
#     (`ledger_bench receipts`), then a few more real runs;
#   log: a log of as many entries that all name one record (`ledger_bench
#     generate`), so verify reads little beyond the log: the log's own cost.
# Commands timed: verify with BASE and with this build, `sha256sum` of
# ledger/log and ledger/checkpoint (what the goal compares with) and of those
# plus every record file verify reads (the same bytes verify hashes).
#   bench/verify.sh BUILD_DIR BASE_AIRLOCK   (VERIFY_BENCH_ENTRIES=20000,
#   VERIFY_BENCH_ROUNDS=3, VERIFY_BENCH_RUNS=10)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=$1
base=$2
entries=${VERIFY_BENCH_ENTRIES:-20000}
rounds=${VERIFY_BENCH_ROUNDS:-3}
runs=${VERIFY_BENCH_RUNS:-10}
meson compile -C "$build" >/dev/null
airlock=$PWD/$build/airlock
driver=$PWD/$build/tests/ledger_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"

state=$work/receipts
cd "$work/ws"
for _ in 1 2 3 4 5; do "$airlock" run --sandbox=none --state-dir "$state" -- true >/dev/null; done
"$airlock" run --sandbox=none --state-dir "$state" -- sh -c 'exit 3' >/dev/null || true
"$driver" receipts "$state" $((entries - 12)) "$state/receipts/1.json"
for _ in 1 2 3 4 5 6; do "$airlock" run --sandbox=none --state-dir "$state" -- true >/dev/null; done
cd - >/dev/null
"$airlock" ledger key --state-dir "$state" >"$work/receipts.pub"
"$airlock" ledger checkpoint --state-dir "$state" >/dev/null
"$driver" generate "$work/log" "$entries"
"$airlock" ledger key --state-dir "$work/log" >"$work/log.pub"

# Both builds must agree, and the state directories verify. A BASE from
# before ledger format 2 cannot read receipts that their entries carry
# (docs/ledger.md): its verify of that state is timed (-i) but not compared.
base_reads=yes
for d in receipts log; do
	"$airlock" ledger verify --state-dir "$work/$d" --key "$work/$d.pub" >"$work/$d.new"
	grep -q '"verdict":"OK"' "$work/$d.new" || { echo "verify of $d: not OK" >&2; exit 1; }
	if ! "$base" ledger verify --state-dir "$work/$d" --key "$work/$d.pub" >"$work/$d.base" &&
		[ "$d" = receipts ] && grep -q '"record":' "$state/ledger/log"; then
		base_reads=no
		continue
	fi
	cmp -s "$work/$d.base" "$work/$d.new" || { echo "verify of $d: the builds disagree" >&2; exit 1; }
done
[ "$base_reads" = yes ] || export HYPERFINE_FLAGS=-i
find "$state/receipts" "$state/gate" -type f -name '*.json' | sort >"$work/records"
# The same bytes verify hashes, in one sha256sum (a list file: no ARG_MAX).
files="$state/ledger/log $state/ledger/checkpoint"

echo "Load average before: $(cat /proc/loadavg)"
echo
hyperfine_rounds "$work/receipts.json" "$rounds" "$runs" \
	"$base ledger verify --state-dir $state --key $work/receipts.pub" \
	"$airlock ledger verify --state-dir $state --key $work/receipts.pub" \
	"sha256sum $files" \
	"sh -c 'sha256sum $files; xargs sha256sum <$work/records'" \
	"$base ledger verify --state-dir $work/log --key $work/log.pub" \
	"$airlock ledger verify --state-dir $work/log --key $work/log.pub" \
	"sha256sum $work/log/ledger/log $work/log/ledger/checkpoint"
echo "Load average after: $(cat /proc/loadavg)"
echo
m() { median_ms "$work/receipts.json" "$1"; }
rb=$(m 0) rn=$(m 1) rs=$(m 2) ra=$(m 3) lb=$(m 4) ln=$(m 5) ls=$(m 6)
rbytes=$(stat -c %s "$state/ledger/log") lbytes=$(stat -c %s "$work/log/ledger/log")
rn_entries=$(wc -l <"$state/ledger/log") ln_entries=$(wc -l <"$work/log/ledger/log")
nrec=$(wc -l <"$work/records")
recbytes=$(xargs cat <"$work/records" | wc -c)
echo "| state directory | command | median ms | / sha256sum of log + checkpoint |"
echo "|---|---|---:|---:|"
if [ "$base_reads" = yes ]; then
	echo "| receipts: $rn_entries entries ($rbytes bytes of log), $nrec record files ($recbytes bytes) | \`ledger verify\`, BASE | $rb | $(ratio "$rb" "$rs") |"
else
	echo "| receipts: $rn_entries entries ($rbytes bytes of log, the receipts' bytes in it), $nrec record files ($recbytes bytes) | \`ledger verify\`, BASE | cannot read format 2 | |"
fi
echo "| | \`ledger verify\`, this build | $rn | $(ratio "$rn" "$rs") |"
echo "| | \`sha256sum\` log + checkpoint | $rs | 1 |"
echo "| | \`sha256sum\` log + checkpoint + the record files | $ra | $(ratio "$ra" "$rs") |"
echo "| log: $ln_entries entries ($lbytes bytes of log), 1 record file | \`ledger verify\`, BASE | $lb | $(ratio "$lb" "$ls") |"
echo "| | \`ledger verify\`, this build | $ln | $(ratio "$ln" "$ls") |"
echo "| | \`sha256sum\` log + checkpoint | $ls | 1 |"
echo
echo "BASE / this build: receipts $([ "$base_reads" = yes ] && ratio "$rb" "$rn" || echo n/a)x, log $(ratio "$lb" "$ln")x. Medians of $rounds interleaved rounds of $runs runs each."

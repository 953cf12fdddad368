#!/bin/sh
# Cosigning latency over loopback (docs/bench/witness.md):
#  1. in one interleaved hyperfine run: curl POSTing add-checkpoint of the
#     checkpoint the witness holds (it checks the signature, re-reads its
#     state and cosigns: everything but the proof and the store) against
#     curl getting a 404 from the same server (the HTTP floor);
#  2. `airlock ledger push` of one new checkpoint (one run committed, a
#     checkpoint signed, not timed), which makes the witness verify the
#     consistency proof and store the checkpoint durably (fsync) before it
#     cosigns: the median of N pushes.
# Usage: bench/witness.sh [N]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_need_tools
command -v curl >/dev/null || scripts/deps.sh
N=${1:-30}
AIRLOCK=$(bench_build_here build-bench airlock)
T=$(mktemp -d /tmp/airlock-bench-witness.XXXXXX)
export AIRLOCK_STATE_DIR="$T/state"
mkdir -p "$T/work"
cd "$T/work"
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

"$AIRLOCK" run -- true >/dev/null
"$AIRLOCK" ledger checkpoint >/dev/null
"$AIRLOCK" ledger key >"$T/log.pub"
"$AIRLOCK" witness init --state-dir "$T/w" >/dev/null
"$AIRLOCK" witness add-log "$(cut -d+ -f1 "$T/log.pub")" "$(cat "$T/log.pub")" --state-dir "$T/w"
"$AIRLOCK" witness serve --state-dir "$T/w" >"$T/w.out" 2>&1 &
pid=$!
i=0
until grep -q "listening on" "$T/w.out"; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { cat "$T/w.out"; exit 1; }
	sleep 0.05
done
url="http://$(sed -n 's/.*listening on //p' "$T/w.out")"
"$AIRLOCK" ledger witness add w1 "$url" "$("$AIRLOCK" witness key --state-dir "$T/w")"
"$AIRLOCK" ledger push

size=$(sed -n 2p "$AIRLOCK_STATE_DIR/ledger/checkpoint")
{ echo "old $size"; echo; cat "$AIRLOCK_STATE_DIR/ledger/checkpoint"; } >"$T/req"
cat /proc/loadavg
hyperfine_rounds "$T/h.json" 5 40 \
	"curl -s -o /dev/null --data-binary @$T/req $url/add-checkpoint" \
	"curl -s -o /dev/null $url/nothing"
cosign=$(median_ms "$T/h.json" 0)
floor=$(median_ms "$T/h.json" 1)
echo "curl add-checkpoint (re-cosign): $cosign ms; curl 404 floor: $floor ms; ratio $(ratio "$cosign" "$floor")"

: >"$T/push.ms"
i=0
while [ "$i" -lt "$N" ]; do
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger checkpoint >/dev/null
	t0=$(date +%s%N)
	"$AIRLOCK" ledger push
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000))" >>"$T/push.ms"
	i=$((i + 1))
done
sort -n "$T/push.ms" | awk '{a[NR]=$1} END {printf "ledger push of one new checkpoint: median %.3f ms, min %.3f, max %.3f (N=%d)\n", a[int((NR+1)/2)]/1000, a[1]/1000, a[NR]/1000, NR}'
cat /proc/loadavg

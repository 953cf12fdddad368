#!/bin/sh
# The ledger's benchmarks (docs/BENCHMARKS.md, "The ledger"):
#   durable appends per second (fdatasync each) from 1 and 4 processes,
#     against the floor of this disk (dd oflag=dsync of entry-sized writes);
#   `airlock ledger verify` over 1,000,000 entries against sha256sum over
#     the same bytes;
#   `airlock run -- true` with the ledger against BASE (an airlock built
#     without it), when given.
#   bench/ledger.sh [BUILD_DIR [BASE_AIRLOCK]]   (default: build-bench)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build-bench}
base=${2:-}
[ -d "$build" ] || meson setup "$build" --buildtype=release >/dev/null
meson compile -C "$build" >/dev/null
airlock=$PWD/$build/airlock
driver=$PWD/$build/tests/ledger_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
appends=${LEDGER_BENCH_APPENDS:-2000}
entries=${LEDGER_BENCH_ENTRIES:-1000000}

echo "## The ledger"
echo
echo "### Durable appends (fdatasync each), $appends per process"
echo
floor=$( { dd if=/dev/zero of="$work/dsync" bs=200 count="$appends" oflag=dsync 2>&1 >/dev/null; } |
	awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print int('"$appends"' / $(i - 1)) }')
one=$("$driver" append "$work/one" "$appends")
start=$(date +%s.%N)
for p in 1 2 3 4; do "$driver" append "$work/four" "$appends" >/dev/null & done
wait
end=$(date +%s.%N)
four=$(echo "4 * $appends / ($end - $start)" | bc)
"$airlock" ledger key --state-dir "$work/four" >"$work/four.pub"
"$airlock" ledger checkpoint --state-dir "$work/four" >/dev/null
"$airlock" ledger verify --state-dir "$work/four" --key "$work/four.pub" >/dev/null
echo "| appenders | appends/s |"
echo "|---|---:|"
echo "| floor: \`dd bs=200 oflag=dsync\` (one write + sync each) | $floor |"
echo "| 1 process (\`ledger_bench append\`) | $one |"
echo "| 4 processes at once, total | $four |"
echo
echo "The 4-process ledger verified: $((4 * appends)) entries, seq contiguous."
echo

echo "### \`airlock ledger verify\` over $entries entries"
echo
"$driver" generate "$work/big" "$entries"
"$airlock" ledger key --state-dir "$work/big" >"$work/big.pub"
bytes=$(stat -c %s "$work/big/ledger/log")
hyperfine -N --warmup 1 --runs 3 --export-json "$work/verify.json" \
	"$airlock ledger verify --state-dir $work/big --key $work/big.pub" \
	"sha256sum $work/big/ledger/log" >/dev/null
v=$(median_ms "$work/verify.json" 0) s=$(median_ms "$work/verify.json" 1)
echo "| command | median ms |"
echo "|---|---:|"
echo "| \`airlock ledger verify --key K\` ($bytes bytes) | $v |"
echo "| \`sha256sum\` over the same bytes | $s |"
echo
echo "verify / sha256sum: $(ratio "$v" "$s")x (verify parses every entry strictly, hashes each leaf, rebuilds the tree, checks the signature, and reconciles the state directory)."
echo

if [ -n "$base" ]; then
	echo "### \`airlock run -- true\` before and after the ledger"
	echo
	mkdir -p "$work/ws"
	cd "$work/ws"
	hyperfine_rounds "$work/run.json" 3 20 \
		"$base run --state-dir $work/s-base -- true" \
		"$airlock run --state-dir $work/s-ledger -- true"
	b=$(median_ms "$work/run.json" 0) a=$(median_ms "$work/run.json" 1)
	echo "| command | median ms |"
	echo "|---|---:|"
	echo "| without the ledger (\`$base\`) | $b |"
	echo "| with the ledger | $a |"
	echo
	echo "Difference: $(echo "$a - $b" | bc) ms per run; one durable append costs $(echo "scale=3; 1000 / $one" | bc) ms here (1 process above)."
fi

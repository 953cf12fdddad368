#!/bin/sh
# The ledger's benchmarks (docs/BENCHMARKS.md, "The ledger"):
#   durable appends per second (fdatasync each) from 1 and 4 processes,
#     against the floor of this disk (dd oflag=dsync of entry-sized writes);
#   `airlock ledger verify` over 1,000,000 entries against sha256sum over
#     the same bytes;
#   lookups: `airlock gate` (the open failures, whether each is closed) and
#     an `apply`-style lookup (`airlock ack` of a failure that needs the
#     approver: is the open entry the ledger's last for its path, with these
#     bytes?) at 1,000,000 entries against 10, with this build and with BASE;
#   `airlock run -- true` with this build against BASE, when given.
#   bench/ledger.sh [BUILD_DIR [BASE_AIRLOCK]]   (default: build-bench)
# LEDGER_BENCH_ONLY=lookups|run: only that section (and only with BASE).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build-bench}
base=${2:-}
airlock=$(bench_build_here "$build")
driver=$PWD/$build/tests/ledger_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
appends=${LEDGER_BENCH_APPENDS:-2000}
entries=${LEDGER_BENCH_ENTRIES:-1000000}

only=${LEDGER_BENCH_ONLY:-}

# A state directory of $2 generated entries, then one failure in $work/ws
# whose command needs the approver to be acknowledged (receipt 1).
lookup_state() { # dir, entries
	"$driver" generate-distinct "$1" "$2"
	(cd "$work/ws" && "$airlock" run --state-dir "$1" -- sh -c 'echo x >f; exit 3' >/dev/null) || true
}

if [ -n "$base" ] && [ "$only" != run ]; then
	echo "### Lookups at $entries entries against 10"
	echo
	mkdir -p "$work/ws"
	t0=$(date +%s.%N)
	lookup_state "$work/l-big" "$entries"
	t1=$(date +%s.%N)
	lookup_state "$work/l-small" 10
	cd "$work/ws"
	for a in "$base" "$airlock"; do
		for d in l-small l-big; do
			st=0 && "$a" gate --state-dir "$work/$d" >/dev/null || st=$?
			[ "$st" -eq 2 ] || { echo "gate with $a on $d: exit $st, not 2" >&2; exit 1; }
			"$a" ack 1 --reason r --state-dir "$work/$d" 2>&1 | grep -q "needs the approver" ||
				{ echo "ack with $a on $d did not refuse for the approver" >&2; exit 1; }
		done
		HYPERFINE_FLAGS=-i hyperfine_rounds "$work/lookup.json" 3 10 \
			"$a gate --state-dir $work/l-small" "$a gate --state-dir $work/l-big" \
			"$a ack 1 --reason r --state-dir $work/l-small" "$a ack 1 --reason r --state-dir $work/l-big" 2>/dev/null
		gs=$(median_ms "$work/lookup.json" 0) gb=$(median_ms "$work/lookup.json" 1)
		as=$(median_ms "$work/lookup.json" 2) ab=$(median_ms "$work/lookup.json" 3)
		echo "| \`$a\` | 10 entries, ms | $entries entries, ms | ratio |"
		echo "|---|---:|---:|---:|"
		echo "| \`airlock gate\` | $gs | $gb | $(ratio "$gb" "$gs") |"
		echo "| \`airlock ack 1\` (refused: needs the approver) | $as | $ab | $(ratio "$ab" "$as") |"
		echo
	done
	cd - >/dev/null
	rm "$work/l-big/ledger/index"
	t2=$(date +%s.%N)
	"$airlock" ledger checkpoint --state-dir "$work/l-big" >/dev/null
	t3=$(date +%s.%N)
	[ -s "$work/l-big/ledger/index" ]
	echo "Rebuilding the index from the whole big log (\`ledger checkpoint\` after deleting it): $(echo "$t3 - $t2" | bc) s."
	echo
	echo "The big log: $(stat -c %s "$work/l-big/ledger/log") bytes; each command was checked first to fail as it should (gate: exit 2, one open failure; ack: needs the approver). Generating it and the one run after (whose append built the index from the whole log) took $(echo "$t1 - $t0" | bc) s."
	echo
fi
[ -z "$only" ] || [ -z "$base" ] || [ "$only" = run ] || exit 0

echo "## The ledger"
echo
if [ -z "$only" ]; then
echo "### Durable appends (fdatasync each), $appends per process"
echo
floor=$( { dd if=/dev/zero of="$work/dsync" bs=200 count="$appends" oflag=dsync 2>&1 >/dev/null; } |
	awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print int('"$appends"' / $(i - 1)) }')
one=$("$driver" append "$work/one" "$appends")
start=$(date +%s.%N)
for _ in 1 2 3 4; do "$driver" append "$work/four" "$appends" >/dev/null & done
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
fi

if [ -n "$base" ]; then
	echo "### \`airlock run -- true\` before and after (BASE against this build)"
	echo
	mkdir -p "$work/ws"
	cd "$work/ws"
	hyperfine_rounds "$work/run.json" "${LEDGER_BENCH_ROUNDS:-3}" 20 \
		"$base run --state-dir $work/s-base -- true" \
		"$airlock run --state-dir $work/s-ledger -- true"
	b=$(median_ms "$work/run.json" 0) a=$(median_ms "$work/run.json" 1)
	echo "| command | median ms |"
	echo "|---|---:|"
	echo "| before (\`$base\`) | $b |"
	echo "| after (this build) | $a |"
	echo
	echo "after / before: $(ratio "$a" "$b")x; difference $(echo "$a - $b" | bc) ms per run."
	echo
	# Rounds of 20 runs still catch this VM's load swings on one command and
	# not the other; one run of each in turn does not.
	n=${LEDGER_BENCH_ALTERNATE:-80}
	: >"$work/alt-b" && : >"$work/alt-a"
	i=0
	while [ "$i" -lt "$n" ]; do
		for which in b a; do
			bin=$base && [ "$which" = b ] || bin=$airlock
			s=$(date +%s%N)
			"$bin" run --state-dir "$work/s-alt-$which" -- true >/dev/null
			e=$(date +%s%N)
			echo $(((e - s) / 1000)) >>"$work/alt-$which"
		done
		i=$((i + 1))
	done
	mb=$(sort -n "$work/alt-b" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] / 1000 }')
	ma=$(sort -n "$work/alt-a" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] / 1000 }')
	echo "Alternated, one run of each in turn, $n each: before $mb ms, after $ma ms (medians, wall clock with two \`date\` forks); after / before: $(ratio "$ma" "$mb")x."
	[ -z "${one:-}" ] || echo "One durable append costs $(echo "scale=3; 1000 / $one" | bc) ms here (1 process above)."
fi

#!/bin/sh
# What leaving a dry run's read-only opens untraced saves (issue 22, goal 5;
# docs/sandbox.md, "Read tracing"): a dry run traces them only when its
# workspace holds a hard-linked file as it begins. In one interleaved
# hyperfine run (bench/lib.sh, hyperfine_rounds), for this binary and a
# baseline (main's build, which traces every open):
#   - `airlock dryrun -- make -s gen` in a scratch git repository like
#     bench/permit.sh's (no hard link: untraced);
#   - a shell loop of N read-only opens of /etc/hostname (default 2,000), in
#     the same repository, and in a copy with one hard-linked pair (traced:
#     what the workspace that needs them still pays);
#   - `airlock dryrun -- true` in a tree of BIG files (default 25,000) in
#     directories of 100, more than the scan looks through: the scan's own
#     cost where it cannot answer.
# Prints a Markdown table with the load average.
#   bench/readtrace.sh AIRLOCK_BINARY BASELINE_BINARY
# BENCH_N, BENCH_BIG, BENCH_ROUNDS (default 5), BENCH_RUNS (default 10).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
new=$(realpath "$1")
base=$(realpath "$2")
n=${BENCH_N:-2000}
big=${BENCH_BIG:-25000}
rounds=${BENCH_ROUNDS:-5}
runs=${BENCH_RUNS:-10}
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT

ws="$work/ws"
mkdir -p "$ws" && cd "$ws"
git init -q . && git config user.email b@b && git config user.name b
printf 'gen:\n\techo new > gen.txt\n' > Makefile
echo notes > notes.txt && echo gen.txt > .gitignore
git add -A . && git commit -qm init
cp -a "$ws" "$work/linked"
echo one > "$work/linked/a" && ln "$work/linked/a" "$work/linked/b"
mkdir -p "$work/big"
i=0
while [ "$i" -lt $((big / 100)) ]; do
	mkdir "$work/big/d$i"
	(cd "$work/big/d$i" && seq 1 100 | xargs touch)
	i=$((i + 1))
done

loop="sh -c 'i=0; while [ \$i -lt $n ]; do read x </etc/hostname; i=\$((i + 1)); done'"
# dry BINARY STATE WORKSPACE COMMAND: one dry run (its verdict's exit status
# is not the point: hence -i)
dry() { echo "env AIRLOCK_STATE_DIR=$work/$2 $1 dryrun --workspace $3 --cwd $3 -- $4"; }
set --
for b in "$base" "$new"; do
	s=s-$(basename "$(dirname "$b")")-$#
	set -- "$@" "$(dry "$b" "$s" "$ws" "make -s gen")" \
		"$(dry "$b" "$s" "$ws" "$loop")" \
		"$(dry "$b" "$s" "$work/linked" "$loop")" \
		"$(dry "$b" "$s" "$work/big" true)"
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/out.json" "$rounds" "$runs" "$@"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "| workload | baseline (ms) | this build (ms) | ratio |"
echo "|---|---|---|---|"
k=0
for name in "dryrun -- make -s gen (no link)" "$n read-only opens (no link)" \
	"$n read-only opens (a linked pair: traced)" "dryrun -- true, $big files (scan over budget)"; do
	b=$(median_ms "$work/out.json" "$k")
	t=$(median_ms "$work/out.json" $((k + 4)))
	echo "| $name | $b | $t | $(ratio "$t" "$b") |"
	k=$((k + 1))
done
echo
echo "Medians of $rounds interleaved rounds of $runs runs; load average $load_before before, $load_after after."

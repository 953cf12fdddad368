#!/bin/sh
# What a dry run's trace of workspace path calls costs (issue 20): in a dry
# run every open, rename, link, unlink, ... comes to the supervisor as a
# seccomp user notification (docs/dryrun.md, "Writes attempted outside the
# workspace"), which `airlock run` does not pay. Commands making N traced
# calls (default 2,000) are timed directly, under `airlock run` and under
# `airlock dryrun`, each beside the same command making none, in the same
# interleaved rounds; the added cost per traced call is what the N calls cost
# the dry run over what they cost `airlock run`. Prints a Markdown section
# for docs/BENCHMARKS.md.
#   bench/dryrun-trace.sh AIRLOCK_BINARY
# BENCH_N (calls, default 2000), BENCH_ROUNDS (default 10), BENCH_RUNS
# (default 5): hyperfine_rounds in bench/lib.sh.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$(readlink -f "$1")
n=${BENCH_N:-2000}
rounds=${BENCH_ROUNDS:-10}
runs=${BENCH_RUNS:-5}
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
export AIRLOCK_STATE_DIR="$work/state"
ws=$work/ws
mkdir -p "$ws"
echo one >"$ws/f"     # one link: the trace notes nothing of it
echo two >"$ws/g"     # two links: every call on it is recorded
ln "$ws/g" "$ws/g2"
echo three >"$ws/a"
python3=/usr/bin/python3 # Debian's, not a version-manager shim

# Every workload leaves the tree as it found it (the dry run's verdict is
# NO_EFFECT, exit 10: hence -i). Its N=0 twin runs the same interpreter
# through the same loop without the call.
sh_loop() { # count body
	echo "sh -c 'i=0; while [ \$i -lt $1 ]; do $2; i=\$((i + 1)); done'"
}
half=$((n / 2))
read1=$(sh_loop "$n" "read x <f")
read2=$(sh_loop "$n" "read x <g")
read0=$(sh_loop "$n" ":")
py() { # name body: a loop of N/2 bodies in $work/name.py
	printf 'import os\nfor i in range(%d):\n    %s\n' "$half" "$2" >"$work/$1.py"
	echo "$python3 $work/$1.py"
}
ren=$(py ren 'os.rename("a", "b"); os.rename("b", "a")')
lnk=$(py lnk 'os.link("a", "c"); os.unlink("c")')
py0=$(py py0 'pass')

# hyperfine runs in the workspace: the direct commands' cwd.
cd "$ws"
direct() { echo "$1"; }
run() { echo "$airlock run --workspace $ws --cwd $ws -- $1"; }
dry() { echo "$airlock dryrun --workspace $ws --cwd $ws -- $1"; }
set --
for w in "$read0" "$read1" "$read2" "$py0" "$ren" "$lnk"; do
	set -- "$@" "$(direct "$w")" "$(run "$w")" "$(dry "$w")"
done
verdict=$(sh -c "$(dry "$lnk")" | head -1 || true)
load=$(cut -d' ' -f1-3 /proc/loadavg)
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/h.json" "$rounds" "$runs" "$@"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
m() { median_ms "$work/h.json" "$1"; }
# Per call, in microseconds: (t(N) - t(0)) / N.
per() { echo "scale=1; ($1 - $2) * 1000 / $n" | bc; }
row() { # label index-of-workload index-of-its-twin
	d=$(m $(($2 * 3))) r=$(m $(($2 * 3 + 1))) y=$(m $(($2 * 3 + 2)))
	# shellcheck disable=SC2034 # d0: read with r0 and y0 for symmetry; no column uses it
	d0=$(m $(($3 * 3))) r0=$(m $(($3 * 3 + 1))) y0=$(m $(($3 * 3 + 2)))
	if [ "$2" = "$3" ]; then
		echo "| $1 | $d | $r | $y | $(ratio "$y" "$r") | $(ratio "$y" "$d") | | |"
	else
		pr=$(per "$r" "$r0") py=$(per "$y" "$y0")
		echo "| $1 | $d | $r | $y | $(ratio "$y" "$r") | $(ratio "$y" "$d") | $pr | $py |"
	fi
}
echo "## Issue 20: a dry run's trace of workspace path calls, $n calls"
echo
echo "\`bench/dryrun-trace.sh AIRLOCK\`, $(date -u +%Y-%m-%d), load average $load before and $load_after after;"
echo "$rounds interleaved rounds of $runs runs."
echo
echo "| command (in the workspace) | direct median ms | \`airlock run\` median ms | \`airlock dryrun\` median ms | dryrun / run | dryrun / direct | µs per call, run | µs per call, dryrun |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row "floor: \`sh\`, a loop of $n \`:\`" 0 0
row "\`sh\`, $n \`read x <f\` (one link: opens traced, nothing kept)" 1 0
row "\`sh\`, $n \`read x <g\` (two links: every open kept)" 2 0
row "floor: \`python3\`, a loop of $half \`pass\`" 3 3
row "\`python3\`, $n renames (\`a\` to \`b\` and back)" 4 3
row "\`python3\`, $n calls: $half \`link(a, c)\` + \`unlink(c)\`" 5 3
echo
added() { # index-of-workload index-of-its-twin: the trace's µs per call
	echo "scale=1; (($(m $(($1 * 3 + 2))) - $(m $(($2 * 3 + 2)))) - ($(m $(($1 * 3 + 1))) - $(m $(($2 * 3 + 1))))) * 1000 / $n" | bc
}
echo "µs per call: the workload's median less its floor's, over $n calls. The dry run of the last: \`$verdict\`."
echo "Added by the trace (the dry run's µs per call less \`airlock run\`'s): $(added 1 0) and $(added 2 0) per open, $(added 4 3) per rename, $(added 5 3) per link or unlink."

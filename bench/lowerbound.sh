#!/bin/sh
# The lower bound of `airlock run --sandbox=none -- true` (issue 22, goal 1,
# docs/bench22/durable.md): what merely starting a binary costs, side by
# side in one interleaved run with the floor (bench/append_floor.c) and the
# run itself:
#   exec of a minimal static C program, of the same program linked
#   dynamically, `airlock --version` (airlock's start: ld.so, libc's
#   relocations, constructors; no work), the floor, and the run;
# then per binary the page faults (perf stat), the dynamic loader's
# statistics (LD_DEBUG=statistics), the system calls (strace -c) and, when
# valgrind is there, the instructions (callgrind).
#   bench/lowerbound.sh [BUILD_DIR]   (default: build-bench)
# LOWER_ROUNDS, LOWER_RUNS: hyperfine_rounds' rounds and runs (10, 30).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build-bench}
airlock=$(bench_build_here "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/append_floor" bench/append_floor.c
cc -O2 -static -o "$work/exec_static" bench/exec_floor.c
cc -O2 -o "$work/exec_dynamic" bench/exec_floor.c
mkdir -p "$work/ws"
cd "$work/ws"
for i in 1 2 3; do AIRLOCK_STATE_DIR=$work/state "$airlock" run --sandbox=none -- true >/dev/null; done

echo "## The lower bound: starting a binary against the floor"
echo
echo "load average before: $(cat /proc/loadavg)"
echo
set -- "$work/exec_static" "$work/exec_dynamic" "$airlock --version" \
	"$work/append_floor $work/floor.log true" \
	"$airlock run --state-dir $work/state --sandbox=none -- true"
hyperfine_rounds "$work/lower.json" "${LOWER_ROUNDS:-10}" "${LOWER_RUNS:-30}" "$@" 2>/dev/null
floor=$(median_ms "$work/lower.json" 3)
echo "| command | median, ms | / floor |"
echo "|---|---:|---:|"
i=0
for name in "exec of a minimal static C program" "the same, linked dynamically" \
	"\`airlock --version\` (start only)" \
	"floor: posix_spawn + wait + 1 KiB append + fdatasync" \
	"\`airlock run --sandbox=none -- true\`"; do
	t=$(median_ms "$work/lower.json" "$i")
	echo "| $name | $t | $(ratio "$t" "$floor") |"
	i=$((i + 1))
done
echo
echo "load average after: $(cat /proc/loadavg)"
echo
echo "| binary | page faults | ld.so cycles | relocations | system calls | instructions |"
echo "|---|---:|---:|---:|---:|---:|"
for c in "$work/exec_static" "$work/exec_dynamic" "$airlock --version"; do
	# shellcheck disable=SC2086 # a command and its words
	pf=$(perf stat -x, -e page-faults $c 2>&1 >/dev/null | awk -F, '/page-faults/ {print $1}')
	# shellcheck disable=SC2086
	ld=$(LD_DEBUG=statistics $c 2>&1 >/dev/null | awk '/total startup time/ {print $NF == "cycles" ? $(NF-1) : $NF}')
	# shellcheck disable=SC2086
	rel=$(LD_DEBUG=statistics $c 2>&1 >/dev/null | awk '/final number of relocations/ {print $NF; exit}')
	# shellcheck disable=SC2086
	sc=$(strace -f -c $c 2>&1 >/dev/null | awk '/total$/ {print $4}')
	ir=-
	if command -v valgrind >/dev/null; then
		# shellcheck disable=SC2086
		ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $c 2>&1 >/dev/null |
			awk '/refs:/ {print $NF}')
	fi
	echo "| \`$(basename "${c%% *}")${c#"${c%% *}"}\` | ${pf:--} | ${ld:--} | ${rel:-0} | ${sc:--} | $ir |"
done

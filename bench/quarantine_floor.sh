#!/bin/sh
# The kernel's floor for the quarantine's start-up (issue 22, goal 2):
# bench/quarantine_floor.c at each LEVEL (the kernel steps airlock's init
# takes, added one group at a time) against `true`, `unshare -Urmpfn true`,
# bubblewrap (the flags of bench/startup.sh) and `airlock run -- true` with
# the receipt's syncs on and off, in ONE interleaved run (hyperfine_rounds);
# then each step's own time, from 100 runs of `quarantine_floor -t 7 true`.
# Floors 6 and 7 add what airlock must do and bubblewrap does not (the
# run's cgroups, the supervisor's pipes and listener, a durable receipt):
# airlock against floor 7 is what its own work costs.
# Prints a Markdown section (docs/bench22/startup.md).
#   bench/quarantine_floor.sh [ROUNDS] [RUNS]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
runs=${2:-20}
bench_need_tools

build="build-bench"
airlock=$(bench_build_here "$build" airlock)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I "$build" -o "$work/floor" bench/quarantine_floor.c
mkdir -p "$work/ws"
cd "$work/ws"
export AIRLOCK_STATE_DIR="$work/state"
export QUARANTINE_FLOOR_LOG="$work/floor.log" # beside the state directory: the same file system
printf '{"schema": "airlock.policy/1", "receipts": {"fsync": false}}\n' >"$work/nofsync.json"

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc true"
set -- \
	"true" \
	"unshare -Urmpfn true" \
	"$bwrap_cmd" \
	"$work/floor 0 true" \
	"$work/floor 1 true" \
	"$work/floor 2 true" \
	"$work/floor 3 true" \
	"$work/floor 4 true" \
	"$work/floor 5 true" \
	"$work/floor 6 true" \
	"$work/floor 7 true" \
	"$airlock run --policy $work/nofsync.json -- true" \
	"$airlock run -- true"
names="\`true\`|\`unshare -Urmpfn true\`|bubblewrap: \`$bwrap_cmd\`|floor 0: fork, vfork + execve|floor 1: + clone3 with airlock's 7 namespaces, uid/gid maps|floor 2: + airlock's mounts and pivot_root|floor 3: + lo up, hostname, capabilities dropped|floor 4: + no_new_privs, Landlock|floor 5: + airlock's seccomp program (the whole quarantine, no plan, no receipt)|floor 6: + the run's cgroups, output on pipes, the listener polled by the parent|floor 7: + a durable receipt (one 1 KiB append + fdatasync)|\`airlock run -- true\`, receipts.fsync=false|\`airlock run -- true\` (receipt synced)"

echo "## The kernel's floor for the quarantine (bench/quarantine_floor.sh)"
echo
echo "$(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Each median is over $rounds interleaved rounds of $runs runs."
echo
HYPERFINE_FLAGS="-i" hyperfine_rounds "$work/floor.json" "$rounds" "$runs" "$@"
t_unshare=$(median_ms "$work/floor.json" 1)
t_bwrap=$(median_ms "$work/floor.json" 2)
t_floor=$(median_ms "$work/floor.json" 8)
t_floor7=$(median_ms "$work/floor.json" 10)
echo "| command | median ms | vs bubblewrap | vs \`unshare -Urmpfn\` | vs floor 5 | vs floor 7 |"
echo "|---|---:|---:|---:|---:|---:|"
i=0
echo "$names" | tr '|' '\n' | while IFS= read -r name; do
	t=$(median_ms "$work/floor.json" "$i")
	echo "| $name | $t | $(ratio "$t" "$t_bwrap") | $(ratio "$t" "$t_unshare") | $(ratio "$t" "$t_floor") | $(ratio "$t" "$t_floor7") |"
	i=$((i + 1))
done
echo
echo "Each step of floor 7, median of 100 runs (us; \`quarantine_floor -t 7 true\`):"
echo
n=0
while [ "$n" -lt 100 ]; do
	"$work/floor" -t 7 true 2>>"$work/steps" || true
	n=$((n + 1))
done
echo "| step | median us |"
echo "|---|---:|"
tr ',' '\n' <"$work/steps" | cut -d= -f1 | awk '!seen[$0]++' | while IFS= read -r step; do
	med=$(tr ',' '\n' <"$work/steps" | awk -F= -v k="$step" '$1 == k { print $2 }' | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "| $step | $med |"
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."

#!/bin/sh
# One durable write per run (issue 22, docs/bench22/durable.md):
#   `airlock run --sandbox=none -- true` (receipts fsynced: the default),
#   with BASE (an airlock built from the commit before) and with this build,
#   against the floor (bench/append_floor.c: posix_spawn + wait + one ~1 KiB
#   O_APPEND write + fdatasync), interleaved in one run;
#   this build with receipts.fsync off (what a run costs apart from syncs);
#   8 processes finishing 12 runs each at once (group commit), BASE and
#   this build;
#   the fsync/fdatasync calls of one run (strace -f -c), BASE and this build.
#   bench/durable.sh [BUILD_DIR [BASE_AIRLOCK]]   (default: build-bench)
# DURABLE_ROUNDS, DURABLE_RUNS: hyperfine_rounds' rounds and runs (10, 30).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build-bench}
base=${2:-}
airlock=$(bench_build_here "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/append_floor" bench/append_floor.c
rounds=${DURABLE_ROUNDS:-10}
runs=${DURABLE_RUNS:-30}
mkdir -p "$work/ws"
cd "$work/ws"
printf '{"schema": "airlock.policy/1", "receipts": {"fsync": false}}\n' >"$work/nofsync.json"
# P processes running N runs each at once, in a fresh state directory.
cat >"$work/conc.sh" <<'EOF2'
#!/bin/sh
a=$1 st=$2 p=$3 n=$4
rm -rf "$st"
AIRLOCK_STATE_DIR=$st "$a" run --sandbox=none -- true >/dev/null
i=0
while [ "$i" -lt "$p" ]; do
	(j=0; while [ "$j" -lt "$n" ]; do AIRLOCK_STATE_DIR=$st "$a" run --sandbox=none -- true >/dev/null; j=$((j + 1)); done) &
	i=$((i + 1))
done
wait
EOF2
chmod +x "$work/conc.sh"

echo "## One durable write per run"
echo
echo "load average before: $(cat /proc/loadavg)"
echo
# Each airlock has its own state directory (a fresh one: the first run
# signs a checkpoint; the warm-up takes it), named by --state-dir: an
# `env VAR=... airlock` would time one exec more than the floor does
# (0.5-1.4 ms here, a third of the gap).
set -- "$work/append_floor $work/floor.log true" \
	"$airlock run --state-dir $work/state-new --sandbox=none -- true" \
	"$airlock run --state-dir $work/state-nofsync --sandbox=none --policy $work/nofsync.json -- true"
[ -z "$base" ] || set -- "$@" "$base run --state-dir $work/state-base --sandbox=none -- true"
hyperfine_rounds "$work/durable.json" "$rounds" "$runs" "$@"
floor=$(median_ms "$work/durable.json" 0)
new=$(median_ms "$work/durable.json" 1)
echo "| command | median, ms | / floor |"
echo "|---|---:|---:|"
echo "| floor: posix_spawn + wait + 1 KiB O_APPEND write + fdatasync (bench/append_floor.c) | $floor | 1.00 |"
nosync=$(median_ms "$work/durable.json" 2)
echo "| \`airlock run --sandbox=none -- true\`, this build | $new | $(ratio "$new" "$floor") |"
echo "| the same with \`receipts.fsync\` off (no sync at all) | $nosync | $(ratio "$nosync" "$floor") |"
if [ -n "$base" ]; then
	old=$(median_ms "$work/durable.json" 3)
	echo "| \`airlock run --sandbox=none -- true\`, base | $old | $(ratio "$old" "$floor") |"
	echo
	echo "this build / base: $(ratio "$new" "$old")"
fi
echo
echo "load average after: $(cat /proc/loadavg)"
echo
if [ -n "$base" ]; then
	echo "### 8 processes, 12 runs each, at once"
	echo
	hyperfine_rounds "$work/conc.json" 3 5 "$work/conc.sh $airlock $work/conc-new 8 12" \
		"$work/conc.sh $base $work/conc-base 8 12"
	cn=$(median_ms "$work/conc.json" 0) cb=$(median_ms "$work/conc.json" 1)
	echo "| airlock | 96 runs, ms |"
	echo "|---|---:|"
	echo "| this build | $cn |"
	echo "| base | $cb |"
	echo
	echo "this build / base: $(ratio "$cn" "$cb"); load average after: $(cat /proc/loadavg)"
	echo
fi
echo "### Syncs of one run (strace -f -c, the 40th run of a state directory)"
echo
echo "| airlock | fsync | fdatasync |"
echo "|---|---:|---:|"
for a in "$airlock" ${base:+"$base"}; do
	st=$work/strace-state
	rm -rf "$st"
	i=0
	while [ "$i" -lt 39 ]; do
		AIRLOCK_STATE_DIR=$st "$a" run --sandbox=none -- true >/dev/null
		i=$((i + 1))
	done
	AIRLOCK_STATE_DIR=$st strace -f -c -e trace=fsync,fdatasync -o "$work/strace.txt" \
		"$a" run --sandbox=none -- true >/dev/null
	fs=$(awk '$NF == "fsync" { print $4 }' "$work/strace.txt")
	fds=$(awk '$NF == "fdatasync" { print $4 }' "$work/strace.txt")
	echo "| \`$a\` | ${fs:-0} | ${fds:-0} |"
done

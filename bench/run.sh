#!/bin/sh
# airlock's benchmarks, side by side with what a user would run instead, in
# one run on this machine. Prints a Markdown report (docs/BENCHMARKS.md).
#   bench/run.sh [BUILD_DIR]     (default: build-bench, a release build)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
scripts/deps.sh --bench
build=${1:-build-bench}
airlock=$(bench_build_here "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$PWD
cc -O2 -o "$work/spawn_floor" bench/spawn_floor.c
# Runs happen in a scratch workspace: airlock's read-only paths that do not
# exist yet get placeholders in the workspace while a run lasts
# (docs/sandbox.md), which a checkout should not see.
mkdir -p "$work/ws"
cd "$work/ws"
export AIRLOCK_STATE_DIR="$work/state"
printf '{"schema": "airlock.policy/1", "receipts": {"fsync": false}}\n' >"$work/nofsync.json"
printf '{"argv": ["true"]}\n' >"$work/true.json"
python3=/usr/bin/python3 # Debian's, not a version-manager shim


echo "## Start-up: \`airlock run -- true\`"
echo
bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc true"
# firejail as close to the same quarantine as its flags go.
firejail_cmd="firejail --quiet --noprofile --net=none --private-tmp --private-dev --caps.drop=all --nonewprivs --seccomp --read-only=/ true"
hyperfine_rounds "$work/start.json" 10 30 \
	"true" \
	"$work/spawn_floor true" \
	"$airlock run -- true" \
	"$airlock run --policy $work/nofsync.json -- true" \
	"$python3 $repo/bench/seed/quarantine_run.py $work/true.json $work/seed-receipt.json" \
	"$bwrap_cmd" \
	"$airlock run --sandbox=none -- true" \
	"$airlock run --sandbox=none --policy $work/nofsync.json -- true" \
	"$firejail_cmd"
t_true=$(median_ms "$work/start.json" 0)
t_floor=$(median_ms "$work/start.json" 1)
t_al=$(median_ms "$work/start.json" 2)
t_nofsync=$(median_ms "$work/start.json" 3)
t_seed=$(median_ms "$work/start.json" 4)
t_bwrap=$(median_ms "$work/start.json" 5)
t_none=$(median_ms "$work/start.json" 6)
t_none_nofsync=$(median_ms "$work/start.json" 7)
t_firejail=$(median_ms "$work/start.json" 8)
echo "| command | median ms | vs bare true | vs spawn floor |"
echo "|---|---:|---:|---:|"
echo "| \`true\` | $t_true | 1.00 | |"
echo "| spawn floor (posix_spawn + wait, bench/spawn_floor.c) | $t_floor | $(ratio "$t_floor" "$t_true") | 1.00 |"
echo "| \`airlock run --sandbox=none -- true\` (receipt fsynced) | $t_none | $(ratio "$t_none" "$t_true") | $(ratio "$t_none" "$t_floor") |"
echo "| \`airlock run --sandbox=none -- true\` (receipts.fsync=false) | $t_none_nofsync | $(ratio "$t_none_nofsync" "$t_true") | $(ratio "$t_none_nofsync" "$t_floor") |"
echo "| \`airlock run -- true\`, full quarantine (receipt fsynced) | $t_al | $(ratio "$t_al" "$t_true") | $(ratio "$t_al" "$t_floor") |"
echo "| \`airlock run -- true\`, full quarantine (receipts.fsync=false) | $t_nofsync | $(ratio "$t_nofsync" "$t_true") | $(ratio "$t_nofsync" "$t_floor") |"
echo "| bubblewrap: \`$bwrap_cmd\` (no receipt) | $t_bwrap | $(ratio "$t_bwrap" "$t_true") | $(ratio "$t_bwrap" "$t_floor") |"
echo "| firejail: \`$firejail_cmd\` (no receipt) | $t_firejail | $(ratio "$t_firejail" "$t_true") | $(ratio "$t_firejail" "$t_floor") |"
echo "| seed runner (python3 quarantine_run.py) | $t_seed | $(ratio "$t_seed" "$t_true") | $(ratio "$t_seed" "$t_floor") |"
echo
echo "Full quarantine against bubblewrap: $(ratio "$t_nofsync" "$t_bwrap")x with receipts.fsync=false, $(ratio "$t_al" "$t_bwrap")x with the receipt fsynced (two disk flushes, $(echo "$t_al - $t_nofsync" | bc) ms here; bubblewrap writes no receipt). Against firejail: $(ratio "$t_nofsync" "$t_firejail")x and $(ratio "$t_al" "$t_firejail")x."
echo "Without the quarantine, airlock's overhead over bare true: $(echo "$t_none - $t_true" | bc) ms; over the spawn floor: $(echo "$t_none - $t_floor" | bc) ms; fsync share: $(echo "$t_none - $t_none_nofsync" | bc) ms."
echo
/usr/bin/time -f '%M' -o "$work/rss" "$airlock" run -- true >/dev/null
echo "Peak RSS of \`airlock run -- true\` (supervisor, init and command; /usr/bin/time %M): $(cat "$work/rss") KiB."
echo

echo "## 1 GiB of output: \`head -c 1G /dev/zero\`"
echo
measure() { # label, command...
	label=$1
	shift
	/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>&1 || true
	# shellcheck disable=SC2046 # two numbers: seconds and kilobytes
	set -- $(cat "$work/time")
	echo "| $label | $1 | $2 |"
}
printf '{"argv": ["head", "-c", "1G", "/dev/zero"], "timeout_sec": 60}\n' >"$work/big.json"
echo "| command | seconds | peak RSS KiB |"
echo "|---|---:|---:|"
measure "\`head -c 1G /dev/zero > /dev/null\`" sh -c 'head -c 1G /dev/zero > /dev/null'
measure "\`head -c 1G /dev/zero | cat > /dev/null\`" sh -c 'head -c 1G /dev/zero | cat > /dev/null'
measure "\`airlock run -- head -c 1G /dev/zero\`" "$airlock" run -- head -c 1G /dev/zero
measure "\`airlock run --spill -- head -c 1G /dev/zero\` (64 MiB spill cap)" "$airlock" run --spill -- head -c 1G /dev/zero
measure "seed runner" "$python3" "$repo/bench/seed/quarantine_run.py" "$work/big.json" "$work/seed-big.json"
echo

echo "## 1,000 concurrent runs from 8 parallel shells"
echo
rm -rf "$AIRLOCK_STATE_DIR"
start=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8; do
	(for _ in $(seq 1 125); do "$airlock" run -- true >/dev/null; done) &
done
wait
end=$(date +%s%N)
# shellcheck disable=SC2010 # receipt files are named by number
receipts=$(ls "$AIRLOCK_STATE_DIR/receipts" | grep -c '\.json$')
valid=0
for f in "$AIRLOCK_STATE_DIR"/receipts/*.json; do
	jq -e '.status == "exited" and .exit_code == 0' "$f" >/dev/null && valid=$((valid + 1))
done
distinct=$(jq -s 'map(.id) | unique | length' "$AIRLOCK_STATE_DIR/index.jsonl")
echo "| receipts | valid | distinct ids in index | wall seconds |"
echo "|---:|---:|---:|---:|"
echo "| $receipts | $valid | $distinct | $(echo "scale=2; ($end - $start) / 1000000000" | bc) |"
echo

# The gate at 10 and at 100,000 receipts, against the seed gate.py.
"$repo/bench/gate.sh" "$airlock"

# The hook per tool call against cat of its payload; a routed true against
# bubblewrap (BENCH_BEFORE: an older airlock timed in the same rounds).
# shellcheck disable=SC2086 # no BENCH_BEFORE: no argument at all
"$repo/bench/hookcost.sh" "$airlock" ${BENCH_BEFORE:-}

# Dry runs against the seed pipeline, and apply against re-running.
"$repo/bench/dryrun.sh" "$airlock"

# What a dry run's trace of workspace path calls costs, against airlock run
# and the command alone.
"$repo/bench/dryrun-trace.sh" "$airlock"

# The cost of mediating connect() where Landlock cannot scope Unix sockets.
"$repo/bench/connect.sh" "$airlock"

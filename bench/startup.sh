#!/bin/sh
# Start-up of the quarantine (issue 22, goal 2): `airlock run -- true` before
# and after, with the receipt's syncs on (the default) and off
# (receipts.fsync=false: bubblewrap writes no receipt), against `true`,
# `unshare -Urmpfn true` and bubblewrap with the flags of bench/run.sh, in
# ONE interleaved run (hyperfine_rounds). Twice: back to back, and with a
# pause before each start, as an agent's commands come (a kernel lock whose
# grace period a burst of starts shares is paid in full by a lone one).
# Prints a Markdown section (docs/bench22/startup.md).
#   bench/startup.sh [BEFORE_COMMIT] [ROUNDS] [RUNS]
# BEFORE_COMMIT defaults to 78c9ee8, main before issue 22. The current tree
# is built in build-bench (as bench/run.sh does), the old one from
# `git archive` in build-bench/startup-before.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
before_commit=${1:-78c9ee8}
rounds=${2:-5}
runs=${3:-20}
bench_need_tools

build="build-bench"
after=$(bench_build_here "$build" airlock)
before=$(bench_build_commit "$before_commit" "$PWD/$build/startup-before")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A scratch workspace and state directory, as bench/run.sh.
mkdir -p "$work/ws"
cd "$work/ws"
export AIRLOCK_STATE_DIR="$work/state"
printf '{"schema": "airlock.policy/1", "receipts": {"fsync": false}}\n' >"$work/nofsync.json"
printf '#!/bin/sh\nsleep 0.05\n' >"$work/pause"
chmod +x "$work/pause"

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc true"
set -- \
	"true" \
	"unshare -Urmpfn true" \
	"$bwrap_cmd" \
	"$before run -- true" \
	"$before run --policy $work/nofsync.json -- true" \
	"$after run -- true" \
	"$after run --policy $work/nofsync.json -- true"
names="\`true\`|\`unshare -Urmpfn true\`|bubblewrap: \`$bwrap_cmd\` (no receipt)|before ($before_commit): \`airlock run -- true\` (receipt fsynced)|before ($before_commit): \`airlock run -- true\` (receipts.fsync=false)|after: \`airlock run -- true\` (receipt fsynced)|after: \`airlock run -- true\` (receipts.fsync=false)"

table() { # json
	t_unshare=$(median_ms "$1" 1)
	t_bwrap=$(median_ms "$1" 2)
	echo "| command | median ms | vs bubblewrap | vs \`unshare -Urmpfn\` |"
	echo "|---|---:|---:|---:|"
	i=0
	echo "$names" | tr '|' '\n' | while IFS= read -r name; do
		t=$(median_ms "$1" "$i")
		echo "| $name | $t | $(ratio "$t" "$t_bwrap") | $(ratio "$t" "$t_unshare") |"
		i=$((i + 1))
	done
}

echo "## Start-up: \`airlock run -- true\` (issue 22)"
echo
echo "$(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Each median is over $rounds interleaved rounds of $runs runs (bench/startup.sh)."
echo
# -i: on a host where other runs create and delete paths the quarantine
# hides, a run now and then fails to mount one (exit 125); it is timed too.
echo "### Back to back"
echo
HYPERFINE_FLAGS="-i" hyperfine_rounds "$work/burst.json" "$rounds" "$runs" "$@"
table "$work/burst.json"
echo
echo "### With a 50 ms pause before each start (hyperfine --prepare)"
echo
HYPERFINE_FLAGS="-i --prepare $work/pause" hyperfine_rounds "$work/spaced.json" "$rounds" "$runs" "$@"
table "$work/spaced.json"
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."

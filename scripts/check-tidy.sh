#!/bin/sh
# Runs clang-tidy (.clang-tidy's checks) over every C file of src/, with the
# compile commands of build-clang (scripts/test.sh builds it; pass another
# build directory as $1). Fails when any check reports.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-clang}
command -v clang-tidy >/dev/null || { echo "check-tidy: clang-tidy is missing (scripts/deps.sh)"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "check-tidy: no $build/compile_commands.json (meson setup $build)"; exit 1; }

# Two at a time: the machines this runs on have two cores.
mkdir -p build-logs
if find src -name '*.c' | sort | xargs -n 4 -P 2 clang-tidy -p "$build" --quiet >build-logs/tidy.log 2>&1; then
	exit 0
fi
grep -E 'warning:|error:' build-logs/tidy.log | sort -u
echo "check-tidy: findings above (build-logs/tidy.log); fix them or suppress narrowly (.clang-tidy)"
exit 1

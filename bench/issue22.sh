#!/bin/sh
# Issue 22's table in one run: each row side by side with its floor or peer,
# and with BASE (an airlock built before the issue), each in its own
# interleaved hyperfine run (bench/lib.sh), one after the other:
#   1. one durable write per run: `run --sandbox=none -- true` against
#      posix_spawn + one ~1 KiB append + fdatasync      (bench/durable.sh)
#   2. start-up: `run -- true` against bubblewrap and `unshare -Urmpfn`
#                                                        (bench/startup.sh)
#   3. hooks: `hook H pre-tool-use` against `cat` of the payload
#                                                        (bench/hooks.sh)
#   4. `ledger verify` against `sha256sum` of the log   (bench/verify.sh)
#   5. a risk-3 permit against one `airlock run`        (bench/permit.sh)
#   and a large executable's run against the executable alone, before and
#   after the digest cache                               (bench/exehash.sh)
# Prints Markdown (docs/BENCHMARKS.md, "Issue 22"), with the load average
# before each part.
#   bench/issue22.sh [BASE_COMMIT]      (default 78c9ee8, main before issue 22)
set -eu
cd "$(dirname "$0")/.."
base_commit=${1:-78c9ee8}
scripts/deps.sh --bench >/dev/null
build="build-bench"
. bench/lib.sh
bench_build_here "$build" >/dev/null
base=$(bench_build_commit "$base_commit" "$PWD/$build/issue22-base")

# Each part starts after the one before has settled (bench/lib.sh).
load() { bench_settle; echo "Load average before this part: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)."; echo; }

echo "# Issue 22: the door's costs against the kernel's"
echo
echo "BASE is $base_commit; this build is $(git rev-parse --short HEAD)."
echo
load
sh bench/durable.sh "$build" "$base"
echo
load
sh bench/startup.sh "$base_commit"
echo
load
sh bench/hooks.sh "$build/airlock" "$base"
echo
load
sh bench/verify.sh "$build" "$base"
echo
load
PERMIT_BENCH_ONLY=interleaved sh bench/permit.sh "$build/airlock" 10 "$base"
echo
load
sh bench/exehash.sh 7e7c89a 3 10

#!/bin/sh
# The executable's digest (issue 22, task exedigest30): every run records the
# SHA-256 of the file it starts; for node (99 MB) that read was ~18 ms of CPU
# a run. With the digest cache (core/store/exedigest.h) a run of an
# unchanged large executable reads none of it. Compares, in ONE interleaved
# run (hyperfine_rounds): `node -e 1` alone, then before and after with
# --sandbox=none and in the quarantine; the same for `true` (below the
# cache's size: it must not get slower) and for scripts of 256 KiB (the
# threshold), 1 and 4 MiB. Prints a Markdown section (docs/bench22/exehash.md)
# with the load average.
#   bench/exehash.sh [BEFORE_COMMIT] [ROUNDS] [RUNS]
# BEFORE_COMMIT defaults to 7e7c89a (main before the cache), built from
# `git archive` in build-bench/exehash-before; AIRLOCK_BEFORE=path instead
# names a binary already built (e.g. main's build-release/airlock). The
# current tree is built in build-bench.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
before_commit=${1:-7e7c89a}
rounds=${2:-3}
runs=${3:-10}
bench_need_tools
node=$(command -v node) || {
	echo "exehash: node is missing (apt-get install nodejs)" >&2
	exit 1
}

# node reads NODE_* at its start (NODE_EXTRA_CA_CERTS: ~30 ms of
# certificates); airlock's environment allowlist passes none of them, so
# node alone runs without them too.
unset NODE_EXTRA_CA_CERTS NODE_OPTIONS NODE_PATH

build="build-bench"
after=$(bench_build_here "$build" airlock)
before=${AIRLOCK_BEFORE:-$(bench_build_commit "$before_commit" "$PWD/$build/exehash-before")}

work=$(mktemp -d "${TMPDIR:-/var/tmp}/exehash.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
cd "$work/ws"
case "$(stat -f -c %T .)" in
ext2/ext3) ;;
*) echo "exehash: $(stat -f -c %T .) keeps no cache: set TMPDIR to an ext4 directory" >&2 ;;
esac
# Scripts of 256 KiB (the smallest the cache keeps), 1 and 4 MiB: a line
# that exits, then a comment. Written back and old enough to be cached once
# the warm-up ran (the cache stores files settled for 2 s, with no page
# waiting to be written).
for kib in 256 1024 4096; do
	{
		printf '#!/bin/sh\nexit 0\n# '
		head -c $((kib * 1024)) /dev/zero | tr '\0' 'x'
	} >"exe$kib"
	chmod 755 "exe$kib"
	sync "exe$kib"
done
sleep 2.5
# Each binary its own state directory, as two installations.
mkdir -p "$work/before" "$work/after"
b="env AIRLOCK_STATE_DIR=$work/before $before"
a="env AIRLOCK_STATE_DIR=$work/after $after"

set -- \
	"$node -e 1" \
	"$b run --sandbox=none -- $node -e 1" \
	"$a run --sandbox=none -- $node -e 1" \
	"$b run -- $node -e 1" \
	"$a run -- $node -e 1" \
	"$b run --sandbox=none -- true" \
	"$a run --sandbox=none -- true" \
	"$b run -- true" \
	"$a run -- true" \
	"$b run --sandbox=none -- ./exe256" \
	"$a run --sandbox=none -- ./exe256" \
	"$b run --sandbox=none -- ./exe1024" \
	"$a run --sandbox=none -- ./exe1024" \
	"$b run --sandbox=none -- ./exe4096" \
	"$a run --sandbox=none -- ./exe4096"
names="\`node -e 1\`|before: \`run --sandbox=none -- node -e 1\`|after: \`run --sandbox=none -- node -e 1\`|before: \`run -- node -e 1\`|after: \`run -- node -e 1\`|before: \`run --sandbox=none -- true\`|after: \`run --sandbox=none -- true\`|before: \`run -- true\`|after: \`run -- true\`|before: \`run --sandbox=none -- ./exe256\` (256 KiB)|after: \`run --sandbox=none -- ./exe256\` (256 KiB)|before: \`run --sandbox=none -- ./exe1024\` (1 MiB)|after: \`run --sandbox=none -- ./exe1024\` (1 MiB)|before: \`run --sandbox=none -- ./exe4096\` (4 MiB)|after: \`run --sandbox=none -- ./exe4096\` (4 MiB)"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
hyperfine_rounds "$work/out.json" "$rounds" "$runs" "$@"
# The CPU each takes (hyperfine's means of user and system time, the
# command's tree included): the hash was CPU on the supervisor's core.
hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/cpu.json" \
	"$node -e 1" "$b run --sandbox=none -- $node -e 1" "$a run --sandbox=none -- $node -e 1" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "## The executable's digest: \`airlock run -- node -e 1\`"
echo
echo "before: $before_commit${AIRLOCK_BEFORE:+ ($AIRLOCK_BEFORE)}; after: $(git -C "$OLDPWD" rev-parse --short HEAD 2>/dev/null || echo this tree)."
echo "$rounds interleaved rounds of $runs runs (bench/exehash.sh); load average $load_before before, $load_after after."
echo
echo "| command | median ms | vs the line before |"
echo "|---|---:|---:|"
i=0
prev=""
echo "$names" | tr '|' '\n' | while IFS= read -r name; do
	t=$(median_ms "$work/out.json" "$i")
	case "$name" in
	after*) echo "| $name | $t | $(ratio "$t" "$prev") |" ;;
	*) echo "| $name | $t | |" ;;
	esac
	prev=$t
	i=$((i + 1))
done
echo
echo "CPU (ms, mean of $runs runs):"
echo
echo "| command | user | system |"
echo "|---|---:|---:|"
for i in 0 1 2; do
	jq -r ".results[$i] | \"| \\(.command | sub(\"env AIRLOCK_STATE_DIR=[^ ]* \"; \"\")) | \\(.user * 1000 | round) | \\(.system * 1000 | round) |\"" "$work/cpu.json"
done

#!/bin/sh
# The quarantine's cost before and after issue 10 (what a run leaves for the
# host: placeholders, setuid files, sockets, secrets, workspace checks),
# against bubblewrap with the same namespaces and mounts, in ONE hyperfine
# run: `true`, and `git status` in a committed, clean 10,000-file repository.
# Prints a Markdown section for docs/BENCHMARKS.md; hyperfine's own Markdown
# and JSON go to build-bench/quarantine.{md,json}.
#   bench/quarantine.sh [BEFORE_COMMIT] [RUNS]
# BEFORE_COMMIT defaults to 308f8ff, the code before issue 10. The current
# tree is built in build-bench (as bench/run.sh does), the old one from
# `git archive` in build-bench/quarantine-before.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
before_commit=${1:-308f8ff}
runs=${2:-20}
bench_need_tools

# Both builds are release builds with the project's own flags.
build="build-bench"
after=$(bench_build_here "$build" airlock)
before=$(bench_build_commit "$before_commit" "$PWD/$build/quarantine-before")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 10,000 files of a few bytes in 100 directories, committed: `git status`
# walks and stats them all and finds nothing to report.
ws=$work/repo
mkdir -p "$ws"
i=0
while [ "$i" -lt 100 ]; do
	mkdir "$ws/d$i"
	(cd "$ws/d$i" && seq 0 99 | sed 's/.*/echo & >f&.txt/' | sh)
	i=$((i + 1))
done
git -C "$ws" init -q
git -C "$ws" add -A
git -C "$ws" -c user.name=bench -c user.email=bench@localhost commit -qm files
files=$(git -C "$ws" ls-files | wc -l)
[ "$files" -eq 10000 ]
git -C "$ws" status --porcelain | grep -q . && { echo "the repository is not clean" >&2; exit 1; }
mkdir "$work/state-before" "$work/state-after"
printf '{"schema": "airlock.policy/1", "receipts": {"fsync": false}}\n' >"$work/nofsync.json"

# bubblewrap with what the quarantine does by namespaces and mounts: every
# namespace, no capabilities, a read-only root, a private /dev, /proc and
# /tmp, then the workspace writable. It does not hide secrets, keep paths
# read-only in the workspace, load Landlock or seccomp, or set limits.
bwrap="bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $ws $ws --chdir $ws"
al_before="$before run --state-dir $work/state-before --cwd $ws"
al_after="$after run --state-dir $work/state-after --cwd $ws"
nofsync="--policy $work/nofsync.json"
load=$(cut -d' ' -f1-3 /proc/loadavg)
# Every command must succeed (no -i): a git status that fails fast would
# time nothing. Commands without a shell (-N).
hyperfine -N --warmup 3 --runs "$runs" \
	--export-json "$build/quarantine.json" --export-markdown "$build/quarantine.md" \
	-n "bwrap true" "$bwrap true" \
	-n "before true (no fsync)" "$al_before $nofsync -- true" \
	-n "after true (no fsync)" "$al_after $nofsync -- true" \
	-n "before true (fsync)" "$al_before -- true" \
	-n "after true (fsync)" "$al_after -- true" \
	-n "bwrap git status" "$bwrap git status" \
	-n "before git status (no fsync)" "$al_before $nofsync -- git status" \
	-n "after git status (no fsync)" "$al_after $nofsync -- git status" \
	-n "before git status (fsync)" "$al_before -- git status" \
	-n "after git status (fsync)" "$al_after -- git status" \
	>"$work/hyperfine.log" 2>&1 || { cat "$work/hyperfine.log" >&2; exit 1; }

j=$build/quarantine.json
row() { # label, index, index of bwrap, index of before (or -)
	t=$(median_ms "$j" "$2")
	b=$(median_ms "$j" "$3")
	sd=$(jq -r ".results[$2].stddev * 1000 | round" "$j")
	if [ "$4" = - ]; then
		echo "| $1 | $t | $sd | $(ratio "$t" "$b") | |"
	else
		echo "| $1 | $t | $sd | $(ratio "$t" "$b") | $(ratio "$t" "$(median_ms "$j" "$4")") |"
	fi
}
echo "## The quarantine before and after issue 10: \`true\` and \`git status\` in 10,000 files"
echo
echo "| command | median ms | stddev ms | vs bubblewrap | after / before |"
echo "|---|---:|---:|---:|---:|"
row "bubblewrap, \`true\`" 0 0 -
row "airlock before, \`true\`, receipts.fsync=false" 1 0 -
row "airlock after, \`true\`, receipts.fsync=false" 2 0 1
row "airlock before, \`true\`, receipt fsynced" 3 0 -
row "airlock after, \`true\`, receipt fsynced" 4 0 3
row "bubblewrap, \`git status\`" 5 5 -
row "airlock before, \`git status\`, receipts.fsync=false" 6 5 -
row "airlock after, \`git status\`, receipts.fsync=false" 7 5 6
row "airlock before, \`git status\`, receipt fsynced" 8 5 -
row "airlock after, \`git status\`, receipt fsynced" 9 5 8
echo
echo "One \`hyperfine -N --warmup 3 --runs $runs\` run; before is $(git rev-parse --short "$before_commit"), after is $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' with uncommitted changes'). Load average before the run: $load ($(nproc) CPUs). The repository: $files files in 100 directories, committed and clean (the before binary adds its placeholders \`.airlock\` and \`.envrc\` while it runs, so its \`git status\` lists two untracked files); bubblewrap: \`bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind WS WS --chdir WS\` (the workspace is bound after the private /tmp, which would hide it otherwise)."

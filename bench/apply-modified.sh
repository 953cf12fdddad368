#!/bin/sh
# `airlock apply` of a change set of 1,000 modified files, for two builds
# (e.g. the current one and an earlier commit's) interleaved in one run,
# side by side with `cp -a` of the same 1,000 files. Each build gets its own
# state directory and workspace of 1,000 files in d0..d9, and a dry run that
# appends a line to every one of them. Each apply is preceded by a rollback
# and each copy by removing the copy (neither timed), so every run starts
# from the same tree. Prints a Markdown section for docs/BENCHMARKS.md.
#   bench/apply-modified.sh AIRLOCK_NEW AIRLOCK_OLD [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
new=$(realpath "$1") old=$(realpath "$2") rounds=${3:-5}
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT

# A workspace of 1,000 files and a dry run of airlock $1 that modifies all
# of them; prints the dry run's id.
staged() { # airlock name
	ws="$work/ws-$2" && mkdir -p "$ws"
	(cd "$ws" && i=0 && while [ "$i" -lt 1000 ]; do
		mkdir -p "d$((i % 10))" && echo "file $i" > "d$((i % 10))/f$i" && i=$((i + 1)); done)
	# shellcheck disable=SC2016 # $f is the quarantined shell's
	AIRLOCK_STATE_DIR="$work/state-$2" "$1" dryrun --json --timeout 58s --workspace "$ws" \
		--cwd "$ws" --expect '**' -- sh -c 'for f in d*/f*; do echo more >> "$f"; done' | jq -r .id
}

idn=$(staged "$new" new)
ido=$(staged "$old" old)
n=$(jq '.changes | map(select(.change == "modified")) | length' "$work/state-new/dryruns/$idn/changeset.json")
[ "$n" -eq 1000 ] || { echo "the dry run modified $n files, not 1,000" >&2; exit 1; }
# The copy's source: the same 1,000 modified files, outside the dry run.
cp -a "$work/state-new/dryruns/$idn/upper" "$work/src"
sync
hyperfine_rounds "$work/apply.json" "$rounds" 2 \
	--prepare "sh -c 'AIRLOCK_STATE_DIR=$work/state-new $new rollback $idn >/dev/null 2>&1 || true'" \
	"env AIRLOCK_STATE_DIR=$work/state-new $new apply $idn" \
	--prepare "sh -c 'AIRLOCK_STATE_DIR=$work/state-old $old rollback $ido >/dev/null 2>&1 || true'" \
	"env AIRLOCK_STATE_DIR=$work/state-old $old apply $ido" \
	--prepare "rm -rf $work/copy" "cp -a $work/src $work/copy"
a=$(median_ms "$work/apply.json" 0)
b=$(median_ms "$work/apply.json" 1)
c=$(median_ms "$work/apply.json" 2)
echo "| command | median ms | / \`cp -a\` |"
echo "|---|---:|---:|"
echo "| \`airlock apply\`, after (\`$1\`) | $a | $(ratio "$a" "$c") |"
echo "| \`airlock apply\`, before (\`$2\`) | $b | $(ratio "$b" "$c") |"
echo "| \`cp -a\` of the same 1,000 files | $c | 1 |"
echo
echo "After / before: $(ratio "$a" "$b"). $rounds interleaved rounds of 2 runs each (3 warmups a round)."

#!/bin/sh
# `airlock apply` of a change set of 1,000 and of 10,000 new files, side by
# side with `cp -a` of the same files, in one run. The files are made by
# a dry run in ten existing directories, so each is its own operation (none
# moves with a new directory). Each apply is preceded by a rollback and each
# copy by removing the copy (neither timed), so every run starts from the
# same tree. Prints a Markdown section for docs/BENCHMARKS.md.
#   bench/apply.sh AIRLOCK_BINARY [LABEL]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$1
label=${2:-airlock apply}
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
export AIRLOCK_STATE_DIR="$work/state"

# A dry run that writes n small files into d0..d9 of the workspace ws;
# prints its id.
staged() { # ws n
	mkdir -p "$1" && (cd "$1" && for i in 0 1 2 3 4 5 6 7 8 9; do mkdir -p d$i; done)
	"$airlock" dryrun --json --timeout 58s --workspace "$1" --cwd "$1" --expect 'd*' -- sh -c \
		"i=0; while [ \$i -lt $2 ]; do echo \"file \$i\" > d\$((i % 10))/f\$i; i=\$((i + 1)); done" |
		jq -r .id
}

for n in 1000 10000; do
	id=$(staged "$work/ws$n" "$n")
	up="$AIRLOCK_STATE_DIR/dryruns/$id/upper"
	# The copy's source: the same files, outside the dry run.
	cp -a "$up" "$work/src$n"
	sync
	runs=$([ "$n" -eq 1000 ] && echo 10 || echo 5)
	hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/apply$n.json" \
		--prepare "sh -c '$airlock rollback $id >/dev/null 2>&1 || true'" "$airlock apply $id" \
		--prepare "rm -rf $work/copy$n" "cp -a $work/src$n $work/copy$n" >/dev/null
	eval "a$n=\$(median_ms \"$work/apply$n.json\" 0)"
	eval "c$n=\$(median_ms \"$work/apply$n.json\" 1)"
done
echo "## Apply: a change set of 1,000 and 10,000 new files, against \`cp -a\`"
echo
echo "| files | \`$label\` median ms | \`cp -a\` of the same files median ms | apply / cp -a |"
echo "|---:|---:|---:|---:|"
# shellcheck disable=SC2154 # a1000 ... c10000 are set by the eval above
echo "| 1,000 | $a1000 | $c1000 | $(ratio "$a1000" "$c1000") |"
# shellcheck disable=SC2154
echo "| 10,000 | $a10000 | $c10000 | $(ratio "$a10000" "$c10000") |"
echo
echo "\`$label\` at 10,000 files against 1,000: $(ratio "$a10000" "$a1000")x (linear would be 10x). Apply checks each staged file's SHA-256 against the change set and that each path is still absent, writes and syncs its journal, moves each file with one \`renameat2\` resolved by \`openat2\`, strips the overlay's attributes, and ends with a \`syncfs\`; \`cp -a\` only copies. Each apply is preceded by a rollback, each copy by removing the copy (not timed). On ext4 (/var/tmp)."

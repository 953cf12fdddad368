#!/bin/sh
# `airlock dryrun` on generated trees of 1,000 and 100,000 small files with
# one file changed, side by side with the seed's pipeline (cp -a of the
# project, then find | sort | xargs sha256sum before and after the command),
# in one run. Prints a Markdown section for docs/BENCHMARKS.md.
#   bench/dryrun.sh AIRLOCK_BINARY
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$1
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
export AIRLOCK_STATE_DIR="$work/state"

make_tree() { # dir files
	mkdir -p "$1"
	(cd "$1" && i=0 && while [ "$i" -lt $(($2 / 1000 > 0 ? $2 / 1000 : 1)) ]; do
		mkdir "d$i"; i=$((i + 1)); done)
	/usr/bin/python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
dirs = max(n // 1000, 1)
for i in range(n):
    with open(os.path.join(root, "d%d" % (i % dirs), "f%d" % i), "w") as f:
        f.write("file %d\n" % i)
PY
}

# The seed's pipeline, as its article runs it.
cat >"$work/seed.sh" <<'SH'
#!/bin/sh
set -e
tree=$1 snap=$2
cp -a "$tree" "$snap"
(cd "$snap" && find . -type f | sort | xargs sha256sum) >"$snap.before"
(cd "$snap" && echo changed >> d0/f0)
(cd "$snap" && find . -type f | sort | xargs sha256sum) >"$snap.after"
diff "$snap.before" "$snap.after" >/dev/null || true
rm -rf "$snap" "$snap.before" "$snap.after"
SH
chmod +x "$work/seed.sh"

make_tree "$work/t1k" 1000
make_tree "$work/t100k" 100000
sync

dry() { echo "$airlock dryrun --workspace $1 --cwd $1 --expect d0/f0 -- sh -c 'echo changed >> d0/f0'"; }
hyperfine -N --warmup 3 --runs 30 --export-json "$work/dry.json" "$(dry "$work/t1k")" "$(dry "$work/t100k")" >/dev/null
hyperfine -N --warmup 1 --runs 10 --export-json "$work/seed1k.json" "$work/seed.sh $work/t1k $work/s1k" >/dev/null
hyperfine -N --warmup 1 --runs 3 --export-json "$work/seed100k.json" "$work/seed.sh $work/t100k $work/s100k" >/dev/null
d1k=$(median_ms "$work/dry.json" 0)
d100k=$(median_ms "$work/dry.json" 1)
s1k=$(median_ms "$work/seed1k.json" 0)
s100k=$(median_ms "$work/seed100k.json" 0)
verdict=$(AIRLOCK_STATE_DIR="$work/state" sh -c "$(dry "$work/t100k")" | head -1)
echo "## Dry run: one file changed in a tree of small files"
echo
echo "| files | \`airlock dryrun\` median ms | seed pipeline (cp -a + sha256sum before and after) median ms | seed / airlock |"
echo "|---:|---:|---:|---:|"
echo "| 1,000 | $d1k | $s1k | $(ratio "$s1k" "$d1k") |"
echo "| 100,000 | $d100k | $s100k | $(ratio "$s100k" "$d100k") |"
echo
echo "\`airlock dryrun\` at 100,000 files against 1,000: $(ratio "$d100k" "$d1k")x (target: within 2x; the cost follows the change, not the tree). The dry run's own output: \`$verdict\`. Both trees are on ext4 (/var/tmp); the seed's numbers include its \`rm -rf\` of the copy."

# Applying a change set of 1,000 modified files, against running the command
# again (directly, and through airlock run): apply moves what the dry run
# made; a re-run repeats the work and may not do the same thing twice.
make_tree "$work/t1000" 1000
mod="for f in d0/*; do echo changed >> \$f; done"
id=$("$airlock" dryrun --json --workspace "$work/t1000" --cwd "$work/t1000" --expect d0 -- sh -c "$mod" | jq -r .id)
hyperfine -N --warmup 2 --runs 20 --export-json "$work/apply.json" \
	--prepare "sh -c '$airlock rollback $id >/dev/null || true'" "$airlock apply $id" >/dev/null
hyperfine -N --warmup 2 --runs 20 --export-json "$work/rerun.json" \
	"sh -c 'cd $work/t1000 && $mod'" \
	"$airlock run --workspace $work/t1000 --cwd $work/t1000 -- sh -c '$mod'" >/dev/null
a=$(median_ms "$work/apply.json" 0)
r1=$(median_ms "$work/rerun.json" 0)
r2=$(median_ms "$work/rerun.json" 1)
echo
echo "## Apply: a change set of 1,000 modified files"
echo
echo "| | median ms |"
echo "|---|---:|"
echo "| \`airlock apply\` (checks 1,000 hashes, journal, 2,000 renames, syncfs) | $a |"
echo "| re-running the command directly (\`sh\`, no checks, no receipt) | $r1 |"
echo "| re-running it through \`airlock run\` (quarantined, receipt) | $r2 |"
echo
echo "Each apply is preceded by a rollback (not timed) so it starts from the same tree."


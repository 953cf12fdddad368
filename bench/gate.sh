#!/bin/sh
# `airlock gate` at 10 and at 100,000 receipts with one open failure, side by
# side with the seed's gate.py at the same counts, in one run; then
# `airlock classify` and `airlock hook claude pre-tool-use` against bare
# `true`, and against BEFORE (an airlock built before issue 12) when given.
# Prints Markdown sections for docs/BENCHMARKS.md.
#   bench/gate.sh AIRLOCK_BINARY [BEFORE_BINARY]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$1
before=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3=/usr/bin/python3
mkdir -p "$work/ws"

# A state directory with N receipts: N-1 successes copied from a real one
# (writing 100,000 through airlock would take a quarter of an hour here),
# then a real failed run through airlock, which opens the failure.
make_state() { # dir count
	AIRLOCK_STATE_DIR="$1" "$airlock" run --sandbox=none --cwd "$work/ws" -- true >/dev/null
	"$python3" - "$1" "$2" <<'PY'
import json, os, sys
state, count = sys.argv[1], int(sys.argv[2])
template = json.load(open(os.path.join(state, "receipts", "1.json")))
index = open(os.path.join(state, "index.jsonl"), "a")
for i in range(2, count):
    template["id"] = i
    with open(os.path.join(state, "receipts", "%d.json" % i), "w") as f:
        json.dump(template, f)
    index.write(json.dumps({"id": i, "argv": template["argv"], "status": "exited", "exit_code": 0}) + "\n")
open(os.path.join(state, "seq"), "w").write("%020d\n" % (count - 1))
PY
	AIRLOCK_STATE_DIR="$1" "$airlock" run --sandbox=none --cwd "$work/ws" -- false >/dev/null || true
}
# The seed's receipt directory: one JSON file per receipt, the newest failed.
make_seed() { # dir count
	"$python3" - "$1" "$2" <<'PY'
import json, os, sys
d, count = sys.argv[1], int(sys.argv[2])
os.makedirs(d)
for i in range(1, count + 1):
    with open(os.path.join(d, "%08d.jsonl" % i), "w") as f:
        json.dump({"id": i, "argv": ["make", "test"], "exit": 1 if i == count else 0}, f)
PY
}
make_state "$work/s10" 10
make_state "$work/s100k" 100000
if [ "${BENCH_SEED:-1}" = 1 ]; then
	make_seed "$work/seed10" 10
	make_seed "$work/seed100k" 100000
fi
# shellcheck disable=SC2012 # receipt files are named by number
n=$(ls "$work/s100k/receipts" | wc -l)

# Interleaved rounds: the two counts share the machine's drift alike.
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/gate.json" 10 20 \
	"$airlock gate --state-dir $work/s10 --cwd $work/ws" \
	"$airlock gate --state-dir $work/s100k --cwd $work/ws"
g10=$(median_ms "$work/gate.json" 0)
g100k=$(median_ms "$work/gate.json" 1)
s10=- s100k=-
# BENCH_SEED=0 skips the seed's gate.py (seconds per call at 100,000).
if [ "${BENCH_SEED:-1}" = 1 ]; then
	RECEIPT_DIR="$work/seed10" hyperfine -N -i --warmup 3 --runs 20 --export-json "$work/seed10.json" \
		"$python3 bench/seed/gate.py" >/dev/null
	RECEIPT_DIR="$work/seed100k" hyperfine -N -i --warmup 1 --runs 5 --export-json "$work/seed100k.json" \
		"$python3 bench/seed/gate.py" >/dev/null
	s10=$(median_ms "$work/seed10.json" 0)
	s100k=$(median_ms "$work/seed100k.json" 0)
fi
echo "## The gate: \`airlock gate\` with one open failure"
echo
echo "| receipts in the state directory | \`airlock gate\` median ms | seed \`gate.py\` median ms | seed / airlock |"
echo "|---:|---:|---:|---:|"
# shellcheck disable=SC2015 # echo does not fail
echo "| 10 | $g10 | $s10 | $([ "$s10" = - ] && echo - || ratio "$s10" "$g10") |"
# shellcheck disable=SC2015
echo "| 100,000 ($n receipt files) | $g100k | $s100k | $([ "$s100k" = - ] && echo - || ratio "$s100k" "$g100k") |"
echo
echo "\`airlock gate\` at 100,000 receipts against 10: $(ratio "$g100k" "$g10")x (target: within 1.2x, and under 2 ms). It lists one directory of open failures and never reads receipts; the seed's gate sorts every receipt file name on each call."
echo

# Classification and the pre-tool-use hook. hyperfine 1.15 has no --input,
# so a hook reads its payload through `sh -c 'exec ... <FILE'`, and the
# same `sh -c 'exec true <FILE'` is its baseline.
payload() { # file cwd command
	jq -n --arg cwd "$2" --arg cmd "$3" '{session_id: "bench", transcript_path: "/dev/null",
		cwd: $cwd, hook_event_name: "PreToolUse", tool_name: "Bash",
		tool_input: {command: $cmd, description: "bench"}, tool_use_id: "toolu_bench"}' >"$1"
}
mkdir -p "$work/hws" "$work/bin"
ln -s "$(readlink -f "$airlock")" "$work/bin/airlock"
AIRLOCK_STATE_DIR="$work/hstate" "$airlock" run --sandbox=none --cwd "$work/hws" -- false >/dev/null || true
# shellcheck disable=SC2012 # receipt files are named by number
open_id=$(ls "$work/hstate/receipts" | sed 's/\.json$//' | sort -n | tail -1)
payload "$work/idle.json" "$work/ws" "git status --short"
payload "$work/fix.json" "$work/hws" "airlock run --fixes $open_id --timeout 60s -- make test"
payload "$work/blocked.json" "$work/hws" "npm test"
bins=$airlock
[ -n "$before" ] && bins="$airlock $before"
set --
for b in $bins; do
	set -- "$@" "$b classify -- git status" \
		"$b classify --shell 'make test && git diff | head -5'" \
		"sh -c 'AIRLOCK_STATE_DIR=$work/nostate exec $b hook claude pre-tool-use <$work/idle.json'" \
		"sh -c 'PATH=$work/bin:\$PATH AIRLOCK_STATE_DIR=$work/hstate exec $b hook claude pre-tool-use <$work/fix.json'" \
		"sh -c 'AIRLOCK_STATE_DIR=$work/hstate exec $b hook claude pre-tool-use <$work/blocked.json'"
done
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/cls.json" 5 20 true "sh -c 'exec true <$work/idle.json'" "$@"
m() { median_ms "$work/cls.json" "$1"; }
t=$(m 0)
sht=$(m 1)
echo "## Classification and the pre-tool-use hook"
echo
echo "| command | median ms | vs bare true | over its baseline ms |${before:+ before issue 12, median ms |}"
echo "|---|---:|---:|---:|${before:+---:|}"
row() { # label index baseline [before index]
	v=$(m "$2")
	b=""
	[ -n "$before" ] && b=" $(m "$4") |"
	echo "| $1 | $v | $(ratio "$v" "$t") | $(echo "scale=3; $v - $3" | bc) |$b"
}
echo "| \`true\` | $t | 1.00 | |${before:+ |}"
echo "| \`sh -c 'exec true <payload'\` (the hooks' baseline) | $sht | $(ratio "$sht" "$t") | |${before:+ |}"
row "\`airlock classify -- git status\`" 2 "$t" 7
row "\`airlock classify --shell 'make test && git diff | head -5'\`" 3 "$t" 8
row "\`airlock hook claude pre-tool-use\`, nothing open, \`git status --short\`" 4 "$sht" 9
row "the same, a failure open, \`airlock run --fixes ID --timeout 60s -- make test\` (the exact exception: PATH lookup, /proc/self/exe)" 5 "$sht" 10
row "the same, a failure open, \`npm test\` (blocked)" 6 "$sht" 11
echo

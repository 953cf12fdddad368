#!/bin/sh
# airlock report's benchmark (docs/bench/report.md): generation time and
# page size at 1,000 and 100,000 runs, and the time headless Chromium takes
# to load each page (--dump-dom: start, load, serialise) against an empty
# page; also the 100,000 runs with the whole timeline (--last 100000) to
# show what the default cap of 2,000 listed runs saves (its page is timed
# in Chromium once, alone: it takes minutes).
#   bench/report.sh [BUILD_DIR]   (default: build-bench)
# The state directories are made by tests/report_gen (bench/report_gen.c):
# a receipt `airlock run` really wrote, copied with new ids, times, argv,
# workspaces and a failure in ten, each through store_write_receipt() (the
# file, then its ledger entry) and store_append_index(), as run does.
# REPORT_BENCH_DIR keeps them between runs (default: a temporary directory).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build-bench}
airlock=$(bench_build_here "$build")
gen=$PWD/$build/tests/report_gen
chromium=${CHROMIUM:-chromium}
for tool in hyperfine jq "$chromium"; do
	command -v "$tool" >/dev/null || { echo "report.sh: needs $tool" >&2; exit 1; }
done
if [ -n "${REPORT_BENCH_DIR:-}" ]; then
	work=$REPORT_BENCH_DIR
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi

mkdir -p "$work/ws"
if [ ! -s "$work/template.json" ]; then
	(cd "$work/ws" && "$airlock" run --state-dir "$work/t" -- true >/dev/null)
	cp "$work/t/receipts/1.json" "$work/template.json"
fi
for n in 1000 100000; do
	if [ ! -s "$work/s$n/index.jsonl" ]; then
		rm -rf "$work/s$n"
		start=$(date +%s.%N)
		"$gen" "$work/s$n" "$work/template.json" "$n"
		echo "generated $n runs in $(echo "$(date +%s.%N) - $start" | bc) s" >&2
	fi
done

echo "load average before: $(cat /proc/loadavg)"
hyperfine -N --warmup 1 --runs "${REPORT_BENCH_RUNS:-10}" --export-json "$work/gen.json" \
	"$airlock report --state-dir $work/s1000 -o $work/r1k.html" \
	"$airlock report --state-dir $work/s100000 -o $work/r100k.html" \
	"$airlock report --state-dir $work/s100000 --last 100000 -o $work/r100k-all.html" >/dev/null
printf '<!DOCTYPE html><title>empty</title><p>empty</p>\n' >"$work/empty.html"
dump() {
	echo "$chromium --headless --no-sandbox --disable-gpu --user-data-dir=$work/profile --dump-dom file://$work/$1"
}
hyperfine -N --warmup 1 --runs "${REPORT_BENCH_CHROMIUM_RUNS:-5}" --export-json "$work/open.json" \
	"$(dump empty.html)" "$(dump r1k.html)" "$(dump r100k.html)" >/dev/null
start=$(date +%s.%N)
# shellcheck disable=SC2046 # dump's words
timeout 1200 $(dump r100k-all.html) >/dev/null 2>&1 || echo "chromium on the whole timeline: exit $?" >&2
all_ms=$(echo "($(date +%s.%N) - $start) * 1000" | bc | cut -d. -f1)
echo "load average after: $(cat /proc/loadavg)"

size() {
	stat -c %s "$work/$1"
}
echo
echo "| runs | timeline lists | airlock report, median ms | page bytes | chromium --dump-dom, median ms | minus an empty page, ms |"
echo "|---|---|---|---|---|---|"
empty=$(median_ms "$work/open.json" 0)
row() { # runs, listed, gen index, file, open index (or the ms, with "=")
	case $5 in
	=*) o=${5#=} ;;
	*) o=$(median_ms "$work/open.json" "$5") ;;
	esac
	echo "| $1 | $2 | $(median_ms "$work/gen.json" "$3") | $(size "$4") | $o | $(echo "${o%% *} - $empty" | bc) |"
}
row 1,000 1,000 0 r1k.html 1
row 100,000 "2,000 (default)" 1 r100k.html 2
row 100,000 "100,000 (--last 100000)" 2 r100k-all.html "=$all_ms (1 run)"
echo "| (empty page) | | | $(size empty.html) | $empty | 0 |"

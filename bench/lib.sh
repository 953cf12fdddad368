# shellcheck shell=sh
# Shared by the benchmark scripts (sourced, not run).

# The median of hyperfine's JSON export, in milliseconds to 3 decimals.
median_ms() { # file, index of the command
	jq -r ".results[$2].median * 1000 | . * 1000 | round / 1000" "$1"
}

# a / b to 2 decimals.
ratio() {
	echo "scale=2; $1 / $2" | bc
}

# hyperfine over the commands in interleaved rounds: each round times every
# command `runs` times, and the rounds alternate, so this VM's drift (20% over
# minutes) falls on every command alike. Writes one JSON in hyperfine's shape
# whose medians are over all rounds.
# Before a timed part: what the parts before it deleted is written out and
# left to age. On ext4 without a journal (this machine's disk) every inode
# allocation steps over each inode freed in the last 5 s, or 300 s while its
# table block is unwritten (recently_deleted()): after a part's `rm -rf` of
# thousands of inodes the next part's runs paid 14-24x per allocation, the
# permit's 23 allocations most (docs/bench22/permit.md, "tenth session").
#   BENCH_SETTLE: seconds to wait after the sync (default 6; 0 skips both)
bench_settle() {
	[ "${BENCH_SETTLE:-6}" != 0 ] || return 0
	sync
	sleep "${BENCH_SETTLE:-6}"
}

hyperfine_rounds() { # out.json, rounds, runs, command...
	out=$1 rounds=$2 runs=$3
	shift 3
	r=0
	while [ "$r" -lt "$rounds" ]; do
		# HYPERFINE_FLAGS: e.g. -i, for commands whose non-zero exit is the point
		# shellcheck disable=SC2086 # HYPERFINE_FLAGS: words, or none
		hyperfine -N ${HYPERFINE_FLAGS:-} --warmup 3 --runs "$runs" --export-json "$out.$r" "$@" >/dev/null
		r=$((r + 1))
	done
	jq -s '{results: [range(0; .[0].results | length) as $i
		| {command: .[0].results[$i].command, times: (map(.results[$i].times) | add | sort)}
		| .median = (.times | if length % 2 == 1 then .[length / 2 | floor]
			else (.[length / 2 - 1] + .[length / 2]) / 2 end)]}' "$out".* >"$out"
	rm -f "$out".*
}

# An airlock built from COMMIT (`git archive` into DIR, a release build with
# the project's own flags, kept while DIR/commit names COMMIT); prints the
# binary's path.
bench_build_commit() { # commit, dir
	commit=$(git rev-parse "$1^{commit}")
	if [ "$(cat "$2/commit" 2>/dev/null)" != "$commit" ]; then
		rm -rf "$2"
		mkdir -p "$2/src"
		git archive "$commit" | tar -x -C "$2/src"
		meson setup "$2/build" "$2/src" --buildtype=release >/dev/null
		echo "$commit" >"$2/commit"
	fi
	meson compile -C "$2/build" airlock >/dev/null
	echo "$2/build/airlock"
}

# The tools the quarantine benchmarks compare against, installed when any is
# missing.
bench_need_tools() {
	for tool in hyperfine bwrap bc jq; do
		command -v "$tool" >/dev/null || {
			scripts/deps.sh --bench
			return
		}
	done
}

# This tree's airlock in the release build directory BUILD (set up when it
# is not), compiled with TARGET (default: every target); prints the
# binary's path.
bench_build_here() { # build, [target]
	[ -f "$1/build.ninja" ] || meson setup "$1" --buildtype=release >/dev/null
	meson compile -C "$1" ${2:+"$2"} >/dev/null
	echo "$PWD/$1/airlock"
}

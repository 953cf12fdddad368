#!/bin/sh
# Runs each libFuzzer target for SECONDS (default 20) from its corpus.
# New inputs go to a scratch directory; a crash is left as crash-* in
# build-fuzz/ and must be added to tests/fuzz/corpus/<target>/ with its fix.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-20}
[ -d build-fuzz ] || CC=clang meson setup build-fuzz -Dlibfuzzer=true -Db_sanitize=address,undefined \
	-Db_lundef=false >/dev/null
meson compile -C build-fuzz >/dev/null
status=0
# Every target tests/fuzz holds (tests/meson.build builds the same list; a
# hand-kept list here fell behind it).
for src in tests/fuzz/fuzz_*.c; do
	target=${src#tests/fuzz/fuzz_}
	target=${target%.c}
	[ "$target" != main ] || continue
	scratch=$(mktemp -d)
	(cd build-fuzz && ./tests/"fuzz_$target" -max_total_time="$seconds" -max_len=65536 \
		"$scratch" "../tests/fuzz/corpus/$target" >"fuzz_$target.log" 2>&1) || {
		echo "fuzz_$target found a crash:"; tail -30 "build-fuzz/fuzz_$target.log"; status=1; }
	grep -E '^#[0-9]+.*DONE' "build-fuzz/fuzz_$target.log" | tail -1 | sed "s/^/fuzz_$target: /"
	rm -rf "$scratch"
done
exit $status

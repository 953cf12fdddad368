#!/bin/sh
# Fails, listing the files, when a C file under src/ tests/ bench/ tools/
# differs from what clang-format makes of it with the repository's
# .clang-format. Fix with: clang-format -i FILE...
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (scripts/deps.sh)"; exit 1; }

bad=""
for f in $(find src tests bench tools -name '*.[ch]' | sort); do
	clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
	echo "check-format: not formatted (clang-format -i FILE):"
	for f in $bad; do echo "  $f"; done
	exit 1
fi

#!/bin/sh
# Builds airlock and shows its main job on the built-in defaults: three
# attempts (a success, a missing tool, a timeout with background children),
# each leaving a receipt in the default state directory.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
meson compile -C build >/dev/null
airlock=build/airlock

step() { printf '\n$ airlock %s\n' "$*"; "$airlock" "$@" || printf '(exit status %s)\n' "$?"; }

step run -- sh -c 'echo hello from the quarantine'
step run -- no-such-linter --check src
step run --timeout 1s -- sh -c 'sleep 30 & sleep 30'
if pgrep -f 'sleep 30' >/dev/null; then
	echo "demo: a background sleep survived the timeout" >&2
	exit 1
fi
printf '\nno background sleep survived the timeout.\n'
step receipts --last 3
last=$("$airlock" receipts --last 1 --json | jq -r .id)
printf '\n$ airlock show %s\n' "$last"
"$airlock" show "$last" | jq '{id, argv, status, exit_code, timed_out, descendants_killed, duration_ms, error}'

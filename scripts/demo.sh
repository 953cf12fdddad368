#!/bin/sh
# Builds airlock and shows its main job on the built-in defaults: four
# attempts in the quarantine (a success, a missing tool, a timeout with
# background children, a write outside the workspace and a nested user
# namespace, both refused), each leaving a receipt in the default state
# directory; then the gate those failures opened, and a dry run.
set -eu
cd "$(dirname "$0")/.."
# AIRLOCK=/usr/bin/airlock shows an installed airlock instead of building
# one (scripts/package-test.sh).
if [ -n "${AIRLOCK:-}" ]; then
	airlock=$AIRLOCK
else
	scripts/deps.sh
	[ -d build ] || meson setup build >/dev/null
	meson compile -C build >/dev/null
	airlock=$PWD/build/airlock
fi
# The commands run in a scratch workspace, not in this checkout.
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cd "$ws"

step() { printf '\n$ airlock %s\n' "$*"; "$airlock" "$@" || printf '(exit status %s)\n' "$?"; }

step run -- sh -c 'echo hello from the quarantine'
step run -- no-such-linter --check src
step run --timeout 1s -- sh -c 'sleep 30 & sleep 30'
step run -- sh -c 'touch /etc/airlock-demo; unshare -U true; exit 3'
step gate
step dryrun --expect notes.txt -- sh -c 'echo draft > notes.txt'
# A sleep still working in this workspace survived (one elsewhere on the
# machine, another test's, is not this demo's).
survivors() {
	for pid in $(pgrep -x sleep); do
		[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" != "$ws" ] || echo "$pid"
	done
}
if [ -n "$(survivors)" ]; then
	echo "demo: a background sleep survived the timeout" >&2
	exit 1
fi
printf '\nno background sleep survived the timeout.\n'
step receipts --last 4
last=$("$airlock" receipts --last 1 --json | jq -r .id)
printf '\n$ airlock show %s\n' "$last"
"$airlock" show "$last" | jq '{id, argv, status, exit_code, stderr, denials: .sandbox.denials,
	enforced: (.sandbox.enforced | {namespaces, network, workspace, landlock, capabilities})}'

#!/bin/sh
# Builds airlock and shows its main job on the built-in defaults: four
# attempts in the quarantine (a success, a missing tool, a timeout with
# background children, a write outside the workspace and a nested user
# namespace, both refused), each leaving a receipt in the default state
# directory; then the gate those failures opened, and a dry run. Then what
# makes airlock different: permits earning execution (a risk-3 permit dry-run
# and exec'd, a risk-4 one that waits for the human approver), the ledger
# verified with its key kept outside the state directory, and the report
# (an HTML page) it all ends with. Every command is echoed with its quotes,
# so it can be pasted.
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

# The words as a shell reads them back: plain, or in single quotes.
quote() {
	for w in "$@"; do
		case $w in
		'' | *[!A-Za-z0-9_./:=@%+,-]*) printf " '%s'" "$(printf '%s' "$w" | sed "s/'/'\\\\''/g")" ;;
		*) printf ' %s' "$w" ;;
		esac
	done
}
step() { printf '\n$ airlock%s\n' "$(quote "$@")"; "$airlock" "$@" || printf '(exit status %s)\n' "$?"; }

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

# Permits: a model proposes, airlock dry-runs, judges what changed, and
# applies exactly that change set. A small project whose build writes a
# generated file (risk 3: nothing git tracks changes) and a step that edits a
# tracked file (risk 4: the approver must sign).
printf '\n$ cd %s && git init\n' "$ws"
git init -q .
git config user.email demo@example.invalid && git config user.name demo
printf 'gen:\n\techo generated > gen.txt\nnotes:\n\techo reviewed >> notes.txt\n' >Makefile
echo 'first notes' >notes.txt
echo gen.txt >.gitignore
git add -A . && git commit -qm 'demo project'
cat >gen.json <<'JSON'
{"id": "regen", "argv": ["make", "-s", "gen"], "reason": "regenerate gen.txt", "expected_paths": ["gen.txt"]}
JSON
cat >notes.json <<'JSON'
{"id": "notes", "argv": ["make", "-s", "notes"], "reason": "record the review in notes.txt", "expected_paths": ["notes.txt"]}
JSON
printf '\n$ cat gen.json\n'
cat gen.json
step permit propose --exec gen.json
printf '\n$ cat gen.txt\n'
cat gen.txt
printf '\n$ airlock permit propose - < notes.json\n'
out=$("$airlock" permit propose - <notes.json)
printf '%s\n' "$out"
notes=$(printf '%s\n' "$out" | jq -r .permit)
step permit dryrun "$notes"
step permit exec "$notes"
printf '\nrisk 4 waits for the human approver: in their own terminal,\n  airlock permit approve %s\nthen\n  airlock permit exec %s\n' "$notes" "$notes"

# The ledger: every record above is in it; verify with the public key kept
# outside the state directory.
key=$(mktemp "${TMPDIR:-/tmp}/airlock-demo-key.XXXXXX")
printf '\n$ airlock ledger key > %s\n' "$key"
"$airlock" ledger key >"$key"
step ledger verify --key "$key"
rm -f "$key"

report=${AIRLOCK_DEMO_REPORT:-${TMPDIR:-/tmp}/airlock-demo-report.html}
step report -o "$report"
printf '\nopen it: file://%s\n' "$report"

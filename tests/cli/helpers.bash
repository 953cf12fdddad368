# shellcheck shell=bash disable=SC2154 # output, stderr, status: set by bats' run
# Shared set-up for the CLI suites: a private state dir and workspace per
# test, and helpers that read the receipt an invocation left.
bats_require_minimum_version 1.5.0

: "${AIRLOCK:?set AIRLOCK to the airlock binary}"

# The test's directories: TEST_DIR, the state directory below it, and the
# workspace WORK, the cwd. A suite with a setup of its own calls it first.
setup_dirs() {
	TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/airlock-cli.XXXXXX")
	export AIRLOCK_STATE_DIR="$TEST_DIR/state"
	WORK="$TEST_DIR/work"
	mkdir -p "$WORK"
	cd "$WORK" || return 1
}

setup() {
	setup_dirs
}

teardown() {
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	rm -rf "$TEST_DIR"
}

# airlock with separate stdout/stderr: sets $status, $output, $stderr.
al() {
	run --separate-stderr "$AIRLOCK" "$@"
}

receipt_id() {
	jq -r .receipt <<<"$output"
}

# The receipt file of the last invocation (by the id it printed).
receipt() {
	echo "$AIRLOCK_STATE_DIR/receipts/$(receipt_id).json"
}

# jq over the last invocation's receipt.
rq() {
	jq -r "$@" "$(receipt)"
}

# Asserts the last invocation wrote exactly one line on stderr containing $1.
one_error_line() {
	local lines
	lines=$(printf '%s\n' "$stderr" | grep -c .)
	if [ "$lines" -ne 1 ] || [[ "$stderr" != *"$1"* ]]; then
		echo "expected one stderr line containing '$1', got:" >&2
		printf '%s\n' "$stderr" >&2
		return 1
	fi
}

# Fails if any process still has the marker in its command line.
no_process_with() {
	sleep 0.2
	if pgrep -f -- "$1" >/dev/null; then
		echo "left behind:" >&2
		pgrep -af -- "$1" >&2
		pkill -f -- "$1"
		return 1
	fi
}

# The receipt file of receipt ID.
receipt_file() {
	echo "$AIRLOCK_STATE_DIR/receipts/$1.json"
}

# A command whose output and argv try to drive the terminal that shows them:
# a window title, a screen clear, a clipboard write (OSC 52), a C1 CSI in
# UTF-8 and as a bare 8-bit byte, a DCS string; it fails so the gate opens.
# The texts inside the sequences say "pwned" (split in the script's own
# text, so that only the sequences carry it); the argv's own title sequence
# says "hidden-argv".
terminal_attack_script() {
	printf '%s' 'printf "out-visible \033]0;pw""ned-title\007 \033[2J \033]52;c;cHduZWQtY2xpcA==\007 \302\2331;31m \2331m\n"; '
	printf '%s' 'printf "err-visible \033[8m \033Ppw""ned-dcs\033\\\\ \302\235pw""ned-c1\302\234 end\n" >&2; exit 1 '
	printf '# argv-visible \033]0;hidden-argv\007\033[2J\n'
}

# Fails if the file holds a byte a terminal acts on (C0 but \n, \t and the
# pty's own \r; DEL; C1 in UTF-8 or as a bare byte). $2.. are texts that
# must be shown.
shows_no_controls() {
	local file=$1 text
	shift
	if LC_ALL=C grep -aqP '[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]' <(LC_ALL=C sed 's/\xc2[\x80-\x9f]/\x1b/g; s/[\xc0-\xf4][\x80-\xbf]*//g' "$file"); then
		echo "terminal controls reached the terminal:" >&2
		od -c "$file" | head -40 >&2
		return 1
	fi
	for text in "$@"; do
		grep -aqF -- "$text" "$file" || { echo "'$text' is not shown:" >&2; cat -v "$file" >&2; return 1; }
	done
}

# Fails if the file shows a text that only an escape sequence carried.
shows_no_hidden_text() {
	if grep -aqE -- "${2:-pwned}" "$1"; then
		echo "the text of an escape sequence was shown:" >&2
		cat -v "$1" >&2
		return 1
	fi
}

# A policy file that widens the built-in one applies only once the approver
# approved it (docs/policy-format.md): enrols an approver in the current
# state directory when it has none, then approves FILE as the human would,
# at a terminal (script(1)). Skips the test where that cannot be done.
APPROVER_PASSPHRASE="correct horse battery"
approve_policy() { # file
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	if ! "$AIRLOCK" approver show >/dev/null 2>&1; then
		printf '%s\n%s\n' "$APPROVER_PASSPHRASE" "$APPROVER_PASSPHRASE" |
			script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
	fi
	script -qec "'$AIRLOCK' policy approve '$1'" /dev/null <<<"$APPROVER_PASSPHRASE" |
		grep -Eq "^approved policy |needs no approval" || { echo "could not approve $1" >&2; return 1; }
}

# The routed form of a Bash command, as the hook writes it.
routed_form() { # command
	local input
	input=$(jq -c --arg cwd "$WORK" --arg c "$1" '.cwd = $cwd | .tool_input.command = $c' \
		"$BATS_TEST_DIRNAME/../fixtures/hosts/claude-code/2.1/pre-tool-use-bash.json")
	"$AIRLOCK" hook claude pre-tool-use <<<"$input" | jq -r .hookSpecificOutput.updatedInput.command
}

# The command a host's shell call is routed to, run by bash as the host
# would: sets $status, $output, $stderr.
run_routed() { # command
	local routed
	routed=$(routed_form "$1")
	[[ "$routed" == *" run --routed claude "* ]] || { echo "not routed: $routed"; return 1; }
	run --separate-stderr bash -c "$routed"
}

# A new state directory: what one step opened does not gate the next.
fresh_state() {
	STATES=$((${STATES:-0} + 1))
	export AIRLOCK_STATE_DIR="$TEST_DIR/state-$STATES"
	mkdir -p "$AIRLOCK_STATE_DIR"
}

# strace(1) of airlock: in an ASan build LeakSanitizer cannot run under
# ptrace and aborts the traced command at its exit, so leaks go unchecked there.
traced() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace "$@"
}

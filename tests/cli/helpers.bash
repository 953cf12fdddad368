# Shared set-up for the CLI suites: a private state dir and workspace per
# test, and helpers that read the receipt an invocation left.
bats_require_minimum_version 1.5.0

: "${AIRLOCK:?set AIRLOCK to the airlock binary}"

setup() {
	TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/airlock-cli.XXXXXX")
	export AIRLOCK_STATE_DIR="$TEST_DIR/state"
	WORK="$TEST_DIR/work"
	mkdir -p "$WORK"
	cd "$WORK" || return 1
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

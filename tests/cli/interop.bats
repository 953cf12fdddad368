#!/usr/bin/env bats
# The ledger checked by an implementation nobody here wrote (issue 23,
# docs/ledger.md "Checked by an independent implementation"): Go's
# golang.org/x/mod/sumdb/note and sumdb/tlog (tests/interop/sumdb/verify.go,
# Debian's golang-go and golang-golang-x-mod-dev) open airlock's signed
# checkpoints and check its inclusion and consistency proofs; what airlock
# refuses, Go refuses too.
load helpers

GO_SRC="$BATS_TEST_DIRNAME/../interop/sumdb"

setup_file() {
	command -v go >/dev/null || return 0
	# Into the build directory when it is writable (never the tree), else
	# this file's temporary directory (the unprivileged pass).
	local dir
	dir="$(dirname "$AIRLOCK")/interop"
	mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ] || dir="$BATS_FILE_TMPDIR"
	"$GO_SRC/build.sh" "$dir/sumdb-verify" >&2
	export GOVERIFY="$dir/sumdb-verify"
	# One log for the suite: checkpoints on the first append, at 64 and 128,
	# and the last one by `ledger checkpoint`; a failure opens the gate.
	export LOGDIR="$BATS_FILE_TMPDIR/log"
	mkdir -p "$LOGDIR/work"
	(
		cd "$LOGDIR/work" || exit 1
		export AIRLOCK_STATE_DIR="$LOGDIR/state"
		for i in $(seq 1 150); do
			if [ $((i % 50)) -eq 0 ]; then "$AIRLOCK" run -- false >/dev/null || true; else "$AIRLOCK" run -- true >/dev/null; fi
		done
		"$AIRLOCK" ledger checkpoint >/dev/null
		"$AIRLOCK" ledger key >"$LOGDIR/key"
	)
}

setup() {
	command -v go >/dev/null || skip "Go is not installed (scripts/deps.sh installs golang-go and golang-golang-x-mod-dev)"
	setup_dirs
	export AIRLOCK_STATE_DIR="$LOGDIR/state"
	KEY="$LOGDIR/key"
	CPS="$AIRLOCK_STATE_DIR/ledger/checkpoints"
}

# Go's verdict on $@ (sets $status and $output; every line printed).
gov() {
	run "$GOVERIFY" "$@"
	printf '%s\n' "$output" >&2
}

# Sizes of the kept checkpoints, ascending.
sizes() {
	find "$CPS" -maxdepth 1 -type f -printf '%f\n' | sort -n
}

@test "the verifier key is the note format Go parses; the log has several checkpoints" {
	grep -Eq '^airlock\.local/ledger/[0-9a-f]{16}\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$' "$KEY"
	[ "$(sizes | tr '\n' ' ')" = "1 64 128 $(wc -l <"$AIRLOCK_STATE_DIR/ledger/log") " ]
}

@test "every checkpoint: its signature and body checked by Go and by airlock" {
	for n in $(sizes); do
		gov "$KEY" checkpoint "$CPS/$n"
		[ "$status" -eq 0 ]
		[[ "$output" == *"ok checkpoint: signature by airlock.local/ledger/"* ]]
		[[ "$output" != *FAIL* ]]
		al ledger verify --key "$KEY" --checkpoint "$CPS/$n"
		[ "$status" -eq 0 ]
	done
}

@test "inclusion proofs of a sample of entries, checked by Go against the checkpoint" {
	last=$(($(wc -l <"$AIRLOCK_STATE_DIR/ledger/log") - 1))
	for i in 0 1 49 63 64 127 128 $((RANDOM % last)) $((RANDOM % last)) $last; do
		"$AIRLOCK" ledger prove "$i" >"$TEST_DIR/p"
		gov "$KEY" inclusion "$TEST_DIR/p"
		[ "$status" -eq 0 ]
		[[ "$output" == *"ok inclusion of entry $i in the tree of size $((last + 1)) (tlog.CheckRecord)"* ]]
		al ledger verify-proof --key "$KEY" "$TEST_DIR/p"
		[ "$status" -eq 0 ]
	done
}

@test "a small log: every entry's inclusion proof, checked by Go" {
	export AIRLOCK_STATE_DIR="$TEST_DIR/small"
	for _ in 1 2 3 4 5 6; do "$AIRLOCK" run -- true >/dev/null; done
	"$AIRLOCK" ledger checkpoint >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/key"
	for i in 0 1 2 3 4 5; do
		"$AIRLOCK" ledger prove "$i" >"$TEST_DIR/p"
		gov "$TEST_DIR/key" inclusion "$TEST_DIR/p"
		[ "$status" -eq 0 ]
		[[ "$output" == *"ok inclusion of entry $i in the tree of size 6 "* ]]
	done
}

@test "consistency between successive checkpoints and first to last, checked by Go" {
	mapfile -t ns < <(sizes)
	pairs=()
	for ((k = 0; k + 1 < ${#ns[@]}; k++)); do pairs+=("${ns[k]} ${ns[k + 1]}"); done
	pairs+=("${ns[0]} ${ns[-1]}")
	for pair in "${pairs[@]}"; do
		read -r m n <<<"$pair"
		"$AIRLOCK" ledger consistency "$m" "$n" >"$TEST_DIR/c"
		gov "$KEY" consistency "$CPS/$m" "$TEST_DIR/c"
		[ "$status" -eq 0 ]
		[[ "$output" == *"ok consistency from size $m to size $n (tlog.CheckTree)"* ]]
		al ledger verify-proof --key "$KEY" --old "$CPS/$m" "$TEST_DIR/c"
		[ "$status" -eq 0 ]
	done
}

# Both refuse $1 (a proof, or with --old OLD a consistency proof).
both_refuse_proof() {
	local key=$1 proof=$2 old=${3:-}
	if [ -n "$old" ]; then
		gov "$key" consistency "$old" "$proof"
	else
		gov "$key" inclusion "$proof"
	fi
	[ "$status" -eq 1 ]
	[[ "$output" == *FAIL* ]]
	if [ -n "$old" ]; then
		al ledger verify-proof --key "$key" --old "$old" "$proof"
	else
		al ledger verify-proof --key "$key" "$proof"
	fi
	[ "$status" -eq 1 ]
}

@test "a flipped byte in a signature is refused by Go and by airlock" {
	last=$(sizes | tail -1)
	# The 20th byte of the signature's base64 (after the key id).
	awk '/^— /{ s = $3; c = substr(s, 20, 1); $3 = substr(s, 1, 19) (c == "A" ? "B" : "A") substr(s, 21) } 1' \
		"$CPS/$last" >"$TEST_DIR/cp"
	run ! cmp -s "$CPS/$last" "$TEST_DIR/cp"
	gov "$KEY" checkpoint "$TEST_DIR/cp"
	[ "$status" -eq 1 ]
	[[ "$output" == *"FAIL checkpoint: signature"* ]]
	# A checkpoint given that does not verify is a bad argument (125).
	al ledger verify --key "$KEY" --checkpoint "$TEST_DIR/cp"
	[ "$status" -eq 125 ]
	one_error_line "does not verify"
	# The same in an inclusion proof's checkpoint.
	"$AIRLOCK" ledger prove 3 | awk '/^— /{ s = $3; c = substr(s, 20, 1); $3 = substr(s, 1, 19) (c == "A" ? "B" : "A") substr(s, 21) } 1' >"$TEST_DIR/p"
	both_refuse_proof "$KEY" "$TEST_DIR/p"
}

@test "a checkpoint of another log (another origin and key), or a key that does not match, is refused by both" {
	other="$TEST_DIR/other"
	AIRLOCK_STATE_DIR="$other" "$AIRLOCK" run -- true >/dev/null
	AIRLOCK_STATE_DIR="$other" "$AIRLOCK" ledger checkpoint >/dev/null
	AIRLOCK_STATE_DIR="$other" "$AIRLOCK" ledger key >"$TEST_DIR/key2"
	AIRLOCK_STATE_DIR="$other" "$AIRLOCK" ledger prove 0 >"$TEST_DIR/p2"
	# The other log's checkpoint under this log's key.
	gov "$KEY" checkpoint "$other/ledger/checkpoint"
	[ "$status" -eq 1 ]
	al ledger verify --key "$KEY" --checkpoint "$other/ledger/checkpoint"
	[ "$status" -eq 125 ]
	printf '%s\n' "$stderr" >&2
	both_refuse_proof "$KEY" "$TEST_DIR/p2"
	# This log's proof under the other key.
	"$AIRLOCK" ledger prove 3 >"$TEST_DIR/p"
	both_refuse_proof "$TEST_DIR/key2" "$TEST_DIR/p"
	# The origin line rewritten to the other log's name, signature kept.
	last=$(sizes | tail -1)
	origin2=$(head -1 "$other/ledger/checkpoint")
	{ echo "$origin2"; tail -n +2 "$CPS/$last"; } >"$TEST_DIR/cp"
	gov "$KEY" checkpoint "$TEST_DIR/cp"
	[ "$status" -eq 1 ]
	al ledger verify --key "$KEY" --checkpoint "$TEST_DIR/cp"
	[ "$status" -eq 125 ]
	printf '%s\n' "$stderr" >&2
	# A key of the right name whose key id and public key are another's.
	name=$(cut -d+ -f1 "$KEY")
	echo "$name+$(cut -d+ -f2- "$TEST_DIR/key2")" >"$TEST_DIR/key3"
	gov "$TEST_DIR/key3" checkpoint "$CPS/$last"
	[ "$status" -eq 1 ]
	al ledger verify-proof --key "$TEST_DIR/key3" "$TEST_DIR/p"
	[ "$status" -ne 0 ]
}

@test "a modified proof hash is refused by both (inclusion and consistency)" {
	"$AIRLOCK" ledger prove 70 >"$TEST_DIR/p"
	h=$(sed -n 4p "$TEST_DIR/p")
	h2=$(printf '%s' "$h" | base64 -d | openssl dgst -sha256 -binary | base64)
	sed "4s|.*|$h2|" "$TEST_DIR/p" >"$TEST_DIR/pm"
	run ! cmp -s "$TEST_DIR/p" "$TEST_DIR/pm"
	both_refuse_proof "$KEY" "$TEST_DIR/pm"
	"$AIRLOCK" ledger consistency 64 128 >"$TEST_DIR/c"
	h=$(sed -n 3p "$TEST_DIR/c")
	h2=$(printf '%s' "$h" | base64 -d | openssl dgst -sha256 -binary | base64)
	sed "3s|.*|$h2|" "$TEST_DIR/c" >"$TEST_DIR/cm"
	run ! cmp -s "$TEST_DIR/c" "$TEST_DIR/cm"
	both_refuse_proof "$KEY" "$TEST_DIR/cm" "$CPS/64"
}

@test "a wrong leaf (another entry's bytes, or the index moved) is refused by both" {
	"$AIRLOCK" ledger prove 70 >"$TEST_DIR/p"
	other=$(sed -n 72p "$AIRLOCK_STATE_DIR/ledger/log" | tr -d '\n' | base64 -w0)
	sed "2s|.*|extra $other|" "$TEST_DIR/p" >"$TEST_DIR/pm"
	both_refuse_proof "$KEY" "$TEST_DIR/pm"
	sed "3s|.*|index 71|" "$TEST_DIR/p" >"$TEST_DIR/pm"
	both_refuse_proof "$KEY" "$TEST_DIR/pm"
}

@test "a note with a blank line among or after its signature lines is malformed to both (C2SP signed-note)" {
	last=$(sizes | tail -1)
	{ cat "$CPS/$last"; echo; } >"$TEST_DIR/trailing"
	{ head -3 "$CPS/$last"; echo; echo; tail -n +5 "$CPS/$last"; } >"$TEST_DIR/leading"
	{ echo; cat "$CPS/$last"; } >"$TEST_DIR/before"
	for f in trailing leading before; do
		gov "$KEY" checkpoint "$TEST_DIR/$f"
		[ "$status" -eq 1 ]
		al ledger verify --key "$KEY" --checkpoint "$TEST_DIR/$f"
		[ "$status" -eq 125 ]
		printf '%s\n' "$stderr" >&2
	done
}

@test "Go's note.Sign of each checkpoint's body with airlock's key is airlock's checkpoint, byte for byte" {
	for n in $(sizes); do
		head -3 "$CPS/$n" >"$TEST_DIR/body"
		"$GOVERIFY" "$AIRLOCK_STATE_DIR/ledger/key" sign "$TEST_DIR/body" >"$TEST_DIR/go"
		cmp "$TEST_DIR/go" "$CPS/$n"
	done
}

# Go and airlock agree on the checkpoint $TEST_DIR/cp: both accept it
# (want 1) or both refuse it (want 0). $1 names the case in the output.
both_judge() { # what, want
	local what=$1 want=$2 go_ok al_ok
	echo "# $what" >&2
	gov "$KEY" checkpoint "$TEST_DIR/cp"
	go_ok=$((status == 0))
	al ledger verify --key "$KEY" --checkpoint "$TEST_DIR/cp"
	printf '%s\n' "$stderr" >&2
	al_ok=$((status == 0))
	[ "$go_ok" -eq "$want" ]
	[ "$al_ok" -eq "$want" ]
}

@test "bodies Go signs with airlock's key: airlock and Go read them alike (C2SP tlog-checkpoint)" {
	n=$(sizes | sed -n 2p)
	origin=$(sed -n 1p "$CPS/$n")
	root=$(sed -n 3p "$CPS/$n")
	short=$(printf '%s' "$root" | base64 -d | head -c 31 | base64)
	# name|body|accepted (1) or refused (0)
	cases=(
		"same|$origin\n$n\n$root\n|1"
		"extension lines|$origin\n$n\n$root\nan extension\nanother one\n|1"
		"size with a plus|$origin\n+$n\n$root\n|0"
		"size with a leading zero|$origin\n0$n\n$root\n|0"
		"size with a space|$origin\n $n\n$root\n|0"
		"size after a space|$origin\n$n \n$root\n|0"
		"size in hex|$origin\n0x$(printf %x "$n")\n$root\n|0"
		"root without padding|$origin\n$n\n${root%=}\n|0"
		"root of 31 bytes|$origin\n$n\n$short\n|0"
		"root with a space|$origin\n$n\n$root \n|0"
		"two lines only|$origin\n$n\n|0"
		"another origin|example.com/log\n$n\n$root\n|0"
	)
	for c in "${cases[@]}"; do
		IFS='|' read -r what body want <<<"$c"
		printf '%b' "$body" >"$TEST_DIR/body"
		"$GOVERIFY" "$AIRLOCK_STATE_DIR/ledger/key" sign "$TEST_DIR/body" >"$TEST_DIR/cp"
		both_judge "$what" "$want"
	done
}

@test "other signature lines (cosignatures): well formed ones are ignored, malformed ones refuse the note, by both" {
	last=$(sizes | tail -1)
	cosig=$(head -c 68 /dev/urandom | base64 -w0)
	# name|line appended|accepted (1) or refused (0)
	cases=(
		"a cosignature by another key|— witness.example $cosig|1"
		"no signature after the name|— witness.example|0"
		"not base64|— witness.example not*base64!|0"
		"fewer than 5 bytes|— witness.example AAAA|0"
		"a space in the name|— wit ness $cosig|0"
		"a plus in the name|— wit+ness $cosig|0"
		"two spaces|— witness.example  $cosig|0"
		"a carriage return|— witness.example $cosig\r|0"
		"a tab|— witness.example\t$cosig|0"
		"no em dash|- witness.example $cosig|0"
	)
	for c in "${cases[@]}"; do
		IFS='|' read -r what line want <<<"$c"
		{ cat "$CPS/$last"; printf '%b\n' "$line"; } >"$TEST_DIR/cp"
		both_judge "$what" "$want"
	done
}

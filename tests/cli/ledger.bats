#!/usr/bin/env bats
# The ledger (docs/ledger.md): every record committed once, verified with a
# key kept outside the state directory; attacks on the log and on the
# records it backs; crashes, short writes and fsync errors.
load helpers

LOG() { echo "$AIRLOCK_STATE_DIR/ledger/log"; }

# A few runs, a checkpoint, and the public key kept outside the state dir.
commit_some() {
	for _ in 1 2 3 4; do "$AIRLOCK" run -- true >/dev/null; done
	"$AIRLOCK" run -- false >/dev/null || true
	"$AIRLOCK" ledger checkpoint >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	KEY="$TEST_DIR/ledger.pub"
}

verify() {
	al ledger verify --key "$KEY" "$@"
}

# Sets $lib to the fault-injection shim (tests/helpers/faultfs.c).
faultfs() {
	lib=${AIRLOCK_FAULTFS:-$(dirname "$AIRLOCK")/tests/libfaultfs.so}
	[ -e "$lib" ] || skip "the fault-injection shim is not built"
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "LD_PRELOAD under a sanitizer"
}

@test "every record is one entry; verify with a key from outside passes; a key inside is refused" {
	commit_some
	# 5 receipts and the open failure of `false`.
	[ "$(wc -l <"$(LOG)")" -eq 6 ]
	jq -se '[.[].kind] == ["receipt","receipt","receipt","receipt","gate-open","receipt"]' "$(LOG)"
	verify
	[ "$status" -eq 0 ]
	jq -e '.verdict == "OK" and .size == 6 and .checkpoint_size == 6' <<<"$output"
	cp "$KEY" "$AIRLOCK_STATE_DIR/mine.pub"
	al ledger verify --key "$AIRLOCK_STATE_DIR/mine.pub"
	[ "$status" -eq 125 ]
	one_error_line "inside the state directory"
}

@test "a rewritten receipt, a forged close, a deleted open failure and a swapped approver are named and not trusted" {
	commit_some
	jq '.exit_code = 0' "$AIRLOCK_STATE_DIR/receipts/5.json" >"$TEST_DIR/r" &&
		cat "$TEST_DIR/r" >"$AIRLOCK_STATE_DIR/receipts/5.json"
	mkdir -p "$AIRLOCK_STATE_DIR/gate/closed"
	echo '{"schema":"airlock.gate-close/1","receipt":5,"scope":"'"$WORK"'","move":"rerun"}' \
		>"$AIRLOCK_STATE_DIR/gate/closed/5.json"
	echo '{"schema":"airlock.approver/1"}' >"$AIRLOCK_STATE_DIR/approver.json"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	verify
	[ "$status" -eq 2 ]
	[[ "$output" == *"DIFFERS receipts/5.json: receipt 5 differs"* ]]
	[[ "$output" == *"UNBACKED gate/closed/5.json"* ]]
	[[ "$output" == *"UNBACKED approver.json"* ]]
	# The open failure's entry deleted: the gate still has it open.
	rm -f "$AIRLOCK_STATE_DIR"/gate/open/*/5.json "$AIRLOCK_STATE_DIR/gate/closed/5.json"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"the ledger has it open"* ]]
	verify
	[[ "$output" == *"MISSING gate/open/"*"gate-open 5"* ]]
}

@test "ack refuses an open failure the ledger does not back; apply a change set it does not back" {
	"$AIRLOCK" run -- sh -c 'echo hi > f; exit 3' >/dev/null || true
	entry=$(echo "$AIRLOCK_STATE_DIR"/gate/open/*/1.json)
	# Rewritten to look read-only, so a reason alone would close it.
	jq -c '.argv = ["true"] | .risk = 1' "$entry" >"$TEST_DIR/e" && cat "$TEST_DIR/e" >"$entry"
	al ack 1 --reason "looks harmless"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"the ledger does not back open failure 1"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'echo x > new'
	ID=$(jq -r .id <<<"$output")
	cs="$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	jq -c '.verdict = "DRY_RUN_OK"' "$cs" >"$TEST_DIR/c" && cat "$TEST_DIR/c" >"$cs"
	printf ' ' >>"$cs"
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "the ledger does not back the change set"
	[ ! -e new ]
}

@test "inside the signed prefix: a flipped byte, a deleted, swapped or replayed entry, a truncation is tampering" {
	commit_some
	cp "$(LOG)" "$TEST_DIR/good"
	sed -i '2s/"receipt"/"receipX"/' "$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"TAMPERED entry 1 is not valid"* ]]
	cp "$TEST_DIR/good" "$(LOG)"; sed -i '2s/"id":"2"/"id":"9"/' "$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"TAMPERED the first 6 entries are not those the checkpoint signed"* ]]
	cp "$TEST_DIR/good" "$(LOG)"; sed -i '3d' "$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"entry 2 has seq 3"* ]]
	cp "$TEST_DIR/good" "$(LOG)"; sed -i '2{h;d};3G' "$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"entry 1 has seq 2"* ]]
	cp "$TEST_DIR/good" "$(LOG)"; sed -n '3p' "$TEST_DIR/good" >>"$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"entry 6 has seq 2"* ]]
	head -n 4 "$TEST_DIR/good" >"$(LOG)"
	verify; [ "$status" -eq 1 ]; [[ "$output" == *"the checkpoint signs 6 entries, the log holds 4"* ]]
	# A writer refuses to sign a log that does not extend its checkpoint.
	al ledger checkpoint
	[ "$status" -eq 1 ]
	one_error_line "tampering; refusing to sign"
	cp "$TEST_DIR/good" "$(LOG)"
	verify; [ "$status" -eq 0 ]
}

@test "below the checkpoint is unsigned: a checkpoint kept elsewhere catches a truncation or a rewrite re-signed with the key" {
	commit_some
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger checkpoint >"$TEST_DIR/kept"
	al ledger consistency 6
	[ "$status" -eq 0 ]
	echo "$output" >"$TEST_DIR/proof"
	cp "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$TEST_DIR/new"
	# The insider with the key: rewrite entry 0 and sign afresh.
	sed -i '1s/"time":"[^"]*"/"time":"2000-01-01T00:00:00Z"/' "$(LOG)"
	rm "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$AIRLOCK_STATE_DIR/ledger/range"
	"$AIRLOCK" ledger checkpoint >/dev/null
	verify
	[ "$status" -eq 0 ]
	verify --checkpoint "$TEST_DIR/kept"
	[ "$status" -eq 1 ]
	[[ "$output" == *"does not extend the checkpoint given"* ]]
	# Truncated to fewer entries than the kept checkpoint.
	head -n 6 "$(LOG)" >"$TEST_DIR/t" && cat "$TEST_DIR/t" >"$(LOG)"
	rm "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$AIRLOCK_STATE_DIR/ledger/range"
	"$AIRLOCK" ledger checkpoint >/dev/null
	verify --checkpoint "$TEST_DIR/kept"
	[ "$status" -eq 1 ]
	[[ "$output" == *"truncated"* ]]
}

@test "prove and consistency verify offline, without the state directory" {
	commit_some
	al ledger prove receipt:2
	[ "$status" -eq 0 ]
	echo "$output" >"$TEST_DIR/p2"
	cp "$AIRLOCK_STATE_DIR/receipts/2.json" "$TEST_DIR/r2"
	cp "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$TEST_DIR/old"
	"$AIRLOCK" run -- true >/dev/null
	al ledger checkpoint
	al ledger consistency 6
	echo "$output" >"$TEST_DIR/c"
	rm -rf "$AIRLOCK_STATE_DIR"
	al ledger verify-proof --key "$KEY" --record "$TEST_DIR/r2" "$TEST_DIR/p2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"entry 1 (receipt 2, receipts/2.json) is in the log"* ]]
	al ledger verify-proof --key "$KEY" --old "$TEST_DIR/old" "$TEST_DIR/c"
	[ "$status" -eq 0 ]
	echo tampered >>"$TEST_DIR/r2"
	al ledger verify-proof --key "$KEY" --record "$TEST_DIR/r2" "$TEST_DIR/p2"
	[ "$status" -eq 1 ]
	# One character of the first hash, always changed: an A becomes a B,
	# anything else an A (the old "A, then AA to BA" left "AB..." as it was,
	# so one proof in about 65 passed untouched).
	cp "$TEST_DIR/p2" "$TEST_DIR/p2.orig"
	sed -i '4{s/^A/B/;t;s/^./A/}' "$TEST_DIR/p2"
	! cmp -s "$TEST_DIR/p2" "$TEST_DIR/p2.orig" || false
	al ledger verify-proof --key "$KEY" "$TEST_DIR/p2"
	[ "$status" -eq 1 ]
}

@test "a torn tail after the checkpoint is a warning; the next append moves it to torn/ and records it" {
	commit_some
	printf '{"v":1,"seq":6,"ki' >>"$(LOG)"
	verify
	[ "$status" -eq 3 ]
	[[ "$output" == *"TORN"* ]]
	"$AIRLOCK" run -- true >/dev/null
	ls "$AIRLOCK_STATE_DIR"/ledger/torn/*.bin
	[ "$(cat "$AIRLOCK_STATE_DIR"/ledger/torn/*.bin)" = '{"v":1,"seq":6,"ki' ]
	jq -se '.[6].kind == "recovered" and .[7].kind == "receipt"' "$(LOG)"
	verify
	[ "$status" -eq 0 ]
	# Inside the signed prefix the same cut is tampering, never repaired.
	"$AIRLOCK" ledger checkpoint >/dev/null
	head -c -20 "$(LOG)" >"$TEST_DIR/t" && cat "$TEST_DIR/t" >"$(LOG)"
	al run -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"inside its signed prefix: tampering"* ]]
	verify
	[ "$status" -eq 1 ]
}

@test "SIGKILL at any point of a run: verify then recover leave a consistent ledger" {
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	KEY="$TEST_DIR/ledger.pub"
	for _ in $(seq 1 25); do
		"$AIRLOCK" run -- true >/dev/null 2>&1 &
		pid=$!
		sleep "0.0$((RANDOM % 30))"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	# A receipt is committed by its entry alone, its file a cache rebuilt
	# from the log: a kill leaves at most a torn tail.
	verify
	[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
	[[ "$output" != *TAMPERED* ]]
	al ledger recover
	[ "$status" -eq 0 ]
	verify
	[ "$status" -eq 0 ]
}

@test "an fsync error is fatal and poisons the ledger until recover; a short write leaves no partial line" {
	faultfs
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	KEY="$TEST_DIR/ledger.pub"
	LD_PRELOAD=$lib FAULTFS_FDATASYNC_EIO=1 run "$AIRLOCK" run -- true
	[ "$status" -eq 125 ]
	[ -e "$AIRLOCK_STATE_DIR/ledger/poisoned" ]
	al run -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"poisoned"* ]]
	al ledger recover
	[ "$status" -eq 0 ]
	size=$(stat -c %s "$(LOG)")
	LD_PRELOAD=$lib FAULTFS_SHORT_WRITE=10 run "$AIRLOCK" run -- true
	[ "$status" -eq 125 ]
	[ "$(stat -c %s "$(LOG)")" -eq "$size" ]
	[ "$(tail -c 1 "$(LOG)" | od -An -c | tr -d ' ')" = '\n' ]
	# A receipt is committed by its entry alone (docs/ledger.md, "One commit
	# path"): the failed append left no record behind.
	verify
	[ "$status" -eq 0 ]
	[ "$(find "$AIRLOCK_STATE_DIR/receipts" -name '*.json' | wc -l)" -eq \
		"$(jq -s '[.[] | select(.kind == "receipt")] | length' "$(LOG)")" ]
	# A record no entry backs (a forgery, or a crash of a record written
	# before its entry) is moved aside by recover.
	cp "$AIRLOCK_STATE_DIR/receipts/1.json" "$AIRLOCK_STATE_DIR/receipts/999.json"
	verify
	[ "$status" -eq 2 ]
	[[ "$output" == *"UNBACKED receipts/999.json"* ]]
	al ledger recover
	verify
	[ "$status" -eq 0 ]
	ls "$AIRLOCK_STATE_DIR"/ledger/uncommitted/receipts/*.json
}

@test "4 processes committing at once: every entry once, in order" {
	for _ in 1 2 3 4; do
		(for _ in $(seq 1 8); do "$AIRLOCK" run -- true >/dev/null; done) &
	done
	wait
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	KEY="$TEST_DIR/ledger.pub"
	"$AIRLOCK" ledger checkpoint >/dev/null
	verify
	[ "$status" -eq 0 ]
	jq -e '.size == 32' <<<"$output"
	jq -se '[.[].seq] == [range(32)]' "$(LOG)"
}

@test "the index: deleted, truncated, garbage, forged or replayed, gate and ack answer what the log says" {
	commit_some # receipt 5 (false) is an open failure
	idx="$AIRLOCK_STATE_DIR/ledger/index"
	[ -s "$idx" ]
	cp "$idx" "$TEST_DIR/index.good"
	# Where the log's first line starts: every forged pointer goes there.
	damage() {
		cp "$TEST_DIR/index.good" "$idx"
		case $1 in
		delete) rm "$idx" ;;
		truncate) truncate -s 9000 "$idx" ;;
		garbage) head -c 4096 /dev/urandom | dd of="$idx" bs=1 seek=64 conv=notrunc 2>/dev/null ;;
		forge) python3 "$BATS_TEST_DIRNAME/../helpers/forge-index.py" "$idx" 0 ;;
		esac
	}
	# A forged close: whatever the index says, the gate does not count it.
	mkdir -p "$AIRLOCK_STATE_DIR/gate/closed"
	echo '{"schema":"airlock.gate-close/1","receipt":5,"scope":"'"$WORK"'","move":"rerun"}' \
		>"$AIRLOCK_STATE_DIR/gate/closed/5.json"
	for d in none delete truncate garbage forge; do
		damage $d
		run "$AIRLOCK" gate
		echo "damage $d: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"receipt 5 is an open failure"* ]]
	done
	rm "$AIRLOCK_STATE_DIR/gate/closed/5.json"
	# The open entry deleted: still open through every damage but a forged
	# open list (docs/ledger.md, "The index": verify names it MISSING).
	entry=$(echo "$AIRLOCK_STATE_DIR"/gate/open/*/5.json)
	mv "$entry" "$TEST_DIR/entry"
	for d in none delete truncate garbage; do
		damage $d
		run "$AIRLOCK" gate
		[ "$status" -eq 2 ]
		[[ "$output" == *"the ledger has it open"* ]]
	done
	mv "$TEST_DIR/entry" "$entry"
	# A forged index makes the open failure look unbacked: ack refuses, the
	# gate stays closed.
	damage forge
	al ack 5 --reason "read-only"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"the ledger does not back open failure 5 (never committed)"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# The backed failure acknowledged through a damaged index; then an
	# index older than the close (replayed): the close still counts.
	damage garbage
	al ack 5 --reason "read-only"
	[ "$status" -eq 0 ]
	cp "$TEST_DIR/index.good" "$idx"
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	# The next checkpoint rebuilds what was damaged, up to the log's end.
	damage garbage
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger checkpoint >/dev/null
	python3 -c 'import struct, sys; sys.exit(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(), 64)[0] != int(sys.argv[2]))' \
		"$idx" "$(stat -c %s "$(LOG)")"
	damage delete
	"$AIRLOCK" ledger checkpoint >/dev/null
	[ -s "$idx" ]
	# A head that lies about its table (every slot taken): the appender
	# neither crashes nor loops, marks it unusable, and the next rebuilds it.
	cp "$idx" "$TEST_DIR/index.good"
	damage none
	python3 "$BATS_TEST_DIRNAME/../helpers/forge-index.py" "$idx" 0 fill
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger checkpoint >/dev/null
	"$AIRLOCK" ledger checkpoint >/dev/null
	python3 -c 'import struct, sys; sys.exit(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(), 64)[0] != int(sys.argv[2]))' \
		"$idx" "$(stat -c %s "$(LOG)")"
	verify
	[ "$status" -eq 0 ]
}

@test "every checkpoint is kept: consistency and verify --checkpoint between any two; a rewrite below an old one is caught" {
	commit_some
	cps="$AIRLOCK_STATE_DIR/ledger/checkpoints"
	cp "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$TEST_DIR/cp6"
	cmp "$cps/6" "$TEST_DIR/cp6"
	for _ in 1 2 3; do "$AIRLOCK" run -- true >/dev/null; done
	"$AIRLOCK" ledger checkpoint >/dev/null
	for _ in 1 2; do "$AIRLOCK" run -- true >/dev/null; done
	"$AIRLOCK" ledger checkpoint >/dev/null
	[ -s "$cps/9" ]
	[ -s "$cps/11" ]
	al ledger consistency 6 9
	[ "$status" -eq 0 ]
	echo "$output" >"$TEST_DIR/p69"
	[[ "$output" == *$'\n'"9"$'\n'* ]]
	al ledger consistency 9 11
	[ "$status" -eq 0 ]
	echo "$output" >"$TEST_DIR/p911"
	al ledger consistency 6 7
	[ "$status" -eq 1 ]
	one_error_line "no checkpoint of size 7 is kept"
	cp "$cps/9" "$TEST_DIR/cp9"
	al ledger verify-proof --key "$KEY" --old "$TEST_DIR/cp6" "$TEST_DIR/p69"
	[ "$status" -eq 0 ]
	al ledger verify-proof --key "$KEY" --old "$TEST_DIR/cp9" "$TEST_DIR/p911"
	[ "$status" -eq 0 ]
	al ledger verify-proof --key "$KEY" --old "$TEST_DIR/cp6" "$TEST_DIR/p911"
	[ "$status" -eq 1 ]
	verify --checkpoint "$TEST_DIR/cp6"
	[ "$status" -eq 0 ]
	verify --checkpoint "$TEST_DIR/cp9"
	[ "$status" -eq 0 ]
	# The insider with the key rewrites entry 2 (below 6) and signs afresh:
	# the checkpoints kept outside catch it.
	sed -i '2s/"time":"[^"]*"/"time":"2000-01-01T00:00:00Z"/' "$(LOG)"
	rm -r "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$AIRLOCK_STATE_DIR/ledger/range" "$cps"
	"$AIRLOCK" ledger checkpoint >/dev/null
	verify
	[ "$status" -eq 0 ]
	for old in cp6 cp9; do
		verify --checkpoint "$TEST_DIR/$old"
		[ "$status" -eq 1 ]
		[[ "$output" == *"does not extend the checkpoint given"* ]]
	done
	al ledger consistency 6
	echo "$output" >"$TEST_DIR/p6new"
	al ledger verify-proof --key "$KEY" --old "$TEST_DIR/cp6" "$TEST_DIR/p6new"
	[ "$status" -eq 1 ]
	# A kept checkpoint the log no longer extends is refused, not proved to.
	cp "$TEST_DIR/cp9" "$cps/9"
	al ledger consistency 6 9
	[ "$status" -eq 1 ]
	one_error_line "does not extend its kept checkpoint of size 9"
}

# ATTACK on verify's leniency (a cut cache is no finding): it covers only a
# record its entry carries, and a cut copy is never what a reader uses. A
# failed run's receipt cut to hide its tail (or all but its newline) passes
# verify, but show, the gate and ack see the log's whole bytes; an open
# failure (written first, its entry carries no bytes) cut is DIFFERS.
@test "attack: a cut cache hides nothing: a cut receipt is read whole from the log; a cut written-first record is DIFFERS" {
	commit_some
	r="$AIRLOCK_STATE_DIR/receipts/5.json"
	cp "$r" "$TEST_DIR/whole"
	for cut in half newline; do
		size=$(stat -c %s "$TEST_DIR/whole")
		if [ $cut = half ]; then head -c $((size / 2)) "$TEST_DIR/whole" >"$r"; else head -c -1 "$TEST_DIR/whole" >"$r"; fi
		verify
		[ "$status" -eq 0 ] || { echo "$cut: $output"; return 1; }
		run "$AIRLOCK" gate
		[ "$status" -eq 2 ]
		al show 5
		[ "$status" -eq 0 ] || { echo "$cut: $status $stderr"; return 1; }
		cmp "$TEST_DIR/whole" "$r"
	done
	jq -e '.exit_code == 1' "$r"
	open=$(find "$AIRLOCK_STATE_DIR/gate/open" -name 5.json)
	[ -n "$open" ]
	cp "$open" "$TEST_DIR/open"
	head -c 20 "$TEST_DIR/open" >"$open"
	verify
	[ "$status" -eq 2 ] && [[ "$output" == *"DIFFERS gate/open/"* ]] || { echo "$output"; return 1; }
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

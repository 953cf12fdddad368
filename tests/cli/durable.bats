#!/usr/bin/env bats
# One durable write per run (docs/ledger.md, "One commit path"): a receipt
# is committed by the one append of its ledger entry, which carries its
# bytes; receipts/N.json is a cache the log rebuilds. Kills at any moment
# leave `ledger verify` OK without `ledger recover`; a missing cache is
# rebuilt by its readers, an edited one is still DIFFERS.
load helpers

LOG() { echo "$AIRLOCK_STATE_DIR/ledger/log"; }

# Sets $lib to the fault-injection shim (tests/helpers/faultfs.c).
faultfs() {
	lib=${AIRLOCK_FAULTFS:-$(dirname "$AIRLOCK")/tests/libfaultfs.so}
	[ -e "$lib" ] || skip "the fault-injection shim is not built"
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "LD_PRELOAD under a sanitizer"
}

key() {
	"$AIRLOCK" run --sandbox=none -- true >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	KEY="$TEST_DIR/ledger.pub"
}

verify() {
	al ledger verify --key "$KEY"
}

# Every receipt entry of the log is readable by `show`, and its
# bytes are the ones the entry commits.
every_committed_receipt_readable() {
	local id sha
	while read -r id sha; do
		"$AIRLOCK" show "$id" >"$TEST_DIR/shown" || {
			echo "receipt $id not readable" >&2
			return 1
		}
		[ "$(sha256sum <"$(receipt_file "$id")" | cut -d' ' -f1)" = "$sha" ] || {
			echo "receipt $id: cache differs" >&2
			return 1
		}
	done < <(jq -r 'select(.kind == "receipt") | "\(.id) \(.sha256)"' "$(LOG)")
}

@test "a receipt's entry carries its bytes; the file is their copy" {
	key
	al run --sandbox=none -- echo hello
	[ "$status" -eq 0 ]
	id=$(jq -r .receipt <<<"$output")
	line=$(jq -c "select(.kind == \"receipt\" and .id == \"$id\")" "$(LOG)")
	# The record is the last field, exactly the file's bytes.
	[[ "$line" == *'"time":"'*'","record":"'* ]]
	jq -j .record <<<"$line" | cmp - "$(receipt_file "$id")"
	[ "$(jq -r .sha256 <<<"$line")" = "$(sha256sum <"$(receipt_file "$id")" | cut -d' ' -f1)" ]
	verify
	[ "$status" -eq 0 ]
}

@test "the cache file made while the command runs holds the entry's bytes, quarantined or not; no temporary is left" {
	key
	for sandbox in none default; do
		al run --sandbox=$sandbox -- true
		[ "$status" -eq 0 ]
		id=$(jq -r .receipt <<<"$output")
		[ -n "$id" ]
		[ "$id" != null ]
		jq -j "select(.kind == \"receipt\" and .id == \"$id\") | .record" "$(LOG)" | cmp - "$(receipt_file "$id")"
	done
	[ -z "$(find "$AIRLOCK_STATE_DIR/receipts" -mindepth 1 -maxdepth 1 -regextype posix-extended \
		! -regex '.*/([0-9]+\.json|\.pre)')" ]
	[ -z "$(ls -A "$AIRLOCK_STATE_DIR/receipts/.pre")" ]
	verify
	[ "$status" -eq 0 ]
}

# The cache file is made while the command runs (store_prepare_receipt());
# a run killed then leaves it, empty, in receipts/.pre, which the next
# run's prepare sweeps (its maker's pid gone), so kills do not pile files up.
@test "a run killed while its command runs leaves its made-ahead cache file for the next run to remove" {
	key
	"$AIRLOCK" run --sandbox=none -- sleep 30 >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -n "$(ls -A "$AIRLOCK_STATE_DIR/receipts/.pre" 2>/dev/null)" ] && break
		sleep 0.05
	done
	left=$(ls -A "$AIRLOCK_STATE_DIR/receipts/.pre")
	[[ "$left" =~ ^[0-9]+\.$pid$ ]] || { echo "made ahead: '$left'"; return 1; }
	kill -9 "$pid"
	wait "$pid" || true
	pkill -9 -f 'sleep 30' || true
	[ -e "$AIRLOCK_STATE_DIR/receipts/.pre/$left" ]
	al run --sandbox=none -- true
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$AIRLOCK_STATE_DIR/receipts/.pre")" ] || { ls -la "$AIRLOCK_STATE_DIR/receipts/.pre"; return 1; }
	verify
	[ "$status" -eq 0 ]
}

@test "a deleted receipt file is rebuilt from the log and verify stays OK; an edited one is DIFFERS" {
	key
	al run --sandbox=none -- echo hello
	id=$(jq -r .receipt <<<"$output")
	cp "$(receipt_file "$id")" "$TEST_DIR/orig"
	rm "$(receipt_file "$id")"
	verify
	[ "$status" -eq 0 ]
	[[ "$output" != *MISSING* ]]
	al show "$id"
	[ "$status" -eq 0 ]
	cmp "$TEST_DIR/orig" "$(receipt_file "$id")"
	# Deleted again: recover writes it back too.
	rm "$(receipt_file "$id")"
	al ledger recover
	[ "$status" -eq 0 ]
	cmp "$TEST_DIR/orig" "$(receipt_file "$id")"
	# Edited: tampering with the cache is still named.
	jq '.exit_code = 7' "$TEST_DIR/orig" >"$(receipt_file "$id")"
	verify
	[ "$status" -eq 2 ]
	[[ "$output" == *"DIFFERS receipts/$id.json"* ]]
}

@test "a failed run's receipt whose file is gone still backs the gate" {
	key
	al run -- sh -c 'test -e ok'
	id=$(jq -r .receipt <<<"$output")
	rm "$(receipt_file "$id")"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"receipt $id is an open failure"* ]]
	# The fix's re-run closes it: the gate reads the rebuilt receipt.
	touch ok
	al run --fixes "$id" -- true
	[ "$status" -eq 0 ]
	rm "$(receipt_file "$id")"
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	verify
	[ "$status" -eq 0 ]
}

@test "SIGKILL right after the entry's append, before the file: verify OK, the receipt readable" {
	faultfs
	key
	LD_PRELOAD=$lib FAULTFS_KILL_AFTER_WRITE='"kind":"receipt"' run "$AIRLOCK" run --sandbox=none -- echo hi
	[ "$status" -eq 137 ]
	id=$(jq -r 'select(.kind == "receipt") | .id' "$(LOG)" | tail -n 1)
	[ ! -e "$(receipt_file "$id")" ]
	verify
	[ "$status" -eq 0 ]
	al show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"exit_code": 0'* ]]
	every_committed_receipt_readable
}

@test "concurrent appenders under an fdatasync error: none reports success, the ledger is poisoned" {
	faultfs
	key
	for _ in $(seq 1 8); do
		(
			rc=0
			LD_PRELOAD=$lib FAULTFS_FDATASYNC_EIO=1 "$AIRLOCK" run --sandbox=none -- true \
				>/dev/null 2>&1 || rc=$?
			echo "$rc" >>"$TEST_DIR/codes"
		) &
	done
	wait
	[ "$(wc -l <"$TEST_DIR/codes")" -eq 8 ]
	[ "$(grep -cvx 125 "$TEST_DIR/codes")" -eq 0 ]
	[ -e "$AIRLOCK_STATE_DIR/ledger/poisoned" ]
}

@test "16 processes committing at once share syncs: every entry once, in order, verify OK" {
	key
	for _ in $(seq 1 16); do
		(for _ in 1 2 3 4; do "$AIRLOCK" run --sandbox=none -- true >/dev/null; done) &
	done
	wait
	verify
	[ "$status" -eq 0 ]
	jq -e '.size == 65' <<<"$output"
	jq -se '[.[].seq] == [range(65)]' "$(LOG)"
	every_committed_receipt_readable
}

@test "300 concurrent runs, every third SIGKILLed at a random moment: verify OK with no recover" {
	key
	for batch in $(seq 0 11); do
		pids=()
		for i in $(seq 0 24); do
			"$AIRLOCK" run --sandbox=none -- true >/dev/null 2>&1 &
			pids+=($!)
			if [ $(((batch * 25 + i) % 3)) -eq 2 ]; then
				(sleep "0.0$((RANDOM % 30))"; kill -9 "${pids[-1]}" 2>/dev/null) &
			fi
		done
		wait
	done
	verify
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *RECORDS_DIFFER* ]]
	every_committed_receipt_readable
}

@test "after a power loss the counter and the files may be behind the ledger: no committed id is handed out again" {
	key
	for _ in 1 2 3; do "$AIRLOCK" run --sandbox=none -- true >/dev/null; done
	# What a power loss can leave: the counter's last updates and the
	# unsynced receipt files lost (the ledger's entries are durable); the
	# counter written in another boot.
	printf '%020d\n%s\n' 1 00000000-0000-0000-0000-000000000000 >"$AIRLOCK_STATE_DIR/seq"
	rm "$(receipt_file 3)" "$(receipt_file 4)"
	al run --sandbox=none -- true
	[ "$status" -eq 0 ]
	[ "$(jq -r .receipt <<<"$output")" -eq 5 ]
	# In the same boot the counter is trusted again: no scan.
	al run --sandbox=none -- true
	[ "$(jq -r .receipt <<<"$output")" -eq 6 ]
	verify
	[ "$status" -eq 0 ]
	[ "$(jq -s '[.[] | select(.kind == "receipt") | .id] | unique | length' "$(LOG)")" -eq 6 ]
	every_committed_receipt_readable
}

# What a power loss leaves of an unsynced cache: nothing, a prefix of it, or
# its blocks allocated and never written (NULs). cut MODE FILE.
cut_cache() {
	local size
	size=$(stat -c %s "$2")
	case $1 in
	empty) : >"$2" ;;
	prefix) head -c $((size / 2)) "$2" >"$TEST_DIR/cut" && cat "$TEST_DIR/cut" >"$2" ;;
	zeros) head -c "$size" /dev/zero >"$2" ;;
	esac
}

@test "a receipt's cache cut by a power loss (empty, a prefix, NULs) is no finding; ledger recover writes it back, readers read the log" {
	key
	for mode in empty prefix zeros; do
		al run --sandbox=none -- echo "$mode"
		id=$(receipt_id)
		cp "$(receipt_file "$id")" "$TEST_DIR/whole"
		cut_cache "$mode" "$(receipt_file "$id")"
		verify
		[ "$status" -eq 0 ] || { echo "$mode: $output $stderr"; return 1; }
		al ledger recover
		[ "$status" -eq 0 ]
		cmp "$TEST_DIR/whole" "$(receipt_file "$id")"
		cut_cache "$mode" "$(receipt_file "$id")"
		al show "$id"
		[ "$status" -eq 0 ]
		cmp "$TEST_DIR/whole" "$(receipt_file "$id")"
	done
	# Bytes that are no cut of the entry's are still a finding.
	echo '{"edited": true}' >"$(receipt_file "$id")"
	verify
	[ "$status" -ne 0 ]
	[[ "$output" == *DIFFERS* ]]
}

# A dry run's change set is carried by its entry too: one sync less (its
# file is a cache, written after the entry and never synced). Its
# directory is still synced before the entry: the permit's mark and the
# empty journal made there must be durable with the dry run.
@test "a dry run's change set is carried by its entry: its file is never synced, its directory is, before the entry" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	key
	traced -f -qq -y -e trace=fsync,fdatasync,openat -o "$TEST_DIR/trace" \
		"$AIRLOCK" dryrun --json --expect 'g' -- sh -c 'echo 1 > g' >"$TEST_DIR/out"
	id=$(jq -r .id "$TEST_DIR/out")
	cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	line=$(jq -c "select(.kind == \"dryrun\" and .id == \"$id\")" "$(LOG)")
	jq -j .record <<<"$line" | cmp - "$cs"
	! grep -E "fsync\([0-9]+<[^>]*changeset\.json" "$TEST_DIR/trace" || { cat "$TEST_DIR/trace"; return 1; }
	dsync=$(grep -nE "^[0-9]+ +fsync\([0-9]+<[^>]*/dryruns/$id>\)" "$TEST_DIR/trace" | head -1 | cut -d: -f1)
	dsync_log=$(grep -nE "fdatasync\([0-9]+<[^>]*/ledger/log>" "$TEST_DIR/trace" | head -1 | cut -d: -f1)
	[ -n "$dsync" ] && [ -n "$dsync_log" ] || { cat "$TEST_DIR/trace"; return 1; }
	[ "$dsync" -lt "$dsync_log" ]
	verify
	[ "$status" -eq 0 ]
}

@test "a change set's cache cut by a power loss, or lost: apply and permits read the log's bytes; verify finds nothing; recover writes it back" {
	key
	n=0
	for mode in empty prefix zeros missing; do
		n=$((n + 1))
		al dryrun --json --expect "f$n" -- sh -c "echo $n > f$n"
		[ "$status" -eq 0 ]
		id=$(jq -r .id <<<"$output")
		cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
		cp "$cs" "$TEST_DIR/whole"
		if [ "$mode" = missing ]; then rm "$cs"; else cut_cache "$mode" "$cs"; fi
		verify
		[ "$status" -eq 0 ] || { echo "$mode: $output $stderr"; return 1; }
		al ledger recover
		[ "$status" -eq 0 ]
		cmp "$TEST_DIR/whole" "$cs"
		if [ "$mode" = missing ]; then rm "$cs"; else cut_cache "$mode" "$cs"; fi
		al apply "$id"
		[ "$status" -eq 0 ] || { echo "$mode: $stderr"; return 1; }
		[ "$(cat "f$n")" = "$n" ]
		cmp "$TEST_DIR/whole" "$cs"
	done
	# A change set rewritten is refused, as before.
	al dryrun --json --expect 'h' -- sh -c 'echo 1 > h'
	id=$(jq -r .id <<<"$output")
	sed -i 's/"h"/"i"/' "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	al apply "$id"
	[ "$status" -ne 0 ]
	[ ! -e i ]
	[ ! -e h ]
}

# A dry run killed at each point of its commit: its directory's sync, the
# change set's entry, the receipt's, the covering sync, the cache's
# temporary and its rename, the receipt's cache. After any of them `ledger verify` is OK with no
# manual step, and apply either applies the change set the ledger carries
# or refuses with a message; nothing is applied that the ledger does not
# back.
@test "a dry run killed at every point of its commit: verify OK with no step; apply applies the carried change set or refuses" {
	faultfs
	key
	n=0
	for point in 'write:"kind":"dryrun"' 'write:"kind":"receipt"' 'write:{"schema":"airlock.changeset' \
		'rename:changeset.json' 'write:"schema": "airlock.receipt'; do
		n=$((n + 1))
		kind=${point%%:*} what=${point#*:}
		before=$(find "$AIRLOCK_STATE_DIR/dryruns" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -n | tail -1)
		if [ "$kind" = write ]; then
			LD_PRELOAD=$lib FAULTFS_KILL_AFTER_WRITE=$what run "$AIRLOCK" dryrun --expect "k$n" -- sh -c "echo $n > k$n"
		else
			LD_PRELOAD=$lib FAULTFS_KILL_AFTER_RENAME=$what run "$AIRLOCK" dryrun --expect "k$n" -- sh -c "echo $n > k$n"
		fi
		[ "$status" -eq 137 ] || { echo "$point: not killed ($status): $output"; return 1; }
		id=$(find "$AIRLOCK_STATE_DIR/dryruns" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
		[ -n "$id" ]
		[ "$id" != "$before" ]
		verify
		[ "$status" -eq 0 ] || { echo "$point: verify: $output $stderr"; return 1; }
		[ ! -e "k$n" ]
		al apply "$id"
		echo "$point: apply $id: $status $stderr"
		if [ "$status" -eq 0 ]; then
			[ "$(cat "k$n")" = "$n" ]
			# What was applied is what the entry carries.
			jq -j "select(.kind == \"dryrun\" and .id == \"$id\") | .record" "$(LOG)" |
				cmp - "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
		else
			[ -n "$stderr" ]
			[ ! -e "k$n" ]
		fi
		verify
		[ "$status" -eq 0 ] || { echo "$point: verify after apply: $output $stderr"; return 1; }
	done
}

# A cut that leaves a cache still a JSON document: all of it but its last
# newline (a power loss at a block boundary one byte before the end). It is
# a torn copy to verify; to readers too, so apply does not refuse what
# verify calls no finding.
@test "a change set's or receipt's cache cut to all but its newline (still JSON): readers take the log's bytes, as verify does" {
	key
	al dryrun --json --expect f -- sh -c 'echo 1 > f'
	id=$(jq -r .id <<<"$output")
	cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	cp "$cs" "$TEST_DIR/whole"
	head -c -1 "$TEST_DIR/whole" >"$cs"
	jq -e . "$cs" >/dev/null
	verify
	[ "$status" -eq 0 ]
	al apply "$id"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(cat f)" = 1 ]
	cmp "$TEST_DIR/whole" "$cs"
	al run --sandbox=none -- echo hi
	rid=$(receipt_id)
	cp "$(receipt_file "$rid")" "$TEST_DIR/receipt"
	head -c -1 "$TEST_DIR/receipt" >"$(receipt_file "$rid")"
	verify
	[ "$status" -eq 0 ]
	al show "$rid"
	[ "$status" -eq 0 ]
	cmp "$TEST_DIR/receipt" "$(receipt_file "$rid")"
}

# Apply checks that the ledger backs the bytes it parsed, not the file as it
# is at the check: a torn cache the reader could not write back (here an
# immutable file; as well a cache swapped between the read and the check)
# is no reason to refuse the log's bytes, nor a way past the check.
@test "apply checks the change set it read against the ledger, not the file at the check" {
	key
	al dryrun --json --expect f -- sh -c 'echo 1 > f'
	id=$(jq -r .id <<<"$output")
	cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	head -c 100 "$cs" >"$TEST_DIR/cut" && cat "$TEST_DIR/cut" >"$cs"
	chattr +i "$cs" 2>/dev/null || skip "no immutable files here (root on ext4 or the like)"
	al apply "$id"
	chattr -i "$cs"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(cat f)" = 1 ]
	cmp "$TEST_DIR/cut" "$cs"
}

# A change set too large for its entry (over 64 KiB) is written first, as
# every change set was before: durable before its entry, which carries no
# record. It applies; cut, it is a finding and refused (the log has no
# bytes to read instead).
@test "a change set over 64 KiB is written first: its entry has no record, apply works, a cut one is refused and DIFFERS" {
	key
	al dryrun --json --expect 'big-*' -- sh -c 'i=0; while [ $i -lt 700 ]; do echo $i > big-$i-padding-padding-padding-padding-padding; i=$((i+1)); done'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	id=$(jq -r .id <<<"$output")
	cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	[ "$(stat -c %s "$cs")" -gt 65536 ]
	line=$(jq -c "select(.kind == \"dryrun\" and .id == \"$id\")" "$(LOG)")
	[ "$(jq -r 'has("record")' <<<"$line")" = false ]
	[ "$(jq -r .sha256 <<<"$line")" = "$(sha256sum <"$cs" | cut -d' ' -f1)" ]
	verify
	[ "$status" -eq 0 ]
	cp "$cs" "$TEST_DIR/whole"
	# A prefix small enough to be a carried record's torn cache is no cut
	# of any record here: a finding, and apply refuses it.
	head -c 1000 "$TEST_DIR/whole" >"$cs"
	verify
	[ "$status" -ne 0 ]
	[[ "$output" == *DIFFERS* ]]
	al apply "$id"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"invalid JSON"* ]]
	[ ! -e big-1-padding-padding-padding-padding-padding ]
	# All but its newline: the same.
	head -c -1 "$TEST_DIR/whole" >"$cs"
	al apply "$id"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"does not back"* ]]
	cp "$TEST_DIR/whole" "$cs"
	al apply "$id"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(cat big-699-padding-padding-padding-padding-padding)" = 699 ]
	verify
	[ "$status" -eq 0 ]
}

# ATTACK: bytes an entry did carry, but not this path's: dry run B's cache
# replaced by dry run A's change set (a valid document the ledger backs
# elsewhere, whole or cut), or by a prefix of its own that is a document.
@test "attack: a change set's cache holding an earlier dry run's carried bytes is refused, and DIFFERS" {
	key
	al dryrun --json --expect a -- sh -c 'echo 1 > a'
	a=$(jq -r .id <<<"$output")
	al dryrun --json --expect b -- sh -c 'echo 1 > b'
	b=$(jq -r .id <<<"$output")
	csa="$AIRLOCK_STATE_DIR/dryruns/$a/changeset.json"
	csb="$AIRLOCK_STATE_DIR/dryruns/$b/changeset.json"
	cp "$csb" "$TEST_DIR/b"
	for forged in whole cut; do
		if [ $forged = whole ]; then cp "$csa" "$csb"; else head -c -1 "$csa" >"$csb"; fi
		verify
		[ "$status" -ne 0 ] && [[ "$output" == *"DIFFERS dryruns/$b/changeset.json"* ]] ||
			{ echo "$forged: $output"; return 1; }
		al apply "$b"
		[ "$status" -ne 0 ] && [[ "$stderr" == *"does not back"* ]] || { echo "$forged: $status $stderr"; return 1; }
		[ ! -e a ]
		[ ! -e b ]
	done
	cp "$TEST_DIR/b" "$csb"
	al apply "$b"
	[ "$status" -eq 0 ]
	[ -e b ]
	[ ! -e a ]
}

# A reader racing the writer: apply of a dry run whose change set's entry is
# appended but not yet synced, its cache not yet written (the writer's
# pending write, after the sync). The reader takes the log's bytes and
# writes the cache back; the writer's later write of the same bytes finds
# it there and leaves it. Whatever the interleaving: verify OK, each cache
# is its entry's bytes, each change applied once.
@test "apply racing its dry run's pending cache write: the log serves it, one cache, verify OK" {
	key
	for i in $(seq 12); do
		id=$(($(jq -r 'select(.kind == "receipt") | .id' "$(LOG)" | sort -n | tail -1) + 1))
		"$AIRLOCK" dryrun --expect "r$i" -- sh -c "echo $i > r$i" >/dev/null 2>&1 &
		pid=$!
		applied=no
		while :; do
			if grep -q "\"kind\":\"dryrun\",\"id\":\"$id\"" "$(LOG)" 2>/dev/null; then
				[ -e "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json" ] && cache=yes || cache=no
				if "$AIRLOCK" apply "$id" >/dev/null 2>"$TEST_DIR/err"; then
					applied="yes (a cache before: $cache)"
					break
				fi
			fi
			kill -0 "$pid" 2>/dev/null || break
		done
		wait "$pid"
		[ "$applied" != no ] || "$AIRLOCK" apply "$id"
		[ "$(cat "r$i")" = "$i" ]
		jq -j "select(.kind == \"dryrun\" and .id == \"$id\") | .record" "$(LOG)" |
			cmp - "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
		[ -z "$(find "$AIRLOCK_STATE_DIR/dryruns/$id" -maxdepth 1 -name '.changeset.json.*')" ]
		echo "# $i: applied while the dry run ran: $applied"
	done
	verify
	[ "$status" -eq 0 ]
}

# A deferral whose sync never comes: the dry run's change set was appended,
# the covering fdatasync failed (the ledger is poisoned), so its cache is
# never written. Its entry may not be durable: apply refuses before it
# touches the tree until `ledger recover` (which syncs the log); then the
# log serves the change set.
@test "a dry run whose covering sync fails: no cache; apply refuses while the ledger is poisoned, then the log serves it" {
	faultfs
	key
	LD_PRELOAD=$lib FAULTFS_FDATASYNC_EIO=1 run "$AIRLOCK" dryrun --expect e -- sh -c 'echo 1 > e'
	[ "$status" -ne 0 ]
	id=$(find "$AIRLOCK_STATE_DIR/dryruns" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json" ]
	[ -e "$AIRLOCK_STATE_DIR/ledger/poisoned" ]
	al apply "$id"
	[ "$status" -ne 0 ] && [[ "$stderr" == *"ledger recover"* ]] || { echo "$status $stderr"; return 1; }
	[ ! -e e ]
	[ ! -s "$AIRLOCK_STATE_DIR/dryruns/$id/journal" ]
	al ledger recover
	[ "$status" -eq 0 ]
	verify
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	if grep -q "\"kind\":\"dryrun\",\"id\":\"$id\"" "$(LOG)"; then
		al apply "$id"
		[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
		[ "$(cat e)" = 1 ]
		jq -j "select(.kind == \"dryrun\" and .id == \"$id\") | .record" "$(LOG)" |
			cmp - "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	fi
	verify
	[ "$status" -eq 0 ]
}

# What a power loss leaves of an unsynced cache can also be its size with
# some blocks never written: the entry's bytes with NUL runs where those
# blocks are (a block written after the one before it, or not at all). A
# torn copy too: no finding, and its readers take the log's bytes. Bytes
# that are neither the entry's nor NUL are still DIFFERS.
@test "a cache whose size survived a power loss but some of its blocks did not (NULs among its bytes) is torn: no finding, read from the log" {
	key
	al dryrun --json --expect 'b*' -- sh -c 'for i in $(seq 80); do echo $i > b$i; done'
	[ "$status" -eq 0 ]
	id=$(jq -r .id <<<"$output")
	cs="$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	size=$(stat -c %s "$cs")
	[ "$size" -gt 8192 ]
	cp "$cs" "$TEST_DIR/whole"
	for hole in tail head middle; do
		case $hole in
		tail) { head -c 4096 "$TEST_DIR/whole"; head -c $((size - 4096)) /dev/zero; } >"$cs" ;;
		head) { head -c 4096 /dev/zero; tail -c +4097 "$TEST_DIR/whole"; } >"$cs" ;;
		middle) { head -c 4096 "$TEST_DIR/whole"; head -c 4096 /dev/zero; tail -c +8193 "$TEST_DIR/whole"; } >"$cs" ;;
		esac
		[ "$(stat -c %s "$cs")" -eq "$size" ]
		verify
		[ "$status" -eq 0 ] || { echo "$hole: $output"; return 1; }
		al ledger recover
		[ "$status" -eq 0 ]
		cmp "$TEST_DIR/whole" "$cs"
	done
	{ head -c 4096 "$TEST_DIR/whole"; head -c $((size - 4096)) /dev/zero; } >"$cs"
	al apply "$id"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(cat b80)" = 80 ]
	cmp "$TEST_DIR/whole" "$cs"
	# A NUL run over bytes that are not the entry's is a rewrite.
	al run --sandbox=none -- echo hi
	rid=$(receipt_id)
	r=$(receipt_file "$rid")
	{ head -c 20 /dev/zero; tail -c +21 "$r" | sed 's/"exit_code": 0/"exit_code": 7/'; } >"$TEST_DIR/forged"
	cp "$TEST_DIR/forged" "$r"
	verify
	[ "$status" -ne 0 ]
	[[ "$output" == *"DIFFERS receipts/$rid.json"* ]]
}

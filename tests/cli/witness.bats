#!/usr/bin/env bats
# Witnesses (docs/witness.md): `airlock witness serve` cosigns the ledger's
# checkpoints over HTTP (C2SP tlog-witness), never a fork; `ledger push`
# sends them; `ledger verify --policy` wants a quorum of cosignatures.
load helpers

setup() {
	setup_dirs
}

teardown() {
	for f in "$TEST_DIR"/*.pid; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	rm -rf "$TEST_DIR"
}

# A few runs, a checkpoint; the log's vkey in $TEST_DIR/log.pub.
commit_some() {
	for _ in $(seq "${1:-3}"); do "$AIRLOCK" run -- true >/dev/null; done
	"$AIRLOCK" ledger checkpoint >/dev/null
	"$AIRLOCK" ledger key >"$TEST_DIR/log.pub"
}

origin() { cut -d+ -f1 "$TEST_DIR/log.pub"; }

# Starts (or restarts) witness $1 with its own state directory, accepting
# this ledger's log; its vkey in $1.pub, its URL in $1.url. Port 0: the
# kernel picks a free one, the witness prints it.
serve() {
	local n=$1 dir="$TEST_DIR/$1"
	if [ ! -d "$dir" ]; then
		"$AIRLOCK" witness init --state-dir "$dir" >/dev/null
		"$AIRLOCK" witness key --state-dir "$dir" >"$TEST_DIR/$n.pub"
		"$AIRLOCK" witness add-log "$(origin)" "$(cat "$TEST_DIR/log.pub")" --state-dir "$dir"
	fi
	: >"$TEST_DIR/$n.out"
	"$AIRLOCK" witness serve --state-dir "$dir" --listen 127.0.0.1:0 \
		>"$TEST_DIR/$n.out" 2>&1 3>&- &
	echo $! >"$TEST_DIR/$n.pid"
	for _ in $(seq 100); do
		grep -q "listening on" "$TEST_DIR/$n.out" && break
		sleep 0.05
	done
	local port
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TEST_DIR/$n.out")
	[ -n "$port" ] || { cat "$TEST_DIR/$n.out" >&2; return 1; }
	echo "http://127.0.0.1:$port" >"$TEST_DIR/$n.url"
}

use() {
	"$AIRLOCK" ledger witness add "$1" "$(cat "$TEST_DIR/$1.url")" "$(cat "$TEST_DIR/$1.pub")"
}

# policy FILE QUORUM-LINE... : the log and both witnesses, then the lines.
policy() {
	local f=$1
	shift
	{
		echo "log $(cat "$TEST_DIR/log.pub")"
		for w in w1 w2; do
			[ -e "$TEST_DIR/$w.pub" ] && echo "witness $w $(cat "$TEST_DIR/$w.pub")"
		done
		printf '%s\n' "$@"
	} >"$TEST_DIR/$f"
}

held() { cat "$TEST_DIR/$1"/logs/*.cp; }

post() {
	run curl -s -o "$TEST_DIR/body" -w '%{http_code} %{content_type}' --data-binary "@$2" \
		"$(cat "$TEST_DIR/$1.url")/add-checkpoint"
}

@test "push to one and two witnesses; verify with a quorum of 1 and 2" {
	commit_some
	serve w1
	serve w2
	use w1
	al ledger push
	[ "$status" -eq 0 ]
	sed -n 2p "$AIRLOCK_STATE_DIR/ledger/remotes/w1" | grep -q "^— airlock.local/witness/"
	policy one.pol "quorum w1"
	policy two.pol "group both all w1 w2" "quorum both"
	al ledger verify --policy "$TEST_DIR/one.pol"
	[ "$status" -eq 0 ]
	jq -e '.verdict == "OK" and .cosigned_by == 1' <<<"$output"
	al ledger verify --policy "$TEST_DIR/two.pol"
	[ "$status" -eq 4 ]
	jq -e '.verdict == "NO_QUORUM"' <<<"$output"
	one_error_line "no quorum: 1 of the policy's 2 witnesses cosigned checkpoint 3"
	use w2
	al ledger witness list
	[ "$(wc -l <<<"$output")" -eq 2 ]
	al ledger push
	[ "$status" -eq 0 ]
	al ledger verify --policy "$TEST_DIR/two.pol"
	[ "$status" -eq 0 ]
	jq -e '.cosigned_by == 2' <<<"$output"
	# A new checkpoint: the cosignatures are of the old one until pushed.
	commit_some 2
	al ledger verify --policy "$TEST_DIR/one.pol"
	[ "$status" -eq 4 ]
	one_error_line "0 of the policy's 2 witnesses cosigned checkpoint 5"
	al ledger push
	[ "$status" -eq 0 ]
	al ledger verify --policy "$TEST_DIR/two.pol"
	[ "$status" -eq 0 ]
	held w1 | head -2 | tail -1 | grep -qx 5
	# --key and the policy's log key must agree; a policy inside the state dir is refused.
	cp "$TEST_DIR/one.pol" "$AIRLOCK_STATE_DIR/p"
	al ledger verify --policy "$AIRLOCK_STATE_DIR/p"
	[ "$status" -eq 125 ]
	one_error_line "inside the state directory"
	al ledger witness remove w2
	[ "$status" -eq 0 ]
	al ledger witness remove w2
	[ "$status" -eq 1 ]
}

@test "a restored, rewritten, truncated or re-keyed ledger: the witness refuses and never cosigns the fork" {
	commit_some
	serve w1
	use w1
	cp -a "$AIRLOCK_STATE_DIR" "$TEST_DIR/backup"
	commit_some 3
	al ledger push
	[ "$status" -eq 0 ]
	held w1 >"$TEST_DIR/good"
	sed -n 2p "$TEST_DIR/good" | grep -qx 6

	# Restored from the backup (3 entries, its own remotes/ says nothing pushed).
	rm -rf "$AIRLOCK_STATE_DIR"
	cp -a "$TEST_DIR/backup" "$AIRLOCK_STATE_DIR"
	al ledger push
	[ "$status" -eq 1 ]
	one_error_line "remote w1 holds 6 entries and refuses the ledger's checkpoint of 3: conflict"

	# ... then grown past the witness on another history: the proof fails.
	commit_some 5
	al ledger push
	[ "$status" -eq 1 ]
	one_error_line "witness w1 refused (422)"
	held w1 | cmp - "$TEST_DIR/good"

	# Truncated and re-signed with the same key.
	rm -rf "$AIRLOCK_STATE_DIR/ledger/remotes" "$AIRLOCK_STATE_DIR/ledger/checkpoint" \
		"$AIRLOCK_STATE_DIR/ledger/checkpoints" "$AIRLOCK_STATE_DIR/ledger/index"
	head -n 2 "$AIRLOCK_STATE_DIR/ledger/log" >"$TEST_DIR/cut"
	cat "$TEST_DIR/cut" >"$AIRLOCK_STATE_DIR/ledger/log"
	"$AIRLOCK" ledger checkpoint >/dev/null
	al ledger push
	[ "$status" -eq 1 ]
	one_error_line "holds 6 entries and refuses the ledger's checkpoint of 2"
	held w1 | cmp - "$TEST_DIR/good"

	# Re-keyed: a new key is a new origin, which the witness does not know.
	rm -rf "$AIRLOCK_STATE_DIR/ledger/key" "$AIRLOCK_STATE_DIR/ledger/key.pub" \
		"$AIRLOCK_STATE_DIR/ledger/checkpoint" "$AIRLOCK_STATE_DIR/ledger/checkpoints"
	"$AIRLOCK" ledger checkpoint >/dev/null
	al ledger push
	[ "$status" -ne 0 ]
	one_error_line "witness w1 refused (404): unknown log"
	held w1 | cmp - "$TEST_DIR/good"
}

@test "bad requests: malformed body or proof, a wrong old size, a bad signature, an oversized body" {
	commit_some
	serve w1
	cp "$AIRLOCK_STATE_DIR/ledger/checkpoint" "$TEST_DIR/cp"
	{ echo "old 0"; echo; cat "$TEST_DIR/cp"; } >"$TEST_DIR/ok"
	post w1 "$TEST_DIR/ok"
	[ "$output" = "200 text/plain; charset=utf-8" ]
	grep -q "^— airlock.local/witness/" "$TEST_DIR/body"
	# The same again from 0: it holds 3.
	post w1 "$TEST_DIR/ok"
	[ "$output" = "409 text/x.tlog.size" ]
	[ "$(cat "$TEST_DIR/body")" = 3 ]
	printf 'garbage' >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 400 ]
	[ "$(grep -c . "$TEST_DIR/body")" -eq 1 ]
	{ echo "old 3"; echo "not base64!"; echo; cat "$TEST_DIR/cp"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 400 ]
	grep -q "proof line" "$TEST_DIR/body"
	{ echo "old 03"; echo; cat "$TEST_DIR/cp"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 400 ]
	{ echo "old 9"; echo; cat "$TEST_DIR/cp"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 400 ]
	grep -q "above the checkpoint" "$TEST_DIR/body"
	# A signature by the log's name that does not verify.
	{ echo "old 3"; echo; sed 's/^\(— [^ ]* \)A/\1B/; t; s/^\(— [^ ]* \)./\1A/' "$TEST_DIR/cp"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 403 ]
	# Another origin.
	{ echo "old 0"; echo; sed '1s/.*/example.com\/other/' "$TEST_DIR/cp"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 404 ]
	# A proof that does not verify (right shape, wrong hashes).
	commit_some 2
	{ echo "old 3"; for _ in 1 2 3; do echo "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="; done
	  echo; cat "$AIRLOCK_STATE_DIR/ledger/checkpoint"; } >"$TEST_DIR/req"
	post w1 "$TEST_DIR/req"
	[ "${output%% *}" = 422 ]
	held w1 | sed -n 2p | grep -qx 3
	head -c 100000 /dev/zero | tr '\0' 'a' >"$TEST_DIR/big"
	post w1 "$TEST_DIR/big"
	[ "${output%% *}" = 413 ]
	run curl -s -o /dev/null -w '%{http_code}' "$(cat "$TEST_DIR/w1.url")/add-checkpoint"
	[ "$output" = 405 ]
	# Still serving.
	kill -0 "$(cat "$TEST_DIR/w1.pid")"
}

@test "verify refuses a forged cosignature, a witness not in the policy, another origin, a bad policy" {
	commit_some
	serve w1
	use w1
	al ledger push
	[ "$status" -eq 0 ]
	policy one.pol "quorum w1"
	# w2's key in the policy, w1's cosignature kept: not counted.
	mkdir -p "$TEST_DIR/other"
	"$AIRLOCK" witness init --state-dir "$TEST_DIR/other" >/dev/null
	{ echo "log $(cat "$TEST_DIR/log.pub")"
	  echo "witness w2 $("$AIRLOCK" witness key --state-dir "$TEST_DIR/other")"
	  echo "quorum w2"; } >"$TEST_DIR/stranger.pol"
	al ledger verify --policy "$TEST_DIR/stranger.pol"
	[ "$status" -eq 4 ]
	one_error_line "(1 cosignatures by keys not in the policy ignored)"
	# A forged cosignature: another signature under w1's name and key id.
	f="$AIRLOCK_STATE_DIR/ledger/remotes/w1"
	python3 - "$f" <<-'EOF'
		import base64, sys
		p = sys.argv[1]
		size, line = open(p).read().split("\n")[:2]
		head, b64 = line.rsplit(" ", 1)
		raw = bytearray(base64.b64decode(b64))
		raw[-1] ^= 1
		open(p, "w").write(size + "\n" + head + " " + base64.b64encode(bytes(raw)).decode() + "\n")
	EOF
	al ledger verify --policy "$TEST_DIR/one.pol"
	[ "$status" -eq 4 ]
	one_error_line "the cosignature by witness w1"
	[[ "$stderr" == *"does not verify"* ]]
	# Another log's checkpoint: a policy for another origin.
	AIRLOCK_STATE_DIR="$TEST_DIR/state2" "$AIRLOCK" ledger key >"$TEST_DIR/other.pub"
	{ echo "log $(cat "$TEST_DIR/other.pub")"; echo "quorum none"; } >"$TEST_DIR/origin.pol"
	al ledger verify --policy "$TEST_DIR/origin.pol"
	[ "$status" -eq 1 ]
	one_error_line "the checkpoint is for origin $(origin), not the policy's log"
	# Bad policies: each a one-line reason.
	for bad in "quorum w1" "log nonsense" "$(echo "log $(cat "$TEST_DIR/log.pub")"; echo "quorum w9")" \
		"$(echo "log $(cat "$TEST_DIR/log.pub")"; echo "witness w1 $(cat "$TEST_DIR/log.pub")"; echo "quorum w1")" \
		"$(echo "log $(cat "$TEST_DIR/log.pub")"; echo "group g 2 w1"; echo "quorum g")"; do
		printf '%s\n' "$bad" >"$TEST_DIR/bad.pol"
		al ledger verify --policy "$TEST_DIR/bad.pol"
		[ "$status" -eq 125 ]
		one_error_line "bad.pol"
	done
}

@test "the witness's state survives kill -9; served again, it holds what it cosigned" {
	commit_some
	serve w1
	use w1
	al ledger push
	[ "$status" -eq 0 ]
	kill -9 "$(cat "$TEST_DIR/w1.pid")"
	wait "$(cat "$TEST_DIR/w1.pid")" 2>/dev/null || true
	serve w1
	"$AIRLOCK" ledger witness remove w1
	use w1
	# The local record of what it holds lost too: it says 3, and the push goes on from there.
	rm -rf "$AIRLOCK_STATE_DIR/ledger/remotes"
	commit_some 4
	al ledger push
	[ "$status" -eq 0 ]
	held w1 | sed -n 2p | grep -qx 7
	[ "$(head -1 "$AIRLOCK_STATE_DIR/ledger/remotes/w1")" = 7 ]
	# An unreachable witness: the push fails with a reason, the runs go on.
	kill -9 "$(cat "$TEST_DIR/w1.pid")"
	run "$AIRLOCK" run -- true
	[ "$status" -eq 0 ]
	commit_some 1
	al ledger push
	[ "$status" -eq 125 ]
	one_error_line "remote w1"
}

@test "witness and ledger witness: bad arguments are refused" {
	al witness serve
	[ "$status" -eq 125 ]
	one_error_line "--state-dir"
	al witness key --state-dir "$TEST_DIR/none"
	[ "$status" -eq 125 ]
	"$AIRLOCK" witness init --state-dir "$TEST_DIR/w"
	al witness add-log example.com/log "example.com/log+00000000+AQ==" --state-dir "$TEST_DIR/w"
	[ "$status" -eq 125 ]
	al witness serve --state-dir "$TEST_DIR/w" --listen nonsense
	[ "$status" -eq 125 ]
	al ledger witness add w1 ftp://x "$("$AIRLOCK" witness key --state-dir "$TEST_DIR/w")"
	[ "$status" -eq 125 ]
	one_error_line "http:// or https://"
	al ledger witness add W1 http://x "$("$AIRLOCK" witness key --state-dir "$TEST_DIR/w")"
	[ "$status" -eq 125 ]
	al ledger witness add w1 http://x "not a key"
	[ "$status" -eq 125 ]
	al ledger witness add w1 http://x "$("$AIRLOCK" witness key --state-dir "$TEST_DIR/w")"
	[ "$status" -eq 0 ]
	al ledger witness add w1 http://x "$("$AIRLOCK" witness key --state-dir "$TEST_DIR/w")"
	[ "$status" -eq 125 ]
	one_error_line "configured already"
}

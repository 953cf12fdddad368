#!/usr/bin/env bats
# airlock run: execution, exit statuses, process control, output, environment.
load helpers

@test "a success prints one JSON line and exits 0" {
	al run -- true
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	jq -e '.receipt >= 1 and .exit == 0 and .bytes == 0 and .timed_out == false and .match_expected == true' <<<"$output"
	[ -z "$stderr" ]
}

@test "the receipt keeps every seed field with its meaning" {
	al run --job-id j-1 --why "check it" -- sh -c 'echo out; echo err >&2; exit 3'
	[ "$status" -eq 3 ]
	[ "$(rq .job_id)" = j-1 ]
	[ "$(rq '.argv | join(" ")')" = "sh -c echo out; echo err >&2; exit 3" ]
	[ "$(rq .cwd)" = "$(pwd -P)" ]
	[ "$(rq .timeout_sec)" = 30 ]
	[ "$(rq .expected_exit)" = 0 ]
	[ "$(rq .exit_code)" = 3 ]
	[ "$(rq .timed_out)" = false ]
	[ "$(rq .stdout)" = out ]
	[ "$(rq .stderr)" = err ]
	[ "$(rq .match_expected)" = false ]
	[ "$(rq .rationale)" = "check it" ]
	[ "$(rq .schema)" = airlock.receipt/3 ]
	[ "$(rq .status)" = exited ]
	rq '.duration_ms >= 0 and (.started_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))' | grep -qx true
	[ "$(rq .output.stdout.bytes)" = 4 ]
	[ "$(rq .output.stdout.sha256)" = "$(printf 'out\n' | sha256sum | cut -d' ' -f1)" ]
	[ "$(rq .airlock_version)" != null ]
}

@test "--expect makes a non-zero status the expected one" {
	al run --expect 3 -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	jq -e '.match_expected == true' <<<"$output"
	al run --expect 0,1 -- sh -c 'exit 1'
	jq -e '.match_expected == true' <<<"$output"
	[ "$(rq '.expected_exits | join(",")')" = "0,1" ]
}

@test "a missing command exits 127 with status not_found" {
	al run -- no-such-tool-xyz --version
	[ "$status" -eq 127 ]
	[ "$(rq .status)" = not_found ]
	[ "$(rq .exit_code)" = 127 ]
	one_error_line "'no-such-tool-xyz' not found"
}

@test "a file without execute permission exits 126" {
	printf '#!/bin/sh\necho hi\n' > tool.sh
	chmod 644 tool.sh
	al run -- ./tool.sh
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = not_executable ]
}

@test "a script without a shebang is never guessed at: 126" {
	printf 'echo hi\n' > run.sh
	chmod 755 run.sh
	al run -- ./run.sh
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = not_executable ]
	[ "$(rq .setup.errno_name)" = ENOEXEC ]
	one_error_line "no #! line"
}

@test "a missing interpreter is a 127" {
	printf '#!/nonexistent/interp\n' > s.sh
	chmod 755 s.sh
	al run -- ./s.sh
	[ "$status" -eq 127 ]
	[ "$(rq .status)" = not_found ]
}

@test "a command killed by a signal exits 128+N" {
	al run -- sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
	[ "$(rq .status)" = signaled ]
	[ "$(rq .signal)" = 15 ]
	[ "$(rq .signal_name)" = TERM ]
	[ "$(rq .exit_code)" = null ]
}

@test "a timeout kills the whole tree, background children too" {
	start=$(date +%s%N)
	al run --timeout 1s -- sh -c "sleep 31.5$$ & sleep 31.5$$"
	end=$(date +%s%N)
	[ "$status" -eq 124 ]
	[ $(( (end - start) / 1000000 )) -lt 5000 ]
	jq -e '.timed_out == true' <<<"$output"
	[ "$(rq .status)" = timeout ]
	[ "$(rq .descendants_killed)" -ge 1 ]
	no_process_with "sleep 31.5$$"
}

@test "processes that left the group (setsid, double fork) are killed on timeout" {
	al run --timeout 500ms -- sh -c "setsid sleep 32.5$$ & (sleep 32.5$$ &); sleep 32.5$$"
	[ "$status" -eq 124 ]
	[ "$(rq .descendants_killed)" -ge 2 ]
	no_process_with "sleep 32.5$$"
}

@test "leftovers are killed when the main process exits, and counted" {
	al run -- sh -c "(setsid sleep 33.5$$ &); echo started"
	[ "$status" -eq 0 ]
	[ "$(rq .descendants_killed)" = 1 ]
	[ "$(rq .stdout)" = started ]
	no_process_with "sleep 33.5$$"
}

@test "a grandchild holding the pipe never makes airlock hang" {
	start=$(date +%s%N)
	al run --timeout 20s -- sh -c "sleep 34.5$$ & echo hi"
	end=$(date +%s%N)
	[ "$status" -eq 0 ]
	[ $(( (end - start) / 1000000 )) -lt 5000 ]
	no_process_with "sleep 34.5$$"
}

@test "a TERM-ignoring command gets KILL after --kill-after" {
	start=$(date +%s%N)
	al run --timeout 300ms --kill-after 300ms -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
	end=$(date +%s%N)
	[ "$status" -eq 124 ]
	[ "$(rq .signal_name)" = KILL ]
	[ $(( (end - start) / 1000000 )) -lt 4000 ]
}

@test "a --kill-after that would outlive the policy's maximum is denied" {
	al run --timeout 50s --kill-after 30s -- sh -c 'trap "" TERM; sleep 80'
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = denied ]
	[ "$(rq .denied.rule)" = max_timeout ]
	[ "$(rq .denied.value)" = 80000 ]
	[ "$(rq .kill_after_ms)" = 30000 ]
	[[ "$stderr" == *"plus a grace of 30000 ms"*"60000 ms"* ]]
	al run --timeout 50s --kill-after 10s -- true
	[ "$status" -eq 0 ]
	[ "$(rq .kill_after_ms)" = 10000 ]
}

@test "timeout plus grace never outlives timeout.max_ms" {
	printf '{"schema": "airlock.policy/1", "timeout": {"max_ms": 1500, "default_ms": 1000, "kill_after_ms": 2000}}' > "$TEST_DIR/p.json"
	# the policy's own grace is cut to what the timeout leaves: 500 ms
	start=$(date +%s%N)
	al run --policy "$TEST_DIR/p.json" -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
	end=$(date +%s%N)
	[ "$status" -eq 124 ]
	[ "$(rq .signal_name)" = KILL ]
	[ "$(rq .kill_after_ms)" = 500 ]
	[ $(( (end - start) / 1000000 )) -lt 3500 ]
	# at the maximum, KILL follows TERM at once
	al run --policy "$TEST_DIR/p.json" --timeout 1500ms -- true
	[ "$status" -eq 0 ]
	[ "$(rq .kill_after_ms)" = 0 ]
	# a grace asked for is honoured whole or refused
	al run --policy "$TEST_DIR/p.json" --timeout 1s --kill-after 501ms -- true
	[ "$status" -eq 126 ]
	[ "$(rq .denied.rule)" = max_timeout ]
	al run --policy "$TEST_DIR/p.json" --timeout 1s --kill-after 500ms -- true
	[ "$status" -eq 0 ]
}

@test "the command dies with airlock (parent death signal)" {
	"$AIRLOCK" run --timeout 60s -- sleep "35.5$$" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 50); do pgrep -f "sleep 35.5$$" >/dev/null && break; sleep 0.05; done
	kill -KILL "$pid"
	wait "$pid" || true
	no_process_with "sleep 35.5$$"
}

@test "stdin is the null device and descriptors above 2 are closed" {
	al run --timeout 5s -- sh -c 'cat; ls /proc/self/fd' 3</dev/null 7</dev/null
	[ "$status" -eq 0 ]
	[ "$(rq '.stdout | split("\n") | map(select(. != "")) | length')" = 4 ]
}

@test "the command runs in its own session" {
	al run -- sh -c 'ps -o sid= -p $$; echo $$'
	sid=$(rq '.stdout | split("\n")[0]' | tr -d " ")
	pid=$(rq '.stdout | split("\n")[1]')
	[ "$sid" = "$pid" ]
}

@test "the environment is the allowlist plus fixed settings, never secrets" {
	export GITHUB_TOKEN=ghp_supersecretvalue MY_VAR=hello HOME=/tmp/h LANG=C.UTF-8
	al run -- env
	[ "$status" -eq 0 ]
	env_out=$(rq .stdout)
	grep -qx 'CI=1' <<<"$env_out"
	grep -qx 'GIT_TERMINAL_PROMPT=0' <<<"$env_out"
	grep -qx 'PAGER=cat' <<<"$env_out"
	grep -qx 'NO_COLOR=1' <<<"$env_out"
	grep -qx 'DEBIAN_FRONTEND=noninteractive' <<<"$env_out"
	grep -qx 'HOME=/tmp/h' <<<"$env_out"
	grep -qx "AIRLOCK_RECEIPT_ID=$(receipt_id)" <<<"$env_out"
	! grep -q 'MY_VAR' <<<"$env_out" || false
	! grep -q 'GITHUB_TOKEN' <<<"$env_out" || false
	rq '.env_keys | index("HOME") != null and index("GITHUB_TOKEN") == null' | grep -qx true
}

@test "receipts record variable names, never values" {
	export MY_VAR=value-that-must-not-be-stored
	al run --env MY_VAR -- true
	[ "$status" -eq 0 ]
	rq '.env_keys | index("MY_VAR") != null' | grep -qx true
	! grep -rq value-that-must-not-be-stored "$AIRLOCK_STATE_DIR" || false
}

@test "a secret-looking name is refused even when allowlisted, unless forced" {
	export API_TOKEN=abc
	al run --env API_TOKEN -- true
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = denied ]
	[ "$(rq .denied.rule)" = secret_env ]
	[ "$(rq .denied.value)" = API_TOKEN ]
	one_error_line "API_TOKEN"
	al run --env-force API_TOKEN -- sh -c 'echo "$API_TOKEN"'
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = abc ]
}

@test "CMD is looked up in the child's own PATH" {
	mkdir bin
	printf '#!/bin/sh\necho from-bin\n' > bin/mytool
	chmod 755 bin/mytool
	PATH="$WORK/bin:$PATH" al run -- mytool
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = from-bin ]
	[ "$(rq .exec_path)" = "$WORK/bin/mytool" ]
	al run -- mytool
	[ "$status" -eq 127 ]
}

@test "--cwd sets the working directory, relative to the caller" {
	mkdir -p sub/dir
	al run --cwd sub/dir -- pwd
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = "$(cd sub/dir && pwd -P)" ]
	[ "$(rq .cwd)" = "$(cd sub/dir && pwd -P)" ]
}

@test "--tee streams output live and the receipt still has it" {
	al run --tee -- sh -c 'echo to-out; echo to-err >&2'
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | head -1)" = to-out ]
	[[ "$stderr" == *to-err* ]]
	output=$(printf '%s\n' "$output" | tail -1)
	[ "$(rq .stdout)" = to-out ]
}

@test "--json prints the whole receipt" {
	run --separate-stderr "$AIRLOCK" run --json -- echo hi
	[ "$status" -eq 0 ]
	jq -e '.schema == "airlock.receipt/3" and .stdout == "hi\n" and .id >= 1' <<<"$output"
}

@test "long output keeps head and tail with counts and the hash of everything" {
	al run -- sh -c 'seq 1 100000'
	[ "$status" -eq 0 ]
	[ "$(rq .output.stdout.bytes)" = "$(seq 1 100000 | wc -c)" ]
	[ "$(rq .output.stdout.sha256)" = "$(seq 1 100000 | sha256sum | cut -d' ' -f1)" ]
	[ "$(rq .output.stdout.truncated)" = true ]
	[ "$(rq .output.stdout.head_bytes)" = 4096 ]
	[ "$(rq .output.stdout.tail_bytes)" = 4096 ]
	rq -j .stdout | head -1 | grep -qx 1
	rq -j .stdout | tail -1 | grep -qx 100000
	rq .stdout | grep -q 'bytes omitted'
	jq -e ".bytes == $(seq 1 100000 | wc -c)" <<<"$output"
}

@test "--spill keeps the full streams, paged by byte range" {
	al run --spill -- sh -c 'seq 1 100000; echo e >&2'
	[ "$status" -eq 0 ]
	id=$(receipt_id)
	[ "$(rq .output.stdout.spill.bytes)" = "$(seq 1 100000 | wc -c)" ]
	run "$AIRLOCK" show "$id" --stdout
	[ "$output" = "$(seq 1 100000)" ]
	run "$AIRLOCK" show "$id" --stdout --offset 2 --limit 4
	[ "$output" = "$(seq 1 100000 | head -c 6 | tail -c 4)" ]
	run "$AIRLOCK" show "$id" --stderr
	[ "$output" = e ]
}

@test "paging an unspilled truncated stream says how to keep it" {
	al run -- seq 1 100000
	id=$(receipt_id)
	run --separate-stderr "$AIRLOCK" show "$id" --stdout --offset 0 --limit 10
	[ "$status" -eq 125 ]
	one_error_line "--spill"
}

@test "argv bytes that are not UTF-8 are kept losslessly" {
	al run -- printf $'caf\351'
	[ "$status" -eq 0 ]
	[ "$(rq '.argv_b64[1]' | base64 -d | od -An -tx1 | tr -d ' \n')" = "636166e9" ]
	[ "$(rq '.argv[1]')" = "caf�" ]
}

@test "a command on the policy's deny list is refused with 126 and a receipt" {
	al run -- /usr/bin/curl https://example.com
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = denied ]
	[ "$(rq .denied.rule)" = deny_argv0 ]
	[ "$(rq .denied.value)" = curl ]
	one_error_line "deny_argv0"
	al run -- pip3 install x
	[ "$status" -eq 126 ]
}

@test "a timeout above the policy's maximum is refused" {
	al run --timeout 61s -- true
	[ "$status" -eq 126 ]
	[ "$(rq .denied.rule)" = max_timeout ]
}

@test "--policy replaces the default: a custom deny list and maximum" {
	cat > p.json <<'JSON'
{"schema": "airlock.policy/1", "deny_argv0": ["ls"], "timeout": {"max_ms": 120000}}
JSON
	# It drops sudo from the deny list and raises the maximum: the approver's call.
	al run --policy p.json -- true
	[ "$status" -eq 126 ]
	[ "$(rq .denied.rule)" = policy_widens ]
	approve_policy p.json
	al run --policy p.json -- ls
	[ "$status" -eq 126 ]
	al run --policy p.json --timeout 90s -- true
	[ "$status" -eq 0 ]
	[ "$(rq .policy)" = p.json ]
	al run --policy p.json -- sudo -V
	[ "$status" -ne 126 ] || [ "$(rq .status)" != denied ]
}

@test "the state dir defaults to XDG_STATE_HOME/airlock, then ~/.local/state/airlock" {
	unset AIRLOCK_STATE_DIR
	XDG_STATE_HOME="$TEST_DIR/xdg" al run -- true
	[ -f "$TEST_DIR/xdg/airlock/receipts/1.json" ]
	unset XDG_STATE_HOME
	HOME="$TEST_DIR/home" al run -- true
	[ -f "$TEST_DIR/home/.local/state/airlock/receipts/1.json" ]
	al run --state-dir "$TEST_DIR/explicit" -- true
	[ -f "$TEST_DIR/explicit/receipts/1.json" ]
	[ "$(stat -c %a "$TEST_DIR/explicit")" = 700 ]
}

@test "large output is captured with bounded memory" {
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "sanitizer shadow memory inflates RSS"
	run --separate-stderr /usr/bin/time -f '%M' "$AIRLOCK" run -- head -c 200M /dev/zero
	[ "$status" -eq 0 ]
	jq -e '.bytes == 209715200' <<<"$output"
	[ "$(tail -1 <<<"$stderr")" -lt 16384 ]
}

@test "the receipt records the command's resource usage, in the quarantine and without" {
	for profile in default none; do
		al run --sandbox=$profile -- sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
		[ "$status" -eq 0 ]
		[ "$(rq .resources.max_rss_kib)" -gt 0 ]
		[ "$(rq '.resources.user_cpu_ms + .resources.system_cpu_ms')" -gt 0 ]
	done
}

@test "a writable directory keeps what sandbox.hide lists inside it hidden, also below the host's /tmp" {
	# The private /tmp hides the host's /tmp, except what is bound back into
	# it: a writable directory there must still get its hidden paths masked.
	home="$TEST_DIR/home"
	mkdir -p "$home/.config/gh"
	echo secret >"$home/.config/gh/hosts.yml"
	printf '{"schema":"airlock.policy/1","sandbox":{"writable":["~/.config"]}}' >"$TEST_DIR/p.json"
	approve_policy "$TEST_DIR/p.json"
	HOME=$home al run --tee --policy "$TEST_DIR/p.json" -- sh -c \
		'cat ~/.config/gh/hosts.yml; echo w >~/.config/new'
	[[ "$output" != *secret* ]]
	[ "$(cat "$home/.config/new")" = w ]
	[ "$(cat "$home/.config/gh/hosts.yml")" = secret ]
	jq -e --arg h "$home" '.sandbox.enforced.writable == [$h + "/.config"] and
		(.sandbox.enforced.hidden | index($h + "/.config/gh"))' "$(receipt)"
}

@test "the receipt's exec_identity names the bytes that ran: an executable rewritten in place, same size, gets its new digest" {
	# Same path, inode and size, other bytes: a digest kept from an earlier
	# run (or taken of the old bytes) would attribute the wrong program.
	for sandbox in none default; do
		printf '#!/bin/sh\necho AAAA\n' >tool.sh
		chmod +x tool.sh
		ino=$(stat -c %i tool.sh)
		al run --sandbox=$sandbox -- ./tool.sh
		[ "$status" -eq 0 ]
		[ "$(rq .stdout)" = AAAA ]
		[ "$(rq .exec_identity.sha256)" = "$(sha256sum <tool.sh | cut -d' ' -f1)" ]
		[ "$(rq .exec_identity.size)" = "$(stat -c %s tool.sh)" ]
		first=$(rq .exec_identity.sha256)
		# In place: no truncation, no new inode, the same size.
		printf '#!/bin/sh\necho BBBB\n' 1<>tool.sh
		[ "$(stat -c %i tool.sh)" = "$ino" ]
		al run --sandbox=$sandbox -- ./tool.sh
		[ "$status" -eq 0 ]
		[ "$(rq .stdout)" = BBBB ]
		[ "$(rq .exec_identity.sha256)" = "$(sha256sum <tool.sh | cut -d' ' -f1)" ]
		[ "$(rq .exec_identity.sha256)" != "$first" ]
		[ "$(rq .exec_identity.ino)" = "$ino" ]
		[ "$(rq .exec_identity.changed_during_run)" != true ]
	done
}

@test "an executable written while it runs is marked changed_during_run, whenever its digest was taken" {
	for sandbox in none default; do
		printf '#!/bin/sh\necho more >>"$0"\n' >grow.sh
		chmod +x grow.sh
		al run --sandbox=$sandbox -- ./grow.sh
		[ "$status" -eq 0 ]
		[ "$(rq .exec_identity.changed_during_run)" = true ]
	done
}

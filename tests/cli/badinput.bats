#!/usr/bin/env bats
# Bad input: one stderr line naming the problem, a documented exit status
# (125 invalid, 126 policy), a receipt wherever one can be written, and
# nothing already recorded is lost.
load helpers

# expect_rejected STATUS RECEIPT_STATUS NEEDLE: checks the last invocation.
expect_rejected() {
	[ "$status" -eq "$1" ] || { echo "status $status, expected $1" >&2; return 1; }
	one_error_line "$3"
	[ "$(rq .status)" = "$2" ] || { echo "receipt status $(rq .status)" >&2; return 1; }
	[[ "$(rq .error)" == *"$3"* ]] || { echo "receipt error: $(rq .error)" >&2; return 1; }
	[ "$(rq .exit_code)" = null ]
}

job() {
	printf '%s' "$1" > job.json
	al job job.json
}

@test "truncated JSON" {
	job '{"argv": ["ls"'
	expect_rejected 125 invalid "invalid JSON"
}

@test "a job that is not an object" {
	job '["ls"]'
	expect_rejected 125 invalid "JSON object"
}

@test "argv of the wrong type" {
	job '{"argv": "ls -l"}'
	expect_rejected 125 invalid "'argv' must be an array"
}

@test "an empty argv" {
	job '{"argv": []}'
	expect_rejected 125 invalid "'argv' is empty"
}

@test "an empty string in argv" {
	job '{"argv": ["ls", ""]}'
	expect_rejected 125 invalid "'argv[1]' is an empty string"
	[ "$(rq '.argv | length')" = 0 ]
}

@test "a number in argv" {
	job '{"argv": ["ls", 5]}'
	expect_rejected 125 invalid "'argv[1]' must be a string"
}

@test "an unknown key" {
	job '{"argv": ["ls"], "shell": true}'
	expect_rejected 125 invalid "unknown key 'shell'"
}

@test "a relative cwd" {
	job '{"argv": ["ls"], "cwd": "src"}'
	expect_rejected 125 invalid "'cwd' must be an absolute path"
	[ "$(rq '.argv[0]')" = ls ]
}

@test "a missing cwd" {
	job '{"argv": ["ls"], "cwd": "/nonexistent/dir"}'
	expect_rejected 125 invalid "No such file or directory"
}

@test "a negative timeout" {
	job '{"argv": ["ls"], "timeout_sec": -5}'
	expect_rejected 125 invalid "'timeout_sec'"
}

@test "a zero timeout" {
	job '{"argv": ["ls"], "timeout_sec": 0}'
	expect_rejected 125 invalid "'timeout_sec'"
}

@test "a timeout that is a string" {
	job '{"argv": ["ls"], "timeout_sec": "30"}'
	expect_rejected 125 invalid "'timeout_sec' must be a number"
}

@test "a huge real timeout" {
	job '{"argv": ["ls"], "timeout_sec": 1e308}'
	expect_rejected 125 invalid "'timeout_sec'"
}

@test "an integer too big for any type" {
	job '{"argv": ["ls"], "timeout_ms": 99999999999999999999999}'
	expect_rejected 125 invalid "invalid JSON"
}

@test "an expected_exit above 255" {
	job '{"argv": ["ls"], "expected_exit": 256}'
	expect_rejected 125 invalid "'expected_exit'"
}

@test "a NUL byte inside a string" {
	job '{"argv": ["ls\u0000x"]}'
	expect_rejected 125 invalid "invalid JSON"
}

@test "a raw NUL byte in the file" {
	printf '{"argv": ["ls"]}\0' > job.json
	al job job.json
	expect_rejected 125 invalid "invalid JSON"
}

@test "a duplicate key" {
	job '{"argv": ["ls"], "argv": ["rm"]}'
	expect_rejected 125 invalid "duplicate"
}

@test "both spellings of one field" {
	job '{"argv": ["ls"], "command": ["ls"]}'
	expect_rejected 125 invalid "'argv' and 'command'"
}

@test "a missing job file" {
	al job /nonexistent/job.json
	expect_rejected 125 invalid "No such file or directory"
}

@test "a directory as job file" {
	al job /tmp
	expect_rejected 125 invalid "is a directory"
}

@test "a job file over 4 MiB" {
	head -c 5M /dev/zero | tr '\0' ' ' > big.json
	al job big.json
	expect_rejected 125 invalid "larger than"
}

@test "an empty job file" {
	: > job.json
	al job job.json
	expect_rejected 125 invalid "invalid JSON"
}

@test "binary garbage" {
	head -c 512 /dev/urandom > job.json
	al job job.json
	[ "$status" -eq 125 ]
	[ "$(rq .status)" = invalid ]
}

@test "a 1 MB argv in a job is refused by the policy" {
	python3 -c 'import json; print(json.dumps({"argv": ["echo"] + ["x" * 1000] * 1000}))' > job.json
	al job job.json
	expect_rejected 126 denied "limits.max_argv_bytes"
	[ "$(rq .denied.rule)" = max_argv_bytes ]
}

@test "a 1 MB argv on the command line is refused by the policy" {
	# shellcheck disable=SC2046 # ten words of 100,000 bytes
	al run -- echo $(head -c 1000000 /dev/zero | tr '\0' 'x' | fold -w 100000)
	expect_rejected 126 denied "limits.max_argv_bytes"
}

@test "two job files" {
	printf '{"argv":["true"]}' > a.json
	al job a.json a.json
	expect_rejected 125 invalid "expected one job file"
}

@test "a garbage job on stdin" {
	run --separate-stderr sh -c "printf 'not json' | '$AIRLOCK' job -"
	expect_rejected 125 invalid "invalid JSON"
}

@test "run with no command" {
	al run --
	expect_rejected 125 invalid "no command given"
}

@test "an unknown option" {
	al run --frobnicate -- true
	expect_rejected 125 invalid "--frobnicate"
	[ "$(rq '.argv[0]')" = true ]
}

@test "an option missing its value" {
	al run --timeout
	expect_rejected 125 invalid "--timeout"
}

@test "a timeout that is not a duration" {
	al run --timeout 5parsecs -- true
	expect_rejected 125 invalid "--timeout '5parsecs'"
}

@test "a negative timeout on the command line" {
	al run --timeout -1s -- true
	expect_rejected 125 invalid "--timeout '-1s'"
}

@test "a zero timeout on the command line" {
	al run --timeout 0 -- true
	expect_rejected 125 invalid "--timeout '0'"
}

@test "a bad --kill-after" {
	al run --kill-after soon -- true
	expect_rejected 125 invalid "--kill-after 'soon'"
}

@test "an --expect out of range" {
	al run --expect 300 -- true
	expect_rejected 125 invalid "--expect '300'"
}

@test "an --expect that is not a list of numbers" {
	al run --expect 0,,x -- true
	expect_rejected 125 invalid "--expect '0,,x'"
}

@test "a --cwd that does not exist" {
	al run --cwd /nonexistent -- true
	expect_rejected 125 invalid "cwd '/nonexistent'"
}

@test "a --cwd that is a file" {
	touch afile
	al run --cwd afile -- true
	expect_rejected 125 invalid "is not a directory"
}

@test "an --env name that is not a name" {
	al run --env 'A=B' -- true
	expect_rejected 125 invalid "invalid environment variable name 'A=B'"
}

@test "a --policy file that does not exist" {
	al run --policy /nonexistent.json -- true
	expect_rejected 125 invalid "policy '/nonexistent.json'"
}

@test "a malformed --policy file" {
	printf '{"schema": "airlock.policy/1", "timeout": {"max_ms": "lots"}}' > p.json
	al run --policy p.json -- true
	expect_rejected 125 invalid "'timeout.max_ms' must be an integer"
}

@test "a policy of another schema version" {
	printf '{"schema": "airlock.policy/9"}' > p.json
	al run --policy p.json -- true
	expect_rejected 125 invalid "'schema'"
}

@test "an unknown command" {
	al frobnicate
	[ "$status" -eq 125 ]
	one_error_line "unknown command 'frobnicate'"
}

@test "a state dir that is a file: no receipt possible, one line, 125" {
	touch "$TEST_DIR/file"
	al run --state-dir "$TEST_DIR/file" -- true
	[ "$status" -eq 125 ]
	one_error_line "state directory"
	[ -z "$output" ]
}

@test "an unwritable state dir as an unprivileged user" {
	if [ "$(id -u)" -ne 0 ]; then
		mkdir -p "$AIRLOCK_STATE_DIR" && chmod 500 "$AIRLOCK_STATE_DIR"
		al run -- true
	else
		mkdir -p "$TEST_DIR/ro" && chmod 500 "$TEST_DIR/ro" && chmod 755 "$TEST_DIR"
		run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$AIRLOCK" run --state-dir "$TEST_DIR/ro" -- true
	fi
	[ "$status" -eq 125 ]
	one_error_line "Permission denied"
}

@test "a full disk for the receipt: 125, one line, earlier receipts intact" {
	[ "$(id -u)" -eq 0 ] || unshare -rm true 2>/dev/null || skip "needs root or user namespaces"
	mkdir "$TEST_DIR/small"
	cat > "$TEST_DIR/fill.sh" <<SH
set -e
mount -t tmpfs -o size=256k tmpfs "$TEST_DIR/small"
"$AIRLOCK" run --state-dir "$TEST_DIR/small/st" -- echo first > "$TEST_DIR/first.out"
head -c 1M /dev/zero > "$TEST_DIR/small/filler" 2>/dev/null || true
set +e
"$AIRLOCK" run --state-dir "$TEST_DIR/small/st" -- sh -c 'seq 1 5000' > "$TEST_DIR/second.out" 2> "$TEST_DIR/second.err"
echo \$? > "$TEST_DIR/second.status"
cat "$TEST_DIR/small/st/receipts/1.json" > "$TEST_DIR/first.json"
SH
	if [ "$(id -u)" -eq 0 ]; then unshare -m sh "$TEST_DIR/fill.sh"; else unshare -rm sh "$TEST_DIR/fill.sh"; fi
	[ "$(cat "$TEST_DIR/second.status")" -eq 125 ]
	# shellcheck disable=SC2034 # one_error_line reads it
	stderr=$(cat "$TEST_DIR/second.err")
	one_error_line "No space left on device"
	jq -e '.stdout == "first\n"' "$TEST_DIR/first.json"
}

@test "a workspace of / by default (cwd /) is refused" {
	cd /
	al run -- true
	expect_rejected 125 invalid "--workspace"
}

#!/usr/bin/env bats
# Receipt storage, listing and reading; ids under concurrency.
load helpers

@test "receipts lists every attempt in order, --failed and --last filter" {
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" run -- false >/dev/null || true
	"$AIRLOCK" run -- no-such-cmd-q >/dev/null 2>&1 || true
	"$AIRLOCK" run -- echo four >/dev/null
	run "$AIRLOCK" receipts
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[[ "${lines[0]}" == ID* ]]
	[[ "${lines[2]}" == 2*exited*1*false ]]
	[[ "${lines[3]}" == 3*not_found* ]]
	run "$AIRLOCK" receipts --failed --json
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -s 'map(.id) | join(",")' <<<"$output")" = '"2,3"' ]
	run "$AIRLOCK" receipts --last 1 --json
	[ "${#lines[@]}" -eq 1 ]
	jq -e '.id == 4 and .argv == ["echo", "four"]' <<<"$output"
}

@test "receipts with no state dir yet prints only the header" {
	run "$AIRLOCK" receipts --state-dir "$TEST_DIR/none"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$TEST_DIR/none" ]
}

@test "show prints a receipt, and a missing one exits 1" {
	"$AIRLOCK" run -- echo hello >/dev/null
	run "$AIRLOCK" show 1
	[ "$status" -eq 0 ]
	jq -e '.id == 1 and .stdout == "hello\n"' <<<"$output"
	run "$AIRLOCK" show 1 --stdout
	[ "$output" = hello ]
	run --separate-stderr "$AIRLOCK" show 99
	[ "$status" -eq 1 ]
	one_error_line "no receipt 99"
	run --separate-stderr "$AIRLOCK" show abc
	[ "$status" -eq 125 ]
}

@test "concurrent runs get distinct ids and valid receipts" {
	for _ in 1 2 3 4 5 6 7 8; do
		( for _ in $(seq 1 25); do "$AIRLOCK" run -- true >/dev/null; done ) &
	done
	wait
	# shellcheck disable=SC2010 # receipt files are named by number
	[ "$(ls "$AIRLOCK_STATE_DIR/receipts" | grep -c '\.json$')" -eq 200 ]
	for f in "$AIRLOCK_STATE_DIR"/receipts/*.json; do jq -e '.status == "exited"' "$f" >/dev/null; done
	[ "$(jq -s 'map(.id) | unique | length' "$AIRLOCK_STATE_DIR/index.jsonl")" -eq 200 ]
	[ "$(jq -s 'map(.id) | max' "$AIRLOCK_STATE_DIR/index.jsonl")" -eq 200 ]
}

@test "a torn last index line is skipped with a warning" {
	"$AIRLOCK" run -- true >/dev/null
	printf '{"id":2,"sta' >> "$AIRLOCK_STATE_DIR/index.jsonl"
	run --separate-stderr "$AIRLOCK" receipts --json
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	one_error_line "damaged index"
}

@test "an id is never reused even if the counter is lost" {
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" run -- true >/dev/null
	rm "$AIRLOCK_STATE_DIR/seq"
	al run -- true
	[ "$(receipt_id)" = 3 ]
	jq -e '.id == 1' "$AIRLOCK_STATE_DIR/receipts/1.json"
}

@test "every kind of receipt matches docs/receipt.schema.json" {
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" run --spill -- sh -c 'seq 1 20000; kill -TERM $$' >/dev/null || true
	"$AIRLOCK" run -- no-such-cmd-q >/dev/null 2>&1 || true
	"$AIRLOCK" run -- sudo true >/dev/null 2>&1 || true
	"$AIRLOCK" run --timeout 100ms -- sleep 5 >/dev/null 2>&1 || true
	"$AIRLOCK" run --timeout bad -- true >/dev/null 2>&1 || true
	"$AIRLOCK" run -- printf $'\377' >/dev/null 2>&1 || true
	printf 'echo\n' > noshebang && chmod +x noshebang
	"$AIRLOCK" run -- ./noshebang >/dev/null 2>&1 || true
	"$AIRLOCK" run -- sh -c 'echo x > .envrc' >/dev/null 2>&1 || true # host_code
	printf '{"argv": ["true"], "job_id": "x", "expected_exit": [0, 1]}' > j.json
	"$AIRLOCK" job j.json >/dev/null
	"$AIRLOCK" job /nonexistent >/dev/null 2>&1 || true
	# Gate fields, and receipts a host reported through its hook.
	"$AIRLOCK" run --fixes 1 -- ls >/dev/null 2>&1 || true
	printf '{"cwd":"%s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"make | tail"},"error":"Exit code 2","session_id":"s","tool_use_id":"t"}' "$PWD" |
		"$AIRLOCK" hook claude post-tool-use >/dev/null
	printf '{"cwd":"%s","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"ls"},"tool_response":{"llmContent":"x"}}' "$PWD" |
		"$AIRLOCK" hook gemini post-tool-use >/dev/null
	# A fix and its re-run.
	failed=$("$AIRLOCK" run -- sh -c 'test -e m' 2>/dev/null | jq -r .receipt || true)
	touch m
	"$AIRLOCK" run --fixes "$failed" -- true >/dev/null
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(ls "$AIRLOCK_STATE_DIR"/receipts/*.json | wc -l)" -eq 17 ]
	jq -e '.source == "rerun" and .gate.closes[0].move == "fixes"' "$AIRLOCK_STATE_DIR/receipts/17.json"
}

@test "show on a terminal and the receipts listing drop escape sequences; show to a pipe is exact" {
	al run -- sh -c "$(terminal_attack_script)"
	[ "$status" -eq 1 ]
	id=$(receipt_id)
	script -qec "'$AIRLOCK' show $id --stdout" /dev/null </dev/null >"$TEST_DIR/out.tty" 2>&1
	shows_no_controls "$TEST_DIR/out.tty" "out-visible"
	shows_no_hidden_text "$TEST_DIR/out.tty"
	script -qec "'$AIRLOCK' show $id --stderr" /dev/null </dev/null >"$TEST_DIR/err.tty" 2>&1
	shows_no_controls "$TEST_DIR/err.tty" "err-visible" "end"
	shows_no_hidden_text "$TEST_DIR/err.tty"
	script -qec "'$AIRLOCK' show $id" /dev/null </dev/null >"$TEST_DIR/receipt.tty" 2>&1
	shows_no_controls "$TEST_DIR/receipt.tty" '"status": "exited"'
	script -qec "'$AIRLOCK' receipts" /dev/null </dev/null >"$TEST_DIR/list.tty" 2>&1
	shows_no_controls "$TEST_DIR/list.tty" "argv-visible"
	shows_no_hidden_text "$TEST_DIR/list.tty" hidden-argv
	# to a pipe, show gives back the kept text as it is (the receipt's
	# JSON string: what was not UTF-8 is U+FFFD there; --spill keeps bytes)
	cmp <("$AIRLOCK" show "$id" --stdout) <(jq -j .stdout "$(receipt_file "$id")")
	"$AIRLOCK" show "$id" --stderr | grep -q $'\e\\[8m'
}

@test "show pages a spilled stream to a terminal without escape sequences, split or not" {
	# 200 KB of lines, each with a title sequence, so that page boundaries
	# fall inside them
	al run --spill -- sh -c 'i=0; while [ $i -lt 4000 ]; do printf "line %d \033]0;pw""ned-%d\007 tail \302\233" "$i" "$i"; printf "2J\n"; i=$((i+1)); done'
	[ "$status" -eq 0 ]
	id=$(receipt_id)
	script -qec "'$AIRLOCK' show $id --stdout" /dev/null </dev/null >"$TEST_DIR/spill.tty" 2>&1
	shows_no_controls "$TEST_DIR/spill.tty" "line 0 " "line 3999 "
	shows_no_hidden_text "$TEST_DIR/spill.tty"
	[ "$(grep -ac '^line [0-9]*  tail '$'\r''$' "$TEST_DIR/spill.tty")" -eq 4000 ]
	script -qec "'$AIRLOCK' show $id --stdout --offset 5 --limit 100000" /dev/null </dev/null >"$TEST_DIR/range.tty" 2>&1
	shows_no_controls "$TEST_DIR/range.tty" "  tail "
	shows_no_hidden_text "$TEST_DIR/range.tty"
	"$AIRLOCK" show "$id" --stdout | sha256sum | grep -q "^$(rq .output.stdout.sha256) "
}

#!/usr/bin/env bats
# airlock mcp, the stdio MCP server (docs/mcp.md), fed raw lines: bad input
# gets a JSON-RPC error or a clean exit, never a crash or a hang, and a
# run's processes never outlive the server. The official clients drive it
# in tests/mcp/.
load helpers

INIT='{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
STATELESS='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

# mcp_io [-h SECONDS] LINE...: the lines on the server's stdin, held open
# SECONDS (default 1) after them; its answers in $output, one per line.
mcp_io() {
	local hold=1
	if [ "$1" = -h ]; then
		hold=$2
		shift 2
	fi
	run --separate-stderr bash -c 'hold=$1; shift; { printf "%s\n" "$@"; sleep "$hold"; } |
		timeout 60 "$AIRLOCK" mcp' bash "$hold" "$@"
}

# answer ID: the answer to request ID (a JSON value, as written in the request).
answer() {
	jq -c --argjson id "$1" 'select(.id == $id)' <<<"$output"
}

call() { # call ID TOOL ARGS-JSON: a tools/call request line
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"
}

@test "initialize answers 2025-11-25 with tools and resources; ping before and after" {
	mcp_io '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$INIT" "$INITED" '{"jsonrpc":"2.0","id":1,"method":"ping"}'
	[ "$status" -eq 0 ]
	answer 0 | jq -e '.result == {}'
	answer '"init"' | jq -e '.result.protocolVersion == "2025-11-25" and .result.serverInfo.name == "airlock" and (.result.capabilities.tools | type == "object")'
	answer 1 | jq -e '.result == {}'
}

@test "a request before initialize is an error; the server goes on" {
	mcp_io '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$INIT" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
	[ "$status" -eq 0 ]
	answer 1 | jq -e '.error.code == -32600 and (.error.message | test("initialize"))'
	answer 2 | jq -e '.result.tools | length == 10'
}

@test "malformed JSON, duplicate keys, a batch, wrong types: JSON-RPC errors, and the server goes on" {
	mcp_io "$INIT" '{"jsonrpc":' '{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}' \
		'[{"jsonrpc":"2.0","id":7,"method":"ping"}]' '{"jsonrpc":"1.0","id":8,"method":"ping"}' \
		'{"jsonrpc":"2.0","id":null,"method":"ping"}' '{"jsonrpc":"2.0","id":9,"method":"ping","params":[1]}' \
		'{"jsonrpc":"2.0","id":10,"method":42}' '{"jsonrpc":"2.0","id":11,"method":"ping"}'
	[ "$status" -eq 0 ]
	[ "$(jq -c 'select(.id == null) | .error.code' <<<"$output" | sort | tr '\n' ' ')" = "-32600 -32600 -32700 -32700 " ]
	answer 8 | jq -e '.error.code == -32600'
	answer 9 | jq -e '.error.code == -32600'
	answer 10 | jq -e '.error.code == -32600'
	answer 11 | jq -e '.result == {}'
}

@test "unknown methods are errors, unknown notifications are ignored, wrong params are -32602" {
	mcp_io "$INIT" '{"jsonrpc":"2.0","id":1,"method":"no/such"}' '{"jsonrpc":"2.0","method":"notifications/nothing"}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}' \
		"$(call 3 no_such_tool '{}')" \
		'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run","arguments":[1]}}' \
		'{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}'
	[ "$status" -eq 0 ]
	answer 1 | jq -e '.error.code == -32601'
	answer 2 | jq -e '.error.code == -32602'
	answer 3 | jq -e '.error.code == -32602 and (.error.message | test("no_such_tool"))'
	answer 4 | jq -e '.error.code == -32602'
	answer 5 | jq -e '.error.code == -32602'
	[ "$(wc -l <<<"$output")" -eq 6 ]
}

@test "bad tool arguments are the tool's error, and a run with them still leaves an invalid receipt" {
	mcp_io "$INIT" "$(call 1 run '{"argv":"true"}')" "$(call 2 run '{"argv":["true"],"bogus":1}')" \
		"$(call 3 show_receipt '{"id":"x"}')" "$(call 4 classify '{}')"
	[ "$status" -eq 0 ]
	answer 1 | jq -e '.result.structuredContent.status == "invalid"'
	answer 2 | jq -e '.result.structuredContent.status == "invalid" and (.result.structuredContent.message | test("bogus"))'
	answer 3 | jq -e '.result.isError == true'
	answer 4 | jq -e '.result.isError == true'
}

@test "a 10 MiB line is refused with an error, never buffered whole, and the next line is answered" {
	run --separate-stderr bash -c '{ printf "%s\n" "$1"; head -c $((10 << 20)) /dev/zero | tr "\0" "a"; printf "\n%s\n" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"; sleep 1; } |
		/usr/bin/time -f "maxrss %M" timeout 60 "$AIRLOCK" mcp' bash "$INIT"
	[ "$status" -eq 0 ]
	[ "$(jq -c 'select(.id == null) | .error.code' <<<"$output")" = "-32600" ]
	answer 2 | jq -e '.result == {}'
	rss=$(sed -n 's/^maxrss //p' <<<"$stderr")
	[ "$rss" -lt $((32 << 10)) ] # KiB: the 4 MiB cap and a chunk, not 10 MiB
}

@test "the stateless revision: server/discover, _meta on each request, an unsupported version is -32022" {
	mcp_io '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{'"$STATELESS"'}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{'"$STATELESS"'}}' \
		'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}' \
		'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"classify","arguments":{"argv":["ls"]},'"$STATELESS"'}}'
	[ "$status" -eq 0 ]
	answer 1 | jq -e '.result.resultType == "complete" and (.result.supportedVersions | index("2026-07-28") and index("2025-11-25")) and .result._meta["io.modelcontextprotocol/serverInfo"].name == "airlock"'
	answer 2 | jq -e '.result.resultType == "complete" and (.result.tools | length == 10)'
	answer 3 | jq -e '.error.code == -32022 and .error.data.requested == "1999-01-01" and .error.data.supported == ["2026-07-28"]'
	answer 4 | jq -e '.result.resultType == "complete" and .result.structuredContent.risk == 1'
}

@test "tools/list: every tool has an input and an output schema" {
	mcp_io "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
	answer 1 | jq -e '[.result.tools[] | select(.inputSchema.type == "object" and .outputSchema.type == "object")] | length == 10'
	answer 1 | jq -e '[.result.tools[].name] == ["run","gate","show_receipt","list_receipts","classify","dryrun","permit_propose","permit_status","permit_exec","ledger_status"]'
}

@test "run leaves a receipt; a failure then refuses a mutating run with the hooks' message; fixes closes it" {
	mcp_io "$INIT" "$(call 1 run '{"argv":["sh","-c","echo out; exit 3"]}')"
	answer 1 | jq -e '.result.isError == false and .result.structuredContent.exit_code == 3 and .result.structuredContent.failure_opened == true'
	answer 1 | jq -e '.result.structuredContent.stdout == "out\n"'
	failed=$(answer 1 | jq .result.structuredContent.receipt)
	[ -f "$(receipt_file "$failed")" ]
	jq -e '.source == "mcp"' "$(receipt_file "$failed")"
	# the documented format holds for it (docs/receipt.schema.json)
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$(receipt_file "$failed")"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	mcp_io "$INIT" "$(call 2 run '{"argv":["touch","made"]}')" "$(call 3 run '{"argv":["ls"]}')"
	answer 2 | jq -e '.result.isError == true'
	answer 2 | jq -r '.result.content[0].text' | grep -q "airlock receipt $failed is an open failure"
	answer 2 | jq -r '.result.content[0].text' | grep -q "so it does not run while the failure is open"
	[ ! -e made ]
	answer 3 | jq -e '.result.structuredContent.status == "exited"'
	mcp_io "$INIT" "$(call 4 run '{"argv":["true"],"fixes":'"$failed"'}')" "$(call 5 gate '{}')"
	answer 4 | jq -e '.result.structuredContent.exit_code == 0'
	# the re-run of the failed command fails again (exit 3): still open
	answer 4 | jq -e '.result.structuredContent.rerun.exit_code == 3'
	mcp_io "$INIT" "$(call 6 run '{"argv":["sh","-c","exit 0"],"fixes":'"$failed"'}')"
	answer 6 | jq -e '.result.structuredContent.rerun.exit_code == 3'
}

@test "closed stdin mid-run: the run's tree is killed, the receipt says cancelled, the server exits" {
	start=$SECONDS
	mcp_io -h 2 "$INIT" "$(call 1 run '{"argv":["sh","-c","sleep 3171 & sleep 3172"]}')"
	[ "$status" -eq 0 ]
	[ $((SECONDS - start)) -lt 20 ]
	no_process_with "sleep 317[12]"
	answer 1 | jq -e '.result.structuredContent.status == "cancelled" and (.result.structuredContent.message | test("cancelled"))'
	answer 1 | jq -e '.result.structuredContent.timed_out == false and .result.structuredContent.failure_opened == false'
	r=$(answer 1 | jq .result.structuredContent.receipt)
	jq -e '.status == "cancelled" and .timed_out == false and .sandbox.killed_by == "cancelled" and .gate.opened == false' "$(receipt_file "$r")"
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$(receipt_file "$r")"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# report, show and list name it
	run "$AIRLOCK" show "$r"
	[[ "$output" == *cancelled* ]]
	run "$AIRLOCK" receipts
	[[ "$output" == *cancelled* ]]
	# the report: neither ok nor failed
	run "$AIRLOCK" report -o "$TEST_DIR/r.html"
	[ "$status" -eq 0 ]
	grep -q "<tr id=\"run-$r\" data-failed=\"0\" data-status=\"cancelled\"" "$TEST_DIR/r.html"
	grep -q 'class="st st-other">&#x2298; cancelled</span>' "$TEST_DIR/r.html"
	grep -q '<td id="n-failed">0</td>' "$TEST_DIR/r.html"
}

@test "a cancelled run closes nothing and opens nothing: the failure open before stays open, a cancelled fix is no fix" {
	mcp_io "$INIT" "$(call 1 run '{"argv":["sh","-c","exit 3"]}')"
	failed=$(answer 1 | jq .result.structuredContent.receipt)
	# the fix attempt, cancelled (stdin closed) while it runs
	mcp_io -h 2 "$INIT" "$(call 2 run '{"argv":["sh","-c","sleep 3177; exit 0"],"fixes":'"$failed"'}')"
	answer 2 | jq -e '.result.structuredContent.status == "cancelled" and .result.structuredContent.failure_opened == false and .result.structuredContent.closes == []'
	answer 2 | jq -e '.result.structuredContent.gate_note | test("cancelled")'
	answer 2 | jq -e '.result.structuredContent.rerun == null'
	no_process_with "sleep 3177"
	run "$AIRLOCK" gate --json
	[ "$status" -eq 2 ]
	jq -e --argjson f "$failed" '.open == 1 and .failures[0].receipt == $f' <<<"$output"
	# a cancelled run of another command opens no failure of its own
	mcp_io -h 2 "$INIT" "$(call 3 run '{"argv":["sh","-c","sleep 3178"]}')"
	answer 3 | jq -e '.result.structuredContent.status == "cancelled" and .result.structuredContent.failure_opened == false'
	run "$AIRLOCK" gate --json
	jq -e --argjson f "$failed" '.open == 1 and .failures[0].receipt == $f' <<<"$output"
}

@test "gate.cancelled_opens_failure: a cancelled run opens a failure" {
	echo '{"schema":"airlock.policy/1","gate":{"cancelled_opens_failure":true}}' >"$TEST_DIR/policy.json"
	run --separate-stderr bash -c '{ printf "%s\n" "$1" "$2"; sleep 2; } | timeout 60 "$AIRLOCK" mcp --policy "$3"' \
		bash "$INIT" "$(call 1 run '{"argv":["sh","-c","sleep 3179"]}')" "$TEST_DIR/policy.json"
	[ "$status" -eq 0 ]
	no_process_with "sleep 3179"
	answer 1 | jq -e '.result.structuredContent.status == "cancelled" and .result.structuredContent.failure_opened == true'
	r=$(answer 1 | jq .result.structuredContent.receipt)
	run "$AIRLOCK" gate --json
	jq -e --argjson f "$r" '.open == 1 and .failures[0].receipt == $f and .failures[0].status == "cancelled"' <<<"$output"
}

@test "notifications/cancelled ends the run's tree; no answer is sent for it; progress comes with a token" {
	mcp_io -h 4 "$INIT" \
		'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"argv":["sh","-c","sleep 3173 & sleep 3174"]},"_meta":{"progressToken":"tok"}}}'
	# a second session: cancel after a second and a half, then ping
	run --separate-stderr bash -c '{ printf "%s\n" "$1" "$2"; sleep 1.5; pgrep -f "sleep 317[34]" >/dev/null && echo running >&2;
		printf "%s\n" "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"; sleep 3; } |
		timeout 60 "$AIRLOCK" mcp' bash "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"argv":["sh","-c","sleep 3173 & sleep 3174"]},"_meta":{"progressToken":"tok"}}}'
	[ "$status" -eq 0 ]
	[[ "$stderr" == *running* ]]
	no_process_with "sleep 317[34]"
	[ -z "$(answer 1)" ]
	answer 2 | jq -e '.result == {}'
	jq -e 'select(.method == "notifications/progress") | .params.progressToken == "tok"' <<<"$output" | grep -q true
}

@test "a server killed mid-run takes the run's tree with it" {
	{ printf '%s\n' "$INIT" "$(call 1 run '{"argv":["sh","-c","sleep 3175 & sleep 3176"]}')"; sleep 30; } |
		"$AIRLOCK" mcp >/dev/null &
	for _ in $(seq 50); do pgrep -f "sleep 3176" >/dev/null && break; sleep 0.1; done
	pgrep -f "sleep 3176" >/dev/null
	kill -9 "$(pgrep -f -x "$AIRLOCK mcp" | head -1)"
	sleep 3
	no_process_with "sleep 317[56]"
}

@test "resources: a receipt by URI, a change set of a dry run, an unknown one is -32002" {
	mcp_io "$INIT" "$(call 1 run '{"argv":["true"]}')" "$(call 2 dryrun '{"argv":["sh","-c","echo x > f"],"expect":["f"]}')"
	r1=$(answer 1 | jq .result.structuredContent.receipt)
	r2=$(answer 2 | jq .result.structuredContent.receipt)
	answer 2 | jq -e '.result.structuredContent.verdict != null and (.result.structuredContent.dryrun.changes | length == 1)'
	[ ! -e f ]
	mcp_io "$INIT" '{"jsonrpc":"2.0","id":3,"method":"resources/list"}' \
		'{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"airlock://receipt/'"$r1"'"}}' \
		'{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"airlock://changeset/'"$r2"'"}}' \
		'{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"airlock://receipt/999"}}'
	answer 3 | jq -e "[.result.resources[].uri] | index(\"airlock://receipt/$r1\")"
	answer 4 | jq -e ".result.contents[0].text | fromjson | .id == $r1"
	answer 5 | jq -e '.result.contents[0].text | fromjson | .changes[0].path == "f"'
	answer 6 | jq -e '.error.code == -32002'
}

@test "permits: propose answers what the human runs next; no tool approves" {
	mcp_io "$INIT" "$(call 1 permit_propose '{"proposal":{"argv":["touch","p"],"reason":"bats","expected_paths":["p"],"risk":2}}')" \
		"$(call 2 permit_status '{"id":1}')" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' \
		"$(call 4 permit_exec '{"id":1}')"
	answer 1 | jq -e '.result.isError == false and .result.structuredContent.permit.id == 1 and .result.structuredContent.permit.state == "PROPOSED"'
	answer 2 | jq -e '.result.structuredContent.permit.id == 1 and (.result.structuredContent.permit.next | type == "string")'
	answer 3 | jq -e '[.result.tools[].name | select(test("approve"))] | length == 0'
	# risk 4 (touch): exec waits for no one, it is refused
	answer 4 | jq -e '.result.isError == true'
	answer 4 | jq -r '.result.content[0].text' | grep -q "airlock permit approve 1"
	[ ! -e p ]
}

@test "attack: a run whose cwd is outside the failure's scope writes the workspace while the failure is open" {
	# a nested repository of its own, older than the failure
	mkdir sub
	git init -q sub
	sleep 0.1
	mcp_io "$INIT" "$(call 1 run '{"argv":["sh","-c","exit 3"]}')"
	answer 1 | jq -e '.result.structuredContent.failure_opened == true'
	# a cwd beside the workspace (one the quarantine shows), whose scope
	# has no failure open
	mcp_io "$INIT" "$(call 2 run '{"argv":["touch","'"$WORK"'/made"],"cwd":"/usr"}')"
	[ ! -e made ]
	answer 2 | jq -e '.result.isError == true'
	# the nested repository's scope does not see the workspace's failure
	mcp_io "$INIT" "$(call 3 run '{"argv":["touch","../made2"],"cwd":"sub"}')"
	[ ! -e made2 ]
	answer 3 | jq -e '.result.isError == true'
}

@test "attack: permit_exec applies a risk-3 permit while a failure is open" {
	command -v make >/dev/null || skip "make is not installed"
	printf 'all:\n\techo made > made\n' >Makefile
	mcp_io "$INIT" "$(call 1 run '{"argv":["test","-e","ok"]}')"
	answer 1 | jq -e '.result.structuredContent.failure_opened == true'
	failed=$(answer 1 | jq .result.structuredContent.receipt)
	mcp_io -h 3 "$INIT" "$(call 2 permit_propose '{"proposal":{"argv":["make"],"reason":"bats","expected_paths":["made"]}}')" \
		"$(call 3 permit_exec '{"id":1}')"
	answer 2 | jq -e '.result.structuredContent.permit.risk == 3'
	[ ! -e made ]
	answer 3 | jq -e '.result.isError == true'
	answer 3 | jq -r '.result.content[0].text' | grep -q "airlock receipt $failed is an open failure"
	# once it is closed, the same permit applies
	mcp_io -h 3 "$INIT" "$(call 4 run '{"argv":["touch","ok"],"fixes":'"$failed"'}')" \
		"$(call 5 permit_exec '{"id":1}')"
	answer 4 | jq -e '.result.structuredContent.rerun.closes == ['"$failed"']'
	answer 5 | jq -e '.result.isError == false and .result.structuredContent.permit.state == "APPLIED"'
	[ -e made ]
}

@test "attack: a run whose cwd is outside the workspace files its failure where the workspace's gate does not look" {
	mcp_io "$INIT" "$(call 1 run '{"argv":["test","-e","'"$WORK"'/ok"],"cwd":"/usr"}')" \
		"$(call 2 run '{"argv":["test","-e","'"$WORK"'/ok"],"cwd":"../.."}')" "$(call 3 gate '{}')"
	answer 1 | jq -e '.result.structuredContent.status == "invalid"'
	answer 1 | jq -r '.result.structuredContent.message' | grep -q "outside the workspace"
	answer 2 | jq -e '.result.structuredContent.status == "invalid"'
	# the runs did not run; what was refused is open where the server's
	# workspace sees it
	answer 3 | jq -e '.result.structuredContent.open == 2'
}

#!/usr/bin/env bats
# `airlock hook`: host payloads in (tests/fixtures/hosts), decisions out.
# Every internal error must be an explicit block (exit 2 and a reason on
# stderr): the hosts run the tool when a hook exits 1, times out or prints
# bad JSON.
load helpers

FIXTURES="$BATS_TEST_DIRNAME/../fixtures/hosts"

payload() { # fixture, command, [active]
	local cmd=${2//\\/\\\\}
	cmd=${cmd//\"/\\\"}
	sed -e "s|@CWD@|$WORK|g" -e "s|@ACTIVE@|${3:-false}|g" -e "s|@PATH@|${4:-}|g" \
		-e "s|@COMMAND@|$(printf '%s' "$cmd" | sed 's/[&|]/\\&/g')|g" "$FIXTURES/$1"
}

hook() { # dialect event fixture command [active] [path]
	local input
	input=$(payload "$3" "$4" "${5:-false}" "${6:-}")
	run --separate-stderr "$AIRLOCK" hook "$1" "$2" <<<"$input"
}

open_failure() {
	"$AIRLOCK" run -- sh -c 'echo "E: no DATABASE_URL" >&2; exit 1' >/dev/null || true
	FAILED=$(jq -r .id "$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)")
}

@test "claude pre-tool-use with nothing open: no block, the risk as context" {
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "npm test"
	[ "$status" -eq 0 ]
	jq -e '.hookSpecificOutput.hookEventName == "PreToolUse" and
		(.hookSpecificOutput.additionalContext | contains("risk 3"))' <<<"$output"
}

@test "pre-tool-use blocks a new command while a failure is open, citing the receipt (all three hosts)" {
	open_failure
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "npm test"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"airlock receipt $FAILED is an open failure"* ]]
	[[ "$stderr" == *"E: no DATABASE_URL"* ]]
	hook codex pre-tool-use codex/0.169/pre-tool-use.json "make"
	[ "$status" -eq 2 ]
	[ -n "$stderr" ]
	[ -z "$output" ]
	hook gemini pre-tool-use gemini-cli/0.20/before-tool.json "make"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
}

@test "while a failure is open, read-only commands and commands naming it pass" {
	open_failure
	mkdir -p "$TEST_DIR/bin"
	ln -s "$AIRLOCK" "$TEST_DIR/bin/airlock"
	export PATH="$TEST_DIR/bin:$PATH"
	for cmd in "git status" "ls -la && git diff" "cat README | head -5" "airlock gate" \
		"airlock run --fixes $FAILED -- make test" "airlock ack $FAILED --reason flaky"; do
		hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "$cmd"
		[ "$status" -eq 0 ] || { echo "$cmd: $stderr"; return 1; }
	done
	# Naming another id, or smuggling a second command, does not.
	for cmd in "airlock run --fixes 999 -- make" "airlock run --fixes $FAILED -- make; rm -rf build" \
		"git status > out" "airlock approver init"; do
		hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "$cmd"
		[ "$status" -eq 2 ] || { echo "$cmd passed"; return 1; }
	done
}

@test "while a failure is open, the read-only disguises of issue 12 are blocked (all three hosts)" {
	open_failure
	while IFS= read -r cmd; do
		hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "$cmd"
		[ "$status" -eq 2 ] || { echo "claude passed: $cmd"; return 1; }
		hook codex pre-tool-use codex/0.169/pre-tool-use.json "$cmd"
		[ "$status" -eq 2 ] || { echo "codex passed: $cmd"; return 1; }
		hook gemini pre-tool-use gemini-cli/0.20/before-tool.json "$cmd"
		[ "$status" -eq 2 ] || { echo "gemini passed: $cmd"; return 1; }
	done <<'EOF'
env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor 'GIT_CONFIG_VALUE_0=id > f; false' git status
GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=id git status
env BASH_ENV=./evil bash -c ls
env LD_PRELOAD=./evil.so ls
exec -a ls rm -f victim
env -S'rm -f victim'
env '-Smake test'
echo x | uniq - out
xxd -r -p hex out
sort --outp=F
/usr/bin/time -oF ls
sort -S 1 --compress-program=./evil
file -C -m x
date -s 2020-01-01
hostname X
EOF
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "LC_ALL=C sort -u notes.txt"
	[ "$status" -eq 0 ]
}

# The one exception while a failure is open: this airlock binary (found as
# the host's shell would find it), with options that weaken nothing.
exact_exception_setup() {
	open_failure
	mkdir -p "$TEST_DIR/bin" fake
	ln -s "$AIRLOCK" "$TEST_DIR/bin/airlock"
	printf '#!/bin/sh\nexit 0\n' >airlock
	chmod +x airlock
	cp airlock fake/airlock
	printf '{"schema": "airlock.policy/1", "gate": {"trivial": []}}\n' >pol.json
	export PATH="$TEST_DIR/bin:$PATH"
}

all_hosts() { # expected-status command
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "$2"
	[ "$status" -eq "$1" ] || { echo "claude $status: $2: $stderr"; return 1; }
	hook codex pre-tool-use codex/0.169/pre-tool-use.json "$2"
	[ "$status" -eq "$1" ] || { echo "codex $status: $2: $stderr"; return 1; }
	hook gemini pre-tool-use gemini-cli/0.20/before-tool.json "$2"
	[ "$status" -eq "$1" ] || { echo "gemini $status: $2: $stderr"; return 1; }
}

@test "while a failure is open, only this airlock with run --fixes or ack and harmless options passes (all three hosts)" {
	exact_exception_setup
	for cmd in "airlock run --fixes $FAILED -- make test" \
		"airlock run --fixes=$FAILED --timeout 30s --why 'the fix' --json --tee -- make" \
		"$AIRLOCK run --fixes $FAILED -- make" \
		"airlock run --sandbox=default --cwd $WORK --fixes $FAILED -- make" \
		"airlock run --fixes $FAILED --workspace $WORK -- make" \
		"airlock ack $FAILED --reason flaky"; do
		all_hosts 0 "$cmd"
	done
	while IFS= read -r cmd; do
		all_hosts 2 "$cmd"
	done <<LIST
airlock run --sandbox=none --fixes $FAILED -- sh -c "rm -rf $AIRLOCK_STATE_DIR/gate/open"
airlock run --sandbox none --fixes $FAILED -- true
airlock run --sand=none --fixes $FAILED -- true
airlock run --policy pol.json --fixes $FAILED -- true
airlock run --fixes $FAILED --workspace / -- true
airlock run --state-dir $TEST_DIR/elsewhere --fixes $FAILED -- true
airlock run --allow-workspace home --fixes $FAILED -- true
airlock run --net host --fixes $FAILED -- true
airlock run --env-force GITHUB_TOKEN --fixes $FAILED -- true
airlock run --fixes $FAILED --fixes 999 -- true
./airlock run --fixes $FAILED -- true
$WORK/fake/airlock run --fixes $FAILED -- true
AIRLOCK_STATE_DIR=$TEST_DIR/x airlock run --fixes $FAILED -- true
airlock ack $FAILED --state-dir $TEST_DIR/x --reason r
airlock ack $FAILED --reason r --state-dir=$TEST_DIR/x
airlock approver init
LIST
	# Found first in PATH, a script named airlock is not this binary.
	PATH="$WORK/fake:$PATH" all_hosts 2 "airlock run --fixes $FAILED -- true"
}

@test "codex gets no output at all on an unrouted pass (unknown fields would fail its hook)" {
	input=$(payload codex/0.169/pre-tool-use.json "ls")
	run --separate-stderr "$AIRLOCK" hook --no-route codex pre-tool-use <<<"$input"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	input=$(payload gemini-cli/0.20/before-tool.json "ls")
	run --separate-stderr "$AIRLOCK" hook --no-route gemini pre-tool-use <<<"$input"
	[ "$status" -eq 0 ]
	[ "$output" = "{}" ]
}

@test "a routed pass: the shell command becomes its airlock run, in each host's form" {
	self=$(readlink -f "$AIRLOCK")
	want="'$self' run --routed claude --workspace '$WORK' -- bash -c 'make test'"
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "make test"
	[ "$status" -eq 0 ]
	# Claude: the whole input, its other fields kept
	jq -e --arg w "$want" '.hookSpecificOutput | .hookEventName == "PreToolUse" and
		.updatedInput.command == $w and .updatedInput.timeout == 120000 and
		.updatedInput.description == "Run the command" and (has("permissionDecision") | not)' <<<"$output"
	# Codex: only the fields its schema knows, and "allow", without which it
	# refuses updatedInput
	hook codex pre-tool-use codex/0.169/pre-tool-use.json "make test"
	[ "$status" -eq 0 ]
	jq -e --arg w "${want/--routed claude/--routed codex}" '. == {"hookSpecificOutput":
		{"hookEventName": "PreToolUse", "permissionDecision": "allow",
		 "updatedInput": {"command": $w}}}' <<<"$output"
	hook gemini pre-tool-use gemini-cli/0.20/before-tool.json "make test"
	[ "$status" -eq 0 ]
	jq -e --arg w "${want/--routed claude/--routed gemini}" '.hookSpecificOutput |
		.hookEventName == "BeforeTool" and .tool_input.command == $w' <<<"$output"
	# airlock's own read-only commands run unrouted, as this very binary
	mkdir -p "$TEST_DIR/bin"
	ln -s "$AIRLOCK" "$TEST_DIR/bin/airlock"
	PATH="$TEST_DIR/bin:$PATH" hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "airlock gate"
	[ "$status" -eq 0 ]
	jq -e --arg w "'$self' gate" '.hookSpecificOutput.updatedInput.command == $w' <<<"$output"
}

@test "routing is exact for any command text: bash hands the routed command the same bytes" {
	# Generated strings: quotes of both kinds, backslashes, newlines, $, `,
	# globs, controls and non-ASCII; the routed text is run by bash with its
	# first word (airlock) replaced by a function that writes its arguments.
	self=$(readlink -f "$AIRLOCK")
	python3 - "$AIRLOCK" "$self" "$WORK" <<'EOF'
import json, random, subprocess, sys
airlock, self_path, work = sys.argv[1:4]
rng = random.Random(13)
alphabet = ["'", '"', "\\", "\n", "$", "`", "*", "?", "[", "]", "{", "}", ";", "&", "|",
            "(", ")", "<", ">", "!", "#", "~", " ", "\t", "\r", "\x01", "\x1b", "\x7f",
            "é", "\u2028", "\U0001F600", "a", "b", "0", "-", "=", "%", "''", "'\\''"]
quoted = "'" + self_path.replace("'", "'\\''") + "'"
cases = ["", "'", "''", "\\", "$(id)", "a'b\"c", "\n", "x\\'y"]
cases += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(300)]
for cmd in cases:
    payload = {"session_id": "s", "cwd": work, "hook_event_name": "PreToolUse",
               "tool_name": "Bash", "tool_input": {"command": cmd}}
    r = subprocess.run([airlock, "hook", "claude", "pre-tool-use"],
                       input=json.dumps(payload).encode(), capture_output=True)
    if r.returncode != 0:
        sys.exit("hook failed for %r: %r" % (cmd, r.stderr))
    routed = json.loads(r.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
    assert routed.startswith(quoted + " "), routed
    script = "f() { printf '%s\\0' \"$@\"; }; f" + routed[len(quoted):]
    out = subprocess.run(["bash", "-c", script], capture_output=True).stdout
    args = out.split(b"\0")[:-1]
    if args[-3:] != [b"bash", b"-c", cmd.encode()]:
        sys.exit("routed %r, bash got %r" % (cmd, args[-3:]))
EOF
}

@test "a command routing cannot carry exactly is refused: NUL, or bytes that are not UTF-8" {
	input=$(payload claude-code/2.1/pre-tool-use-bash.json 'ls\u0000rm -rf x')
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$input"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"NUL"* ]]
	input=$(payload claude-code/2.1/pre-tool-use-bash.json "$(printf 'ls \377')")
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$input"
	[ "$status" -eq 2 ]
	[ -n "$stderr" ]
}

@test "post-tool-use of a routed command records nothing; a look-alike is recorded" {
	self=$(readlink -f "$AIRLOCK")
	routed="'$self' run --routed claude --workspace '$WORK' -- bash -c 'false'"
	hook claude post-tool-use claude-code/2.1/post-tool-use-bash.json "$routed"
	[ "$status" -eq 0 ]
	[[ "$output" == *"its \`airlock run\` recorded it"* ]]
	[ ! -d "$AIRLOCK_STATE_DIR/receipts" ] || [ -z "$(ls "$AIRLOCK_STATE_DIR/receipts")" ]
	# another program, or more than the one airlock command, is the host's run
	for cmd in "'/tmp/airlock' run -- false" "$routed; rm -rf x" "$routed \$(id)" \
		"'$self' gate" "$routed > out"; do
		hook claude post-tool-use claude-code/2.1/post-tool-use-bash.json "$cmd"
		[ "$status" -eq 0 ]
		[[ "$output" == *"recorded the host's run"* ]] || { echo "not recorded: $cmd"; return 1; }
	done
}

@test "risk 5 is refused even with nothing open" {
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "sudo rm -rf /"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"risk 5"* ]]
}

@test "a file tool aimed at the state directory is refused" {
	"$AIRLOCK" run -- true >/dev/null
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-write.json "" false "$AIRLOCK_STATE_DIR/gate/closed/1.json"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"state directory"* ]]
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-write.json "" false "$WORK/notes.txt"
	[ "$status" -eq 0 ]
}

@test "post-tool-use turns the host's run into a receipt marked with its source; a failure opens the gate" {
	hook claude post-tool-use claude-code/2.1/post-tool-use-failure-bash.json "pytest -q"
	[ "$status" -eq 0 ]
	jq -e '.hookSpecificOutput.hookEventName == "PostToolUseFailure"' <<<"$output"
	id=$(jq -r '.hookSpecificOutput.additionalContext' <<<"$output" | grep -o 'receipt [0-9]*' | cut -d' ' -f2)
	r="$AIRLOCK_STATE_DIR/receipts/$id.json"
	jq -e '.source == "claude-post-tool-use" and .exit_code == 1 and .shell == "pytest -q" and
		.host.agent == "claude-code" and .host.tool_use_id == "toolu_01FAIL" and .gate.opened and
		.duration_ms == 1870 and (.stdout | contains("AssertionError"))' "$r"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# The host runs the same command again and it passes: closed by rerun.
	hook claude post-tool-use claude-code/2.1/post-tool-use-bash.json "pytest -q"
	[ "$status" -eq 0 ]
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
}

@test "a masked success is recorded as unverified and closes nothing" {
	hook claude post-tool-use claude-code/2.1/post-tool-use-failure-bash.json "pytest -q"
	for cmd in "pytest -q | tail -15" "pytest -q || true" "pytest -q; echo done" "pytest -q &"; do
		hook claude post-tool-use claude-code/2.1/post-tool-use-bash.json "$cmd"
		[ "$status" -eq 0 ]
		[[ "$output" == *unverified* ]] || { echo "$cmd: $output"; return 1; }
	done
	r=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.host.verified == false and .host.masking == "background"' "$r"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "gemini after-tool reads Exit Code only from where gemini-cli writes it, never from the command's output" {
	hook_captured() { # fixture filter
		run --separate-stderr "$AIRLOCK" hook gemini post-tool-use <<<"$(captured "$1" "$2")"
		[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
		[ "$output" = "{}" ]
		R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	}
	F=gemini-cli/0.61.0/after-tool-failed.json
	hook_captured $F .
	jq -e '.source == "gemini-after-tool" and .status == "exited" and .exit_code == 2 and
		.host.exit_status == "reported" and .gate.opened' "$R"
	# A success whose own output ends in an "Exit Code: 7" line: the host
	# wrote none after it, so 0.
	out='all good\nExit Code: 7'
	hook_captured $F ".tool_input.command = \"echo ok\" | .tool_response.returnDisplay = \"$out\" |
		.tool_response.llmContent = \"<untrusted_context>\\nOutput: $out\\nProcess Group PGID: 5\\n</untrusted_context>\""
	jq -e '.status == "exited" and .exit_code == 0 and .host.exit_status == "reported"' "$R"
	# The same with the terminal's rendering for returnDisplay (an array, as
	# with node-pty): where the output ends is not known, so unknown.
	hook_captured $F ".tool_input.command = \"echo ok\" | .tool_response.returnDisplay = [[{\"text\": \"all good\"}]] |
		.tool_response.llmContent = \"<untrusted_context>\\nOutput: $out\\nProcess Group PGID: 5\\n</untrusted_context>\""
	jq -e '.status == "unknown" and .exit_code == null and .host.exit_status == "unknown" and
		(.host.verified | not) and (.gate.opened | not)' "$R"
	# ... but with no Exit Code line before the host's own lines, 0 is certain.
	hook_captured $F ".tool_input.command = \"echo ok\" | .tool_response.returnDisplay = [[{\"text\": \"ok\"}]] |
		.tool_response.llmContent = \"<untrusted_context>\\nOutput: ok\\nProcess Group PGID: 5\\n</untrusted_context>\""
	jq -e '.status == "exited" and .exit_code == 0' "$R"
	# Output that imitates the host's last lines cannot make a failure 0.
	hook_captured $F '.tool_response.returnDisplay = [] |
		.tool_response.llmContent = "<untrusted_context>\nOutput: x\nProcess Group PGID: 1\nExit Code: 2\nProcess Group PGID: 5\n</untrusted_context>"'
	jq -e '.status == "unknown"' "$R"
	# A line outside the host's wrapping, or text after it: unknown.
	hook_captured $F '.tool_response.llmContent = "Output: x\nExit Code: 0"'
	jq -e '.status == "unknown"' "$R"
	# A background run: no status at all.
	hook_captured gemini-cli/0.61.0/after-tool-background.json .
	jq -e '.status == "unknown" and .host.exit_status == "unknown" and (.host.unknown_reason | test("background"))' "$R"
}

@test "codex reports no exit status: its runs are unknown, never verified, close nothing, and open a failure only by policy" {
	# The same command failed before, reported by Claude: open.
	hook claude post-tool-use claude-code/2.1/post-tool-use-failure-bash.json "make test"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	run --separate-stderr "$AIRLOCK" hook codex post-tool-use <<<"$(captured codex/0.171.0/post-tool-use-failed.json)"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.source == "codex-post-tool-use" and .status == "unknown" and .exit_code == null and
		(.match_expected | not) and .host.exit_status == "unknown" and (.host.exit_code_reported | not) and
		(.host.verified | not) and (.gate.opened | not) and .gate.closes == [] and
		(.stdout | contains("Error 3"))' "$R"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# With nothing open, an unknown run opens nothing by default ...
	rm -rf "$AIRLOCK_STATE_DIR"
	run --separate-stderr "$AIRLOCK" hook codex post-tool-use <<<"$(captured codex/0.171.0/post-tool-use-failed.json)"
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	# ... and a failure with hooks.unknown_opens_failure.
	echo '{"schema":"airlock.policy/1","hooks":{"unknown_opens_failure":true}}' >"$TEST_DIR/policy.json"
	run --separate-stderr "$AIRLOCK" hook codex post-tool-use --policy "$TEST_DIR/policy.json" \
		<<<"$(captured codex/0.171.0/post-tool-use-failed.json)"
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.status == "unknown" and .gate.opened' "$R"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "claude: a background run and a reinterpreted exit status are not successes" {
	run --separate-stderr "$AIRLOCK" hook claude post-tool-use <<<"$(captured claude-code/2.1.332/post-tool-use-failure.json)"
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.exit_code == 2 and .shell == "ls missing-dir" and .gate.opened' "$R"
	# The same command in the background: PostToolUse at launch, no status.
	run --separate-stderr "$AIRLOCK" hook claude post-tool-use <<<"$(captured claude-code/2.1.332/post-tool-use-background.json)"
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.status == "unknown" and .host.exit_status == "unknown" and .gate.closes == [] and
		(.host.unknown_reason | test("background"))' "$R"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# Without run_in_background but with a backgroundTaskId (moved there): the same.
	run --separate-stderr "$AIRLOCK" hook claude post-tool-use \
		<<<"$(captured claude-code/2.1.332/post-tool-use-background.json 'del(.tool_input.run_in_background)')"
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.status == "unknown"' "$R"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# grep's exit 1, which Claude reinterprets: not 0, not a failure, even
	# when unknown statuses open failures.
	echo '{"schema":"airlock.policy/1","hooks":{"unknown_opens_failure":true}}' >"$TEST_DIR/policy.json"
	run --separate-stderr "$AIRLOCK" hook claude post-tool-use --policy "$TEST_DIR/policy.json" \
		<<<"$(captured claude-code/2.1.332/post-tool-use-background.json 'del(.tool_input.run_in_background) |
			del(.tool_response.backgroundTaskId) | .tool_input.command = "grep -q nothing README" |
			.tool_response.returnCodeInterpretation = "No matches found"')"
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.status == "unknown" and .exit_code == null and .host.exit_status == "interpreted" and
		.host.interpretation == "No matches found" and (.gate.opened | not) and .gate.closes == []' "$R"
}

@test "stop blocks while a failure is open, with a loop guard" {
	hook claude stop claude-code/2.1/stop.json "" false
	[ "$status" -eq 0 ]
	[ "$output" = "{}" ]
	open_failure
	hook claude stop claude-code/2.1/stop.json "" false
	[ "$status" -eq 0 ]
	jq -e ".decision == \"block\" and (.reason | contains(\"receipt $FAILED\"))" <<<"$output"
	hook claude stop claude-code/2.1/stop.json "" true
	jq -e '.decision == "block"' <<<"$output"
	# The same failure a third time with stop_hook_active: let it stop.
	hook claude stop claude-code/2.1/stop.json "" true
	[ "$status" -eq 0 ]
	[ "$output" = "{}" ]
	hook codex stop codex/0.169/stop.json "" false
	jq -e '.decision == "block"' <<<"$output"
}

@test "airlock's own path is looked for only to route a command: without one a file tool is still checked, a shell command blocks" {
	# Run from a memfd, /proc/self/exe names no file ("/memfd:airlock (deleted)").
	fromfd() { # fixture command path
		local input
		input=$(payload "$1" "$2" false "$3")
		run --separate-stderr python3 -c 'import os, sys
fd = os.memfd_create("airlock", 0)
with open(sys.argv[1], "rb") as f:
    os.write(fd, f.read())
os.execv("/proc/self/fd/%d" % fd, ["airlock"] + sys.argv[2:])' "$AIRLOCK" hook claude pre-tool-use <<<"$input"
	}
	"$AIRLOCK" run -- true >/dev/null
	fromfd claude-code/2.1/pre-tool-use-write.json "" "$WORK/notes.txt"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	fromfd claude-code/2.1/pre-tool-use-write.json "" "$AIRLOCK_STATE_DIR/gate/closed/1.json"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"state directory"* ]]
	fromfd claude-code/2.1/pre-tool-use-bash.json "make"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"cannot find airlock's own path to route commands"*"blocking"* ]]
	[ -z "$output" ]
}

@test "every internal error is an explicit block: exit 2 and a reason, never 1" {
	# (A broken invocation, not an internal error, is the test below.)
	for input in "" "not json" "[1,2]" '{"tool_name":"Bash","tool_input":{}}' \
		'{"tool_name":"Bash","tool_input":{"command":7}}' '{"a":1,"a":2}'; do
		run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <<<"$input"
		[ "$status" -eq 2 ] || { echo "input '$input': status $status"; return 1; }
		[[ "$stderr" == *"blocking"* ]]
	done
	head -c 2000000 /dev/zero | tr '\0' ' ' >big
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <big
	[ "$status" -eq 2 ]
	# An unusable state directory is a block too.
	echo x > "$TEST_DIR/notadir"
	AIRLOCK_STATE_DIR="$TEST_DIR/notadir" hook claude post-tool-use claude-code/2.1/post-tool-use-bash.json "ls"
	[ "$status" -eq 2 ]
}

@test "a hook that hangs on stdin is cut off by its own deadline with a block" {
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "timing under sanitizers"
	start=$(date +%s)
	run --separate-stderr timeout 30 "$AIRLOCK" hook claude pre-tool-use < <(sleep 20)
	[ "$status" -eq 2 ]
	[ $(( $(date +%s) - start )) -lt 15 ]
	[[ "$stderr" == *"blocking"* ]]
}

@test "a block quoting a failure's output and argv carries no escape sequence" {
	"$AIRLOCK" run -- sh -c "$(terminal_attack_script)" >/dev/null || true
	hook claude pre-tool-use claude-code/2.1/pre-tool-use-bash.json "npm test"
	[ "$status" -eq 2 ]
	printf '%s\n' "$stderr" >"$TEST_DIR/hook.out"
	shows_no_controls "$TEST_DIR/hook.out" "err-visible" "argv-visible"
	shows_no_hidden_text "$TEST_DIR/hook.out"
	hook claude stop claude-code/2.1/stop.json ""
	printf '%s\n' "$output" >"$TEST_DIR/stop.out"
	jq -r .reason "$TEST_DIR/stop.out" >"$TEST_DIR/stop.reason"
	shows_no_controls "$TEST_DIR/stop.reason" "err-visible"
	shows_no_hidden_text "$TEST_DIR/stop.reason"
}

# A captured payload (tests/fixtures/hosts/<host>/<version>/, verbatim from
# the real program) with its cwd set to the test's workspace, and an
# optional jq filter applied.
captured() { # fixture [jq filter [jq args...]]
	local f=$1 filter=${2:-.}
	shift; shift || true
	jq -c --arg cwd "$WORK" --arg state "$AIRLOCK_STATE_DIR" "$@" ".cwd = \$cwd | $filter" "$FIXTURES/$f"
}

@test "the documented option order works: hook DIALECT EVENT --state-dir DIR, like --state-dir DIR first" {
	open_failure
	state=$AIRLOCK_STATE_DIR
	input=$(payload claude-code/2.1/pre-tool-use-bash.json "npm test")
	for order in after before equals; do
		case $order in
		after) args=(claude pre-tool-use --state-dir "$state") ;;
		before) args=(--state-dir "$state" claude pre-tool-use) ;;
		equals) args=(claude pre-tool-use "--state-dir=$state") ;;
		esac
		AIRLOCK_STATE_DIR=/nonexistent run --separate-stderr "$AIRLOCK" hook "${args[@]}" <<<"$input"
		[ "$status" -eq 2 ] || { echo "$order: $status $stderr"; return 1; }
		[[ "$stderr" == *"airlock receipt $FAILED is an open failure"* ]]
	done
	# And with nothing open in that directory, the same order passes.
	AIRLOCK_STATE_DIR=/nonexistent run --separate-stderr "$AIRLOCK" hook claude pre-tool-use \
		--state-dir "$TEST_DIR/empty" <<<"$input"
	[ "$status" -eq 0 ]
}

@test "a broken hook invocation warns (exit 1, one line) with nothing open, and blocks while a failure is open" {
	input=$(payload claude-code/2.1/pre-tool-use-bash.json "npm test")
	for args in "claude pre-tool-use --bogus" "claude pre-tool-use --state-dir" "vim pre-tool-use" \
		"claude launch" "claude" "claude pre-tool-use extra"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$AIRLOCK" hook $args <<<"$input"
		[ "$status" -eq 1 ] || { echo "'$args': status $status"; return 1; }
		one_error_line "airlock install --check"
	done
	open_failure
	# The state directory is read even when it comes after the bad option.
	# shellcheck disable=SC2097,SC2098 # the environment's is a decoy; --state-dir names the real one
	AIRLOCK_STATE_DIR=/nonexistent run --separate-stderr "$AIRLOCK" hook claude pre-tool-use --bogus \
		--state-dir "$AIRLOCK_STATE_DIR" <<<"$input"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
	for args in "claude pre-tool-use --bogus" "vim pre-tool-use" "claude launch"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$AIRLOCK" hook $args <<<"$input"
		[ "$status" -eq 2 ] || { echo "'$args': status $status"; return 1; }
		[[ "$stderr" == *"receipt $FAILED"* ]]
	done
}

@test "file tools on every host: a write into the state directory is refused, however the path is spelled" {
	"$AIRLOCK" run -- true >/dev/null
	S=$AIRLOCK_STATE_DIR
	ln -s "$S" "$WORK/innocent"
	mkdir -p "$WORK/sub"
	patch_with() { # header lines...
		local text='*** Begin Patch'
		for h in "$@"; do text+=$'\n'"$h"$'\n+x'; done
		text+=$'\n*** End Patch'
		captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' --arg p "$text"
	}
	refused() { # dialect payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[[ "$stderr" == *"state directory"* ]]
	}
	# The captured Codex patch, aimed at this state directory.
	refused codex "$(patch_with "*** Add File: $S/gate/closed/1.json")"
	for h in "*** Update File: $S/gate/open/x.json" "*** Delete File: $S/approver.json" \
		"*** Add File: ../state/gate/closed/1.json" "*** Add File: innocent/gate/closed/1.json" \
		"*** Add File: sub/../innocent/new/dir/x.json" "*** Add File: sub/new/../../../state/x" \
		"  *** Add File: $S/x"; do
		refused codex "$(patch_with "$h")"
	done
	refused codex "$(patch_with "*** Update File: notes.txt" "*** Move to: innocent/gate/closed/2.json")"
	# A dangling symlink: writing it creates its target.
	ln -s "$S/approver.json" "$WORK/dangling"
	ln -s ../dangling "$WORK/sub/twice"
	refused codex "$(patch_with "*** Add File: dangling")"
	refused codex "$(patch_with "*** Add File: sub/twice")"
	refused claude "$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = "dangling"')"
	# apply_patch through the shell tool, as a heredoc.
	refused codex "$(captured codex/0.169/pre-tool-use.json '.tool_input.command = $c' \
		--arg c "apply_patch <<'EOF'"$'\n'"*** Begin Patch"$'\n'"*** Add File: innocent/gate/closed/1.json"$'\n'"+{}"$'\n'"*** End Patch"$'\n'"EOF")"
	# Claude's and Gemini's file tools.
	for t in Write Edit MultiEdit; do
		refused claude "$(captured claude-code/2.1/pre-tool-use-write.json ".tool_name = \"$t\" | .tool_input.file_path = \"innocent/approver.json\"")"
	done
	refused claude "$(captured claude-code/2.1/pre-tool-use-write.json '.tool_name = "NotebookEdit" | .tool_input = {notebook_path: ($state + "/x.ipynb"), new_source: "x"}')"
	for t in write_file replace; do
		refused gemini "$(captured gemini-cli/0.20/before-tool.json ".tool_name = \"$t\" | .tool_input = {file_path: \"innocent/gate/closed/1.json\", content: \"{}\"}")"
	done
	# Gemini's shell tool run inside the state directory.
	refused gemini "$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = "ls" | .tool_input.dir_path = "innocent/gate"')"
	# An ordinary file is fine while nothing is open.
	run --separate-stderr "$AIRLOCK" hook codex pre-tool-use <<<"$(patch_with "*** Add File: sub/new.txt" "*** Update File: $WORK/notes.txt")"
	[ "$status" -eq 0 ]
	run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
		<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_name = "replace" | .tool_input = {file_path: "notes.txt", old_string: "a", new_string: "b"}')"
	[ "$status" -eq 0 ]
}

@test "file tools on every host: while a failure is open, an edit is a mutating command, blocked" {
	open_failure
	run --separate-stderr "$AIRLOCK" hook codex pre-tool-use \
		<<<"$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = "*** Begin Patch\n*** Update File: src/main.c\n@@\n-a\n+b\n*** End Patch"')"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use \
		<<<"$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = "notes.txt"')"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
	run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
		<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_name = "write_file" | .tool_input = {file_path: "notes.txt", content: "x"}')"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
}

@test "--fixes re-runs a host's failed command in the quarantine; only its success closes it" {
	hook claude post-tool-use claude-code/2.1/post-tool-use-failure-bash.json "test -e marker"
	id=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1 | xargs jq -r .id)
	run --separate-stderr "$AIRLOCK" run --fixes "$id" -- true
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"the re-run of receipt $id failed"* ]]
	touch marker
	run --separate-stderr "$AIRLOCK" run --fixes "$id" -- true
	[ "$status" -eq 0 ]
	r=$(sed -n 2p <<<"$output" | jq -r .receipt)
	jq -e '.source == "rerun" and .argv == ["bash", "-c", "test -e marker"] and
		.sandbox.profile == "default" and .sandbox.enforced != null' "$AIRLOCK_STATE_DIR/receipts/$r.json"
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
}

@test "attack: file tools cannot rewrite the project's routed policy or the hosts' hook settings" {
	# .airlock/policy.json decides the quarantine of every routed command: a
	# file tool that wrote sandbox.profile "none" there would unconfine them.
	refused() { # dialect payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[[ "$stderr" == *"airlock's configuration"* ]]
	}
	for p in .airlock/policy.json "$WORK/.airlock/new" .claude/settings.json .claude/settings.local.json; do
		refused claude "$(captured claude-code/2.1/pre-tool-use-write.json ".tool_input.file_path = \"$p\"")"
	done
	refused gemini "$(captured gemini-cli/0.20/before-tool.json '.tool_name = "write_file" | .tool_input = {file_path: ".gemini/settings.json", content: "{}"}')"
	refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' \
		--arg p $'*** Begin Patch\n*** Add File: .codex/hooks.json\n+{}\n*** End Patch')"
	refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' \
		--arg p $'*** Begin Patch\n*** Add File: .airlock/policy.json\n+{}\n*** End Patch')"
	refused codex "$(captured codex/0.169/pre-tool-use.json '.tool_input.command = $c' \
		--arg c "apply_patch <<'EOF'"$'\n'"*** Begin Patch"$'\n'"*** Add File: .airlock/policy.json"$'\n'"+{}"$'\n'"*** End Patch"$'\n'"EOF")"
	# The user's settings hold the hooks as much as the project's do, and
	# Codex's live in $CODEX_HOME when it is set.
	for p in "$HOME/.claude/settings.json" "$HOME/.codex/hooks.json" "$HOME/.gemini/settings.json" \
		"$HOME/.airlock/x"; do
		refused claude "$(captured claude-code/2.1/pre-tool-use-write.json ".tool_input.file_path = \"$p\"")"
	done
	refused gemini "$(captured gemini-cli/0.20/before-tool.json '.tool_name = "replace" | .tool_input = {file_path: ($h + "/.gemini/settings.json"), old_string: "a", new_string: "b"}' --arg h "$HOME")"
	export CODEX_HOME="$TEST_DIR/codex-home"
	mkdir -p "$CODEX_HOME"
	for f in hooks.json config.toml; do
		refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' \
			--arg p $'*** Begin Patch\n*** Add File: '"$CODEX_HOME/$f"$'\n+{}\n*** End Patch')"
		refused claude "$(captured claude-code/2.1/pre-tool-use-write.json ".tool_input.file_path = \"$CODEX_HOME/$f\"")"
	done
	unset CODEX_HOME
	# A project's .claude, .gemini and .codex are the hosts' whole: their
	# subagents, skills and commands carry hooks and shell lines too.
	refused claude "$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = ".claude/commands/x.md"')"
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use \
		<<<"$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = "docs/claude.md"')"
	[ "$status" -eq 0 ]
}

@test "attack: file tools cannot write a host's settings in a subdirectory, where a host started there reads them" {
	# A session started in sub/ of a repository reads sub/.claude/ (and Codex
	# every .codex/ from the root down): the gate's scope is the root, the
	# settings are sub's. Nor below the cwd, where the next session may start.
	git init -q .
	mkdir -p sub/deeper
	refused() { # dialect payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[[ "$stderr" == *"airlock's configuration"* ]]
	}
	for cwd in "$WORK/sub" "$WORK"; do
		for p in "$WORK/sub/.claude/settings.local.json" "$WORK/sub/deeper/.claude/settings.json" \
			"$WORK/sub/.mcp.json" "$WORK/sub/.airlock/policy.json" "$WORK/sub/.claude/agents/a.md"; do
			refused claude "$(captured claude-code/2.1/pre-tool-use-write.json '.cwd = $c | .tool_input.file_path = $p' --arg c "$cwd" --arg p "$p")"
		done
		refused gemini "$(captured gemini-cli/0.20/before-tool.json '.cwd = $c | .tool_name = "write_file" | .tool_input = {file_path: "sub/.gemini/settings.json", content: "{}"}' --arg c "$WORK")"
		refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.cwd = $c | .tool_input.command = $p' --arg c "$cwd" \
			--arg p $'*** Begin Patch\n*** Add File: '"$WORK"$'/sub/.codex/config.toml\n+[features]\n+hooks = false\n*** End Patch')"
	done
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use \
		<<<"$(captured claude-code/2.1/pre-tool-use-write.json '.cwd = $c | .tool_input.file_path = $p' --arg c "$WORK/sub" --arg p "$WORK/sub/claude.md")"
	[ "$status" -eq 0 ]
}

@test "attack: file tools cannot write git's code-running files or .envrc, which the quarantine keeps read-only" {
	# A .git/config with core.fsmonitor runs its command whenever git runs
	# on the host, the host's own git calls included; a hook on the next
	# commit; .envrc when direnv enters the directory. Outside airlock, as
	# the user: such a command could switch the hooks off itself.
	git init -q .
	mkdir -p nested && git -C nested init -q .
	refused() { # dialect payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[[ "$stderr" == *"airlock's configuration"* ]]
	}
	# A gitfile ("gitdir: ../staged") sends git to a directory of the
	# agent's, with its own config.
	for p in .git/config .git/hooks/pre-commit .envrc "$WORK/nested/.git/config" nested/.git/hooks/post-checkout \
		sub/.git; do
		refused claude "$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = $p' --arg p "$p")"
	done
	refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' \
		--arg p $'*** Begin Patch\n*** Update File: .git/config\n@@\n+[core]\n+\tfsmonitor = sh -c x\n*** End Patch')"
	refused gemini "$(captured gemini-cli/0.20/before-tool.json '.tool_name = "write_file" | .tool_input = {file_path: ".envrc", content: "x"}')"
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use \
		<<<"$(captured claude-code/2.1/pre-tool-use-write.json '.tool_input.file_path = "src/config"')"
	[ "$status" -eq 0 ]
}

# fresh_state, with the project's policy (which widens the built-in one)
# approved there, as the human would (docs/policy-format.md).
fresh_state_approved() {
	fresh_state
	[ ! -e .airlock/policy.json ] || approve_policy .airlock/policy.json
}

# A listener on the host's loopback that answers "pong"; sets $PORT.
loopback_listener() {
	python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); s.settimeout(30)
while True:
    c, _ = s.accept(); c.sendall(b"pong\n"); c.close()
' >"$TEST_DIR/port" 2>/dev/null 3>&- &
	LISTENER=$!
	for _ in $(seq 100); do [ -s "$TEST_DIR/port" ] && break; sleep 0.1; done
	PORT=$(cat "$TEST_DIR/port")
	[ -n "$PORT" ]
}

@test "attack: a routed command reaches no host loopback service and writes nothing outside the workspace, until the project's policy says so" {
	loopback_listener
	outside="$TEST_DIR/outside"
	mkdir "$outside" "$TEST_DIR/other"
	connect="exec 3<>/dev/tcp/127.0.0.1/$PORT && cat <&3"
	for step in default opened; do
		fresh_state_approved
		run_routed "$connect"
		if [ $step = default ]; then
			[ "$status" -eq 1 ]
			[[ "$output" != *pong* ]]
		else
			[ "$status" -eq 0 ]
			[ "$output" = pong ]
		fi
		fresh_state_approved
		run_routed "echo $step >'$outside/f'"
		if [ $step = default ]; then
			[ "$status" -eq 1 ]
			[ ! -e "$outside/f" ]
		else
			[ "$status" -eq 0 ]
			[ "$(cat "$outside/f")" = opened ]
			r=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
			jq -e --arg o "$outside" '.source == "claude-routed" and
				.sandbox.enforced.network == "host" and .sandbox.enforced.writable == [$o]' "$r"
			"$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$r"
		fi
		# A sibling of the writable directory stays read-only.
		fresh_state_approved
		run_routed "echo x >'$TEST_DIR/other/f'"
		[ "$status" -eq 1 ]
		[ ! -e "$TEST_DIR/other/f" ]
		# The project's file opens exactly what it names.
		mkdir -p .airlock
		jq -n --arg o "$outside" '{schema: "airlock.policy/1", sandbox: {net: "host", writable: [$o]}}' \
			>.airlock/policy.json
	done
	kill "$LISTENER"
}

@test "attack: a project's policy naming the state directory, or what holds airlock's configuration, as writable is refused: one line, exit 125, a receipt" {
	mkdir .airlock "$TEST_DIR/ok" "$WORK/sub" "$TEST_DIR/codex-home"
	# Codex's hooks live in $CODEX_HOME when it is set.
	export CODEX_HOME="$TEST_DIR/codex-home"
	# The same file without the bad entry runs.
	fresh_state
	jq -n --arg ok "$TEST_DIR/ok" '{schema: "airlock.policy/1", sandbox: {writable: [$ok]}}' \
		>.airlock/policy.json
	approve_policy .airlock/policy.json
	run_routed "touch '$TEST_DIR/ok/f'"
	[ "$status" -eq 0 ]
	rm "$TEST_DIR/ok/f"
	# shellcheck disable=SC2088 # a literal ~ is one of the paths tried
	for w in @S@ @S@/receipts "$TEST_DIR" "$TEST_DIR/link-to-state" / /usr/lib /etc \
		"~/" "$HOME" "~/.claude" "~/.codex" "~/.gemini" "$WORK" "$WORK/.airlock" "$WORK/sub" \
		"$TEST_DIR/codex-home"; do
		fresh_state
		mkdir -p "$AIRLOCK_STATE_DIR/receipts"
		ln -sfn "$AIRLOCK_STATE_DIR" "$TEST_DIR/link-to-state"
		jq -n --arg w "${w//@S@/$AIRLOCK_STATE_DIR}" --arg ok "$TEST_DIR/ok" \
			'{schema: "airlock.policy/1", sandbox: {writable: [$ok, $w]}}' >.airlock/policy.json
		approve_policy .airlock/policy.json
		run_routed "touch '$TEST_DIR/ok/f'"
		[ "$status" -eq 125 ] || { echo "$w: exit $status"; return 1; }
		one_error_line "sandbox.writable"
		[ ! -e "$TEST_DIR/ok/f" ]
		[ "$(ls "$AIRLOCK_STATE_DIR/receipts" | wc -l)" -eq 1 ]
		jq -e '.status == "invalid" and .source == "claude-routed"' "$AIRLOCK_STATE_DIR"/receipts/*.json
	done
	# A value the format does not know is refused the same way.
	for bad in '{"net": "none"}' '{"writable": ["relative"]}' '{"writable": "x"}'; do
		fresh_state
		jq -n --argjson s "$bad" '{schema: "airlock.policy/1", sandbox: $s}' >.airlock/policy.json
		run_routed true
		[ "$status" -eq 125 ]
		one_error_line "sandbox."
	done
}

@test "attack: no routed command writes the project's policy, even one that makes a directory writable" {
	mkdir "$TEST_DIR/ok"
	fresh_state
	run_routed "mkdir -p .airlock && echo '{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"profile\":\"none\"}}' >.airlock/policy.json"
	[ ! -e .airlock/policy.json ]
	mkdir -p .airlock
	jq -n --arg ok "$TEST_DIR/ok" '{schema: "airlock.policy/1", sandbox: {writable: [$ok]}}' \
		>.airlock/policy.json
	cp .airlock/policy.json "$TEST_DIR/want"
	for c in "echo '{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"profile\":\"none\"}}' >.airlock/policy.json" \
		"rm -rf .airlock" "mv .airlock '$TEST_DIR/ok/moved'" "ln -s '$TEST_DIR/ok' .airlock/x" \
		"cp -r .airlock '$TEST_DIR/ok/copy' && echo '{}' >'$TEST_DIR/ok/copy/policy.json' && mount --bind '$TEST_DIR/ok/copy' .airlock"; do
		fresh_state_approved
		rm -f "$TEST_DIR/ok/ran"
		run_routed "touch '$TEST_DIR/ok/ran'; $c"
		[ "$status" -ne 0 ] || { echo "passed: $c"; return 1; }
		[ -e "$TEST_DIR/ok/ran" ] # it ran, under that policy
		cmp .airlock/policy.json "$TEST_DIR/want"
	done
	# (a copy of .airlock may land in the writable directory: it is readable)
	[ "$(ls -A .airlock)" = policy.json ]
}

# --- issue 19: only the real airlock, asked for something harmless, passes
# unrouted; the hooks see every tool.

# The command a pre-tool-use reply lets the host run, in any host's dialect:
# sets $RAN to "refused", "routed" (airlock's run --routed of it) or
# "unrouted:TEXT" (the host runs TEXT itself).
pre_ran() { # dialect command
	local input
	case $1 in
	claude) input=$(payload claude-code/2.1/pre-tool-use-bash.json "$2") ;;
	codex) input=$(payload codex/0.169/pre-tool-use.json "$2") ;;
	gemini) input=$(payload gemini-cli/0.20/before-tool.json "$2") ;;
	esac
	run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$input"
	if [ "$status" -eq 2 ]; then
		RAN=refused
		return 0
	fi
	[ "$status" -eq 0 ] || { echo "$1: status $status: $stderr"; return 1; }
	local new
	new=$(jq -r '.hookSpecificOutput.updatedInput.command // .hookSpecificOutput.tool_input.command // empty' \
		<<<"${output:-{\}}")
	if [ -z "$new" ]; then
		RAN="unrouted:$2"
	elif [[ "$new" == "'$(readlink -f "$AIRLOCK")' run --routed $1 "* ]]; then
		RAN=routed
	else
		RAN="unrouted:$new"
	fi
}

never_unrouted() { # command...
	for cmd in "$@"; do
		for h in claude codex gemini; do
			pre_ran $h "$cmd"
			[[ "$RAN" != unrouted:* ]] || { echo "$h ran it unrouted: $cmd -> ${RAN#unrouted:}"; return 1; }
		done
	done
}

plant_airlock() {
	mkdir -p fake
	printf '#!/bin/sh\ntouch "%s/pwned"\n' "$TEST_DIR" >airlock
	chmod +x airlock
	cp airlock fake/airlock
}

@test "attack: a planted ./airlock never passes unrouted, by any spelling, with or without an open failure (all three hosts)" {
	plant_airlock
	cmds=("./airlock gate" "$WORK/airlock show 1" "./airlock doctor" "./airlock --version"
		"fake/../airlock receipts")
	never_unrouted "${cmds[@]}"
	PATH="$WORK/fake:$PATH" never_unrouted "airlock gate" "airlock doctor"
	open_failure
	never_unrouted "${cmds[@]}"
	PATH="$WORK/fake:$PATH" never_unrouted "airlock gate"
	# While a failure is open, a program that is not airlock is not read-only
	# because of its name: it is blocked, not run even in the quarantine.
	for h in claude codex gemini; do
		for cmd in "${cmds[@]}"; do
			pre_ran $h "$cmd"
			[ "$RAN" = refused ] || { echo "$h: $cmd: $RAN"; return 1; }
		done
	done
	[ ! -e "$TEST_DIR/pwned" ]
}

@test "attack: the real airlock with a weakening option, or a command that changes state, never passes unrouted (all three hosts)" {
	mkdir -p "$TEST_DIR/bin"
	ln -s "$AIRLOCK" "$TEST_DIR/bin/airlock"
	export PATH="$TEST_DIR/bin:$PATH"
	printf '{"schema": "airlock.policy/1", "sandbox": {"profile": "none"}}\n' >pol.json
	E=$TEST_DIR/elsewhere
	never_unrouted "airlock run --sandbox none -- touch $TEST_DIR/pwned" \
		"airlock run --sandbox=none -- true" "airlock run --sand=none -- true" \
		"airlock run --state-dir $E -- make check" "airlock run --state-dir=$E -- true" \
		"airlock install claude --project . --write --state-dir $E" \
		"airlock install claude --write" "airlock run --policy pol.json -- true" \
		"airlock run --net host -- true" "airlock run --allow-workspace home -- true" \
		"airlock run -- true" "airlock approver init" "airlock approver" \
		"airlock gate --state-dir $E" "airlock receipts --state-dir=$E" \
		"airlock doctor --policy pol.json" "airlock classify --rules pol.json ls" \
		"airlock ledger checkpoint" "airlock ledger recover" "airlock dryrun --sandbox none -- true" \
		"airlock apply 1" "airlock gc" "airlock permit approve 1" "airlock job j.json" \
		"airlock hook claude pre-tool-use" "airlock ack 1 --reason r" \
		"$AIRLOCK run --sandbox none -- true" "$(readlink -f "$AIRLOCK") install gemini --write" \
		"airlock gate --json --st=$E" "airlock --help --state-dir $E" \
		"airlock ledger verify --key $AIRLOCK_STATE_DIR/ledger/signing.key" \
		"airlock ledger verify --key=$HOME/.ssh/id_ed25519" "airlock ledger verify --key k --checkpoint ~/.ssh/x"
	[ ! -e "$TEST_DIR/pwned" ]
	[ ! -e "$E" ]
}

@test "the real airlock's read-only commands pass unrouted, run as this very binary, open failure or not (all three hosts)" {
	self=$(readlink -f "$AIRLOCK")
	mkdir -p "$TEST_DIR/bin"
	ln -s "$AIRLOCK" "$TEST_DIR/bin/airlock"
	export PATH="$TEST_DIR/bin:$PATH"
	check() {
		for cmd in "airlock gate" "airlock gate --json" "airlock receipts --last 5 --failed" \
			"airlock show 1 --stdout" "airlock classify -- rm -rf /" "airlock classify --shell 'ls | wc'" \
			"airlock doctor" "airlock ledger verify --key k.pub" "airlock ledger prove 1" \
			"airlock --version" "airlock help" "$AIRLOCK gate" "'$self' receipts"; do
			for h in claude codex gemini; do
				pre_ran $h "$cmd"
				[[ "$RAN" == "unrouted:'$self' "* ]] || { echo "$h: $cmd: $RAN"; return 1; }
			done
		done
	}
	check
	open_failure
	check
	# The text the host runs is the same words, airlock named by its path.
	pre_ran claude "airlock classify --shell 'ls | wc'"
	[ "$RAN" = "unrouted:'$self' classify --shell 'ls | wc'" ]
}

@test "attack: post-tool-use takes as routed only the exact routed form, with its own state directory" {
	self=$(readlink -f "$AIRLOCK")
	S=$AIRLOCK_STATE_DIR
	post() { # command [hook options...]
		local input
		input=$(payload claude-code/2.1/post-tool-use-bash.json "$1")
		shift
		run --separate-stderr "$AIRLOCK" hook claude post-tool-use "$@" <<<"$input"
		[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	}
	routed="'$self' run --routed claude --workspace '$WORK' -- bash -c 'false'"
	post "$routed"
	[[ "$output" == *"its \`airlock run\` recorded it"* ]]
	post "'$self' run --routed claude --state-dir '$S' --workspace '$WORK' -- bash -c 'false'" --state-dir "$S"
	[[ "$output" == *"its \`airlock run\` recorded it"* ]]
	for cmd in "'$self' run --state-dir '$TEST_DIR/elsewhere' -- make check" \
		"'$self' run -- bash -c 'false'" \
		"'$self' run --routed claude --state-dir '$TEST_DIR/elsewhere' --workspace '$WORK' -- bash -c 'false'" \
		"'$self' run --routed claude --workspace '$WORK' --sandbox none -- bash -c 'false'" \
		"'$self' run --sandbox none --routed claude --workspace '$WORK' -- bash -c 'false'" \
		"'$self' run --routed claude --workspace '/' -- bash -c 'false'" \
		"'$self' run --routed claude --workspace '$TEST_DIR' -- bash -c 'false'" \
		"'$self' run --routed codex --workspace '$WORK' -- bash -c 'false'" \
		"'$self' run --routed claude --policy '$TEST_DIR/p.json' --workspace '$WORK' -- bash -c 'false'" \
		"'$self' run --routed claude --workspace '$WORK' -- sh -c 'false'" \
		"'$self' run --routed claude --workspace '$WORK' -- bash -c 'false' extra" \
		"$self run --routed claude --workspace $WORK -- bash -c false"; do
		post "$cmd"
		[[ "$output" == *"recorded the host's run"* ]] || { echo "taken as routed: $cmd"; return 1; }
	done
	# With the hook's own --state-dir, the form without it is not its own.
	post "$routed" --state-dir "$S"
	[[ "$output" == *"recorded the host's run"* ]]
}

# A payload of any tool, in a host's form: tool name and input (JSON).
tool_call() { # dialect tool input-json [cwd]
	local f
	case $1 in
	claude) f=claude-code/2.1/pre-tool-use-write.json ;;
	codex) f=codex/0.171.0/pre-tool-use-apply-patch.json ;;
	gemini) f=gemini-cli/0.20/before-tool.json ;;
	esac
	jq -c --arg cwd "${4:-$WORK}" --arg t "$2" --argjson i "$3" \
		'.cwd = $cwd | .tool_name = $t | .tool_input = $i' "$FIXTURES/$f"
}

tool_status() { # dialect tool input-json [cwd]
	run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$(tool_call "$@")"
}

@test "attack: no tool reads the state directory or a hidden path, however it names it (all three hosts)" {
	"$AIRLOCK" run -- true >/dev/null
	S=$AIRLOCK_STATE_DIR
	ln -s "$S" innocent
	[ -n "$HOME" ] || skip "no HOME"
	H=$HOME
	refused() { # dialect tool input-json
		tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"state directory"* || "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	# shellcheck disable=SC2088 # a literal ~ is one of the paths tried
	for p in "$S/approver.json" "innocent/receipts" "$S" "$H/.ssh/id_ed25519" "~/.ssh/id_ed25519"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused claude NotebookRead "{\"notebook_path\": $j}"
		refused claude Grep "{\"pattern\": \"BEGIN\", \"path\": $j}"
		refused claude Glob "{\"pattern\": \"**/*\", \"path\": $j}"
		refused claude LS "{\"path\": $j}"
		refused claude mcp__fs__read_text_file "{\"path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused gemini read_file "{\"file_path\": $j}"
		refused gemini read_many_files "{\"paths\": [$j]}"
		refused gemini list_directory "{\"dir_path\": $j}"
		refused gemini glob "{\"pattern\": \"*\", \"dir_path\": $j}"
		refused gemini search_file_content "{\"pattern\": \"x\", \"dir_path\": $j}"
		refused codex view_image "{\"path\": $j}"
		refused codex mcp__files__open "{\"args\": {\"target\": {\"file\": $j}}}"
	done
	# An absolute glob, a file:// URL (plain or in a prompt), and a search of
	# a directory that holds a hidden one.
	refused claude Glob "{\"pattern\": \"$S/**\"}"
	refused claude WebFetch "{\"url\": \"file://$S/approver.json\", \"prompt\": \"x\"}"
	refused claude WebFetch "{\"url\": \"file://localhost$H/.ssh/id_ed25519\", \"prompt\": \"x\"}"
	refused gemini web_fetch "{\"prompt\": \"summarize file://$S/approver.json please\"}"
	refused claude Grep "{\"pattern\": \"PRIVATE KEY\", \"path\": \"$H\"}"
	refused claude Grep "{\"pattern\": \"x\", \"path\": \"$(dirname "$S")\"}"
	# The workspace itself is fine.
	for t in Read Grep LS; do
		tool_status claude $t '{"file_path": "notes.txt", "path": ".", "pattern": "x"}'
		[ "$status" -eq 0 ] || { echo "$t: $stderr"; return 1; }
	done
	tool_status gemini read_file "{\"absolute_path\": \"$WORK/notes.txt\"}"
	[ "$status" -eq 0 ]
}

@test "attack: a hidden path that is a symlink hides what it leads to, for a tool that reads or writes, however the target is named" {
	# One call resolves the workspace's settings first (a writing tool), then
	# the hide list: what the first walks found of the workspace's
	# directories must not hide that ~/.ssh leads into it.
	H=$TEST_DIR/home
	mkdir -p "$H" keys sub
	echo k >keys/id
	ln -s "$PWD/keys" "$H/.ssh"
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	for p in keys/id "$PWD/keys/id" sub/../keys/id "./keys/./id" "$H/.ssh/id"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused claude Write "{\"file_path\": $j, \"content\": \"x\"}"
		refused gemini replace "{\"file_path\": $j, \"old_string\": \"k\", \"new_string\": \"x\"}"
		refused codex view_image "{\"path\": $j}"
	done
	# A search of the directory that holds it, and of the workspace.
	refused claude Grep '{"pattern": "k", "path": "keys"}'
	refused claude Grep '{"pattern": "k", "path": "."}'
	# Beside it, the workspace is the agent's.
	HOME=$H tool_status claude Write '{"file_path": "sub/notes.txt", "content": "x"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	HOME=$H tool_status claude Read '{"file_path": "sub/../notes.txt"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

@test "while a failure is open, a tool airlock does not know is a mutating one: blocked; reading tools pass" {
	open_failure
	for t in mcp__github__create_issue SomeNewTool mcp__fs__write_file; do
		for h in claude codex gemini; do
			tool_status $h "$t" '{"x": "y"}'
			[ "$status" -eq 2 ] || { echo "$h $t passed"; return 1; }
			[[ "$stderr" == *"receipt $FAILED"* ]]
		done
	done
	tool_status claude Read '{"file_path": "notes.txt"}'
	[ "$status" -eq 0 ]
	tool_status claude Grep '{"pattern": "x"}'
	[ "$status" -eq 0 ]
	tool_status gemini read_file '{"file_path": "notes.txt"}'
	[ "$status" -eq 0 ]
	tool_status gemini glob '{"pattern": "*.c"}'
	[ "$status" -eq 0 ]
	# With nothing open, an unknown tool is the host's business.
	fresh_state
	tool_status claude mcp__github__create_issue '{"title": "x"}'
	[ "$status" -eq 0 ]
}

@test "attack: a file tool is judged by the workspace of the file it touches, not the payload's cwd" {
	git init -q .
	mkdir nested
	git -C nested init -q
	sleep 0.1
	open_failure
	N=$WORK/nested
	for p in "$WORK/notes.txt" "../notes.txt" "../src/new.c"; do
		j=$(jq -nc --arg p "$p" '$p')
		tool_status claude Write "{\"file_path\": $j, \"content\": \"x\"}" "$N"
		[ "$status" -eq 2 ] || { echo "passed: $p"; return 1; }
		[[ "$stderr" == *"receipt $FAILED"* ]]
		tool_status gemini write_file "{\"file_path\": $j, \"content\": \"x\"}" "$N"
		[ "$status" -eq 2 ]
	done
	tool_status codex apply_patch "$(jq -nc --arg p $'*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** End Patch' '{command: $p}')" "$N"
	[ "$status" -eq 2 ]
	# The parent's configuration, from the nested repository.
	for p in ../.claude/settings.json ../.airlock/policy.json ../.gemini/settings.json; do
		tool_status claude Write "{\"file_path\": \"$p\", \"content\": \"{}\"}" "$N"
		[ "$status" -eq 2 ] || { echo "passed: $p"; return 1; }
	done
	# The nested repository's own files are its own: no failure is open there.
	tool_status claude Write '{"file_path": "ok.txt", "content": "x"}' "$N"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# GitHub Copilot CLI 1.0.102 (tests/fixtures/hosts/copilot/1.0.102, captured):
# camelCase payloads, toolArgs an object; answers are permissionDecision and
# modifiedArgs (the whole new argument object); stderr never reaches the
# model, so a block carries its reason in the JSON too.
copilot_hook() { # event fixture [jq filter [jq args...]]
	local e=$1
	shift
	run --separate-stderr "$AIRLOCK" hook copilot "$e" <<<"$(captured "copilot/1.0.102/$1" "${@:2}")"
}

@test "copilot pre-tool-use: a bash call is routed with modifiedArgs, its other arguments kept" {
	self=$(readlink -f "$AIRLOCK")
	copilot_hook pre-tool-use pre-tool-use-bash.json
	[ "$status" -eq 0 ]
	jq -e --arg w "'$self' run --routed copilot --workspace '$WORK' -- bash -c 'echo hi'" \
		'.permissionDecision == "allow" and .modifiedArgs == {command: $w, description: "say hi"}' <<<"$output"
	# unrouted, a pass says nothing that changes the call
	run --separate-stderr "$AIRLOCK" hook --no-route copilot pre-tool-use \
		<<<"$(captured copilot/1.0.102/pre-tool-use-bash.json)"
	[ "$status" -eq 0 ]
	jq -e '(has("modifiedArgs") | not) and .permissionDecision != "deny"' <<<"$output"
	# file tools and view pass with nothing open
	for f in pre-tool-use-create.json pre-tool-use-edit.json pre-tool-use-view.json; do
		copilot_hook pre-tool-use "$f" '.toolArgs.path = ($cwd + "/notes.txt")'
		[ "$status" -eq 0 ] || { echo "$f: $stderr"; return 1; }
		jq -e '.permissionDecision != "deny"' <<<"$output"
	done
}

@test "copilot pre-tool-use: while a failure is open, bash, create and edit are denied with the reason; view passes" {
	open_failure
	for f in pre-tool-use-bash.json pre-tool-use-create.json pre-tool-use-edit.json; do
		copilot_hook pre-tool-use "$f" 'if .toolName == "bash" then .toolArgs.command = "make"
			else .toolArgs.path = ($cwd + "/notes.txt") end'
		[ "$status" -eq 2 ] || { echo "$f passed: $output"; return 1; }
		jq -e --arg id "$FAILED" '.permissionDecision == "deny" and
			(.permissionDecisionReason | contains("airlock receipt " + $id + " is an open failure"))' <<<"$output"
		[[ "$stderr" == *"is an open failure"* ]]
	done
	copilot_hook pre-tool-use pre-tool-use-view.json '.toolArgs.path = ($cwd + "/notes.txt")'
	[ "$status" -eq 0 ]
}

@test "copilot pre-tool-use: create, edit and view of the state directory or the hooks' files are refused" {
	"$AIRLOCK" run -- true >/dev/null
	for f in pre-tool-use-create.json pre-tool-use-edit.json pre-tool-use-view.json; do
		copilot_hook pre-tool-use "$f" '.toolArgs.path = ($state + "/receipts/1.json")'
		[ "$status" -eq 2 ] || { echo "$f passed"; return 1; }
		jq -e '.permissionDecision == "deny" and (.permissionDecisionReason | contains("state directory"))' <<<"$output"
	done
	for p in .github/hooks/agent.json .github/hooks/airlock.json .github/copilot/settings.json \
		.github/copilot/settings.local.json "$HOME/.copilot/hooks/x.json" "$HOME/.copilot/settings.json" \
		"$HOME/.copilot/config.json"; do
		copilot_hook pre-tool-use pre-tool-use-create.json '.toolArgs.path = $p' --arg p "$p"
		[ "$status" -eq 2 ] || { echo "$p passed"; return 1; }
		jq -e '.permissionDecision == "deny" and (.permissionDecisionReason | contains("airlock"))' <<<"$output"
	done
	# the rest of .github is the project's own
	copilot_hook pre-tool-use pre-tool-use-create.json '.toolArgs.path = ".github/workflows/ci.yml"'
	[ "$status" -eq 0 ]
}

@test "copilot post-tool-use: a shell's status is text Copilot appends, never read: unknown, it closes nothing" {
	open_failure
	# "exit code 0" as Copilot writes it, for the command that failed: the
	# same line could be the command's own output, so it proves nothing.
	copilot_hook post-tool-use post-tool-use-bash.json \
		'.toolArgs.command = "sh -c '"'"'echo \"E: no DATABASE_URL\" >&2; exit 1'"'"'"'
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.source == "copilot-post-tool-use" and .status == "unknown" and .exit_code == null and
		.host.agent == "copilot-cli" and .host.exit_status == "unknown" and (.host.verified | not) and
		.host.session_id == "37bc6869-5cd4-463c-9c5b-eba0510e98db" and .gate.closes == [] and
		(.stdout | contains("hi"))' "$R"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# A non-zero one as text opens nothing by default either.
	rm -rf "$AIRLOCK_STATE_DIR"
	copilot_hook post-tool-use post-tool-use-bash-failed.json
	[ "$status" -eq 0 ]
	R=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	jq -e '.status == "unknown" and (.gate.opened | not)' "$R"
	# A routed command's own receipt was written by its airlock run.
	self=$(readlink -f "$AIRLOCK")
	copilot_hook post-tool-use post-tool-use-bash-failed.json '.toolArgs.command = $r' \
		--arg r "'$self' run --routed copilot --workspace '$WORK' -- bash -c 'sh -c '\\''exit 3'\\'''"
	[ "$status" -eq 0 ]
	[ "$(ls "$AIRLOCK_STATE_DIR"/receipts | wc -l)" -eq 1 ]
	# File tools and failed views are not shell runs: nothing recorded.
	copilot_hook post-tool-use post-tool-use-create.json
	copilot_hook post-tool-use post-tool-use-failure-view.json
	[ "$status" -eq 0 ]
	[ "$(ls "$AIRLOCK_STATE_DIR"/receipts | wc -l)" -eq 1 ]
}

@test "copilot agent-stop: blocked while a failure is open, twice at most" {
	copilot_hook stop agent-stop.json
	[ "$status" -eq 0 ]
	jq -e '(.decision // "") != "block"' <<<"${output:-{\}}"
	open_failure
	copilot_hook stop agent-stop.json
	[ "$status" -eq 0 ]
	jq -e --arg id "$FAILED" '.decision == "block" and (.reason | contains("receipt " + $id))' <<<"$output"
	copilot_hook stop agent-stop-reentry.json
	jq -e '.decision == "block"' <<<"$output"
	copilot_hook stop agent-stop-reentry.json
	[ "$status" -eq 0 ]
	jq -e '(.decision // "") != "block"' <<<"$output"
}

@test "attack: a missing directory and .. before a symlink: the link is followed, on every host's file tools" {
	# Node's path.resolve, Python's normpath or `mkdir -p` of the parent drop
	# "x/.." or make x, then the kernel follows what comes after: a walk that
	# took the rest of the path as text after the missing x missed the link.
	# And a tool that drops "d/.." lexically where d is a symlink reaches
	# another place than the kernel does: either reading refuses.
	"$AIRLOCK" run -- true >/dev/null
	S=$AIRLOCK_STATE_DIR
	H=$TEST_DIR/home
	mkdir -p "$H/.claude" "$WORK/.claude" "$TEST_DIR/elsewhere/deep" sub
	echo token >"$H/.npmrc"
	echo '{}' >"$H/.claude/settings.json"
	echo '{}' >"$WORK/.claude/settings.json"
	ln -s "$S" st
	ln -s "$H/.npmrc" npm
	ln -s "$H/.claude/settings.json" usercfg
	ln -s .claude projcfg
	ln -s "$S/receipts/new.json" dangling
	ln -s "$S" "$TEST_DIR/outside"
	ln -s "$TEST_DIR/elsewhere/deep" d
	ln -s "$H/.npmrc" "$TEST_DIR/elsewhere/npm"
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[ -n "$stderr" ]
	}
	refused_write() { # path: every host's writing tools
		local j
		j=$(jq -nc --arg p "$1" '$p')
		for t in Write Edit MultiEdit; do
			refused claude $t "{\"file_path\": $j, \"content\": \"x\", \"old_string\": \"a\", \"new_string\": \"b\"}"
		done
		refused gemini write_file "{\"file_path\": $j, \"content\": \"x\"}"
		refused gemini replace "{\"file_path\": $j, \"old_string\": \"a\", \"new_string\": \"b\"}"
		refused codex apply_patch "{\"command\": $(jq -nc --arg p "*** Begin Patch"$'\n'"*** Add File: $1"$'\n'"+x"$'\n'"*** End Patch" '$p')}"
		HOME=$H copilot_hook pre-tool-use pre-tool-use-create.json '.toolArgs.path = $p' --arg p "$1"
		[ "$status" -eq 2 ] || { echo "copilot create passed: $1"; return 1; }
		HOME=$H copilot_hook pre-tool-use pre-tool-use-edit.json '.toolArgs.path = $p' --arg p "$1"
		[ "$status" -eq 2 ] || { echo "copilot edit passed: $1"; return 1; }
	}
	refused_read() { # path: every host's reading tools
		local j
		j=$(jq -nc --arg p "$1" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused codex view_image "{\"path\": $j}"
		HOME=$H copilot_hook pre-tool-use pre-tool-use-view.json '.toolArgs.path = $p' --arg p "$1"
		[ "$status" -eq 2 ] || { echo "copilot view passed: $1"; return 1; }
	}
	# the state directory, and the user's credentials: neither read nor written
	for p in x/../st/receipts/9.json a/b/../../st/receipts/9.json x/y/z/../../../st/x \
		"$WORK/x/../st/receipts/9.json" x/../../outside/receipts/9.json \
		"x/../../$(basename "$WORK")/st/x" x/../st/. x/../st/receipts/. x/../dangling \
		x/y/../../dangling x/../npm x/../npm/. sub/x/../../npm d/../st/receipts/9.json \
		d/../npm x/../d/../npm; do
		refused_write "$p"
		refused_read "$p"
	done
	# Gemini's shell tool run in the state directory, however dir_path reaches it
	for p in x/../st x/y/../../st/receipts d/../st x/../st/.; do
		HOME=$H run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
			<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = "ls" | .tool_input.dir_path = $p' --arg p "$p")"
		[ "$status" -eq 2 ] || { echo "gemini dir_path passed: $p"; return 1; }
		[[ "$stderr" == *"state directory"* ]]
	done
	# the hosts' settings: never written
	for p in x/../usercfg a/b/../../usercfg x/../projcfg/settings.json x/../projcfg/. \
		x/y/../../projcfg/settings.local.json; do
		refused_write "$p"
	done
	# The workspace after a missing directory is the agent's.
	for p in x/../notes.txt x/../sub/new.txt a/b/../../sub/./new.txt; do
		HOME=$H tool_status claude Write "{\"file_path\": \"$p\", \"content\": \"x\"}"
		[ "$status" -eq 0 ] || { echo "$p: $stderr"; return 1; }
		HOME=$H tool_status claude Read "{\"file_path\": \"$p\"}"
		[ "$status" -eq 0 ] || { echo "$p: $stderr"; return 1; }
	done
}

# The kernel follows a symlink whatever the length of where it leads; a
# path string (lstat()'s argument) holds at most PATH_MAX bytes. Two links
# of ~2,500 bytes each, one inside the other's target, take a short path
# to a directory ~5,000 bytes deep: a walk that took lstat()'s
# ENAMETOOLONG there for a name that does not exist read the link below it
# as text, and a tool opening the short path reached the key or the state
# directory it led to.
@test "attack: a short path through links into a directory deeper than PATH_MAX still follows the link at its end" {
	"$AIRLOCK" run -- true >/dev/null
	S=$AIRLOCK_STATE_DIR
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh"
	echo key >"$H/.ssh/id_ed25519"
	local seg rel1="" rel2=""
	seg=$(printf 'a%.0s' $(seq 200))
	for i in $(seq 12); do
		rel1="$rel1$seg$i/"
		rel2="$rel2${seg}b$i/"
	done
	rel1=${rel1%/} rel2=${rel2%/}
	mkdir -p "$rel1"
	(cd "$rel1" && mkdir -p "$rel2" && cd "$rel2" &&
		ln -s "$H/.ssh/id_ed25519" k && ln -s "$S" st && ln -s "$H/.ssh" keys)
	ln -s "$rel1" s
	ln -s "$rel2" "$rel1/t"
	[ "$(cat s/t/k)" = key ] # the kernel reaches the key
	[ "$(realpath -m "$WORK/s/t" | wc -c)" -gt 4096 ]
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[ -n "$stderr" ]
	}
	for p in "$WORK/s/t/k" s/t/k s/t/st/approver.json "$WORK/s/t/keys/id_ed25519" x/../s/t/k; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused claude Write "{\"file_path\": $j, \"content\": \"x\"}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
	done
	refused claude Grep '{"pattern": "k", "path": "s/t"}'
	refused claude Grep '{"pattern": "k", "path": "s/t/keys"}'
}

# The walk's cache is two hash tables of FNV-1a, which an agent can make
# collide: names of a listed directory all in one bucket of its set (with
# the link to a key among them), and a call naming thousands of paths (the
# table of prefixes grown many times). Every answer is still the kernel's,
# and a call too big to check in time blocks (the deadline): never a pass.
@test "attack: names of a listed directory that collide in its hash set, and thousands of paths in one call, still find the link to a key" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh" c
	echo key >"$H/.ssh/id_ed25519"
	# 41 names whose FNV-1a falls in one bucket of the 128-slot set, the
	# last a link to the key
	python3 - c "$H/.ssh/id_ed25519" <<'PY'
import os, sys
def fnv(b):
    h = 14695981039346656037
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return h
names, i = [], 0
while len(names) < 41:
    n = "n%d" % i
    i += 1
    if fnv(n.encode()) & 127 == 5:
        names.append(n)
for n in names[:-1]:
    open(os.path.join(sys.argv[1], n), "w").close()
os.symlink(sys.argv[2], os.path.join(sys.argv[1], names[-1]))
print(names[-1], file=open(os.path.join(sys.argv[1], "..", "linkname"), "w"))
PY
	link=c/$(cat linkname)
	[ "$(cat "$link")" = key ]
	refused() { # input-json
		HOME=$H tool_status claude mcp__fs__read_multiple_files "$1"
		[ "$status" -eq 2 ] || { echo "passed ($status)"; return 1; }
		[ -n "$stderr" ]
	}
	# 20 missing names first (the listing is read after 16), then the link
	refused "$(jq -nc --arg l "$link" '{paths: ([range(0; 20) | "c/m\(.)"] + [$l])}')"
	# 3,000 paths over 50 directories, the link last, and the key itself
	refused "$(jq -nc --arg l "$link" '{paths: ([range(0; 3000) | "d\(. % 50)/n\(.)"] + [$l])}')"
	refused "$(jq -nc --arg k "$H/.ssh/id_ed25519" '{paths: ([range(0; 3000) | "c/n\(.)"] + [$k])}')"
	# the same without the link passes: the answers are not a blanket refusal
	HOME=$H tool_status claude mcp__fs__read_multiple_files \
		"$(jq -nc '{paths: [range(0; 3000) | "d\(. % 50)/n\(.)"]}')"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# A tool airlock does not know (an MCP server's) has its whole input walked
# for paths; the walk stopped 32 levels down, and a path nested deeper
# passed unread. Input nested deeper than the walk reads is refused.
@test "attack: a path nested deeper than the input walk reads is not passed unread" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh"
	echo key >"$H/.ssh/id_ed25519"
	for d in 8 31 40 200; do
		for wrap in '{a: .}' '[.]' '{a: [.]}'; do
			HOME=$H tool_status claude mcp__files__open "$(jq -nc --arg k "$H/.ssh/id_ed25519" \
				--argjson d "$d" "reduce range(0; \$d) as \$i ({file: \$k}; $wrap) | {input: .}")"
			[ "$status" -eq 2 ] || { echo "passed ($status): depth $d, $wrap"; return 1; }
			[ -n "$stderr" ]
		done
	done
	# shallow input without a hidden path passes
	HOME=$H tool_status claude mcp__files__open '{"a": {"b": {"file": "notes.txt"}}}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# "~user/..." is that user's home to a tool that expands it (Python's
# os.path.expanduser(), a shell): the hook took it for a name in the
# working directory, and /root's keys, or another user's home, passed.
@test "attack: ~user names that user's home, for a tool that expands it" {
	home=$(getent passwd root | cut -d: -f6)
	[ "$home" = /root ] || skip "root's home is not /root"
	refused() { # dialect tool input-json
		tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	# the absolute path is refused: so must its ~root spelling be
	refused claude mcp__fs__read_text_file '{"path": "/root/.ssh/id_ed25519"}'
	for p in "~root/.ssh/id_ed25519" "~root/./.ssh/../.ssh/id_ed25519" "~root/.ssh"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude mcp__fs__read_text_file "{\"path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
		refused codex mcp__files__open "{\"args\": {\"target\": {\"file\": $j}}}"
		refused claude mcp__py__cat "{\"where\": $j}"
	done
	refused claude Grep '{"pattern": "PRIVATE", "path": "~root"}'
	# a name that is no user stays a name in the working directory
	tool_status claude mcp__fs__read_text_file '{"path": "~no-such-user-here/notes.txt"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# /proc/self is the process that looks: the hook's to its walk, the host's
# to the tool that runs after it. A thread of the host (its pid, which
# /proc/self/stat tells a reading tool) is no thread of the hook's: the
# walk found no /proc/self/task/PID and took the rest for text, and the
# host read its own root's keys through it.
@test "attack: /proc/self and what leads to it are the hook's own, not the host's: refused" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh"
	echo key >"$H/.ssh/id_ed25519"
	K=$H/.ssh/id_ed25519
	[ "$(cat "/proc/self/task/$$/root$K" 2>/dev/null || cat "/proc/$$/task/$$/root$K")" = key ]
	ln -s /proc/self me
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[ -n "$stderr" ]
	}
	for p in "/proc/self/task/$$/root$K" "/proc/thread-self/../../self/task/$$/root$K" \
		"/dev/fd/../task/$$/root$K" "/dev/stdin" "me/task/$$/root$K" "/proc/self/fd/9/x"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
	done
	# another process's /proc is read by its links, as the host reads it
	HOME=$H tool_status claude Read "{\"file_path\": \"/proc/$$/root$K\"}"
	[ "$status" -eq 2 ] || { echo "passed ($status)"; return 1; }
	HOME=$H tool_status claude Read '{"file_path": "/proc/cpuinfo"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# A URL reader opens a file: URL's path without its query or fragment, and
# takes the scheme in any case and a backslash for a slash (WHATWG URL).
@test "attack: a file: URL with a query, a fragment, an upper-case scheme or backslashes still names the hidden file" {
	H=$TEST_DIR/home
	mkdir -p "$H"
	echo token >"$H/.npmrc"
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	for u in "file://$H/.npmrc" "file://$H/.npmrc?x=1" "file://$H/.npmrc#top" "FILE://$H/.npmrc" \
		"File:$H/.npmrc" "file:\\\\localhost$H/.npmrc" "file:$(tr / '\134' <<<"$H")\\.npmrc" \
		"file://$H/x/..\\.npmrc"; do
		j=$(jq -nc --arg u "$u" '$u')
		refused claude WebFetch "{\"url\": $j, \"prompt\": \"x\"}"
		refused gemini web_fetch "{\"prompt\": $(jq -nc --arg u "$u" '"summarize \($u) please"')}"
	done
	# a URL of a workspace file passes
	HOME=$H tool_status claude WebFetch "{\"url\": \"file://$WORK/notes.txt?x#y\", \"prompt\": \"x\"}"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# Overlayfs keeps a merged directory's listing while a file has it open, and
# a name added to its upper layer beneath it is found by a lookup but missing
# from that listing. The hook's path walk took such a listing as the truth:
# a link to a hidden path, present but unlisted, was taken for a missing
# name (plain text), and a file tool reading through it passed (a read of
# many files, the link last). Listings of
# overlayfs are not trusted (dirread_exact()).
@test "attack: a link to a hidden path in an overlayfs directory whose listing lacks it is still followed" {
	[ "$(id -u)" -eq 0 ] || skip "mounting an overlay needs root"
	[ -n "$HOME" ] || skip "no HOME"
	mkdir -p "$TEST_DIR/lower" "$TEST_DIR/upper" "$TEST_DIR/ovlwork" ov
	mount -t overlay overlay -o "lowerdir=$TEST_DIR/lower,upperdir=$TEST_DIR/upper,workdir=$TEST_DIR/ovlwork" ov ||
		skip "overlayfs cannot be mounted here"
	python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)  # the overlay keeps this listing while fd is open
open(sys.argv[2], "w").close()
time.sleep(60)' ov "$TEST_DIR/held" &
	local held=$!
	for _ in $(seq 100); do [ -e "$TEST_DIR/held" ] && break; sleep 0.05; done
	ln -s "$HOME/.ssh/id_ed25519" "$TEST_DIR/upper/key"
	local listed=yes
	[ -n "$(find ov -mindepth 1 -maxdepth 1 -name key)" ] || listed=no
	[ -L ov/key ] # found by a lookup
	# Enough names in ov first that the walk reads its listing (after 16
	# lookups), then the link.
	tool_status claude mcp__fs__read_multiple_files \
		"$(jq -nc '{paths: ([range(0; 24) | "ov/n\(.)"] + ["ov/key"])}')"
	kill "$held" 2>/dev/null || true
	umount -l ov
	[ "$listed" = no ] || skip "this overlayfs lists the upper layer's new names"
	[ "$status" -eq 2 ] || { echo "passed ($status): $stderr"; return 1; }
	[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
}

# Gemini's read_many_files globs its paths (node-glob: a component named
# or matched goes through a symlink, a symlink to a file is read; nocase),
# and search_file_content's last fallback reads every file below its
# directory, a symlink to one too. The hook checked only the directories
# named: a link below one to a hidden path passed. Those tools' roots are
# looked through for symlinks, each checked like a path the tool names.
@test "attack: a symlink below a directory or glob a Gemini tool reads is checked like a named path" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh" sub deep/a/b plain
	echo key >"$H/.ssh/id_ed25519"
	echo notes >plain/notes.txt
	ln -s "$H/.ssh/id_ed25519" sub/k
	ln -s "$H/.ssh" keys
	ln -s "$H" deep/a/b/home
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* && "$stderr" == *"$H"* ]] || { echo "$stderr"; return 1; }
	}
	for p in sub "s*/k" "ke*/id_ed25519" "SUB/k" "deep/**" "./sub/../sub" "$WORK/s?b/k" "{sub,x}/k"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused gemini read_many_files "{\"paths\": [\"plain/notes.txt\", $j]}"
		refused gemini read_many_files "{\"include\": [$j]}"
	done
	for d in sub . deep "$WORK"; do
		j=$(jq -nc --arg p "$d" '$p')
		refused gemini search_file_content "{\"pattern\": \"x\", \"dir_path\": $j}"
		refused gemini grep_search "{\"pattern\": \"x\", \"dir_path\": $j, \"include\": \"*.txt\"}"
	done
	refused gemini search_file_content '{"pattern": "x"}'
	# a directory without such links passes, and so does a link into it
	ln -s notes.txt plain/also
	HOME=$H tool_status gemini read_many_files '{"paths": ["plain/*.txt", "plain"]}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	HOME=$H tool_status gemini search_file_content '{"pattern": "x", "dir_path": "plain"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	# ripgrep without --follow does not read below a link it finds (Claude's
	# Grep, Codex's grep_files, Copilot's grep): not looked through
	HOME=$H tool_status claude Grep '{"pattern": "x", "path": "sub"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# The walk is bounded: a directory with more entries than it looks through
# is refused with a reason, not passed unlooked at.
@test "attack: a Gemini search of a directory too big to look through for symlinks is refused" {
	mkdir big
	(cd big && seq 1 20001 | xargs touch)
	tool_status gemini search_file_content '{"pattern": "x", "dir_path": "big"}'
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"more than 20000 entries"* ]] || { echo "$stderr"; return 1; }
	[ "$(wc -l <<<"$stderr")" -eq 1 ]
	rm big/1 big/2
	tool_status gemini search_file_content '{"pattern": "x", "dir_path": "big"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# A process's environment (the host's API keys), command line, memory and
# descriptors in /proc are no file tool's to read: only its name, state and
# usage are.
@test "attack: a file tool reads no process's environ, cmdline or mem in /proc" {
	sleep 60 &
	local pid=$!
	refused() { # dialect tool input-json
		tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	for p in "/proc/$pid/environ" "/proc/$pid/cmdline" "/proc/$pid/mem" "/proc/$pid/auxv" \
		"/proc/$pid/task/$pid/environ" "/proc/$pid/./environ" "/proc/$pid/fd/0" "/proc/$$/environ" \
		"/proc/1/environ" "/proc/$pid/task/$pid/../$pid/environ"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
	done
	ln -s "/proc/$pid" proc_link
	refused claude Read '{"file_path": "proc_link/environ"}'
	for d in /proc "/proc/$pid" "/proc/$pid/task" "/proc/$pid/task/$pid" proc_link; do
		refused claude Grep "{\"pattern\": \"KEY\", \"path\": \"$d\"}"
	done
	# its name, state and usage, and the system's files, are read
	for p in "/proc/$pid/status" "/proc/$pid/stat" "/proc/$pid/comm" /proc/cpuinfo /proc/meminfo; do
		tool_status claude Read "{\"file_path\": \"$p\"}"
		[ "$status" -eq 0 ] || { echo "$p: $stderr"; kill "$pid"; return 1; }
	done
	kill "$pid"
}

# A process's links in /proc (root, cwd, exe, fd/N, map_files/, ns/, the
# same below task/TID/) reach what that process holds, in its own mount
# namespace, by no name the hook can look up: its root there may have a
# hidden directory bound over an empty one, its cwd is where it is, and
# it (the agent's) moves them at will once the hook has looked. And a ".."
# after one goes to the parent of what it reaches, not back to /proc.
@test "attack: a process's root or cwd in another mount namespace, or a .. after its link in /proc, reaches no hidden file" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh" "$H/a/b/c" "$TEST_DIR/empty"
	echo key >"$H/.ssh/id_ed25519"
	(cd "$H/a/b/c" && exec 5<. sleep 60) 3>&- &
	local dir=$! ns=
	if unshare -rm true 2>/dev/null; then
		unshare -rm sh -c "mount --bind '$H/.ssh' '$TEST_DIR/empty' && cd '$TEST_DIR/empty' && exec sleep 60" 3>&- &
		ns=$!
	fi
	for _ in $(seq 50); do
		[ -e "/proc/$dir/fd/5" ] && { [ -z "$ns" ] || [ -e "/proc/$ns/cwd/id_ed25519" ]; } && break
		sleep 0.1
	done
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* || "$stderr" == *"cannot resolve"* ]] || { echo "$stderr"; return 1; }
	}
	local paths=("/proc/$dir/fd/5/../../../.ssh/id_ed25519" "/proc/$dir/task/$dir/fd/5/../../../.ssh/id_ed25519"
		"/proc/$dir/cwd/../../../.ssh/id_ed25519" "/proc/$dir/fd/5/x/../../../../.ssh/id_ed25519")
	[ -z "$ns" ] || paths+=("/proc/$ns/root$TEST_DIR/empty/id_ed25519" "/proc/$ns/cwd/id_ed25519"
		"/proc/$ns/task/$ns/root$TEST_DIR/empty/id_ed25519" "/proc/$ns/task/$ns/cwd/./id_ed25519")
	for p in "${paths[@]}"; do
		[ "$(cat "${p/x\/..\//}")" = key ] || { echo "the kernel does not reach the key by $p"; return 1; }
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused gemini read_file "{\"absolute_path\": $j}"
		refused claude mcp__fs__read_multiple_files "{\"paths\": [\"notes.txt\", $j]}"
	done
	if [ -n "$ns" ]; then
		ln -s "/proc/$ns/root" other_root
		ln -s "/proc/$ns/cwd" other_cwd
		refused claude Read "{\"file_path\": \"other_root$TEST_DIR/empty/id_ed25519\"}"
		refused claude Read '{"file_path": "other_cwd/id_ed25519"}'
		for d in "/proc/$ns/root$TEST_DIR/empty" "/proc/$ns/cwd" other_cwd; do
			refused claude Grep "{\"pattern\": \"k\", \"path\": \"$d\"}"
		done
	fi
	kill "$dir" $ns
}

# A hide entry for one file (~/.netrc) names it; a process that holds it
# open, or runs it, after it was deleted has a link in /proc that reads
# "~/.netrc (deleted)", a name under no hide entry, and opening it reads
# the file all the same.
@test "attack: a hidden file a process holds open or runs, deleted since, is not read through /proc" {
	H=$TEST_DIR/home
	mkdir -p "$H"
	echo secret >"$H/.netrc"
	(exec 5<"$H/.netrc" && rm "$H/.netrc" && exec sleep 60) 3>&- &
	local open=$!
	cp "$(command -v sleep)" "$H/.git-credentials"
	"$H/.git-credentials" 60 3>&- &
	local runs=$!
	for _ in $(seq 50); do
		[[ "$(readlink "/proc/$open/fd/5")" == *" (deleted)" && "$(readlink "/proc/$runs/exe")" == "$H/"* ]] && break
		sleep 0.1
	done
	rm "$H/.git-credentials"
	[ "$(cat "/proc/$open/fd/5")" = secret ]
	[[ "$(readlink "/proc/$runs/exe")" == "$H/.git-credentials (deleted)" ]]
	refused() { # dialect tool input-json
		HOME=$H tool_status "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* ]] || { echo "$stderr"; return 1; }
	}
	ln -s "/proc/$open/fd/5" fd_link
	ln -s "/proc/$runs/exe" exe_link
	for p in "/proc/$open/fd/5" "/proc/$open/task/$open/fd/5" "/proc/$open/fdinfo/5" fd_link \
		"/proc/$runs/exe" "/proc/$runs/task/$runs/exe" exe_link; do
		j=$(jq -nc --arg p "$p" '$p')
		refused claude Read "{\"file_path\": $j}"
		refused gemini read_file "{\"absolute_path\": $j}"
	done
	for d in "/proc/$open/fd" "/proc/$open/map_files" "/proc/$runs/map_files"; do
		refused claude Grep "{\"pattern\": \"s\", \"path\": \"$d\"}"
	done
	kill "$open" "$runs"
}

# A shell tool's own paths (a patch fed to apply_patch, which Codex applies
# itself, and Gemini's dir_path, where the host starts the command) are
# the host's, outside the quarantine: through a process's link in /proc
# they reach the state directory or the project's policy by a name that
# is neither.
@test "attack: a shell tool's patch or directory through a process's link in /proc is refused" {
	"$AIRLOCK" run -- true >/dev/null
	S=$AIRLOCK_STATE_DIR
	(cd "$S" && exec 5<. sleep 60) 3>&- &
	local in_state=$!
	sleep 60 3>&- &
	local in_work=$!
	for _ in $(seq 50); do
		[ -e "/proc/$in_state/fd/5" ] && [ -e "/proc/$in_work/cwd" ] && break
		sleep 0.1
	done
	[ "/proc/$in_state/cwd/approver.json" -ef "$S/approver.json" ] || [ -e "/proc/$in_state/cwd/receipts" ]
	refused() { # dialect payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[ -n "$stderr" ]
	}
	for p in "/proc/$in_state/cwd/approver.json" "/proc/$in_state/fd/5/approver.json" \
		"/proc/$in_state/task/$in_state/fd/5/gate/x" "/proc/$in_work/cwd/.airlock/policy.json"; do
		refused codex "$(captured codex/0.169/pre-tool-use.json '.tool_input.command = $c' \
			--arg c "apply_patch <<'EOF'"$'\n'"*** Begin Patch"$'\n'"*** Add File: $p"$'\n'"+{}"$'\n'"*** End Patch"$'\n'"EOF")"
		refused codex "$(captured codex/0.171.0/pre-tool-use-apply-patch.json '.tool_input.command = $p' \
			--arg p "*** Begin Patch"$'\n'"*** Add File: $p"$'\n'"+{}"$'\n'"*** End Patch")"
	done
	for d in "/proc/$in_state/cwd" "/proc/$in_state/fd/5/gate" "/proc/$in_state/root$S"; do
		refused gemini "$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = "ls" | .tool_input.dir_path = $d' --arg d "$d")"
	done
	kill "$in_state" "$in_work"
}

# Gemini's link tools never read below a node_modules, .git,
# bower_components, .svn or .hg under their glob's directory: node-glob's
# ignore "**/node_modules/**" (COMMON_IGNORE_PATTERNS, getGlobExcludes(),
# and read_many_files' default excludes) matches the path relative to the
# glob's cwd and does not descend there. The hook's walk skips those
# directories where every Gemini release since 0.12 provably does not read
# them: a search of a workspace with a big node_modules passes. Where the
# inputs make the tool read one (useDefaultExcludes false, a dir_path
# inside it, a pattern that leaves the glob's directory) it is walked as
# before, and so is one a pattern leads into (the walk starts there).
@test "attack: a Gemini search skips the node_modules its tool never reads, and looks through one it does" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh" src/node_modules/deep .git/objects node_modules/bulk node_modules/pkg other
	echo key >"$H/.ssh/id_ed25519"
	echo notes >src/notes.txt
	(cd node_modules/bulk && seq 1 20001 | xargs touch)
	ln -s "$H/.ssh/id_ed25519" node_modules/pkg/k
	ln -s "$H/.ssh" src/node_modules/deep/keys
	ln -s "$H/.ssh/id_ed25519" .git/objects/k
	passes() { # tool input-json
		HOME=$H tool_status gemini "$@"
		[ "$status" -eq 0 ] || { echo "refused: $* $stderr"; return 1; }
	}
	refused() { # message tool input-json
		local want=$1
		shift
		HOME=$H tool_status gemini "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"$want"* ]] || { echo "$*: $stderr"; return 1; }
	}
	w=$(basename "$WORK")
	check() { # message: what a refused call says
		passes search_file_content '{"pattern": "x"}'
		passes grep_search '{"pattern": "x", "dir_path": "."}'
		passes grep_search "{\"pattern\": \"x\", \"dir_path\": \"$WORK\", \"include\": \"**/*.txt\"}"
		passes grep_search '{"pattern": "x", "dir_path": "src"}'
		passes read_many_files '{"include": ["**"]}'
		passes read_many_files '{"include": ["**/*.txt", "src"], "useDefaultExcludes": true}'
		passes read_many_files '{"paths": ["src/**"], "exclude": ["*.md"]}'
		# the tool reads below the node_modules
		refused "$1" read_many_files '{"include": ["**"], "useDefaultExcludes": false}'
		refused "$1" read_many_files '{"include": ["**"], "useDefaultExcludes": null}'
		refused hidden read_many_files '{"include": ["node_modules/pkg/k"]}'
		refused hidden read_many_files '{"paths": ["node_modules/p*/*"]}'
		refused hidden read_many_files '{"include": ["src/node_modules/**"]}'
		refused "$1" read_many_files '{"include": ["node_modules/**"]}'
		# read_many_files globs from the workspace, whatever dir_path says
		refused "$1" read_many_files '{"dir_path": "other", "include": ["node_modules/p*/k"]}'
		# a pattern that leaves the glob's directory is matched outside it,
		# where the ignore does not hold
		refused "$1" read_many_files "{\"include\": [\"../$w/**\"]}"
		# (looked through from the workspace's parent, which holds the state directory)
		refused "would reach" read_many_files "{\"include\": [\"**/*.txt\", \"{..,x}/$w/**\"]}"
		refused "$1" read_many_files "{\"include\": [\"$WORK/**\"]}"
		refused hidden grep_search '{"pattern": "x", "dir_path": "node_modules/pkg"}'
		refused hidden grep_search '{"pattern": "x", "dir_path": "src/node_modules"}'
		refused hidden grep_search '{"pattern": "x", "dir_path": ".git"}'
		refused "$1" search_file_content '{"pattern": "x", "dir_path": "node_modules"}'
		refused "$1" grep_search '{"pattern": "x", "include": "node_modules/**"}'
		refused "$1" grep_search "{\"pattern\": \"x\", \"include\": \"../$w/**\"}"
	}
	check "more than 20000 entries"
	rm -r node_modules/bulk
	check hidden
	# a symlink named node_modules is no directory the tool skips
	mkdir src/x && ln -s "$H/.ssh" src/x/node_modules
	refused hidden search_file_content '{"pattern": "x"}'
	refused hidden read_many_files '{"include": ["**"]}'
}

# A search's dir_path is no pattern: Gemini takes it as text
# (path.resolve() of the workspace and it, then realpath(); grep.ts) and
# globs every file below it. The hook cut it as a pattern at its first
# component with a glob character ("lib@1", "a{b}"): the walk started
# above the tool's cwd and skipped the node_modules that cwd is in. And a
# ".." after a symlink was read as the kernel does, not as path.resolve()
# and node-glob (the parent of the link's own path) do: the walk looked
# through another directory than the one the tool reads.
@test "attack: a Gemini search's dir_path with a glob character, or a .. after a symlink, is looked through where the tool reads" {
	H=$TEST_DIR/home
	mkdir -p "$H/.ssh" "x/lib@1/node_modules/pkg" "x/a{b}/node_modules/pkg" y/a/b y/pkgs/one
	echo key >"$H/.ssh/id_ed25519"
	ln -s "$H/.ssh/id_ed25519" "x/lib@1/node_modules/pkg/k"
	ln -s "$H/.ssh/id_ed25519" "x/a{b}/node_modules/pkg/k"
	ln -s "$H/.ssh/id_ed25519" y/pkgs/one/k
	ln -s "$WORK/y/a/b" y/L
	refused() { # tool input-json
		HOME=$H tool_status gemini "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
		[[ "$stderr" == *"hidden"* && "$stderr" == *"$H"* ]] || { echo "$stderr"; return 1; }
	}
	for d in "x/lib@1/node_modules/pkg" "x/lib@1/node_modules" "x/a{b}/node_modules" \
		"$WORK/x/a{b}/node_modules/pkg" y/L/../pkgs/one y/L/../pkgs "$WORK/y/L/../pkgs"; do
		j=$(jq -nc --arg p "$d" '$p')
		refused search_file_content "{\"pattern\": \"x\", \"dir_path\": $j}"
		refused grep_search "{\"pattern\": \"x\", \"dir_path\": $j, \"include\": \"*\"}"
	done
	refused read_many_files '{"paths": ["y/L/../pk*/one/*"]}'
	refused read_many_files '{"include": ["y/L/../pkgs/**"]}'
	# the directory above them: the node_modules below its glob's cwd is
	# skipped, as the tool's ignore does
	HOME=$H tool_status gemini grep_search '{"pattern": "x", "dir_path": "x"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	refused grep_search '{"pattern": "x", "dir_path": "y/pkgs"}'
}

# A procfs mounted elsewhere than /proc (a chroot's, a container's
# /host/proc; here one in a user namespace, where the hook runs too) holds
# the same processes' environ and links, and its self is the tool's own
# process. The /proc parser read only the text "/proc": P/PID/environ
# passed, P/self/environ was followed to the hook's pid, P/PID/fd/N of a
# hidden file deleted since read "... (deleted)", and a search of P, or of
# a directory holding it, passed.
@test "attack: a procfs mounted elsewhere than /proc reaches no process's environ, self or links" {
	unshare -Urmpf true 2>/dev/null || skip "no user namespaces"
	H=$TEST_DIR/home
	P=$WORK/sub/p
	mkdir -p "$H/.ssh" "$P"
	echo key >"$H/.ssh/id_ed25519"
	echo secret >"$H/.git-credentials"
	calls=()
	add() { # dialect tool input-json
		calls+=("$1 $(tool_call "$@")")
	}
	for p in "$P/@PID@/environ" "$P/self/environ" "$P/@PID@/fd/3" "$P/@PID@/cmdline" "$P/thread-self/environ"; do
		add gemini read_file "$(jq -nc --arg p "$p" '{absolute_path: $p}')"
		add claude Read "$(jq -nc --arg p "$p" '{file_path: $p}')"
	done
	for d in "$P" "$P/@PID@" sub .; do
		add gemini grep_search "$(jq -nc --arg p "$d" '{pattern: "x", dir_path: $p}')"
		add claude Grep "$(jq -nc --arg p "$d" '{pattern: "x", path: $p}')"
	done
	# in the namespace: the procfs at P, a process holding a hidden file
	# deleted since, and each call's status
	run --separate-stderr env HOME="$H" unshare -Urmpf bash -c '
		P=$1 H=$2 AIRLOCK=$3
		shift 3
		mount -t proc proc "$P" || exit 99
		exec 3<"$H/.git-credentials"
		sleep 60 &
		pid=$!
		exec 3<&-
		rm "$H/.git-credentials"
		for c in "$@"; do
			d=${c%% *}
			c=${c//@PID@/$pid}
			"$AIRLOCK" hook "$d" pre-tool-use <<<"${c#* }" >/dev/null 2>&1
			echo "$? $d $(jq -c "[.tool_name, .tool_input]" <<<"${c#* }")"
		done
		kill $pid' _ "$P" "$H" "$AIRLOCK" "${calls[@]}"
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	[ "$(grep -c . <<<"$output")" -eq "${#calls[@]}" ] || { echo "$output"; return 1; }
	if grep -v '^2 ' <<<"$output"; then
		return 1
	fi
}

# node-glob walks a ".." in a pattern (the parent of the path it has), and
# a brace expansion or an escape makes one where the text has none:
# "x/{..,y}/keys/*" reads ./keys/*, "{/elsewhere,x}/*" an absolute path,
# and read_many_files turns "\" into "/" ("\\elsewhere\\k" is
# /elsewhere/k). The walk started at the pattern's text up to its first
# component with a glob character (x, the workspace): a link to a hidden
# path above it, or anywhere, passed.
@test "attack: a Gemini glob whose braces, escapes or .. lead above where its text starts is looked through from there" {
	H=$TEST_DIR/home
	O=$TEST_DIR/outside
	mkdir -p "$H/.ssh" x/y keys "$O"
	echo key >"$H/.ssh/id_ed25519"
	ln -s "$H/.ssh/id_ed25519" keys/k
	ln -s "$H/.ssh" "$O/keys"
	refused() { # tool input-json
		HOME=$H tool_status gemini "$@"
		[ "$status" -eq 2 ] || { echo "passed ($status): $*"; return 1; }
	}
	for p in "x/{..,y}/keys/*" "x/{.,y}./keys/*" "x/y/{..,z}/../keys/*" 'x/\.\./keys/*' \
		"x/{a.,b}{.,c}/keys/*" "x/{..,y}/../${O##*/}/keys/*"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused read_many_files "{\"paths\": [$j]}"
		refused read_many_files "{\"include\": [\"x/y\", $j]}"
		refused grep_search "{\"pattern\": \"x\", \"include\": $j}"
	done
	# from x/y, which holds no link: a pattern that may be absolute
	for p in "{$O,x}/keys/*" "{${O%/*}/out*,x}/keys/*"; do
		j=$(jq -nc --arg p "$p" '$p')
		refused read_many_files "{\"paths\": [$j]}" "$WORK/x/y"
		refused grep_search "{\"pattern\": \"x\", \"include\": $j}" "$WORK/x/y"
	done
	refused search_file_content '{"pattern": "x", "dir_path": "x", "include": "{..,y}/keys/*"}'
	refused search_file_content '{"pattern": "x", "dir_path": "x/y", "include": "{.,z}./{..,z}/keys/*"}'
	j=$(jq -nc --arg p "$O/keys/id_ed25519" '$p | gsub("/"; "\\")')
	refused read_many_files "{\"paths\": [$j]}" "$WORK/x/y"
	# dots that cannot meet: looked through from where the text starts
	HOME=$H tool_status gemini read_many_files '{"paths": ["x/{a,b}/*.min.js", "x/*.d.ts"]}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# A procfs is mounted only on a directory: a key that names a file or a
# directory (Copilot's `path`) naming a file has none below it, and the
# hook reads no mountinfo for it (a file edit's cost, issue 22 goal 3);
# naming a directory, it does, and a procfs there is refused (above).
@test "a file named by a key that may name a directory costs no read of mountinfo; a directory does" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	echo a >README
	mkdir -p sub
	for target in "$WORK/README:0" "$WORK/sub:1"; do
		p=${target%:*}
		jq -nc --arg ws "$WORK" --arg p "$p" \
			'{sessionId: "b", timestamp: 1796175431905, cwd: $ws, toolName: "view", toolArgs: {path: $p}}' >"$TEST_DIR/payload"
		traced -f -qq -e trace=openat -o "$TEST_DIR/trace" "$AIRLOCK" hook copilot pre-tool-use <"$TEST_DIR/payload" >/dev/null
		[ "$(grep -c 'mountinfo' "$TEST_DIR/trace")" -eq "${target##*:}" ] || { echo "$p"; grep mountinfo "$TEST_DIR/trace"; return 1; }
	done
}

# The caller's passwd home (hidden however $HOME is set) is read from
# /etc/passwd where nsswitch.conf asks the files service first and nothing
# goes on past its answer: then that is NSS's answer, and the hook makes no
# connection to nscd nor NSS's other checks (~20 us of a file edit's check,
# issue 22 goal 3). Elsewhere NSS is asked, as before.
@test "a file edit's check reads the passwd home without NSS where nsswitch.conf asks files first" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	awk '!/^[ \t]*#/ && $1 ~ /^passwd:?$/' /etc/nsswitch.conf 2>/dev/null | grep -Eq '^passwd:?[[:space:]]+files([[:space:]]+[^[[:space:]]|[[:space:]]*$)' ||
		skip "nsswitch.conf does not ask files first for passwd"
	echo a >README
	jq -nc --arg ws "$WORK" \
		'{session_id: "b", cwd: $ws, hook_event_name: "PreToolUse", tool_name: "Edit",
		  tool_input: {file_path: ($ws + "/README"), old_string: "a", new_string: "b"}}' >"$TEST_DIR/payload"
	traced -f -qq -e trace=connect,openat -o "$TEST_DIR/trace" "$AIRLOCK" hook claude pre-tool-use <"$TEST_DIR/payload" >/dev/null
	! grep -E 'connect\(|nscd' "$TEST_DIR/trace" || return 1
	grep -q '"/etc/passwd"' "$TEST_DIR/trace"
	# and its answer is the one NSS gives: the home stays hidden however $HOME is set
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	[ -n "$home" ] && [ -d "$home" ] || return 0
	HOME=$TEST_DIR tool_status claude Read "$(jq -nc --arg p "$home/.ssh/id_ed25519" '{file_path: $p}')"
	[ "$status" -eq 2 ] && [[ "$stderr" == *"hidden"* ]] || { echo "$status $stderr"; return 1; }
}

# The configuration check looks at the settings of every directory from the
# scope down to the file's; the file's own (file/.claude, ...) only where
# the path a tool names is a directory: below a file or below nothing they
# are paths that do not exist, which the file never lies in (issue 22 goal
# 3: half of an edit's walks). A directory named whose settings lead back
# above it, and a settings file in a directory still to be made, stay
# refused.
@test "attack: a directory a tool names is held to its own settings; a new settings directory is refused" {
	mkdir -p d sub
	ln -s .. d/.claude
	echo a >sub/README
	refused_config() { # tool input-json
		tool_status claude "$1" "$2"
		[ "$status" -eq 2 ] && [[ "$stderr" == *"airlock's configuration"* ]] || { echo "passed ($status): $*"; return 1; }
	}
	refused_config mcp__x__touch '{"file_path": "d"}'
	refused_config Write '{"file_path": "new/.claude/settings.json", "content": "x"}'
	refused_config Write '{"file_path": "sub/new/.gemini/settings.json", "content": "x"}'
	refused_config Write '{"file_path": "sub/.mcp.json", "content": "x"}'
	tool_status claude Edit '{"file_path": "sub/README", "old_string": "a", "new_string": "b"}'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
}

# Gemini runs its shell tool in dir_path. One outside the project's scope
# gave a routed run a cwd whose scope the project's gate does not see (its
# failure hid there), and the exception `airlock run --fixes ID` a
# workspace beyond the project (the parent, with its other projects).
@test "attack: gemini's dir_path outside the project: the call is refused, and a routed run refuses a cwd outside its workspace" {
	git init -q .
	# the exception, run in the parent directory
	exact_exception_setup
	run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
		<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = $c | .tool_input.dir_path = ".."' \
			--arg c "airlock run --fixes $FAILED -- true")"
	[ "$status" -eq 2 ] || { echo "$output"; false; }
	[[ "$stderr" == *"outside the project"* ]]
	# a routed call, nothing open
	export AIRLOCK_STATE_DIR="$TEST_DIR/state-2"
	for d in .. / "$TEST_DIR"; do
		run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
			<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = "false" | .tool_input.dir_path = $d' --arg d "$d")"
		[ "$status" -eq 2 ] || { echo "$d: $output"; false; }
		[[ "$stderr" == *"outside the project"* ]]
	done
	# inside it is routed as before
	mkdir sub
	run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use \
		<<<"$(captured gemini-cli/0.20/before-tool.json '.tool_input.command = "false" | .tool_input.dir_path = "sub"')"
	[ "$status" -eq 0 ]
	[[ "$output" == *"run --routed gemini"* ]]
	# the routed run itself, whatever the hook saw (a symlink swapped
	# between them): refused, and filed where the project's gate looks
	line=$(cd "$TEST_DIR" && "$AIRLOCK" run --routed gemini --workspace "$WORK" -- bash -c false) || true
	id=$(jq -r '.receipt // empty' <<<"$line")
	[ -n "$id" ] || id=$(jq -s 'max_by(.id) | .id' "$AIRLOCK_STATE_DIR"/receipts/*.json)
	jq -e '.status == "invalid" and (.error | test("outside the workspace"))' "$AIRLOCK_STATE_DIR/receipts/$id.json"
	run "$AIRLOCK" gate --json
	jq -e '.open == 1' <<<"$output"
}

# `--cwd` passed as a harmless option of the exception whatever its value:
# from the parent directory (not a repository) the failure, nested below,
# is visible, so the run took it, and its workspace, the cwd by default,
# was the parent with every project beside this one.
@test "attack: the --fixes exception with --cwd outside the project writes the parent directory (all three hosts)" {
	git init -q .
	exact_exception_setup
	for cmd in "airlock run --fixes $FAILED --cwd .. -- true" "airlock run --cwd=.. --fixes $FAILED -- true" \
		"airlock run --fixes $FAILED --cwd / -- true" "airlock run --fixes $FAILED --cwd $TEST_DIR -- true"; do
		all_hosts 2 "$cmd"
	done
	all_hosts 0 "airlock run --fixes $FAILED --cwd . -- true"
}

# The exception's --workspace is judged by path when the hook runs; a
# symlink swapped before the host starts the command moved it outside the
# project. The run itself now holds a --fixes run's workspace to its scope.
@test "attack: a --fixes run's workspace swapped outside the scope after the hook judged it is refused by the run" {
	git init -q .
	exact_exception_setup
	mkdir sub "$TEST_DIR/other"
	ln -s sub wl
	all_hosts 0 "airlock run --fixes $FAILED --workspace wl -- touch $TEST_DIR/other/pwn"
	ln -sfn "$TEST_DIR/other" wl
	al run --fixes "$FAILED" --workspace wl -- touch "$TEST_DIR/other/pwn"
	[ ! -e "$TEST_DIR/other/pwn" ]
	[[ "$stderr" == *"outside the scope"* ]] || { echo "$output $stderr"; false; }
}

#!/usr/bin/env bats
# The real agent hosts (Claude Code, Codex CLI, Gemini CLI, Copilot CLI at the versions
# in tests/hosts/versions.txt), run headless against a scripted model on
# loopback, with airlock's hooks in their settings. What the hosts send the
# hooks is kept under tests/fixtures/hosts/<host>/<version>/ when
# AIRLOCK_CAPTURE_FIXTURES=1. Run: tests/hosts/run.sh.
load helpers

version() { # host
	local pkg=$1
	case $1 in
	claude) pkg=claude-code ;;
	gemini) pkg=gemini-cli ;;
	copilot) pkg=copilot-linux-x64 ;;
	esac
	grep -E "^@[^/]+/$pkg@" "$HOSTS_SRC/versions.txt" | sed 's/.*@//'
}

# A failing command is routed through airlock run: airlock's receipt says
# it failed and opens a failure; the next mutating call and the stop are
# refused. The agent sees the command's output and exit status exactly as
# it does without routing.
failing_blocks() { # host source
	local host=$1 src=$2
	# stdout, then stderr half a second later: a host reads the two pipes
	# concurrently, so lines written together may reach its model in either
	# order, routed or not (Codex swapped them once under load).
	local cmd='printf '"'"'out $HOME "q"\n'"'"'; sleep 0.5; ls missing-dir'
	mock "[{\"shell\": $(jq -Rn --arg c "$cmd" '$c')}, {\"shell\": \"touch made\"}]"
	hooks "$host"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures "$host" "$(version "$host")" failing
	routed=$(receipts_of "$src")
	jq -e 'length == 1 and .[0].exit_code == 2 and .[0].gate.opened
		and .[0].argv[2] == $cmd' --arg cmd "$cmd" <<<"$routed"
	# the host's own report of it wrote nothing: no double record
	[ "$(receipts | jq 'map(select(.source | endswith("-post-tool-use") or endswith("-after-tool"))) | length')" -eq 0 ]
	[ "$(open_failures)" -eq 1 ]
	[ ! -e made ]
	# the mutating call was refused by the pre-tool-use hook
	tool_result "$host" 1 | grep -q "is an open failure" || { tool_result "$host" 1; jq -c ".body.contents[-1]?" "$MOCK_LOG" | tail -3; return 1; }
	# the stop was refused at least once
	case $host in
	claude | copilot) payloads "$host" stop | jq -e 'any(.stop_hook_active)' ;;
	gemini) payloads gemini stop | jq -e 'length >= 2' ;;
	codex) payloads codex stop | jq -e 'length >= 2' ;;
	esac
	routed_text=$(tool_result "$host" 0)

	# The same first step without routing, in a fresh state directory.
	rm -rf "$STATE" "${PAYLOADS:?}"/* && "$AIRLOCK" run --state-dir "$STATE" -- true >/dev/null
	: >"$MOCK_LOG"
	mock "[{\"shell\": $(jq -Rn --arg c "$cmd" '$c')}]"
	hooks "$host" "$TEST_DIR/hook-unrouted"
	go "$host"
	plain_text=$(tool_result "$host" 0)
	[ -n "$plain_text" ] || { echo "$output"; tail -c 3000 "$MOCK_LOG"; return 1; }
	[ -n "$plain_text" ]
	if [ "$routed_text" != "$plain_text" ]; then
		diff <(echo "$plain_text") <(echo "$routed_text")
		return 1
	fi
	[[ "$routed_text" == *'out $HOME "q"'* ]]
	[[ "$routed_text" != *'"receipt"'* ]]
}

# The failing command again in the background leaves the failure open (its
# own receipt failed too); run in the foreground after the environment is
# repaired, it closes both.
fixed_closes() { # host source background
	local host=$1 src=$2 steps='{"shell": "ls missing-dir"}'
	[ "$3" = background ] && steps+=', {"shell": "ls missing-dir", "background": true}'
	mock "[$steps]"
	hooks "$host"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures "$host" "$(version "$host")" background
	if [ "$3" = background ]; then
		wait_receipts "$src" 2
		receipts_of "$src" | jq -e 'length == 2 and all(.exit_code == 2 and .gate.opened)
			and all(.gate.closes == [])'
		wait_open_failures 2
	else
		[ "$(open_failures)" -eq 1 ]
	fi
	mkdir missing-dir # the human repairs the environment
	: >"$MOCK_LOG"
	mock '[{"shell": "ls missing-dir"}]'
	hooks "$host"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	receipts_of "$src" | jq -e '.[-1].exit_code == 0 and (.[-1].gate.closes | length >= 1)'
	[ "$(open_failures)" -eq 0 ]
}

# A write into the state directory: the host's file tool is refused by the
# hook, and a routed shell command does not see the directory at all.
state_dir_refused() { # host tool
	local host=$1 target="$STATE/gate/closed/1.json" steps
	steps="{\"shell\": \"printf x > $target\"}"
	[ -n "$2" ] && steps="{\"write\": \"$target\", \"content\": \"{}\"}, $steps"
	mock "[$steps]"
	hooks "$host"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures "$host" "$(version "$host")" state-dir
	[ ! -e "$target" ]
	if [ -n "$2" ]; then
		tool_result "$host" 0 | grep -q "state directory" || { tool_result "$host" 0; ls "$PAYLOADS"; return 1; }
		tool_result "$host" 1 | grep -q 'No such file or directory'
	else
		tool_result "$host" 0 | grep -q 'No such file or directory'
	fi
}

@test "claude: a failing command opens a failure, blocks the next mutating call and the stop; the agent sees what it would unrouted" {
	failing_blocks claude claude-routed
}

@test "claude: a background rerun of the failing command closes nothing; the fixed rerun closes it" {
	fixed_closes claude claude-routed background
}

@test "claude: a Write and a shell write into the state directory are refused" {
	state_dir_refused claude Write
}

@test "codex: a failing command opens a failure, blocks the next mutating call and the stop; the agent sees what it would unrouted" {
	failing_blocks codex codex-routed
}

@test "codex: the fixed rerun closes the failure" {
	fixed_closes codex codex-routed
}

@test "codex: a shell write into the state directory is refused" {
	state_dir_refused codex ""
}

@test "codex: apply_patch into the state directory is refused; while a failure is open, an edit is blocked" {
	# Codex offers apply_patch (a freeform custom tool) only to the models of
	# its catalog whose apply_patch_tool_type says so: the mock poses as one,
	# gpt-5.5 (freeform, and not code-mode-only, so the shell tool stays).
	export CODEX_MODEL=gpt-5.5
	local target="$STATE/gate/closed/1.json"
	printf 'old\n' >notes.txt
	local add edit
	add=$(printf '*** Begin Patch\n*** Add File: %s\n+{}\n*** End Patch' "$target")
	edit=$(printf '*** Begin Patch\n*** Update File: notes.txt\n@@\n-old\n+new\n*** End Patch')
	mock "$(jq -cn --arg a "$add" --arg e "$edit" '[{patch: $a}, {shell: "ls missing-dir"}, {patch: $e}]')"
	hooks codex
	go codex
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures codex "$(version codex)" apply-patch
	# Codex offered the tool, and called it twice, each time through the hook.
	jq -se '[.[] | .body.tools? // empty | .[] | select(.name == "apply_patch" and .type == "custom")] | length > 0' "$MOCK_LOG"
	payloads codex pre-tool-use | jq -e '[.[] | select(.tool_name == "apply_patch")] | length == 2'
	[ ! -e "$target" ]
	tool_result codex 0 | grep -q "state directory" || { tool_result codex 0; return 1; }
	[ "$(open_failures)" -eq 1 ]
	tool_result codex 2 | grep -q "is an open failure" || { tool_result codex 2; return 1; }
	[ "$(cat notes.txt)" = old ]
}

@test "gemini: a failing command opens a failure, blocks the next mutating call and the stop; the agent sees what it would unrouted" {
	failing_blocks gemini gemini-routed
}

@test "gemini: a background rerun of the failing command closes nothing; the fixed rerun closes it" {
	fixed_closes gemini gemini-routed background
}

@test "gemini: a write_file and a shell write into the state directory are refused" {
	state_dir_refused gemini write_file
}

# Issue 19: the agent cannot switch airlock off.

# With airlock gone from where the hooks name it (moved, rebuilt elsewhere,
# removed), the installed wrapper turns the shell's 127 into the hosts'
# blocking exit 2: the host's tool call is refused, not run. The stop is
# refused too: Claude Code ends the session anyway, Codex and Gemini CLI
# keep it going until they are stopped (here: by the 40 s timeout).
missing_airlock_blocks() { # host
	local host=$1
	mock '[{"shell": "touch made"}]'
	hooks "$host" "$TEST_DIR/gone/airlock"
	GO_TIMEOUT=40 go "$host"
	[ ! -e made ] || { echo "$output"; return 1; }
	tool_result "$host" 0 | grep -q "could not answer the hook (status 127); blocking" || {
		tool_result "$host" 0
		echo "$output"
		return 1
	}
}

# The agent's routed command writes the host's settings to switch the hooks
# off; the host's next session's tool calls are still routed and gated
# (the hooks are read when a session starts). Depends on the quarantine
# keeping the host's settings read-only and moving created ones aside.
settings_write_contained() { # host source attack
	local host=$1 src=$2 attack=$3
	mock "$(jq -cn --arg a "$attack" '[{shell: $a}]')"
	hooks "$host"
	if [ "$host" = codex ]; then
		# A trusted project, so that Codex would read a .codex/ there.
		printf '[projects."%s"]\ntrust_level = "trusted"\n' "$WORK" >>"$HOME/.codex/config.toml"
	fi
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures "$host" "$(version "$host")" settings-write
	# The attack ran routed, in the quarantine.
	receipts_of "$src" | jq -e --arg a "$attack" 'length == 1 and .[0].argv[2] == $a' >/dev/null ||
		{ receipts_of "$src"; return 1; }
	# The next session, with the same settings files: a failing command is
	# routed (its receipt), and the next mutating call is refused.
	: >"$MOCK_LOG"
	rm -f "$PAYLOADS"/*
	printf '%s\n' '[{"shell": "ls missing-dir"}, {"shell": "touch made"}]' >"$TEST_DIR/script.json"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	receipts_of "$src" | jq -e 'any(.argv[2] == "ls missing-dir" and .exit_code == 2)' >/dev/null || {
		echo "the next session's command was not routed:"
		receipts_of "$src"
		ls -la "$WORK" "$WORK"/.claude "$WORK"/.codex "$WORK"/.gemini 2>/dev/null
		return 1
	}
	[ ! -e made ]
	tool_result "$host" 1 | grep -q "is an open failure" || { tool_result "$host" 1; return 1; }
}

# A file tool's read of the state directory (the ledger's signing key, the
# receipts) is refused by the pre-tool hook, which now sees every tool.
state_read_refused() { # host
	local host=$1 target="$STATE/receipts/1.json"
	[ -f "$target" ]
	mock "[{\"read\": \"$target\"}]"
	hooks "$host"
	go "$host"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures "$host" "$(version "$host")" state-read
	payloads "$host" pre-tool-use | jq -e 'length >= 1' >/dev/null
	local text
	text=$(tool_result "$host" 0)
	[[ "$text" == *"state directory"* ]] || { echo "$text"; return 1; }
	[[ "$text" != *'"argv"'* ]]
}

@test "claude: with the airlock binary gone, the tool call is blocked, not run" {
	missing_airlock_blocks claude
}

@test "claude: a routed command's write of the settings (disableAllHooks, hooks removed) leaves the next session routed and gated" {
	settings_write_contained claude claude-routed \
		'mkdir -p .claude && printf "{\"disableAllHooks\": true}" >.claude/settings.local.json; printf "{}" >.claude/settings.json'
}

@test "claude: a Read of the state directory is refused" {
	state_read_refused claude
}

@test "codex: with the airlock binary gone, the tool call is blocked, not run" {
	missing_airlock_blocks codex
}

@test "codex: a routed command's write of the project's .codex (hooks feature off, no hooks) leaves the next session routed and gated" {
	settings_write_contained codex codex-routed \
		'mkdir -p .codex && printf "[features]\nhooks = false\n" >.codex/config.toml && printf "{\"hooks\": {}}" >.codex/hooks.json'
}

@test "gemini: with the airlock binary gone, the tool call is blocked, not run" {
	missing_airlock_blocks gemini
}

@test "gemini: a routed command's write of the project's settings (hooksConfig.enabled false) leaves the next session routed and gated" {
	settings_write_contained gemini gemini-routed \
		'mkdir -p .gemini && printf "{\"hooksConfig\": {\"enabled\": false}}" >.gemini/settings.json'
}

@test "gemini: a read_file of the state directory is refused" {
	state_read_refused gemini
}

# The hook's walk for symlinks below a Gemini search skips the node_modules
# the host never reads (node-glob's ignore of "**" "/node_modules/" "**",
# docs/gate.md, "Links below a directory"): a grep_search of the whole
# workspace passes with a node_modules past the walk's bound, and the host
# reads nothing below it, neither a file nor a symlink to a secret, also in
# its JavaScript fallback (which reads a symlink to a file; the pattern
# takes it there: git grep -E and grep -E refuse the back reference to a
# group that is not there, JavaScript takes it for an octal escape). With
# an include naming node_modules the walk is whole, and refused.
@test "gemini: grep_search of a workspace with a big node_modules passes, and reads nothing below it" {
	mkdir -p "$HOME/.ssh" node_modules/bulk node_modules/pkg src
	echo SECRET-KEY-7f3a >"$HOME/.ssh/id_ed25519"
	ln -s "$HOME/.ssh/id_ed25519" node_modules/pkg/k
	ln -s "$HOME/.ssh/id_ed25519" node_modules/pkg/k.txt
	echo IN-NODE-MODULES-5c1 >node_modules/pkg/index.js
	echo IN-SRC-9d2 >src/a.txt
	(cd node_modules/bulk && seq 1 20001 | xargs touch)
	local re='(SECRET|IN)-[A-Z]+|\2'
	mock "$(jq -cn --arg re "$re" '[{call: "grep_search", args: {pattern: $re}},
		{call: "grep_search", args: {pattern: $re, include: "node_modules/**"}}]')"
	hooks gemini
	go gemini
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local text
	text=$(tool_result gemini 0)
	[[ "$text" == *IN-SRC-9d2* ]] || { echo "$text"; return 1; }
	[[ "$text" != *7f3a* && "$text" != *5c1* && "$text" != *node_modules* ]] ||
		{ echo "$text"; return 1; }
	text=$(tool_result gemini 1)
	[[ "$text" == *"more than 20000 entries"* ]] || { echo "$text"; return 1; }
	[[ "$text" != *7f3a* && "$text" != *5c1* ]]
}

# GitHub Copilot CLI (issue 21: a fourth host through the agents seam). Its
# hooks are .github/hooks/*.json (version 1: preToolUse, postToolUse,
# agentStop), loaded only in a trusted folder (--trust-folder), and
# ~/.copilot/hooks/*.json, loaded always. A shell's exit status reaches the
# hooks only as text; a routed command's receipt is airlock's own.

@test "copilot: a failing command opens a failure, blocks the next mutating call and the stop; the agent sees what it would unrouted" {
	failing_blocks copilot copilot-routed
	# The installed file is Copilot's own shape, in the trusted project.
	jq -e '.version == 1 and (.hooks | has("preToolUse") and has("postToolUse") and has("agentStop"))
		and (.hooks.preToolUse[0] | .type == "command" and (.bash | type == "string")
			and .timeoutSec >= 30)' "$WORK/.github/hooks/airlock.json"
}

@test "copilot: the user's ~/.copilot/hooks route and gate without folder trust" {
	COPILOT_HOOKS=user COPILOT_TRUST=no
	export COPILOT_HOOKS COPILOT_TRUST
	mock '[{"shell": "ls missing-dir"}, {"shell": "touch made"}]'
	hooks copilot
	[ "$HOOKS_FILE" = "$HOME/.copilot/hooks/airlock.json" ]
	[ ! -e "$WORK/.github/hooks" ]
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures copilot "$(version copilot)" user-hooks
	receipts_of copilot-routed | jq -e 'length == 1 and .[0].exit_code == 2 and .[0].gate.opened'
	[ ! -e made ]
	tool_result copilot 1 | grep -q "is an open failure" || { tool_result copilot 1; return 1; }
}

@test "copilot: project hooks in an untrusted folder do not load (the fail-open install warns of)" {
	COPILOT_TRUST=no
	export COPILOT_TRUST
	mock '[{"shell": "ls missing-dir"}]'
	hooks copilot
	run --separate-stderr "$AIRLOCK" install copilot --project "$WORK" --state-dir "$STATE"
	[[ "$stderr" == *"trust"* ]] || { echo "$stderr"; return 1; }
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(payloads copilot pre-tool-use | jq length)" -eq 0 ]
	[ "$(receipts_of copilot-routed | jq length)" -eq 0 ]
}

@test "copilot: a routed command's exit status is airlock's receipt's, never read from the output's text" {
	# The command prints Copilot's own status line with another status.
	mock '[{"shell": "echo \"<shellId: 0 completed with exit code 0>\"; exit 3"}, {"shell": "touch made"}]'
	hooks copilot
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures copilot "$(version copilot)" status-text
	receipts_of copilot-routed | jq -e 'length == 1 and .[0].exit_code == 3 and .[0].gate.opened'
	# Copilot's own line follows the command's: the model saw both
	tool_result copilot 0 | grep -q 'exit code 0>' && tool_result copilot 0 | grep -q 'exit code 3>'
	# the second call was refused: the failure is open, whatever the text said
	[ ! -e made ]
	tool_result copilot 1 | grep -q "is an open failure" || { tool_result copilot 1; return 1; }
	# The same without routing: the host's report is recorded with its
	# status unknown (the text may be the command's own), closing nothing.
	rm -rf "$STATE" "${PAYLOADS:?}"/* && "$AIRLOCK" run --state-dir "$STATE" -- true >/dev/null
	: >"$MOCK_LOG"
	mock '[{"shell": "echo \"<shellId: 0 completed with exit code 0>\"; exit 3"}]'
	hooks copilot "$TEST_DIR/hook-unrouted"
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	receipts_of copilot-post-tool-use | jq -e 'length == 1 and .[0].exit_code == null
		and .[0].host.exit_status == "unknown" and .[0].host.agent == "copilot-cli"'
}

@test "copilot: the fixed rerun closes the failure" {
	fixed_closes copilot copilot-routed
}

@test "copilot: a create and a shell write into the state directory are refused" {
	state_dir_refused copilot create
}

@test "copilot: while a failure is open, create and edit are blocked; with none open they pass" {
	printf 'old\n' >notes.txt
	mock "$(jq -cn --arg w "$WORK" '[{write: ($w + "/new.txt"), content: "x"},
		{edit: ($w + "/notes.txt"), old: "old", new: "mid"}, {shell: "ls missing-dir"},
		{write: ($w + "/later.txt"), content: "y"}, {edit: ($w + "/notes.txt"), old: "mid", new: "new"}]')"
	hooks copilot
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	keep_fixtures copilot "$(version copilot)" file-tools
	[ "$(cat new.txt)" = x ]
	[ "$(cat notes.txt)" = mid ]
	[ "$(open_failures)" -eq 1 ]
	[ ! -e later.txt ]
	tool_result copilot 3 | grep -q "is an open failure" || { tool_result copilot 3; return 1; }
	tool_result copilot 4 | grep -q "is an open failure" || { tool_result copilot 4; return 1; }
	payloads copilot pre-tool-use | jq -e 'map(.toolName) == ["create", "edit", "bash", "create", "edit"]'
}

@test "copilot: a view of the state directory is refused" {
	state_read_refused copilot
}

@test "copilot: with the airlock binary gone, the tool call is blocked, not run" {
	mock '[{"shell": "touch made"}]'
	hooks copilot "$TEST_DIR/gone/airlock"
	GO_TIMEOUT=40 go copilot
	[ ! -e made ] || { echo "$output"; return 1; }
	# Copilot does not pass a hook's stderr on: the model sees its own words.
	tool_result copilot 0 | grep -q "Denied by preToolUse hook" || { tool_result copilot 0; return 1; }
}

@test "copilot: a routed command's write of .github/hooks and .github/copilot leaves the next session routed and gated" {
	settings_write_contained copilot copilot-routed \
		'printf "{\"version\": 1, \"hooks\": {}}" >.github/hooks/airlock.json; printf "{\"version\": 1, \"hooks\": {\"preToolUse\": [{\"type\": \"command\", \"bash\": \"true\"}]}}" >.github/hooks/agent.json; mkdir -p .github/copilot && printf "{\"disableAllHooks\": true}" >.github/copilot/settings.json'
	[ ! -e "$WORK/.github/hooks/agent.json" ]
	[ ! -e "$WORK/.github/copilot/settings.json" ]
}

@test "copilot: a hooks file the agent creates with its file tool is refused (it would run from the next session)" {
	mock "$(jq -cn --arg w "$WORK" '[{write: ($w + "/.github/hooks/agent.json"),
		content: "{\"version\": 1, \"hooks\": {\"agentStop\": [{\"type\": \"command\", \"bash\": \"true\"}]}}"},
		{write: ($w + "/.github/copilot/settings.local.json"), content: "{\"disableAllHooks\": true}"}]')"
	hooks copilot
	go copilot
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ ! -e "$WORK/.github/hooks/agent.json" ]
	[ ! -e "$WORK/.github/copilot/settings.local.json" ]
	tool_result copilot 0 | grep -qi "airlock" || { tool_result copilot 0; return 1; }
}

# An agent host with `airlock mcp` as an MCP server (docs/mcp.md) and no
# hooks: the model's run tool call runs in the quarantine and its result is
# the receipt; once it failed, the next mutating run is refused with the
# hooks' message, and nothing ran.
@test "claude: airlock mcp as its MCP server: run gives the receipt, a mutating run is refused while the failure is open" {
	mock '[{"mcp": "run", "args": {"argv": ["sh", "-c", "echo mcp-out; exit 4"]}},
		{"mcp": "run", "args": {"argv": ["touch", "made"]}}, {"mcp": "gate", "args": {}}]'
	jq -n --arg a "$AIRLOCK" --arg s "$STATE" --arg w "$WORK" \
		'{mcpServers: {airlock: {type: "stdio", command: $a, args: ["mcp", "--state-dir", $s, "--workspace", $w]}}}' \
		>"$TEST_DIR/mcp.json"
	run host_env ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-mock \
		IS_SANDBOX=1 timeout "${GO_TIMEOUT:-120}" "$CLAUDE" -p --output-format json \
		--dangerously-skip-permissions --strict-mcp-config --mcp-config "$TEST_DIR/mcp.json" \
		-- "Do the scripted steps."
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mcp_runs=$(receipts_of mcp)
	jq -e 'length == 1 and .[0].exit_code == 4 and .[0].gate.opened and .[0].argv[2] == "echo mcp-out; exit 4"' <<<"$mcp_runs" ||
		{ echo "$mcp_runs"; tail -c 3000 "$MOCK_LOG"; return 1; }
	id=$(jq '.[0].id' <<<"$mcp_runs")
	# Claude Code hands the model the structured content, as JSON
	tool_result claude 0 | jq -e --argjson id "$id" '.receipt == $id and .exit_code == 4 and .stdout == "mcp-out\n" and .failure_opened' ||
		{ tool_result claude 0; return 1; }
	tool_result claude 1 | grep -q "airlock receipt $id is an open failure"
	tool_result claude 1 | grep -q "so it does not run while the failure is open"
	[ ! -e made ]
	tool_result claude 2 | jq -e '.open == 1'
	[ "$(open_failures)" -eq 1 ]
}

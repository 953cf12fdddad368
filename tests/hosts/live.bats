#!/usr/bin/env bats
# The real agent hosts (Claude Code, Codex CLI, Gemini CLI at the versions
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
	claude) payloads claude stop | jq -e 'any(.stop_hook_active)' ;;
	gemini) payloads gemini stop | jq -e 'length >= 2' ;;
	codex) payloads codex stop | jq -e 'length >= 2' ;;
	esac
	routed_text=$(tool_result "$host" 0)

	# The same first step without routing, in a fresh state directory.
	rm -rf "$STATE" "$PAYLOADS"/* && "$AIRLOCK" run --state-dir "$STATE" -- true >/dev/null
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

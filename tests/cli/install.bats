#!/usr/bin/env bats
# `airlock install HOST`: airlock's hooks merged into the host's real
# settings file, idempotently, keeping everything else.
load helpers

SELF=$(realpath "$AIRLOCK")

# The settings file of a project install, per host.
settings_of() {
	case $1 in
	claude) echo "$WORK/.claude/settings.json" ;;
	codex) echo "$WORK/.codex/hooks.json" ;;
	gemini) echo "$WORK/.gemini/settings.json" ;;
	esac
}

@test "install prints each host's hooks (events, matchers, timeout units, this binary, options last) and writes nothing" {
	al install claude --project "$WORK"
	[ "$status" -eq 0 ]
	jq -e --arg a "$SELF" '.hooks.PreToolUse[0].matcher == "Bash|Write|Edit|MultiEdit|NotebookEdit" and
		.hooks.PreToolUse[0].hooks[0] == {type: "command", command: ($a + " hook claude pre-tool-use"), timeout: 10} and
		.hooks.PostToolUse[0].matcher == "Bash" and .hooks.PostToolUseFailure[0].matcher == "Bash" and
		.hooks.PostToolUseFailure[0].hooks[0].command == ($a + " hook claude post-tool-use") and
		(.hooks.Stop[0] | has("matcher") | not) and (.hooks | keys | length) == 4' <<<"$output"
	[[ "$stderr" == *"--write"* ]]
	al install codex --project "$WORK" --state-dir "$TEST_DIR/my state"
	jq -e --arg a "$SELF" --arg s "$TEST_DIR/my state" '.hooks.PreToolUse[0].matcher == "Bash|apply_patch" and
		.hooks.PreToolUse[0].hooks[0].command == ($a + " hook codex pre-tool-use --state-dir '"'"'" + $s + "'"'"'") and
		.hooks.PreToolUse[0].hooks[0].timeout == 10 and .hooks.PostToolUse[0].matcher == "Bash" and
		(.hooks | keys) == ["PostToolUse", "PreToolUse", "Stop"]' <<<"$output"
	[[ "$stderr" == *"trust"* ]]
	al install gemini --project "$WORK"
	jq -e --arg a "$SELF" '.hooks.BeforeTool[0].matcher == "run_shell_command|write_file|replace" and
		.hooks.BeforeTool[0].hooks[0].timeout == 10000 and .hooks.AfterTool[0].matcher == "run_shell_command" and
		.hooks.AfterAgent[0].hooks[0].command == ($a + " hook gemini stop")' <<<"$output"
	[[ "$stderr" == *"trusted folder"* ]]
	[[ "$stderr" == *"enableHooks"* ]]
	[ ! -e "$WORK/.claude" ] && [ ! -e "$WORK/.codex" ] && [ ! -e "$WORK/.gemini" ]
}

@test "install --write merges into the existing settings, keeps every other key, backs up the original, and a second run changes nothing" {
	for host in claude codex gemini; do
		f=$(settings_of $host)
		mkdir -p "$(dirname "$f")"
		# Someone else's hook in the same event, an old airlock hook (another
		# path, another matcher) to replace, and unrelated keys.
		cat >"$f" <<JSON
{"model": "x", "permissions": {"allow": ["Bash(ls:*)"]},
 "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-hook"}]},
                          {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "/old/bin/airlock hook $host pre-tool-use", "timeout": 5}]}],
           "BeforeTool": [{"matcher": "x", "hooks": [{"type": "command", "command": "other"}]}],
           "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}
JSON
		cp "$f" "$TEST_DIR/original"
		al install $host --project "$WORK" --write
		[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
		[[ "$stderr" == *"airlock-backup"* ]]
		cmp "$f.airlock-backup" "$TEST_DIR/original"
		jq -e '.model == "x" and .permissions.allow == ["Bash(ls:*)"] and
			.hooks.Notification[0].hooks[0].command == "notify-send hi" and
			([.. | objects | select(.command? == "lint-hook")] | length) == 1 and
			([.. | objects | select(.command? == "other")] | length) == 1 and
			([.. | strings | select(test("/old/bin/airlock"))] | length) == 0' "$f"
		# Exactly one airlock hook per event, the old one's place taken.
		n=$(jq --arg a "$SELF" '[.. | objects | select(.command? | strings | startswith($a))] | length' "$f")
		[ "$n" -eq "$( [ $host = claude ] && echo 4 || echo 3)" ]
		sum=$(sha256sum "$f")
		al install $host --project "$WORK" --write
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"nothing changed"* ]]
		[ "$(sha256sum "$f")" = "$sum" ]
		cmp "$f.airlock-backup" "$TEST_DIR/original"
		run "$AIRLOCK" install --check $host --project "$WORK"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	done
	jq -e --arg a "$SELF" '.hooks.PreToolUse[1].matcher == "Bash|Write|Edit|MultiEdit|NotebookEdit" and
		.hooks.PreToolUse[0].hooks[0].command == "lint-hook"' "$(settings_of claude)"
}

@test "install --write creates a missing file with no backup; the user-level files are the host's own" {
	HOME=$TEST_DIR/home
	mkdir -p "$HOME"
	HOME=$HOME al install claude --write
	[ "$status" -eq 0 ]
	[ -f "$HOME/.claude/settings.json" ] && [ ! -e "$HOME/.claude/settings.json.airlock-backup" ]
	HOME=$HOME CODEX_HOME=$TEST_DIR/codex-home al install codex --write
	[ -f "$TEST_DIR/codex-home/hooks.json" ]
	HOME=$HOME al install gemini --write
	[ -f "$HOME/.gemini/settings.json" ]
	HOME=$HOME run "$AIRLOCK" install --check gemini
	[ "$status" -eq 0 ]
}

@test "install --check names what is missing or differs (exit 1)" {
	run "$AIRLOCK" install --check codex --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"missing"* ]]
	"$AIRLOCK" install codex --project "$WORK" --write 2>/dev/null
	f=$(settings_of codex)
	jq '.hooks.PreToolUse[0].matcher = "^Bash$"' "$f" >"$f.new" && mv "$f.new" "$f"
	run "$AIRLOCK" install --check codex --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"hooks.PreToolUse"*"^Bash$"* ]]
	jq 'del(.hooks.Stop)' "$f" >"$f.new" && mv "$f.new" "$f"
	run "$AIRLOCK" install --check codex --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"hooks.Stop: no airlock hook"* ]]
	# A different airlock binary is not current either.
	"$AIRLOCK" install gemini --project "$WORK" --write 2>/dev/null
	g=$(settings_of gemini)
	sed -i "s|$SELF|/usr/local/bin/airlock|" "$g"
	run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/usr/local/bin/airlock"* ]]
	"$AIRLOCK" install gemini --project "$WORK" --write 2>/dev/null
	jq '.hooksConfig.enabled = false' "$g" >"$g.new" && mv "$g.new" "$g"
	run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"hooksConfig.enabled is false"* ]]
}

@test "a settings file that is not a JSON object is not touched" {
	mkdir -p "$WORK/.gemini"
	printf '{\n  // a comment\n  "theme": "x"\n}\n' >"$WORK/.gemini/settings.json"
	cp "$WORK/.gemini/settings.json" "$TEST_DIR/before"
	al install gemini --project "$WORK" --write
	[ "$status" -eq 125 ]
	one_error_line "not touched"
	cmp "$WORK/.gemini/settings.json" "$TEST_DIR/before"
	[ ! -e "$WORK/.gemini/settings.json.airlock-backup" ]
	al install vim
	[ "$status" -eq 125 ]
}

@test "the installed commands are the hooks: run as the host runs them, they block while a failure is open" {
	for host in claude codex gemini; do
		"$AIRLOCK" install $host --project "$WORK" --write 2>/dev/null
	done
	"$AIRLOCK" run -- sh -c 'exit 1' >/dev/null || true
	FIX="$BATS_TEST_DIRNAME/../fixtures/hosts"
	cmd=$(jq -r '.hooks.PreToolUse[0].hooks[0].command' "$(settings_of claude)")
	run --separate-stderr sh -c "$cmd" < <(jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "make"' "$FIX/claude-code/2.1/pre-tool-use-bash.json")
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"open failure"* ]]
	cmd=$(jq -r '.hooks.PreToolUse[0].hooks[0].command' "$(settings_of codex)")
	run --separate-stderr sh -c "$cmd" < <(jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "*** Begin Patch\n*** Update File: a.c\n*** End Patch"' "$FIX/codex/0.171.0/pre-tool-use-apply-patch.json")
	[ "$status" -eq 2 ]
	cmd=$(jq -r '.hooks.BeforeTool[0].hooks[0].command' "$(settings_of gemini)")
	run --separate-stderr sh -c "$cmd" < <(jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "make"' "$FIX/gemini-cli/0.20/before-tool.json")
	[ "$status" -eq 2 ]
}

@test "docs/gate.md's install section is exactly what install prints" {
	doc="$BATS_TEST_DIRNAME/../../docs/gate.md"
	# The three json blocks of "### Installing", in order claude, codex, gemini.
	awk -v dir="$TEST_DIR" '/^### Installing/ {on = 1} /^\*\*Merging/ {on = 0}
		on && /^```json$/ {b++; inb = 1; next} inb && /^```$/ {inb = 0; next}
		inb {print > (dir "/doc" b ".json")}' "$doc"
	[ -f "$TEST_DIR/doc3.json" ]
	block=0
	for host in claude codex gemini; do
		block=$((block + 1))
		al install $host --project "$WORK"
		diff <(jq -S . <<<"${output//$SELF//usr/local/bin/airlock}") <(jq -S . "$TEST_DIR/doc$block.json")
	done
}

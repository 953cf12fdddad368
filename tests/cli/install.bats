#!/usr/bin/env bats
# `airlock install HOST`: airlock's hooks merged into the host's real
# settings file, idempotently, keeping everything else.
load helpers

SELF=$(realpath "$AIRLOCK")
# What every installed hook command runs: airlock by its path as $0, and a
# status it did not give itself (126/127: it cannot run; 128+N: killed) is
# the hosts' blocking exit 2 (docs/gate.md, "Installing").
WRAP='"$0" "$@"; s=$?; [ $s -le 2 ] || { echo "airlock: $0 could not answer the hook (status $s); blocking" >&2; s=2; }; exit $s'

# The hook command install writes: cmd AIRLOCK DIALECT EVENT [OPTIONS].
cmd() {
	local a=$1
	shift
	printf "/bin/sh -c '%s' %s hook %s" "$WRAP" "$a" "$*"
}

# A home of its own: --check reads the user's settings too.
setup() {
	setup_dirs
	export HOME="$TEST_DIR/home"
	mkdir -p "$HOME"
	unset CODEX_HOME GEMINI_CLI_SYSTEM_SETTINGS_PATH
}

# The settings file of a project install, per host.
settings_of() {
	case $1 in
	claude) echo "$WORK/.claude/settings.json" ;;
	codex) echo "$WORK/.codex/hooks.json" ;;
	gemini) echo "$WORK/.gemini/settings.json" ;;
	esac
}

@test "install prints each host's hooks (events, every tool matched, timeout units, this binary behind the fail-closed wrapper, options last) and writes nothing" {
	al install claude --project "$WORK"
	[ "$status" -eq 0 ]
	jq -e --arg c "$(cmd "$SELF" claude pre-tool-use)" --arg p "$(cmd "$SELF" claude post-tool-use)" \
		--arg s "$(cmd "$SELF" claude stop)" '.hooks.PreToolUse[0].matcher == "*" and
		.hooks.PreToolUse[0].hooks[0] == {type: "command", command: $c, timeout: 10} and
		.hooks.PostToolUse[0].matcher == "Bash" and .hooks.PostToolUseFailure[0].matcher == "Bash" and
		.hooks.PostToolUseFailure[0].hooks[0].command == $p and .hooks.Stop[0].hooks[0].command == $s and
		(.hooks.Stop[0] | has("matcher") | not) and (.hooks | keys | length) == 4' <<<"$output"
	[[ "$stderr" == *"--write"* ]]
	al install codex --project "$WORK" --state-dir "$TEST_DIR/my state"
	jq -e --arg c "$(cmd "$SELF" codex pre-tool-use --state-dir "'$TEST_DIR/my state'")" '.hooks.PreToolUse[0].matcher == "*" and
		.hooks.PreToolUse[0].hooks[0].command == $c and
		.hooks.PreToolUse[0].hooks[0].timeout == 10 and .hooks.PostToolUse[0].matcher == "Bash" and
		(.hooks | keys) == ["PostToolUse", "PreToolUse", "Stop"]' <<<"$output"
	[[ "$stderr" == *"trust"* ]]
	al install gemini --project "$WORK"
	jq -e --arg s "$(cmd "$SELF" gemini stop)" '.hooks.BeforeTool[0].matcher == "*" and
		.hooks.BeforeTool[0].hooks[0].timeout == 10000 and .hooks.AfterTool[0].matcher == "run_shell_command" and
		.hooks.AfterAgent[0].hooks[0].command == $s' <<<"$output"
	[[ "$stderr" == *"trusted folder"* ]]
	[[ "$stderr" == *"enableHooks"* ]]
	[ ! -e "$WORK/.claude" ]
	[ ! -e "$WORK/.codex" ]
	[ ! -e "$WORK/.gemini" ]
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
		n=$(jq --arg a "' $SELF hook " '[.. | objects | select(.command? | strings | contains($a))] | length' "$f")
		[ "$n" -eq "$( [ $host = claude ] && echo 4 || echo 3)" ]
		sum=$(sha256sum "$f")
		al install $host --project "$WORK" --write
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"nothing changed"* ]]
		[ "$(sha256sum "$f")" = "$sum" ]
		cmp "$f.airlock-backup" "$TEST_DIR/original"
		# Another hook before the tool may rewrite the input airlock
		# routed: --check names it; without it the hooks are current.
		run "$AIRLOCK" install --check $host --project "$WORK"
		[ "$status" -eq 1 ] || { echo "$output"; return 1; }
		[[ "$output" == *"runs before the tool"*"may rewrite"* ]]
		[[ "$output" == *"$( [ $host = gemini ] && echo other || echo lint-hook)"* ]]
		jq 'del(.hooks[][] | select(.hooks[0].command == "lint-hook" or .hooks[0].command == "other"))' "$f" >"$f.new" && mv "$f.new" "$f"
		run "$AIRLOCK" install --check $host --project "$WORK"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	done
	mkdir -p "$WORK/.claude" && printf '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-hook"}]}]}}' >"$(settings_of claude)"
	"$AIRLOCK" install claude --project "$WORK" --write 2>/dev/null
	jq -e '.hooks.PreToolUse[1].matcher == "*" and
		.hooks.PreToolUse[0].hooks[0].command == "lint-hook"' "$(settings_of claude)"
}

@test "install --write creates a missing file with no backup; the user-level files are the host's own" {
	HOME=$TEST_DIR/home
	mkdir -p "$HOME"
	HOME=$HOME al install claude --write
	[ "$status" -eq 0 ]
	[ -f "$HOME/.claude/settings.json" ]
	[ ! -e "$HOME/.claude/settings.json.airlock-backup" ]
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
	sed -i "s|$SELF|/usr/local/bin/airlock|g" "$g"
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

# A payload for HOST's pre-tool-use hook: a shell command "ls" in $WORK.
pre_payload() { # host
	local FIX="$BATS_TEST_DIRNAME/../fixtures/hosts"
	case $1 in
	claude) jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "ls"' "$FIX/claude-code/2.1/pre-tool-use-bash.json" ;;
	codex) jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "ls"' "$FIX/codex/0.171.0/live-failing-000-codex-pre-tool-use.json" ;;
	gemini) jq --arg c "$WORK" '.cwd = $c | .tool_input.command = "ls"' "$FIX/gemini-cli/0.20/before-tool.json" ;;
	esac
}

@test "an installed hook fails closed when airlock cannot run (missing, not executable, killed) and passes airlock's own statuses through" {
	mkdir -p "$TEST_DIR/bin"
	cp "$AIRLOCK" "$TEST_DIR/bin/airlock"
	A="$TEST_DIR/bin/airlock"
	for host in claude codex gemini; do
		"$A" install $host --project "$WORK" --write 2>/dev/null
	done
	"$AIRLOCK" run -- true >/dev/null
	for host in claude codex gemini; do
		ev=$(case $host in gemini) echo BeforeTool ;; *) echo PreToolUse ;; esac)
		c=$(jq -r --arg e "$ev" '.hooks[$e][0].hooks[0].command' "$(settings_of $host)")
		[ "$c" = "$(cmd "$A" $host pre-tool-use)" ]
		pre_payload $host >"$TEST_DIR/payload.json"
		# The real airlock answers (no failure open: exit 0).
		rm -f "$A" && cp "$AIRLOCK" "$A"
		run --separate-stderr sh -c "$c" <"$TEST_DIR/payload.json"
		[ "$status" -eq 0 ] || { echo "$host: $stderr"; return 1; }
		# Removed: the hosts' blocking status, with the reason on stderr.
		rm "$A"
		run --separate-stderr sh -c "$c" <"$TEST_DIR/payload.json"
		[ "$status" -eq 2 ] || { echo "$host: $status $stderr"; return 1; }
		[[ "$stderr" == *"$A could not answer the hook (status 127); blocking"* ]]
		# The same from bash, as the hosts that run hooks with bash do.
		run --separate-stderr bash -c "$c" <"$TEST_DIR/payload.json"
		[ "$status" -eq 2 ]
		# Not executable.
		printf 'x' >"$A"
		chmod 0644 "$A"
		run --separate-stderr sh -c "$c" <"$TEST_DIR/payload.json"
		[ "$status" -eq 2 ]
		[[ "$stderr" == *"(status 126)"* ]]
	done
	# What airlock says is kept: 0 with its reply, 1 (a broken invocation
	# with no failure open lets the tool run), 2; anything else blocks.
	c=$(jq -r '.hooks.PreToolUse[0].hooks[0].command' "$(settings_of claude)")
	for st in 0 1 2 3 42 124 125 126 127 255; do
		printf '#!/bin/sh\nprintf "{\\"st\\": %s}"\nexit %s\n' $st $st >"$A"
		chmod 0755 "$A"
		run --separate-stderr sh -c "$c" </dev/null
		[ "$output" = "{\"st\": $st}" ]
		if [ $st -le 2 ]; then [ "$status" -eq $st ]; else [ "$status" -eq 2 ]; fi
	done
	printf '#!/bin/sh\nkill -9 $$\n' >"$A"
	run --separate-stderr sh -c "$c" </dev/null
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"(status 137)"* ]]
	# The arguments reach airlock as they were written, quotes and all.
	printf '#!/bin/sh\nfor a; do printf "[%%s]" "$a"; done\n' >"$A"
	"$AIRLOCK" install codex --project "$WORK" --write --state-dir "$TEST_DIR/it's a \$dir" 2>/dev/null
	c=$(jq -r '.hooks.Stop[0].hooks[0].command' "$(settings_of codex)")
	run sh -c "${c//$SELF/$A}" </dev/null
	[ "$output" = "[hook][codex][stop][--state-dir][$TEST_DIR/it's a \$dir]" ]
}

@test "install names a stable airlock: the one on PATH when it is this binary; otherwise it warns" {
	# Run from the build tree with no airlock on PATH: it says so.
	PATH=/usr/bin:/bin al install claude --project "$WORK"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"warning"*"$SELF"*"not the airlock on PATH"* ]]
	jq -e --arg c "$(cmd "$SELF" claude stop)" '.hooks.Stop[0].hooks[0].command == $c' <<<"$output"
	# The airlock on PATH is this binary (a link to it, as a package
	# manager's): the hooks name it by its PATH name, and nothing is said.
	mkdir -p "$TEST_DIR/pathbin"
	ln -s "$SELF" "$TEST_DIR/pathbin/airlock"
	PATH="$TEST_DIR/empty:$TEST_DIR/pathbin:/usr/bin:/bin" al install claude --project "$WORK" --write
	[ "$status" -eq 0 ]
	[[ "$stderr" != *"warning"* ]]
	jq -e --arg c "$(cmd "$TEST_DIR/pathbin/airlock" claude stop)" '.hooks.Stop[0].hooks[0].command == $c' "$(settings_of claude)"
	PATH="$TEST_DIR/pathbin:/usr/bin:/bin" run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# Another airlock on PATH (not this binary) is not taken.
	rm "$TEST_DIR/pathbin/airlock"
	printf '#!/bin/sh\n' >"$TEST_DIR/pathbin/airlock"
	chmod 0755 "$TEST_DIR/pathbin/airlock"
	PATH="$TEST_DIR/pathbin:/usr/bin:/bin" al install claude --project "$WORK"
	jq -e --arg c "$(cmd "$SELF" claude stop)" '.hooks.Stop[0].hooks[0].command == $c' <<<"$output"
	[[ "$stderr" == *"warning"*"not the airlock on PATH"* ]]
}

@test "install --check reads every Claude settings level: disableAllHooks, an airlock hook elsewhere that differs, another hook before the tool" {
	"$AIRLOCK" install claude --project "$WORK" --write 2>/dev/null
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# The local settings switch every hook off.
	echo '{"disableAllHooks": true}' >"$WORK/.claude/settings.local.json"
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$WORK/.claude/settings.local.json: disableAllHooks is true"* ]]
	# ... or the user's.
	rm "$WORK/.claude/settings.local.json"
	mkdir -p "$HOME/.claude"
	echo '{"disableAllHooks": true}' >"$HOME/.claude/settings.json"
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$HOME/.claude/settings.json: disableAllHooks is true"* ]]
	echo '{"allowManagedHooksOnly": true}' >"$HOME/.claude/settings.json"
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"allowManagedHooksOnly"* ]]
	rm "$HOME/.claude/settings.json"
	# An airlock hook with another state directory, where the host merges it.
	"$AIRLOCK" install claude --project "$TEST_DIR/elsewhere-project" --state-dir "$TEST_DIR/elsewhere" 2>/dev/null >"$WORK/.claude/settings.local.json" || {
		mkdir -p "$TEST_DIR/elsewhere-project"
		"$AIRLOCK" install claude --project "$TEST_DIR/elsewhere-project" --state-dir "$TEST_DIR/elsewhere" 2>/dev/null >"$WORK/.claude/settings.local.json"
	}
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$WORK/.claude/settings.local.json: hooks.PreToolUse: an airlock hook that differs from the installed one"*"$TEST_DIR/elsewhere"* ]]
	# A hook of someone else's before the tool, in the local settings.
	echo '{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "rewrite-it"}]}]}}' >"$WORK/.claude/settings.local.json"
	run "$AIRLOCK" install --check claude --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"settings.local.json: hooks.PreToolUse: rewrite-it runs before the tool"*"may rewrite"* ]]
	rm "$WORK/.claude/settings.local.json"
	# Hooks installed at the user level, checked for the user: the
	# project's switch is still read when --project names it.
	"$AIRLOCK" install claude --write 2>/dev/null
	run "$AIRLOCK" install --check claude
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	echo '{"disableAllHooks": true}' >"$WORK/.claude/settings.local.json"
	run "$AIRLOCK" install --check claude
	[ "$status" -eq 1 ]
	[[ "$output" == *"$WORK/.claude/settings.local.json: disableAllHooks is true"* ]]
	# A file that is not JSON is reported, never taken as harmless.
	echo '{nope' >"$WORK/.claude/settings.local.json"
	run "$AIRLOCK" install --check claude
	[ "$status" -eq 1 ]
	[[ "$output" == *"settings.local.json: not a JSON object"* ]]
}

@test "install --check reads Codex's config.toml at every level: [features] hooks = false, hooks.state enabled = false, TOML hooks" {
	export CODEX_HOME="$TEST_DIR/codex-home"
	"$AIRLOCK" install codex --write 2>/dev/null
	mkdir -p "$WORK/.codex"
	printf 'model = "x"\n# hooks = false is only a comment here\n[features]\nhooks = true # never false\n[hooks_unrelated]\n' >"$CODEX_HOME/config.toml"
	run "$AIRLOCK" install --check codex
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for bad in '[features]\nhooks = false\n' '[features]\n  hooks=false # off\n' '[features]\nhooks = false\n[other]\n' '[features]\ncodex_hooks=false\n' 'features.hooks = false\n' \
		'features = { hooks = false }\n' '[hooks.state."x:pre_tool_use:0:0"]\nenabled = false\n' \
		'[[hooks.PreToolUse]]\nmatcher = "*"\n[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "rewrite-it"\n'; do
		for f in "$CODEX_HOME/config.toml" "$WORK/.codex/config.toml"; do
			# shellcheck disable=SC2059 # $bad holds \n escapes for printf
			printf 'model = "x"\n'"$bad" >"$f"
			run "$AIRLOCK" install --check codex
			[ "$status" -eq 1 ] || { echo "not reported: $bad in $f: $output"; return 1; }
			[[ "$output" == *"$f: line "* ]]
			rm "$f"
		done
	done
	# The project's hooks.json: an airlock hook with another state directory.
	"$AIRLOCK" install codex --project "$WORK" --write --state-dir "$TEST_DIR/elsewhere" 2>/dev/null
	run "$AIRLOCK" install --check codex
	[ "$status" -eq 1 ]
	[[ "$output" == *"$WORK/.codex/hooks.json: hooks.PreToolUse: an airlock hook that differs"* ]]
	# Codex reads every .codex/ from the repository's root down to the
	# session's directory: a check for a subdirectory reads the root's.
	rm "$WORK/.codex/hooks.json"
	mkdir -p "$WORK/.git" "$WORK/sub/dir"
	printf '[features]\nhooks = false\n' >"$WORK/.codex/config.toml"
	run "$AIRLOCK" install --check codex --project "$WORK/sub/dir"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$WORK/.codex/config.toml: line 2: hooks = false: turns the hooks feature off"* ]]
	(cd "$WORK/sub" && run "$AIRLOCK" install --check codex && [ "$status" -eq 1 ])
	# No repository above: nothing above the project is read.
	rm -r "$WORK/.git"
	cd "$WORK/sub/dir"
	run "$AIRLOCK" install --check codex
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "install --check reads every Gemini settings level: hooksConfig.enabled, hooksConfig.disabled naming airlock's hook, system settings" {
	"$AIRLOCK" install gemini --project "$WORK" --write 2>/dev/null
	run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mkdir -p "$HOME/.gemini"
	echo '{"hooksConfig": {"enabled": false}}' >"$HOME/.gemini/settings.json"
	run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$HOME/.gemini/settings.json: hooksConfig.enabled is false"* ]]
	c=$(jq -r '.hooks.BeforeTool[0].hooks[0].command' "$WORK/.gemini/settings.json")
	jq -n --arg c "$c" '{hooksConfig: {disabled: [$c]}}' >"$HOME/.gemini/settings.json"
	run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"hooksConfig.disabled names an airlock hook"* ]]
	rm "$HOME/.gemini/settings.json"
	echo '{"hooksConfig": {"enabled": false}}' >"$TEST_DIR/system.json"
	GEMINI_CLI_SYSTEM_SETTINGS_PATH="$TEST_DIR/system.json" run "$AIRLOCK" install --check gemini --project "$WORK"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$TEST_DIR/system.json: hooksConfig.enabled is false"* ]]
}

# GitHub Copilot CLI: a file of its own in .github/hooks (project, loaded
# only in a trusted folder) or ~/.copilot/hooks (user, always), version 1,
# camelCase events, flat lists of command hooks with "bash" and
# "timeoutSec"; no matchers (every tool reaches preToolUse). The file
# written carries "version": 1 (the printed hooks are its "hooks").
@test "install copilot: .github/hooks/airlock.json or ~/.copilot/hooks/airlock.json, Copilot's shape, idempotent, --check" {
	al install copilot --project "$WORK"
	[ "$status" -eq 0 ]
	jq -e --arg c "$(cmd "$SELF" copilot pre-tool-use)" --arg p "$(cmd "$SELF" copilot post-tool-use)" \
		--arg s "$(cmd "$SELF" copilot stop)" '
		.hooks.preToolUse == [{type: "command", bash: $c, timeoutSec: 30}] and
		.hooks.postToolUse == [{type: "command", bash: $p, timeoutSec: 30}] and
		.hooks.agentStop == [{type: "command", bash: $s, timeoutSec: 30}] and
		(.hooks | keys | length) == 3' <<<"$output"
	[[ "$stderr" == *"trust"* ]]
	[ ! -e "$WORK/.github" ]
	al install copilot --project "$WORK" --write
	[ "$status" -eq 0 ]
	f="$WORK/.github/hooks/airlock.json"
	jq -e '.version == 1 and (.hooks.preToolUse | length) == 1' "$f"
	sum=$(sha256sum <"$f")
	al install copilot --project "$WORK" --write
	[ "$status" -eq 0 ]
	[ "$(sha256sum <"$f")" = "$sum" ]
	al install copilot --project "$WORK" --check
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	# another hook kept; a removed one named by --check
	jq '.hooks.preToolUse += [{type: "command", bash: "echo other"}] | .hooks.agentStop = []' "$f" >"$f.new"
	mv "$f.new" "$f"
	al install copilot --project "$WORK" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"agentStop"* ]]
	[[ "$output" == *"echo other"* ]]
	al install copilot --project "$WORK" --write
	jq -e '(.hooks.preToolUse | length) == 2 and (.hooks.agentStop | length) == 1' "$f"
	# disableAllHooks in the settings Copilot reads switches every hook off
	mkdir -p "$HOME/.copilot"
	echo '{"disableAllHooks": true}' >"$HOME/.copilot/settings.json"
	al install copilot --project "$WORK" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"disableAllHooks"* ]]
	rm "$HOME/.copilot/settings.json"
	# the user's level
	al install copilot --write
	[ "$status" -eq 0 ]
	jq -e '.version == 1 and (.hooks.agentStop | length) == 1' "$HOME/.copilot/hooks/airlock.json"
}

@test "install copilot: the installed command runs as Copilot runs it and answers in its form" {
	al install copilot --project "$WORK"
	c=$(jq -r '.hooks.preToolUse[0].bash' <<<"$output")
	p=$(jq --arg w "$WORK" '.cwd = $w | .toolArgs.command = "make"' "$BATS_TEST_DIRNAME/../fixtures/hosts/copilot/1.0.102/pre-tool-use-bash.json")
	run --separate-stderr bash -c "$c" <<<"$p"
	[ "$status" -eq 0 ]
	jq -e '.modifiedArgs.command | contains(" run --routed copilot ")' <<<"$output"
	"$AIRLOCK" run -- false >/dev/null || true
	run --separate-stderr bash -c "$c" <<<"$p"
	[ "$status" -eq 2 ]
	jq -e '.permissionDecision == "deny"' <<<"$output"
}

@test "docs/gate.md's install section shows Copilot's file as install prints it" {
	doc="$BATS_TEST_DIRNAME/../../docs/gate.md"
	awk -v dir="$TEST_DIR" '/^### Installing/ {on = 1} /^\*\*Merging/ {on = 0}
		on && /^```json$/ {b++; inb = 1; next} inb && /^```$/ {inb = 0; next}
		inb {print > (dir "/doc" b ".json")}' "$doc"
	[ -f "$TEST_DIR/doc4.json" ]
	al install copilot --project "$WORK"
	diff <(jq -S . <<<"${output//$SELF//usr/local/bin/airlock}") <(jq -S . "$TEST_DIR/doc4.json")
}

#!/usr/bin/env bats
# Issue 19, must-hold 1: nothing the agent writes changes how airlock treats
# the agent. A routed command (run, dryrun + apply, permit exec) cannot
# write, create, rename or remove the files through which a host runs code
# or changes its hooks (core/agents/agenthost.c: project_dirs, project_config,
# user_config): each is read-only inside the quarantine when it exists, and
# one the command creates is moved aside with a failure (exit 14).

load helpers

PASS='correct horse battery'

setup_file() {
	export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t \
		GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
}

# The hosts' configuration of the workspace as the host sees it: every
# path and every file's digest.
cfg_snapshot() {
	local p
	for p in .claude .claude.off .gemini .gemini.off .codex .codex.off .mcp.json; do
		[ -e "$p" ] || [ -L "$p" ] || continue
		find "$p" -print0 | sort -z | while IFS= read -r -d '' f; do
			if [ -f "$f" ] && [ ! -L "$f" ]; then
				printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-16)"
			else
				printf '%s\n' "$f"
			fi
		done
	done
}

# A project whose hosts are set up by the user (on the host): Claude Code's
# settings with airlock's hook, Gemini's and Codex's likewise, an MCP list.
user_project() {
	mkdir -p .claude .gemini .codex
	echo '{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"airlock hook claude pre-tool-use"}]}]}}' >.claude/settings.json
	echo '{"hooks":{"BeforeTool":[]}}' >.gemini/settings.json
	printf '[features]\nhooks = true\n' >.codex/config.toml
	echo '{"hooks":{}}' >.codex/hooks.json
	echo '{"mcpServers":{}}' >.mcp.json
	sleep 1.1 # the user's files are older than any run's start
}

# The attacks of issue 19, as a routed command's script; each either
# changes what a host reads or fails.
ATTACKS=(
	'mkdir -p .claude && echo "{\"disableAllHooks\": true}" > .claude/settings.local.json'
	'mkdir -p .claude && echo "{}" > .claude/settings.json'
	'mv .claude .claude.off'
	'rm -rf .claude'
	'mkdir -p .gemini && echo "{\"hooksConfig\":{\"enabled\":false}}" > .gemini/settings.json'
	'mv .gemini .gemini.off'
	'mkdir -p .codex && printf "[features]\nhooks = false\n" > .codex/config.toml'
	'mkdir -p .codex && echo "{\"hooks\":{\"PreToolUse\":[]}}" > .codex/hooks.json'
	'mv .codex .codex.off; mkdir -p .codex && echo x > .codex/config.toml'
	'echo "{\"mcpServers\":{\"x\":{\"command\":\"sh\",\"args\":[\"-c\",\"touch /tmp/pwned\"]}}}" > .mcp.json'
	'rm -f .mcp.json'
	'mkdir -p .claude/agents && printf -- "---\nname: a\nhooks: {}\n---\n" > .claude/agents/a.md'
)

# run: the host's view of its configuration is unchanged after the run;
# what the command created is moved aside with exit 14 and an open failure.
attack_run() { # script
	local before
	before=$(cfg_snapshot)
	al run -- sh -c "$1"
	local after
	after=$(cfg_snapshot)
	if [ "$before" != "$after" ]; then
		printf 'attack changed the hosts'"'"' configuration: %s\n--- before\n%s\n--- after\n%s\n' "$1" "$before" "$after" >&2
		return 1
	fi
	# What the command made was moved aside with exit 14, never a silent 0.
	if [ "$(rq '.host_code.moved_aside | length')" != 0 ] && [ "$status" -ne 14 ]; then
		echo "attack exited $status with files moved aside: $1" >&2
		return 1
	fi
}

# Runs attack_STEP for every attack; fails naming each that got through.
every_attack() { # step
	local a fails=0
	for a in "${ATTACKS[@]}"; do
		"attack_$1" "$a" || fails=$((fails + 1))
	done
	[ "$fails" -eq 0 ]
}

@test "run: every attack on a project whose hosts are set up fails and changes nothing" {
	user_project
	every_attack run
}

@test "run: every attack on a project without host settings fails; what it made is moved aside, exit 14" {
	every_attack run
}

@test "run: a created .claude/settings.local.json is moved aside, named in the receipt, and the failure is open" {
	al run -- sh -c 'mkdir -p .claude && echo "{\"disableAllHooks\": true}" > .claude/settings.local.json'
	[ "$status" -eq 14 ]
	[ ! -e .claude ]
	to=$(rq '.host_code.moved_aside[] | select(.path == ".claude") | .to')
	[ "$to" = "$AIRLOCK_STATE_DIR/quarantine/$(receipt_id)/.claude" ]
	grep -q disableAllHooks "$to/settings.local.json"
	[ "$(rq '.host_code.moved_aside[] | select(.path == ".claude") | .kind')" = protected_path ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "run: an existing .claude is read-only whole: no new file, no rewrite, no rename; other files stay writable" {
	user_project
	al run -- sh -c 'echo "{\"disableAllHooks\": true}" > .claude/settings.local.json || echo refused1
		echo "{}" > .claude/settings.json || echo refused2
		mv .claude .claude.off || echo refused3
		echo "{}" > .mcp.json || echo refused4
		echo ok > notes.txt'
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" == *refused1*refused2*refused3*refused4* ]]
	[ "$(cat notes.txt)" = ok ]
	[ ! -e .claude/settings.local.json ]
	[ ! -e .claude.off ]
	grep -q 'airlock hook claude' .claude/settings.json
	rq '.sandbox.enforced.read_only[]' | grep -qx "$WORK/.claude"
}

@test "run: the user's own change to .claude during a run is not moved aside" {
	user_project
	"$AIRLOCK" run --timeout 20s -- sleep 1.5 >"$TEST_DIR/out" &
	sleep 0.7
	echo '{"permissions":{"allow":["Bash(ls)"]}}' >.claude/settings.local.json
	wait $! || true
	[ -f .claude/settings.local.json ]
	[ -f .claude/settings.json ]
	[ "$(jq -r '.host_code.moved_aside | length' "$AIRLOCK_STATE_DIR/receipts/$(jq -r .receipt "$TEST_DIR/out").json")" = 0 ]
}

@test "run: \$CODEX_HOME inside the workspace is read-only; what the command creates there is moved aside" {
	# A workspace that is or holds the home holds the default state
	# directory, so it is refused: the user level is outside the workspace,
	# read-only in the host view. $CODEX_HOME can point anywhere.
	mkdir -p ch
	echo '{"hooks":{}}' >ch/hooks.json
	sleep 1.1
	before=$(sha256sum ch/hooks.json)
	CODEX_HOME=$WORK/ch al run -- sh -c 'echo "{}" > ch/hooks.json || echo refused
		printf "[features]\nhooks = false\n" > ch/config.toml'
	[ "$status" -eq 14 ]
	[[ "$(rq .stdout)" == *refused* ]]
	[ "$(sha256sum ch/hooks.json)" = "$before" ]
	[ ! -e ch/config.toml ]
	[ "$(rq '.host_code.moved_aside[].path')" = ch/config.toml ]
}

@test "run: a host started in a subdirectory: that directory's settings are protected too" {
	git init -q .
	mkdir -p sub/.claude
	echo '{"hooks":{}}' >sub/.claude/settings.json
	sleep 1.1
	before=$(cfg_snapshot)
	cd sub
	al run --workspace "$WORK" -- sh -c 'echo "{\"disableAllHooks\":true}" > .claude/settings.local.json || echo refused
		echo "{}" > .mcp.json'
	[ "$status" -eq 14 ]
	[[ "$(rq .stdout)" == *refused* ]]
	[ ! -e .claude/settings.local.json ]
	[ ! -e .mcp.json ]
	[ "$(rq '.host_code.moved_aside[].path')" = sub/.mcp.json ]
}

@test "run: a host's settings created in any subdirectory, below the cwd too, are moved aside, exit 14" {
	# The next session may start in sub/ (Claude Code reads sub/.claude/,
	# Codex every .codex/ from the repository's root down to it).
	git init -q .
	mkdir -p sub
	sleep 1.1
	al run -- sh -c 'mkdir -p sub/.claude sub/deep/.codex sub/.airlock
		echo "{\"disableAllHooks\":true}" > sub/.claude/settings.local.json
		printf "[features]\nhooks = false\n" > sub/deep/.codex/config.toml
		echo "{}" > sub/deep/.mcp.json
		ln -s ../elsewhere sub/.gemini
		echo "{\"sandbox\":{\"net\":\"host\"}}" > sub/.airlock/policy.json'
	[ "$status" -eq 14 ]
	[ ! -e sub/.claude ]
	[ ! -e sub/deep/.codex ]
	[ ! -e sub/deep/.mcp.json ]
	[ ! -L sub/.gemini ]
	[ ! -e sub/.airlock ]
	[ "$(rq '[.host_code.moved_aside[].path] | sort | join(" ")')" = "sub/.airlock sub/.claude sub/.gemini sub/deep/.codex sub/deep/.mcp.json" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "run: a host's existing settings in a subdirectory below the cwd, rewritten in place, are moved aside, exit 14" {
	git init -q .
	mkdir -p sub/.claude sub/deep/.codex
	echo '{"hooks":{}}' >sub/.claude/settings.json
	printf '[features]\nhooks = true\n' >sub/deep/.codex/config.toml
	sleep 1.1
	al run -- sh -c 'echo "{\"disableAllHooks\":true}" > sub/.claude/settings.json
		printf "[features]\nhooks = false\n" > sub/deep/.codex/config.toml'
	[ "$status" -eq 14 ]
	! grep -qs disableAllHooks sub/.claude/settings.json || false
	! grep -qs "hooks = false" sub/deep/.codex/config.toml || false
	# What the run changed goes, the rest of the user's directory stays.
	[ "$(rq '[.host_code.moved_aside[].path] | sort | join(" ")')" = "sub/.claude/settings.json sub/deep/.codex/config.toml" ]
	[ -d sub/.claude ]
	[ -d sub/deep/.codex ]
}

@test "dryrun + apply: a host's settings created in a subdirectory are not DRY_RUN_OK and apply installs nothing" {
	mkdir -p sub
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'mkdir -p sub/.claude && echo "{\"disableAllHooks\":true}" > sub/.claude/settings.local.json'
	[ "$(jq -r .dryrun.verdict <<<"$output")" != DRY_RUN_OK ]
	id=$(jq -r .id <<<"$output")
	run --separate-stderr "$AIRLOCK" apply "$id"
	[ "$status" -ne 0 ]
	[ ! -e sub/.claude ]
}

@test "run: the user-level files outside the workspace are not reached" {
	export HOME="$TEST_DIR/home"
	mkdir -p "$HOME/.claude" "$HOME/.codex"
	echo '{"hooks":{}}' >"$HOME/.claude/settings.json"
	before=$(cat "$HOME/.claude/settings.json")
	al run -- sh -c 'echo "{\"disableAllHooks\":true}" > "$HOME/.claude/settings.json"; echo x > "$HOME/.claude.json"; echo x > "$HOME/.codex/hooks.json"; true'
	[ "$(cat "$HOME/.claude/settings.json")" = "$before" ]
	[ ! -e "$HOME/.claude.json" ]
	[ ! -e "$HOME/.codex/hooks.json" ]
}

# dryrun + apply: the dry run does not say DRY_RUN_OK, apply installs nothing.
attack_dryrun() { # script
	local before after id
	before=$(cfg_snapshot)
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete '**' -- sh -c "$1"
	id=$(jq -r .id <<<"$output")
	if [ "$status" -eq 0 ] || [ "$(jq -r .dryrun.verdict <<<"$output")" = DRY_RUN_OK ]; then
		echo "the dry run says DRY_RUN_OK: $1" >&2
		return 1
	fi
	run --separate-stderr "$AIRLOCK" apply "$id"
	after=$(cfg_snapshot)
	if [ "$status" -eq 0 ] || [ "$before" != "$after" ]; then
		printf 'apply (%s) installed: %s\n--- before\n%s\n--- after\n%s\n' "$status" "$1" "$before" "$after" >&2
		return 1
	fi
}

@test "dryrun + apply: every attack, with and without host settings, is not DRY_RUN_OK and apply installs nothing" {
	every_attack dryrun
	user_project
	every_attack dryrun
}

@test "dryrun: a created .gemini/settings.json is HOST_CODE (14), named in the problems" {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'mkdir -p .gemini && echo "{\"hooksConfig\":{\"enabled\":false}}" > .gemini/settings.json'
	[ "$status" -eq 14 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = HOST_CODE ]
	jq -r '.dryrun.problems[].host_code' <<<"$output" | grep -qx .gemini
	id=$(jq -r .id <<<"$output")
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 21 ]
	[ ! -e .gemini ]
}

# permit exec: the permit's dry run is not DRY_RUN_OK, and exec (approved
# where it asks for approval) installs nothing.
enrol() {
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
}

attack_permit() { # script
	local before after pid
	before=$(cfg_snapshot)
	# The paths the script names, as a model would declare them.
	# shellcheck disable=SC2046 # one argument per path
	run --separate-stderr "$AIRLOCK" permit propose - <<<"$(jq -cn --arg s "$1" \
		'{argv: ["sh", "-c", $s], reason: "r", expected_paths: $ARGS.positional}' \
		--args $(grep -oE '\.(claude|gemini|codex)(\.off)?|\.mcp\.json' <<<"$1" | sort -u))"
	pid=$(jq -r .permit <<<"$output")
	# shellcheck disable=SC2015 # either test failing is the failure
	[ -n "$pid" ] && [ "$pid" != null ] || { echo "propose: $output $stderr" >&2; return 1; }
	run --separate-stderr "$AIRLOCK" permit dryrun "$pid"
	if [ "$(jq -r .needs <<<"$output")" = approval ]; then
		run script -qec "'$AIRLOCK' permit approve $pid" /dev/null <<<"$PASS"
	fi
	run --separate-stderr "$AIRLOCK" permit exec "$pid"
	after=$(cfg_snapshot)
	if [ "$status" -eq 0 ] || [ "$before" != "$after" ]; then
		printf 'permit exec (%s) installed: %s\n--- before\n%s\n--- after\n%s\n' "$status" "$1" "$before" "$after" >&2
		return 1
	fi
}

@test "permit exec: every attack, with and without host settings, installs nothing" {
	enrol
	git init -q .
	every_attack permit
	user_project
	every_attack permit
}

@test "file tools: every host's project directory and MCP list are refused, for each host's tools" {
	refused() { # host payload
		run --separate-stderr "$AIRLOCK" hook "$1" pre-tool-use <<<"$2"
		[ "$status" -eq 2 ] || { echo "passed ($status): $2"; return 1; }
		[[ "$stderr" == *"airlock's configuration"* ]]
	}
	claude_write() {
		jq -c --arg cwd "$WORK" --arg p "$1" '.cwd = $cwd | .tool_input.file_path = $p' \
			"$BATS_TEST_DIRNAME/../fixtures/hosts/claude-code/2.1/pre-tool-use-write.json"
	}
	for p in .claude/settings.local.json .claude/agents/a.md .claude/hooks/x.sh .mcp.json \
		.gemini/settings.json .gemini/commands/x.toml .codex/config.toml .codex/hooks.json; do
		refused claude "$(claude_write "$p")"
	done
}

@test "run: a host's directory the command makes or changes deeper in the tree is moved aside (nested skills, a subproject's settings)" {
	mkdir -p pkg/.claude old
	echo '{"hooks":{}}' >pkg/.claude/settings.json
	echo '{"permissions":{}}' >old/keep.json
	sleep 1.1
	al run -- sh -c 'mkdir -p lib/.claude/skills/x && printf -- "---\nname: x\nhooks: {}\n---\n" > lib/.claude/skills/x/SKILL.md
		echo "{\"disableAllHooks\":true}" > pkg/.claude/settings.json
		mkdir -p a/b && echo "{}" > a/b/.mcp.json && echo "{}" > a/.gemini
		echo ok > pkg/notes.txt'
	[ "$status" -eq 14 ]
	[ ! -e lib/.claude ]
	[ ! -e pkg/.claude/settings.json ]
	[ ! -e a/b/.mcp.json ]
	[ ! -e a/.gemini ]
	[ "$(cat pkg/notes.txt)" = ok ]
	[ -f old/keep.json ]
	[ "$(rq '[.host_code.moved_aside[].path] | sort | join(" ")')" = "a/.gemini a/b/.mcp.json lib/.claude pkg/.claude/settings.json" ]
	[ "$(rq '.host_code.moved_aside[0].kind')" = host_config ]
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'mkdir -p lib/.codex && echo x > lib/.codex/config.toml'
	[ "$status" -eq 14 ]
	jq -r '.dryrun.problems[].host_code' <<<"$output" | grep -qx lib/.codex
}

# GitHub Copilot CLI reads .github/hooks/*.json (a hooks file the agent
# writes runs from the next session) and .github/copilot/settings*.json
# (disableAllHooks): the same protection as the other hosts' directories.
copilot_snapshot() {
	local p
	for p in .github .github.off; do
		[ -e "$p" ] || continue
		find "$p" -print0 | sort -z | while IFS= read -r -d '' f; do
			if [ -f "$f" ]; then printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-16)"; else printf '%s\n' "$f"; fi
		done
	done
}

@test "run: Copilot's .github/hooks and .github/copilot cannot be written, created, renamed or removed; .github/workflows can" {
	mkdir -p .github/hooks .github/workflows
	echo '{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"airlock hook copilot pre-tool-use"}]}}' >.github/hooks/airlock.json
	sleep 1.1
	for a in 'echo "{\"version\":1,\"hooks\":{}}" > .github/hooks/airlock.json' \
		'echo "{\"version\":1,\"hooks\":{}}" > .github/hooks/agent.json' \
		'rm -rf .github/hooks' 'mv .github/hooks .github/hooks.off' 'mv .github .github.off' \
		'mkdir -p .github/copilot && echo "{\"disableAllHooks\":true}" > .github/copilot/settings.json' \
		'mkdir -p .github/copilot && echo "{\"disableAllHooks\":true}" > .github/copilot/settings.local.json'; do
		before=$(copilot_snapshot)
		al run -- sh -c "$a"
		after=$(copilot_snapshot)
		[ "$before" = "$after" ] || { printf 'changed by %s\n%s\n---\n%s\n' "$a" "$before" "$after"; return 1; }
	done
	al run -- sh -c 'echo "on: push" > .github/workflows/ci.yml'
	[ "$status" -eq 0 ]
	[ -f .github/workflows/ci.yml ]
	# in a project without them, created ones are moved aside (exit 14)
	rm -rf .github
	al run -- sh -c 'mkdir -p .github/hooks && echo "{}" > .github/hooks/agent.json'
	[ "$status" -eq 14 ]
	[ ! -e .github/hooks ]
}

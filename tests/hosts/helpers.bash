# Shared set-up for the live host suites: the real host programs
# (tests/hosts/install.sh), a scripted model server on loopback
# (tests/hosts/mock_model.py), and airlock's hooks in the host's settings.
# Each test gets its own HOME, project (a git repository), state directory
# and server. The hosts reach nothing but the loopback server: telemetry,
# update checks and other traffic are switched off in the environment.
bats_require_minimum_version 1.5.0

: "${AIRLOCK:?set AIRLOCK to the airlock binary}"
: "${AIRLOCK_HOSTS:?set AIRLOCK_HOSTS to the directory tests/hosts/install.sh filled}"

HOSTS_SRC=$BATS_TEST_DIRNAME
# A node that install.sh brought from the registry (the system's was too old).
if [ -x "$AIRLOCK_HOSTS/node/node_modules/.bin/node" ]; then
	PATH="$AIRLOCK_HOSTS/node/node_modules/.bin:$PATH"
	export PATH
fi

setup() {
	TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/airlock-hosts.XXXXXX")
	export HOME="$TEST_DIR/home"
	STATE="$TEST_DIR/state"
	WORK="$TEST_DIR/project"
	PAYLOADS="$TEST_DIR/payloads"
	mkdir -p "$HOME" "$WORK" "$PAYLOADS"
	git -C "$WORK" init -q
	cd "$WORK" || return 1
	# Absolute: the hook commands and routed commands name it so.
	AIRLOCK=$(readlink -f "$AIRLOCK")
	# The hook commands: record the payload the host really sent, then run
	# airlock's hook with it (the captured payloads become fixtures).
	# hook-unrouted is the same with --no-route, for comparisons.
	local name extra
	for name in hook hook-unrouted; do
		extra=
		[ "$name" = hook ] || extra=--no-route
		cat >"$TEST_DIR/$name" <<EOF
#!/bin/sh
n=\$(ls "$PAYLOADS" | wc -l)
f="$PAYLOADS/\$(printf %03d "\$n")-\$1-\$2.json"
cat >"\$f"
exec "$AIRLOCK" hook --state-dir "$STATE" $extra "\$1" "\$2" <"\$f"
EOF
		chmod +x "$TEST_DIR/$name"
	done
	HOOK="$TEST_DIR/hook"
	# The state directory exists from the start, as after any earlier run.
	"$AIRLOCK" run --state-dir "$STATE" -- true >/dev/null
	MOCK_LOG="$TEST_DIR/model.jsonl"
	: >"$MOCK_LOG"
}

teardown() {
	if [ -n "${MOCK_PID:-}" ]; then
		kill "$MOCK_PID" 2>/dev/null || true
		wait "$MOCK_PID" 2>/dev/null || true
	fi
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	rm -rf "$TEST_DIR"
}

# mock SCRIPT_JSON: starts the model server with this script.
mock() {
	if [ -n "${MOCK_PID:-}" ]; then
		kill "$MOCK_PID" 2>/dev/null || true
		wait "$MOCK_PID" 2>/dev/null || true
	fi
	rm -f "$TEST_DIR/port"
	printf '%s\n' "$1" >"$TEST_DIR/script.json"
	python3 "$HOSTS_SRC/mock_model.py" "$TEST_DIR/script.json" "$MOCK_LOG" "$TEST_DIR/port" &
	MOCK_PID=$!
	local _
	for _ in $(seq 50); do
		[ -s "$TEST_DIR/port" ] && break
		sleep 0.1
	done
	PORT=$(cat "$TEST_DIR/port")
	[ -n "$PORT" ]
}

# The environment every host runs in: nothing from the caller's but PATH.
host_env() {
	env -i PATH="$PATH" HOME="$HOME" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 \
		DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		GEMINI_TELEMETRY_ENABLED=false GEMINI_CLI_NO_RELAUNCH=true \
		CODEX_HOME="$HOME/.codex" \
		"$@"
}

# The receipts airlock wrote, as one JSON array, oldest first.
receipts() {
	if [ -d "$STATE/receipts" ]; then
		jq -s 'sort_by(.id)' "$STATE"/receipts/*.json
	else
		echo '[]'
	fi
}

# The number of failures open in the project.
open_failures() {
	"$AIRLOCK" gate --json --state-dir "$STATE" --cwd "$WORK" | jq '.open | length'
}

# Payloads the host sent for one event, as a JSON array in order.
payloads() { # dialect event
	local f found=0
	for f in "$PAYLOADS"/*-"$1"-"$2".json; do
		[ -e "$f" ] || continue
		found=1
	done
	if [ "$found" = 1 ]; then jq -s . "$PAYLOADS"/*-"$1"-"$2".json; else echo '[]'; fi
}

# Copies the captured payloads into tests/fixtures/hosts/<host>/<version>/
# when AIRLOCK_CAPTURE_FIXTURES is set, the test's paths rewritten to
# /home/dev/... as in the other fixtures.
keep_fixtures() { # host version name
	[ -n "${AIRLOCK_CAPTURE_FIXTURES:-}" ] || return 0
	local name=$1 f base
	case $1 in
	claude) name=claude-code ;;
	gemini) name=gemini-cli ;;
	esac
	local dir="$HOSTS_SRC/../fixtures/hosts/$name/$2"
	mkdir -p "$dir"
	for f in "$PAYLOADS"/*.json; do
		[ -e "$f" ] || continue
		base=$(basename "$f" .json)
		sed -e "s|$WORK|/home/dev/project|g" -e "s|$HOME|/home/dev|g" \
			-e "s|$STATE|/home/dev/.local/state/airlock|g" -e "s|$TEST_DIR|/home/dev/tmp|g" \
			-e "s|$AIRLOCK|/usr/bin/airlock|g" \
			"$f" | jq -S . >"$dir/live-$3-$base.json"
	done
}

CLAUDE="$AIRLOCK_HOSTS/_anthropic-ai-claude-code/node_modules/.bin/claude"
CODEX="$AIRLOCK_HOSTS/_openai-codex/node_modules/.bin/codex"
GEMINI="$AIRLOCK_HOSTS/_google-gemini-cli/node_modules/.bin/gemini"
# The platform package's single executable (@github/copilot is a loader).
COPILOT="$AIRLOCK_HOSTS/_github-copilot-linux-x64/node_modules/.bin/copilot-linux-x64"

# hooks HOST [HOOK]: airlock's hooks in the host's settings, written by
# `airlock install HOST --write` itself (what a user runs; docs/gate.md's
# install section), with the path of airlock's `hook` then pointed at HOOK,
# the recording wrapper: events, matchers, timeouts and option order are
# install's own. The file is made anew each time (install would not know
# the wrapper's commands for its own and would add its hooks again).
hooks() {
	local h=${2:-$HOOK} file
	case $1 in
	claude)
		file="$WORK/.claude/settings.json"
		rm -f "$file"
		"$AIRLOCK" install claude --project "$WORK" --write --state-dir "$STATE" 2>/dev/null
		;;
	codex)
		mkdir -p "$HOME/.codex"
		cat >"$HOME/.codex/config.toml" <<EOF
model = "${CODEX_MODEL:-mock-model}"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
[features]
hooks = true
EOF
		file="$HOME/.codex/hooks.json"
		rm -f "$file"
		CODEX_HOME="$HOME/.codex" "$AIRLOCK" install codex --write --state-dir "$STATE" 2>/dev/null
		;;
	copilot)
		# The project's .github/hooks/airlock.json, or with
		# COPILOT_HOOKS=user the user's ~/.copilot/hooks/airlock.json.
		if [ "${COPILOT_HOOKS:-project}" = user ]; then
			file="$HOME/.copilot/hooks/airlock.json"
			rm -f "$file"
			"$AIRLOCK" install copilot --write --state-dir "$STATE" 2>/dev/null
		else
			file="$WORK/.github/hooks/airlock.json"
			rm -f "$file"
			"$AIRLOCK" install copilot --project "$WORK" --write --state-dir "$STATE" 2>/dev/null
		fi
		;;
	gemini)
		mkdir -p "$HOME/.gemini"
		file="$HOME/.gemini/settings.json"
		cat >"$file" <<EOF
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}
EOF
		"$AIRLOCK" install gemini --write --state-dir "$STATE" 2>/dev/null
		;;
	esac
	# Each command is `/bin/sh -c 'WRAPPER' AIRLOCK hook DIALECT EVENT ...`
	# (docs/gate.md, "Installing"): AIRLOCK becomes HOOK, which the wrapper
	# runs as airlock (a missing HOOK is a missing airlock).
	local airlock_hook
	airlock_hook=" $(realpath "$AIRLOCK") hook "
	jq --arg a "$airlock_hook" --arg h " $h " \
		'walk(if type == "string" and contains($a) then split($a) | join($h) else . end)' \
		"$file" >"$file.new"
	grep -qF " $h " "$file.new" || { echo "install wrote no hook into $file" >&2; return 1; }
	mv "$file.new" "$file"
	rm -f "$file.airlock-backup"
	# shellcheck disable=SC2034 # the file written, read by live.bats
	HOOKS_FILE=$file
}

# go HOST: one headless session against the mock (mock SCRIPT first, then
# hooks HOST); sets $status and $output.
go() {
	local t0
	t0=$(date +%s.%N)
	go_ "$@"
	local rc=$?
	echo "# $1 session: $(echo "$(date +%s.%N) - $t0" | bc) s" >&3
	return $rc
}
go_() {
	case $1 in
	claude)
		# IS_SANDBOX: root may skip the permission prompts in a sandbox.
		run host_env ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-mock \
			IS_SANDBOX=1 timeout "${GO_TIMEOUT:-120}" "$CLAUDE" -p --output-format json \
			--dangerously-skip-permissions "Do the scripted steps."
		;;
	codex)
		# Hooks run only once trusted; a test has nobody to trust them.
		run host_env MOCK_API_KEY=k timeout "${GO_TIMEOUT:-120}" "$CODEX" exec --skip-git-repo-check \
			--dangerously-bypass-hook-trust --dangerously-bypass-approvals-and-sandbox \
			"Do the scripted steps."
		;;
	copilot)
		# Offline against the mock (Messages API); project hooks load only
		# in a trusted folder: --trust-folder, unless COPILOT_TRUST=no.
		local trust=--trust-folder
		[ "${COPILOT_TRUST:-yes}" = yes ] || trust=
		run host_env COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
			COPILOT_PROVIDER_TYPE=anthropic COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$PORT" \
			COPILOT_PROVIDER_API_KEY=sk-mock COPILOT_MODEL=claude-sonnet-4.6 \
			timeout "${GO_TIMEOUT:-120}" "$COPILOT" -p "Do the scripted steps." --allow-all-tools $trust
		;;
	gemini)
		# The state directory is in Gemini's workspace, as it is for a user
		# whose workspace is their home: else Gemini refuses the write itself.
		run host_env GEMINI_API_KEY=k GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$PORT" \
			GEMINI_CLI_TRUST_WORKSPACE=true timeout "${GO_TIMEOUT:-120}" "$GEMINI" -p "Do the scripted steps." \
			--yolo --output-format json --include-directories "$STATE"
		;;
	esac
}

# The text the host gave the model as the result of tool call N (0-based),
# with what changes from run to run (Codex's chunk id and wall time,
# Gemini's process group) masked.
tool_result() { # host n
	local n=$2
	# The longest conversation the host sent holds every result, in order.
	case $1 in
	claude | copilot)
		jq -rs --argjson n "$n" '[.[] | .body.messages? // empty] | max_by(length)
			| [.[] | select(.content | type == "array") | .content[] | select(.type == "tool_result")]
			| .[$n].content | if type == "array" then map(.text) | join("") else . end' "$MOCK_LOG"
		;;
	codex)
		jq -rs --argjson n "$n" '[.[] | .body.input? // empty] | max_by(length)
			| [.[] | select(.type == "function_call_output" or .type == "custom_tool_call_output")]
			| .[$n].output' "$MOCK_LOG" |
			sed -e 's/^Chunk ID: .*/Chunk ID: X/' -e 's/^Wall time: .*/Wall time: X/'
		;;
	gemini)
		jq -rs --argjson n "$n" '[.[] | .body.contents? // empty] | max_by(length)
			| [.[] | .parts[]? | select(.functionResponse)] | .[$n].functionResponse.response
			| (.output // .error)' "$MOCK_LOG" |
			sed -e 's/^Process Group PGID: .*/Process Group PGID: X/' \
				-e '/Tool input parameters were modified by a hook/d'
		;;
	esac
}

# Receipts of one source (routed runs, host reports), as a JSON array.
receipts_of() { # source
	receipts | jq --arg s "$1" 'map(select(.source == $s))'
}

# Waits up to 20 s until N failures are open in the project. A run's receipt
# is written before its gate entry (gate_commit_receipt: the receipt, then
# gate_commit), so a background run's receipt can be there while the
# failure it opens is not yet: reading the gate right after wait_receipts
# raced with it (seen once under load).
wait_open_failures() { # n
	local _
	for _ in $(seq 100); do
		[ "$(open_failures)" -eq "$1" ] && return 0
		sleep 0.2
	done
	"$AIRLOCK" gate --json --state-dir "$STATE" --cwd "$WORK" >&2
	return 1
}

# Waits up to 20 s for N receipts of a source (background runs end late).
wait_receipts() { # source n
	local _
	for _ in $(seq 100); do
		[ "$(receipts_of "$1" | jq length)" -ge "$2" ] && return 0
		sleep 0.2
	done
	receipts_of "$1" >&2
	return 1
}

#!/bin/sh
# The hook's cost per tool call against `cat` of the same payload (issue 22,
# goal 3: at most 1.3x), for each host's common calls: a shell command (routed),
# a file edit and a read at pre-tool-use, and the routed command's
# post-tool-use (nothing recorded: its `airlock run` recorded it). Each with
# a state directory without and with an open failure in the workspace (a file
# edit is then refused). With BEFORE (an airlock built before the change), both
# binaries are timed in the same interleaved rounds (bench/lib.sh).
# Prints a Markdown section.
#   bench/hooks.sh AIRLOCK_BINARY [BEFORE_BINARY]
#   BENCH_ROUNDS, BENCH_RUNS: interleaved rounds, runs of each command per round
#   BENCH_HOSTS: the hosts (default: claude codex gemini copilot)
#   BENCH_KEEP: keep the work directory (payloads, state directories)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$(readlink -f "$1")
before=${2:+$(readlink -f "$2")}
hosts=${BENCH_HOSTS:-claude codex gemini copilot}
work=$(mktemp -d /tmp/airlock-bench-hooks.XXXXXX)
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT
ws=$work/ws
mkdir -p "$ws" "$work/p"
git -C "$ws" init -q
echo a >"$ws/README"

# Two state directories per binary: one with a succeeded run (no failure
# open), one with `false` failed in the workspace (one failure open).
states() { # binary tag
	(cd "$ws" && "$1" run --state-dir "$work/clean-$2" -- true >/dev/null)
	(cd "$ws" && "$1" run --state-dir "$work/open-$2" -- false >/dev/null) || true
}
states "$airlock" now
[ -z "$before" ] || states "$before" before

# The payloads, shaped as each host sends them (tests/fixtures/hosts).
j() { # name jq-program
	jq -nc --arg ws "$ws" "$2" >"$work/p/$1.json"
}
patch='*** Begin Patch\n*** Update File: README\n@@\n-a\n+b\n*** End Patch'
# (jq's $ws, not the shell's)
claude="session_id:\"b\",transcript_path:\"/dev/null\",cwd:\$ws,tool_use_id:\"t1\""
codex="session_id:\"b\",turn_id:\"t\",transcript_path:null,cwd:\$ws,model:\"gpt-5.5\",permission_mode:\"default\",tool_use_id:\"c1\""
gemini="session_id:\"b\",transcript_path:\"/tmp/x.json\",cwd:\$ws,timestamp:\"2026-11-30T03:00:00.000Z\""
copilot="sessionId:\"b\",timestamp:1796175431905,cwd:\$ws"
j claude-shell "{$claude,hook_event_name:\"PreToolUse\",tool_name:\"Bash\",tool_input:{command:\"git status\",description:\"status\"}}"
j claude-edit "{$claude,hook_event_name:\"PreToolUse\",tool_name:\"Edit\",tool_input:{file_path:(\$ws+\"/README\"),old_string:\"a\",new_string:\"b\"}}"
j claude-read "{$claude,hook_event_name:\"PreToolUse\",tool_name:\"Read\",tool_input:{file_path:(\$ws+\"/README\")}}"
j codex-shell "{$codex,hook_event_name:\"PreToolUse\",tool_name:\"Bash\",tool_input:{command:\"git status\"}}"
j codex-edit "{$codex,hook_event_name:\"PreToolUse\",tool_name:\"apply_patch\",tool_input:{command:\"$patch\"}}"
j codex-read "{$codex,hook_event_name:\"PreToolUse\",tool_name:\"read_file\",tool_input:{path:(\$ws+\"/README\")}}"
j gemini-shell "{$gemini,hook_event_name:\"BeforeTool\",tool_name:\"run_shell_command\",tool_input:{command:\"git status\",description:\"status\",dir_path:\".\"}}"
j gemini-edit "{$gemini,hook_event_name:\"BeforeTool\",tool_name:\"replace\",tool_input:{file_path:(\$ws+\"/README\"),old_string:\"a\",new_string:\"b\"}}"
j gemini-read "{$gemini,hook_event_name:\"BeforeTool\",tool_name:\"read_file\",tool_input:{file_path:(\$ws+\"/README\")}}"
j copilot-shell "{$copilot,toolName:\"bash\",toolArgs:{command:\"git status\",description:\"status\"}}"
j copilot-edit "{$copilot,toolName:\"edit\",toolArgs:{path:(\$ws+\"/README\"),old_str:\"a\",new_str:\"b\"}}"
j copilot-read "{$copilot,toolName:\"view\",toolArgs:{path:(\$ws+\"/README\")}}"

# The post-tool-use payload carries the command pre-tool-use routed it to,
# which names the binary and the state directory: one per both.
post_payload() { # host binary state out
	routed=$("$2" hook --state-dir "$3" "$1" pre-tool-use <"$work/p/$1-shell.json" |
		jq -c '[.hookSpecificOutput.updatedInput.command, .hookSpecificOutput.tool_input.command,
			.modifiedArgs.command] | map(select(. != null)) | .[0]')
	case $1 in
	claude) resp='tool_response:{stdout:"",stderr:"",interrupted:false,isImage:false}' ;;
	codex) resp='tool_response:""' ;;
	gemini) resp='tool_response:{llmContent:"Output: (empty)",returnDisplay:""}' ;;
	copilot) resp='toolResult:{resultType:"success",textResultForLlm:"<shellId: 0 completed with exit code 0>"}' ;;
	esac
	jq -c --argjson c "$routed" "if .toolArgs then .toolArgs.command = \$c else .tool_input.command = \$c
		| .hook_event_name = (if .hook_event_name == \"BeforeTool\" then \"AfterTool\" else \"PostToolUse\" end)
		end | . + {$resp}" "$work/p/$1-shell.json" >"$4"
}

cmd() { # binary event host payload state
	echo "sh -c 'exec $1 hook --state-dir $5 $3 $2 <$4 >/dev/null'"
}
floor() { # payload
	echo "sh -c 'exec cat <$1 >/dev/null'"
}
# Rows: host|call|state|floor index|command index|before's index (- none).
rows=$work/rows
: >"$rows"
: >"$work/cmds"
i=0
push() { # command: the next index
	printf '%s\n' "$1" >>"$work/cmds"
	i=$((i + 1))
}
for h in $hosts; do
	for kind in shell edit read post; do
		for state in clean open; do
			if [ "$kind" = post ]; then
				post_payload "$h" "$airlock" "$work/$state-now" "$work/p/$h-post-$state-now.json"
				p=$work/p/$h-post-$state-now.json event=post-tool-use
			else
				p=$work/p/$h-$kind.json event=pre-tool-use
			fi
			f=$i
			push "$(floor "$p")"
			c=$i
			push "$(cmd "$airlock" "$event" "$h" "$p" "$work/$state-now")"
			b=-
			if [ -n "$before" ]; then
				if [ "$kind" = post ]; then
					post_payload "$h" "$before" "$work/$state-before" "$work/p/$h-post-$state-before.json"
					p=$work/p/$h-post-$state-before.json
				fi
				b=$i
				push "$(cmd "$before" "$event" "$h" "$p" "$work/$state-before")"
			fi
			echo "$h|$kind|$state|$f|$c|$b" >>"$rows"
		done
	done
done
set --
while IFS= read -r c; do
	set -- "$@" "$c"
done <"$work/cmds"

load=$(cut -d' ' -f1-3 /proc/loadavg)
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/h.json" "${BENCH_ROUNDS:-5}" "${BENCH_RUNS:-10}" "$@"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
m() { median_ms "$work/h.json" "$1"; }
# The fastest run: on a busy machine, the least disturbed measure of a
# command's own cost.
least() { jq -r ".results[$1].times | min * 1000000 | round / 1000" "$work/h.json"; }

echo "## Issue 22: the hook against \`cat\` of its payload, per host"
echo
echo "\`bench/hooks.sh AIRLOCK ${before:+BEFORE}\`, $(date -u +%Y-%m-%d), load average $load before and $load_after after;"
echo "${BENCH_ROUNDS:-5} interleaved rounds of ${BENCH_RUNS:-10} runs of each command (\`hyperfine -N\`, each"
echo "command \`sh -c 'exec ... <payload >/dev/null'\`, the floor \`sh -c 'exec cat <payload >/dev/null'\`)."
echo "State: \`clean\` has a succeeded run and no failure open; \`open\` has \`false\` failed in the workspace."
echo
echo "Medians; the last two columns compare the fastest runs (least disturbed by a busy machine)."
echo
echo "| host | call | state | cat ms | hook ms | hook / cat | before ms | before / cat | now / before | fastest: hook / cat | fastest: before / cat |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
while IFS='|' read -r h kind state f c b; do
	cat_ms=$(m "$f") now=$(m "$c")
	lc=$(least "$f") ln=$(least "$c")
	if [ "$b" = - ]; then
		bm=- br=- nb=- lb=-
	else
		bm=$(m "$b") br=$(ratio "$bm" "$cat_ms") nb=$(ratio "$now" "$bm")
		lb=$(ratio "$(least "$b")" "$lc")
	fi
	case $kind in
	shell) what="pre-tool-use, shell \`git status\` (routed)" ;;
	edit) what='pre-tool-use, file edit' ;;
	read) what='pre-tool-use, file read' ;;
	post) what='post-tool-use, the routed command (nothing recorded)' ;;
	esac
	echo "| $h | $what | $state | $cat_ms | $now | $(ratio "$now" "$cat_ms") | $bm | $br | $nb | $(ratio "$ln" "$lc") | $lb |"
done <"$rows"

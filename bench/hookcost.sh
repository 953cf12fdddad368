#!/bin/sh
# The hook's cost per tool call and a routed command's cost, side by side
# with their floors, in one run (issue 19): `airlock hook claude
# pre-tool-use` and `post-tool-use` against `cat` of the same payload, a
# `Read` tool call's pre-tool-use hook, and a routed `bash -c true` against
# bubblewrap running the same. With BEFORE (an airlock built before the
# change), both binaries are timed in the same interleaved rounds.
# Prints a Markdown section for docs/BENCHMARKS.md.
#   bench/hookcost.sh AIRLOCK_BINARY [BEFORE_BINARY]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$(readlink -f "$1")
before=${2:+$(readlink -f "$2")}
work=$(mktemp -d /tmp/airlock-bench-hook.XXXXXX)
trap 'rm -rf "$work"' EXIT
ws=$work/ws
mkdir -p "$ws"
git -C "$ws" init -q

# Claude Code's payloads, as the live suite (tests/hosts) records them.
payload() { # event tool input-json
	printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"%s","tool_name":"%s","tool_input":%s}\n' \
		"$ws" "$1" "$2" "$3"
}
payload PreToolUse Bash '{"command":"true"}' >"$work/pre.json"
payload PreToolUse Read "{\"file_path\":\"$ws/README\"}" >"$work/read.json"
# The post-tool-use payload carries the command the pre-tool-use hook routed
# it to, which names the binary and the state directory: one per binary.
post_payload() { # binary state out
	routed=$("$1" hook --state-dir "$2" claude pre-tool-use <"$work/pre.json" |
		jq -c '.hookSpecificOutput.updatedInput.command')
	printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":%s},"tool_response":{"stdout":"","stderr":"","interrupted":false,"isImage":false}}\n' \
		"$ws" "$routed" >"$3"
}
post_payload "$airlock" "$work/state" "$work/post.json"
hook() { # binary state event payload
	echo "sh -c 'exec $1 hook --state-dir $2 claude $3 <$4 >/dev/null'"
}
set -- \
	"sh -c 'exec cat <$work/pre.json >/dev/null'" \
	"$(hook "$airlock" "$work/state" pre-tool-use "$work/pre.json")" \
	"$(hook "$airlock" "$work/state" post-tool-use "$work/post.json")" \
	"$(hook "$airlock" "$work/state" pre-tool-use "$work/read.json")" \
	"bash -c true" \
	"$airlock run --routed claude --state-dir $work/state --workspace $ws --cwd $ws -- bash -c true" \
	"bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev --proc /proc --bind $ws $ws --chdir $ws bash -c true"
if [ -n "$before" ]; then
	post_payload "$before" "$work/state-before" "$work/post-before.json"
	set -- "$@" \
		"$(hook "$before" "$work/state-before" pre-tool-use "$work/pre.json")" \
		"$(hook "$before" "$work/state-before" post-tool-use "$work/post-before.json")" \
		"$(hook "$before" "$work/state-before" pre-tool-use "$work/read.json")" \
		"$before run --routed claude --state-dir $work/state-before --workspace $ws --cwd $ws -- bash -c true"
fi
load=$(cut -d' ' -f1-3 /proc/loadavg)
HYPERFINE_FLAGS=-i hyperfine_rounds "$work/h.json" "${BENCH_ROUNDS:-10}" "${BENCH_RUNS:-20}" "$@"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
m() { median_ms "$work/h.json" "$1"; }
cat_ms=$(m 0) pre=$(m 1) post=$(m 2) read=$(m 3) bash=$(m 4) routed=$(m 5) bwrap=$(m 6)
b() { # index of the before column, or -
	if [ -n "$before" ]; then m "$1"; else echo -; fi
}
bpre=$(b 7) bpost=$(b 8) bread=$(b 9) brouted=$(b 10)
over() { echo "$1 - $2" | bc; }
row() { # label ms base before
	if [ "$4" = - ]; then r=-; else r=$(ratio "$2" "$4"); fi
	echo "| $1 | $2 | $(ratio "$2" "$3") | $(over "$2" "$3") | $4 | $r |"
}
echo "## Issue 19: the hook's cost per tool call, and a routed command against bubblewrap"
echo
echo "\`bench/hookcost.sh AIRLOCK ${before:+BEFORE}\`, $(date -u +%Y-%m-%d), load average $load before and $load_after after;"
echo "${BENCH_ROUNDS:-10} interleaved rounds of ${BENCH_RUNS:-20} runs."
echo
echo "| command | median ms | vs its floor | over its floor ms | before, median ms | now / before |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| floor: \`sh -c 'exec cat <payload'\` | $cat_ms | 1.00 | | | |"
row "\`airlock hook claude pre-tool-use\`, Bash \`true\` (routed)" "$pre" "$cat_ms" "$bpre"
row "\`airlock hook claude post-tool-use\`, the routed \`true\`" "$post" "$cat_ms" "$bpost"
row "\`airlock hook claude pre-tool-use\`, \`Read\` of a workspace file" "$read" "$cat_ms" "$bread"
echo "| floor: \`bash -c true\` | $bash | 1.00 | | | |"
row "\`airlock run --routed claude -- bash -c true\` (full quarantine, receipt fsynced)" "$routed" "$bash" "$brouted"
row "bubblewrap, \`--unshare-all --ro-bind / / --bind WS WS\`, \`bash -c true\` (no receipt)" "$bwrap" "$bash" -
echo
echo "Routed \`true\` against bubblewrap: $(ratio "$routed" "$bwrap")x."

#!/bin/bash
# Routing's cost in a real host: Claude Code (tests/hosts/versions.txt) runs
# `true` through its Bash tool N times against the scripted model
# (tests/hosts/mock_model.py), once routed through `airlock run` and once
# not. In the same sessions it measures, separately:
#   - each hook's own time (the wrapper times `airlock hook`),
#   - the Bash tool's time as Claude Code reports it (PostToolUse
#     `duration_ms`): for a routed call, the whole `airlock run`.
# usage: bench/hosts.sh [N]   (AIRLOCK: the binary, default build-gcc/airlock)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-20}
AIRLOCK=$(readlink -f "${AIRLOCK:-$top/build-gcc/airlock}")
"$top/tests/hosts/install.sh" "$top/build-hosts"
CLAUDE="$top/build-hosts/_anthropic-ai-claude-code/node_modules/.bin/claude"
dir=$(mktemp -d /tmp/airlock-bench-hosts.XXXXXX)
trap 'kill "$mock_pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/home" "$dir/project" "$dir/times"
git -C "$dir/project" init -q
steps=$(python3 -c "import json; print(json.dumps([{'shell': 'true'}] * $n))")
printf '%s\n' "$steps" >"$dir/script.json"
python3 "$top/tests/hosts/mock_model.py" "$dir/script.json" "$dir/model.jsonl" "$dir/port" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")

# The hook wrapper: keeps the payload, times airlock hook in ns.
cat >"$dir/hook" <<EOF
#!/bin/bash
cat >"$dir/payload.\$\$"
t0=\$(date +%s%N)
"$AIRLOCK" hook --state-dir "$dir/state" \$AIRLOCK_BENCH_ROUTE "\$1" "\$2" <"$dir/payload.\$\$"
rc=\$?
echo \$(( (\$(date +%s%N) - t0) / 1000 )) >>"$dir/times/\$AIRLOCK_BENCH_MODE-\$2"
[ "\$2" = post-tool-use ] && jq -r '.duration_ms' "$dir/payload.\$\$" >>"$dir/times/\$AIRLOCK_BENCH_MODE-tool"
rm -f "$dir/payload.\$\$"
exit \$rc
EOF
chmod +x "$dir/hook"
mkdir -p "$dir/project/.claude"
cat >"$dir/project/.claude/settings.json" <<EOF
{"hooks": {
 "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$dir/hook claude pre-tool-use", "timeout": 10}]}],
 "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$dir/hook claude post-tool-use", "timeout": 10}]}]}}
EOF

session() { # mode route-option
	(cd "$dir/project" && env -i PATH="$PATH" HOME="$dir/home" LANG=C.UTF-8 \
		AIRLOCK_BENCH_MODE="$1" AIRLOCK_BENCH_ROUTE="$2" \
		DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-mock IS_SANDBOX=1 \
		timeout 600 "$CLAUDE" -p --output-format json --dangerously-skip-permissions go >/dev/null)
}
session unrouted --no-route
session routed ""

median() { # file, scale divisor
	sort -n "$1" | awk -v d="$2" '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/d}'
}
echo "Claude Code $("$CLAUDE" --version 2>/dev/null | head -1), $n calls of \`true\` per session; medians, ms"
printf '| | pre-tool-use hook | Bash tool (Claude duration_ms) | post-tool-use hook |\n|---|---:|---:|---:|\n'
for mode in unrouted routed; do
	printf '| %s | %s | %s | %s |\n' "$mode" "$(median "$dir/times/$mode-pre-tool-use" 1000)" \
		"$(median "$dir/times/$mode-tool" 1)" "$(median "$dir/times/$mode-post-tool-use" 1000)"
done
# The quarantine's own start-up, outside any host, for comparison.
for _ in $(seq "$n"); do
	t0=$(date +%s%N)
	(cd "$dir/project" && "$AIRLOCK" run --routed claude --state-dir "$dir/state" -- bash -c true)
	echo $((($(date +%s%N) - t0) / 1000)) >>"$dir/times/bare-run"
	t0=$(date +%s%N)
	bash -c true
	echo $((($(date +%s%N) - t0) / 1000)) >>"$dir/times/bare-bash"
done
echo
echo "outside the host: \`airlock run --routed claude -- bash -c true\` $(median "$dir/times/bare-run" 1000) ms, \`bash -c true\` $(median "$dir/times/bare-bash" 1000) ms"

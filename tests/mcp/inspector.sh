#!/bin/sh
# The MCP Inspector's CLI mode (@modelcontextprotocol/inspector --cli,
# pinned in tests/mcp/versions.txt) against `airlock mcp`: tools/list,
# tools/call, resources/list; TAP on stdout.
# usage: tests/mcp/inspector.sh BUILD_MCP_DIR   (AIRLOCK: the binary)
set -u
dir=$1
: "${AIRLOCK:?set AIRLOCK to the airlock binary}"
PATH="$dir/node/node_modules/.bin:$PATH"
export PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-mcp-inspector.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/work"
cd "$tmp/work" || exit 1
n=0
failed=0
# check NAME JQ-FILTER INSPECTOR-ARGS...: the inspector's JSON passes the filter
check() {
	name=$1
	filter=$2
	shift 2
	n=$((n + 1))
	if out=$(timeout 120 "$dir/node_modules/.bin/mcp-inspector" --cli "$AIRLOCK" mcp \
		--state-dir "$tmp/state" --workspace "$tmp/work" "$@" 2>"$tmp/err") &&
		printf '%s' "$out" | jq -e "$filter" >/dev/null; then
		echo "ok $n $name"
	else
		echo "not ok $n $name"
		printf '%s\n' "$out" | head -20 | sed 's/^/# /'
		head -20 "$tmp/err" | sed 's/^/# /'
		failed=1
	fi
}
# refused NAME INSPECTOR-ARGS...: the inspector reports an error
refused() {
	name=$1
	shift
	n=$((n + 1))
	if timeout 120 "$dir/node_modules/.bin/mcp-inspector" --cli "$AIRLOCK" mcp \
		--state-dir "$tmp/state" "$@" >"$tmp/out" 2>&1; then
		echo "not ok $n $name"
		head -20 "$tmp/out" | sed 's/^/# /'
		failed=1
	else
		echo "ok $n $name"
	fi
}
echo 1..6
check "tools/list: ten tools with input and output schemas" \
	'[.tools[] | select(.inputSchema.type == "object" and .outputSchema.type == "object")] | length == 10' \
	--method tools/list
check "tools/call run: the receipt, exit 0, the output" \
	'.isError == false and .structuredContent.exit_code == 0 and .structuredContent.stdout == "hi\n" and .structuredContent.receipt == 1' \
	--method tools/call --tool-name run --tool-arg 'argv=["echo","hi"]'
check "tools/call classify" '.structuredContent.risk == 1' \
	--method tools/call --tool-name classify --tool-arg 'argv=["ls"]'
check "tools/call show_receipt of the run" '.structuredContent.receipt.argv == ["echo","hi"]' \
	--method tools/call --tool-name show_receipt --tool-arg id=1
check "resources/list: the receipt's URI" '[.resources[].uri] | index("airlock://receipt/1") != null' \
	--method resources/list
refused "tools/call of an unknown tool is an error" --method tools/call --tool-name no_such_tool
exit $failed

#!/bin/sh
# The MCP client suites: installs the pinned clients (tests/mcp/versions.txt,
# once, into build-mcp/) and drives $AIRLOCK (default build-gcc/airlock) with
# the official TypeScript SDK (sdk.cjs), the MCP Inspector's CLI mode
# (inspector.sh) and the conformance suite (conformance.sh), each printing
# TAP. Exits non-zero when one fails.
# usage: tests/mcp/run.sh [BUILD_MCP_DIR]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$top/build-mcp}
"$top/tests/mcp/install.sh" "$dir" || exit 1
PATH="$dir/node/node_modules/.bin:$dir/node_modules/.bin:$PATH"
AIRLOCK=${AIRLOCK:-$top/build-gcc/airlock}
export PATH AIRLOCK
status=0
for suite in sdk inspector conformance; do
	echo "# $suite"
	case $suite in
	sdk) timeout -k 10 300 node "$top/tests/mcp/sdk.cjs" "$dir" ;;
	*) [ -f "$top/tests/mcp/$suite.sh" ] || continue
		timeout -k 10 600 sh "$top/tests/mcp/$suite.sh" "$dir" ;;
	esac || status=1
done
exit $status

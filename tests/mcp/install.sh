#!/bin/sh
# Installs the pinned MCP clients (tests/mcp/versions.txt) from the npm
# registry into DIR (default: build-mcp/ at the top of the tree), never into
# the sources: node@22 into DIR/node, the rest into DIR/node_modules. A
# package that cannot be installed fails the run.
# usage: tests/mcp/install.sh [DIR]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$top/build-mcp}
pins=$(grep -v '^#' "$top/tests/mcp/versions.txt" | grep .)
mkdir -p "$dir"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
	exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm is missing" >&2; exit 1; }
node_pin=$(printf '%s\n' "$pins" | grep '^node@')
rm -rf "$dir/node" "$dir/node_modules" "$dir/package.json" "$dir/package-lock.json"
echo "installing $node_pin" >&2
npm install --prefix "$dir/node" --no-audit --no-fund --no-update-notifier \
	--loglevel=error "$node_pin" >&2 || { echo "install.sh: cannot install $node_pin" >&2; exit 1; }
PATH="$dir/node/node_modules/.bin:$PATH"
export PATH
[ "$(node -p 'process.versions.node')" = "${node_pin#node@}" ] ||
	{ echo "install.sh: node is $(node -p 'process.versions.node'), not ${node_pin#node@}" >&2; exit 1; }
rest=$(printf '%s\n' "$pins" | grep -v '^node@')
# shellcheck disable=SC2086 # one word per package
npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier --loglevel=error $rest >&2 ||
	{ echo "install.sh: cannot install the MCP clients" >&2; exit 1; }
for pkg in $rest; do
	name=${pkg%@*}
	ver=$(node -p "require('$dir/node_modules/$name/package.json').version")
	[ "$ver" = "${pkg##*@}" ] || { echo "install.sh: $name is $ver, not ${pkg##*@}" >&2; exit 1; }
done
printf '%s\n' "$pins" >"$stamp"

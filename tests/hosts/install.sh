#!/bin/sh
# Installs the pinned host programs (tests/hosts/versions.txt) from the npm
# registry into DIR (default: build-hosts/ at the top of the tree), never
# into the sources. A package that cannot be installed fails the run: the
# live tests are not skipped for a missing host.
# usage: tests/hosts/install.sh [DIR]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$top/build-hosts}
pins=$(grep -v '^#' "$top/tests/hosts/versions.txt" | grep .)
mkdir -p "$dir"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
	exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm is missing" >&2; exit 1; }
# Gemini CLI needs node 20 or later (its package.json "engines"); Debian 12
# ships 18. Then node itself comes from the npm registry (the `node` package
# carries the binary) into DIR/node, which the suites put first on PATH.
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
	echo "node $major is too old for the hosts: installing node@22 into $dir/node" >&2
	rm -rf "$dir/node"
	npm install --prefix "$dir/node" --no-audit --no-fund --no-update-notifier \
		--loglevel=error node@22 >&2 || { echo "install.sh: cannot install node@22" >&2; exit 1; }
	PATH="$dir/node/node_modules/.bin:$PATH"
	export PATH
	major=$(node -p 'process.versions.node.split(".")[0]')
	[ "$major" -ge 20 ] || { echo "install.sh: node $major is still too old" >&2; exit 1; }
fi
# Each host gets its own prefix: their dependency trees are independent.
for pkg in $pins; do
	name=${pkg%@*}
	sub=$(printf '%s' "$name" | tr '@/' '_-')
	rm -rf "${dir:?}/$sub"
	mkdir -p "$dir/$sub"
	echo "installing $pkg" >&2
	npm install --prefix "$dir/$sub" --no-audit --no-fund --no-update-notifier \
		--loglevel=error "$pkg" >&2 || { echo "install.sh: cannot install $pkg" >&2; exit 1; }
	ver=$(node -p "require('$dir/$sub/node_modules/$name/package.json').version")
	[ "$ver" = "${pkg##*@}" ] || { echo "install.sh: $name is $ver, not ${pkg##*@}" >&2; exit 1; }
done
printf '%s\n' "$pins" >"$stamp"

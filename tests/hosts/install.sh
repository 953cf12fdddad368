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
# Gemini CLI needs node 20 or later (its package.json "engines").
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "install.sh: node $major is too old; the hosts need 20 or later" >&2; exit 1; }
# Each host gets its own prefix: their dependency trees are independent.
for pkg in $pins; do
	name=${pkg%@*}
	sub=$(printf '%s' "$name" | tr '@/' '_-')
	rm -rf "$dir/$sub"
	mkdir -p "$dir/$sub"
	echo "installing $pkg" >&2
	npm install --prefix "$dir/$sub" --no-audit --no-fund --no-update-notifier \
		--loglevel=error "$pkg" >&2 || { echo "install.sh: cannot install $pkg" >&2; exit 1; }
	ver=$(node -p "require('$dir/$sub/node_modules/$name/package.json').version")
	[ "$ver" = "${pkg##*@}" ] || { echo "install.sh: $name is $ver, not ${pkg##*@}" >&2; exit 1; }
done
printf '%s\n' "$pins" >"$stamp"

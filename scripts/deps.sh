#!/bin/sh
# Installs the Debian 12 packages airlock needs to build and test, if any are
# missing. Uses sudo when not run as root.
set -eu

packages="meson ninja-build pkg-config gcc clang libclang-rt-14-dev libjansson-dev libssl-dev
libseccomp-dev jq bats time python3 python3-jsonschema util-linux procps attr acl strace git cmake
clang-format clang-tidy shellcheck golang-go golang-golang-x-mod-dev
debhelper dpkg-dev lintian zsh
libmicrohttpd-dev libcurl4-openssl-dev curl chromium
libpq-dev postgresql
libhttp-parser-dev
openssl"
[ "${1:-}" = "--bench" ] && packages="$packages hyperfine bubblewrap firejail bc"
# The live host tests install the hosts with npm (tests/hosts/install.sh);
# a node that came from elsewhere (NodeSource, nvm) is kept.
command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm"

missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null

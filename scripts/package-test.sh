#!/bin/sh
# Builds the Debian package from a copy of this tree (dpkg-buildpackage -us
# -uc -b under build-deb/, nothing written beside the sources), checks it
# with lintian (no error, warning or info that debian/airlock.lintian-overrides
# does not justify) and for set-user-ID bits, runs the binary unpacked into a
# fresh directory tree, then installs it on this machine: airlock doctor,
# the demo, policy check of /etc/airlock/policy.json, the completion, then
# remove (the conffile stays) and purge (nothing is left). As root; prints
# "package: ok" at the end. BUILD_DEB=DIR puts the output elsewhere.
set -eu
cd "$(dirname "$0")/.."
src=$PWD
out=${BUILD_DEB:-$PWD/build-deb}
deb=$out/airlock_$(sed -n '1s/^airlock (\(.*\)).*/\1/p' debian/changelog)_$(dpkg --print-architecture).deb

fail() {
	echo "package: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || fail "run as root (it installs and purges the package)"
for tool in dpkg-buildpackage dh lintian; do
	command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done
# A package this script did not install is the user's: leave it alone.
if dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q 'ok installed'; then
	fail "an airlock package is installed already; purge it first (dpkg -P airlock)"
fi

rm -rf "$out"
mkdir -p "$out/src"
# The tree as it is (committed or not), without build output or git.
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$out/src" -xf -
echo "== dpkg-buildpackage -us -uc -b (log: $out/build.log)"
(cd "$out/src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log"; fail "dpkg-buildpackage failed"; }
[ -f "$deb" ] || fail "no $deb"

echo "== lintian"
# Every tag left is an error, a warning or an info not overridden (an
# override no longer needed is one too: unused-override).
status=0
lintian --display-info --fail-on error,warning,info "$deb" >"$out/lintian.log" 2>&1 || status=$?
cat "$out/lintian.log"
if [ "$status" -ne 0 ] || grep -E '^[EWI]: ' "$out/lintian.log"; then
	fail "lintian (exit $status) reports tags that debian/airlock.lintian-overrides does not justify"
fi

echo "== contents"
dpkg-deb -c "$deb" >"$out/contents"
if awk '$1 ~ /[sS]/' "$out/contents" | grep .; then
	fail "a set-user-ID or set-group-ID file in the package"
fi
for path in ./usr/bin/airlock ./etc/airlock/policy.json ./usr/share/man/man1/airlock.1.gz \
	./usr/share/bash-completion/completions/airlock ./usr/share/zsh/vendor-completions/_airlock; do
	grep -q " $path\$" "$out/contents" || fail "$path is not in the package"
done
dpkg-deb -f "$deb" Depends | grep -q libssl3 || fail "Depends lacks libssl3 (ed25519.c loads it)"
dpkg-deb -f "$deb" Built-Using | grep -q "^libseccomp (= " || fail "Built-Using does not name libseccomp"

# Every run below keeps its state under $out and works in a scratch workspace.
work=$(mktemp -d)
installed=""
cleanup() {
	[ -z "$installed" ] || dpkg -P airlock >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/ws"
export XDG_STATE_HOME="$out/state"

echo "== unpacked into $out/root"
dpkg -x "$deb" "$out/root"
unpacked=$out/root/usr/bin/airlock
"$unpacked" --version | tee "$out/version"
grep -q 'test hooks' "$out/version" && fail "the packaged airlock has test hooks"
(cd "$work/ws" && "$unpacked" doctor) || fail "airlock doctor failed (unpacked)"

echo "== dpkg -i"
etc_before=$(ls -A /etc/airlock 2>/dev/null || true)
installed=yes
dpkg -i "$deb" || fail "dpkg -i failed"
(cd "$work/ws" && airlock doctor) || fail "airlock doctor failed (installed)"
airlock policy check /etc/airlock/policy.json || fail "/etc/airlock/policy.json is not the built-in policy"
# The installed completion completes a command from the installed binary.
words=$(bash -c '. /usr/share/bash-completion/completions/airlock
	COMP_WORDS=(airlock perm); COMP_CWORD=1; _airlock; echo "${COMPREPLY[*]}"')
[ "$words" = permit ] || fail "bash completion of 'airlock perm' gave '$words'"
if command -v man >/dev/null; then
	man -l /usr/share/man/man1/airlock.1.gz >/dev/null 2>"$out/man.log" || fail "man airlock failed"
	[ ! -s "$out/man.log" ] || { cat "$out/man.log"; fail "man airlock warns"; }
fi

echo "== scripts/demo.sh with the installed airlock"
AIRLOCK=/usr/bin/airlock sh scripts/demo.sh >"$out/demo.log" 2>&1 || { cat "$out/demo.log"; fail "the demo failed"; }
tail -5 "$out/demo.log"

echo "== dpkg -r, dpkg -P"
dpkg -r airlock || fail "dpkg -r failed"
[ ! -e /usr/bin/airlock ] || fail "/usr/bin/airlock is left after dpkg -r"
[ -f /etc/airlock/policy.json ] || fail "dpkg -r removed the conffile /etc/airlock/policy.json"
dpkg -P airlock || fail "dpkg -P failed"
installed=""
# Only what was there before (the system approver, approver.json, which
# purge keeps: README.Debian says why) may be left in /etc/airlock.
[ "$(ls -A /etc/airlock 2>/dev/null)" = "$etc_before" ] || fail "/etc/airlock after dpkg -P: $(ls -A /etc/airlock)"
[ -n "$etc_before" ] || [ ! -e /etc/airlock ] || fail "/etc/airlock is left after dpkg -P"
# Nothing of the package is left: no file of it, no directory of its own.
awk '$1 !~ /^d/ || $6 ~ /airlock\/$/ { sub(/^\./, "", $6); print $6 }' "$out/contents" >"$out/paths"
while read -r path; do
	[ ! -e "$path" ] || fail "$path is left after dpkg -P"
done <"$out/paths"
if dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q 'ok installed\|config-files'; then
	fail "dpkg still knows airlock after purge"
fi
echo "package: ok"

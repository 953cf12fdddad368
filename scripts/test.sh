#!/bin/sh
# Builds airlock three ways and runs every test: gcc (warnings as errors),
# clang (warnings as errors), and gcc with ASan+UBSan. As root, the CLI
# suites also run as an unprivileged user. Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 1
scripts/deps.sh

failed_builds=0
# Build logs stay under build-logs/, never beside the sources.
mkdir -p build-logs
build() { # dir, meson options...
	dir=$1
	shift
	log=build-logs/$dir
	if [ ! -d "$dir" ]; then
		meson setup "$dir" -Dwerror=true "$@" >"$log.setup.log" 2>&1 || { cat "$log.setup.log"; return 1; }
	fi
	meson compile -C "$dir" >"$log.compile.log" 2>&1 || { cat "$log.compile.log"; return 1; }
}

scripts/check-layers.sh || failed_builds=$((failed_builds + 1))
# Style, enforced: clang-format (.clang-format), shellcheck on every script;
# clang-tidy (.clang-tidy) below, once build-clang has its compile commands.
scripts/check-format.sh || failed_builds=$((failed_builds + 1))
scripts/check-shell.sh || failed_builds=$((failed_builds + 1))
# The tested builds have the fault points (-Dtest_hooks); build-release,
# what a user builds, has none, and a test checks that it ignores them.
build build-gcc --buildtype=release -Dtest_hooks=true || failed_builds=$((failed_builds + 1))
CC=clang build build-clang -Dtest_hooks=true || failed_builds=$((failed_builds + 1))
scripts/check-tidy.sh || failed_builds=$((failed_builds + 1))
build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dtest_hooks=true || failed_builds=$((failed_builds + 1))
build build-release --buildtype=release || failed_builds=$((failed_builds + 1))
export AIRLOCK_RELEASE="$PWD/build-release/airlock"

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1

# The passes after the builds run in two lanes at once: most of a CLI suite's
# time is spent waiting (timeouts, fsync, namespaces being set up and torn
# down), so two lanes on two cores finish in little more than the longer one.
# Every test makes its own state and work directories, so lanes share nothing
# but the machine, and, as root, the host paths tests/cli/secrets.bats plants
# in /etc and /root for a moment: the other lane's runs hide them, and must
# not fail when they go (sandbox: isolate_hide). Each lane writes its output to build-logs/lane-N.log and
# the number of its failed steps (not tests) to build-logs/lane-N.failed.
unprivileged_log=build-gcc/unprivileged.tap
pty_log=build-gcc/pty.tap
hosts_log=build-gcc/hosts.tap
mcp_log=build-gcc/mcp.tap

# The CLI suites again as nobody, when this tree is reachable for it.
unprivileged_pass() {
	: >"$unprivileged_log"
	if [ "$(id -u)" -eq 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups \
		test -x "$PWD/build-gcc/airlock" 2>/dev/null; then
		for suite in tests/cli/*.bats; do
			env HOME=/tmp AIRLOCK="$PWD/build-gcc/airlock" AIRLOCK_PROBE="$PWD/build-gcc/tests/probe" setpriv --reuid=65534 --regid=65534 \
				--clear-groups timeout -k 10 900 bats --tap "$suite" >>"$unprivileged_log" 2>&1
			# A suite that hung is a failure, not a short count.
			case $? in 124 | 137) echo "not ok 0 $suite timed out as nobody" >>"$unprivileged_log" ;; esac
		done
		grep '^not ok' -A4 "$unprivileged_log" || true
	elif [ "$(id -u)" -eq 0 ]; then
		echo "note: $PWD is not reachable by uid 65534; the unprivileged pass is skipped"
	fi
}

# The containment suite once more with a terminal: airlock's own stdio on a
# pty, as when an agent's shell runs it; as root and, like the pipe passes
# above, as nobody.
pty_pass() { # command prefix...
	"$@" env AIRLOCK="$PWD/build-gcc/airlock" AIRLOCK_PROBE="$PWD/build-gcc/tests/probe" \
		script -qec "timeout -k 10 900 bats --tap tests/cli/containment.bats" /dev/null </dev/null |
		tr -d '\r' >"$pty_log.part"
	grep '^not ok' -A4 "$pty_log.part" || true
	grep -q '^1\.\.' "$pty_log.part" || { echo "a pty pass did not run: $*"; return 1; }
	cat "$pty_log.part" >>"$pty_log"
	rm -f "$pty_log.part"
}
pty_passes() {
	: >"$pty_log"
	command -v script >/dev/null || return 0
	status=0
	pty_pass || status=1
	if [ "$(id -u)" -eq 0 ] && [ -s "$unprivileged_log" ]; then
		pty_pass setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp || status=1
	fi
	return $status
}

# The real agent hosts (tests/hosts/versions.txt), installed from the npm
# registry and driven by a scripted model on loopback: as root only (a few
# minutes; the hosts' own start-up is most of it). A host that cannot be
# installed is a failure, not a skip.
hosts_pass() {
	: >"$hosts_log"
	if ! tests/hosts/install.sh "$PWD/build-hosts" >build-logs/hosts-install.log 2>&1; then
		cat build-logs/hosts-install.log
		echo "the agent hosts could not be installed (tests/hosts/install.sh)"
		return 1
	fi
	env AIRLOCK="$PWD/build-gcc/airlock" AIRLOCK_HOSTS="$PWD/build-hosts" \
		timeout -k 10 1200 bats --tap tests/hosts/live.bats </dev/null >"$hosts_log" 2>&1
	case $? in 124 | 137) echo "not ok 0 the live host suite timed out" >>"$hosts_log" ;; esac
	grep '^not ok' -A6 "$hosts_log" || true
	grep -q '^1\.\.' "$hosts_log" || { echo "the live host suite did not run"; return 1; }
}

# The MCP clients (tests/mcp/versions.txt: the TypeScript SDK, the
# Inspector's CLI, the conformance suite over supergateway), installed from
# the npm registry with Node 22, against build-gcc/airlock mcp: as root (a
# minute, mostly node's start-up). A client that cannot be installed is a
# failure, not a skip.
mcp_pass() {
	: >"$mcp_log"
	env AIRLOCK="$PWD/build-gcc/airlock" timeout -k 10 900 tests/mcp/run.sh "$PWD/build-mcp" \
		</dev/null >"$mcp_log" 2>&1
	status=$?
	grep '^not ok' -A6 "$mcp_log" || true
	grep -q '^1\.\.' "$mcp_log" || { echo "the MCP client suites did not run"; return 1; }
	return $status
}

lane() { # N step...: runs each step, counting the steps that failed
	n=$1
	shift
	failures=0
	for step in "$@"; do
		echo "== $step"
		$step || failures=$((failures + 1))
	done >"build-logs/lane-$n.log" 2>&1
	echo "$failures" >"build-logs/lane-$n.failed"
}
gcc_tests() { meson test -C build-gcc --print-errorlogs --num-processes 2 || true; }
clang_tests() { meson test -C build-clang --suite unit --suite fuzz --print-errorlogs || true; }
asan_tests() { meson test -C build-asan --print-errorlogs --num-processes 2 || true; }
# A short real fuzzing run of every parser (clang libFuzzer).
fuzz_pass() { scripts/fuzz.sh 20; }
# The Debian package: built from a copy under build-deb/, lintian, installed,
# doctor and the demo, removed and purged (scripts/package-test.sh); root only.
package_pass() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "note: not root; the package test is skipped"
		return 0
	fi
	timeout -k 10 900 scripts/package-test.sh
}

rm -f build-logs/lane-*.failed
lane 1 gcc_tests unprivileged_pass pty_passes hosts_pass &
lane 2 clang_tests asan_tests fuzz_pass mcp_pass &
wait
# After both: installing the package creates /etc/airlock, which every run
# then counts among the state directories (a workspace's refusal names it
# first), so no other test may run while it is installed.
lane 3 package_pass
for n in 1 2 3; do
	cat "build-logs/lane-$n.log"
	lane_failed=$(cat "build-logs/lane-$n.failed" 2>/dev/null || echo 1)
	failed_builds=$((failed_builds + lane_failed))
done

# Totals over every TAP line the runs produced.
count() { # pattern
	{
		for log in build-gcc build-clang build-asan; do
			jq -r '.stdout // ""' "$log/meson-logs/testlog.json" 2>/dev/null
		done
		cat "$unprivileged_log" "$pty_log" "$hosts_log" "$mcp_log"
	} | grep -cE "$1"
}
passed=$(count '^ok ')
failed=$(count '^not ok ')
failed=$((failed + failed_builds))
for log in build-gcc build-clang build-asan; do
	# a test binary that crashed before printing its plan counts as a failure
	n=$(jq -r 'select(.result != "OK" and .result != "SKIP") | .name' \
		"$log/meson-logs/testlog.json" 2>/dev/null | grep -c .)
	failed=$((failed + n))
done
# What failed, with the diagnostics bats printed for it, last, where a
# reader of only the end of this output still sees why.
for log in build-gcc build-clang build-asan; do
	jq -r '.stdout // ""' "$log/meson-logs/testlog.json" 2>/dev/null |
		awk -v lane="$log" '/^not ok /{p=1; print lane ": " $0; next} p && /^#/{print; next} {p=0}' |
		head -c 6000
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bats
# Pathname Unix sockets outside the workspace and the private /tmp are out
# of reach (docs/sandbox.md, "Unix sockets"). A listener on the host, in a
# directory the quarantine sees read-only, logs whatever reaches it; every
# attack must leave its log empty and a denial in the receipt. The suite runs
# as root and as uid 65534.
load helpers

setup() {
	setup_dirs
	# The state directory lies beside the test dir, which is the workspace of
	# most tests here: a workspace holding a state directory is refused.
	# shellcheck disable=SC2153 # TEST_DIR: set by helpers.bash
	export AIRLOCK_STATE_DIR="$TEST_DIR.state"
	# Outside the workspace and outside /tmp (which the quarantine replaces).
	HOST_DIR=$(mktemp -d /var/tmp/airlock-sock.XXXXXX)
	chmod 755 "$HOST_DIR"
	PY=/usr/bin/python3
	SP="$TEST_DIR/sockprobe.py"
	cp "$BATS_TEST_DIRNAME/../helpers/sockprobe.py" "$SP"
	PROBE="$TEST_DIR/probe"
	cp "$AIRLOCK_PROBE" "$PROBE"
	LISTENERS=()
	WDIR=
}

teardown() {
	for pid in "${LISTENERS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	rm -rf "$HOST_DIR" "$TEST_DIR.policy.json"
	[ -z "$WDIR" ] || rm -rf "$WDIR"
	chmod -R u+rwX "$TEST_DIR" "$AIRLOCK_STATE_DIR" 2>/dev/null || true
	rm -rf "$TEST_DIR" "$AIRLOCK_STATE_DIR"
}

# listen KIND PATH: a host listener logging to PATH.log
listen() {
	rm -f "$2.log.ready"
	"$PY" "$SP" listen "$1" "$2" "$2.log" >/dev/null 2>&1 &
	LISTENERS+=($!)
	for _ in $(seq 100); do
		[ -e "$2.log.ready" ] && return 0
		sleep 0.05
	done
	echo "listener on $2 did not start" >&2
	return 1
}

# Nothing reached the host listener at PATH.
untouched() {
	sleep 0.1
	if [ -s "$1.log" ]; then
		echo "the host listener received: $(cat "$1.log")" >&2
		return 1
	fi
}

# The receipt records a refused connect to PATH.
socket_denied() {
	rq --arg p "$1" '.sandbox.socket_denials | map(select(.path == $p)) | length' | grep -qx 1
}

# The receipt records a refused syscall NAME.
syscall_denied() {
	rq ".sandbox.denials | map(.syscall) | index(\"$1\") != null" | grep -qx true
}

inside() {
	al run --workspace "$TEST_DIR" -- "$@"
}

@test "connect to a host socket by its absolute path: refused and recorded" {
	listen stream "$HOST_DIR/host.sock"
	# the host itself can reach it
	[ "$("$PY" "$SP" connect "$HOST_DIR/host.sock")" = ok ]
	sleep 0.1
	: > "$HOST_DIR/host.sock.log"
	inside "$PY" "$SP" connect "$HOST_DIR/host.sock"
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = "err:EACCES" ]
	untouched "$HOST_DIR/host.sock"
	socket_denied "$HOST_DIR/host.sock"
	[ "$(rq .sandbox.socket_denials_dropped)" -eq 0 ]
	[ "$(rq .sandbox.enforced.unix_sockets)" = supervisor ] ||
		[ "$(rq .sandbox.enforced.landlock.abi)" -ge 9 ]
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$(receipt)"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "connect by a relative path from a host directory: refused" {
	listen stream "$HOST_DIR/host.sock"
	inside "$PY" "$SP" connect_rel "$HOST_DIR" host.sock
	[ "$(rq .stdout)" = "err:EACCES" ]
	untouched "$HOST_DIR/host.sock"
	socket_denied "$HOST_DIR/host.sock"
}

@test "connect through a symlink in the workspace to a host socket: refused" {
	listen stream "$HOST_DIR/host.sock"
	ln -s "$HOST_DIR/host.sock" "$TEST_DIR/link.sock"
	inside "$PY" "$SP" connect "$TEST_DIR/link.sock"
	[ "$(rq .stdout)" = "err:EACCES" ]
	untouched "$HOST_DIR/host.sock"
	socket_denied "$TEST_DIR/link.sock"
}

@test "connect through /proc/self/root and /proc/self/fd: refused" {
	listen stream "$HOST_DIR/host.sock"
	inside "$PY" "$SP" connect "/proc/self/root$HOST_DIR/host.sock"
	[ "$(rq .stdout)" = "err:EACCES" ]
	socket_denied "/proc/self/root$HOST_DIR/host.sock"
	inside "$PY" "$SP" connect "/proc/1/root$HOST_DIR/host.sock"
	[ "$(rq .stdout)" = "err:EACCES" ]
	inside "$PY" "$SP" opath "$HOST_DIR/host.sock"
	[ "$(rq .stdout)" = "err:EACCES" ]
	rq '.sandbox.socket_denials[0].path' | grep -q '^/proc/self/fd/[0-9]*$'
	# the same through /dev/fd, a link to /proc/self/fd
	inside sh -c "exec 7<'$HOST_DIR'; exec '$PY' '$SP' connect /dev/fd/7/host.sock"
	[ "$(rq .stdout)" = "err:EACCES" ]
	socket_denied /dev/fd/7/host.sock
	untouched "$HOST_DIR/host.sock"
}

@test "a thread swapping the address during connect never reaches the host" {
	listen stream "$HOST_DIR/host.sock"
	listen stream "$TEST_DIR/ok.sock"
	inside "$PROBE" unix_race "$TEST_DIR/ok.sock" "$HOST_DIR/host.sock"
	[ "$status" -eq 0 ] || { echo "$(rq .stdout)"; return 1; }
	[[ "$(rq .stdout)" == blocked:* ]]
	untouched "$HOST_DIR/host.sock"
	socket_denied "$HOST_DIR/host.sock"
}

@test "datagrams: AF_UNIX datagram sockets are refused, so no sendto reaches a host socket" {
	listen dgram "$HOST_DIR/dgram.sock"
	inside "$PY" "$SP" dgram "$HOST_DIR/dgram.sock"
	[ "$(rq .stdout)" = "err:EPERM" ]
	syscall_denied socket
	inside "$PY" "$SP" raw
	[ "$(rq .stdout)" = "err:EPERM" ]
	inside "$PY" "$SP" pair "$HOST_DIR/dgram.sock"
	[ "$(rq .stdout)" = "err:EPERM" ]
	syscall_denied socketpair
	untouched "$HOST_DIR/dgram.sock"
}

@test "sendto with an address on stream and seqpacket sockets never reaches the address" {
	listen dgram "$HOST_DIR/dgram.sock"
	listen stream "$HOST_DIR/host.sock"
	inside "$PY" "$SP" seqpacket_sendto "$HOST_DIR/dgram.sock"
	[ "$(rq .stdout)" = ok ] # delivered to the connected peer, not the address
	inside "$PY" "$SP" stream_sendto "$HOST_DIR/host.sock"
	[ "$(rq .stdout)" = "err:EISCONN" ]
	untouched "$HOST_DIR/dgram.sock"
	untouched "$HOST_DIR/host.sock"
}

@test "allowed: servers and clients inside the workspace and /tmp, stream and seqpacket" {
	for kind in stream seqpacket; do
		for dir in "$TEST_DIR" /tmp; do
			inside "$PY" "$SP" pair_inside "$kind" "$dir"
			[ "$status" -eq 0 ]
			[ "$(rq .stdout)" = ok ] || { echo "$kind in $dir: $(rq .stdout)"; return 1; }
		done
	done
	[ "$(rq '.sandbox.socket_denials | length')" -eq 0 ]
}

@test "allowed: a host listener inside the workspace, by absolute and relative path" {
	listen stream "$TEST_DIR/ok.sock"
	inside "$PY" "$SP" connect "$TEST_DIR/ok.sock"
	[ "$(rq .stdout)" = ok ]
	inside "$PY" "$SP" connect_rel "$WORK" ../ok.sock
	[ "$(rq .stdout)" = ok ]
	sleep 0.1
	[ "$(grep -c ESCAPED "$TEST_DIR/ok.sock.log")" -eq 2 ]
}

@test "a dry run refuses host sockets too" {
	listen stream "$HOST_DIR/host.sock"
	# the state directory may not lie in a dry run's workspace
	cp "$SP" "$WORK/sockprobe.py"
	run --separate-stderr "$AIRLOCK" dryrun --json -- "$PY" "$WORK/sockprobe.py" connect "$HOST_DIR/host.sock"
	[ "$(jq -r .stdout <<<"$output")" = "err:EACCES" ]
	jq -r --arg p "$HOST_DIR/host.sock" '.sandbox.socket_denials | map(select(.path == $p)) | length' <<<"$output" | grep -qx 1
	untouched "$HOST_DIR/host.sock"
}

@test "abstract names: the quarantine's own work; the host's are refused with --net host" {
	inside "$PY" "$SP" abstract_inside "airlock-test-$$"
	[ "$(rq .stdout)" = ok ]
	listen stream "@airlock-test-host-$$"
	al run --net host --workspace "$TEST_DIR" -- "$PY" "$SP" abstract "airlock-test-host-$$"
	[ "$(rq .stdout)" = "err:EPERM" ]
	socket_denied "@airlock-test-host-$$"
	# without --net host the host's abstract names are not even there
	inside "$PY" "$SP" abstract "airlock-test-host-$$"
	[ "$(rq .stdout)" = "err:ECONNREFUSED" ]
	untouched "@airlock-test-host-$$"
}

@test "allowed: TCP on the quarantine's loopback, blocking and nonblocking" {
	inside "$PY" "$SP" tcp
	[ "$(rq .stdout)" = ok ]
	inside "$PY" "$SP" tcp_nonblock
	[ "$(rq .stdout)" = ok ]
}

@test "a nonblocking connect to a full backlog fails with EAGAIN, as without airlock" {
	inside "$PY" "$SP" full_nonblock /tmp
	[ "$(rq .stdout)" = "err:EAGAIN" ]
}

@test "a blocking connect to a full backlog does not stall the timeout" {
	local start end
	start=$(date +%s%N)
	al run --timeout 2 --workspace "$TEST_DIR" -- "$PY" "$SP" full_block /tmp
	end=$(date +%s%N)
	[ "$(rq .status)" = timeout ] || [ "$(rq .sandbox.killed_by)" = timeout ]
	[ $(((end - start) / 1000000)) -lt 9000 ]
	[[ "$(rq .stdout)" == connecting* ]]
}

@test "connect from a thread other than the main one: allowed sockets work, host ones are refused and recorded" {
	listen stream "$TEST_DIR/ok.sock"
	listen stream "$HOST_DIR/host.sock"
	inside "$PROBE" connect_thread "$TEST_DIR/ok.sock"
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = ok ] || { echo "thread connect: $(rq .stdout)"; return 1; }
	sleep 0.1
	grep -q 'from a thread' "$TEST_DIR/ok.sock.log"
	inside "$PROBE" connect_thread "$HOST_DIR/host.sock"
	[ "$(rq .stdout)" = "err:EACCES" ] || { echo "thread connect: $(rq .stdout)"; return 1; }
	untouched "$HOST_DIR/host.sock"
	socket_denied "$HOST_DIR/host.sock"
}

@test "a socket in a sandbox.writable directory below /tmp is refused like any outside the workspace" {
	# below the host's /tmp, beside (not inside) the workspace
	WDIR=$(mktemp -d /tmp/airlock-wsock.XXXXXX)
	chmod 755 "$WDIR"
	printf '{"schema": "airlock.policy/1", "sandbox": {"writable": ["%s"]}}' "$WDIR" > "$TEST_DIR.policy.json"
	approve_policy "$TEST_DIR.policy.json"
	listen stream "$WDIR/w.sock"
	al run --policy "$TEST_DIR.policy.json" --workspace "$TEST_DIR" -- "$PY" "$SP" connect "$WDIR/w.sock"
	[ "$(rq '.sandbox.enforced.writable | length')" -eq 1 ] || { rq .error; return 1; }
	[ "$(rq .stdout)" = "err:EACCES" ] || { echo "connect: $(rq .stdout)"; return 1; }
	untouched "$WDIR/w.sock"
	socket_denied "$WDIR/w.sock"
}

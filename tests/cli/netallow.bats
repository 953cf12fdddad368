#!/usr/bin/env bats
# sandbox.net's allowlist form (docs/network.md, issue 25). The policy form
# parses, widens by its allow patterns (the approver's rule), shows in
# `airlock doctor`, and, until the proxy exists, refuses the run: closed,
# never open.
load helpers

allowlist() { # allow-json [deny-json]
	printf '{"schema":"airlock.policy/1","sandbox":{"net":{"allow":%s,"deny":%s}}}' \
		"$1" "${2:-[]}" >"$TEST_DIR/net.json"
}

@test "netallow: an allow pattern widens: the run is refused until approved, naming sandbox.net.allow" {
	allowlist '["registry.npmjs.org"]'
	al run --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 126 ]
	one_error_line "widens sandbox.net.allow"
	[ "$(rq .denied.value)" = "sandbox.net.allow" ]
	[ ! -e ran ]
	al policy check "$TEST_DIR/net.json"
	[ "$status" -eq 1 ]
	[[ "$output$stderr" == *"sandbox.net.allow"* ]]
}

@test "netallow: approved, the allowlist form runs (its proxy named on the receipt); a dry run too; --net host overrides" {
	allowlist '["registry.npmjs.org","*.debian.org:443"]' '["evil.debian.org"]'
	approve_policy "$TEST_DIR/net.json"
	al run --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	[ -e ran ]
	[ "$(rq .sandbox.network.mode)" = allowlist ]
	[ "$(rq -c .sandbox.network.allow)" = '["registry.npmjs.org","*.debian.org:443"]' ]
	[ "$(rq -c .sandbox.network.deny)" = '["evil.debian.org"]' ]
	# a dry run runs with it too (its verdict aside: not refused)
	al dryrun --policy "$TEST_DIR/net.json" -- true
	[ "$status" -ne 125 ] && [ "$status" -ne 126 ] || { echo "exit $status: $stderr"; return 1; }
	id=$(sed -n 's/^dry run \([0-9]*\):.*/\1/p' <<<"$output")
	[ "$(jq -r .sandbox.network.mode "$(receipt_file "$id")")" = allowlist ]
	# a person's --net host for this run is the host's network, as before
	al run --net host --policy "$TEST_DIR/net.json" -- touch ran2
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	[ -e ran2 ]
	[ "$(rq .sandbox.enforced.network)" = host ]
}

@test "netallow: the object form without allow patterns needs no approval; the run goes ahead with the proxy variables" {
	allowlist '[]' '["*.example.org"]'
	al run --policy "$TEST_DIR/net.json" -- sh -c 'touch ran; printenv HTTPS_PROXY'
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	[ -e ran ]
	[ "$(rq .stdout)" = http://127.0.0.1:3128 ]
	[ "$(rq .sandbox.network.mode)" = allowlist ]
}

@test "netallow: a bad pattern or key is invalid (exit 125), naming it" {
	while read -r needle allow deny; do
		allowlist "$allow" "$deny"
		al run --policy "$TEST_DIR/net.json" -- true
		[ "$status" -eq 125 ] || { echo "$allow $deny: exit $status $stderr"; return 1; }
		one_error_line "$needle"
	done <<'EOF2'
sandbox.net.allow[0] ["*"] []
sandbox.net.allow[1] ["example.org","*.com"] []
sandbox.net.allow[0] ["localhost"] []
sandbox.net.allow[0] ["0x7f.1"] []
sandbox.net.allow[0] ["example.org:0"] []
sandbox.net.deny[0] [] ["10.1.0.0/8"]
sandbox.net.deny[0] [] [1]
EOF2
	printf '{"schema":"airlock.policy/1","sandbox":{"net":{"allow":[],"ports":[443]}}}' >"$TEST_DIR/net.json"
	al run --policy "$TEST_DIR/net.json" -- true
	[ "$status" -eq 125 ]
	one_error_line "'sandbox.net.ports'"
}

@test "netallow: doctor shows the effective allowlist of the workspace's policy" {
	allowlist '["Registry.NPMjs.org","github.com:443","127.0.0.2"]' '["evil.debian.org"]'
	mkdir .airlock
	cp "$TEST_DIR/net.json" .airlock/policy.json
	run "$AIRLOCK" doctor
	[[ "$output" == *"  network  allowlist"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"allow registry.npmjs.org (ports 80, 443)"* ]]
	[[ "$output" == *"allow github.com:443"$'\n'* ]]
	[[ "$output" == *"allow 127.0.0.2 (ports 80, 443)"* ]]
	[[ "$output" == *"deny  evil.debian.org (every port)"* ]]
	[[ "$output" == *"a run reaches them through the proxy at 127.0.0.1:3128"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"denied by policy rule policy_widens"*"sandbox.net.allow"* ]]
	# the built-in policy: loopback, as before
	rm .airlock/policy.json
	run "$AIRLOCK" doctor
	[[ "$output" == *"  network  loopback"* ]]
	[[ "$output" != *"allowlist"* ]]
}

# ---------------------------------------------------------------------------
# The proxy at work (docs/network.md, "Test plan"): local servers on
# 127.0.0.2/3 (tests/helpers/net.sh), their names in a hosts file put over
# /etc/hosts for airlock only (tests/helpers/nethosts.sh), the test CA given
# to the command by the policy's env.set. As root and as nobody alike.

# shellcheck disable=SC1091 # tests/helpers/net.sh
source "$BATS_TEST_DIRNAME/../helpers/net.sh"

setup_file() {
	net_world_start "$BATS_FILE_TMPDIR/world"
}

teardown_file() {
	net_world_stop
}

# Each test starts with an empty server log.
setup() {
	setup_dirs
	: >"$NET_LOG"
}

# The receipt's list of connections (docs/network.md, "The receipt").
CONNS='.sandbox.network.connections'

# airlock in the test world: the hosts file over /etc/hosts.
aln() {
	run --separate-stderr "$NET_HELPERS/nethosts.sh" "$NET_HOSTS" "$AIRLOCK" "$@"
}

# An approved policy with these allow (and deny) patterns, the CA (copied
# into the workspace: the quarantine's /tmp is its own) given to every
# client the tests use (npm reads only its cafile setting: with
# NODE_EXTRA_CA_CERTS alone it fails SELF_SIGNED_CERT_IN_CHAIN), and curl, wget and pip off deny_argv0 (the
# clients an allowlist is for).
net_policy() { # allow-json [deny-json]
	cp "$NET_CA" "$WORK/.test-ca.pem"
	jq -n --argjson a "$1" --argjson d "${2:-[]}" --arg ca "$WORK/.test-ca.pem" \
		'{schema: "airlock.policy/1", sandbox: {net: {allow: $a, deny: $d}},
		  deny_argv0: ["sudo", "su", "doas", "ssh", "scp", "sftp", "dd", "mkfs", "reboot", "shutdown", "halt", "poweroff"],
		  env: {set: {SSL_CERT_FILE: $ca, CURL_CA_BUNDLE: $ca, GIT_SSL_CAINFO: $ca,
			NODE_EXTRA_CA_CERTS: $ca, PIP_CERT: $ca, npm_config_cafile: $ca}}}' >"$TEST_DIR/net.json"
	approve_policy "$TEST_DIR/net.json"
}

# The allowlist of the servers on 127.0.0.2: their names and, since
# 127.0.0.2 is loopback, the address with each port (docs/network.md,
# "Addresses").
std_allow() {
	jq -cn --arg h "$NET_HTTP" --arg s "$NET_HTTPS" --arg g "$NET_GIT" \
		'["registry.test:\($h)", "registry.test:\($s)", "git.test:\($g)",
		  "127.0.0.2:\($h)", "127.0.0.2:\($s)", "127.0.0.2:\($g)"]'
}

# The connection records of the last run with HOST and PORT, as compact JSON lines.
conn() { # host port
	rq -c "${CONNS}[] | select(.host == \"$1\" and .port == $2)"
}

# Asserts that a record for HOST:PORT exists, refused by RULE.
refused_by() { # host port rule
	local c
	c=$(conn "$1" "$2")
	[ -n "$c" ] || { echo "no record of $1:$2:"; rq -c "$CONNS"; return 1; }
	jq -e --arg r "$3" 'select(.allowed == false and .rule == $r)' <<<"$c" >/dev/null ||
		{ echo "$1:$2 not refused by $3: $c"; return 1; }
}

# Fails unless the receipt file matches docs/receipt.schema.json.
schema_valid() { # receipt file
	local out
	out=$("$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$1" 2>&1) ||
		{ echo "$out"; return 1; }
}

# Fails if the servers saw a line matching the pattern.
@test "netallow: an allowed name over HTTPS and HTTP works (curl), each connection on the receipt" {
	net_policy "$(std_allow)"
	aln run --policy "$TEST_DIR/net.json" -- sh -c \
		"curl -fsS https://registry.test:$NET_HTTPS/hello.txt && curl -fsS http://registry.test:$NET_HTTP/hello.txt"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; cat "$(receipt)"; return 1; }
	[ "$(rq .stdout)" = $'hello from registry.test\nhello from registry.test' ]
	[ "$(rq .sandbox.network.mode)" = allowlist ]
	[ "$(rq .sandbox.network.proxy)" = ran ]
	conn registry.test "$NET_HTTPS" | jq -e --arg p "registry.test:$NET_HTTPS" \
		'select(.allowed and .rule == "allow" and .method == "CONNECT" and .address == "127.0.0.2"
			and .sni == "registry.test" and .pattern == $p and .bytes_out > 0 and .bytes_in > 0
			and .duration_ms >= 0)'
	conn registry.test "$NET_HTTP" | jq -e \
		'select(.allowed and .method == "GET" and .address == "127.0.0.2" and .bytes_in > 0)'
	grep -q "^https 127.0.0.2:$NET_HTTPS GET /hello.txt" "$NET_LOG"
	grep -q "^http 127.0.0.2:$NET_HTTP GET /hello.txt Host: registry.test" "$NET_LOG"
	schema_valid "$(receipt)"
}

@test "netallow: the command gets the proxy variables; a policy's env.set cannot point them elsewhere" {
	net_policy "$(std_allow)"
	jq '.env.set.HTTPS_PROXY = "http://127.0.0.3:1" | .env.set.NO_PROXY = "*"' "$TEST_DIR/net.json" >"$TEST_DIR/net2.json"
	approve_policy "$TEST_DIR/net2.json"
	aln run --policy "$TEST_DIR/net2.json" -- printenv HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY http_proxy https_proxy all_proxy no_proxy
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	p=http://127.0.0.1:3128 n=localhost,127.0.0.1,::1
	[ "$(rq .stdout)" = "$p"$'\n'"$p"$'\n'"$p"$'\n'"$n"$'\n'"$p"$'\n'"$p"$'\n'"$p"$'\n'"$n" ] || { rq .stdout; return 1; }
}

@test "netallow: git ls-remote over HTTPS from a git http-backend on an allowed name" {
	net_policy "$(std_allow)"
	aln run --policy "$TEST_DIR/net.json" -- git ls-remote "https://git.test:$NET_GIT/repo.git"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stderr; return 1; }
	[[ "$(rq .stdout)" == *$'\trefs/heads/main'* ]]
	conn git.test "$NET_GIT" | jq -e 'select(.allowed and .method == "CONNECT")' >/dev/null
}

@test "netallow: npm reads an allowed registry name through the proxy" {
	command -v npm >/dev/null || skip "npm is not installed"
	net_policy "$(std_allow)"
	aln run --policy "$TEST_DIR/net.json" -- env npm_config_cache="$WORK/.npm-cache" npm_config_update_notifier=false \
		npm view demo version --fetch-retries=0 --registry "https://registry.test:$NET_HTTPS/"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stderr; return 1; }
	[ "$(rq .stdout)" = 1.2.3 ]
	grep -q "^https 127.0.0.2:$NET_HTTPS GET /demo" "$NET_LOG"
}

@test "netallow: pip downloads from an allowed index name through the proxy" {
	[ -x /usr/bin/pip3 ] || skip "Debian's pip3 is not installed"
	net_policy "$(std_allow)"
	aln run --policy "$TEST_DIR/net.json" -- /usr/bin/pip3 download --no-cache-dir --no-deps --disable-pip-version-check \
		--retries 0 -d dl --index-url "https://registry.test:$NET_HTTPS/simple/" demo
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stdout; rq .stderr; return 1; }
	[ -s dl/demo-1.2.3-py3-none-any.whl ]
	grep -q "^https 127.0.0.2:$NET_HTTPS GET /simple/demo/ " "$NET_LOG"
	conn registry.test "$NET_HTTPS" | jq -s -e 'length >= 1 and all(.allowed and .method == "CONNECT")' >/dev/null
}

@test "netallow: a name not listed, one under deny, an IP literal, a port not listed: refused, recorded, never served; show names them" {
	allow=$(std_allow | jq -c --arg s "$NET_HTTPS" '. + ["*.zone.test:\($s)"]')
	net_policy "$allow" '["bad.zone.test"]'
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		curl -fsS -m 10 https://denied.test:$NET_DENIED/hello.txt; echo denied=\$?
		curl -fsS -m 10 https://bad.zone.test:$NET_HTTPS/hello.txt; echo deny=\$?
		curl -fsS -m 10 https://ok.zone.test:$NET_HTTPS/hello.txt; echo ok=\$?
		curl -fsS -m 10 --cacert .test-ca.pem https://127.0.0.3:$NET_DENIED/hello.txt; echo literal=\$?
		curl -fsS -m 10 http://registry.test:$NET_DENIED/hello.txt; echo port2=\$?"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	[[ "$out" == *"ok=0"* ]] || { echo "$out"; rq .stderr; return 1; }
	for v in denied deny literal port2; do
		[[ "$out" == *"$v="* && "$out" != *"$v=0"* ]] || { echo "$v: $out"; return 1; }
	done
	refused_by denied.test "$NET_DENIED" net_not_allowed
	refused_by bad.zone.test "$NET_HTTPS" net_deny
	refused_by 127.0.0.3 "$NET_DENIED" net_not_allowed
	refused_by registry.test "$NET_DENIED" net_not_allowed
	[ "$(conn bad.zone.test "$NET_HTTPS" | jq -r .pattern)" = bad.zone.test ]
	conn ok.zone.test "$NET_HTTPS" | jq -e 'select(.allowed)' >/dev/null
	never_served "127.0.0.3:$NET_DENIED|Host: bad.zone.test|Host: denied.test"
	# the proxy refused before it resolved: no address on a refusal by name
	[ "$(conn denied.test "$NET_DENIED" | jq -r '.address // "none"')" = none ]
	id=$(receipt_id)
	run "$AIRLOCK" show "$id"
	[[ "$output" == *"denied.test:$NET_DENIED"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"bad.zone.test:$NET_HTTPS"* ]]
	[ "$(jq "$CONNS | map(select(.allowed == false)) | length" "$(receipt_file "$id")")" -eq 4 ]
	schema_valid "$(receipt_file "$id")"
}

@test "netallow: a run that failed on a denied host: the gate's message names it and what to allow" {
	net_policy "$(std_allow)"
	aln run --policy "$TEST_DIR/net.json" -- curl -fsS -m 10 "https://denied.test:$NET_DENIED/hello.txt"
	[ "$status" -ne 0 ] || { echo "exit $status"; return 1; }
	refused_by denied.test "$NET_DENIED" net_not_allowed
	al gate
	[ "$status" -eq 2 ] || { echo "gate exit $status: $output $stderr"; return 1; }
	[[ "$output$stderr" == *"denied.test:$NET_DENIED"*"sandbox.net.allow"* ]] || { echo "$output $stderr"; return 1; }
	never_served "Host: denied.test"
}

@test "netallow: a CONNECT whose TLS SNI differs from its host, or has none, is refused before a byte goes upstream" {
	command -v openssl >/dev/null || skip "openssl is not installed"
	net_policy "$(std_allow)"
	# a TLS client through the proxy: CONNECT HOST:PORT, then a ClientHello
	# naming SNI (none: no server_name extension)
	cat >"$WORK/sni.py" <<'PY'
import socket, ssl, sys
host, port, sni = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(1)
    if not d:
        sys.exit("proxy closed before answering")
    head += d
if not head.startswith(b"HTTP/1.1 200"):
    sys.exit("proxy: " + head.decode().splitlines()[0])
ctx = ssl.create_default_context(cafile=".test-ca.pem")
ctx.check_hostname = False
try:
    t = ctx.wrap_socket(s, server_hostname=None if sni == "none" else sni)
    t.sendall(f"GET /hello.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    print(t.recv(4096).decode().splitlines()[0])
except (OSError, ssl.SSLError) as e:
    sys.exit("tls: " + type(e).__name__)
PY
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		python3 sni.py registry.test $NET_HTTPS registry.test; echo same=\$?
		python3 sni.py registry.test $NET_HTTPS denied.test; echo other=\$?
		python3 sni.py git.test $NET_GIT none; echo none=\$?
		openssl s_client -proxy 127.0.0.1:3128 -connect registry.test:$NET_HTTPS -servername denied.test \
			-CAfile .test-ca.pem </dev/null >/dev/null 2>&1; echo s_client=\$?
		curl -fsS -m 10 -H 'Host: denied.test' http://registry.test:$NET_HTTP/hello.txt; echo host=\$?"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	[[ "$out" == *"same=0"* ]] || { echo "$out"; rq .stderr; return 1; }
	for v in other none s_client host; do
		[[ "$out" == *"$v="* && "$out" != *"$v=0"* ]] || { echo "$v: $out"; return 1; }
	done
	rq -e "[${CONNS}[] | select(.host == \"registry.test\" and .port == $NET_HTTPS and .allowed)] | length == 1" >/dev/null
	# the python client's and s_client's: refused by SNI, not a byte either way
	conn registry.test "$NET_HTTPS" | jq -s -e 'map(select(.allowed == false)) | length == 2 and
		all(.rule == "net_sni" and .sni == "denied.test" and .bytes_out == 0 and .bytes_in == 0)' >/dev/null ||
		{ rq -c "$CONNS"; return 1; }
	refused_by git.test "$NET_GIT" net_sni
	[ "$(conn git.test "$NET_GIT" | jq -r '[.bytes_out, .bytes_in, .sni // "none"] | join(" ")')" = "0 0 none" ]
	# the Host header naming another authority: 400, recorded with the
	# URL's authority and method (what the head parsed), never resolved
	rq -e "[${CONNS}[] | select(.allowed == false and .rule == \"net_bad_request\")] | length == 1" >/dev/null
	refused_by registry.test "$NET_HTTP" net_bad_request
	conn registry.test "$NET_HTTP" | jq -e 'select(.method == "GET" and .address == null and .bytes_out == 0)' >/dev/null ||
		{ rq -c "$CONNS"; return 1; }
	[[ "$(rq .stderr)" == *"returned error: 400"* ]] || { rq .stderr; return 1; }
	# only the matching ClientHello reached the server
	[ "$(grep -c "^https 127.0.0.2:$NET_HTTPS GET /hello.txt" "$NET_LOG")" = 1 ]
	never_served "Host: denied.test|^git "
}

@test "netallow: names resolving to the metadata endpoint, a LAN or a ULA address are refused by address, before any connect" {
	net_policy '["metadata.test","lan.test","lan2.test","ula.test"]'
	aln run --policy "$TEST_DIR/net.json" -- sh -c "
		for h in metadata.test lan.test lan2.test ula.test; do
			curl -sS -m 20 -w ' %{http_code}' http://\$h/latest/meta-data/; echo \" \$h=\$?\"
		done"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	out=$(rq .stdout)
	for h in metadata.test:169.254.169.254 lan.test:10.0.0.1 lan2.test:192.168.77.1 ula.test:fd00::1; do
		# the 403's body names the address the name resolved to
		grep -q "^airlock: ${h%%:*}:80 resolves to ${h#*:} " <<<"$out" || { echo "$h: $out"; return 1; }
		grep -q "^ 403 ${h%%:*}=0$" <<<"$out"
		refused_by "${h%%:*}" 80 net_address
		# the address refused is recorded (the first the name resolved to
		# that no range holds); nothing was connected to: no bytes
		conn "${h%%:*}" 80 | jq -e --arg a "${h#*:}" 'select(.address == $a and .bytes_out == 0 and .bytes_in == 0)' >/dev/null ||
			{ rq -c "$CONNS"; return 1; }
	done
}

@test "netallow: ignoring the proxy reaches nothing: raw TCP, /dev/tcp, IPv6, UDP, DNS fail closed" {
	net_policy "$(std_allow)"
	cat >"$WORK/probe.py" <<'PY'
import socket, sys
udp, tcp6, ns = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for fam, addr in ((socket.AF_INET, ("127.0.0.3", udp)), (socket.AF_INET, (ns, 53)),
                  (socket.AF_INET6, ("2001:db8::1", 53))):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", addr)
        s.recvfrom(512)
        print("udp", addr[0], "answered")
    except OSError as e:
        print("udp", addr[0], "blocked", type(e).__name__)
for fam, addr in ((socket.AF_INET6, ("::1", tcp6)), (socket.AF_INET6, ("2001:db8::1", 80))):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
        print("tcp6", addr[0], "connected")
    except OSError as e:
        print("tcp6", addr[0], "blocked", type(e).__name__)
PY
	ns=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)
	script="
		curl --noproxy '*' -fsS -m 5 http://registry.test:$NET_HTTP/hello.txt; echo noproxy=\$?
		curl --noproxy '*' -fsS -m 5 http://127.0.0.2:$NET_HTTP/hello.txt; echo noproxy_ip=\$?
		(exec 3<>/dev/tcp/127.0.0.2/$NET_TCP) 2>/dev/null; echo devtcp=\$?
		getent ahosts airlock-netallow.example.com >/dev/null; echo dns=\$?
		curl -fsS -m 5 http://[fd00::1]:$NET_TCP6/; echo v6proxy=\$?
		python3 probe.py $NET_UDP $NET_TCP6 ${ns:-127.0.0.53}"
	# the built-in policy (loopback) first, then the allowlist: closed alike
	for policy in "" "$TEST_DIR/net.json"; do
		aln run ${policy:+--policy "$policy"} -- bash -c "$script"
		[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
		out=$(rq .stdout)
		for v in noproxy noproxy_ip devtcp dns v6proxy; do
			[[ "$out" == *"$v="* && "$out" != *"$v=0"* ]] || { echo "$v: $out"; return 1; }
		done
		[ "$(grep -c ' blocked ' <<<"$out")" -eq 5 ] || { echo "$out"; return 1; }
		[[ "$out" != *answered* && "$out" != *connected* ]]
	done
	# the IPv6 literal through the proxy: refused by the allowlist
	rq -e "${CONNS}[] | select((.host | test(\"fd00::1\")) and .port == $NET_TCP6 and .allowed == false
		and .rule == \"net_not_allowed\")" >/dev/null || { rq -c "$CONNS"; return 1; }
	never_served "^(tcp|udp) "
}

@test "netallow: 1,000 slow-loris connections neither stall their own run's next request nor another run; dropped at the head deadline" {
	net_policy "$(std_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_HOSTS" "$AIRLOCK" run --timeout 60 --policy "$TEST_DIR/net.json" -- sh -c "
		python3 $NET_HELPERS/netloris.py 127.0.0.1 3128 1000 14 registry.test:$NET_HTTPS held &
		while [ ! -e held ]; do sleep 0.1; done
		curl -fsS -m 20 https://registry.test:$NET_HTTPS/hello.txt && echo own=ok
		wait" >"$TEST_DIR/loris.out" 2>"$TEST_DIR/loris.err" &
	bg=$!
	for _ in $(seq 600); do [ -e "$WORK/held" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	[ -e "$WORK/held" ] || { wait "$bg" || true; cat "$TEST_DIR/loris.out" "$TEST_DIR/loris.err"; return 1; }
	# another run, meanwhile: its own proxy answers at once
	aln run --policy "$TEST_DIR/net.json" -- curl -fsS -m 20 "https://registry.test:$NET_HTTPS/hello.txt"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; rq .stderr; return 1; }
	[ "$(rq .stdout)" = "hello from registry.test" ]
	wait "$bg"
	output=$(cat "$TEST_DIR/loris.out")
	[ "$(rq .status)" = exited ] || { cat "$(receipt)"; return 1; }
	out=$(rq .stdout)
	[[ "$out" == *"opened 1000"* && "$out" == *"own=ok"* ]] || { echo "$out"; rq .stderr; return 1; }
	# the head deadline (10 s) dropped the slow heads before the client stopped (14 s)
	[[ "$out" == *"held 0"* ]] || { echo "$out"; return 1; }
	[ "$(rq "[${CONNS}[] | select(.rule == \"net_head_timeout\")] | length")" -gt 0 ]
	[ "$(rq "$CONNS | length")" -le 1000 ]
	schema_valid "$(receipt)"
}

@test "netallow: the proxy dies with the run: no process left" {
	net_policy "$(std_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_HOSTS" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c \
		"curl -fsS https://registry.test:$NET_HTTPS/hello.txt && touch up && sleep 3" >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy process below $bg"; return 1; }
	# it is not the caller's root, and has no capability
	[ "$(awk '/^CapEff/ {print $2}' "/proc/$pid/status")" = 0000000000000000 ]
	[ "$(awk '/^Uid/ {print $2}' "/proc/$pid/status")" != 0 ]
	wait "$bg"
	[ ! -d "/proc/$pid" ] || [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" != *__netproxy* ]] ||
		{ echo "proxy $pid outlived its run"; return 1; }
	[ -z "$(proxy_below "$bg")" ]
}

@test "netallow: a run that never connects: its proxy loads nothing for it (no libssl) and dies with the run" {
	net_policy "$(std_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_HOSTS" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c \
		"touch up && sleep 3" >"$TEST_DIR/out" 2>&1 &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out"; echo "no proxy process below $bg"; return 1; }
	# nothing loaded for a connection that never came: no libssl mapped
	if grep -q libssl "/proc/$pid/maps"; then
		echo "libssl loaded before any connection"
		return 1
	fi
	wait "$bg"
	[ -z "$(proxy_below "$bg")" ]
	output=$(cat "$TEST_DIR/out")
	[ "$(rq .sandbox.network.proxy)" = ran ]
	[ "$(rq '.sandbox.network.connections | length')" = 0 ]
}

@test "netallow: a proxy killed mid-run fails the run's later connections closed, and the receipt says so" {
	net_policy "$(std_allow)"
	"$NET_HELPERS/nethosts.sh" "$NET_HOSTS" "$AIRLOCK" run --policy "$TEST_DIR/net.json" -- sh -c "
		curl -fsS https://registry.test:$NET_HTTPS/hello.txt >first && touch up
		while [ ! -e go ]; do sleep 0.1; done
		curl -fsS -m 10 https://registry.test:$NET_HTTPS/hello.txt; echo second=\$?
		curl --noproxy '*' -fsS -m 5 http://registry.test:$NET_HTTP/hello.txt; echo direct=\$?" >"$TEST_DIR/out" 2>"$TEST_DIR/err" &
	bg=$!
	for _ in $(seq 300); do [ -e "$WORK/up" ] || [ ! -d "/proc/$bg" ] && break; sleep 0.1; done
	pid=$(proxy_below "$bg")
	[ -n "$pid" ] || { wait "$bg" || true; cat "$TEST_DIR/out" "$TEST_DIR/err"; echo "no proxy process below $bg"; return 1; }
	kill -KILL "$pid"
	touch "$WORK/go"
	wait "$bg" || true
	output=$(cat "$TEST_DIR/out")
	[ "$(cat "$WORK/first")" = "hello from registry.test" ]
	out=$(rq .stdout)
	[[ "$out" == *"second="* && "$out" != *"second=0"* ]] || { echo "$out"; return 1; }
	[[ "$out" == *"direct="* && "$out" != *"direct=0"* ]] || { echo "$out"; return 1; }
	[[ "$out" != *"hello from"* ]]
	[ "$(rq .sandbox.network.proxy)" = died ]
	schema_valid "$(receipt)"
	[ "$(grep -c "GET /hello.txt" "$NET_LOG")" -ge 1 ]
}

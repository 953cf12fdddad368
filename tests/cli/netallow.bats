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

@test "netallow: approved, the allowlist form still fails closed (exit 125) until the proxy exists; --net host overrides" {
	allowlist '["registry.npmjs.org","*.debian.org:443"]' '["evil.debian.org"]'
	approve_policy "$TEST_DIR/net.json"
	al run --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 125 ] || { echo "exit $status: $stderr"; return 1; }
	one_error_line "the allowlist form needs the network proxy"
	[ "$(rq .status)" = invalid ]
	[ ! -e ran ]
	# a dry run is held to it too
	al dryrun --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"the allowlist form needs the network proxy"* ]]
	[ ! -e ran ]
	# a person's --net host for this run is the host's network, as before
	al run --net host --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr"; return 1; }
	[ -e ran ]
	[ "$(rq .sandbox.enforced.network)" = host ]
}

@test "netallow: the object form without allow patterns needs no approval and still refuses the run" {
	allowlist '[]' '["*.example.org"]'
	al run --policy "$TEST_DIR/net.json" -- touch ran
	[ "$status" -eq 125 ] || { echo "exit $status: $stderr"; return 1; }
	one_error_line "the allowlist form needs the network proxy"
	[ ! -e ran ]
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
	[[ "$output" == *"is refused (exit 125): sandbox.net: the allowlist form needs the network proxy"* ]]
	[[ "$output" == *"denied by policy rule policy_widens"*"sandbox.net.allow"* ]]
	# the built-in policy: loopback, as before
	rm .airlock/policy.json
	run "$AIRLOCK" doctor
	[[ "$output" == *"  network  loopback"* ]]
	[[ "$output" != *"allowlist"* ]]
}

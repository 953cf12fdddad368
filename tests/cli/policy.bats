#!/usr/bin/env bats
# A policy file may narrow the built-in policy; what widens it takes effect
# only once the approver approved that exact file (its digest, in the
# ledger), and `sandbox.profile: "none"` is never taken from a file
# (docs/policy-format.md, "Widening needs the approver"). The agent's attack:
# while one routed command runs, it creates .airlock/policy.json, and the
# hook routes its next command with --policy pointing there.
load helpers

PASS="correct horse battery"

needs_script() {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
}

enrol() {
	printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
}

approve() { # file [passphrase]
	run script -qec "'$AIRLOCK' policy approve '$1'" /dev/null <<<"${2:-$PASS}"
}

last_receipt() {
	ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1
}

# Starts a routed command that plants .airlock/policy.json (the policy is $1)
# and keeps running; returns once the file is there.
plant_while_running() { # policy-json
	local routed
	routed=$(routed_form "mkdir -p .airlock && printf '%s' '$1' >.airlock/policy.json && sleep 4")
	[[ "$routed" == *" run --routed claude "* ]] || { echo "not routed: $routed"; return 1; }
	bash -c "$routed" >/dev/null 2>&1 3>&- &
	PLANTER=$!
	for _ in $(seq 100); do [ -s .airlock/policy.json ] && return 0; sleep 0.05; done
	echo "the planting run wrote no policy" >&2
	return 1
}

# The next routed command, while the planter still runs: refused, one line
# naming the field, exit 126, a denied receipt; $2 says what it would do.
refused_while_planted() { # field command
	run_routed "$2"
	[ -e .airlock/policy.json ] # still there: the planter runs on
	[ "$status" -eq 126 ] || { echo "exit $status: $output $stderr"; return 1; }
	one_error_line "widens $1"
	[[ "$stderr" == *"policy_widens"* ]]
	jq -e --arg f "$1" --arg p "$WORK/.airlock/policy.json" '.status == "denied" and
		.denied.rule == "policy_widens" and .denied.value == $f and .policy == $p and
		.source == "claude-routed" and .exit_code == null' "$(last_receipt)"
	"$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$(last_receipt)"
}

@test "attack: a concurrent routed run plants .airlock/policy.json with profile none; the next routed command is refused, not run on the host" {
	fresh_state
	plant_while_running '{"schema":"airlock.policy/1","sandbox":{"profile":"none"}}'
	refused_while_planted sandbox.profile "touch '$TEST_DIR/escaped'"
	[ ! -e "$TEST_DIR/escaped" ]
	wait "$PLANTER" || true
	# The planted file is moved aside when its run ends.
	[ ! -e .airlock/policy.json ]
}

@test "attack: a concurrent routed run plants .airlock/policy.json with net host; the next routed command is refused" {
	fresh_state
	plant_while_running '{"schema":"airlock.policy/1","sandbox":{"net":"host"}}'
	refused_while_planted sandbox.net "ip -o link >links"
	[ ! -e links ]
	wait "$PLANTER" || true
	[ ! -e .airlock/policy.json ]
}

@test "attack: a concurrent routed run plants .airlock/policy.json with a writable directory; the next routed command is refused" {
	fresh_state
	mkdir "$TEST_DIR/outside"
	plant_while_running "{\"schema\":\"airlock.policy/1\",\"sandbox\":{\"writable\":[\"$TEST_DIR/outside\"]}}"
	refused_while_planted sandbox.writable "touch '$TEST_DIR/outside/escaped'"
	[ ! -e "$TEST_DIR/outside/escaped" ]
	wait "$PLANTER" || true
	[ ! -e .airlock/policy.json ]
}

@test "every widening field is refused and named; a policy that only narrows applies without approval" {
	mkdir "$TEST_DIR/outside"
	while read -r field json; do
		printf '{"schema":"airlock.policy/1",%s}' "$json" >"$TEST_DIR/p.json"
		al run --policy "$TEST_DIR/p.json" -- true
		[ "$status" -eq 126 ] || { echo "$field: exit $status $stderr"; return 1; }
		one_error_line "widens $field"
		[ "$(rq .denied.value)" = "$field" ]
	done <<EOF
deny_argv0 "deny_argv0":["sudo"]
timeout.default_ms "timeout":{"default_ms":40000}
timeout.max_ms "timeout":{"max_ms":120000}
timeout.kill_after_ms "timeout":{"kill_after_ms":3000}
env.allow "env":{"allow":["PATH","HOME","LANG","LC_ALL","TERM","GITHUB_TOKEN"]}
env.secret_patterns "env":{"secret_patterns":["*TOKEN*"]}
limits.max_argv_bytes "limits":{"max_argv_bytes":2000000}
limits.core_bytes "limits":{"core_bytes":1048576}
limits.open_files "limits":{"open_files":4096}
limits.file_size_bytes "limits":{"file_size_bytes":9000000000}
limits.processes "limits":{"processes":100000}
limits.memory_bytes "limits":{"memory_bytes":17179869184}
limits.cpu_seconds "limits":{"cpu_seconds":3600}
sandbox.profile "sandbox":{"profile":"none"}
sandbox.hide "sandbox":{"hide":[]}
sandbox.home_allow "sandbox":{"home":"hidden","home_allow":["~/.ssh"]}
sandbox.read_only "sandbox":{"read_only":[".git/hooks"]}
sandbox.tmp_bytes "sandbox":{"tmp_bytes":4294967296}
sandbox.net "sandbox":{"net":"host"}
sandbox.writable "sandbox":{"writable":["$TEST_DIR/outside"]}
EOF
	# Narrower, or neither (output, receipts, gate, env.set): applies as it is.
	cat >"$TEST_DIR/narrow.json" <<'EOF'
{"schema":"airlock.policy/1","deny_argv0":["sudo","su","doas","ssh","scp","sftp","curl","wget","dd","mkfs","reboot","shutdown","halt","poweroff","pip","pip3","nc"],
 "timeout":{"default_ms":5000,"max_ms":10000,"kill_after_ms":500},"env":{"allow":["PATH"],"set":{"X":"1"}},
 "output":{"keep_bytes":100000},"receipts":{"fsync":false},"gate":{"trivial":[]},
 "limits":{"processes":64,"memory_bytes":1073741824},
 "sandbox":{"home":"hidden","home_allow":["~/.cache"],"hide":HIDE,
  "read_only":[".git/hooks",".git/config",".airlock",".envrc","Makefile"],"tmp_bytes":16777216,"net":"loopback","writable":[]}}
EOF
	# The built-in hide list (policy/default.json) and one more: narrower.
	hide=$(jq -c '.sandbox.hide + ["~/.extra"]' "$BATS_TEST_DIRNAME/../../policy/default.json")
	sed -i "s|HIDE|$hide|" "$TEST_DIR/narrow.json"
	al run --policy "$TEST_DIR/narrow.json" -- sh -c 'echo "$X"'
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(rq .policy)" = "$TEST_DIR/narrow.json" ]
	# The project's narrowing policy is what a routed command gets (in a
	# state directory where the refusals above opened no failure).
	fresh_state
	mkdir .airlock
	cp "$TEST_DIR/narrow.json" .airlock/policy.json
	run_routed 'echo "$X"'
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
	jq -e --arg p "$WORK/.airlock/policy.json" '.policy == $p and .status == "exited"' "$(last_receipt)"
}

@test "policy approve: only the approver's passphrase approves; that exact file then applies, a file one byte off does not" {
	needs_script
	mkdir "$TEST_DIR/outside"
	jq -n --arg o "$TEST_DIR/outside" '{schema: "airlock.policy/1", sandbox: {net: "host", writable: [$o]}}' \
		>"$TEST_DIR/wide.json"
	# Not approved: refused (in a state directory of its own: a refusal opens a failure).
	AIRLOCK_STATE_DIR="$TEST_DIR/scratch" al run --policy "$TEST_DIR/wide.json" -- touch "$TEST_DIR/outside/f"
	[ "$status" -eq 126 ]
	[ ! -e "$TEST_DIR/outside/f" ]
	# No approver enrolled, no terminal, a wrong passphrase: not approved (77).
	approve "$TEST_DIR/wide.json"
	[ "$status" -eq 77 ]
	[[ "$output" == *"no approver is enrolled"* ]]
	enrol
	al policy approve "$TEST_DIR/wide.json" </dev/null
	[ "$status" -eq 77 ]
	approve "$TEST_DIR/wide.json" "hunter2 hunter2"
	[ "$status" -eq 77 ]
	[[ "$output" == *"not the approver's passphrase"* ]]
	al policy check "$TEST_DIR/wide.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"has not approved"* ]]
	run "$AIRLOCK" doctor --policy "$TEST_DIR/wide.json"
	[[ "$output" == *"a run with this policy is refused (exit 126): denied by policy rule policy_widens: "*"widens sandbox.net"* ]]
	# The human approves; the prompt shows what widens.
	approve "$TEST_DIR/wide.json"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"sandbox.net"*"sandbox.writable"* ]]
	digest=$(sha256sum "$TEST_DIR/wide.json" | cut -c1-64)
	[[ "$output" == *"approved policy $TEST_DIR/wide.json (sha256 $digest"* ]]
	jq -e --arg d "$digest" '.schema == "airlock.policy-approval/1" and .sha256 == $d and
		(.approval.signature | length) == 128' "$AIRLOCK_STATE_DIR/policies/$digest.json"
	grep -q "\"kind\":\"policy-approval\",\"id\":\"$digest\"" "$AIRLOCK_STATE_DIR/ledger/log"
	al policy check "$TEST_DIR/wide.json"
	[ "$status" -eq 0 ]
	run "$AIRLOCK" doctor --policy "$TEST_DIR/wide.json"
	[[ "$output" == *"  network  host"* ]]
	[[ "$output" != *"is refused (exit 126)"* ]]
	# The same bytes as the project's policy: approved; the routed run gets it.
	mkdir .airlock
	cp "$TEST_DIR/wide.json" .airlock/policy.json
	run_routed "touch '$TEST_DIR/outside/g'"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ -e "$TEST_DIR/outside/g" ]
	jq -e '.sandbox.enforced.network == "host"' "$(last_receipt)"
	# Another digest (one more space) does not count.
	printf ' ' >>.airlock/policy.json
	run_routed "touch '$TEST_DIR/outside/h'"
	[ "$status" -eq 126 ]
	one_error_line "widens sandbox.net"
	[ ! -e "$TEST_DIR/outside/h" ]
	al run --policy "$TEST_DIR/wide.json" -- touch "$TEST_DIR/outside/f"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ -e "$TEST_DIR/outside/f" ]
	# A forged approval: the record copied under the other digest's name.
	other=$(sha256sum .airlock/policy.json | cut -c1-64)
	jq -c --arg d "$other" '.sha256 = $d' "$AIRLOCK_STATE_DIR/policies/$digest.json" \
		>"$AIRLOCK_STATE_DIR/policies/$other.json"
	al run --policy "$WORK/.airlock/policy.json" -- true
	[ "$status" -eq 126 ]
	one_error_line "not the one the ledger committed"
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -ne 0 ]
	[[ "$output" == *"policies/$other.json"* ]]
	# A record of the approved digest edited afterwards no longer counts either.
	jq -c '.origin = "elsewhere"' "$AIRLOCK_STATE_DIR/policies/$digest.json" >"$TEST_DIR/t"
	cat "$TEST_DIR/t" >"$AIRLOCK_STATE_DIR/policies/$digest.json"
	al run --policy "$TEST_DIR/wide.json" -- true
	[ "$status" -eq 126 ]
	one_error_line "widens sandbox.net"
}

@test "policy approve: sandbox.profile none is never approved, never taken from a file" {
	needs_script
	enrol
	printf '{"schema":"airlock.policy/1","sandbox":{"profile":"none"}}' >"$TEST_DIR/none.json"
	approve "$TEST_DIR/none.json"
	[ "$status" -eq 125 ]
	[[ "$output" == *"sandbox.profile"* ]]
	[ ! -d "$AIRLOCK_STATE_DIR/policies" ]
	al run --policy "$TEST_DIR/none.json" -- true
	[ "$status" -eq 126 ]
	one_error_line "widens sandbox.profile"
	# The person's own per-run choice stays theirs.
	al run --sandbox none -- true
	[ "$status" -eq 0 ]
	# A policy that only narrows needs no approval.
	printf '{"schema":"airlock.policy/1","limits":{"processes":64}}' >"$TEST_DIR/narrow.json"
	al policy approve "$TEST_DIR/narrow.json" </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"needs no approval"* ]]
}

@test "a dry run and a job are held to the same rule" {
	printf '{"schema":"airlock.policy/1","sandbox":{"net":"host"}}' >"$TEST_DIR/wide.json"
	al dryrun --policy "$TEST_DIR/wide.json" -- touch f
	[ "$status" -eq 126 ]
	one_error_line "widens sandbox.net"
	[ ! -e f ]
	printf '{"argv":["touch","f"]}' >"$TEST_DIR/job.json"
	al job --policy "$TEST_DIR/wide.json" "$TEST_DIR/job.json"
	[ "$status" -eq 126 ]
	[ ! -e f ]
}

@test "a run without --policy, or whose --policy cannot be read, records the built-in policy" {
	# The built-in policy is read in place (policy_builtin()), not copied:
	# the receipts name it and its digest, and its limits hold, as before.
	local digest
	digest=$(sha256sum "$BATS_TEST_DIRNAME/../../policy/default.json" | cut -d' ' -f1)
	al run -- true
	[ "$status" -eq 0 ]
	[ "$(rq .policy)" = default ]
	[ "$(rq .policy_sha256)" = "$digest" ]
	[ "$(rq .timeout_sec)" = 30 ]
	al run --policy "$TEST_DIR/missing.json" -- true
	[ "$status" -ne 0 ]
	[ "$(rq .policy)" = default ]
	[ "$(rq .policy_sha256)" = "$digest" ]
	[ "$(rq .status)" = invalid ]
	[ "$(rq .timeout_sec)" = 30 ]
	# A --fixes run's gate reads the built-in policy too.
	al run -- sh -c 'test -e ok'
	[ "$status" -eq 1 ]
	local failed
	failed=$(receipt_id)
	al run --fixes "$failed" -- touch ok
	[ "$status" -eq 0 ]
	local fix rerun
	fix=$(head -n1 <<<"$output" | jq -r .receipt)
	rerun=$(tail -n1 <<<"$output" | jq -r .receipt)
	[ "$fix" != "$rerun" ]
	[ "$(jq -r .policy_sha256 "$AIRLOCK_STATE_DIR/receipts/$fix.json")" = "$digest" ]
	jq -e --argjson f "$failed" '.closes == [$f]' <<<"$(tail -n1 <<<"$output")"
}

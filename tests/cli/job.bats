#!/usr/bin/env bats
# airlock job: the seed's job format and Codex's shell-tool spelling.
load helpers

@test "a seed job runs and its fields reach the receipt" {
	cat > job.json <<JSON
{"job_id": "2026-09-03-lint-1", "argv": ["sh", "-c", "echo \$LANG; exit 2"], "cwd": "$WORK",
 "timeout_sec": 5, "expected_exit": 2, "env_allowlist": ["PATH", "LANG"], "rationale": "lint"}
JSON
	LANG=C.UTF-8 al job job.json
	[ "$status" -eq 2 ]
	jq -e '.match_expected == true' <<<"$output"
	[ "$(rq .job_id)" = 2026-09-03-lint-1 ]
	[ "$(rq .source)" = job ]
	[ "$(rq .timeout_sec)" = 5 ]
	[ "$(rq .rationale)" = lint ]
	[ "$(rq .stdout)" = C.UTF-8 ]
	[ "$(rq .job_sha256)" = "$(sha256sum < job.json | cut -d' ' -f1)" ]
	rq '.env_keys | index("HOME") == null' | grep -qx true
}

@test "a Codex shell-tool call runs the same way" {
	mkdir sub
	printf '{"command": ["pwd"], "workdir": "%s/sub", "timeout_ms": 2500, "justification": "where"}' "$PWD" > codex.json
	al job codex.json
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = "$PWD/sub" ]
	[ "$(rq .timeout_ms)" = 2500 ]
	[ "$(rq .rationale)" = where ]
}

@test "a job can come from stdin" {
	run --separate-stderr sh -c "printf '{\"argv\":[\"echo\",\"piped\"]}' | '$AIRLOCK' job -"
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = piped ]
}

@test "a job's timeout kills it" {
	printf '{"argv": ["sleep", "36.5%s"], "timeout_sec": 0.3}' "$$" > slow.json
	al job slow.json
	[ "$status" -eq 124 ]
	[ "$(rq .timed_out)" = true ]
	no_process_with "sleep 36.5$$"
}

@test "a denied job gets 126, the rule on stderr, and a receipt" {
	printf '{"argv": ["sudo", "rm", "-rf", "/"]}' > bad.json
	al job bad.json
	[ "$status" -eq 126 ]
	[ "$(rq .status)" = denied ]
	[ "$(rq .denied.rule)" = deny_argv0 ]
	[ "$(rq '.argv[0]')" = sudo ]
	one_error_line "deny_argv0"
}

@test "a job above the maximum timeout is denied like the seed" {
	printf '{"argv": ["true"], "timeout_sec": 61}' > long.json
	al job long.json
	[ "$status" -eq 126 ]
	[ "$(rq .denied.rule)" = max_timeout ]
}

@test "a job's kill_after_ms counts against the maximum timeout" {
	printf '{"argv": ["true"], "timeout_ms": 50000, "kill_after_ms": 30000}' > long.json
	al job long.json
	[ "$status" -eq 126 ]
	[ "$(rq .denied.rule)" = max_timeout ]
	[ "$(rq .kill_after_ms)" = 30000 ]
	printf '{"argv": ["sh", "-c", "trap \\"\\" TERM; while :; do sleep 0.05; done"], "timeout_ms": 300, "kill_after_ms": 200}' > grace.json
	al job grace.json
	[ "$status" -eq 124 ]
	[ "$(rq .signal_name)" = KILL ]
	[ "$(rq .kill_after_ms)" = 200 ]
	printf '{"argv": ["true"], "kill_after_ms": -1}' > bad.json
	al job bad.json
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"'kill_after_ms'"* ]]
}

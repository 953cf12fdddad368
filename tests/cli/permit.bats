#!/usr/bin/env bats
# airlock permit: a model's proposal earns execution (docs/permit-format.md).
# The seed's story end to end, the risk a dry run observes, a failing verify
# rolled back, and an approval that covers nothing once the permit or its
# change set is edited.
load helpers

PASS='correct horse battery'

git_init() {
	git init -q .
	git config user.email t@t && git config user.name t
}

commit_all() {
	git add -A . && git commit -qm "$1"
}

# The approver, enrolled on a terminal of its own (script(1)), as the gate's tests do.
enrol() {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
}

approve() {
	run script -qec "'$AIRLOCK' permit approve $1" /dev/null <<<"${2:-$PASS}"
}

# permit STEP ID...: sets $status, $output (the JSON line) and $stderr.
pstep() {
	run --separate-stderr "$AIRLOCK" permit "$@"
}

propose() {
	run --separate-stderr "$AIRLOCK" permit propose - <<<"$1"
	PID=$(jq -r .permit <<<"$output")
}

state() {
	jq -r .state "$AIRLOCK_STATE_DIR/permits/$1.json"
}

transitions() {
	jq -r '[.history[] | .to] | join(" ")' "$AIRLOCK_STATE_DIR/permits/$1.json"
}

# The permit's exec ended rolled back: the tree is $ORIG again, and the
# permit and its dry run say so.
rolled_back_whole() { # permit dry-run
	[ "$(snap)" = "$ORIG" ]
	[ "$(transitions "$1")" = "PROPOSED DRY_RUN_OK APPLIED ROLLED_BACK" ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$2/state")" = rolled_back ]
}

# A small make project whose build writes generated files.
make_project() {
	git_init
	printf 'gen:\n\techo new > gen.txt\n' > Makefile
	printf 'tracked:\n\techo changed >> notes.txt\n' >> Makefile
	printf 'outside:\n\t-touch /usr/airlock-permit-test\n\techo x > gen.txt\n' >> Makefile
	echo notes > notes.txt
	printf 'gen.txt\n' > .gitignore
	commit_all init
}

@test "the seed's story: 50,000 cache files, a cmake build, the model's one-liner earns execution" {
	enrol
	git_init
	printf '.cache/\nbuild/\n' > .gitignore
	printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' > hello.c
	if command -v cmake >/dev/null; then
		printf 'cmake_minimum_required(VERSION 3.10)\nproject(hello C)\nadd_executable(hello hello.c)\n' > CMakeLists.txt
		cmake -S . -B build >/dev/null
		build="cmake --build build"
	else # scripts/deps.sh installs cmake; make stands in without it
		mkdir build && printf 'hello: ../hello.c\n\tcc -o hello ../hello.c\n' > build/Makefile
		build="make -C build"
	fi
	commit_all init
	python3 -c '
import os
os.mkdir(".cache")
for i in range(50000):
    with open(".cache/%05d.o" % i, "w") as f: f.write("o")'
	# The seed's JSON; its build directory is build/, not the source root.
	# Its timeout is the policy's longest, not the default 20 s: deleting
	# 50,000 files in the snapshot takes 17 s under ASan on a loaded machine.
	propose "{\"candidate\":\"rm -rf .cache && $build\",\"reason\":\"cache exhaustion blocks fork\",\"expected_paths\":[\"build\",\".cache\"],\"rollback\":\"git clean -qfd .cache\",\"confidence\":0.92,\"timeout_seconds\":60}"
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = PROPOSED ]
	rec="$AIRLOCK_STATE_DIR/permits/$PID.json"
	# Recorded as a shell command, run through sh -c; the rollback judged like a candidate.
	jq -e '.via_shell and .argv[0] == "sh" and .argv[1] == "-c" and .rollback_risk == 5' "$rec"

	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = DRY_RUN_OK ]
	[ "$(jq -r .needs <<<"$output")" = approval ]
	# Generated files only (3), but an unparsed shell string classifies 4.
	jq -e '.risk_observed == 3 and .risk == 4' "$rec"
	# Untouched until approval.
	[ "$(ls -f .cache | wc -l)" -eq 50002 ]
	[ ! -e build/hello ]

	pstep exec "$PID"
	[ "$status" -eq 36 ]
	[[ "$stderr" == *"needs the approver's signature"* ]]
	[ "$(ls -f .cache | wc -l)" -eq 50002 ]
	[ ! -e build/hello ]

	approve "$PID" "a guess"
	[[ "$output" == *"not the approver's passphrase"* ]]
	[ "$(state "$PID")" = REJECTED_WITHOUT_APPROVAL ]
	approve "$PID"
	[[ "$output" == *'"state":"APPROVED"'* ]]
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = APPLIED ]
	[ ! -e .cache ]
	[ "$(build/hello)" = hello ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK REJECTED_WITHOUT_APPROVAL APPROVED APPLIED" ]
	jq -e '.approval.message | contains("changeset=")' "$rec"
	# Applied once.
	pstep exec "$PID"
	[ "$status" -eq 21 ]

	# The story's ledger: it verifies, and each tampering with it is caught
	# by name, each on a copy of the state directory (without the snapshot
	# and the 50,000 backed-up cache files, which no entry names).
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	tampered() { # name; sets $copy
		copy="$TEST_DIR/copy-$1"
		mkdir "$copy"
		tar -C "$AIRLOCK_STATE_DIR" --exclude='./dryruns/*/backup' --exclude='./dryruns/*/upper' -cf - . |
			tar -C "$copy" -xf -
	}
	lverify() {
		run "$AIRLOCK" ledger verify --state-dir "$copy" --key "$TEST_DIR/ledger.pub"
	}
	tampered untouched
	lverify
	[ "$status" -eq 0 ]
	# A rewritten receipt: the dry run's, as if its command had been another.
	dry=$(jq -r .dryrun "$rec")
	tampered receipt
	jq -c '.argv[2] = "true"' "$copy/receipts/$dry.json" >"$TEST_DIR/r" && cat "$TEST_DIR/r" >"$copy/receipts/$dry.json"
	lverify
	[ "$status" -eq 2 ]
	[[ "$output" == *"DIFFERS receipts/$dry.json: receipt $dry differs"* ]]
	# A forged close of a failure.
	tampered close
	mkdir -p "$copy/gate/closed"
	echo '{"schema":"airlock.gate-close/1","receipt":'"$dry"',"scope":"'"$WORK"'","move":"rerun"}' \
		>"$copy/gate/closed/$dry.json"
	lverify
	[ "$status" -eq 2 ]
	[[ "$output" == *"UNBACKED gate/closed/$dry.json"* ]]
	# The approver swapped for another key.
	tampered approver
	jq -c '.public_key = "'"$(printf '%064d' 7)"'"' "$copy/approver.json" >"$TEST_DIR/a" && cat "$TEST_DIR/a" >"$copy/approver.json"
	lverify
	[ "$status" -eq 2 ]
	[[ "$output" == *"DIFFERS approver.json"* ]]
	# The ledger truncated: the last transition (APPLIED) dropped.
	tampered truncated
	head -n -1 "$copy/ledger/log" >"$TEST_DIR/l" && cat "$TEST_DIR/l" >"$copy/ledger/log"
	lverify
	[ "$status" -eq 1 ]
	[[ "$output" == *"TAMPERED the checkpoint signs"*"truncated or rewritten"* ]]
	# The story's own state is intact.
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -eq 0 ]
}

@test "risk: a mode change of a generated file that is a hard link of a tracked one changes the tracked file: 4" {
	make_project
	printf 'chmodgen:\n\tchmod 600 gen.txt\n' >> Makefile && commit_all chmodgen
	ln notes.txt gen.txt
	propose '{"argv":["make","-s","chmodgen"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .risk <<<"$output")" -eq 4 ]
	jq -e '.risk_observed == 4 and (.observed | contains("notes.txt"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
}

@test "risk is what the dry run changed: nothing, generated, tracked, outside; the paths must match" {
	make_project
	# Attack: telling tracked from generated runs git on the host; the
	# repository's fsmonitor would run a program there (it does for a plain
	# `git ls-files`).
	git config core.fsmonitor "touch '$TEST_DIR/pwned'; false"
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	[ "$(jq -r .risk <<<"$output")" -eq 3 ]
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .needs <<<"$output")" = nothing ]
	[ ! -e "$TEST_DIR/pwned" ]
	git config --unset core.fsmonitor
	[ ! -e gen.txt ]
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(cat gen.txt)" = new ]
	rm gen.txt

	# make classifies 3, but the dry run changed a tracked file: 4.
	propose '{"argv":["make","-s","tracked"],"reason":"r","expected_paths":["notes.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .risk <<<"$output")" -eq 4 ]
	jq -e '.risk_observed == 4 and (.observed | contains("notes.txt"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	pstep exec "$PID"
	[ "$status" -eq 36 ]
	[ "$(cat notes.txt)" = notes ]

	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["other.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 32 ]
	[ "$(state "$PID")" = UNEXPECTED_PATH ]
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt","missing"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 33 ]
	propose '{"argv":["git","status"],"reason":"r","expected_paths":[]}'
	pstep dryrun "$PID"
	[ "$status" -eq 31 ]
	[ "$(jq -r .risk <<<"$output")" -eq 1 ]
	propose '{"argv":["make","nosuchtarget"],"reason":"r","expected_paths":[]}'
	pstep dryrun "$PID"
	[ "$status" -eq 34 ]
	# A write attempted outside the workspace: 5, rejected.
	propose '{"argv":["make","-s","outside"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 35 ]
	[ "$(state "$PID")" = REJECTED ]
	pstep exec "$PID"
	[ "$status" -eq 21 ]
	[ ! -e gen.txt ]
	# Declared or classified 5: rejected at once, no dry run.
	propose '{"argv":["make","gen"],"reason":"r","expected_paths":[],"risk":5}'
	[ "$status" -eq 35 ]
	pstep dryrun "$PID"
	[ "$status" -eq 21 ]
	jq -e '.dryrun == 0 and .state == "REJECTED"' "$AIRLOCK_STATE_DIR/permits/$PID.json"
}

@test "risk 2 is observed: only scratch space written is 2, nothing is 1, the workspace 3 or 4" {
	make_project
	obs() { # expected level, then the argv as JSON
		propose "{\"argv\":$2,\"reason\":\"r\",\"expected_paths\":${3:-[]}}"
		pstep dryrun "$PID"
		jq -e --argjson want "$1" '.risk_observed == $want' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	}
	obs 2 '["sh","-c","echo x > /tmp/x"]'
	jq -e '.state == "NO_EFFECT" and (.observed | contains("scratch"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	jq -e '.history[-1].observed | contains("scratch")' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	obs 2 '["sh","-c","mkdir -p /tmp/a/b && : > /tmp/a/b/c"]'
	obs 1 '["true"]'
	jq -e '.state == "NO_EFFECT" and .observed == "nothing in the workspace changed"' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	# Scratch and the workspace: the workspace decides.
	obs 3 '["sh","-c","echo x > /tmp/x; echo new > gen.txt"]' '["gen.txt"]'
	obs 4 '["sh","-c","echo x > /tmp/x; echo more >> notes.txt"]' '["notes.txt"]'
	[ "$(cat notes.txt)" = notes ]
}

@test "a failing verify rolls the tree back; a passing one keeps it" {
	make_project
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"],"verify":["grep","-q","old","gen.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	pstep exec "$PID"
	[ "$status" -eq 37 ]
	[ "$(jq -r .state <<<"$output")" = ROLLED_BACK ]
	[[ "$stderr" == *"verify failed"* ]]
	[ ! -e gen.txt ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED ROLLED_BACK" ]

	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep dryrun "$PID"
	pstep exec "$PID" --verify -- grep -q new gen.txt
	[ "$status" -eq 0 ]
	[ "$(state "$PID")" = APPLIED ]
	[ "$(cat gen.txt)" = new ]
}

# Appends a ledger entry that backs FILE as permit ID's record, as an agent
# with write access to the state directory could (no checkpoint signs it).
forge_backing() { # file id
	log="$AIRLOCK_STATE_DIR/ledger/log"
	seq=$(wc -l <"$log")
	jq -cn --argjson seq "$seq" --arg id "$2" --arg path "permits/$2.json" \
		--arg sha "$(sha256sum "$1" | cut -d' ' -f1)" \
		'{v:1, seq:$seq, kind:"permit-transition", id:$id, path:$path, sha256:$sha, time:"2026-01-01T00:00:00.000Z"}' >>"$log"
}

@test "an approval covers nothing once the permit, its paths or its change set are edited" {
	enrol
	make_project
	json='{"argv":["make","-s","tracked"],"reason":"r","expected_paths":["notes.txt"]}'
	propose "$json"
	A=$PID
	pstep dryrun "$A"
	approve "$A"
	[[ "$output" == *'"state":"APPROVED"'* ]]
	rec="$AIRLOCK_STATE_DIR/permits/$A.json"
	cp "$rec" "$TEST_DIR/approved.json"

	# The command edited after approval: refused, nothing changed.
	jq '.argv[2] = "gen"' "$TEST_DIR/approved.json" > "$rec"
	# The ledger backs only the record as committed: refused before the
	# approval is even read.
	pstep exec "$A"
	[ "$status" -eq 21 ]
	[[ "$stderr" == *"the ledger does not back permit $A (rewritten)"* ]]
	# An insider who also forges the ledger entry (unsigned, past the
	# checkpoint) meets the approval's signature, which covers the command.
	forge_backing "$rec" "$A"
	pstep exec "$A"
	[ "$status" -eq 36 ]
	[[ "$stderr" == *"does not cover this permit"* ]]
	[ "$(cat notes.txt)" = notes ]
	# The path list widened after approval.
	jq '.expected_paths = ["notes.txt", "**"] | .state = "APPROVED"' "$TEST_DIR/approved.json" > "$rec"
	pstep exec "$A"
	[ "$status" -eq 21 ]
	[ "$(cat notes.txt)" = notes ]

	# The same proposal again, the old approval pasted into it.
	propose "$json"
	C=$PID
	pstep dryrun "$C"
	jq --slurpfile a "$TEST_DIR/approved.json" '.approval = $a[0].approval | .state = "APPROVED"' \
		"$AIRLOCK_STATE_DIR/permits/$C.json" > "$TEST_DIR/c.json"
	cp "$TEST_DIR/c.json" "$AIRLOCK_STATE_DIR/permits/$C.json"
	pstep exec "$C"
	[ "$status" -eq 21 ]
	[ "$(cat notes.txt)" = notes ]

	# The change set edited under the approval: bytes its dry run's entry
	# does not back, refused by name before anything is judged or recorded.
	cp "$TEST_DIR/approved.json" "$rec"
	forge_backing "$rec" "$A"
	cs="$AIRLOCK_STATE_DIR/dryruns/$(jq -r .dryrun "$rec")/changeset.json"
	jq -c '.changes[0].size += 1' "$cs" > "$TEST_DIR/cs" && cat "$TEST_DIR/cs" > "$cs"
	pstep exec "$A"
	[ "$status" -eq 21 ]
	one_error_line "permit $A: the ledger does not back the change set of dry run $(jq -r .dryrun "$rec") (rewritten)"
	[ "$(state "$A")" = APPROVED ]
	[ "$(cat notes.txt)" = notes ]
}

# The seed's struct CommandPermit as written (seed 002): every field, its
# candidate adapted to a command the tests have.
seed_struct() { # label
	cat <<EOF
{"id":"$1","candidate":"mkdir -p build && touch build/out","reason":"cache exhaustion blocks fork","expected_paths":["build"],"rollback":"git clean -qfd build","timeout_seconds":20,"risk":3,"dry_run_required":true}
EOF
}

@test "the seed's struct as written: its id is the proposer's label, recorded and shown, never the permit's identity (issue 20)" {
	enrol
	git_init
	printf 'build/\n' > .gitignore
	echo hi > README
	commit_all init
	propose "$(seed_struct fix-build-001)"
	[ "$status" -eq 0 ]
	A=$PID
	jq -e '.state == "PROPOSED" and .label == "fix-build-001" and (.permit | type) == "number"' <<<"$output"
	rec="$AIRLOCK_STATE_DIR/permits/$A.json"
	# The permit keeps its own numeric id; the label is recorded beside it.
	jq -e --argjson id "$A" '.id == $id and .label == "fix-build-001" and .timeout_seconds == 20 and
		.declared_risk == 3 and .dry_run_required == true and .rollback == "git clean -qfd build"' "$rec"
	# The declared 3 cannot lower the classified 4; the classification names the commands.
	jq -e '.risk == 4 and .classify_rule == "default" and
		.classify_reason == "mkdir: no rule knows this command: assumed to change tracked files (also: touch)"' "$rec"
	pstep show "$A"
	jq -e '.label == "fix-build-001"' <<<"$output"
	run "$AIRLOCK" permit list
	[[ "$output" == *"[fix-build-001] sh -c mkdir -p build && touch build/out"* ]]
	run "$AIRLOCK" permit list --json
	jq -e '.[0].label == "fix-build-001"' <<<"$output"

	pstep dryrun "$A"
	[ "$(jq -r .state <<<"$output")" = DRY_RUN_OK ]
	[ "$(jq -r .needs <<<"$output")" = approval ]
	approve "$A"
	[[ "$output" == *'"state":"APPROVED"'* ]]

	# The same label, the same candidate: a new permit that shares no approval.
	propose "$(seed_struct fix-build-001)"
	[ "$status" -eq 0 ]
	B=$PID
	[ "$B" != "$A" ]
	jq -e '.state == "PROPOSED" and .label == "fix-build-001"' <<<"$output"
	jq -e '.approval == null and .label == "fix-build-001"' "$AIRLOCK_STATE_DIR/permits/$B.json"
	pstep dryrun "$B"
	[ "$(jq -r .state <<<"$output")" = DRY_RUN_OK ]
	[ "$(jq -r .needs <<<"$output")" = approval ]
	pstep exec "$B"
	[ "$status" -eq 36 ]
	[ "$(state "$B")" = REJECTED_WITHOUT_APPROVAL ]
	[ ! -e build/out ]
	# The approved one still is, and runs.
	[ "$(state "$A")" = APPROVED ]
	pstep exec "$A"
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = APPLIED ]
	[ -f build/out ]

	# The label is model text: any printable text up to 128 bytes, escaped
	# on output as JSON; the list prints it as text.
	label='a "quoted" \ label é ✓ <b>'
	propose "$(jq -cn --arg l "$label" '{id:$l, argv:["true"], reason:"r", expected_paths:[]}')"
	[ "$status" -eq 0 ]
	jq -e --arg l "$label" '.label == $l' <<<"$output"
	jq -e --arg l "$label" '.label == $l' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	run "$AIRLOCK" permit list
	[[ "$output" == *"[$label] true"* ]]
	propose "$(jq -cn --arg l "$(printf 'x%.0s' {1..128})" '{id:$l, argv:["true"], reason:"r", expected_paths:[]}')"
	[ "$status" -eq 0 ]
}

@test "propose: strict parsing, one line naming what is wrong, status 30, and a record" {
	bad() {
		run --separate-stderr "$AIRLOCK" permit propose - <<<"$1"
		[ "$status" -eq 30 ]
		one_error_line "$2"
		id=$(jq -r .permit <<<"$output")
		jq -e '.state == "INVALID" and (.invalid_reason | length) > 0' \
			"$AIRLOCK_STATE_DIR/permits/$id.json"
	}
	bad '{"candidate":"","reason":"r","expected_paths":[]}' "'candidate' is empty"
	bad '{"candidate":"make","reason":"r","expected_paths":[],"sudo":true}' "unknown key 'sudo'"
	bad '{"argv":"make","reason":"r","expected_paths":[]}' "'argv' must be an array of strings"
	bad '{"argv":["make"],"reason":"r","expected_paths":["/etc/passwd"]}' "is absolute"
	bad '{"argv":["make"],"reason":"r","expected_paths":["build/../../x"]}' "'..' component"
	bad '{"argv":["make"],"candidate":"make","reason":"r","expected_paths":[]}' "not both"
	bad '{"argv":["make"],"reason":"r","expected_paths":[],"confidence":"high"}' "'confidence'"
	bad '{"argv":["make"],"reason":"r","expected_paths":[],"risk":9}' "'risk'"
	bad 'not json' "invalid JSON"
	# The seed's fields (issue 20): the label is untrusted text, bounded;
	# a permit that skips the dry run is not offered.
	bad '{"id":"","argv":["make"],"reason":"r","expected_paths":[]}' "'id' is empty"
	bad '{"id":7,"argv":["make"],"reason":"r","expected_paths":[]}' "'id' must be a string"
	bad "{\"id\":\"$(printf 'x%.0s' {1..129})\",\"argv\":[\"make\"],\"reason\":\"r\",\"expected_paths\":[]}" "'id' is longer than 128 bytes"
	bad '{"id":"a\u001b[2Jb","argv":["make"],"reason":"r","expected_paths":[]}' "'id' has a control character"
	bad '{"id":"a\u0085b","argv":["make"],"reason":"r","expected_paths":[]}' "'id' has a control character"
	bad '{"id":"a\u202eb","argv":["make"],"reason":"r","expected_paths":[]}' "'id' has a control character"
	bad '{"id":"x","candidate":"make","reason":"r","expected_paths":[],"dry_run_required":false}' "'dry_run_required'"
	run "$AIRLOCK" permit list
	[ "$status" -eq 0 ]
	[ "$(grep -c INVALID <<<"$output")" -eq 16 ]
	pstep show 999
	[ "$status" -eq 1 ]
}

@test "exec survives SIGKILL inside the apply and before its commit; plain apply refuses a permit's dry run" {
	make_project
	propose '{"argv":["make","-s","gen","tracked"],"reason":"r","expected_paths":["gen.txt","notes.txt"],"risk":3}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	dry=$(jq -r .dryrun <<<"$output")
	# The agent skips the permit: refused.
	al apply "$dry"
	[ "$status" -eq 21 ]
	[[ "$stderr" == *"belongs to a permit"* ]]
	[ ! -e gen.txt ]
	# Risk 4 (a tracked file): approve needs a terminal; as root and nobody
	# the approver lives in this test's state directory.
	enrol
	approve "$PID"
	[[ "$output" == *'"state":"APPROVED"'* ]]
	# Killed after the first of two operations: the next exec recovers
	# (rolls the torn apply back) and applies the whole.
	AIRLOCK_TEST_PERMIT_CRASH=1 run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
	[ "$(state "$PID")" = APPROVED ]
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(cat gen.txt)" = new ]
	[ "$(tail -1 notes.txt)" = changed ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPROVED APPLIED" ]

	# Killed after the apply, before APPLIED is committed: the next exec
	# records what happened instead of applying twice.
	git checkout -q notes.txt && rm gen.txt
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep dryrun "$PID"
	DRY=$(jq -r .dryrun <<<"$output")
	AIRLOCK_TEST_PERMIT_CRASH=apply run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
	[ "$(state "$PID")" = DRY_RUN_OK ]
	[ "$(cat gen.txt)" = new ]
	# The apply stays named under way until APPLIED's sync: the next
	# exec's recovery pass visits it, finds it committed, removes the name.
	[ -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$DRY" ]
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	jq -e '.history[-1].to == "APPLIED" and (.history[-1].event | contains("crashed"))' \
		"$AIRLOCK_STATE_DIR/permits/$PID.json"
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$DRY" ]
	# An exec that is not cut removes its name after APPLIED.
	rm gen.txt
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(cat gen.txt)" = new ]
	[ -z "$(ls "$AIRLOCK_STATE_DIR/dryruns/.applying")" ]
}

# Sets $lib to the fault-injection shim (tests/helpers/faultfs.c).
faultfs() {
	lib=${AIRLOCK_FAULTFS:-$(dirname "$AIRLOCK")/tests/libfaultfs.so}
	[ -e "$lib" ] || skip "the fault-injection shim is not built"
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "LD_PRELOAD under a sanitizer"
}

# The workspace as it is: names, types, sizes, modes, contents.
snap() {
	find . -path ./.git -prune -o -printf '%p %y %s %m\n' | LC_ALL=C sort
	cat out-* 2>/dev/null | sha256sum
}

# A project whose permit creates 50 generated files, and the tree before and
# after (the candidate run in a copy, outside airlock).
kill_project() {
	git_init
	printf 'out-*\n' > .gitignore
	echo notes > notes.txt
	# make classifies 3 (a shell string would be 4 and need an approver)
	printf 'gen:\n\t@i=1; while [ $$i -le 50 ]; do echo $$i > out-$$i; i=$$((i+1)); done\n' > Makefile
	commit_all init
	ORIG=$(snap)
	cp -a . "$TEST_DIR/ref" && make -s -C "$TEST_DIR/ref" gen
	APPLIED=$(cd "$TEST_DIR/ref" && snap)
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
}

# A new permit for the candidate with a verify (true or false), dry-run on
# the original tree.
kill_permit() {
	rm -f out-*
	propose "{\"argv\":[\"make\",\"-s\",\"gen\"],\"reason\":\"r\",\"expected_paths\":[\"out-*\"],\"verify\":[\"$1\"]}"
	pstep dryrun "$PID"
	[ "$status" -eq 0 ] || { echo "dry run: $status $output $stderr"; return 1; }
	DRY=$(jq -r .dryrun <<<"$output")
}

# After a killed exec: the tree is the original or the change set, never a
# mix; then the next `permit exec` ends where an exec that was never killed
# ends, and the permit, the dry run, the tree and the ledger agree.
after_kill() { # verify (true|false)
	now=$(snap)
	[ "$now" = "$ORIG" ] || [ "$now" = "$APPLIED" ] || [ "$(state "$PID")" = APPLIED ] ||
		{ echo "a torn tree outside an apply's recovery" >&2; return 1; }
	pstep exec "$PID"
	echo "recovery exec: $status $output $stderr"
	if [ "$1" = true ]; then
		[ "$status" -eq 0 ]
		[ "$(snap)" = "$APPLIED" ]
		[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED APPLIED" ]
		jq -e '.history[-1].event == "verify passed"' "$AIRLOCK_STATE_DIR/permits/$PID.json"
		[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$DRY/state")" = applied ]
		pstep exec "$PID"
		[ "$status" -eq 21 ]
	else
		[ "$status" -eq 37 ]
		rolled_back_whole "$PID" "$DRY"
	fi
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "$output"
	[ "$status" -eq 0 ]
}

# Proposes a permit whose verify is VERIFY (true or false), kills its exec
# just after POINT (a journal mark or a ledger entry of that kind written,
# else a file renamed; ID stands for the permit's id, :N for the Nth time),
# then checks the next exec.
kill_exec_at() { # verify point
	kill_permit "$1"
	kill_exec_after "$2"
	after_kill "$1"
}

# Kills the exec of permit $PID just after POINT (as kill_exec_at).
kill_exec_after() { # point
	local write='' rename=''
	case $1 in
	'"mark"'* | '"kind"'*) write=$1 ;;
	*) rename=${1/ID/$PID} ;;
	esac
	echo "# kill after $1 (permit $PID)"
	LD_PRELOAD=$lib FAULTFS_KILL_AFTER_WRITE=$write FAULTFS_KILL_AFTER_RENAME=$rename \
		run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
}

# After an exec of a permit whose verify fails, killed wherever (LABEL says
# where): unless it had ended, the next exec ends it (37); then the tree,
# the permit, its dry run and the ledger agree. It ended when the permit's
# record is ROLLED_BACK and committed: a kill between the record's rename
# and its entry leaves ROLLED_BACK on disk, which `ledger verify` reports
# DIFFERS until the next permit step puts the committed record back
# (store_settle) and ends the exec. A receipt is committed by its entry
# alone (docs/ledger.md): no kill leaves one for `ledger recover`. A record
# written before its entry (a dry run's change set, docs/ledger.md "One
# commit path") can still be cut from it: UNBACKED, which only `ledger
# recover` resolves.
ends_rolled_back() { # label
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "$1: before the next exec: $output"
	if [ "$(state "$PID")" != ROLLED_BACK ] || [[ "$output" == *"DIFFERS permits/$PID.json:"* ]]; then
		pstep exec "$PID"
		echo "$1: recovery exec: $status $stderr"
		[ "$status" -eq 37 ]
	fi
	rolled_back_whole "$PID" "$DRY"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "$1: $output"
	[[ "$output" != *TAMPERED* && "$output" != *DIFFERS* && "$output" != *MISSING* ]]
	if [ "$status" -ne 0 ]; then
		[[ "$output" != *"UNBACKED receipts/"* ]]
		"$AIRLOCK" ledger recover >/dev/null
		run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
		echo "$1: after recover: $output"
	fi
	[ "$status" -eq 0 ]
}

@test "SIGKILL at each step of a permit exec: the apply's commit, the state's and the record's, inside and after a rollback" {
	faultfs
	kill_project
	# Each step, killed just after it: the next exec finishes the job.
	for point in '"mark":"committed"' state 'ID.json' '"kind":"receipt"'; do
		kill_exec_at true "$point"
	done
	# The verify's receipt committed by its entry, its file not written yet.
	kill_exec_at false '"kind":"receipt"'
	# A failing verify's rollback, killed inside it and after each of its steps.
	for point in out-25:2 '"mark":"rolled_back"' state:2 'ID.json:2'; do
		kill_exec_at false "$point"
	done
}

@test "SIGKILL during a slow verify, and at increasing delays: the next exec ends consistently" {
	kill_project
	# The verify sleeps; the kill lands while it runs (its shell is named by $0).
	marker="permit-verify-$$-$RANDOM"
	for verdict in true false; do
		rm -f out-*
		propose "{\"argv\":[\"make\",\"-s\",\"gen\"],\"reason\":\"r\",\"expected_paths\":[\"out-*\"],\"verify\":[\"sh\",\"-c\",\"sleep 30; $verdict\",\"$marker\"]}"
		pstep dryrun "$PID"
		[ "$status" -eq 0 ] || { echo "dry run: $status $output $stderr"; return 1; }
		DRY=$(jq -r .dryrun <<<"$output")
		"$AIRLOCK" permit exec "$PID" >/dev/null 2>&1 &
		pid=$!
		for _ in $(seq 1 300); do pgrep -f "$marker" >/dev/null && break; sleep 0.05; done
		pgrep -f "$marker" >/dev/null || { echo "no verify running: permit $(state "$PID")"; return 1; }
		kill -9 "$pid"
		wait "$pid" || true
		no_process_with "$marker"
		[ "$(snap)" = "$APPLIED" ]
		[ "$(state "$PID")" = APPLIED ]
		# The verify that was cut short runs again: a quick one this time.
		pstep exec "$PID" --verify -- "$verdict"
		echo "verify $verdict again: $status $stderr"
		if [ "$verdict" = true ]; then
			[ "$status" -eq 0 ]
			[ "$(snap)" = "$APPLIED" ]
			[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED APPLIED" ]
		else
			[ "$status" -eq 37 ]
			[ "$(snap)" = "$ORIG" ]
			[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED ROLLED_BACK" ]
		fi
		run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	# Killed by hand at a rising delay, wherever that lands: apply, commit,
	# verify, rollback. A receipt is committed by its entry alone, its file
	# a cache (docs/ledger.md): no kill leaves one for `ledger recover`.
	for delay in 0.05 0.1 0.15 0.2 0.3 0.4 0.5 0.7; do
		kill_permit false
		"$AIRLOCK" permit exec "$PID" >/dev/null 2>&1 &
		pid=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" || true
		ends_rolled_back "delay $delay"
	done
}

# What a kill by hand (above) may land on, landed on for sure: each step of
# an exec whose verify fails, the last commit's too (its record renamed in,
# its entry not yet appended).
@test "SIGKILL at each step of an exec whose verify fails, judged as a kill by hand is" {
	faultfs
	kill_project
	for point in '"mark":"committed"' state 'ID.json' out-25:2 '"mark":"rolled_back"' state:2 'ID.json:2'; do
		kill_permit false
		kill_exec_after "$point"
		ends_rolled_back "killed after $point"
	done
}

# A permit's record is carried by its ledger entry (docs/ledger.md, "One
# commit path"): its file is an unsynced cache of the log, which a power
# loss may lose or leave torn. Killed just after APPLIED's entry is written,
# the record is committed; then its file is taken away, or torn as an
# unsynced write is: `ledger verify` does not count a missing cache,
# `ledger recover` and the next reader write it back, and the next step
# writes a torn one back (verify counts it no more than a missing one) and
# ends the exec.
@test "a permit's record gone or torn after a kill: the log restores it, the next exec ends the job" {
	faultfs
	kill_project
	kill_permit true
	kill_exec_after '"kind":"permit-transition"'
	rec="$AIRLOCK_STATE_DIR/permits/$PID.json"
	[ "$(state "$PID")" = APPLIED ]
	cp "$rec" "$TEST_DIR/committed.json"
	rm "$rec"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "gone: $output"
	[ "$status" -eq 0 ]
	run "$AIRLOCK" ledger recover
	[ "$status" -eq 0 ]
	cmp "$rec" "$TEST_DIR/committed.json"
	rm "$rec"
	pstep show "$PID"
	[ "$status" -eq 0 ]
	jq -e '.state == "APPLIED"' <<<"$output"
	cmp "$rec" "$TEST_DIR/committed.json"
	# Torn: a prefix of the committed bytes, then only NULs.
	head -c 100 "$TEST_DIR/committed.json" >"$rec"
	after_kill true
	cp "$rec" "$TEST_DIR/committed.json"
	head -c 300 /dev/zero >"$rec"
	# A torn cache is no finding (the log holds the record) ...
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -eq 0 ]
	[[ "$output" != *DIFFERS* ]]
	# ... and the next step writes it back.
	pstep exec "$PID"
	[ "$status" -eq 21 ]
	cmp "$rec" "$TEST_DIR/committed.json"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "$output"
	[ "$status" -eq 0 ]
}

# A power loss on a file system that does not order a rename before a later
# fdatasync of another file may keep the record's previous version while the
# log holds the newer entry (docs/ledger.md, "A permit's record"): the file
# then holds the bytes of an EARLIER entry of the same record, a stale cache,
# which the readers rebuild from the log. That is not tampering: `ledger
# verify` finds nothing, `permit show` says what the log says, `ledger
# recover` and the next step write the newer version back. Bytes no entry
# ever carried are still a rewritten record: DIFFERS, and refused.
@test "a permit's record left at its previous version by a power loss: a stale cache rebuilt from the log; bytes no entry carried are still refused" {
	kill_project
	rm -f out-*
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["out-*"],"verify":["true"]}'
	rec="$AIRLOCK_STATE_DIR/permits/$PID.json"
	cp "$rec" "$TEST_DIR/proposed.json"
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	cp "$rec" "$TEST_DIR/dryrun-ok.json"
	# DRY_RUN_OK's entry is in the log; its rename did not survive.
	cp "$TEST_DIR/proposed.json" "$rec"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "stale: $output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"verdict":"OK"'* ]]
	pstep show "$PID"
	[ "$status" -eq 0 ]
	jq -e '.state == "DRY_RUN_OK"' <<<"$output"
	run "$AIRLOCK" permit list --json
	[ "$status" -eq 0 ]
	jq -e --argjson id "$PID" '.[] | select(.id == $id) | .state == "DRY_RUN_OK"' <<<"$output"
	run "$AIRLOCK" ledger recover
	[ "$status" -eq 0 ]
	cmp "$rec" "$TEST_DIR/dryrun-ok.json"
	# Again; the next step rebuilds it and goes on.
	cp "$TEST_DIR/proposed.json" "$rec"
	pstep exec "$PID"
	echo "exec: $status $stderr"
	[ "$status" -eq 0 ]
	[ "$(state "$PID")" = APPLIED ]
	cp "$rec" "$TEST_DIR/applied.json"
	# Two versions back.
	cp "$TEST_DIR/proposed.json" "$rec"
	pstep exec "$PID"
	[ "$status" -eq 21 ]
	[[ "$stderr" != *"does not back"* ]]
	cmp "$rec" "$TEST_DIR/applied.json"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "rebuilt: $output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"verdict":"OK"'* ]]
	# A forgery: the earlier version edited, bytes no entry carried.
	jq '.reason = "forged"' "$TEST_DIR/dryrun-ok.json" >"$rec"
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "forged: $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"DIFFERS permits/$PID.json"* ]]
	pstep exec "$PID"
	[ "$status" -eq 21 ]
	[[ "$stderr" == *"the ledger does not back permit $PID (rewritten)"* ]]
	run "$AIRLOCK" ledger recover
	[[ "$(jq -r .reason "$rec")" == forged ]]
}

# An exec's apply commits the dry run's state and then APPLIED, one
# fdatasync for both (APPLIED's: store_sync_defer). A power loss before it
# loses both entries (and the checkpoint signed after it); the renamed files
# and the journal's unsynced "committed" mark may or may not survive. That
# is what a kill between the mark and the state's append leaves: with the
# mark, the next exec finds the apply standing; without it, recovery rolls
# the apply back and the exec applies again. The log is cut back to its size
# before the exec; the checkpoint, its kept copies, the index and the sync
# mark (another boot's) as they were.
@test "a power loss that lost an exec's state and APPLIED entries (one sync for both): the next exec ends APPLIED" {
	kill_project
	l="$AIRLOCK_STATE_DIR/ledger"
	for keep_mark in yes no; do
		rm -f out-*
		propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["out-*"]}'
		pstep dryrun "$PID"
		[ "$status" -eq 0 ] || { echo "dry run: $status $stderr"; return 1; }
		DRY=$(jq -r .dryrun <<<"$output")
		size=$(stat -c %s "$l/log")
		rm -rf "$TEST_DIR/before" && mkdir "$TEST_DIR/before"
		cp -a "$l/checkpoint" "$l/index" "$TEST_DIR/before/"
		ls "$l/checkpoints" >"$TEST_DIR/before/kept"
		pstep exec "$PID"
		[ "$status" -eq 0 ] || { echo "exec: $status $stderr"; return 1; }
		[ "$(snap)" = "$APPLIED" ]
		# The power loss.
		truncate -s "$size" "$l/log"
		cp -a "$TEST_DIR/before/checkpoint" "$TEST_DIR/before/index" "$l/"
		for k in "$l"/checkpoints/*; do
			[ -e "$k" ] || continue
			grep -qx "${k##*/}" "$TEST_DIR/before/kept" || rm "$k"
		done
		rm -f "$l/range" "$l/sync"
		j="$AIRLOCK_STATE_DIR/dryruns/$DRY/journal"
		[ "$(tail -n 1 "$j")" = '{"mark":"committed"}' ]
		[ "$keep_mark" = yes ] || sed -i '$d' "$j"
		pstep exec "$PID"
		echo "exec after the power loss (mark kept: $keep_mark): $status $stderr"
		[ "$status" -eq 0 ]
		[ "$(state "$PID")" = APPLIED ]
		[ "$(snap)" = "$APPLIED" ]
		if [ "$keep_mark" = yes ]; then
			jq -e '.history[-1].event | contains("found applied")' \
				"$AIRLOCK_STATE_DIR/permits/$PID.json"
		else
			jq -e '.history[-1].event == "exec"' "$AIRLOCK_STATE_DIR/permits/$PID.json"
		fi
		[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$DRY/state")" = applied ]
		run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
		echo "verify: $output"
		[ "$status" -eq 0 ]
	done
}

# The entries one `propose --exec` commits before something acts on them
# share a sync (store_sync_defer): PROPOSED and the change set's with the
# receipt's, the apply's state with APPLIED's; the checkpoint at the end
# finds the log synced. Three fdatasyncs of the log, where each entry had
# its own (six).

# For the strace'd tests below: a project whose `make gen` writes gen.txt,
# its permit $json proposed and run once (the log's first entry signs a
# checkpoint at once: not the traced call's), gen.txt removed again. Skips
# without strace.
traced_gen_project() {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	git_init
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	echo gen.txt >.gitignore
	commit_all init
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
	rm gen.txt
}

@test "propose --exec: the log is synced three times, deferred entries sharing the next sync" {
	traced_gen_project
	traced -f -qq -y -e trace=fdatasync,fsync -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
	[ "$(cat gen.txt)" = new ]
	grep 'ledger/log>' "$TEST_DIR/trace"
	[ "$(grep -c 'ledger/log>' "$TEST_DIR/trace")" -eq 3 ]
}

# The one checkpoint a `propose --exec` signs at its end needs libcrypto
# loaded and its Ed25519 provider set up (about 2 ms); a thread started
# before the dry run does that while it runs (ed25519_preload(),
# store_checkpoint_defer()). Which thread ends up opening the library is
# the scheduler's (the signer waits for a load under way, or makes it);
# that the thread is started before the quarantine is not.
@test "propose --exec: libcrypto is loaded on a thread started before the dry run's quarantine" {
	traced_gen_project
	# -z: successful calls only, each printed whole at its exit (no line
	# split by another thread's call, no failed search of the loader's path)
	traced -f -qq -z -e trace=execve,clone,clone3,openat -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
	[ "$(cat gen.txt)" = new ]
	main=$(awk '/execve\(/ { print $1; exit }' "$TEST_DIR/trace")
	# the main thread's calls that start a thread or the quarantine, in
	# order: the preload's thread, the read scan's (docs/sandbox.md, "Read
	# tracing"), the quarantine
	starts=$(grep "^$main .*clone3\?(" "$TEST_DIR/trace" | grep -oE 'CLONE_THREAD|CLONE_NEWNS' | head -3)
	[ "$(paste -sd ' ' <<<"$starts")" = "CLONE_THREAD CLONE_THREAD CLONE_NEWNS" ]
	# opened once
	[ "$(grep -c 'openat(.*libcrypto\.so' "$TEST_DIR/trace")" -eq 1 ] ||
		{ grep 'libcrypto' "$TEST_DIR/trace"; return 1; }
}

# The observed risk asks `git ls-files` which files are tracked (about 1.5
# ms, mostly git's start). It is started once the dry run's change set is
# judged and needs it, before the change set's and the receipt's syncs, by a
# thread of its own (the vfork-style clone holds its caller until git's
# execve; the thread stays until git has exited, and git dies with it), and
# collected where the risk is judged: git runs beside those syncs (the
# quarantine is over by then: no supervisor reaps or kills it). Every path
# that does not collect it kills and reaps it.

# $TEST_DIR/trace (strace -f) with each call that another thread's call
# split ("<unfinished ...>", then "<... NAME resumed>") joined into one line,
# at the place of its end: -z would print only the first half of such a
# call, and drop its result.
join_trace() {
	sed -i 's/^\([0-9]*\)  */\1 /' "$TEST_DIR/trace" # strace pads short pids
	awk '/ <unfinished \.\.\.>$/ { sub(/ <unfinished \.\.\.>$/, ""); open[$1] = $0; next }
		$2 == "<..." { pid = $1; rest = $0; sub(/^[0-9]+ <\.\.\. [a-z0-9_]+ resumed> ?/, "", rest)
			print open[pid] rest; delete open[pid]; next }
		{ print }' "$TEST_DIR/trace" >"$TEST_DIR/trace.joined"
	mv "$TEST_DIR/trace.joined" "$TEST_DIR/trace"
}

# Asserts that every line number given is there and smaller than the next.
in_order() {
	local prev='' n
	for n in "$@"; do
		[ -n "$n" ]
		[ -z "$prev" ] || [ "$prev" -lt "$n" ]
		prev=$n
	done
}

# The lines of $TEST_DIR/trace (strace -f, joined) for git's execve and the
# main thread: $main, $git (git's pid), $gitline (its line number).
git_in_trace() {
	join_trace
	main=$(awk '/execve\(/ { print $1; exit }' "$TEST_DIR/trace")
	grep 'execve("[^"]*/git", \["git", "--no-optional-locks"' "$TEST_DIR/trace"
	[ "$(grep -c 'execve("[^"]*/git", \["git", "--no-optional-locks"' "$TEST_DIR/trace")" -eq 1 ]
	git=$(grep 'execve("[^"]*/git", \["git"' "$TEST_DIR/trace" | awk '{ print $1 }')
	gitline=$(grep -n 'execve("[^"]*/git", \["git"' "$TEST_DIR/trace" | cut -d: -f1)
}

@test "propose --exec: git ls-files is started before the change set's and the receipt's syncs, on a thread, and reaped before the apply" {
	traced_gen_project
	out=$(traced -f -qq -y -e trace=execve,clone,clone3,fsync,fdatasync,syncfs,wait4,kill -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<"$json")
	[ "$(cat gen.txt)" = new ]
	git_in_trace
	# git's clone is a thread's, which the main thread made before the
	# change set's first sync (its dry run's directory, before its entry)
	# and the receipt's (the log's first fdatasync: PROPOSED's and the
	# change set's entries wait for it)
	spawner=$(grep "clone3\?(.*CLONE_VFORK.*= $git\$" "$TEST_DIR/trace" | awk '{ print $1 }')
	echo "main $main, spawner $spawner, git $git"
	[ -n "$spawner" ]
	[ "$spawner" != "$main" ]
	made=$(grep -n "^$main clone3\?(.*CLONE_THREAD.*= $spawner\$" "$TEST_DIR/trace" | cut -d: -f1)
	cs=$(grep -n "^$main fsync(.*/dryruns/[0-9]*>)" "$TEST_DIR/trace" | head -n 1 | cut -d: -f1)
	receipt=$(grep -n "^$main fdatasync(.*ledger/log>" "$TEST_DIR/trace" | head -n 1 | cut -d: -f1)
	echo "thread $made, change set $cs, receipt $receipt"
	in_order "$made" "$cs"
	in_order "$made" "$receipt"
	# collected (not killed): reaped by the main thread before the apply's syncfs
	reaped=$(grep -n "^$main wait4($git, .*WEXITSTATUS(s) == 0.*= $git\$" "$TEST_DIR/trace" | cut -d: -f1)
	apply=$(grep -n "^$main syncfs(" "$TEST_DIR/trace" | cut -d: -f1)
	echo "reaped $reaped, apply $apply"
	in_order "$reaped" "$apply"
	run ! grep -q "kill($git," "$TEST_DIR/trace"
	# the risk is still git's: gen.txt is ignored
	[ "$(jq -r .risk_observed "$AIRLOCK_STATE_DIR/permits/$(jq -r .permit <<<"$out").json")" = 3 ]
}

@test "a permit's dry run that fails after git ls-files started kills and reaps git" {
	faultfs
	traced_gen_project
	propose "$json"
	[ "$(state "$PID")" = PROPOSED ]
	# The receipt's sync fails (EIO): the dry run fails after the change set
	# was judged, git started.
	run traced -f -qq -E LD_PRELOAD="$lib" -E FAULTFS_FDATASYNC_EIO=1 \
		-e trace=execve,fdatasync,wait4,kill,exit_group -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit dryrun "$PID"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"receipt"*"not committed"*"could not be synced"* ]]
	git_in_trace
	# killed, then reaped by airlock before it exits: no zombie, no orphan
	grep "^$main kill($git, SIGKILL)" "$TEST_DIR/trace"
	reaped=$(grep -n "^$main wait4($git, .*= $git\$" "$TEST_DIR/trace" | cut -d: -f1)
	end=$(grep -n "^$main exit_group(" "$TEST_DIR/trace" | cut -d: -f1)
	echo "git $gitline, reaped $reaped, exit $end"
	in_order "$reaped" "$end"
	[ "$(ps -o comm= -p "$git" || true)" != git ]
	"$AIRLOCK" ledger recover >/dev/null
}

@test "a permit's dry run whose change set needs no git does not start it" {
	traced_gen_project
	# nothing changes: risk 1, no git
	run --separate-stderr traced -f -qq -e trace=execve -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<'{"argv":["true"],"reason":"r","expected_paths":[]}'
	[ "$(jq -r .state <<<"$output")" = NO_EFFECT ]
	join_trace
	run ! grep 'execve("[^"]*/git"' "$TEST_DIR/trace"
	# the command fails, having written gen.txt: DRY_RUN_FAILED, no git
	printf 'bad:\n\techo x > gen.txt; exit 3\n' >>Makefile
	run --separate-stderr traced -f -qq -e trace=execve -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<'{"argv":["make","-s","bad"],"reason":"r","expected_paths":["gen.txt"]}'
	[ "$(jq -r .state <<<"$output")" = DRY_RUN_FAILED ]
	join_trace
	run ! grep 'execve("[^"]*/git"' "$TEST_DIR/trace"
}

# Before its apply, an exec finishes whatever a crash left of any dry run's
# apply (apply_recover(): a pass over every dry run the state directory
# keeps): an apply of another dry run killed half-way is rolled back (its
# files gone, its state pending), then the permit's change lands; by
# `propose --exec`, and by the exec of a permit dry-run before.
crash_other_apply() {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'echo a > other1.txt; echo b > other2.txt'
	[ "$status" -eq 0 ]
	other=$(jq -r .id <<<"$output")
	run env AIRLOCK_TEST_CRASH_AFTER=1 "$AIRLOCK" apply "$other"
	[ "$status" -eq 137 ]
	[ -e other1.txt ] || [ -e other2.txt ]
}

other_rolled_back() {
	[ "$(cat gen.txt)" = new ]
	[ ! -e other1.txt ] && [ ! -e other2.txt ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$other/state")" = pending ]
	rm gen.txt
}

@test "an exec rolls back another dry run's apply that a crash cut, then applies" {
	git_init
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	printf 'gen.txt\nother*.txt\n' >.gitignore
	commit_all init
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	crash_other_apply
	run --separate-stderr "$AIRLOCK" permit propose --exec - <<<"$json"
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = APPLIED ]
	other_rolled_back
	propose "$json"
	pstep dryrun "$PID"
	[ "$(state "$PID")" = DRY_RUN_OK ]
	crash_other_apply
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(state "$PID")" = APPLIED ]
	other_rolled_back
}

# A power loss at any moment of a `propose --exec`, whose PROPOSED, change
# set and apply's state entries wait for the next synced append
# (store_sync_defer). The exec is killed at the entry of its K-th write of
# the log (strace), then the power loss: the log cut back to what the sync
# mark (ledger/sync: the magic, the boot id, dev, ino, then `synced`) says
# is durable, the mark and the range gone (another boot), the id counters
# at their values before the command in another boot, and, where the log
# lost PROPOSED, the permit's unsynced record too. What the log lost is not
# acted on: a permit it lost is refused; the workspace is changed only if
# the log's permit ends APPLIED after the next exec; `ledger recover` (a
# change set written without its entry, as a kill leaves) and `ledger
# verify` are OK, and the next proposal runs.
power_loss_synced() { # ledger dir: the byte count the sync mark says is durable
	od -An -t u8 -j 80 -N 8 "$1/sync" | tr -d ' '
}

@test "a power loss at any log write of a propose --exec: nothing the log lost is acted on; the next commands recover" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	kill_project
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["out-*"]}'
	for k in 1 2 3 4 5 6 7; do
		export AIRLOCK_STATE_DIR="$TEST_DIR/state-$k"
		l="$AIRLOCK_STATE_DIR/ledger"
		pub="$TEST_DIR/ledger-$k.pub"
		# Permit 1 and dry run 1 make the counters and the first checkpoint.
		rm -f out-*
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
		"$AIRLOCK" ledger key >"$pub"
		rm -f out-*
		cp "$AIRLOCK_STATE_DIR/seq" "$TEST_DIR/seq.r"
		cp "$AIRLOCK_STATE_DIR/permits/seq" "$TEST_DIR/seq.p"
		run traced -qq -o /dev/null -P "$l/log" -e trace=write \
			-e inject=write:signal=KILL:when="$k" \
			"$AIRLOCK" permit propose --exec - <<<"$json"
		echo "k=$k: $status $output"
		killed=$status
		# The power loss.
		synced=$(power_loss_synced "$l")
		echo "log $(stat -c %s "$l/log"), synced $synced"
		truncate -s "$synced" "$l/log"
		rm -f "$l/sync" "$l/range"
		for f in seq permits/seq; do
			src="$TEST_DIR/seq.r"
			[ "$f" = seq ] || src="$TEST_DIR/seq.p"
			{ head -n 1 "$src" && echo 00000000-0000-0000-0000-000000000000; } \
				>"$AIRLOCK_STATE_DIR/$f"
		done
		if ! grep -q '"kind":"permit-transition","id":"2"' "$l/log"; then
			rm -f "$AIRLOCK_STATE_DIR/permits/2.json" "$AIRLOCK_STATE_DIR/permits/2.lock"
		fi
		# The next commands.
		pstep exec 2
		echo "exec 2: $status $output $stderr"
		if ! grep -q '"kind":"permit-transition","id":"2"' "$l/log"; then
			[ "$status" -ne 0 ] # lost: refused, not run
		elif [ "$killed" -eq 0 ]; then # no kill: APPLIED, synced
			[[ "$stderr" == *"permit 2 is APPLIED"* ]]
		else
			[ "$status" -eq 0 ]
			[ "$(jq -r .state <<<"$output")" = APPLIED ]
		fi
		run "$AIRLOCK" ledger recover
		echo "recover: $status $output"
		[ "$status" -eq 0 ]
		run "$AIRLOCK" ledger verify --key "$pub"
		echo "verify: $output"
		[ "$status" -eq 0 ]
		# The workspace is what the log says of permit 2.
		if grep -q '"kind":"permit-transition","id":"2"' "$l/log" &&
			[ "$("$AIRLOCK" permit show 2 | jq -r .state)" = APPLIED ]; then
			[ "$(snap)" = "$APPLIED" ]
		else
			[ "$(snap)" = "$ORIG" ]
		fi
		# The next proposal is made, dry-run and applied.
		rm -f out-*
		run --separate-stderr "$AIRLOCK" permit propose --exec - <<<"$json"
		echo "the next proposal: $status $output $stderr"
		[ "$status" -eq 0 ]
		[ "$(jq -r .state <<<"$output")" = APPLIED ]
		[ "$(snap)" = "$APPLIED" ]
		run "$AIRLOCK" ledger verify --key "$pub"
		[ "$status" -eq 0 ]
	done
}

# The apply's state entry waits for APPLIED's sync (store_sync_defer). The
# agent kills the exec between the two (the state's entry written, not
# synced) and rolls the dry run back from another process, which reads the
# state "applied" and undoes the workspace; a power loss comes before the
# rollback's own entry. The log lost "applied", but the rollback's journal
# mark (synced, with the "committed" mark before it) makes the next command
# finish the rollback: the log says rolled back, the workspace is as before,
# the permit can be executed again, verify is OK.
@test "attack: an exec killed before APPLIED, its dry run rolled back by another process, a power loss before the rollback's entry: the log and the workspace agree" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	kill_project
	l="$AIRLOCK_STATE_DIR/ledger"
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["out-*"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ]
	DRY=$(jq -r .dryrun <<<"$output")
	AIRLOCK_TEST_PERMIT_CRASH=apply run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
	[ "$(snap)" = "$APPLIED" ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$DRY/state")" = applied ]
	# Killed at the entry of its first write of the log: its state entry.
	run traced -qq -o /dev/null -P "$l/log" -e trace=write \
		-e inject=write:signal=KILL:when=1 "$AIRLOCK" rollback "$DRY"
	echo "rollback: $status $output"
	[ "$status" -eq 137 ]
	synced=$(power_loss_synced "$l")
	echo "log $(stat -c %s "$l/log"), synced $synced"
	truncate -s "$synced" "$l/log"
	rm -f "$l/sync" "$l/range"
	pstep exec "$PID"
	echo "exec: $status $output $stderr"
	run "$AIRLOCK" ledger recover
	run "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	echo "verify: $output"
	[ "$status" -eq 0 ]
	# What the log says of the permit, the workspace shows.
	st=$("$AIRLOCK" permit show "$PID" | jq -r .state)
	echo "permit: $st, dry run: $(cat "$AIRLOCK_STATE_DIR/dryruns/$DRY/state")"
	if [ "$st" = APPLIED ]; then
		[ "$(snap)" = "$APPLIED" ]
	else
		[ "$(snap)" = "$ORIG" ]
	fi
}

# A receipt too big for its entry (over 64 KiB on its line: a long
# argument) is written first and named by its entry, as any such record;
# under a dry run's deferral (store_sync_defer) its entry still syncs at
# once: another process's gate may count a receipt (a close) and acts on
# nothing of its own, so a receipt is never left waiting for a later sync.
@test "propose --exec with a receipt too big for its entry: the receipt's entry is synced before the next entry" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	git_init
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	echo gen.txt >.gitignore
	commit_all init
	big=$(head -c 70000 /dev/zero | tr '\0' a)
	json="{\"argv\":[\"make\",\"-s\",\"gen\",\"X=$big\"],\"reason\":\"r\",\"expected_paths\":[\"gen.txt\"]}"
	"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
	rm gen.txt
	traced -qq -y -e trace=write,fdatasync -o "$TEST_DIR/trace" \
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null
	[ "$(cat gen.txt)" = new ]
	# The log's writes and syncs, in order: the receipt's entry, then a sync.
	grep 'ledger/log>' "$TEST_DIR/trace" | sed 's/^\(write\|fdatasync\).*kind\\":\\"\([a-z-]*\).*/\1 \2/; s/^fdatasync.*/fdatasync/' >"$TEST_DIR/order"
	cat "$TEST_DIR/order"
	grep -A1 -x 'write receipt' "$TEST_DIR/order" | tail -n 1 | grep -qx fdatasync
}

@test "attack: an approver.json planted in place of the enrolled one approves no permit" {
	enrol
	make_project
	json='{"argv":["make","-s","tracked"],"reason":"r","expected_paths":["notes.txt"]}'
	propose "$json"
	A=$PID
	pstep dryrun "$A"
	# The agent enrols its own approver elsewhere and puts it in place.
	other="$TEST_DIR/other-state"
	printf '%s\n%s\n' evil-passphrase evil-passphrase |
		AIRLOCK_STATE_DIR="$other" script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
	cp "$other/approver.json" "$AIRLOCK_STATE_DIR/approver.json"
	approve "$A" evil-passphrase
	[ "$status" -ne 0 ]
	[ "$(state "$A")" != APPROVED ]
	pstep exec "$A"
	[ "$status" -ne 0 ]
	[ "$(cat notes.txt)" = notes ]
}

@test "a permit whose dry run lost attributes (ATTRS_LOST) observes risk 5 and is rejected, never applied" {
	command -v setfacl >/dev/null || skip "acl is not installed"
	mkdir d && echo x > d/f
	setfacl -m u:4242:r d/f 2>/dev/null || skip "no ACLs here"
	# As root the quarantine maps every id and mv's copy keeps the ACL; a
	# copy that keeps none (cp -r, then rm -r) is ATTRS_LOST for every caller.
	if [ "$(id -u)" -eq 0 ]; then
		propose '{"argv":["sh","-c","cp -r d e && rm -r d"],"reason":"r","expected_paths":["e","d"]}'
	else
		propose '{"argv":["mv","d","e"],"reason":"r","expected_paths":["e","d"]}'
	fi
	pstep dryrun "$PID"
	[ "$status" -eq 35 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.state == "REJECTED" and .risk_observed == 5 and (.observed | contains("ATTRS_LOST"))' \
		"$AIRLOCK_STATE_DIR/permits/$PID.json"
	[ -d d ]
	[ ! -e e ]
}

# One step where three were: exec of a PROPOSED permit of risk 3 or less
# dry-runs it first, under the same lock, and applies only what that dry
# run judged DRY_RUN_OK; each transition is recorded and committed as the
# separate steps would.
@test "exec of a PROPOSED permit dry-runs it first: PROPOSED DRY_RUN_OK APPLIED, each transition committed" {
	make_project
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep exec "$PID"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.state == "APPLIED" and .risk == 3 and (.dryrun | type) == "number"' <<<"$output"
	[ "$(cat gen.txt)" = new ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED" ]
	jq -e '.history[1].event == "dryrun" and .history[2].event == "exec"' \
		"$AIRLOCK_STATE_DIR/permits/$PID.json"
	dry=$(jq -r .dryrun <<<"$output")
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$dry/state")" = applied ]
	# Every transition is in the ledger, and it verifies.
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	run --separate-stderr "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -eq 0 ] && jq -e '.verdict == "OK"' <<<"$output"
	"$AIRLOCK" ledger prove "permit-transition:$PID" >/dev/null
	pstep exec "$PID"
	[ "$status" -eq 21 ]
}

@test "exec of a PROPOSED permit applies nothing its dry run does not judge DRY_RUN_OK, and a tracked change still waits for the approver" {
	make_project
	# A change no expected path covers: the dry run's verdict, nothing applied.
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["other.txt"]}'
	pstep exec "$PID"
	[ "$status" -eq 32 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .state <<<"$output")" = UNEXPECTED_PATH ]
	[ ! -e gen.txt ]
	[ "$(transitions "$PID")" = "PROPOSED UNEXPECTED_PATH" ]
	# A tracked file (observed risk 4): dry-run, then refused without the
	# approver's signature, as dryrun then exec would be.
	propose '{"argv":["make","-s","tracked"],"reason":"r","expected_paths":["notes.txt"]}'
	pstep exec "$PID"
	[ "$status" -eq 36 ] || { echo "$status $output $stderr"; return 1; }
	[[ "$stderr" == *"needs the approver's signature"* ]]
	[ "$(cat notes.txt)" = notes ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK REJECTED_WITHOUT_APPROVAL" ]
	# Declared (or classified) risk 4 before any dry run: exec does not
	# start one; the permit stays PROPOSED.
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"],"risk":4}'
	pstep exec "$PID"
	[ "$status" -eq 21 ] || { echo "$status $output $stderr"; return 1; }
	[[ "$stderr" == *"airlock permit dryrun $PID"* ]]
	[ "$(state "$PID")" = PROPOSED ]
	[ ! -e gen.txt ]
}

@test "propose --exec: propose, dry run and apply in one command, one line for the final state" {
	make_project
	run --separate-stderr "$AIRLOCK" permit propose --exec - \
		<<<'{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(wc -l <<<"$output")" -eq 1 ]
	jq -e '.state == "APPLIED" and .risk == 3' <<<"$output"
	PID=$(jq -r .permit <<<"$output")
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED" ]
	[ "$(cat gen.txt)" = new ]
	# An invalid proposal stops at propose.
	run --separate-stderr "$AIRLOCK" permit propose --exec - <<<'{"argv":["make"]}'
	[ "$status" -eq 30 ]
	[ "$(jq -r .state <<<"$output")" = INVALID ]
	# Risk 4 before any dry run: recorded and shown PROPOSED, not dry-run, refused (21).
	rm gen.txt
	run --separate-stderr "$AIRLOCK" permit propose --exec - \
		<<<'{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"],"risk":4}'
	[ "$status" -eq 21 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r '"\(.state) \(.risk)"' <<<"$output")" = "PROPOSED 4" ]
	[[ "$stderr" == *"airlock permit dryrun"* ]]
	[ ! -e gen.txt ]
}

@test "exec of a PROPOSED permit killed after its apply, before APPLIED is committed: the next exec records it" {
	make_project
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	AIRLOCK_TEST_PERMIT_CRASH=apply run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
	[ "$(state "$PID")" = DRY_RUN_OK ]
	[ "$(cat gen.txt)" = new ]
	pstep exec "$PID"
	[ "$status" -eq 0 ]
	[ "$(transitions "$PID")" = "PROPOSED DRY_RUN_OK APPLIED" ]
	jq -e '.history[-1].event | contains("crashed")' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	# Killed inside the apply: the next exec rolls the torn apply back and applies the whole.
	rm gen.txt
	printf 'two:\n\techo a > gen.txt\n\techo b > gen2.txt\n' >> Makefile
	propose '{"argv":["make","-s","two"],"reason":"r","expected_paths":["gen.txt","gen2.txt"]}'
	AIRLOCK_TEST_PERMIT_CRASH=1 run "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 137 ]
	[ "$(state "$PID")" = DRY_RUN_OK ]
	pstep exec "$PID"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(cat gen.txt)" = a ]
	[ "$(cat gen2.txt)" = b ]
}

# ATTACK: a permit's dry run used to be marked the permit's only after its
# change set was committed. In between (here: the dry run killed just after
# the change set's entry), plain `airlock apply` took it for an ordinary dry
# run and put a change the permit had not yet judged (risk, approval) into
# the real tree. The mark is made when the dry run's directory is.
@test "attack: a permit's dry run cut after its change set's commit is not applied by plain apply" {
	faultfs
	make_project
	propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	LD_PRELOAD=$lib FAULTFS_KILL_AFTER_WRITE='"kind":"dryrun"' run "$AIRLOCK" permit dryrun "$PID"
	[ "$status" -eq 137 ]
	dry=$(find "$AIRLOCK_STATE_DIR/dryruns" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
	# The change set committed (its entry carries it; the cache is
	# written after, so the kill left none: apply reads the log's).
	[ -n "$dry" ] && grep -q "\"kind\":\"dryrun\",\"id\":\"$dry\"" "$AIRLOCK_STATE_DIR/ledger/log"
	run --separate-stderr "$AIRLOCK" apply "$dry"
	echo "apply $dry: $status $stderr"
	[ "$status" -ne 0 ]
	[ ! -e gen.txt ]
}

# A repository whose index is a FIFO (git ls-files hangs in open()), a
# Makefile that makes the ignored gen.txt, and its proposal in $json.
fifo_index_repo() {
	git_init
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	echo gen.txt >.gitignore
	commit_all init
	rm .git/index && mkfifo .git/index
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
}

# Attack (attackread29): git on the host reads the workspace's .git, which
# the agent controls. An index that is a FIFO (or a config include of one)
# holds `git ls-files` in open() for ever: the permit waited for it with no
# end, and git outlived an airlock stopped by a signal. git gets a deadline
# (a test build's AIRLOCK_TEST_PERMIT_GIT_TIMEOUT_MS), then is killed and
# reaped, and the risk is judged as without an index.
@test "a permit's git ls-files that hangs (.git/index a FIFO) is killed at its deadline: no index, no git left" {
	fifo_index_repo
	AIRLOCK_TEST_PERMIT_GIT_TIMEOUT_MS=500 run --separate-stderr timeout 20 "$AIRLOCK" permit propose --exec - <<<"$json"
	echo "$status $output $stderr"
	# Before: hung until timeout(1) ended it; let a left git go.
	[ "$status" -ne 124 ] || { timeout 2 sh -c ': > .git/index' || true; return 1; }
	[ "$status" -eq 0 ]
	[ "$(cat gen.txt)" = new ]
	PID=$(jq -r .permit <<<"$output")
	# Without the index gen.txt, created, is risk 3 still.
	[ "$(jq -r .risk_observed "$AIRLOCK_STATE_DIR/permits/$PID.json")" = 3 ]
	no_process_with "$WORK ls-files"
}

# Attack (attackexe30): an index is the agent's (.git/index and .git/objects
# are writable in the quarantine). In a partial clone (a legitimate
# configuration: extensions.partialClone), an index with a sparse directory
# whose tree is missing makes `git ls-files` expand it and fetch the tree
# from the promisor remote: a `git fetch` on the host, outside the
# quarantine's network policy, that starts the transport (here a local
# upload-pack, through a shell) in processes PR_SET_PDEATHSIG does not
# reach. git may start no program: none of its subcommands is found.
@test "a permit's git ls-files starts no program: a partial clone's lazy fetch of a sparse index's missing tree" {
	git_init
	mkdir a b
	echo 1 >a/x
	echo 2 >b/y
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	echo gen.txt >.gitignore
	commit_all init
	git sparse-checkout init --cone --sparse-index 2>/dev/null || skip "git has no sparse index"
	git sparse-checkout set a
	tree=$(git ls-files -s --sparse | awk '$4 == "b/" { print $2 }')
	[ -n "$tree" ] || skip "git wrote no sparse directory"
	rm ".git/objects/${tree:0:2}/${tree:2}"
	git config core.repositoryformatversion 1
	git config extensions.partialClone origin
	git config remote.origin.url "$WORK"
	git config remote.origin.promisor true
	git config remote.origin.uploadpack "sh -c 'echo \$\$ >$TEST_DIR/fetched; exit 1'"
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	run --separate-stderr timeout 60 "$AIRLOCK" permit propose --exec - <<<"$json"
	echo "$status $output $stderr"
	[ "$status" -eq 0 ]
	[ "$(cat gen.txt)" = new ]
	[ ! -e "$TEST_DIR/fetched" ]
	no_process_with "$WORK ls-files"
}

# Attack (issue 22): airlock stopped by a signal while git hangs on a FIFO
# index. git dies with airlock whatever killed it: it is started by a thread
# that lives until git has exited, with PR_SET_PDEATHSIG(SIGKILL).
git_dies_with_airlock() { # signal
	fifo_index_repo
	# A background job ignores SIGINT unless told otherwise.
	AIRLOCK_TEST_PERMIT_GIT_TIMEOUT_MS=60000 env --default-signal=INT \
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null 2>&1 &
	p=$!
	for _ in $(seq 100); do
		pgrep -f -- "$WORK ls-files" >/dev/null && break
		sleep 0.1
	done
	pgrep -f -- "$WORK ls-files" >/dev/null
	kill "-$1" "$p"
	wait "$p" || true
	for _ in $(seq 10); do
		pgrep -f -- "$WORK ls-files" >/dev/null || break
		sleep 0.1
	done
	# Before: git hung on the FIFO for ever; let it go.
	if pgrep -f -- "$WORK ls-files" >/dev/null; then
		pgrep -af -- "$WORK ls-files" >&2
		timeout 2 sh -c ': > .git/index' || true
		return 1
	fi
}

@test "git ls-files dies with airlock: SIGTERM" {
	git_dies_with_airlock TERM
}

@test "git ls-files dies with airlock: SIGKILL" {
	git_dies_with_airlock KILL
}

@test "git ls-files dies with airlock: SIGINT" {
	git_dies_with_airlock INT
}

@test "git ls-files dies with airlock: SIGHUP" {
	git_dies_with_airlock HUP
}

# Attack (attackread29): the agent kills airlock (SIGKILL) at any moment of
# propose --exec, git's thread and git among them: no git is left running,
# the log recovers, and the next propose applies.
@test "propose --exec killed at random moments leaves no git, and the next one applies" {
	git_init
	printf 'gen:\n\techo new > gen.txt\n' >Makefile
	echo gen.txt >.gitignore
	commit_all init
	json='{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
	for _ in 1 2 3 4 5 6 7 8; do
		rm -f gen.txt
		"$AIRLOCK" permit propose --exec - <<<"$json" >/dev/null 2>&1 &
		p=$!
		sleep "0.0$((RANDOM % 8))"
		kill -9 "$p" 2>/dev/null || true
		wait "$p" || true
	done
	no_process_with "$WORK ls-files"
	"$AIRLOCK" ledger recover >/dev/null
	rm -f gen.txt
	run --separate-stderr "$AIRLOCK" permit propose --exec - <<<"$json"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .state <<<"$output")" = APPLIED ]
	[ "$(cat gen.txt)" = new ]
}

# A permit's dry run killed at each point of its commit (the change set's
# entry, the receipt's, the cache's temporary and rename, the permit's
# transition): `ledger verify` is OK with no manual step; plain apply never
# applies the permit's dry run; the next exec either applies a change set
# whose digest is the permit's reviewed one and the ledger's, or refuses
# with a message, and nothing reaches the tree the permit did not judge.
@test "a permit's dry run killed at every point of its commit: verify OK, apply refuses, exec applies only the carried, reviewed change set" {
	faultfs
	make_project
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	for point in '"kind":"dryrun"' '"kind":"receipt"' '{"schema":"airlock.changeset' \
		'rename:changeset.json' '"kind":"permit-transition"'; do
		rm -f gen.txt
		propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
		if [ "${point%%:*}" = rename ]; then
			LD_PRELOAD=$lib FAULTFS_KILL_AFTER_RENAME=${point#rename:} run "$AIRLOCK" permit dryrun "$PID"
		else
			LD_PRELOAD=$lib FAULTFS_KILL_AFTER_WRITE=$point run "$AIRLOCK" permit dryrun "$PID"
		fi
		[ "$status" -eq 137 ] || { echo "$point: not killed: $status $output"; return 1; }
		dry=$(find "$AIRLOCK_STATE_DIR/dryruns" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
		run --separate-stderr "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
		[ "$status" -eq 0 ] || { echo "$point: verify: $output $stderr"; return 1; }
		run --separate-stderr "$AIRLOCK" apply "$dry"
		[ "$status" -ne 0 ]
		[ -n "$stderr" ]
		[ ! -e gen.txt ]
		pstep exec "$PID"
		echo "$point: exec $PID (dry run $dry, $(state "$PID")): $status $stderr"
		if [ "$status" -eq 0 ]; then
			[ "$(cat gen.txt)" = new ]
			d=$(jq -r .dryrun "$AIRLOCK_STATE_DIR/permits/$PID.json")
			want=$(jq -r .changeset_sha256 "$AIRLOCK_STATE_DIR/permits/$PID.json")
			[ "$(jq -r "select(.kind == \"dryrun\" and .id == \"$d\") | .sha256" "$AIRLOCK_STATE_DIR/ledger/log" | tail -1)" = "$want" ]
			[ "$(sha256sum <"$AIRLOCK_STATE_DIR/dryruns/$d/changeset.json" | cut -d' ' -f1)" = "$want" ]
		else
			[ -n "$stderr" ]
			[ ! -e gen.txt ]
		fi
		run --separate-stderr "$AIRLOCK" ledger verify --key "$TEST_DIR/ledger.pub"
		[ "$status" -eq 0 ] || { echo "$point: verify after exec: $output $stderr"; return 1; }
	done
}

# ATTACK: the change set a permit reviewed (changeset_sha256) swapped after
# the review for another one the ledger carries (another permit's dry run
# of the same workspace), whole or cut to a document: exec applies nothing
# (and rejects the permit). A torn copy of its own is read from the log:
# exec applies the reviewed bytes.
@test "attack: a permit's change set swapped after review for another carried one is not applied; a torn one applies the reviewed bytes" {
	make_project
	printf 'other:\n\techo other > gen.txt\n' >>Makefile
	commit_all other
	propose '{"argv":["make","-s","other"],"reason":"r","expected_paths":["gen.txt"]}'
	pstep dryrun "$PID"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	other="$AIRLOCK_STATE_DIR/dryruns/$(jq -r .dryrun <<<"$output")/changeset.json"
	for forged in whole cut torn; do
		propose '{"argv":["make","-s","gen"],"reason":"r","expected_paths":["gen.txt"]}'
		pstep dryrun "$PID"
		[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
		cs="$AIRLOCK_STATE_DIR/dryruns/$(jq -r .dryrun <<<"$output")/changeset.json"
		cp "$cs" "$TEST_DIR/reviewed"
		case $forged in
		whole) cp "$other" "$cs" ;;
		cut) head -c -1 "$other" >"$cs" ;;
		torn) head -c 40 "$TEST_DIR/reviewed" >"$cs" ;;
		esac
		pstep exec "$PID"
		echo "$forged: $status $stderr"
		if [ $forged = torn ]; then
			[ "$status" -eq 0 ]
			[ "$(cat gen.txt)" = new ]
			cmp "$TEST_DIR/reviewed" "$cs"
			[ "$(sha256sum <"$cs" | cut -d' ' -f1)" = "$(jq -r .changeset_sha256 "$AIRLOCK_STATE_DIR/permits/$PID.json")" ]
		else
			# Refused by the permit's own check, as apply's: bytes no
			# entry backs are not judged, and nothing is recorded.
			[ "$status" -ne 0 ]
			[[ "$stderr" == *"the ledger does not back the change set of dry run"* ]]
			[ ! -e gen.txt ]
			[ "$(state "$PID")" = DRY_RUN_OK ]
		fi
	done
}

# The change set a permit records, shows and has the approver sign is the one
# its dry run's entry commits (or carries), as apply's: bytes planted in
# dryruns/<id>/changeset.json (by whoever can write the state directory; here
# a test build's hook, between the dry run's commit and the permit's read, and
# then after an honest dry run) are refused by name, nothing recorded.
@test "attack: a change set planted in a permit's dry run is refused before anything is recorded, shown or signed" {
	enrol
	make_project
	# A valid change set of another dry run of this workspace.
	al dryrun --json --expect notes.txt -- sh -c 'echo evil >> notes.txt'
	[ "$status" -eq 0 ]
	cp "$AIRLOCK_STATE_DIR/dryruns/$(jq -r .id <<<"$output")/changeset.json" "$TEST_DIR/evil.json"
	evil=$(sha256sum <"$TEST_DIR/evil.json" | cut -d' ' -f1)
	propose '{"argv":["make","-s","tracked"],"reason":"r","expected_paths":["notes.txt"]}'
	rec="$AIRLOCK_STATE_DIR/permits/$PID.json"
	dryruns="$AIRLOCK_STATE_DIR/dryruns"
	plant="cp '$TEST_DIR/evil.json' '$dryruns/'\$(ls '$dryruns' | sort -n | tail -1)/changeset.json"
	run --separate-stderr env AIRLOCK_TEST_PERMIT_RECHECK="$plant" "$AIRLOCK" permit dryrun "$PID"
	echo "planted at the dry run: $status $output $stderr"
	d=$(ls "$dryruns" | sort -n | tail -1)
	cmp "$TEST_DIR/evil.json" "$dryruns/$d/changeset.json"
	[ "$status" -ne 0 ]
	one_error_line "permit $PID: the ledger does not back the change set of dry run $d (rewritten)"
	[ "$(transitions "$PID")" = PROPOSED ]
	[ "$(jq -r .changeset_sha256 "$rec")" != "$evil" ]
	pstep show "$PID"
	[ "$status" -eq 0 ]
	[[ "$output" != *"$evil"* ]]
	approve "$PID"
	[ "$status" -ne 0 ]
	[[ "$output" != *"$evil"* ]]
	[ "$(transitions "$PID")" = PROPOSED ]

	# Planted after an honest dry run: approve and exec refuse it, nothing
	# recorded (the permit is not rejected over bytes no entry backs).
	pstep dryrun "$PID"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	d=$(jq -r .dryrun <<<"$output")
	cp "$rec" "$TEST_DIR/dryrun-ok.json"
	cp "$TEST_DIR/evil.json" "$dryruns/$d/changeset.json"
	approve "$PID"
	echo "approve: $status $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"permit $PID: the ledger does not back the change set of dry run $d (rewritten)"* ]]
	[[ "$output" != *"$evil"* ]]
	pstep exec "$PID"
	echo "exec: $status $stderr"
	[ "$status" -ne 0 ]
	one_error_line "permit $PID: the ledger does not back the change set of dry run $d (rewritten)"
	cmp "$rec" "$TEST_DIR/dryrun-ok.json"
	[ "$(cat notes.txt)" = notes ]
}

@test "attack: a risk-3 build that un-tracks a file (its index) is risk 4, so the next one cannot change the file without the approver" {
	make_project
	# The build, the agent's Makefile, takes notes.txt out of the index: a
	# change of .git/index alone, which git does not track. Were it
	# generated (3), it would apply without the approver, and the next
	# build's change of notes.txt would be an untracked file's (3) too.
	printf 'untrack:\n\tgit rm --cached -q notes.txt\n' >> Makefile && commit_all untrack
	propose '{"argv":["make","-s","untrack"],"reason":"r","expected_paths":[".git/**"]}'
	[ "$(jq -r .risk <<<"$output")" -eq 3 ]
	pstep dryrun "$PID"
	[ "$(jq -r .risk <<<"$output")" -eq 4 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.risk_observed == 4 and (.observed | contains(".git/index"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	pstep exec "$PID"
	[ "$status" -ne 0 ]
	[ "$(git ls-files notes.txt)" = notes.txt ]
	# A .git of a directory below (a nested repository's, a submodule's work tree) is the same.
	mkdir sub && (cd sub && git init -q . && echo s > s.txt && git add s.txt)
	printf 'untracksub:\n\tcd sub && git rm --cached -q s.txt\n' >> Makefile && git add Makefile && git commit -qm untracksub
	propose '{"argv":["make","-s","untracksub"],"reason":"r","expected_paths":["sub/.git/**"]}'
	pstep dryrun "$PID"
	[ "$(jq -r .risk <<<"$output")" -eq 4 ] || { echo "$status $output $stderr"; return 1; }
}

@test "attack: a tracked file of a submodule (below a gitlink) changed by a build is risk 4, not generated" {
	make_project
	mkdir sub && (cd sub && git init -q . && git config user.email t@t && git config user.name t &&
		echo lib > lib.c && git add lib.c && git commit -qm lib)
	git add sub 2>/dev/null && git commit -qm sub
	[ "$(git ls-files -s sub | cut -c1-6)" = 160000 ]
	printf 'sublib:\n\techo evil >> sub/lib.c\n' >> Makefile && git add Makefile && git commit -qm sublib
	propose '{"argv":["make","-s","sublib"],"reason":"r","expected_paths":["sub/lib.c"]}'
	pstep dryrun "$PID"
	[ "$(jq -r .risk <<<"$output")" -eq 4 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.risk_observed == 4 and (.observed | contains("sub/lib.c"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
}

@test "attack: a tracked file of a repository nested in the workspace (a clone, no gitlink) changed by a build is risk 4" {
	make_project
	mkdir -p vendor/lib && (cd vendor/lib && git init -q . && git config user.email t@t &&
		git config user.name t && echo lib > lib.c && git add lib.c && git commit -qm lib)
	printf 'vendorlib:\n\techo evil >> vendor/lib/lib.c\n\techo new > vendor/lib/new.c\n' >> Makefile &&
		git add Makefile && git commit -qm vendorlib
	[ -z "$(git ls-files vendor)" ]
	propose '{"argv":["make","-s","vendorlib"],"reason":"r","expected_paths":["vendor/lib/*.c"]}'
	pstep dryrun "$PID"
	[ "$(jq -r .risk <<<"$output")" -eq 4 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.risk_observed == 4 and (.observed | contains("vendor/lib/lib.c"))' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	# A file it creates there is nobody's: generated.
	printf 'vendornew:\n\techo new > vendor/lib/new.c\n' >> Makefile && git add Makefile && git commit -qm vendornew
	propose '{"argv":["make","-s","vendornew"],"reason":"r","expected_paths":["vendor/lib/new.c"]}'
	pstep dryrun "$PID"
	[ "$(jq -r .risk <<<"$output")" -eq 3 ] || { echo "$status $output $stderr"; return 1; }
}

@test "attack: a mode change of an untracked name reaches a nested repository's tracked file through a hard link: risk 4" {
	make_project
	mkdir -p vendor/lib && (cd vendor/lib && git init -q . && git config user.email t@t &&
		git config user.name t && echo lib > lib.c && git add lib.c && git commit -qm lib)
	ln vendor/lib/lib.c handle.c
	printf 'handle:\n\tchmod 600 handle.c\n' >> Makefile && git add Makefile && git commit -qm handle
	[ -z "$(git ls-files vendor handle.c)" ]
	propose '{"argv":["make","-s","handle"],"reason":"r","expected_paths":["handle.c"]}'
	pstep dryrun "$PID"
	jq -e '.changes[] | select(.path == "handle.c") | [.also_names[].path] == ["vendor/lib/lib.c"]' \
		"$AIRLOCK_STATE_DIR/dryruns/$(jq -r .dryrun "$AIRLOCK_STATE_DIR/permits/$PID.json")/changeset.json"
	[ "$(jq -r .risk <<<"$output")" -eq 4 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.observed | contains("vendor/lib/lib.c")' "$AIRLOCK_STATE_DIR/permits/$PID.json"
}

#!/usr/bin/env bats
# The gate: open failures, the honest moves that close them, ack and the
# approver, classify. docs/gate.md is the specification.
load helpers

fail_once() { # a command that fails, scoped to $WORK
	al run -- sh -c 'echo "FAILED test_x: missing DATABASE_URL" >&2; exit 1'
	[ "$status" -eq 1 ]
	FAILED=$(receipt_id)
}

@test "no receipts: the gate is open (exit 0) and says so" {
	al gate
	[ "$status" -eq 0 ]
	[[ "$output" == "no open failure in $(pwd -P)" ]]
}

@test "a failure blocks the gate with exit 2 and prints facts: id, argv, status, last lines, the moves" {
	fail_once
	rq .gate.opened | grep -qx true
	al gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"receipt $FAILED is an open failure"* ]]
	[[ "$output" == *"exit 1, expected 0"* ]]
	[[ "$output" == *"| FAILED test_x: missing DATABASE_URL"* ]]
	[[ "$output" == *"airlock run --fixes $FAILED -- CMD"* ]]
	[[ "$output" == *"airlock ack $FAILED --reason TEXT"* ]]
	al gate --json
	[ "$status" -eq 2 ]
	jq -e ".open == 1 and .failures[0].receipt == $FAILED and .failures[0].exit_code == 1" <<<"$output"
}

@test "running true never clears the gate (the seed's trick)" {
	fail_once
	al run -- true
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

fail_until_marker() { # a failure that a repaired workspace fixes
	al run -- sh -c 'test -e marker || { echo "no marker" >&2; exit 1; }'
	[ "$status" -eq 1 ]
	FAILED=$(receipt_id)
}

# The first line of output is the fix's receipt; the second, if any, the re-run's.
fix_line() { sed -n 1p <<<"$output"; }
rerun_line() { sed -n 2p <<<"$output"; }

@test "a fix proves itself: whatever CMD is, the failure stays open while its re-run fails" {
	fail_until_marker
	ln -s "$(type -P true)" make
	: >empty.sh
	while IFS= read -r line; do
		eval "args=($line)"
		run --separate-stderr "$AIRLOCK" run --fixes "$FAILED" -- "${args[@]}"
		[ "$(jq -c .closes <<<"$(fix_line)")" = "[]" ] || { echo "$line closed it: $output"; return 1; }
		# A fix that exits 0 is followed by the re-run, which fails again.
		if [ "$(jq -r .exit <<<"$(fix_line)")" = 0 ]; then
			[ "$(jq -c .closes <<<"$(rerun_line)")" = "[]" ] || { echo "$line closed it: $output"; return 1; }
			[[ "$stderr" == *"the re-run of receipt $FAILED failed"* ]] || { echo "$line: $stderr"; return 1; }
		fi
		[ "$status" -ne 0 ] || { echo "$line: exit 0 while the failure stays open"; return 1; }
		[ ! -e "$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json" ] || { echo "$line closed it"; return 1; }
	done <<'LIST'
true
ls
cat /dev/null
stat .
git --version
perl -e 1
./make
make -n
sh empty.sh
bash --norc -c true
bash -O extglob -c true
sh -c 'cd .'
sh -c 'true || make'
env '-Smake test'
env X=1 true
sh -c 'ls >/dev/null'
LIST
	# The repair, then any fix: the re-run passes, and that closes it.
	touch marker
	al run --fixes "$FAILED" -- true
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$(rerun_line)")" = "[$FAILED]" ]
	jq -e '.move == "fixes"' "$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
}

@test "--fixes re-runs the failed command exactly, and both receipts say so" {
	mkdir sub
	printf '#!/bin/sh\ntest -e "$1" || exit 3\n' >sub/chk
	chmod +x sub/chk
	al run --cwd sub --expect 0,4 -- ./chk $'m\377'
	[ "$status" -eq 3 ]
	FAILED=$(receipt_id)
	touch $'sub/m\377'
	al run --cwd sub --fixes "$FAILED" -- sh -c 'echo fixing'
	[ "$status" -eq 0 ]
	fix=$(jq -r .receipt <<<"$(fix_line)")
	rerun=$(jq -r .receipt <<<"$(rerun_line)")
	[ "$rerun" -gt "$fix" ]
	jq -e ".gate.fixes == $FAILED and .gate.rerun == $rerun" "$(receipt_file "$fix")"
	f=$(receipt_file "$FAILED")
	r=$(receipt_file "$rerun")
	jq -e ".source == \"rerun\" and .gate.rerun_of == $FAILED and .gate.fix == $fix and
		.gate.closes == [{\"receipt\": $FAILED, \"move\": \"fixes\"}]" "$r"
	[ "$(jq -c '[.argv_b64, .cwd, .expected_exits, .exec_path, .exec_identity, .policy, .sandbox.profile]' "$r")" = \
	  "$(jq -c '[.argv_b64, .cwd, .expected_exits, .exec_path, .exec_identity, .policy, .sandbox.profile]' "$f")" ]
	jq -e ".exec_identity.sha256 | length == 64" "$r"
	jq -e ".move == \"fixes\" and .by_receipt == $rerun" "$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
}

@test "--fixes does not re-run an executable that changed since the failure" {
	printf '#!/bin/sh\nexit 1\n' >chk
	chmod +x chk
	al run -- ./chk
	FAILED=$(receipt_id)
	printf '#!/bin/sh\nexit 0\n' >chk # in place: the same inode, other bytes
	al run --fixes "$FAILED" -- true
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"changed since"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	printf '#!/bin/sh\nexit 1\n' >chk.new && chmod +x chk.new && mv chk.new chk # the same bytes, another inode
	al run --fixes "$FAILED" -- true
	[[ "$stderr" == *"changed since"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "a per-run --policy does not change the gate's rules: an emptied gate.trivial closes nothing" {
	fail_once
	printf '{"schema": "airlock.policy/1", "gate": {"trivial": []}}\n' >pol.json
	al run --policy pol.json --fixes "$FAILED" -- true
	[ "$(jq -c .closes <<<"$(fix_line)")" = "[]" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "a rerun closes only with the same executable (path and identity) and the same argv bytes" {
	mkdir real fake
	printf '#!/bin/sh\nexit 1\n' >real/mk
	printf '#!/bin/sh\nexit 0\n' >fake/mk
	chmod +x real/mk fake/mk
	PATH="$WORK/real:$PATH" al run -- mk
	[ "$status" -eq 1 ]
	# Another mk first in PATH.
	PATH="$WORK/fake:$WORK/real:$PATH" al run -- mk
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	# The same path, other bytes.
	printf '#!/bin/sh\nexit 0\n' >real/mk
	PATH="$WORK/real:$PATH" al run -- mk
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	# argv bytes, not their UTF-8 sanitised text.
	printf 'exit 1\n' >$'t\377.sh'
	printf 'exit 0\n' >$'t\376.sh'
	al run -- sh $'t\377.sh'
	[ "$status" -eq 1 ]
	al run -- sh $'t\376.sh'
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	run "$AIRLOCK" gate --json
	[ "$(jq .open <<<"$output")" -eq 2 ]
}

@test "--fixes with --expect cannot turn the failing exit into a close" {
	al run -- sh -c 'exit 3'
	FAILED=$(receipt_id)
	al run --fixes "$FAILED" --expect 3 -- sh -c 'ls >/dev/null; exit 3'
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"only an exit status of 0 closes a failure"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "the same argv in the same cwd succeeding closes it (the environment was repaired)" {
	al run -- sh -c 'test -e marker'
	FAILED=$(receipt_id)
	touch marker
	al run -- sh -c 'test -e marker'
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[$FAILED]" ]
	rq '.gate.closes[0].move' | grep -qx rerun
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
}

@test "the same argv in another cwd, or with a different expectation, does not close it" {
	al run -- sh -c 'test -e marker'
	mkdir sub && touch sub/marker
	al run --cwd sub -- sh -c 'test -e marker'
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	al run --expect 1 -- sh -c 'test -e marker'
	[ "$(jq -c .closes <<<"$output")" = "[]" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "failures are scoped to their workspace: the git root, else the cwd" {
	mkdir -p repo/sub other
	git -C repo init -q
	al run --cwd repo/sub -- false
	cd other
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	cd ../repo
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	run "$AIRLOCK" gate --cwd "$WORK/repo/sub"
	[ "$status" -eq 2 ]
}

@test "timeouts, denials, not-found and invalid input open failures too" {
	al run --timeout 200ms -- sleep 5
	[ "$status" -eq 124 ]
	rq .gate.opened | grep -qx true
	al run -- sudo true
	[ "$status" -eq 126 ]
	rq .gate.opened | grep -qx true
	run -127 --separate-stderr "$AIRLOCK" run -- no-such-command-x
	rq .gate.opened | grep -qx true
	al run --cwd /nonexistent -- true
	[ "$status" -eq 125 ]
	rq .gate.opened | grep -qx true
	run "$AIRLOCK" gate --json
	[ "$(jq .open <<<"$output")" -eq 4 ]
}

@test "--fixes naming something that is not an open failure is refused with a receipt" {
	al run --fixes 999 -- make
	[ "$status" -eq 125 ]
	one_error_line "--fixes 999: receipt 999 is not an open failure"
	[ "$(rq .status)" = invalid ]
}

@test "ack of a read-only command's failure needs only a reason" {
	al run -- ls /nonexistent-dir
	FAILED=$(receipt_id)
	al ack "$FAILED"
	[ "$status" -eq 125 ]
	al ack "$FAILED" --reason "the directory is created later by the build"
	[ "$status" -eq 0 ]
	[[ "$output" == *"closed (ack-read-only)"* ]]
	jq -e '.move == "ack-read-only" and .reason == "the directory is created later by the build"' \
		"$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
	al ack "$FAILED" --reason again
	[ "$status" -eq 1 ]
}

@test "ack of anything else needs the approver; without a terminal it is refused (77)" {
	fail_once
	al ack "$FAILED" --reason "I say so" </dev/null
	[ "$status" -eq 77 ]
	[[ "$stderr" == *"needs the approver"* ]]
	setsid -w "$AIRLOCK" ack "$FAILED" --reason "no tty" </dev/null >/dev/null 2>&1 || s=$?
	[ "${s:-0}" -eq 77 ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

# An agent-side process with a pty of its own still lacks the passphrase.
@test "approver: a forged or missing passphrase never closes, the right one does and signs" {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	fail_once
	# No approver enrolled: nothing to sign with.
	run script -qec "'$AIRLOCK' ack $FAILED --reason x" /dev/null <<<"anything"
	[[ "$output" == *"no approver is enrolled"* ]]
	printf 'correct horse battery\ncorrect horse battery\n' |
		script -qec "'$AIRLOCK' approver init" /dev/null
	run "$AIRLOCK" approver show
	[ "$status" -eq 0 ]
	fp=$(awk '{print $2}' <<<"$output")
	# The agent guesses.
	run script -qec "'$AIRLOCK' ack $FAILED --reason guess" /dev/null <<<"hunter2 hunter2"
	[[ "$output" == *"not the approver's passphrase"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	# The agent re-enrols with a passphrase of its own: refused.
	run script -qec "'$AIRLOCK' approver init" /dev/null <<<$'guess\nmine mine mine\nmine mine mine'
	run "$AIRLOCK" approver show
	[[ "$output" == *"$fp"* ]]
	# The human.
	run script -qec "'$AIRLOCK' ack $FAILED --reason 'known flaky, issue 12'" /dev/null <<<"correct horse battery"
	[[ "$output" == *"closed (ack-approved, approver $fp)"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
	jq -e '.move == "ack-approved" and (.approval.signature | length) == 128 and
		(.approval.message | contains("reason=\"known flaky, issue 12\""))' \
		"$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
}

@test "a quarantined command cannot ack, forge a close, or remove an open failure" {
	fail_once
	state="$AIRLOCK_STATE_DIR"
	al run --env AIRLOCK_STATE_DIR -- sh -c "
		'$AIRLOCK' ack $FAILED --reason x; airlock ack $FAILED --reason x;
		mkdir -p '$state/gate/closed' && echo '{}' > '$state/gate/closed/$FAILED.json';
		rm -rf '$state/gate/open'; ls '$state'"
	[ ! -e "$state/gate/closed/$FAILED.json" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "classify: levels, rules and flag vetoes, as text and JSON" {
	al classify -- git status
	[ "$status" -eq 0 ]
	[ "$output" = "risk 1 (read-only inspection): rule git-status: reads the work tree's status" ]
	al classify --json -- git -c core.pager=sh log
	jq -e '.risk == 4 and .rule == "git-write"' <<<"$output"
	al classify --json -- find . -exec rm {} +
	jq -e '.risk == 4' <<<"$output"
	al classify --json -- rm -rf /
	jq -e '.risk == 5 and .rule == "rm-outside"' <<<"$output"
	al classify --json --shell 'ls | wc -l && git diff'
	jq -e '.risk == 1' <<<"$output"
	al classify --json --shell 'ls > f'
	jq -e '.risk == 4 and (.rule | startswith("unparsed-shell"))' <<<"$output"
	al classify
	[ "$status" -eq 125 ]
	echo '{"schema":"airlock.rules/2"}' > bad.json
	al classify --rules bad.json -- ls
	[ "$status" -eq 125 ]
	one_error_line "levels"
}

@test "classify: a shell string's reason names the commands that decided it (issue 20)" {
	# Several read-only commands: every one decided, each is named.
	al classify -- sh -c 'sleep 4; echo slept'
	[ "$status" -eq 0 ]
	[ "$output" = "risk 1 (read-only inspection): rule shell: every command is risk 1 (read-only inspection): sleep, echo" ]
	al classify --shell 'ls; cat x'
	[ "$output" = "risk 1 (read-only inspection): rule shell: every command is risk 1 (read-only inspection): ls, cat" ]
	al classify --json --shell 'ls | wc -l && git diff || git status'
	jq -e '.risk == 1 and .rule == "shell" and (.reason | endswith(": ls, wc, git, git"))' <<<"$output"
	# One command: its own rule, named.
	al classify --shell 'git status'
	[ "$output" = "risk 1 (read-only inspection): rule git-status: git: reads the work tree's status" ]
	# A mutating command sets the level: it is named, with the others at its level.
	al classify --json --shell 'ls && touch f'
	jq -e '.risk == 4 and .rule == "default" and (.reason | startswith("touch: no rule knows"))' <<<"$output"
	al classify --json --shell 'ls | touch a; echo x || rm -f b'
	jq -e '.risk == 4 and (.reason | startswith("touch: ")) and (.reason | endswith(" (also: rm)"))' <<<"$output"
	al classify --json -- sh -c 'ls; rm -rf /'
	jq -e '.risk == 5 and .rule == "rm-outside" and (.reason | startswith("rm: "))' <<<"$output"
	# Behind wrappers and nested shells, the command that runs is named.
	al classify --json --shell 'ls; nice -n 5 touch f'
	jq -e '.risk == 4 and (.reason | startswith("touch: "))' <<<"$output"
	al classify --json --shell 'echo a; sh -c "ls; touch f"'
	jq -e '.risk == 4 and (.reason | startswith("sh: touch: "))' <<<"$output"
	# An assignment off the safe list names itself in the rule.
	al classify --json --shell 'ls; X=1 cat f'
	jq -e '.risk == 4 and .rule == "environment: X" and (.reason | startswith("cat: "))' <<<"$output"
	# A construct not modelled names the construct.
	al classify --json --shell 'ls; (cat x)'
	jq -e '.risk == 4 and .rule == "unparsed-shell: subshell"' <<<"$output"
	# Really empty.
	for s in '' ' ' '
'; do
		al classify --json -- sh -c "$s"
		jq -e '.risk == 1 and .rule == "shell" and .reason == "an empty script"' <<<"$output"
	done
}

@test "classify: read-only is an allowlist; the issue 12 commands that wrote or ran are not read-only" {
	# Each was risk 1 before: as an argv, and as the shell string a hook sees.
	while IFS= read -r line; do
		eval "args=($line)"
		al classify --json -- "${args[@]}"
		[ "$status" -eq 0 ] || { echo "$line: $status $stderr"; return 1; }
		jq -e '.risk >= 2' <<<"$output" >/dev/null || { echo "read-only: $line: $output"; return 1; }
		al classify --json --shell "$line"
		jq -e '.risk >= 2' <<<"$output" >/dev/null || { echo "read-only (shell): $line: $output"; return 1; }
	done <<'EOF'
env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor 'GIT_CONFIG_VALUE_0=id > f; false' git status
env BASH_ENV=./evil bash -c ls
env LD_PRELOAD=./evil.so ls
exec -a ls rm -f victim
env -S'rm -f victim'
env '-Smake test'
uniq - out
xxd -r -p hex out
sort --outp=F
/usr/bin/time -oF ls
sort -S 1 --compress-program=./evil
file -C -m x
date -s 2020-01-01
hostname X
git log --outp=x
git stash
EOF
	al classify --json --shell 'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=id git status'
	jq -e '.risk == 4 and .rule == "environment: GIT_CONFIG_COUNT"' <<<"$output"
	al classify --json -- exec -a ls rm -rf /
	jq -e '.risk == 5 and .rule == "rm-outside"' <<<"$output"
	al classify --json -- sort --outp=F
	jq -e '.risk == 4 and .rule == "read-only-tool-outside"' <<<"$output"
	al classify --json -- /usr/bin/time -oF ls
	jq -e '.risk == 4 and .rule == "wrapper-option: time"' <<<"$output"
	# and what only reads stays read-only, with a safe variable or wrapper
	for cmd in "LC_ALL=C sort -u f" "env TZ=UTC date +%s" "uniq -c in" "xxd -r -p hex" \
		"nice -n 5 git log --oneline -3" "command -v rm" "timeout 5 grep -rn x ."; do
		al classify --json --shell "$cmd"
		jq -e '.risk == 1' <<<"$output" >/dev/null || { echo "not read-only: $cmd: $output"; return 1; }
	done
}

# The property of the read-only rating, checked by running: a command rated
# risk 1 changes nothing in a dry run (the change set of its overlay snapshot
# is empty), attempts no write outside the workspace (the dry run's traced
# write system calls), and starts no program that is not one of its own words
# (execve traced with strace outside the quarantine, on a copy of the tree,
# when ptrace is allowed; the dry run does not trace execve).
readonly_fixture() {
	git init -q . && git config user.email t@example.org && git config user.name t
	mkdir -p src sub
	printf 'b 2\na 1\na 1\nc 3\n' > f
	printf 'x\nx\ny\n' > in
	printf '6869\n' > hex
	printf '{"a": 1, "b": [1, 2]}\n' > f.json
	printf 'one\n' > a; printf 'two\n' > b
	printf 'l1\nl2\n' > log
	printf 'int x;\n' > src/x.c
	git add -A && git commit -qm fixture
	# A settled index, as in any repository some seconds old: git's
	# opportunistic refresh of .git/index (docs/rules-format.md) is not the
	# command's doing.
	sleep 1.1
	git status >/dev/null
}

# Programs the command string started that are none of its words.
unexpected_programs() { # script trace-log
	local words
	# shellcheck disable=SC2086 # the command string's words
	words=$(printf '%s\n' $1 | sed 's|.*/||' | sort -u)
	sed -n 's/^[0-9]* *execve("\([^"]*\)".*) = 0$/\1/p' "$2" | sed 's|.*/||' | sort -u |
		grep -vxF -e sh -e "$words" || true
}

# Prints the strace options to use ("--seccomp-bpf" when it works, which
# stops only at execve), nothing when strace cannot trace here.
can_strace() {
	command -v strace >/dev/null || return 1
	if strace -f --seccomp-bpf -qq -o /dev/null true 2>/dev/null; then
		echo --seccomp-bpf
	else
		strace -f -qq -o /dev/null true 2>/dev/null && echo " "
	fi
}

# Runs one command string both ways; sets DRY (the receipt) and SPAWNED. The
# traced run uses one copy of the tree for all commands (a write there is the
# dry run's to find).
run_both() { # script
	run --separate-stderr "$AIRLOCK" dryrun --json --expect-exit 0,1 -- sh -c "$1"
	DRY=$output
	SPAWNED=
	if [ -n "$STRACE" ]; then
		[ -d "$TEST_DIR/copy" ] || cp -a "$WORK" "$TEST_DIR/copy"
		# shellcheck disable=SC2086 # STRACE: can_strace's options, or none
		(cd "$TEST_DIR/copy" && PATH=/usr/bin:/bin strace -f $STRACE -qq -e trace=execve -e signal=none \
			-o "$TEST_DIR/trace" sh -c "$1" >/dev/null 2>&1 </dev/null) || true
		SPAWNED=$(unexpected_programs "$1" "$TEST_DIR/trace")
	fi
}

@test "property: what is rated read-only writes nothing and starts nothing else, when run" {
	readonly_fixture
	STRACE=$(can_strace || true)
	[ -n "$STRACE" ] || echo "# strace cannot trace here: only writes are checked" >&3
	# One script of all the commands, each after a marker program, run once
	# as a dry run and once traced: the markers split the trace per command.
	local script="" n=0 cmds=()
	while IFS= read -r cmd; do
		output=$("$AIRLOCK" classify --shell "$cmd")
		[[ "$output" == "risk 1 "* ]] || { echo "not rated read-only: $cmd: $output"; return 1; }
		script+="/bin/true airlock-mark-$n"$'\n'"$cmd"$'\n'
		cmds[n]=$cmd
		n=$((n + 1))
	done < <(cat <<'EOF'
ls -la
ls -R --colo=never src
cat f
cat -n f in
grep -rn x .
grep -c a f
git status
git status --porcelain -uno
git log --oneline -3
git log -n 1 --stat --format=%H
git diff
git diff --cached --stat HEAD
git show --name-only HEAD
git -C src --no-pager log -1
git blame f
git rev-parse --abbrev-ref HEAD
git ls-files -s
git branch -a
git tag
git stash list
git remote -v
git grep -n x
find . -name x
find . -type f -name f -print
find src -newer f -ls
sed -n 1,2p f
sed -n 3p f
head -n 2 f
head -1 f
tail -2 f
wc -l f in
sort f
sort -u -k2,2n f in
sort -c -r in
uniq -c in
uniq in
uniq -d in
jq . f.json
jq -r .a f.json
jq -c --arg k v '.b' f.json
xxd f
xxd -r -p hex
od -c a
base64 f
base64 -d
cut -d' ' -f1 f
tr a-z A-Z
nl f
tac f
diff a b
cmp a b
comm a b
stat -c %s f
du -sh .
file f
date +%s
date -u
env
env LC_ALL=C sort f
LC_ALL=C TZ=UTC date
nice -n 5 ls
timeout 5 cat f
command -v ls
echo hi
printf '%s\n' x
test -e f
realpath f
basename src/x.c .c
EOF
	)
	script+="/bin/true airlock-mark-end"
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c "$script" </dev/null
	[ "$status" -eq 10 ] || { echo "dry run exit $status: $(jq -c .dryrun <<<"$output")"; return 1; }
	jq -e '.dryrun.verdict == "NO_EFFECT" and .dryrun.total == 0 and
		((.dryrun.outside_writes // []) | length) == 0' <<<"$output"
	if [ -n "$STRACE" ]; then
		# shellcheck disable=SC2086 # STRACE: can_strace's options
		PATH=/usr/bin:/bin strace -f $STRACE -qq -e trace=execve -e signal=none \
			-o "$TEST_DIR/trace" sh -c "$script" >/dev/null 2>&1 </dev/null || true
		local mark=-1 prog
		# "MARK PROGRAM" for each program started, after the marker before it
		while read -r mark prog; do
			[ "$mark" = end ] && break
			[ "$mark" = -1 ] && [ "$prog" = sh ] && continue
			[[ " ${cmds[mark]//\// } " == *" $prog "* ]] ||
				{ echo "'${cmds[mark]}' started $prog"; return 1; }
		done < <(awk 'match($0, /"airlock-mark-[0-9a-z]+"/) {
				mark = substr($0, RSTART + 14, RLENGTH - 15); next }
			/execve\(".*\) = 0$/ { p = $0; sub(/^[^"]*"/, "", p); sub(/".*/, "", p);
				sub(/.*\//, "", p); print (mark == "" ? -1 : mark), p }
			END { print "end", "" }' "$TEST_DIR/trace")
		grep -q '"airlock-mark-end"' "$TEST_DIR/trace"
	fi
	echo "# $n read-only commands ran without an effect" >&3
}

@test "property check can fail: the issue 12 disguises, run, do write or start something" {
	readonly_fixture
	STRACE=$(can_strace || true)
	while IFS= read -r cmd; do
		al classify --json --shell "$cmd"
		jq -e '.risk >= 2' <<<"$output" >/dev/null || { echo "rated read-only: $cmd"; return 1; }
		run_both "$cmd"
		if jq -e '.dryrun.total > 0 or ((.dryrun.outside_writes // []) | length) > 0' <<<"$DRY" >/dev/null; then
			continue
		fi
		[ -n "$SPAWNED" ] || { echo "$cmd: no effect seen: $(jq -c .dryrun <<<"$DRY")"; return 1; }
	done <<'EOF'
echo x | uniq - out
uniq in out
xxd -r -p hex out
sort --outp=F f
sort -oF f
/usr/bin/time -oF ls
find . -fprint out
git log --output=x
env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor 'GIT_CONFIG_VALUE_0=touch pwned; false' git status
bash -c 'exec -a ls touch victim'
env -S'touch victim'
EOF
}

@test "gate stays constant-time: it never reads receipts" {
	fail_once
	# Receipts the gate would have to sort if it read them: take them away.
	mv "$AIRLOCK_STATE_DIR/receipts" "$AIRLOCK_STATE_DIR/receipts.away"
	mkdir "$AIRLOCK_STATE_DIR/receipts"
	mv "$AIRLOCK_STATE_DIR/index.jsonl" "$AIRLOCK_STATE_DIR/index.away"
	run "$AIRLOCK" gate --json
	[ "$status" -eq 2 ]
	[ "$(jq .open <<<"$output")" -eq 1 ]
}

@test "a job file names the failure it fixes with \"fixes\"" {
	fail_until_marker
	printf '{"argv": ["touch", "marker"], "fixes": %s}\n' "$FAILED" > fix.json
	al job fix.json
	[ "$status" -eq 0 ]
	[ "$(jq -c .closes <<<"$(rerun_line)")" = "[$FAILED]" ]
	printf '{"argv": ["true"], "fixes": "x"}\n' > bad.json
	al job bad.json
	[ "$status" -eq 125 ]
	one_error_line "'fixes'"
}

@test "a run in progress puts no .git on the host, and the scope stays the git root" {
	# Regression: the scope was read while a run's placeholders (for the
	# protected .git/hooks of a workspace with no .git) were on the host,
	# and the placeholder directory read as a repository. Now nothing is
	# put there at all.
	mkdir -p repo/sub
	git -C repo init -q
	"$AIRLOCK" run --cwd repo/sub --timeout 20s -- sleep 2 >/dev/null &
	sleep 0.7
	[ ! -e repo/sub/.git ]
	al run --cwd repo/sub -- false
	wait
	[ "$(rq .gate.scope)" = "$(cd repo && pwd -P)" ]
	[ ! -e repo/sub/.git ]
}

@test "gate shows a failure's output and argv on a terminal without their escape sequences" {
	al run -- sh -c "$(terminal_attack_script)"
	[ "$status" -eq 1 ]
	id=$(receipt_id)
	script -qec "'$AIRLOCK' gate" /dev/null </dev/null >"$TEST_DIR/tty.out" 2>&1 || true
	shows_no_controls "$TEST_DIR/tty.out" "receipt $id is an open failure" "err-visible" "end" "argv-visible"
	shows_no_hidden_text "$TEST_DIR/tty.out" 'pwned|hidden-argv'
	# to a pipe too: gate's text is for a human wherever it goes
	al gate
	[ "$status" -eq 2 ]
	printf '%s\n' "$output" >"$TEST_DIR/pipe.out"
	shows_no_controls "$TEST_DIR/pipe.out" "err-visible" "argv-visible"
	shows_no_hidden_text "$TEST_DIR/pipe.out" 'pwned|hidden-argv'
	# --json is for programs: the exact text, JSON-escaped
	al gate --json
	jq -e '.failures[0].tail | contains("\u001bPpwned-dcs")' <<<"$output"
}

# --- Issue 12, item 4: records are checked, not believed ---

# A close record written by anything but airlock's own close.
@test "attack: a forged close record (junk, a copy, a missing closing receipt) closes nothing and is named" {
	fail_once
	f1=$FAILED
	al run -- ls /nonexistent-dir-x
	f2=$(receipt_id)
	fail_until_marker
	f3=$FAILED
	al ack "$f2" --reason "read-only, harmless"
	[ "$status" -eq 0 ]
	closed="$AIRLOCK_STATE_DIR/gate/closed"
	echo x >"$closed/$f1.json"
	cp "$closed/$f2.json" "$closed/$f3.json"
	run "$AIRLOCK" gate --json
	[ "$status" -eq 2 ]
	[ "$(jq .open <<<"$output")" -eq 2 ]
	jq -e --arg a "$f1" --arg b "$f3" '[.rejected[].receipt | tostring] | sort == ([$a, $b] | sort)' <<<"$output"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"close record gate/closed/$f1.json was rejected"* ]]
	[[ "$output" == *"close record gate/closed/$f3.json was rejected"* ]]
	# A close that names a closing receipt that is not there, or one that
	# exists but closes nothing.
	rm "$closed/$f1.json"
	jq -n --argjson id "$f1" '{schema: "airlock.gate-close/2", receipt: $id, move: "rerun",
		by_receipt: 999, by_sha256: ("0" * 64), closed_at: "2026-01-01T00:00:00Z"}' >"$closed/$f1.json"
	al run -- true
	ok=$(receipt_id)
	rm "$closed/$f3.json"
	jq -n --argjson id "$f3" --argjson by "$ok" --arg d "$(sha256sum "$(receipt_file "$ok")" | cut -c1-64)" \
		'{schema: "airlock.gate-close/2", receipt: $id, move: "rerun", by_receipt: $by,
		  by_sha256: $d, closed_at: "2026-01-01T00:00:00Z"}' >"$closed/$f3.json"
	run "$AIRLOCK" gate --json
	[ "$status" -eq 2 ]
	[ "$(jq .open <<<"$output")" -eq 2 ]
	jq -e '.rejected | length == 2' <<<"$output"
	# An honest close still works past a forged record: the fix, then its
	# re-run, which closes it.
	touch marker
	al run --fixes "$f3" -- sh -c 'ls >/dev/null'
	[ "$(jq -c .closes <<<"$(rerun_line)")" = "[$f3]" ]
	run "$AIRLOCK" gate --json
	[ "$(jq .open <<<"$output")" -eq 1 ]
}

@test "a close record is valid only with its closing receipt's digest; tampering with that receipt reopens nothing silently" {
	fail_until_marker
	touch marker
	al run --fixes "$FAILED" -- sh -c 'ls >/dev/null'
	by=$(rerun_line | jq -r .receipt)
	rec="$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
	jq -e --argjson by "$by" --arg d "$(sha256sum "$(receipt_file "$by")" | cut -c1-64)" \
		'.schema == "airlock.gate-close/2" and .move == "fixes" and .by_receipt == $by and
		 .by_sha256 == $d and (.failed_sha256 | length) == 64' "$rec"
	# Its scope's directory went with its last failure: the gate lists what is open.
	[ -z "$(ls "$AIRLOCK_STATE_DIR/gate/open")" ]
}

enrol() { # state-dir passphrase
	printf '%s\n%s\n' "$2" "$2" | AIRLOCK_STATE_DIR="$1" script -qec "'$AIRLOCK' approver init" /dev/null
}

@test "attack: removing or replacing approver.json is reported, needs the old passphrase, and its closes do not count" {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	enrol "$AIRLOCK_STATE_DIR" "correct horse battery"
	run "$AIRLOCK" approver show
	fp=$(awk '{print $2}' <<<"$output")
	fail_once
	run "$AIRLOCK" gate
	[[ "$output" != *"approver"*"changed"* ]]
	# The agent deletes approver.json and enrols its own.
	mv "$AIRLOCK_STATE_DIR/approver.json" "$TEST_DIR/approver.saved"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"approver $fp was removed outside airlock"* ]]
	run script -qec "'$AIRLOCK' approver init" /dev/null <<<$'mine mine mine\nmine mine mine\nmine mine mine'
	[[ "$output" == *"needs the passphrase of approver $fp"* ]]
	[ ! -e "$AIRLOCK_STATE_DIR/approver.json" ]
	# It plants an approver enrolled elsewhere: reported, and its acks do not count.
	enrol "$TEST_DIR/other" "mine mine mine"
	cp "$TEST_DIR/other/approver.json" "$AIRLOCK_STATE_DIR/approver.json"
	run "$AIRLOCK" gate --json
	[ "$status" -eq 2 ]
	jq -e --arg fp "$fp" '.approver.changed and .approver.pinned == $fp' <<<"$output"
	run script -qec "'$AIRLOCK' ack $FAILED --reason mine" /dev/null <<<"mine mine mine"
	[[ "$output" != *"closed (ack-approved"* ]]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"approver.json changed outside airlock"* ]]
	# The human puts theirs back; the gate is quiet about the approver again.
	cp "$TEST_DIR/approver.saved" "$AIRLOCK_STATE_DIR/approver.json"
	run "$AIRLOCK" gate
	[[ "$output" != *"outside airlock"* ]]
	run script -qec "'$AIRLOCK' ack $FAILED --reason 'known flaky'" /dev/null <<<"correct horse battery"
	[[ "$output" == *"closed (ack-approved, approver $fp)"* ]]
	# Replacing it with the old passphrase is an honest change: not reported.
	run script -qec "'$AIRLOCK' approver init" /dev/null <<<$'correct horse battery\nnew pass phrase\nnew pass phrase'
	[[ "$output" == *"enrolled"* ]]
	run "$AIRLOCK" gate --json
	[ "$status" -eq 0 ]
	jq -e '.approver.changed == false' <<<"$output"
}

@test "attack: an approval signed by another approver's key, copied in, closes nothing" {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	enrol "$AIRLOCK_STATE_DIR" "correct horse battery"
	fail_once
	# The same ids in a state directory of the agent's, approved by its key.
	other="$TEST_DIR/other"
	enrol "$other" "mine mine mine"
	AIRLOCK_STATE_DIR=$other "$AIRLOCK" run -- sh -c 'echo "FAILED test_x: missing DATABASE_URL" >&2; exit 1' >/dev/null || true
	AIRLOCK_STATE_DIR=$other script -qec "'$AIRLOCK' ack $FAILED --reason mine" /dev/null <<<"mine mine mine"
	[ -e "$other/gate/closed/$FAILED.json" ]
	cp "$other/gate/closed/$FAILED.json" "$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json" 2>/dev/null ||
		{ mkdir -p "$AIRLOCK_STATE_DIR/gate/closed"; cp "$other/gate/closed/$FAILED.json" "$AIRLOCK_STATE_DIR/gate/closed/"; }
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"close record gate/closed/$FAILED.json was rejected"* ]]
}

# --- Issue 12, item 5: scopes cannot hide failures ---

@test "attack: a failure in a nested scope is seen from the project root, by the gate and the hook" {
	mkdir -p repo/sub
	git -C repo init -q
	printf 'gitdir: /nonexistent\n' >repo/sub/.git
	al run --cwd repo/sub -- false
	FAILED=$(receipt_id)
	[ "$(rq .gate.scope)" = "$(cd repo/sub && pwd -P)" ]
	run "$AIRLOCK" gate --cwd "$WORK/repo"
	[ "$status" -eq 2 ]
	[[ "$output" == *"receipt $FAILED is an open failure"* ]]
	jq -n --arg cwd "$WORK/repo" '{session_id: "s", cwd: $cwd, hook_event_name: "PreToolUse",
		tool_name: "Bash", tool_input: {command: "make"}, tool_use_id: "t"}' >pre.json
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <pre.json
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED is an open failure"* ]]
	run --separate-stderr "$AIRLOCK" hook codex pre-tool-use <pre.json
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
	jq '.hook_event_name = "BeforeTool" | .tool_name = "run_shell_command"' pre.json >before.json
	run --separate-stderr "$AIRLOCK" hook gemini pre-tool-use <before.json
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"receipt $FAILED"* ]]
	run --separate-stderr "$AIRLOCK" hook claude stop <pre.json
	[[ "$output" == *'"decision":"block"'* ]]
	# A sibling project is not blocked by it.
	mkdir other
	run "$AIRLOCK" gate --cwd "$WORK/other"
	[ "$status" -eq 0 ]
}

@test "--fixes from the project root names a nested failure; the re-run's close is checked and in the ledger" {
	mkdir -p repo/sub
	git -C repo init -q
	printf 'gitdir: /nonexistent\n' >repo/sub/.git
	al run --cwd repo/sub -- test -e marker
	[ "$status" -eq 1 ]
	FAILED=$(receipt_id)
	touch repo/sub/marker
	al run --cwd repo --fixes "$FAILED" -- true
	[ "$status" -eq 0 ]
	RERUN=$(sed -n 2p <<<"$output" | jq -r .receipt)
	jq -e --argjson f "$FAILED" '.source == "rerun" and .gate.rerun_of == $f and
		.gate.closes == [{receipt: $f, move: "fixes"}]' "$AIRLOCK_STATE_DIR/receipts/$RERUN.json"
	jq -e --argjson r "$RERUN" '.schema == "airlock.gate-close/2" and .move == "fixes" and
		.by_receipt == $r' "$AIRLOCK_STATE_DIR/gate/closed/$FAILED.json"
	run "$AIRLOCK" gate --cwd "$WORK/repo"
	[ "$status" -eq 0 ]
	jq -se --arg f "$FAILED" 'any(.[]; .kind == "gate-close")' "$AIRLOCK_STATE_DIR/ledger/log"
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	al ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -eq 0 ]
}

@test "attack: a .git the failing host command created does not scope its failure" {
	mkdir -p repo/sub
	git -C repo init -q
	jq -n --arg cwd "$WORK/repo/sub" '{session_id: "s", cwd: $cwd, hook_event_name: "PostToolUseFailure",
		tool_name: "Bash", tool_input: {command: "pytest -q"}, tool_use_id: "t",
		error: "Exit code 1\nfailed", duration_ms: 2000}' >post.json
	sleep 2.5 # repo/.git is older than the run; sub/.git, made now, is not
	# The host ran `... > sub/.git; pytest` in sub and it failed: the .git is
	# newer than the run's start (duration_ms before the hook).
	printf 'gitdir: /nonexistent\n' >repo/sub/.git
	run --separate-stderr "$AIRLOCK" hook claude post-tool-use <post.json
	[ "$status" -eq 0 ]
	r=$(ls -t "$AIRLOCK_STATE_DIR"/receipts/*.json | head -1)
	[ "$(jq -r .gate.scope "$r")" = "$(cd repo && pwd -P)" ]
	# And one airlock run made: the scope is read before the run.
	mkdir repo/sub2
	al run --cwd repo/sub2 -- sh -c 'echo "gitdir: x" > .git; exit 1'
	[ "$(rq .gate.scope)" = "$(cd repo && pwd -P)" ]
}

@test "attack: a scope created after a failure does not hide it from its cwd" {
	mkdir -p repo/sub repo/old
	git -C repo init -q
	git -C repo/old init -q # a nested project from before: not blocked by its parent
	# From before by more than GATE_MARKER_SLACK_NS (20 ms, core/gate/gate.c):
	# a marker born that close to a run's start counts as born during it, so
	# two fast runs right after the init made this test fail at random.
	sleep 0.05
	al run --cwd repo/sub -- false
	FAILED=$(receipt_id)
	al run --cwd repo -- sh -c 'exit 3'
	ROOT=$(receipt_id)
	sleep 0.05
	printf 'gitdir: /nonexistent\n' >repo/sub/.git
	run "$AIRLOCK" gate --cwd "$WORK/repo/sub" --json
	[ "$status" -eq 2 ]
	jq -e --argjson a "$FAILED" --argjson b "$ROOT" '[.failures[].receipt] | sort == ([$a, $b] | sort)' <<<"$output"
	run "$AIRLOCK" gate --cwd "$WORK/repo/old"
	[ "$status" -eq 0 ]
}

@test "the gate lists every entry of a directory longer than one read of it" {
	# gate/open/ and a scope's directory are read in batches (getdents64
	# into a 4 KiB buffer): 300 entries in the scope's own directory and
	# 100 nested scopes' directories take several; none is lost or read twice.
	al run -- false
	[ "$status" -eq 1 ]
	local entry dir
	entry=$(ls "$AIRLOCK_STATE_DIR"/gate/open/*/1.json)
	dir=$(dirname "$entry")
	for i in $(seq 2 300); do
		jq -c --argjson i "$i" '.receipt = $i' "$entry" >"$dir/$i.json"
	done
	for i in $(seq 1 100); do
		mkdir -p "$WORK/d$i" "$AIRLOCK_STATE_DIR/gate/open/a-nested-scope-directory-$i"
		printf '%s' "$WORK/d$i" >"$AIRLOCK_STATE_DIR/gate/open/a-nested-scope-directory-$i/scope"
		jq -c --argjson i "$((1000 + i))" --arg s "$WORK/d$i" '.receipt = $i | .scope = $s | .cwd = $s' \
			"$entry" >"$AIRLOCK_STATE_DIR/gate/open/a-nested-scope-directory-$i/$((1000 + i)).json"
	done
	run "$AIRLOCK" gate --json
	jq -e '.open == 400 and ([.failures[].receipt] | unique | length) == 400' <<<"$output"
	jq -e '[.failures[].receipt] == ([.failures[].receipt] | sort | reverse)' <<<"$output"
	jq -e '[.failures[].receipt] | (map(select(. <= 300)) | sort) == [range(1; 301)]' <<<"$output"
	# The hook names the newest and says others are open.
	printf '{"session_id":"s","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"%s/f","old_string":"a","new_string":"b"}}' \
		"$WORK" "$WORK" >"$TEST_DIR/edit.json"
	run --separate-stderr "$AIRLOCK" hook claude pre-tool-use <"$TEST_DIR/edit.json"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "airlock receipt 1100 is an open failure in $(pwd -P): "* ]]
	[[ "$stderr" == *"Other failures are open too"* ]]
}

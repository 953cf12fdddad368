#!/usr/bin/env bats
# Issue 10, items 1 and 2: a run leaves the workspace as the command left it
# (nothing of airlock's in it), and nothing it leaves makes a host tool run
# code. Every attack ends with the HOST's own git in each repository the
# command could touch; a fsmonitor or hook would create $MARK.

load helpers

setup_file() {
	export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t \
		GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
}

# A repository with one commit, made on the host.
host_repo() {
	git init -q "${1:-.}"
	echo tracked > "${1:-.}/tracked.txt"
	git -C "${1:-.}" add tracked.txt
	git -C "${1:-.}" commit -qm init
}

# The host's git in each repository given; none may run anything.
host_git_runs_nothing() {
	local dir
	for dir in "$@"; do
		git -C "$dir" status >/dev/null 2>&1 || true
		git -C "$dir" commit -q --allow-empty -m host >/dev/null 2>&1 || true
	done
	if [ -e "$MARK" ]; then
		echo "the host ran code the command left: $(cat "$MARK")" >&2
		return 1
	fi
}

# The receipt names path as moved aside, and the file is in the quarantine.
moved_aside() {
	rq --arg p "$1" '.host_code.moved_aside[] | select(.path == $p) | .to' | grep -q .
	local to
	to=$(rq --arg p "$1" '.host_code.moved_aside[] | select(.path == $p) | .to')
	[ "$to" = "$AIRLOCK_STATE_DIR/quarantine/$(receipt_id)/$1" ]
	[ -e "$to" ] || [ -L "$to" ]
}

# The failure is open: airlock gate exits 2 and names the receipt.
failure_open() {
	local id
	id=$(receipt_id)
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
	[[ "$output" == *"$id"* ]]
}

setup() {
	setup_dirs
	MARK="$TEST_DIR/mark"
	FSMON="touch $MARK; false"
	HOOK="#!/bin/sh
echo ran > $MARK"
}

@test "the commondir indirection is moved aside: the host's git status runs nothing" {
	host_repo
	al run -- sh -c "mkdir -p c/hooks && cp -r .git/objects .git/refs .git/HEAD c/
		git config --file c/config core.fsmonitor '$FSMON'
		printf '%s\n' '$HOOK' > c/hooks/pre-commit; chmod +x c/hooks/pre-commit
		echo ../c > .git/commondir"
	host_git_runs_nothing .
	[ "$status" -eq 14 ]
	[ "$(rq .status)" = exited ]
	[ "$(rq .exit_code)" = 0 ]
	[ ! -e .git/commondir ]
	moved_aside .git/commondir
	[ "$(rq '.host_code.moved_aside[] | select(.path == ".git/commondir") | .kind')" = git_indirection ]
	moved_aside c/config # c has the shape of a repository: its own config counts too
	moved_aside c/hooks/pre-commit
	[[ "$(rq .error)" == *"would run code on the host"* ]]
	id=$(receipt_id)
	failure_open
	run "$AIRLOCK" receipts --failed
	[[ "$output" == *"$id"* ]]
}

@test "a nested repository the command made with a fsmonitor is moved aside; a plain git init stays" {
	al run -- sh -c "git init -q sub && git -C sub config core.fsmonitor '$FSMON'
		git init -q plain && git -C plain config user.name Someone"
	host_git_runs_nothing sub plain
	[ "$status" -eq 14 ]
	moved_aside sub/.git/config
	[ "$(rq '.host_code.moved_aside | length')" = 1 ]
	[ -f plain/.git/config ]
	[ -f plain/.git/HEAD ]
	failure_open
}

@test "a git init and a commit inside, with nothing else, open no failure and stay" {
	al run -- sh -c 'git init -q && echo x > f && git add f && git -c user.name=a -c user.email=a@b commit -qm one'
	[ "$status" -eq 0 ]
	[ "$(rq '.host_code.moved_aside | length')" = 0 ]
	[ "$(rq .host_code.complete)" = true ]
	[ "$(git log --format=%s)" = one ]
	run "$AIRLOCK" gate
	[ "$status" -eq 0 ]
}

@test "a bare-repository shape with a hook and a hazardous config is moved aside" {
	host_repo
	al run -- sh -c "mkdir -p b/objects b/refs/heads b/hooks && echo 'ref: refs/heads/main' > b/HEAD
		git config --file b/config core.bare true
		git config --file b/config core.fsmonitor '$FSMON'
		printf '%s\n' '$HOOK' > b/hooks/pre-receive; chmod +x b/hooks/pre-receive"
	git push -q ./b HEAD:refs/heads/main >/dev/null 2>&1 || true
	host_git_runs_nothing
	[ "$status" -eq 14 ]
	moved_aside b/config
	moved_aside b/hooks/pre-receive
	[ ! -e b/config ]
	[ -f b/HEAD ]
}

@test "a gitfile pointing at a directory the command made is moved aside, with that directory's config" {
	al run -- sh -c "mkdir -p sub evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD
		git config --file evil/config core.fsmonitor '$FSMON'
		echo 'gitdir: ../evil' > sub/.git"
	host_git_runs_nothing sub
	[ "$status" -eq 14 ]
	moved_aside sub/.git
	moved_aside evil/config
}

@test "an existing submodule's config and hooks are read-only inside; a new one's are moved aside" {
	host_repo "$TEST_DIR/src"
	host_repo
	git -c protocol.file.allow=always submodule add -q "$TEST_DIR/src" m >/dev/null 2>&1
	git commit -qm sub
	[ -f .git/modules/m/config ]
	[ -f m/.git ]
	cp .git/modules/m/config "$TEST_DIR/config.before"
	al run -- sh -c "git config --file .git/modules/m/config core.fsmonitor '$FSMON' || echo refused1
		printf '%s\n' '$HOOK' > .git/modules/m/hooks/pre-commit || echo refused2
		cp -r .git/modules/m .git/modules/n
		git config --file .git/modules/n/config core.fsmonitor '$FSMON'
		printf '%s\n' '$HOOK' > .git/modules/n/hooks/pre-commit; chmod +x .git/modules/n/hooks/pre-commit
		mkdir n && echo 'gitdir: ../.git/modules/n' > n/.git"
	host_git_runs_nothing . m n
	[ "$status" -eq 14 ]
	[[ "$(rq .stdout)" == *refused1*refused2* ]]
	cmp .git/modules/m/config "$TEST_DIR/config.before"
	[ ! -e .git/modules/m/hooks/pre-commit ]
	rq '.sandbox.enforced.read_only[]' | grep -q '/.git/modules/m/config$'
	moved_aside .git/modules/n/config
	moved_aside .git/modules/n/hooks/pre-commit
	moved_aside n/.git
	[ -f m/.git ] # the user's gitfile was not touched: it stays
}

@test "a worktree's indirections and a config.worktree the command made are moved aside" {
	host_repo
	al run -- sh -c "git worktree add -q wt 2>&1
		git config --file .git/config.worktree core.fsmonitor '$FSMON'"
	host_git_runs_nothing . wt
	[ "$status" -eq 14 ]
	moved_aside .git/config.worktree
	moved_aside .git/worktrees/wt/commondir
	moved_aside .git/worktrees/wt/gitdir
	moved_aside wt/.git
	[ -f wt/tracked.txt ] # the checkout itself is the user's to keep
}

@test "hooks planted by renaming ancestors are moved aside" {
	host_repo
	host_repo sub
	rm -rf sub/.git/hooks
	mkdir tools
	printf '%s\n' "$HOOK" > tools/pre-commit
	chmod +x tools/pre-commit
	sleep 2.1 # tools/pre-commit is the user's, older than the run
	al run -- sh -c 'mv .git .old; mv tools sub/.git/hooks
		git init -q n && mv n/.git n/.old && mkdir -p n/.git/hooks && cp -r n/.old/. n/.git/ &&
		printf "%s\n" "#!/bin/sh" "touch x" > n/.git/hooks/pre-commit'
	host_git_runs_nothing . sub n
	[ "$status" -eq 14 ]
	[ -d .git ] && [ ! -e .old ] # the workspace's .git is pinned
	moved_aside sub/.git/hooks/pre-commit
	moved_aside n/.git/hooks/pre-commit
}

@test "a hard link to a protected hook cannot change it behind its read-only mount" {
	host_repo
	printf '#!/bin/sh\nexit 0\n' > .git/hooks/pre-commit
	chmod +x .git/hooks/pre-commit
	ln .git/hooks/pre-commit hooklink
	sleep 2.1
	al run -- sh -c "printf '%s\n' '$HOOK' > hooklink"
	host_git_runs_nothing .
	[ "$status" -eq 14 ]
	moved_aside .git/hooks/pre-commit
}

@test "a symlinked hook whose target the command changed is moved aside" {
	host_repo
	mkdir scripts
	printf '#!/bin/sh\nexit 0\n' > scripts/hook.sh
	chmod +x scripts/hook.sh
	ln -s ../../scripts/hook.sh .git/hooks/pre-commit
	sleep 2.1
	al run -- sh -c "printf '%s\n' '$HOOK' > scripts/hook.sh"
	host_git_runs_nothing .
	[ "$status" -eq 14 ]
	moved_aside .git/hooks/pre-commit
}

@test "a background child writing after the command exits is killed before the check" {
	host_repo
	al run -- sh -c "(sleep 0.3; git init -q late; git -C late config core.fsmonitor '$FSMON') & exit 0"
	[ "$status" -eq 0 ]
	[ "$(rq .descendants_killed)" -ge 1 ]
	sleep 1
	[ ! -e late ]
	al run -- sh -c "(git init -q late2; git -C late2 config core.fsmonitor '$FSMON') & sleep 0.05; exit 0"
	sleep 1
	# Killed before it wrote the hook, or moved aside: never live.
	if [ -e late2/.git/config ]; then ! grep -q fsmonitor late2/.git/config; fi
	host_git_runs_nothing . late2
}

@test "a .envrc and a .airlock the command creates are moved aside, and the failure is open" {
	al run -- sh -c "echo 'touch x' > .envrc && mkdir -p .airlock/x && ls -A
		git init -q .airlock/x && git -C .airlock/x config core.fsmonitor '$FSMON'"
	[ "$status" -eq 14 ]
	[[ "$(rq .stdout)" == *.envrc* ]]
	[ ! -e .envrc ]
	[ ! -e .airlock ]
	moved_aside .envrc
	moved_aside .airlock
	moved_aside .airlock/x/.git/config # went along with .airlock
	[ "$(rq '.host_code.moved_aside[] | select(.path == ".envrc") | .kind')" = protected_path ]
	failure_open
}

@test "a dry run's verdict names the code for the host in its snapshot, and apply refuses it" {
	host_repo
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c "git init -q sub && git -C sub config core.fsmonitor '$FSMON'; echo ../c > .git/commondir"
	host_git_runs_nothing .
	[ "$status" -eq 14 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = HOST_CODE ]
	jq -r '.dryrun.problems[].host_code' <<<"$output" | grep -qx sub/.git/config
	jq -r '.dryrun.problems[].host_code' <<<"$output" | grep -qx .git/commondir
	[ "$(jq -r .host_code <<<"$output")" = null ]
	[ ! -e sub ]
	[ ! -e .git/commondir ]
	id=$(jq -r .id <<<"$output")
	run "$AIRLOCK" dryrun -- sh -c "echo ../c > .git/commondir"
	[ "$status" -eq 14 ]
	[[ "$output" == *"dry run "*": HOST_CODE"* ]]
	[[ "$output" == *"would run code on the host: .git/commondir (git_indirection)"* ]]
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 21 ]
}

# ---- item 1: no trace ------------------------------------------------------

@test "a real repository's git status and ls-files are the same before, during and after a run" {
	host_repo
	echo change >> tracked.txt
	before_status=$(git status --porcelain)
	before_files=$(git ls-files)
	al run -- sh -c 'git status --porcelain; echo ---; git ls-files'
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = "$before_status
---
$before_files" ]
	[ "$(git status --porcelain)" = "$before_status" ]
	[ "$(git ls-files)" = "$before_files" ]
}

@test "git add -A and a commit inside commit nothing of airlock's" {
	host_repo
	echo new > new.txt
	al run -- sh -c 'git add -A && git -c user.name=a -c user.email=a@b commit -qm inside'
	[ "$status" -eq 0 ]
	[ "$(git show --name-only --format= HEAD)" = new.txt ]
	[ -z "$(git status --porcelain)" ]
}

@test "ls -A inside is what the host sees, during and after" {
	echo x > a
	mkdir d
	expected=$(ls -A)
	al run -- ls -A
	[ "$(rq .stdout)" = "$expected" ]
	[ "$(ls -A)" = "$expected" ]
}

@test "rm -rf of everything and find -delete succeed in a workspace without .git" {
	mkdir -p d/e
	touch a .hidden d/e/f
	al run -- sh -c 'rm -rf ./* ./.[!.]* && [ -z "$(ls -A)" ]'
	[ "$status" -eq 0 ]
	[ -z "$(ls -A)" ]
	mkdir -p d/e
	touch a .hidden d/e/f
	al run -- find . -mindepth 1 -delete
	[ "$status" -eq 0 ]
	[ -z "$(ls -A)" ]
}

@test "a run in progress puts nothing in the workspace" {
	"$AIRLOCK" run --timeout 20s -- sleep 2 >/dev/null &
	sleep 0.7
	[ -z "$(ls -A)" ]
	wait
	[ -z "$(ls -A)" ]
}

# A moved-aside path that is not UTF-8 was left out of the stored receipt
# (json_pack() refused it): the receipt read as clean, host_code complete
# with nothing moved, and `receipts --failed` did not list the run, though
# the gate had opened the failure from the receipt's struct.
@test "a hook planted under a name that is not UTF-8 is named in the stored receipt, and the run is listed as failed" {
	host_repo
	al run -- sh -c "mkdir -p \"\$(printf 'x\\377')/.git/hooks\" && cd \"\$(printf 'x\\377')\" &&
		git init -q . && printf '%s\n' '$HOOK' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
	[ "$status" -eq 14 ]
	[ "$(rq '.host_code.moved_aside | length')" -ge 1 ]
	rq -e '.host_code.moved_aside[] | select(.path | endswith("/.git/hooks/pre-commit")) | .path | startswith("x")'
	id=$(receipt_id)
	failure_open
	run "$AIRLOCK" receipts --failed
	[[ "$output" == *"$id"* ]]
}

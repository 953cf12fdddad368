#!/usr/bin/env bats
# Attacks on issue 10's promises that succeeded against the first implementation
# (found by attacking it; each test failed then and passes now), and what their
# fixes must not break.

load helpers

setup_file() {
	export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t \
		GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
}

setup() {
	setup_dirs
	MARK="$TEST_DIR/mark"
}

# ATTACK: the walk's git-directory test (hostsafety.c: HEAD and objects with
# d_type DT_DIR) differs from git's (is_git_directory: access(objects, X_OK),
# which follows a symlink). A bare repository whose objects/ is a SYMLINK is
# not a git directory for the walk, so its hooks and config are not judged:
# the run exits 0, no failure opens, and the host's `git push ./b` runs the
# command's pre-receive hook.
@test "ATTACK: a bare repository whose objects is a symlink hides its hook from the walk" {
	git init -q . && echo x > f && git add f && git commit -qm init
	al run -- sh -c "mkdir -p b/o b/refs/heads b/hooks && ln -s o b/objects
		echo 'ref: refs/heads/main' > b/HEAD
		git config --file b/config core.bare true
		printf '#!/bin/sh\necho ran > $MARK\n' > b/hooks/pre-receive
		chmod +x b/hooks/pre-receive"
	git push -q ./b HEAD:refs/heads/main >/dev/null 2>&1 || true
	if [ -e "$MARK" ]; then
		echo "the host's git push ran the command's pre-receive hook" >&2
		return 1
	fi
	[ "$status" -eq 14 ]
}

# ATTACK, same hole through a dry run: the snapshot's walk does not see the
# symlinked-objects bare repository either, so the verdict is DRY_RUN_OK,
# `airlock apply` puts the hook into the real tree, and the host's push runs it.
@test "ATTACK: a dry run of the symlinked-objects bare repository is applied and its hook runs on the host" {
	git init -q . && echo x > f && git add f && git commit -qm init
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b' --expect 'b/**' -- sh -c "
		mkdir -p b/o b/refs/heads b/hooks && ln -s o b/objects
		echo 'ref: refs/heads/main' > b/HEAD
		git config --file b/config core.bare true
		printf '#!/bin/sh\necho ran > $MARK\n' > b/hooks/pre-receive
		chmod +x b/hooks/pre-receive"
	verdict=$(jq -r .dryrun.verdict <<<"$output")
	id=$(jq -r .id <<<"$output")
	echo "dry run: status $status, verdict $verdict; stderr: $stderr" >&2
	"$AIRLOCK" apply "$id" >/dev/null 2>&1 || true
	git push -q ./b HEAD:refs/heads/main >/dev/null 2>&1 || true
	if [ -e "$MARK" ]; then
		echo "verdict $verdict; apply put the hook in; the host's git push ran it" >&2
		return 1
	fi
	[ "$verdict" = HOST_CODE ]
}

# ATTACK on "Which workspaces are refused": the promise is that the workspace
# "must not be a place where a write reaches the host's code", but only
# /var/lib, /var/spool, /opt, /srv, /run ... THEMSELVES are refused. A
# directory below them that holds code the host runs is accepted: as root,
# `airlock run --workspace /var/lib/dpkg/info -- sh -c 'echo ... > x.postinst'`
# exited 0 and left a maintainer script apt runs as root (reproduced by hand,
# file removed afterwards). This test only asks for the refusal (runs `true`,
# writes nothing).
@test "ATTACK: a workspace below /var/lib that holds the host's code is accepted" {
	[ -d /var/lib/dpkg/info ] || skip "no dpkg here"
	mkdir -p "$TEST_DIR/s"
	cd /var/lib/dpkg/info
	run --separate-stderr "$AIRLOCK" run --state-dir "$TEST_DIR/s" --workspace /var/lib/dpkg/info -- true
	echo "status $status: $output" >&2
	[ "$status" -eq 125 ]
	[ "$(jq -r .status <<<"$output")" = invalid ]
}

# ATTACK: the walk judges a config or hook only if ITS OWN ctime is the
# run's, and only in a directory that is a git directory at the end of the
# run. Two runs split the attack: run 1 stages a repository without HEAD
# (not a git directory: nothing judged, exit 0); run 2 renames it to
# sub/.git and writes HEAD. Renaming the parent changes only the parent's
# ctime, so config and hooks/pre-commit keep run 1's: not "the run's".
# No failure is opened by either run; the host's git status runs the
# fsmonitor and git commit runs the hook.
@test "ATTACK: a repository staged without HEAD in one run and renamed to .git in the next runs code on the host" {
	al run -- sh -c "mkdir -p stage/objects stage/refs/heads stage/hooks
		git config --file stage/config core.fsmonitor 'echo fsmonitor >> $MARK; false'
		printf '#!/bin/sh\necho hook >> $MARK\n' > stage/hooks/pre-commit
		chmod +x stage/hooks/pre-commit"
	status1=$status
	sleep 1.1 # not needed for the ctime test; only to make the two runs clearly apart
	al run -- sh -c "mkdir sub && mv stage sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD"
	status2=$status
	run "$AIRLOCK" gate
	gate=$status
	git -C sub status >/dev/null 2>&1 || true
	git -C sub commit -q --allow-empty -m host >/dev/null 2>&1 || true
	if [ -e "$MARK" ]; then
		echo "runs exited $status1 and $status2, gate $gate; the host ran: $(tr '\n' ' ' < "$MARK")" >&2
		return 1
	fi
	[ "$status2" -eq 14 ] || [ "$status1" -eq 14 ]
}

# The rule that catches the split attack above must not take the user's own
# repository apart: a run that commits (HEAD and the git directory change)
# leaves the workspace repository's own non-inert config and hooks alone,
# since they were mounted read-only for the run.
@test "a run that commits keeps the workspace repository's own config and hooks" {
	git init -q . && echo x > f && git add f && git commit -qm init
	git config alias.st status
	printf '#!/bin/sh\nexit 0\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
	al run -- sh -c 'echo y >> f && git -c user.name=t -c user.email=t@t commit -qam second && git checkout -qb topic'
	[ "$status" -eq 0 ]
	[ "$(rq '.host_code.moved_aside | length')" -eq 0 ]
	[ "$(git config alias.st)" = status ]
	[ -x .git/hooks/pre-commit ]
	[ "$(git log --format=%s -1)" = second ]
}

# ATTACK: the executable is identified by its path before the exec and
# checked by its path after the run (run.c: run_exec_identify(),
# run_exec_recheck()); a directory symlink on that path swapped to another
# directory between the identification and the exec, and back before the
# recheck, makes a receipt name the file airlock resolved (here false), not
# the one that ran (true): an exit 0 with false's identity and no
# changed_during_run, which closes false's failures by rerun. A loop that
# flips the symlink races 150 runs; any such receipt is the hole.
@test "ATTACK: a directory symlink swapped between identification and exec: a receipt names a file that did not run" {
	skip "known: docs/gate.md, \"What the executable's identity does not see\""
	mkdir good bad
	cp "$(type -P true)" good/prog
	cp "$(type -P false)" bad/prog
	ln -s good d
	bad_ino=$(stat -c %i bad/prog)
	python3 -c '
import os, time
end = time.time() + 60
i = 0
while time.time() < end and not os.path.exists("stop"):
    os.symlink("bad" if i % 2 else "good", "d.tmp")
    os.rename("d.tmp", "d")
    i += 1
' 3>&- &
	flip=$!
	for _ in $(seq 1 150); do
		"$AIRLOCK" run -- d/prog >/dev/null 2>&1 || true
	done
	touch stop
	wait "$flip"
	lies=0
	for f in "$AIRLOCK_STATE_DIR"/receipts/[0-9]*.json; do
		if jq -e --argjson ino "$bad_ino" '.exit_code == 0 and .exec_identity.ino == $ino and
			(.exec_identity.changed_during_run | not)' "$f" >/dev/null; then
			echo "receipt $f: exit 0, identity of false"
			lies=$((lies + 1))
		fi
	done
	[ "$lies" -eq 0 ]
}

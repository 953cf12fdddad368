#!/usr/bin/env bats
# airlock dryrun: the command runs on an overlay snapshot of the workspace;
# the real tree is never touched; the change set is read from the upper
# layer. Edge cases from shared/research/dryrun-anchors.md, section 6.
load helpers

# A fingerprint of the real tree: names, types, modes, sizes, contents.
tree_state() {
	(cd "$WORK" && find . -path ./.git -prune -o -printf '%p %y %m %s\n' | sort &&
		find . -type f -not -path './.git/*' -print0 | sort -z | xargs -0r sha256sum)
}

dr() { # dryrun with --json; sets $output to the receipt
	run --separate-stderr "$AIRLOCK" dryrun --json "$@"
}

changes() { # "change path" lines, sorted
	jq -r '.dryrun.changes[] | "\(.change) \(.path)"' <<<"$output"
}

setup_tree() {
	mkdir -p src old docs
	echo one > src/a.c
	echo keep > src/b.c
	echo gone > old/x
	echo doc > docs/readme
	printf 'same\n' > same.txt
	before=$(tree_state)
}

@test "the real tree is untouched whatever the command does" {
	setup_tree
	dr -- sh -c 'echo more >> src/a.c; rm -rf old docs; mkdir -p new/deep; echo x > new/deep/f;
		mv src/b.c src/c.c; chmod 700 same.txt; ln -s a.c src/link; mkfifo pipe; rm same.txt'
	[ "$status" -eq 11 ]
	[ "$(tree_state)" = "$before" ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = UNEXPECTED_PATH ]
}

@test "each kind of change is reported, with sizes and hashes" {
	setup_tree
	dr --expect '**' --expect-delete '**' -- sh -c 'echo more >> src/a.c; rm -rf old; mkdir new;
		echo x > new/f; mv src/b.c src/c.c; chmod 700 same.txt; ln -s a.c src/link; mkfifo pipe'
	[ "$status" -eq 0 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = DRY_RUN_OK ]
	diff <(changes) - <<'EOF'
created new
created new/f
deleted old
created pipe
mode_changed same.txt
modified src/a.c
deleted src/b.c
created src/c.c
created src/link
EOF
	jq -e '.dryrun.changes[] | select(.path == "src/a.c") |
		.old_size == 4 and .size == 9 and (.sha256 | length) == 64 and .old_sha256 != .sha256' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "src/c.c") | .from == null and .mode == "0644"' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "old") | .type == "dir" and .entries == 1' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "same.txt") | .old_mode == "0644" and .mode == "0700"' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "src/link") | .type == "symlink" and .target == "a.c"' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "pipe") | .type == "fifo"' <<<"$output"
	[ "$(sha256sum < new/f 2>/dev/null)" = "" ] || [ ! -e new/f ]
}

@test "a copy-up that changes nothing is no change (open for writing, chmod to the same mode, touch)" {
	setup_tree
	dr -- sh -c 'exec 3>>src/a.c; chmod 644 same.txt; touch same.txt; cat src/a.c >/dev/null'
	[ "$status" -eq 10 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = NO_EFFECT ]
	[ "$(jq '.dryrun.changes | length' <<<"$output")" -eq 0 ]
}

@test "a directory deleted and made again is opaque: what it lost is deleted, what it kept is not" {
	mkdir d && echo a > d/a && echo b > d/b
	dr --expect-delete 'd/**' --expect d -- sh -c 'rm -rf d; mkdir d; echo a > d/a; echo c > d/c'
	diff <(changes) - <<'EOF'
deleted d/b
created d/c
EOF
}

@test "a type change: a file replaced by a directory, a directory by a file" {
	echo f > thing && mkdir dir && echo x > dir/x
	dr --expect '**' --expect-delete '**' -- sh -c 'rm thing; mkdir thing; rm -rf dir; echo now-a-file > dir'
	jq -e '[.dryrun.changes[] | select(.change == "type_changed")] | map(.path) == ["dir", "thing"]' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "dir") | .old_type == "dir" and .type == "file"' <<<"$output"
}

@test "verdicts: undeclared paths, deletions without --expect-delete, declared paths that did not change, ** patterns" {
	setup_tree
	dr --expect 'src/**' -- sh -c 'echo x >> src/a.c; rm old/x'
	[ "$status" -eq 11 ]
	jq -e '.dryrun.problems == [{"unexpected": "old/x", "change": "deleted"}]' <<<"$output"
	dr --expect 'src/**' --expect-delete 'old/*' --expect 'docs' -- sh -c 'echo x >> src/a.c; rm old/x'
	[ "$status" -eq 12 ]
	jq -e '.dryrun.verdict == "EXPECTED_PATH_MISSING" and .dryrun.problems == [{"missing": "docs"}]' <<<"$output"
	dr --expect '**/*.c' -- sh -c 'mkdir -p a/b/c; echo x > a/b/c/deep.c; echo y > top.c'
	[ "$status" -eq 11 ] # the directories a, a/b, a/b/c are not *.c
	dr --expect 'a' --expect '*.c' -- sh -c 'mkdir -p a/b/c; echo x > a/b/c/deep.c; echo y > top.c'
	[ "$status" -eq 0 ]
	dr --expect 'sr?/[ab].c' -- sh -c 'echo x >> src/a.c'
	[ "$status" -eq 0 ]
}

@test "a failing command is DRY_RUN_FAILED with its own exit status, and still shows its changes" {
	setup_tree
	dr --expect '**' -- sh -c 'echo partial > half.txt; exit 3'
	[ "$status" -eq 3 ]
	jq -e '.dryrun.verdict == "DRY_RUN_FAILED" and .dryrun.changes[0].path == "half.txt"' <<<"$output"
	[ ! -e half.txt ]
	dr --expect-exit 3 --expect '**' -- sh -c 'echo partial > half.txt; exit 3'
	[ "$status" -eq 0 ]
}

@test "writes outside the workspace fail, and .git/hooks stays read-only in the snapshot" {
	mkdir -p .git/hooks
	outside=/var/tmp/airlock-dryrun-outside.$$
	dr --expect '**' -- sh -c "echo evil > $outside || echo refused1;
		echo 'touch PWNED' > .git/hooks/pre-commit || echo refused2; echo ok > inside"
	[[ "$(jq -r .stdout <<<"$output")" == *refused1*refused2* ]]
	[ ! -e "$outside" ]
	[ "$(changes)" = "created inside" ]
}

@test "writes attempted outside the workspace are recorded; /tmp, /dev and the workspace are not" {
	dr --expect '**' -- sh -c "echo x > /var/tmp/airlock-attempt.\$\$; (cd /etc && rm -f ../usr/airlock-zz);
		mkdir /opt/airlock-attempt; echo t > /tmp/scratch; echo n > /dev/null; echo ok > inside;
		mv inside inside2; true"
	[ "$status" -eq 15 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = OUTSIDE_WRITE ]
	jq -e '[.dryrun.problems[].outside_write] | index("/usr/airlock-zz") != null' <<<"$output"
	jq -e '[.dryrun.outside_writes[].path] | (any(startswith("/var/tmp/airlock-attempt.")) and
		index("/usr/airlock-zz") != null and index("/opt/airlock-attempt") != null)' <<<"$output"
	jq -e '[.dryrun.outside_writes[].path] | all(startswith("/tmp") or startswith("/dev") | not)' <<<"$output"
	jq -e --arg w "$WORK" '[.dryrun.outside_writes[].path] | all(startswith($w) | not)' <<<"$output"
	jq -e '.dryrun.outside_writes[] | select(.path == "/usr/airlock-zz") | .syscall == "unlinkat"' <<<"$output"
	[ ! -e /opt/airlock-attempt ]
}

@test "hard links: changing one name through the snapshot leaves the real tree; the other name is linked along" {
	echo hard > h1 && ln h1 h2
	dr --expect '**' -- sh -c 'cat h2; echo more >> h1'
	[ "$(changes)" = "$(printf 'modified h1\nmodified h2')" ]
	jq -e '.dryrun.changes[] | select(.path == "h2") | .link_to == "h1" and .hard_link' <<<"$output"
	[ "$(cat h1)" = hard ]
	[ "$(cat h2)" = hard ]
	[ "$(stat -c %h h1)" -eq 2 ]
}

@test "file names that are not UTF-8, and names with spaces and newlines" {
	dr --expect '**' -- sh -c "printf x > \"\$(printf 'bad\\377name')\"; printf y > 'with space'; printf z > 'new
line'"
	[ "$status" -eq 0 ]
	[ "$(jq '.dryrun.changes | length' <<<"$output")" -eq 3 ]
	jq -e '[.dryrun.changes[].path] | index("with space") != null and index("new\nline") != null' <<<"$output"
	jq -e '[.dryrun.changes[].path] | any(contains("bad\ufffdname"))' <<<"$output"
}

@test "a large file is hashed, not kept: 64 MiB appended to" {
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "slow under sanitizers"
	head -c 67108864 /dev/zero > big
	dr --expect big -- sh -c 'echo tail >> big'
	[ "$status" -eq 0 ]
	jq -e '.dryrun.changes[0] | .old_size == 67108864 and .size == 67108869' <<<"$output"
	[ "$(stat -c %s big)" -eq 67108864 ]
}

@test "a file with extended attributes whose times alone change is no change" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo x > f
	setfattr -n user.note -v one f 2>/dev/null || skip "no user xattrs here"
	dr -- sh -c 'touch -m -d 2001-01-01 f'
	[ "$status" -eq 10 ]
}

@test "the change set is kept beside the snapshot, and the receipt matches the schema" {
	setup_tree
	dr --expect '**' -- sh -c 'echo x >> src/a.c'
	id=$(jq -r .id <<<"$output")
	jq -e ".schema == \"airlock.changeset/4\" and .receipt == $id and (.changes | length) == 1" \
		"$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	[ -d "$AIRLOCK_STATE_DIR/dryruns/$id/upper/src" ]
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/$id/work" ]
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	echo "$output"
	[ "$status" -eq 0 ]
}

# The overlay's work tree holds a directory of mode 000 (work/work) that
# only its owner may open after a chmod: left behind, the owner's own `cp -a`
# or `rm -rf` of the state directory fails on it as any user but root
# (fleet.bats copies a host's state directory). The dry run removes it.
@test "a dry run leaves nothing in the state directory its owner cannot copy or remove" {
	echo x > f
	dr --expect f -- sh -c 'echo y > f'
	[ "$status" -eq 0 ]
	id=$(jq -r .id <<<"$output")
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/$id/work" ]
	cp -a "$AIRLOCK_STATE_DIR" "$TEST_DIR/state.copy"
	rm -rf "$TEST_DIR/state.copy"
}

@test "more changes than the receipt holds: counted, listed in changeset.json" {
	dr --expect '**' -- sh -c 'i=0; while [ $i -lt 1100 ]; do : > f$i; i=$((i+1)); done'
	[ "$status" -eq 0 ]
	jq -e '.dryrun.total == 1100 and .dryrun.truncated and (.dryrun.changes | length) == 1000' <<<"$output"
	run --separate-stderr "$AIRLOCK" dryrun --expect '**' -- sh -c 'i=0; while [ $i -lt 1100 ]; do : > f$i; i=$((i+1)); done'
	[[ "$output" == *"1100 changes in all"* ]]
}

@test "no quarantine, no dry run: --sandbox=none is refused with a receipt" {
	run --separate-stderr "$AIRLOCK" dryrun --sandbox=none -- true
	[ "$status" -eq 125 ]
	one_error_line "a dry run needs the quarantine"
}

@test "a mount point inside the workspace: the snapshot cannot be made, nothing runs (125)" {
	[ "$(id -u)" -eq 0 ] || skip "only root can mount here"
	mkdir sub && mount -t tmpfs tmpfs sub
	run --separate-stderr "$AIRLOCK" dryrun -- touch sub/x
	umount sub
	[ "$status" -eq 125 ]
	[ ! -e sub/x ]
	[[ "$stderr" == *"a mount point inside it"* ]]
}

@test "a dry run's success closes no failure; its failure opens one" {
	al run -- sh -c 'test -e marker'
	# shellcheck disable=SC2034 # unread; it checks that the run printed a receipt id
	failed=$(receipt_id)
	dr -- sh -c 'test -e marker || touch marker; test -e marker'
	jq -e '.gate.closes == [] and .gate.verified == false' <<<"$output"
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

@test "a state directory inside the workspace is refused before anything is mounted" {
	run --separate-stderr env AIRLOCK_STATE_DIR="$WORK/.state" "$AIRLOCK" dryrun -- touch x
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"holds airlock's state directory"* ]]
	[ ! -e x ]
}

@test "the private /tmp and the workspace below /tmp: the command sees its files, /tmp writes are not changes" {
	echo data > input
	dr --expect out -- sh -c 'cat input > out; echo scratch > /tmp/scratch'
	[ "$status" -eq 0 ]
	[ "$(changes)" = "created out" ]
}

@test "scratch space is counted, not listed: what the command left in the private /tmp, in the receipt and the change set" {
	# Nothing written anywhere: 0, although the workspace's own path lies
	# below /tmp here (its directories are made in the quarantine's /tmp).
	dr -- true
	[ "$status" -eq 10 ]
	jq -e '.dryrun.scratch == {"entries": 0, "bytes": 0}' <<<"$output"
	# Three objects, one of 100,000 bytes; a file made and removed is not left.
	dr -- sh -c 'head -c 100000 /dev/zero > /tmp/x; mkdir /tmp/d; echo y > /tmp/d/y; echo z > /tmp/gone; rm /tmp/gone'
	[ "$status" -eq 10 ]
	id=$(jq -r .id <<<"$output")
	jq -e '.dryrun.scratch.entries == 3 and .dryrun.scratch.bytes >= 100000 and .dryrun.total == 0' <<<"$output"
	jq -e '.scratch.entries == 3 and .changes == []' "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json"
	# No names, no contents: a count.
	! grep -q '/tmp/d' "$AIRLOCK_STATE_DIR/dryruns/$id/changeset.json" || false
	run "$AIRLOCK" dryrun -- sh -c ': > /tmp/one'
	[[ "$output" == *"scratch space: 1 objects left in the private /tmp"* ]]
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR/receipts/$id.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a file of a group outside an unprivileged caller's identity map: the overlay cannot copy it up, and the receipt says so" {
	# Root's dry run maps every id (rootdryrun.bats); a caller in a second
	# group maps only its own.
	[ "$(id -u)" -eq 0 ] || skip "only root can make a caller with a second group here"
	chmod 755 "$TEST_DIR" && chown 65534:65534 "$WORK"
	echo x > grp && chown 65534:1000 grp && chmod 664 grp
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --groups=1000 env HOME=/tmp \
		AIRLOCK_STATE_DIR="$TEST_DIR/state-nobody" "$AIRLOCK" dryrun --json --expect grp -- sh -c 'echo y >> grp'
	[ "$status" -ne 0 ]
	jq -e '.dryrun.verdict == "DRY_RUN_FAILED" and (.dryrun.problems[0].hint | contains("EOVERFLOW"))' <<<"$output"
	[ "$(cat grp)" = x ]
}

@test "the dry-run report shows file names the command chose without their escape sequences" {
	al dryrun -- sh -c 'touch "$(printf "name-visible\033]0;pw""ned\007\033[2J\302\233""1m")"'
	printf '%s\n' "$output" >"$TEST_DIR/report.out"
	shows_no_controls "$TEST_DIR/report.out" "new         name-visible (0 bytes)" "not declared: name-visible (created)"
	shows_no_hidden_text "$TEST_DIR/report.out"
}

@test "a change set that cannot be read (deeper than 1,024 levels) is DRY_RUN_FAILED with a receipt and an open failure" {
	# Made outside (fast); the command writes at the bottom, so the overlay
	# copies all 4,100 directories up. cd in steps: the path is longer
	# than PATH_MAX.
	c=$(printf 'd/%.0s' $(seq 1025)) && c=${c%/}
	mkdir -p "$c/$c/$c/$c"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- \
		sh -c "cd -P $c && cd -P $c && cd -P $c && cd -P $c && echo x > leaf"
	[ "$status" -eq 125 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.verdict == "DRY_RUN_FAILED" and (.dryrun.problems[0].changeset_error | test("deeper than 1024"))' <<<"$output"
	[ -f "$AIRLOCK_STATE_DIR/receipts/$(jq -r .id <<<"$output").json" ]
	run "$AIRLOCK" gate
	[ "$status" -eq 2 ]
}

# Issue 20: every object apply installs carries its whole identity, and a
# mode changed with the content is shown for review.
@test "a mode changed with the content: the entry has mode and old_mode, and the report shows mode 644 -> 755" {
	echo one > f && chmod 644 f && echo same > g && chmod 600 g && echo t > t && mkdir m
	dr --expect '**' --expect-delete t -- sh -c 'echo two > f; chmod 755 f; echo more >> g; rm t; ln -s g t; chmod 700 m; echo n > n'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	jq -e '.dryrun.changes[] | select(.path == "f") | .change == "modified" and .mode == "0755" and
		.old_mode == "0644" and .xattrs == [] and .size == 4 and (.sha256 | length) == 64' <<<"$output"
	# The same mode: no old_mode, and the entry still carries the mode.
	jq -e '.dryrun.changes[] | select(.path == "g") | .mode == "0600" and (has("old_mode") | not) and .xattrs == []' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "t") | .change == "type_changed" and .mode == "0777" and
		.old_mode == "0644" and .target == "g" and .xattrs == []' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "m") | .change == "mode_changed" and .xattrs == []' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "n") | .change == "created" and .mode == "0644" and .xattrs == []' <<<"$output"
	run --separate-stderr "$AIRLOCK" dryrun --expect '**' -- sh -c 'echo two > f; chmod 755 f; echo more >> g'
	[ "$status" -eq 0 ]
	[[ "$output" == *"modified    f (4 -> 4 bytes, mode 644 -> 755)"* ]] || { echo "$output"; return 1; }
	grep -qx '  modified    g (5 -> 10 bytes)' <<<"$output" || { echo "$output"; return 1; }
}

# Issue 20: the overlay cannot rename a directory of the lower layer (EXDEV),
# so mv copies it; an attribute the copy cannot take (a user.* attribute of a
# read-only file, an ACL naming an id the quarantine does not map) is lost
# where the real rename keeps it. The dry run says so: ATTRS_LOST (17).
attrs_lost() { # dryrun ARGS...: ATTRS_LOST naming $LOST (new path) among its problems
	dr "$@"
	[ "$status" -eq 17 ] || { echo "status $status: $output"; return 1; }
	jq -e '.dryrun.verdict == "ATTRS_LOST"' <<<"$output"
	jq -e --arg p "$LOST" '[.dryrun.problems[].attrs_lost] | index($p) != null' <<<"$output" ||
		{ jq .dryrun.problems <<<"$output"; return 1; }
	[ "$(jq -r .verdict "$AIRLOCK_STATE_DIR/dryruns/$(jq -r .id <<<"$output")/changeset.json")" = ATTRS_LOST ]
	al apply "$(jq -r .id <<<"$output")"
	[ "$status" -eq 21 ]
}

# Either the copy kept the attribute $NAME (then the change set lists it on
# $LOST) or the verdict is ATTRS_LOST naming $LOST. As root the dry run keeps
# CAP_FOWNER and CAP_DAC_OVERRIDE (docs/dryrun.md, "Root"), and another user's
# mv adds the owner's write access first: both copies keep it.
kept_or_lost() { # dryrun ARGS...
	dr "$@"
	if [ "$status" -eq 0 ]; then
		jq -e --arg p "$LOST" --arg n "$NAME" \
			'.dryrun.changes[] | select(.path == $p) | [.xattrs[].name] | index($n) != null' <<<"$output"
	else
		attrs_lost "$@"
	fi
}

@test "a directory renamed in the snapshot drops a user.* attribute of a read-only file: ATTRS_LOST, never DRY_RUN_OK" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	mkdir -p d/s/t && echo x > d/f && echo y > d/s/t/g
	setfattr -n user.a -v 1 d/f 2>/dev/null || skip "no user xattrs here"
	setfattr -n user.b -v 2 d/s/t/g && chmod 444 d/f d/s/t/g
	LOST=e/f NAME=user.a kept_or_lost --expect e --expect-delete d -- mv d e
	if [ "$status" -eq 17 ]; then
		jq -e '.dryrun.problems[] | select(.attrs_lost == "e/f") | .from == "d/f" and .names == ["user.a"]' <<<"$output"
		run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
			"$AIRLOCK_STATE_DIR"/receipts/*.json
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	fi
	LOST=e/s/t/g NAME=user.b kept_or_lost --expect e --expect-delete d -- mv d e
	# A directory of the tree, renamed from below another one.
	LOST=u/t/g NAME=user.b kept_or_lost --expect u --expect-delete d/s -- mv d/s u
	# Into a directory the command made, mv's copy may keep it (then so
	# does the change set); either way nothing is lost silently.
	dr --expect n --expect-delete d/s -- sh -c 'mkdir n && mv d/s/t n/'
	if [ "$status" -eq 0 ]; then
		jq -e '.dryrun.changes[] | select(.path == "n/t/g") | .xattrs == [{"name": "user.b", "base64": "Mg=="}]' <<<"$output"
	else
		LOST=n/t/g attrs_lost --expect n --expect-delete d/s -- sh -c 'mkdir n && mv d/s/t n/'
	fi
	[ -e d/f ]
	[ "$(getfattr -h --only-values -n user.b d/s/t/g)" = 2 ]
	# A directory's own user.* attribute is copied (the copy is still
	# writable then); a writable file's too: no loss, no refusal.
	mkdir w ro && echo z > w/z && setfattr -n user.c -v 3 w && setfattr -n user.c -v 3 w/z
	setfattr -n user.c -v 3 ro && chmod 555 ro
	dr --expect v --expect-delete w -- mv w v
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	dr --expect v --expect-delete ro -- mv ro v
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	jq -e '.dryrun.changes[] | select(.path == "v") | .xattrs == [{"name": "user.c", "base64": "Mw=="}]' <<<"$output"
}

@test "a directory renamed in the snapshot drops an ACL naming an id the quarantine does not map: ATTRS_LOST" {
	# As root every id is mapped (docs/dryrun.md, "Root"): the copy keeps the
	# ACL (tests/diff/run.py as root renames directories with such ACLs).
	[ "$(id -u)" -ne 0 ] || skip "as root the quarantine maps every id: nothing is lost"
	command -v setfacl >/dev/null || skip "acl is not installed"
	mkdir -p d/s && echo x > d/f
	setfacl -m u:4242:r d/f 2>/dev/null || skip "no ACLs here"
	LOST=e/f attrs_lost --expect e --expect-delete d -- mv d e
	# The directory's own ACL, and a default ACL below it.
	setfacl -b d/f && setfacl -m u:4242:rx d && setfacl -d -m u:4242:rx d/s
	LOST=e attrs_lost --expect e --expect-delete d -- mv d e
	LOST=e/s attrs_lost --expect e --expect-delete d -- mv d e
	# An ACL naming the caller's own id is copied: no loss.
	setfacl -b d && setfacl -k d/s && setfacl -m "u:$(id -u):r" d/f
	dr --expect e --expect-delete d -- mv d e
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
}

@test "a copy that keeps no attributes (cp -r, then rm -r) is refused the same way; a remade empty directory is not" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	mkdir -p d && echo x > d/f && mkdir empty
	setfattr -n user.a -v 1 d/f 2>/dev/null || skip "no user xattrs here"
	setfattr -n user.a -v 1 empty
	# Content, name and mode are all the evidence there is: a deliberate
	# copy without attributes looks like a rename that lost them.
	LOST=e/f attrs_lost --expect e --expect-delete d -- sh -c 'cp -r d e && rm -rf d'
	dr --expect made --expect-delete empty -- sh -c 'rmdir empty && mkdir made'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	dr --expect e --expect-delete d -- sh -c 'rm -rf d && mkdir e && echo other > e/f'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	# A new directory that merely holds a name the old one held, as
	# another type, is no copy of it (tests/diff seed 34).
	mkdir q && echo five > q/x && setfattr -n user.a -v 1 q
	dr --expect x --expect-delete q -- sh -c 'rm -rf q && mkdir -p x/x/x'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	# A directory removed and refilled (no copy made from it: tar keeps no
	# attributes here, in the real run too), then renamed, or a file of
	# the same bytes written elsewhere: no copy of the lower one (seeds
	# 208, 227).
	mkdir -p t/s r && echo x > t/s/f && echo same > r/f && setfattr -n user.a -v 1 t/s/f
	setfattr -n user.a -v 1 r/f
	dr --expect '**' --expect-delete '**' -- sh -c \
		'tar -cf /tmp/t.tar t && rm -rf t && tar -xf /tmp/t.tar && mv t/s b'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	dr --expect '**' --expect-delete '**' -- sh -c 'rm -rf r && mkdir r && echo n > r/n && mkdir c && echo same > c/f'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
}

@test "a directory renamed and its name made again (mv d e; mkdir d): what its copy lost is named too" {
	# As root every id is mapped (docs/dryrun.md, "Root"): the copy keeps the
	# ACL (tests/diff/run.py as root renames directories with such ACLs).
	[ "$(id -u)" -ne 0 ] || skip "as root the quarantine maps every id: nothing is lost"
	command -v setfacl >/dev/null || skip "acl is not installed"
	mkdir -p d/s && echo x > d/f && echo y > d/s/g
	setfacl -m u:4242:r d/f 2>/dev/null || skip "no ACLs here"
	setfacl -m u:4242:rx d && setfacl -m u:4242:r d/s/g
	LOST=e/f attrs_lost --expect '**' --expect-delete d -- sh -c 'mv d e && mkdir d'
	LOST=e attrs_lost --expect '**' --expect-delete d -- sh -c 'mv d e && mkdir d'
	LOST=e/s/g attrs_lost --expect '**' --expect-delete d -- sh -c 'mv d e && mkdir d'
}

@test "hard-link groups: a trace past 4,096 linked paths cannot judge a group changed in place: LINK_GROUP" {
	echo one > a && ln a b && echo z > z
	i=0; while [ $i -lt 4200 ]; do ln z "l$i"; i=$((i + 1)); done
	dr --expect '**' -- sh -c 'cat l* > /dev/null; echo more >> a'
	[ "$status" -eq 16 ] || { echo "$status $output"; return 1; }
	[ "$(jq -r .dryrun.verdict <<<"$output")" = LINK_GROUP ]
	# The whole change set is refused, under the workspace's root.
	jq -e '.dryrun.problems | any(.link_group == "." and (.reason | test("incomplete")))' <<<"$output"
	# Below the cap, the same change is reproduced: b is linked along.
	dr --expect '**' -- sh -c 'echo more >> a'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	jq -e '.dryrun.changes | any(.path == "b" and .link_to == "a")' <<<"$output"
	# An unchanged copy-up of one name changes nothing.
	dr -- sh -c 'touch b'
	[ "$status" -eq 10 ] || { echo "$status $output"; return 1; }
}

@test "hard-link groups: the human view names a name that leaves or joins a group, and why one is refused" {
	echo one > a && ln a b && ln a c
	run "$AIRLOCK" dryrun --expect '**' -- sh -c 'cp c t; mv t c; echo more >> a'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	[[ "$output" == *"b (4 -> 9 bytes) [hard link of a]"* ]]
	[[ "$output" == *"c (4 -> 4 bytes) [a new inode: leaves its hard-link group]"* ]]
	run "$AIRLOCK" dryrun --expect '**' -- sh -c 'echo x >> a; echo y >> b'
	[ "$status" -eq 16 ]
	[[ "$output" == *"hard-link group not reproduced: a (more than one name"* ]]
}

@test "hard-link groups: the human view names every name a mode or attribute change of one name reaches" {
	echo one > a && ln a b && mkdir d && ln a d/c && ln a "$(printf 'e\377')" && chmod 644 a
	run "$AIRLOCK" dryrun --expect '**' -- sh -c 'chmod 600 a'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	[[ "$output" == *"a (0644 -> 0600) [also b, d/c, e"$'\xef\xbf\xbd'"]"* ]] || { echo "$output"; return 1; }
	dr --expect '**' -- sh -c 'chmod 600 a'
	jq -e '.dryrun.changes[0] | .path == "a" and ([.also_names[].path] | length == 3)' <<<"$output"
	# A name outside the workspace: counted (the real run changes it too).
	ln a "$TEST_DIR/outside-name"
	run "$AIRLOCK" dryrun --expect '**' -- sh -c 'chmod 600 a'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	[[ "$output" == *"d/c, e"$'\xef\xbf\xbd'", 1 name outside the workspace]"* ]] || { echo "$output"; return 1; }
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

rename_incomplete() { # $1: the source the verdict names; the dry run not applied
	[ "$status" -eq 19 ] || { echo "status $status: $output"; return 1; }
	jq -e '.dryrun.verdict == "RENAME_INCOMPLETE"' <<<"$output"
	jq -e --arg p "$1" '[.dryrun.problems[].rename_incomplete] | index($p) != null' <<<"$output"
	al apply "$(jq -r .id <<<"$output")"
	[ "$status" -eq 21 ] && [ -e r/s/f ] && [ ! -e r/t ] && [ ! -e r/u ]
}

# Issue 20 (cause 10): mv copies a directory of the lower layer (EXDEV) and
# then removes the source; where it cannot (a read-only directory), both
# names remain, where the real rename leaves only the new one. The dry run
# says so: RENAME_INCOMPLETE (19), never applied.
@test "a directory rename the snapshot's copy cannot finish (a 555 source) is RENAME_INCOMPLETE, never DRY_RUN_OK" {
	mkdir -p r/s && echo x > r/s/f && chmod 555 r/s
	dr --expect '**' --expect-delete '**' -- sh -c 'mv r/s r/t; true'
	if [ "$status" -eq 0 ]; then # root's dry run keeps CAP_DAC_OVERRIDE: its copy finishes
		[ "$(id -u)" -eq 0 ] && jq -e '.dryrun.changes | any(.path == "r/s" and .change == "deleted")' <<<"$output"
	else
		rename_incomplete r/s
	fi
	# A program that renames and does not copy: nothing changes in the snapshot.
	if command -v python3 >/dev/null; then
		dr -- sh -c 'python3 -c "import os; os.rename(\"r/s\", \"r/u\")" 2>/dev/null; true'
		rename_incomplete r/s
	fi
	# A source whose name is not UTF-8 is named by its bytes (rename_incomplete_b64).
	mkdir -p "$(printf 'n/\377')" && echo x > "$(printf 'n/\377/f')" && chmod 555 "$(printf 'n/\377')"
	dr --expect '**' --expect-delete '**' -- sh -c 'mv n/* n/t; true'
	[ "$status" -eq 0 ] || [ "$status" -eq 19 ] || { echo "status $status: $output"; return 1; }
	[ "$status" -eq 0 ] || jq -e '.dryrun.problems | any(.rename_incomplete_b64 == "bi//")' <<<"$output"
	chmod 755 "$(printf 'n/\377')"
	# A rename the copy finishes, or a source removed and made again, is no such thing.
	mkdir -p a/b && echo y > a/b/g && mkdir -p c/d && echo z > c/d/h
	dr --expect '**' --expect-delete '**' -- sh -c 'mv a/b a/e && mv c/d c/e && mkdir c/d'
	[ "$status" -eq 0 ] || { echo "status $status: $output"; return 1; }
	chmod 755 r/s
}

@test "a snapshot directory the change set cannot read, with a name that is not UTF-8: DRY_RUN_FAILED says why, not out of memory" {
	[ "$(id -u)" -ne 0 ] || skip "root reads a directory of mode 000"
	al dryrun --json --expect '**' -- sh -c "mkdir -p \"\$(printf 'n\\376')/e\"; chmod 000 \"\$(printf 'n\\376')\""
	[ "$status" -ne 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .dryrun.verdict <<<"$output")" = DRY_RUN_FAILED ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.changeset_error | test("Permission denied"))' <<<"$output"
	# The human view says it too.
	al dryrun --expect '**' -- sh -c 'mkdir -p d/e; chmod 000 d'
	[[ "$output$stderr" == *"change set could not be read"*"Permission denied"* ]] || { echo "$status $output $stderr"; return 1; }
	# The snapshot could not be checked for code for the host either: said so, not "0 files".
	[[ "$stderr" != *"holds 0 files"* && "$stderr" == *"could not be checked"* ]] || { echo "$status $output $stderr"; return 1; }
}

@test "a directory renamed after an entry was moved out of it (mv d/s x; mv d e): what its copy lost is named" {
	[ "$(id -u)" -ne 0 ] || skip "as root the quarantine maps every id: nothing is lost"
	command -v setfacl >/dev/null || skip "acl is not installed"
	mkdir -p d/s && echo x > d/f
	setfacl -m u:4242:rx d 2>/dev/null || skip "no ACLs here"
	LOST=e attrs_lost --expect '**' --expect-delete '**' -- sh -c 'mv d/s x; mv d e'
	LOST=e attrs_lost --expect '**' --expect-delete '**' -- sh -c 'mv d/f y; mv d e'
	# Seed 113 of the wide differential test, as nobody: a default ACL, the
	# only entry moved out first.
	rm -rf d && mkdir p && setfacl -d -m u::rwx,g::-,o::-,g:4242:- p && mkdir -p p/e/f
	LOST=dist attrs_lost --expect '**' --expect-delete '**' -- sh -c 'mv -f p/e/f p/pkg; mv -f p/e dist'
	# Removed, not moved out: no copy of the old directory is told apart.
	rm -rf p && mkdir -p q/s && setfacl -m u:4242:rx q
	dr --expect '**' --expect-delete '**' -- sh -c 'rm -rf q && mkdir -p e'
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
}

# Seed 899 of the wide differential test (as root): a write keeps a set-id
# bit for root's real run and clears it in the snapshot's copy-up; moved
# away after (mv of its directory, a copy in the snapshot), the copy has no
# bit and no name of the workspace to compare with.
@test "as root, a set-id file written and then moved away is PRIVILEGED_FILE, never DRY_RUN_OK" {
	[ "$(id -u)" -eq 0 ] || skip "only root's real run keeps the bit"
	mkdir -p d/e && printf '#!/bin/sh\n' > d/e/tool && chmod 4700 d/e/tool
	dr --expect '**' --expect-delete '**' -- sh -c 'echo x > d/e/tool; mv -f d n'
	[ "$status" -eq 13 ] || { echo "status $status: $output"; return 1; }
	jq -e '.dryrun.problems | any(.setid_written == "d/e/tool")' <<<"$output"
	dr --expect '**' --expect-delete '**' -- sh -c 'echo x >> d/e/tool; mv d/e/tool d/t'
	[ "$status" -eq 13 ] || { echo "status $status: $output"; return 1; }
	# Not written: the rename keeps the bit and mv's copy asks for it (refused_setid).
	dr --expect '**' --expect-delete '**' -- sh -c 'mv -f d n'
	[ "$status" -eq 13 ] || { echo "status $status: $output"; return 1; }
}

# A trace past its 4,096 paths shows nothing after: a linked file changed and
# then removed (the real run leaves the change under its other name) would be
# a deletion alone. With any change, the whole dry run is LINK_GROUP.
@test "a trace that overflowed (more than 4,096 linked paths) refuses any change: echo x >> a; rm a is never a plain deletion" {
	for i in $(seq 1 4200); do : > "f$i"; ln "f$i" "g$i"; done
	echo one > a && ln a b
	dr --expect '**' --expect-delete '**' -- sh -c 'for i in $(seq 1 4200); do read x < f$i; done; echo x >> a; rm a'
	[ "$status" -eq 16 ] || { echo "status $status: $output"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "." and (.reason | test("incomplete")))' <<<"$output"
	# Nothing changed: nothing to judge.
	dr --expect '**' -- sh -c 'for i in $(seq 1 4200); do read x < f$i; done; true'
	[ "$status" -eq 10 ] || { echo "status $status: $output"; return 1; }
}

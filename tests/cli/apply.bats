#!/usr/bin/env bats
# airlock apply / rollback / discard / gc: a dry run's change set reaches the
# real tree without running anything, each path switched atomically, undone
# exactly, and a crash at any step leaves the tree entirely old.
load helpers
load realrun

make_tree() {
	mkdir -p src old d
	echo one > src/a.c
	echo keep > src/b.c
	echo gone > old/x
	printf 'same\n' > same.txt
	echo a > d/a && echo b > d/b
	ln -s a.c src/l
}

# Every kind of change at once.
SCRIPT='echo more >> src/a.c; rm -rf old; mkdir -p new/deep; echo x > new/deep/f;
	mv src/b.c src/c.c; chmod 700 same.txt; ln -sf c.c src/l; rm -rf d; mkdir d;
	echo a > d/a; echo c > d/c; mkfifo pipe'

dryrun_all() {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete '**' -- sh -c "$SCRIPT"
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
}

@test "apply puts exactly the change set in place; rollback restores every byte and inode" {
	make_tree
	before=$(snap)
	ino_a=$(stat -c %i src/a.c)
	dryrun_all
	[ "$(snap)" = "$before" ]
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat src/a.c)" = "$(printf 'one\nmore')" ]
	[ ! -e old ]
	[ ! -e src/b.c ]
	[ "$(cat src/c.c)" = keep ]
	[ "$(readlink src/l)" = c.c ]
	[ -p pipe ]
	[ "$(cat new/deep/f)" = x ]
	[ "$(stat -c %a same.txt)" = 700 ]
	[ ! -e d/b ]
	[ "$(cat d/c)" = c ]
	after=$(snap)
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(snap)" = "$before" ]
	[ "$(stat -c %i src/a.c)" = "$ino_a" ]
	# Applying again after a rollback gives the same tree again.
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(snap)" = "$after" ]
}

@test "a rename is a deletion and a creation: content and mode as the command left them" {
	echo content > f && chmod 640 f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect g --expect-delete f -- mv f g
	ID=$(jq -r .id <<<"$output")
	[ "$(jq -r '[.dryrun.changes[] | "\(.change) \(.path)"] | join(",")' <<<"$output")" = "deleted f,created g" ]
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat g)" = content ]
	[ "$(stat -c %a g)" = 640 ]
	[ ! -e f ]
}

@test "no overlay attribute reaches the real tree" {
	command -v getfattr >/dev/null || skip "attr is not installed"
	make_tree
	dryrun_all
	al apply "$ID"
	[ -z "$(getfattr -R -d -m '^(user|trusted)\.overlay\.' . 2>/dev/null)" ]
}

@test "CONFLICT when the real tree changed between the dry run and apply; nothing is applied" {
	make_tree
	dryrun_all
	echo edited-meanwhile >> src/a.c
	mid=$(snap)
	al apply "$ID"
	[ "$status" -eq 20 ]
	one_error_line "CONFLICT: src/a.c changed since the dry run; nothing was changed"
	[ "$(snap)" = "$mid" ]

	git_like=$(mktemp -d "$TEST_DIR/w2.XXXXXX")
	cd "$git_like"
	WORK=$git_like
	run --separate-stderr "$AIRLOCK" dryrun --json --expect new -- sh -c 'echo mine > new'
	ID=$(jq -r .id <<<"$output")
	echo theirs > new
	al apply "$ID"
	[ "$status" -eq 20 ]
	[[ "$stderr" == *"new exists now"* ]]
	[ "$(cat new)" = theirs ]
}

@test "rollback refuses with CONFLICT when a file changed after the apply" {
	make_tree
	dryrun_all
	al apply "$ID"
	echo later >> new/deep/f
	mid=$(snap)
	al rollback "$ID"
	[ "$status" -eq 20 ]
	[ "$(snap)" = "$mid" ]
}

@test "a crash after every step of an apply leaves the tree entirely old, then entirely new" {
	make_tree
	before=$(snap)
	dryrun_all
	ops=$(jq -r '.dryrun.total' "$(receipt_file "$ID")")
	"$AIRLOCK" apply "$ID" >/dev/null
	after=$(snap)
	"$AIRLOCK" rollback "$ID" >/dev/null
	[ "$(snap)" = "$before" ]
	n=$(grep -c '"op"' "$AIRLOCK_STATE_DIR/dryruns/$ID/journal")
	[ "$n" -ge 8 ]
	for k in $(seq 0 $((n - 1))); do
		run env AIRLOCK_TEST_CRASH_AFTER="$k" "$AIRLOCK" apply "$ID"
		[ "$status" -eq 137 ] || { echo "step $k: status $status $output"; return 1; }
		# Any later command recovers first: back to entirely old.
		"$AIRLOCK" gc --older-than 3650d >/dev/null
		[ "$(snap)" = "$before" ] || { echo "after a crash at step $k the tree is mixed"; diff <(echo "$before") <(snap); return 1; }
		"$AIRLOCK" apply "$ID" >/dev/null
		[ "$(snap)" = "$after" ] || { echo "re-apply after step $k"; return 1; }
		"$AIRLOCK" rollback "$ID" >/dev/null
	done
	[ "$ops" -ge 1 ]
}

@test "apply refuses a verdict other than DRY_RUN_OK, and a second apply" {
	echo x > f
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c 'echo y > g'
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "verdict is UNEXPECTED_PATH"
	[ ! -e g ]
	run --separate-stderr "$AIRLOCK" dryrun --json --expect g -- sh -c 'echo y > g'
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 0 ]
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "is applied"
	al apply 999
	[ "$status" -eq 1 ]
}

@test "discard drops a pending dry run, refuses an applied one; gc removes old ones" {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect g -- sh -c 'echo y > g'
	A=$(jq -r .id <<<"$output")
	run --separate-stderr "$AIRLOCK" dryrun --json --expect h -- sh -c 'echo y > h'
	B=$(jq -r .id <<<"$output")
	al discard "$A"
	[ "$status" -eq 0 ]
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/$A" ]
	"$AIRLOCK" apply "$B" >/dev/null
	al discard "$B"
	[ "$status" -eq 21 ]
	al gc --older-than 0s
	[ "$status" -eq 0 ]
	[ -e "$AIRLOCK_STATE_DIR/dryruns/$B" ] # applied: kept for its rollback
	al gc --older-than 0s --include-applied
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/$B" ]
	[ "$(cat h)" = y ] # gc never touches the workspace
}

@test "a directory renamed in the snapshot (copy and delete, as mv does across the overlay) applies and rolls back" {
	mkdir -p dir/sub && echo one > dir/sub/f && echo two > dir/g
	before=$(snap)
	run --separate-stderr "$AIRLOCK" dryrun --json --expect moved --expect-delete dir -- mv dir moved
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ ! -e dir ]
	[ "$(cat moved/sub/f)" = one ]
	[ "$(cat moved/g)" = two ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(snap)" = "$before" ]
}

# Issue 11: what dryrun + apply lands is what the command would have done.
# Each case runs the script for real in one copy and through dryrun + apply
# in another, and compares the trees.
@test "deletions under a recreated directory are applied (rm -r d; mkdir -p d/sub)" {
	mkdir -p d/sub && echo old > d/sub/old && echo keep > d/keep
	real_vs_apply 'rm -r d; mkdir -p d/sub; echo new > d/sub/new'
}

@test "rm -rf dist && mkdir -p dist/js; rm -rf pkg && tar -xf pkg.tar" {
	mkdir -p dist/js/a pkg/lib && echo 1 > dist/js/a/x.js && echo 2 > dist/js/y.js && echo 3 > pkg/lib/z
	echo 4 > pkg/keep
	tar -cf "$TEST_DIR/pkg.tar" pkg/keep && mv "$TEST_DIR/pkg.tar" .
	real_vs_apply 'rm -rf dist && mkdir -p dist/js && echo n > dist/js/new.js; rm -rf pkg && tar -xf pkg.tar'
}

@test "no rename pairing by content: copy, chmod, delete keeps the new mode" {
	echo '#!/bin/sh' > s.sh
	real_vs_apply 'cp s.sh t.sh; chmod +x t.sh; rm s.sh'
}

@test "equal-content files keep their own modes; empty files do not pair at random" {
	echo same > a && echo same > b && chmod 600 a && chmod 755 b && : > e1 && chmod 640 e1
	real_vs_apply 'rm a b e1; echo same > c; chmod 700 c; echo same > d; : > e2; : > e3; chmod 600 e3'
}

@test "a new file does not become a hard link of a surviving link" {
	echo c > f && ln f g
	real_vs_apply 'rm f; echo c > h'
}

@test "a staged file edited after the dry run is refused, not installed" {
	echo one > f && mkdir -p keep
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'echo two > f; mkdir -p n; echo x > n/a; echo y > g; ln -s f l'
	ID=$(jq -r .id <<<"$output")
	before=$(snap)
	up=$AIRLOCK_STATE_DIR/dryruns/$ID/upper
	for tamper in "echo evil > $up/f" "echo evil > $up/n/a" "echo evil > $up/n/extra" "echo evil > $up/g" \
		"ln -sfn /etc/passwd $up/l" "chmod 4755 $up/g"; do
		cp -a "$up" "$TEST_DIR/saved"
		sh -c "$tamper"
		al apply "$ID"
		[ "$status" -eq 21 ] || { echo "$tamper: $status $stderr"; return 1; }
		[[ "$stderr" == *"differs from the change set"* || "$stderr" == *setuid* ]] || { echo "$stderr"; return 1; }
		[ "$(snap)" = "$before" ]
		rm -rf "$up" && mv "$TEST_DIR/saved" "$up"
	done
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat f)" = two ]
	[ "$(cat n/a)" = x ]
}

@test "a workspace replaced by a symlink, or by another directory, after the dry run: nothing is written" {
	echo one > f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete '**' -- sh -c 'echo two > f; echo n > new'
	ID=$(jq -r .id <<<"$output")
	cd "$TEST_DIR"
	mkdir outside && echo one > outside/f
	mv work work.orig && ln -s outside work
	al apply "$ID"
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
	[[ "$stderr" == *"not the directory the dry run saw"* ]]
	[ "$(cat outside/f)" = one ]
	[ ! -e outside/new ]
	rm work && mkdir work && echo one > work/f
	al apply "$ID"
	[ "$status" -eq 20 ]
	[ ! -e work/new ]
	rm -r work && mv work.orig work
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat work/new)" = n ]
}

@test "one lock per dry run: two applies at once, one wins; a held lock is never recovered as a crash" {
	command -v flock >/dev/null || skip "flock(1) is not installed"
	mkdir -p d && for i in $(seq 1 200); do echo "$i" > "d/f$i"; done
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'for f in d/*; do echo x >> $f; done'
	ID=$(jq -r .id <<<"$output")
	dir=$AIRLOCK_STATE_DIR/dryruns/$ID
	# Two applies of one id at once: exactly one applies, the other is refused.
	"$AIRLOCK" apply "$ID" >"$TEST_DIR/a1" 2>&1 & p1=$!
	"$AIRLOCK" apply "$ID" >"$TEST_DIR/a2" 2>&1 & p2=$!
	s1=0 s2=0
	wait $p1 || s1=$?
	wait $p2 || s2=$?
	[ "$(printf '%s\n' $s1 $s2 | sort | tr '\n' ' ')" = "0 21 " ] || { cat "$TEST_DIR"/a1 "$TEST_DIR"/a2; return 1; }
	"$AIRLOCK" rollback "$ID" >/dev/null
	before=$(snap)
	# An apply stopped halfway while its lock is held looks like a live one:
	# gc, discard and another apply wait or leave it, never roll it back.
	run env AIRLOCK_TEST_CRASH_AFTER=50 "$AIRLOCK" apply "$ID"
	[ "$status" -eq 137 ]
	mid=$(snap)
	[ "$mid" != "$before" ]
	flock "$dir" sleep 3 & holder=$!
	sleep 0.5
	"$AIRLOCK" gc --older-than 0s --include-applied >/dev/null
	[ "$(snap)" = "$mid" ] # not recovered under a live lock
	[ -d "$dir" ] # and not removed
	start=$(date +%s%N)
	al apply "$ID" # waits for the lock, then recovers and applies
	[ "$status" -eq 0 ]
	[ $(( ($(date +%s%N) - start) / 1000000 )) -ge 1500 ]
	wait $holder
	"$AIRLOCK" rollback "$ID" >/dev/null
	[ "$(snap)" = "$before" ]
}

@test "a command that attempted writes outside the workspace is OUTSIDE_WRITE: applied only with --allow-outside-writes" {
	al dryrun --expect '**' -- sh -c 'echo in > inside; echo out > /var/tmp/airlock-outside.$$ || true'
	[ "$status" -eq 15 ] || { echo "$status $output $stderr"; return 1; }
	[[ "$output" == *"OUTSIDE_WRITE"* ]]
	ID=$(jq -r .id "$AIRLOCK_STATE_DIR"/receipts/*.json | sort -n | tail -1)
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "verdict is OUTSIDE_WRITE"
	[ ! -e inside ]
	al rollback --allow-outside-writes "$ID"
	[ "$status" -eq 125 ]
	al apply --allow-outside-writes "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat inside)" = in ]
	# Unexpected paths still come first: the override does not clear them.
	al dryrun --expect nothing -- sh -c 'echo in > other; echo out > /var/tmp/airlock-outside.$$ || true'
	[ "$status" -eq 11 ]
}

@test "names and link targets that are not UTF-8 are kept as bytes: f\\xff is not f\\xef\\xbf\\xbd" {
	ff=$(printf 'f\377') fd=$(printf 'f\357\277\275') d=$(printf 'd\376')
	echo a > "$ff" && echo b > "$fd" && echo c > "$(printf 'm\377')" && mkdir "$d" && echo e > "$d/x"
	ln -s "$(printf 'to\377')" "$(printf 'l\377')"
	real_vs_apply "rm \"\$(printf 'f\\377')\"; echo more >> \"\$(printf 'm\\377')\"; echo n > \"\$(printf 'n\\377')\";
		ln -sfn \"\$(printf 'new\\377')\" \"\$(printf 'l\\377')\"; rm -r \"\$(printf 'd\\376')\";
		mkdir -p \"\$(printf 'e\\375/s\\374')\"; echo z > \"\$(printf 'e\\375/s\\374/z\\373')\""
	[ "$(cat "$fd")" = b ]
	jq -e '.changes[] | select(.path_b64 == "Zv8=") | .change == "deleted" and .path == "f\ufffd"' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	jq -e '[.changes[] | select(.target_b64 == "bmV3/w==")] | length == 1' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
}

@test "new hard links are carried as links, to a new file and to a file of the tree" {
	echo c > f && echo k > keep
	real_vs_apply 'ln f g; echo n > new; ln new new2; ln keep sub_keep 2>/dev/null; mkdir -p dd; ln new dd/new3'
	jq -e '.changes[] | select(.path == "f") | .change == "modified" and .hard_link == true and .sha256 == .old_sha256' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
}

@test "a device node staged in place of a file is refused by name, never applied" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to make the device node"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'echo x > dev0; echo y > plain'
	ID=$(jq -r .id <<<"$output")
	rm "$AIRLOCK_STATE_DIR/dryruns/$ID/upper/dev0"
	mknod "$AIRLOCK_STATE_DIR/dryruns/$ID/upper/dev0" c 1 3
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "dev0 (device)"
	[ ! -e plain ]
	[ ! -e dev0 ]
}

@test "the workspace root's own mode: seen as it is, carried (chmod 700 .), applied and rolled back" {
	echo a > f && chmod 775 .
	real_vs_apply 'stat -c %a . > seen; chmod 700 .'
	run --separate-stderr "$AIRLOCK" dryrun --json --expect . -- chmod 750 .
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.changes == [{"change": "mode_changed", "type": "dir", "path": ".", "mode": "0750", "old_mode": "0775", "xattrs": []}]' <<<"$output"
	ID=$(jq -r .id <<<"$output")
	chmod 770 .
	al apply "$ID"
	[ "$status" -eq 20 ]
	[ "$(stat -c %a .)" = 770 ]
	chmod 775 .
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c %a .)" = 750 ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c %a .)" = 775 ]
}

@test "extended attributes changed alone (set, changed, removed) are carried; rollback restores them" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo x > f && echo y > g && echo z > h && mkdir d && chmod 640 h
	setfattr -n user.note -v one f 2>/dev/null || skip "no user xattrs here"
	setfattr -n user.keep -v k g && setfattr -n user.old -v o g && setfattr -n user.d -v 1 d
	real_vs_apply 'setfattr -n user.note -v two f; setfattr -x user.old g; setfattr -n user.new -v "$(printf "a\001b")" h;
		chmod 600 h; setfattr -n user.d -v 2 d; setfattr -n user.root -v r .'
	[ "$(getfattr -h --only-values -n user.note f)" = one ]
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(getfattr -h --only-values -n user.note f)" = two ]
	[ "$(getfattr -h --only-values -n user.root .)" = r ]
	! getfattr -h -d -m - -R . 2>/dev/null | grep -q overlay || false
	jq -e '[.changes[] | select(.change == "xattrs_changed") | .path] == [".", "d", "f", "g"]' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	# Changed again after the apply: rollback refuses rather than undo it.
	setfattr -n user.note -v three f
	al rollback "$ID"
	[ "$status" -eq 20 ]
}

@test "a tree deeper than 256 levels is read whole: 300 and 1,000 levels, applied and rolled back" {
	d300=$(printf 'd/%.0s' $(seq 300)) && d300=${d300%/}
	d1000=$(printf 'd/%.0s' $(seq 1000)) && d1000=${d1000%/}
	mkdir -p "e/$d300" && echo old > "e/$d300/leaf"
	mkdir -p "g/$d300" && echo gone > "g/$d300/leaf"
	real_vs_apply "echo new >> e/$d300/leaf; rm -rf g; mkdir -p m/$d1000 && echo y > m/$d1000/leaf"
}

@test "a staged object's extended attributes edited after the dry run are refused, not installed" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo one > f && echo m > m && mkdir -p keep
	setfattr -n user.note -v one f 2>/dev/null || skip "no user xattrs here"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c \
		'echo new > n; setfattr -n user.tag -v ok n; echo two >> m; setfattr -n user.note -v two f; mkdir nd'
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
	up=$AIRLOCK_STATE_DIR/dryruns/$ID/upper
	apply_refuses_tampered "$ID" snap_with_xattrs "setfattr -n user.tag -v evil $up/n" \
		"setfattr -x user.tag $up/n" "setfattr -n user.evil -v 1 $up/m" "setfattr -n user.evil -v 1 $up/nd"
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "final: $status $stderr"; return 1; }
	[ "$(getfattr -h --only-values -n user.tag n)" = ok ]
	[ "$(getfattr -h --only-values -n user.note f)" = two ]
	! getfattr -h -n user.evil m 2>/dev/null || false
}

# Issue 11, item 3: POSIX ACLs. The real run is `airlock run` (the same
# quarantine: only the caller's uid and gid are mapped, so an ACL entry for
# another id fails alike on both sides); the dry run's must land exactly.
snap_acls() { # every ACL of the tree, numeric, in path order
	(cd "$WORK" && find . ! -type l -print0 | sort -z | xargs -0 getfacl -Pn 2>&1)
}

snap_with_xattrs() { snap; snap_xattrs; }
snap_with_acls() { snap; snap_acls; }

acl_real_run() { # $1: the script. Root's real run is the script run by
	# root (its dry run maps every id: u:65534 can be named); anyone
	# else's, a run in the quarantine.
	if [ "$(id -u)" -eq 0 ]; then
		sh -c "$1" >/dev/null 2>&1
	else
		AIRLOCK_STATE_DIR=$TEST_DIR/state.real "$AIRLOCK" run -- sh -c "$1" >/dev/null
	fi
}

# Tampers with dry run ID's staged objects, one shell command at a time
# (each undone after), and checks that apply refuses each with exit 21 and
# leaves the tree as VIEW (a function printing it) showed it before.
apply_refuses_tampered() { # id view tamper...
	local id=$1 view=$2 up=$AIRLOCK_STATE_DIR/dryruns/$1/upper before tamper
	shift 2
	before=$($view)
	for tamper in "$@"; do
		cp -a "$up" "$TEST_DIR/saved"
		sh -c "$tamper"
		al apply "$id"
		[ "$status" -eq 21 ] || { echo "$tamper: $status $stderr"; return 1; }
		[[ "$stderr" == *"differs from the change set"* ]] || { echo "$stderr"; return 1; }
		[ "$($view)" = "$before" ]
		rm -rf "$up" && mv "$TEST_DIR/saved" "$up"
	done
}

@test "POSIX ACLs set, changed, removed, inherited in a dry run land as in the real run; rollback restores them" {
	command -v setfacl >/dev/null || skip "acl is not installed"
	u=$(id -u) && g=$(id -g)
	echo x > f && echo y > g && echo z > h && echo k > k && mkdir d p q && echo c > p/old
	setfacl -m "u:$u:r" h 2>/dev/null || skip "no ACLs here"
	setfacl -m "g:$g:rw" k && setfacl -d -m "u::rwx,g::rx,o::-,u:$u:rwx" p && setfacl -m "u:$u:rx" q
	setfacl -d -m "u::rwx,g::rx,o::-" q
	script="setfacl -m u:65534:r f; setfacl -m u:$u:rw,g:$g:r g; setfacl -b h; chmod 600 k;
		setfacl -d -m u::rwx,g::rx,o::-,u:$u:rwx d; touch d/new; mkdir d/sub;
		echo n > p/new; mkdir p/sub; echo more >> p/old; setfacl -x u:$u q; setfacl -m u:$u:rwx .;
		setfacl -d -m u::rwx,g::rwx,o::r . && echo top > top; true"
	real_vs_apply "$script" snap_with_acls acl_real_run
	[ "$(WORK=$TEST_DIR/real snap_acls)" != "$(snap_acls)" ] # the real run did change ACLs
	al apply "$ID"
	[ "$status" -eq 0 ]
	diff <(snap_acls) <(WORK=$TEST_DIR/real snap_acls)
}

@test "a workspace root with ACLs: untouched it is no change; chmod 500 . lands with its ACL exact" {
	command -v setfacl >/dev/null || skip "acl is not installed"
	u=$(id -u)
	setfacl -m "u:$u:rwx" . 2>/dev/null || skip "no ACLs here"
	setfacl -d -m "u::rwx,g::rx,o::-,u:$u:rwx" .
	run --separate-stderr "$AIRLOCK" dryrun --json --expect new -- sh -c 'echo n > new'
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	[ "$(jq -r '[.dryrun.changes[].path] | join(",")' <<<"$output")" = new ]
	ID=$(jq -r .id <<<"$output")
	jq -e '.changes[0].xattrs | map(.name) == ["system.posix_acl_access"]' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	al discard "$ID"
	real=$TEST_DIR/real
	cp -a "$WORK" "$real"
	before=$(snap; snap_acls)
	(cd "$real" && AIRLOCK_STATE_DIR=$TEST_DIR/state.real "$AIRLOCK" run -- sh -c 'chmod 500 .' >/dev/null)
	run --separate-stderr "$AIRLOCK" dryrun --json --expect . -- sh -c 'chmod 500 .'
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "apply: $status $stderr"; return 1; }
	diff <(snap_acls) <(WORK=$real snap_acls)
	al rollback "$ID"
	[ "$status" -eq 0 ] || { echo "rollback: $status $stderr"; return 1; }
	[ "$(snap; snap_acls)" = "$before" ]
}

@test "a staged object's ACL edited after the dry run is refused, not installed" {
	command -v setfacl >/dev/null || skip "acl is not installed"
	u=$(id -u)
	echo m > m && mkdir p
	setfacl -d -m "u::rwx,g::rx,o::-,u:$u:rx" p 2>/dev/null || skip "no ACLs here"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c \
		"echo n > n; setfacl -m u:$u:r n; echo two >> m; echo x > p/x; mkdir nd"
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
	up=$AIRLOCK_STATE_DIR/dryruns/$ID/upper
	apply_refuses_tampered "$ID" snap_with_acls "setfacl -m u:$u:rw $up/n" "setfacl -b $up/n" \
		"setfacl -m u:$u:rwx $up/m" "setfacl -b $up/p/x" "setfacl -d -m u:$u:rwx $up/nd"
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "final: $status $stderr"; return 1; }
	getfacl -n n | grep -q "^user:$u:r--"
	getfacl -n p/x | grep -q "^user:$u:r-x"
}

snapx() { snap && snap_xattrs; }

# A crash inside an operation that lifted the owner's write bit, after its
# call and before the mode was put back: after each step k of the journal,
# the object of step k is made u+w by hand, as that crash would leave it.
crash_each_step_lifted() { # $1 $ID's snap before, $2 after
	local n k op path where
	n=$(grep -c '"op"' "$AIRLOCK_STATE_DIR/dryruns/$ID/journal")
	for k in $(seq 0 $((n - 1))); do
		run env AIRLOCK_TEST_CRASH_AFTER="$((k + 1))" "$AIRLOCK" apply "$ID"
		[ "$status" -eq 137 ] || [ "$status" -eq 0 ] || { echo "step $k: status $status $output"; return 1; }
		if [ "$status" -eq 137 ]; then
			op=$(grep '"op"' "$AIRLOCK_STATE_DIR/dryruns/$ID/journal" | sed -n "$((k + 1))p")
			path=$(jq -r .path <<<"$op")
			case $(jq -r .op <<<"$op") in
			backup) where="$AIRLOCK_STATE_DIR/dryruns/$ID/$(jq -r .backup <<<"$op")" ;;
			*) where="$WORK/$path" ;;
			esac
			[ -L "$where" ] || chmod u+w "$where" 2>/dev/null || true
			"$AIRLOCK" gc --older-than 3650d >/dev/null
			[ "$(${SNAP:-snap})" = "$1" ] || { echo "a crash inside step $k"; diff <(echo "$1") <(snap); return 1; }
		else
			"$AIRLOCK" rollback "$ID" >/dev/null
		fi
		"$AIRLOCK" apply "$ID" >/dev/null
		[ "$(${SNAP:-snap})" = "$2" ] || { echo "re-apply after step $k"; return 1; }
		"$AIRLOCK" rollback "$ID" >/dev/null
		[ "$(${SNAP:-snap})" = "$1" ] || { echo "rollback after step $k"; return 1; }
	done
}

@test "attributes of read-only objects: only those changed are set, the owner's write bit lifted for the call; rollback and crashes too" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo x > f && echo y > g && echo z > h && mkdir d
	setfattr -n user.a -v 1 f 2>/dev/null || skip "no user xattrs here"
	setfattr -n user.b -v 1 g && setfattr -n user.h -v 1 h && setfattr -n user.c -v 1 d
	chmod 400 f g && chmod 444 h && chmod 555 d
	real_vs_apply 'chmod 444 f; chmod 600 g; setfattr -n user.b -v 2 g; chmod 400 g;
		chmod 755 d; setfattr -n user.c -v 2 d; chmod 555 d;
		chmod 644 h; setfattr -x user.h h; setfattr -n user.n -v n h'
	before=$(snapx)
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	after=$(snapx)
	[ "$(stat -c %a g)" = 400 ]
	[ "$(getfattr -h --only-values -n user.b g)" = 2 ]
	[ "$(stat -c %a d)" = 555 ]
	[ "$(getfattr -h --only-values -n user.c d)" = 2 ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(snapx)" = "$before" ]
	SNAP=snapx crash_each_step_lifted "$before" "$after"
}

@test "a read-only ACL change or chmod of a file with attributes applies (only the ACL or mode changes)" {
	command -v setfattr >/dev/null && command -v setfacl >/dev/null || skip "attr or acl is not installed"
	printf 'x\n' > f && printf 'y\n' > g
	setfattr -n user.a -v 1 f 2>/dev/null || skip "no user xattrs here"
	setfattr -n user.a -v 1 g
	chmod 400 f g
	real_vs_apply "setfacl -m u:$(id -u):w f 2>/dev/null || setfacl -m u:65534:w f; chmod 444 g"
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(stat -c %a g)" = 444 ]
	[ "$(getfattr -h --only-values -n user.a f)" = 1 ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
}

@test "new read-only directories, and read-only directories moved or deleted, apply and roll back; crashes too" {
	mkdir -p old/in && echo o > old/in/f && chmod 555 old/in old && mkdir -p src/s && chmod 555 src/s
	before=$(snap)
	real_vs_apply 'mkdir t; chmod 555 t; mkdir -p u/v; echo w > u/v/w; chmod 555 u/v u;
		chmod 755 old old/in; rm -rf old; chmod 755 src/s; mv src/s src/r; chmod 555 src/r'
	[ "$(snap)" = "$before" ]
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	after=$(snap)
	[ "$(stat -c %a t)" = 555 ]
	[ "$(stat -c %a u)" = 555 ]
	[ ! -e old ]
	[ "$(stat -c %a src/r)" = 555 ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(snap)" = "$before" ]
	crash_each_step_lifted "$before" "$after"
}

# Issue 20: apply re-checks every staged object's whole identity (type,
# mode, size, hash, attributes) before the first operation.
@test "a staged object's mode changed after the dry run is refused by name (modified, created, type- and mode-changed)" {
	echo one > f && echo t > t && echo c > c && mkdir -p keep
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete t -- sh -c \
		'echo two > f; echo n > n; rm t; mkdir t; chmod 600 c'
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	up=$AIRLOCK_STATE_DIR/dryruns/$ID/upper
	before=$(snap)
	for tamper in "chmod 755 $up/f" "chmod 600 $up/n" "chmod 700 $up/t" "chmod 644 $up/c" "echo evil >> $up/c"; do
		cp -a "$up" "$TEST_DIR/saved"
		sh -c "$tamper"
		al apply "$ID"
		[ "$status" -eq 21 ] || { echo "$tamper: $status $stderr"; return 1; }
		[[ "$stderr" == *"differs from the change set"* ]] || { echo "$tamper: $stderr"; return 1; }
		[[ "$stderr" == *"mode 0"* || "$stderr" == *"bytes, not"* ]] || { echo "$tamper: $stderr"; return 1; }
		[ "$(snap)" = "$before" ]
		rm -rf "$up" && mv "$TEST_DIR/saved" "$up"
	done
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "final: $status $stderr"; return 1; }
	[ "$(cat f)" = two ]
	[ "$(stat -c %a c)" = 600 ]
	[ -d t ]
}

@test "a modified file's mode and attributes edited in the staged copy: refused, the message names the path and what differs" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo one > f && chmod 644 f
	setfattr -n user.note -v one f 2>/dev/null || skip "no user xattrs here"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect f -- sh -c 'echo two > f; chmod 755 f'
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	up=$AIRLOCK_STATE_DIR/dryruns/$ID/upper
	before=$(snap_with_xattrs)
	chmod 775 "$up/f"
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "f: the staged object differs from the change set (mode 0775, not 0755"
	chmod 755 "$up/f" && setfattr -x user.note "$up/f"
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "f: the staged object differs from the change set (extended attributes"
	[ "$(snap_with_xattrs)" = "$before" ]
	setfattr -n user.note -v one "$up/f"
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "final: $status $stderr"; return 1; }
	[ "$(stat -c %a f)" = 755 ]
	[ "$(getfattr -h --only-values -n user.note f)" = one ]
}

# Hard-link groups of the tree (docs/dryrun.md, "Hard links of the tree"):
# the script runs for real in a copy and through dryrun + apply; the groups,
# bytes, modes and attributes must be equal, and rollback must give back
# the original groups with their own inodes.
links_vs_real() { # $1: the script
	local groups_before inodes_before
	groups_before=$(snap_links)
	inodes_before=$(find . ! -type d -printf '%i %p\n' | sort -k2)
	real_vs_apply "$1"
	[ "$(snap_links)" = "$groups_before" ] || { echo "groups after rollback differ"; return 1; }
	[ "$(find . ! -type d -printf '%i %p\n' | sort -k2)" = "$inodes_before" ] || { echo "inodes differ"; return 1; }
}

@test "link group: a name replaced by a copy with the same bytes splits the group (cp a b.tmp && mv b.tmp b)" {
	echo same > a && ln a b
	links_vs_real 'cp a b.tmp && mv b.tmp b'
	jq -e '.changes[] | select(.path == "b") | .change == "modified" and .link_split == true and .sha256 == .old_sha256' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	jq -e '.schema == "airlock.changeset/4"' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
}

@test "link group: sed -i that matches nothing splits the group" {
	command -v sed >/dev/null || skip "no sed"
	echo same > a && ln a b
	links_vs_real 'sed -i s/nomatch/x/ b'
}

@test "link group: rm f; echo x > f with f linked, same and other bytes" {
	echo x > f && ln f g
	links_vs_real 'rm f; echo x > f'
	echo y > h && ln h i
	links_vs_real 'rm h; echo other > h'
}

@test "link group: a replacement with a new mode or without an attribute leaves the other name alone" {
	echo same > a && ln a b && chmod 644 a
	links_vs_real 'cp a t; chmod 600 t; mv t b'
	if command -v setfattr >/dev/null && setfattr -n user.k -v v a 2>/dev/null; then
		links_vs_real 'cp a t; mv t b'
	fi
}

@test "link group: an append to one name changes every name, one inode" {
	echo one > a && ln a b && mkdir d && ln a d/c
	links_vs_real 'echo more >> a'
	jq -e '.changes[] | select(.path == "b") | .change == "modified" and .link_to == "a"' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c %h a)" = 3 ]
	[ "$(stat -c %i a)" = "$(stat -c %i d/c)" ]
	[ "$(cat b)" = "$(printf 'one\nmore')" ]
	# The names no longer one group: apply refuses, nothing changed.
	al rollback "$ID"
	[ "$status" -eq 0 ]
	rm b && echo one > b
	al apply "$ID"
	[ "$status" -eq 20 ]
	[ "$(cat a)" = one ]
	[ "$(stat -c %h a)" = 2 ]
}

@test "link group: chmod or an attribute set on one name is the shared inode's" {
	echo one > a && ln a b && chmod 644 a
	links_vs_real 'chmod 600 a'
	if command -v python3 >/dev/null && python3 -c 'import os; os.setxattr("a", "user.t", b"1"); os.removexattr("a", "user.t")' 2>/dev/null; then
		links_vs_real 'python3 -c "import os; os.setxattr(\"b\", \"user.k\", b\"v\")"'
	fi
}

@test "link group: a mode or attribute changed on one name lists the group's other names (also_names); apply checks they are one inode still" {
	echo one > a && ln a b && mkdir d && ln a d/c && chmod 644 a
	links_vs_real 'chmod 600 a'
	jq -e '.changes[] | select(.path == "a") | .change == "mode_changed" and .mode == "0600" and
		([.also_names[].path] == ["b", "d/c"])' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	# Only a mode_changed or xattrs_changed entry lists them: b and d/c are no change of their own.
	jq -e '[.changes[] | select(.also_names)] | length == 1' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	jq -e '[.changes[] | .path] == ["a"]' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	# b no longer a name of a's inode: what was shown is not what would land.
	rm b && echo one > b && chmod 644 b
	al apply "$ID"
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
	[[ "$stderr" == *"b is no longer a hard link of a"* ]] || { echo "$stderr"; return 1; }
	[ "$(stat -c %a a)" = 644 ]
	[ "$(stat -c %a d/c)" = 644 ]
	# Rollback checks them again: after the apply, b split off.
	rm b && ln a b
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c %a b)" = 600 ]
	[ "$(stat -c %a d/c)" = 600 ]
	rm b && echo one > b
	al rollback "$ID"
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
	[ "$(stat -c %a a)" = 600 ]
}

@test "link group: also_names holds the names the group keeps, as bytes: not one removed or replaced" {
	ff=$(printf 'f\377')
	echo one > a && ln a "$ff" && ln a gone && ln a split && chmod 644 a
	links_vs_real 'cp split t; mv t split; chmod 600 a; rm gone'
	jq -e '.changes[] | select(.path == "a") | .also_names == [{"path": "f\ufffd", "path_b64": "Zv8="}]' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	if command -v python3 >/dev/null && python3 -c 'import os; os.setxattr("a", "user.t", b"1"); os.removexattr("a", "user.t")' 2>/dev/null; then
		links_vs_real 'python3 -c "import os; os.setxattr(\"split\", \"user.k\", b\"v\")"'
		jq -e '.changes[] | select(.path == "split") | .change == "xattrs_changed" and
			.also_names == [{"path": "a"}, {"path": "f\ufffd", "path_b64": "Zv8="}, {"path": "gone"}]' \
			"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	fi
}

@test "link group: ln a c into {a,b} brings b along" {
	echo one > a && ln a b
	links_vs_real 'ln a c'
}

@test "link group: what the snapshot cannot reproduce is LINK_GROUP, never applied" {
	echo one > a && ln a b
	al dryrun --json --expect '**' -- sh -c 'echo x >> a; echo y >> b'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .dryrun.verdict <<<"$output")" = LINK_GROUP ]
	jq -e '[.dryrun.problems[] | select(.link_group)] | length > 0' <<<"$output"
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 21 ]
	[ "$(cat a)" = one ]
	# A name of the group outside the workspace.
	echo o > o && ln o "$TEST_DIR/outside-name"
	al dryrun --json --expect '**' -- sh -c 'echo more >> o'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# An append before the name is replaced: b got the append in the real run.
	al dryrun --json --expect '**' -- sh -c 'echo more >> a; echo n > t; mv t a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# A directory renamed with a name of a group below it (a copy in the snapshot).
	mkdir d && ln a d/c
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'mv d e'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
}

@test "link group: a rename or removal that cannot happen replaces nothing: the append is the group's" {
	echo one > a && ln a b
	links_vs_real 'mv missing a 2>/dev/null; rm -f gone; echo n > t; mv -n t a 2>/dev/null; echo more >> a'
	jq -e '.changes[] | select(.path == "b") | .link_to == "a"' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
}

@test "link group: names that are not UTF-8 are linked along and split off by their bytes" {
	ff=$(printf 'f\377') fd=$(printf 'f\357\277\275')
	echo one > "$ff" && ln "$ff" "$fd" && ln "$ff" "$(printf 'g\376')"
	links_vs_real "echo n > t; mv t \"\$(printf 'g\\376')\"; echo more >> \"\$(printf 'f\\377')\""
	jq -e '.changes[] | select(.path_b64 == "Zu+/vQ==" or .path == "f\ufffd") | .link_to_b64 == "Zv8="' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
}

@test "link group: another name read after the change saw the old bytes in the snapshot: LINK_GROUP" {
	echo one > a && ln a b
	al dryrun --json --expect '**' -- sh -c 'echo more >> a; cp b c'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "b" and (.reason | test("read after")))' <<<"$output"
	# Read before the change: the same bytes in both runs.
	links_vs_real 'cp b c; echo more >> a'
}

@test "link group: a directory renamed with a link the command made below it is LINK_GROUP" {
	mkdir sub && echo x > sub/keep && echo d > d
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'ln d sub/js; mv sub n'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "sub")' <<<"$output"
}

@test "link group: a linked file renamed (mv a c with {a,b}) is LINK_GROUP: the snapshot's copy is a new inode" {
	echo one > a && ln a b
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'mv a c'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "a" and (.reason | test("renamed")))' <<<"$output"
	# Into a new directory, with an attribute set first (seed 4 of the wide differential test).
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'setfattr -n user.t -v 1 a 2>/dev/null; mkdir -p n/d && mv a n/d/c'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# Renamed over by another file, the name leaves the group: reproduced.
	links_vs_real 'echo n > t; mv t a'
}

@test "link group: a linked file renamed away and made again (mv a c; echo x > a) is LINK_GROUP" {
	echo one > a && ln a b
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'mv a c; echo x > a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "a")' <<<"$output"
}

@test "link group: receipts with link_split, link_to and a rename's bytes match the schema" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	valid() {
		run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
			"$AIRLOCK_STATE_DIR/receipts/$ID.json"
		echo "$output"
		[ "$status" -eq 0 ]
	}
	echo same > a && ln a b
	links_vs_real 'cp a b.tmp && mv b.tmp b'
	jq -e '.changes | any(.link_split == true)' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	valid
	links_vs_real 'echo more >> a; ln a c'
	jq -e '.changes | any(.link_to == "a")' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	valid
	mkdir "$(printf 'd\377')" && echo x > "$(printf 'd\377/f')"
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c "mv \"\$(printf 'd\\377')\" \"\$(printf 'e\\376')\""
	ID=$(jq -r .id <<<"$output")
	jq -e '.dryrun.changes | any(.from_b64)' "$AIRLOCK_STATE_DIR/receipts/$ID.json" || cat "$AIRLOCK_STATE_DIR/receipts/$ID.json"
	valid
	# The problems of LINK_GROUP and RENAME_INCOMPLETE (a rename over a
	# directory that is not empty fails, which the trace cannot tell).
	al dryrun --json --expect '**' -- sh -c 'echo x >> a; echo y >> b'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	valid
	mkdir -p "$(printf 'g\377')" h && : > "$(printf 'g\377/x')" && : > h/y
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c "mv -T \"\$(printf 'g\\377')\" h || true"
	[ "$status" -eq 19 ] || { echo "$status $output $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	jq -e '.dryrun.problems | any(.rename_incomplete_b64)' <<<"$output"
	valid
}

@test "link group: a linked name changed in place, then removed (echo x >> a; rm a) is LINK_GROUP: b holds the change in the real run" {
	echo one > a && ln a b
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'echo x >> a; rm a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "a")' <<<"$output"
	# Its directory removed (seed 61 of the wide differential test, as nobody).
	mkdir -p x/e && ln b x/e/f
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c "printf 'x\n' > x/e/f; rm -rf x/e && mkdir -p x/e/g"
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "x/e/f")' <<<"$output"
}

@test "link group: another name read after a chmod of one name saw the old mode in the snapshot (chmod 600 a; cp b c): LINK_GROUP" {
	echo one > a && ln a b
	al dryrun --json --expect '**' -- sh -c 'chmod 600 a; cp b c'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "b" and (.reason | test("read after")))' <<<"$output"
	# A copy made over the other name (seed 639 of the wide differential test, as nobody).
	al dryrun --json --expect '**' -- sh -c 'chmod 640 b; cp a t && mv -f t a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# Read before the chmod: the same mode in both runs.
	links_vs_real 'cp b c; chmod 600 a'
}

@test "link group: a name linked or touched in place without a change the snapshot shows, another changed in place: LINK_GROUP" {
	echo one > a && ln a b
	# A new name linked to one copy, the change made on another, the new name read (seeds 1939, 1951).
	al dryrun --json --expect '**' -- sh -c 'ln a c; chmod 600 b; cp c d'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "a")' <<<"$output"
	al dryrun --json --expect '**' -- sh -c 'ln a c; echo new > b; cp c d'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# A change that fails against the old mode the snapshot still shows (seed 1523).
	if command -v setfattr >/dev/null; then
		chmod 444 a
		al dryrun --json --expect '**' -- sh -c 'chmod 755 b; setfattr -n user.a -v 1 a 2>/dev/null; true'
		[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	fi
}

@test "link group: a name changed in place and then removed (its directory rm -rf'd) is LINK_GROUP" {
	# Seed 61 of the wide differential test: the upper holds no name of
	# the group, the trace does (the other name holds the change for real).
	mkdir -p d/e && : > a && ln a d/e/b
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'echo x > d/e/b; rm -rf d/e && mkdir -p d/e/f && echo n > d/e/f/b'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "d/e/b")' <<<"$output"
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'echo x >> a; rm a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
}

@test "link group: a name changed through a symlink (the trace sees the link's name) is LINK_GROUP" {
	# Seed 522 of the wide differential test (a chown there): chmod through
	# the symlink s changes the group's inode for real; the snapshot copies
	# b up, and a later replacement of b is no longer traced (one link in
	# the snapshot).
	echo same > a && chmod 644 a && ln a b && ln -s b s
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'chmod 600 s; cp b t && chmod 644 t && mv -f t b; echo more >> a'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "b")' <<<"$output"
}

@test "link group: another name read after a chmod of one (cp b t && mv t b) is LINK_GROUP" {
	# Seed 818 of the wide differential test: cp reads b's mode from the
	# snapshot, which shows the old one; the real b has the new mode.
	echo same > a && chmod 644 a && ln a b
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'chmod 700 a; cp b t && mv -f t b'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems | any(.link_group == "b" and (.reason | test("read after")))' <<<"$output"
	# Read before the chmod: the same mode in both runs.
	links_vs_real 'cp b t && mv -f t b; chmod 700 a'
}

@test "link group: a name the command linked to a group, read after a chmod of another name, is LINK_GROUP" {
	# Seed 1939 of the wide differential test: n joins {e, d1} for real and
	# sees the chmod; in the snapshot it is a link of e's copy, old mode.
	echo one > e && chmod 644 e && ln e d1
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'ln e n; chmod 444 d1; cp -p n t; rm n'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	# Named by the first rule that holds: e linked to a new name while d1
	# changed in place, or n read after the change.
	jq -e '.dryrun.problems | any(.link_group == "e" or (.link_group == "n" and (.reason | test("read after"))))' <<<"$output"
}

@test "as root, rollback of a chown of a set-id file gives back its set-id mode (the chown back clears it)" {
	# Seed 2660 of the wide differential test.
	[ "$(id -u)" -eq 0 ] || skip "only root makes set-id files of other owners here"
	printf '#!/bin/sh\n' > f && chmod 6755 f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'chown :4242 f'
	[ "$status" -eq 0 ] || { echo "dryrun: $status $output $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c %g f)" = 4242 ]
	al rollback "$ID"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%a %g' f)" = "6755 0" ]
}

# Issue 21: fault points exist only in a build with -Dtest_hooks (the one
# under test); the release build (scripts/test.sh: build-release) ignores
# them, so no environment stops a user's apply or permit exec halfway.
@test "a release build has no fault points: AIRLOCK_TEST_CRASH_AFTER and AIRLOCK_TEST_PERMIT_CRASH are ignored" {
	[ -n "${AIRLOCK_RELEASE:-}" ] && [ -x "$AIRLOCK_RELEASE" ] || skip "no release build given (AIRLOCK_RELEASE)"
	run "$AIRLOCK" --version
	[[ "$output" == *"test hooks"* ]] || { echo "the build under test has no test hooks: $output"; return 1; }
	run "$AIRLOCK_RELEASE" --version
	[[ "$output" != *"test hooks"* ]] || { echo "$output"; return 1; }
	echo one > f
	run --separate-stderr "$AIRLOCK_RELEASE" dryrun --json --expect '**' -- sh -c 'echo two > f; echo new > g'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	id=$(jq -r .id <<<"$output")
	run env AIRLOCK_TEST_CRASH_AFTER=0 "$AIRLOCK_RELEASE" apply "$id"
	[ "$status" -eq 0 ] || { echo "$status $output"; return 1; }
	[ "$(cat f)" = two ]
	[ "$(cat g)" = new ]
	# The same under test stops at once.
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'echo three > f'
	id=$(jq -r .id <<<"$output")
	run env AIRLOCK_TEST_CRASH_AFTER=0 "$AIRLOCK" apply "$id"
	[ "$status" -eq 137 ] || { echo "$status $output"; return 1; }
}

# The recovery pass every apply, rollback, discard and gc runs first passes
# over a dry run whose journal ends settled without opening it; what a crash
# left in another dry run is still found and finished.
@test "recovery from another dry run's command: a torn apply rolled back, a state that does not follow its journal committed" {
	mkdir a b && echo 1 > a/f && echo 1 > b/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'a/**' -- sh -c 'echo 2 > a/f; echo 3 > a/g'
	A=$(jq -r .id <<<"$output")
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b/**' -- sh -c 'echo 2 > b/f; echo 3 > b/g'
	B=$(jq -r .id <<<"$output")
	"$AIRLOCK" apply "$A" >/dev/null # settled: committed, applied
	before=$(snap)
	run env AIRLOCK_TEST_CRASH_AFTER=1 "$AIRLOCK" apply "$B"
	[ "$status" -eq 137 ]
	[ "$(snap)" != "$before" ]
	# A command on A recovers B first: entirely old again.
	"$AIRLOCK" rollback "$A" >/dev/null
	[ "$(cat b/f)" = 1 ]
	[ ! -e b/g ]
	[ "$(cat a/f)" = 1 ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state" 2>/dev/null || echo pending)" = pending ]
	# B applied, then its state lost (as a crash between the journal's mark
	# and the state's commit leaves it): a gc commits "applied" again.
	"$AIRLOCK" apply "$B" >/dev/null
	rm "$AIRLOCK_STATE_DIR/dryruns/$B/state"
	"$AIRLOCK" gc --older-than 3650d >/dev/null
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state")" = applied ]
	al rollback "$B"
	[ "$status" -eq 0 ]
	[ "$(cat b/f)" = 1 ]
	[ ! -e b/g ]
}

# The apply's "committed" mark is written, not synced: the state's ledger
# entry after the workspace's syncfs is the commit point, and the state file
# a cache of it. A power loss that kept the entry but neither the mark nor
# the file: the apply stands, the mark and the file come back.
@test "a power loss that kept an apply's state entry but lost its journal mark and state file: the apply stands" {
	mkdir b && echo 1 > b/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b/**' -- sh -c 'echo 2 > b/f; echo 3 > b/g'
	B=$(jq -r .id <<<"$output")
	"$AIRLOCK" apply "$B" >/dev/null
	j="$AIRLOCK_STATE_DIR/dryruns/$B/journal"
	[ "$(tail -n 1 "$j")" = '{"mark":"committed"}' ]
	sed -i '$d' "$j"
	rm "$AIRLOCK_STATE_DIR/dryruns/$B/state"
	"$AIRLOCK" gc --older-than 3650d >/dev/null
	[ "$(cat b/f)" = 2 ]
	[ "$(cat b/g)" = 3 ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state")" = applied ]
	[ "$(tail -n 1 "$j")" = '{"mark":"committed"}' ]
	"$AIRLOCK" ledger key >"$TEST_DIR/ledger.pub"
	al ledger verify --key "$TEST_DIR/ledger.pub"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	al rollback "$B"
	[ "$status" -eq 0 ]
	[ "$(cat b/f)" = 1 ]
	[ ! -e b/g ]
	# Rolled back, then the state file left at its earlier version: the
	# next command on the dry run writes the committed one back.
	printf 'applied\n' > "$AIRLOCK_STATE_DIR/dryruns/$B/state.tmp"
	mv "$AIRLOCK_STATE_DIR/dryruns/$B/state.tmp" "$AIRLOCK_STATE_DIR/dryruns/$B/state"
	al rollback "$B"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"not applied"* ]] || { echo "$stderr"; return 1; }
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state")" = rolled_back ]
}

# The journals of other dry runs the recovery pass of one `airlock apply`
# touches (the pass names them dryruns/<id>/journal, relative to dryruns/;
# the apply's own dry run is read by its name alone).
pass_journals() {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'w/**' -- sh -c "echo $1 > w/f"
	[ "$status" -eq 0 ]
	local id
	id=$(jq -r .id <<<"$output")
	traced -f -qq -e trace=openat,newfstatat,statx,open,stat -o "$TEST_DIR/trace" \
		"$AIRLOCK" apply "$id" >/dev/null
	grep -cE '"[0-9]+/journal"' "$TEST_DIR/trace" || true
}

@test "the recovery pass reads only the applies under way: its work does not grow with settled dry runs" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	mkdir w && echo 0 > w/f
	for i in 1 2; do pass_journals "$i" >/dev/null; done
	few=$(pass_journals 3)
	for i in 4 5 6 7 8 9; do pass_journals "$i" >/dev/null; done
	many=$(pass_journals 10)
	[ "$(cat w/f)" = 10 ]
	[ "$few" -eq "$many" ] || { echo "journals read at 3 dry runs: $few, at 10: $many"; return 1; }
	[ "$many" -eq 0 ]
}

# The marker's name must be durable before the apply's first operation, or
# a power loss after one leaves an apply the pass never finds. An fsync of
# the journal does not make a second link to it durable on every file
# system (ext4 without a journal syncs a new file's first parent only), so
# the directory is synced itself.
@test "the apply's marker directory is synced between the marker's link and the first operation" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	mkdir w && echo 0 > w/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'w/f' -- sh -c 'echo 1 > w/f'
	D=$(jq -r .id <<<"$output")
	traced -f -qq -y -e trace=linkat,fsync,fdatasync,renameat2 -o "$TEST_DIR/trace" "$AIRLOCK" apply "$D" >/dev/null
	[ "$(cat w/f)" = 1 ]
	link=$(grep -n 'linkat(.*\.applying' "$TEST_DIR/trace" | head -1 | cut -d: -f1)
	dsync=$(grep -n 'fsync([0-9]*</.*/dryruns/\.applying>)' "$TEST_DIR/trace" | head -1 | cut -d: -f1)
	first=$(grep -n "renameat2(.*$PWD/w" "$TEST_DIR/trace" | head -1 | cut -d: -f1)
	[ -n "$link" ] && [ -n "$first" ] || { cat "$TEST_DIR/trace"; return 1; }
	[ -n "$dsync" ] || { echo "the marker's directory is never synced"; cat "$TEST_DIR/trace"; return 1; }
	[ "$link" -lt "$dsync" ]
	[ "$dsync" -lt "$first" ]
}

# An apply is "under way" from its marker dryruns/.applying/<id>, made (and
# its directory synced) before the first operation, removed once its state
# is committed; the pass lists that directory alone.
@test "a crash between the apply's marker and its journal, and between its commit and the marker's removal" {
	mkdir b && echo 1 > b/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b/**' -- sh -c 'echo 2 > b/f; echo 3 > b/g'
	B=$(jq -r .id <<<"$output")
	before=$(snap)
	# Marked, no operation journaled: nothing to undo; the marker goes.
	run env AIRLOCK_TEST_CRASH_AFTER=marked "$AIRLOCK" apply "$B"
	[ "$status" -eq 137 ]
	[ -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
	"$AIRLOCK" gc --older-than 3650d >/dev/null
	[ "$(snap)" = "$before" ]
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
	# Journaled and marked, killed before the first operation, then after
	# one: the next command's pass (not gc's whole one) finds it.
	for k in 0 1; do
		run env AIRLOCK_TEST_CRASH_AFTER="$k" "$AIRLOCK" apply "$B"
		[ "$status" -eq 137 ]
		[ -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
		run --separate-stderr "$AIRLOCK" dryrun --json --expect 'x' -- sh -c 'echo x > x'
		X=$(jq -r .id <<<"$output")
		al discard "$X"
		[ "$status" -eq 0 ]
		[ "$(snap)" = "$before" ] || { echo "step $k: the tree is mixed"; return 1; }
		[ ! -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
		[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state" 2>/dev/null || echo pending)" = pending ]
	done
	# Committed, killed before the marker's removal: the apply stands, the
	# next pass removes the marker.
	run env AIRLOCK_TEST_CRASH_AFTER=committed "$AIRLOCK" apply "$B"
	[ "$status" -eq 137 ]
	[ "$(cat b/f)" = 2 ]
	[ "$(cat b/g)" = 3 ]
	[ -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'x' -- sh -c 'echo x > x'
	X=$(jq -r .id <<<"$output")
	al discard "$X"
	[ "$status" -eq 0 ]
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
	[ "$(cat b/f)" = 2 ]
	[ "$(cat b/g)" = 3 ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state")" = applied ]
	al rollback "$B"
	[ "$status" -eq 0 ]
	[ "$(snap)" = "$before" ]
	[ ! -e "$AIRLOCK_STATE_DIR/dryruns/.applying/$B" ]
}

@test "a state directory of the older layout (journals only in dryruns/<id>/): its cut-short apply is found, once, by a whole pass" {
	mkdir a b && echo 1 > a/f && echo 1 > b/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'a/**' -- sh -c 'echo 2 > a/f'
	A=$(jq -r .id <<<"$output")
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b/**' -- sh -c 'echo 2 > b/f; echo 3 > b/g'
	B=$(jq -r .id <<<"$output")
	run env AIRLOCK_TEST_CRASH_AFTER=1 "$AIRLOCK" apply "$B"
	[ "$status" -eq 137 ]
	[ "$(cat b/f)" = 2 ] || [ -e b/g ]
	# What an older airlock leaves: no dryruns/.applying at all.
	rm -rf "$AIRLOCK_STATE_DIR/dryruns/.applying"
	al apply "$A"
	[ "$status" -eq 0 ]
	[ "$(cat b/f)" = 1 ]
	[ ! -e b/g ]
	[ "$(cat a/f)" = 2 ]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$B/state" 2>/dev/null || echo pending)" = pending ]
	# The whole pass left the layout's mark: the next passes list
	# dryruns/.applying alone.
	[ -e "$AIRLOCK_STATE_DIR/dryruns/.applying/.complete" ]
	al apply "$B"
	[ "$status" -eq 0 ]
	[ "$(cat b/f)" = 2 ]
	[ "$(cat b/g)" = 3 ]
}

@test "a state file airlock never wrote: apply refuses it by no name of its own, and the tree stays" {
	mkdir -p b && echo 1 > b/f
	run --separate-stderr "$AIRLOCK" dryrun --json --expect 'b/**' -- sh -c 'echo 2 > b/f'
	ID=$(jq -r .id <<<"$output")
	"$AIRLOCK" apply "$ID" >/dev/null
	"$AIRLOCK" rollback "$ID" >/dev/null
	# Not what the ledger committed, nor a torn copy of it: left for the
	# reader, which takes it for neither pending nor applied.
	printf 'bogus\n' > "$AIRLOCK_STATE_DIR/dryruns/$ID/state"
	run --separate-stderr "$AIRLOCK" apply "$ID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"dry run $ID is in a state airlock never records"* ]]
	[ "$(cat b/f)" = 1 ]
	run --separate-stderr "$AIRLOCK" rollback "$ID"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"dry run $ID is in a state airlock never records, not applied"* ]]
	[ "$(cat "$AIRLOCK_STATE_DIR/dryruns/$ID/state")" = bogus ]
}

@test "attack: a mode-changed file swapped for a hard link of a file outside the workspace after the dry run: CONFLICT, the outside file keeps its mode" {
	# The dry run saw a lone a (no other name): the change shown is a's mode
	# alone. The agent then makes a a name of a file outside the workspace,
	# same bytes, mode and attributes: apply's chmod in place would reach it.
	mkdir "$TEST_DIR/outside"
	echo one > "$TEST_DIR/outside/victim" && chmod 644 "$TEST_DIR/outside/victim"
	echo one > a && chmod 644 a
	al dryrun --json --expect a -- chmod 600 a
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	jq -e '.changes[] | select(.path == "a") | .change == "mode_changed" and (has("also_outside") | not)' \
		"$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	rm a && ln "$TEST_DIR/outside/victim" a
	al apply "$ID"
	[ "$(stat -c %a "$TEST_DIR/outside/victim")" = 644 ] || { echo "the outside file's mode changed: $status $stderr"; return 1; }
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
	[[ "$stderr" == *"a has other hard links now"* ]] || { echo "$stderr"; return 1; }
}

@test "attack: a mode-changed group member gains a name outside the workspace after the dry run: CONFLICT" {
	mkdir "$TEST_DIR/outside"
	echo one > a && ln a b && chmod 644 a
	al dryrun --json --expect a -- chmod 600 a
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	# a's group was {a, b}; now a and b are names of a file outside with the same bytes.
	echo one > "$TEST_DIR/outside/victim" && chmod 644 "$TEST_DIR/outside/victim"
	rm a b && ln "$TEST_DIR/outside/victim" a && ln a b
	al apply "$ID"
	[ "$(stat -c %a "$TEST_DIR/outside/victim")" = 644 ] || { echo "the outside file's mode changed: $status $stderr"; return 1; }
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
}

@test "attack: after the apply of a mode change, the file swapped for a hard link of a file outside: rollback is CONFLICT, the outside file keeps its mode" {
	mkdir "$TEST_DIR/outside"
	echo one > a && chmod 600 a
	al dryrun --json --expect a -- chmod 644 a
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	# rollback would chmod 600 back: a readable file outside made private,
	# or (the other way round) a private one made readable.
	echo one > "$TEST_DIR/outside/victim" && chmod 644 "$TEST_DIR/outside/victim"
	rm a && ln "$TEST_DIR/outside/victim" a
	al rollback "$ID"
	[ "$(stat -c %a "$TEST_DIR/outside/victim")" = 644 ] || { echo "the outside file's mode changed: $status $stderr"; return 1; }
	[ "$status" -eq 20 ] || { echo "$status $stderr"; return 1; }
}

@test "link group: a mode change of one name with the group's other names removed or replaced by the command applies and rolls back" {
	echo one > a && ln a b && mkdir -p d/e && ln a d/e/c && ln a k && chmod 644 a
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'chmod 600 a; rm -rf d; rm b; echo x > b'
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	jq -e '.changes[] | select(.path == "a") | [.also_names[].path] == ["k"]' "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json"
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	[ "$(stat -c %a k)" = 600 ]
	[ ! -e d ]
	[ "$(cat b)" = x ]
	al rollback "$ID"
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	[ "$(stat -c %a a)" = 644 ]
	[ "$(stat -c %h a)" = 4 ]
	[ "$(stat -c %i d/e/c)" = "$(stat -c %i a)" ]
}

@test "attack: an apply of a mode change killed after its chmod, the file swapped for a hard link of a private file outside: recovery's undo leaves that file alone" {
	mkdir "$TEST_DIR/outside"
	echo secret > "$TEST_DIR/outside/key" && chmod 600 "$TEST_DIR/outside/key"
	echo one > a && echo two > b && chmod 644 a b
	al dryrun --json --expect a --expect b -- chmod 600 a b
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	# Killed before the second chmod, after the first.
	run env AIRLOCK_TEST_CRASH_AFTER=1 "$AIRLOCK" apply "$ID"
	[ "$status" -eq 137 ] || { echo "$status $output"; return 1; }
	a=a && [ "$(stat -c %a a)" = 600 ] || a=b
	[ "$(stat -c %a $a)" = 600 ]
	# The undo would chmod 644 whatever $a names now: no content to match.
	rm $a && ln "$TEST_DIR/outside/key" $a
	"$AIRLOCK" gc --older-than 3650d >/dev/null 2>&1 || true
	al apply "$ID"
	[ "$(stat -c %a "$TEST_DIR/outside/key")" = 600 ] || { echo "the outside file's mode changed: $status $stderr"; return 1; }
	[ "$status" -ne 0 ]
	# The agent's name gone again, recovery finishes: the tree entirely old, then the apply.
	rm $a && { [ $a = a ] && echo one > a || echo two > b; } && chmod 600 $a
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "$status $stderr"; return 1; }
	[ "$(stat -c %a a)" = 600 ]
	[ "$(stat -c %a b)" = 600 ]
	[ "$(stat -c %a "$TEST_DIR/outside/key")" = 600 ]
}

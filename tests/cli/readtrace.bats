#!/usr/bin/env bats
# A dry run traces the opens that only read only when the workspace holds a
# hard-linked file as it begins (docs/sandbox.md, "Read tracing"): without
# one, the filter has no rule for them; with one, a read of another name
# after an in-place change is still seen; a group linked after the scan,
# with reads untraced, is judged as if the read happened.
load helpers
load realrun

# The scan's answer is best effort: on a busy machine it may come after init
# stopped waiting, and reads are traced. A test build waits for it here.
export AIRLOCK_TEST_READSCAN_WAIT_MS=20000

rules() { # the seccomp rules the receipt in $output names
	jq -r .sandbox.enforced.seccomp.rules <<<"$output"
}

@test "read tracing: a workspace without a hard-linked file: no rule for the opens that only read" {
	mkdir -p sub && echo one > sub/f && echo two > g && ln -s g l
	al dryrun --json --expect '**' -- sh -c 'cat sub/f g l > out'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.reads_traced == false' <<<"$output"
	untraced=$(rules)
	ln g h
	al dryrun --json --expect '**' -- sh -c 'cat sub/f g l > out'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.reads_traced == true' <<<"$output"
	[ "$(rules)" -eq $((untraced + 2)) ] # open and openat, O_RDONLY
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "read tracing: the supervisor gets no notification for the reads of a workspace without links" {
	command -v strace >/dev/null || skip "no strace"
	strace -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"
	echo one > f
	loop='i=0; while [ $i -lt 300 ]; do read -r x < f; i=$((i + 1)); done'
	# Without -f: the supervisor's own thread, which receives every
	# notification (SECCOMP_IOCTL_NOTIF_RECV).
	traced -qq -e trace=ioctl -o "$TEST_DIR/untraced" "$AIRLOCK" dryrun --json -- sh -c "$loop" >/dev/null || true
	ln f f2
	traced -qq -e trace=ioctl -o "$TEST_DIR/traced" "$AIRLOCK" dryrun --json -- sh -c "$loop" >/dev/null || true
	untraced=$(grep -c NOTIF_RECV "$TEST_DIR/untraced" || true)
	traced=$(grep -c NOTIF_RECV "$TEST_DIR/traced" || true)
	echo "untraced $untraced traced $traced"
	[ "$traced" -ge 300 ]
	[ "$untraced" -lt 100 ]
}

@test "read tracing: with a hard-linked pair, a read of the other name after an in-place change is LINK_GROUP" {
	echo one > a && ln a b
	al dryrun --json --expect '**' -- sh -c 'echo more >> a; cp b c'
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.reads_traced == true' <<<"$output"
	jq -e '.dryrun.problems | any(.link_group == "b" and (.reason | test("read after")))' <<<"$output"
}

@test "read tracing: links the command makes in a workspace without links apply as the real run's, reads untraced" {
	echo one > a && echo two > d
	real_vs_apply 'ln a b; echo more >> a; cat b > c; ln d e; echo x > d.tmp; mv d.tmp d; cat e > f'
	jq -e '.dryrun.reads_traced == false and .dryrun.verdict == "DRY_RUN_OK"' <<<"$receipt_json"
}

@test "read tracing: a group linked after the scan, reads untraced, changed in place under one name: LINK_GROUP" {
	echo one > a
	AIRLOCK_TEST_READSCAN_LINK="a b" al dryrun --json --expect '**' -- sh -c 'echo more >> a'
	[ -e b ] || skip "not a test build (AIRLOCK_TEST_READSCAN_LINK)"
	[ "$status" -eq 16 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.reads_traced == false' <<<"$output"
	jq -e '.dryrun.problems | any(.link_group == "a" and (.reason | test("reads were not traced")))' <<<"$output"
	# Nothing changed in place: nothing a read could have seen stale.
	rm b && echo one > a
	AIRLOCK_TEST_READSCAN_LINK="a b" al dryrun --json --expect '**' -- sh -c 'cat b > c'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.reads_traced == false and .dryrun.verdict == "DRY_RUN_OK"' <<<"$output"
}

# Attack (attackread29): a directory of the workspace its user cannot read
# (mode 000; root reads it anyway) hides the lower layer from the change
# set's walk, which ran as that user: the command's `chmod 755 d; rm d/a`
# came out DRY_RUN_OK with the mode change alone, and the apply left d/a
# (the real run removes it); `echo more >> d/b` of a linked pair came out
# "created" and `cat d/c` read the old bytes, DRY_RUN_OK (apply then found
# a CONFLICT). A lower the walk cannot read is an error (DRY_RUN_FAILED),
# never "absent".
@test "read tracing: a workspace directory its user cannot read: the change set never takes it for empty" {
	mkdir d && echo one > d/a && echo two > d/b && ln d/b d/c && chmod 000 d
	al dryrun --json --expect '**' --expect-delete '**' -- sh -c 'chmod 755 d; rm d/a'
	echo "$status $output $stderr"
	if [ "$status" -eq 0 ]; then
		jq -e '.dryrun.changes | any(.path == "d/a" and .change == "deleted")' <<<"$output"
	else
		jq -e '.dryrun.verdict == "DRY_RUN_FAILED" and
			(.dryrun.problems | any(.changeset_error // "" | test("open d in the workspace")))' <<<"$output"
	fi
	al dryrun --json --expect '**' -- sh -c 'chmod 755 d; echo more >> d/b; cat d/c > e'
	echo "$status $output $stderr"
	[ "$status" -ne 0 ]
	run ! jq -e '.dryrun.verdict == "DRY_RUN_OK"' <<<"$output"
}

# Attack (attackread29): links the command makes to a lower file, changed in
# place under the new name and read under the old one (or across
# directories), in a workspace without links: the overlay copies the lower
# file up before linking it, so both names share the upper's inode, as in
# the real run, for read(). Reads untraced, DRY_RUN_OK, the apply is the
# real run.
@test "read tracing: the command links a lower file, changes the new name in place and reads the old: as the real run" {
	mkdir sub && echo one > a && echo two > sub/d
	real_vs_apply 'ln a b; echo more >> b; dd if=a of=c status=none; ln sub/d e; echo x >> e; cat sub/d | cat > f; ln a sub/g; chmod 600 sub/g; dd if=a of=h status=none'
	jq -e '.dryrun.reads_traced == false and .dryrun.verdict == "DRY_RUN_OK"' <<<"$receipt_json"
}

# Attack (attackread29). Without the overlay's inode index the old name
# (copied up for the link) and the new one are two overlay inodes on one
# upper inode; a write through the new name leaves the old one's cached size
# behind, and copy_file_range() (coreutils 9's cat and cp) through the old
# name was cut to it: c got "one" in the dry run, "one more" in the real
# run, DRY_RUN_OK (read() and dd see the new bytes). A dry run's filter
# answers copy_file_range() EXDEV and the clone ioctls EOPNOTSUPP, and
# programs copy with read() and write() (docs/sandbox.md, "Read tracing").
@test "read tracing: a lower file linked by the command, written under the new name, copied under the old: as the real run" {
	echo one > a
	real_vs_apply 'ln a b; echo more >> b; cat a > c'
	jq -e '.dryrun.verdict == "DRY_RUN_OK" and (.sandbox.denials | length) == 0' <<<"$receipt_json"
}

@test "read tracing: the same, copied with cp: as the real run" {
	echo one > a && mkdir sub && echo two > sub/e
	real_vs_apply 'ln a b; echo more >> b; cp a d; ln sub/e f; echo x >> f; cp sub/e g; cp --reflink=auto sub/e h'
	jq -e '.dryrun.verdict == "DRY_RUN_OK" and (.sandbox.denials | length) == 0' <<<"$receipt_json"
}

# The filter answers the calls itself: copy_file_range() EXDEV (what a copy
# across file systems gets), FICLONE, FICLONERANGE and FIDEDUPERANGE
# EOPNOTSUPP (a file system without reflinks), whatever the arguments (a
# source descriptor -1 would be EBADF from the kernel); nothing recorded as a
# denial. A plain run keeps them.
copy_calls='
import errno, fcntl, os, sys
def ask(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open("c", os.O_WRONLY | os.O_CREAT, 0o644)
src = os.open("a", os.O_RDONLY)
print(ask(lambda: os.copy_file_range(src, fd, 4)) if hasattr(os, "copy_file_range") else "EXDEV",
      ask(lambda: fcntl.ioctl(fd, 0x40049409, -1)),
      ask(lambda: fcntl.ioctl(fd, 0x4020940d, bytes(32))),
      ask(lambda: fcntl.ioctl(fd, 0xc0189436, bytes(24))))
'

@test "read tracing: a dry run answers copy_file_range() EXDEV and the clone ioctls EOPNOTSUPP, denying nothing" {
	command -v python3 >/dev/null || skip "no python3"
	echo one > a
	al dryrun --json --expect '**' -- python3 -c "$copy_calls"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	# ENOTSUP: Python's name of EOPNOTSUPP (one value on Linux)
	[ "$(jq -r .stdout <<<"$output")" = "EXDEV ENOTSUP ENOTSUP ENOTSUP" ] || { echo "$output"; return 1; }
	jq -e '(.sandbox.denials | length) == 0' <<<"$output"
	al run --json -- python3 -c "$copy_calls"
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	calls=$(jq -r .stdout <<<"$output")
	echo "plain run: $calls"
	[ "${calls%% *}" = ok ]
	[[ "$calls" = *" EBADF "* ]]
}

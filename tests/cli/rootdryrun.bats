#!/usr/bin/env bats
# A dry run as root (docs/dryrun.md, "Root"): every id mapped through, the
# command keeps CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
# and CAP_FSETID in its user namespace, owners are carried in the change
# set, and what still cannot be reproduced (a device node) is a named
# verdict. Root only: an unprivileged caller's dry run is unchanged.
load helpers

setup() {
	[ "$(id -u)" -eq 0 ] || skip "a root dry run needs root"
	setup_dirs
}

dr() { # dryrun with --json; sets $output to the receipt
	run --separate-stderr "$AIRLOCK" dryrun --json "$@"
}

verdict() { jq -r .dryrun.verdict <<<"$output"; }
dr_id() { jq -r .id <<<"$output"; }

@test "root's dry run maps every id and keeps five capabilities; plain run as root does not" {
	dr -- sh -c 'cat /proc/self/uid_map /proc/self/gid_map; grep -E "^Cap(Eff|Prm|Bnd|Amb|Inh)" /proc/self/status'
	[ "$status" -eq 10 ]
	out=$(jq -r .stdout <<<"$output")
	[ "$(awk 'NR<=2 {print $1, $2, $3}' <<<"$out")" = "0 0 4294967295
0 0 4294967295" ]
	grep -q '^CapEff:	000000000000001f' <<<"$out"
	grep -q '^CapBnd:	000000000000001f' <<<"$out"
	grep -q '^CapAmb:	000000000000001f' <<<"$out"
	run --separate-stderr "$AIRLOCK" run --json -- sh -c 'cat /proc/self/uid_map; grep ^CapEff /proc/self/status'
	[ "$status" -eq 0 ]
	out=$(jq -r .stdout <<<"$output")
	[ "$(awk 'NR==1 {print $1, $2, $3}' <<<"$out")" = "0 0 1" ]
	grep -q '^CapEff:	0000000000000000' <<<"$out"
}

@test "rm -rf of a tree with a 000 directory, as root: DRY_RUN_OK and apply does it" {
	mkdir -p t/locked/in && echo x > t/locked/in/f && chmod 000 t/locked
	dr --expect-delete t -- rm -rf t
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ ! -e t ]
}

@test "writing into a file of a foreign owner, as root: modified, and the owner stays" {
	echo x > f && chown 1234:1234 f && chmod 644 f
	dr --expect f -- sh -c 'echo y >> f'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	jq -e '.dryrun.changes[0] | .change == "modified" and .uid == 1234 and .gid == 1234' <<<"$output"
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g f)" = 1234:1234 ]
	[ "$(cat f)" = "x
y" ]
}

@test "tar -x of foreign-owned members, as root: created with their owners" {
	mkdir src && echo a > src/a && chown -R 1234:4321 src
	tar -cf "$TEST_DIR/a.tar" src && rm -rf src
	cp "$TEST_DIR/a.tar" a.tar
	dr --expect src -- tar -xf a.tar
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	jq -e '[.dryrun.changes[] | select(.path == "src/a")][0] | .uid == 1234 and .gid == 4321' <<<"$output"
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g src src/a)" = "1234:4321
1234:4321" ]
}

@test "a rename of a read-only directory, as root: DRY_RUN_OK and applied" {
	mkdir ro && echo a > ro/a && chmod 555 ro
	dr --expect rw --expect-delete ro -- mv ro rw
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ ! -e ro ]
	[ "$(cat rw/a)" = a ]
	[ "$(stat -c %a rw)" = 555 ]
}

@test "chown alone is a change, owner_changed: applied with fchownat, checked, rolled back" {
	echo x > f && chmod 640 f
	dr --expect f -- sh -c 'chown 1234:1234 f || true'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	jq -e '.dryrun.changes | length == 1 and (.[0] | .change == "owner_changed" and .type == "file" and
		.path == "f" and .uid == 1234 and .gid == 1234 and .old_uid == 0 and .old_gid == 0 and
		.mode == "0640" and (has("old_mode") | not) and .xattrs == [] and .size == 2)' <<<"$output"
	id=$(dr_id)
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g:%a f)" = 1234:1234:640 ]
	run "$AIRLOCK" rollback "$id"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g:%a f)" = 0:0:640 ]
	# The owner is a precondition: a file whose owner changed since is a conflict.
	chown 55:55 f
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 20 ]
	[ "$(stat -c %u:%g f)" = 55:55 ]
}

@test "chown and chmod together: mode_changed with the owners, the owner set first" {
	echo x > f && chmod 644 f
	dr --expect f -- sh -c 'chown 1234 f && chmod 600 f'
	[ "$status" -eq 0 ]
	jq -e '.dryrun.changes[0] | .change == "mode_changed" and .uid == 1234 and .old_uid == 0 and .mode == "0600"' <<<"$output"
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%a f)" = 1234:600 ]
}

@test "a staged object whose owner changed after the dry run is refused" {
	dr --expect n -- sh -c 'echo n > n && chown 1234 n'
	[ "$status" -eq 0 ]
	id=$(dr_id)
	chown 0 "$AIRLOCK_STATE_DIR/dryruns/$id/upper/n"
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 21 ]
	[[ "$output" == *"differs from the change set"* ]]
	[ ! -e n ]
}

@test "an unprivileged applier refuses a change set that names a foreign owner" {
	echo x > f
	dr --expect f -- chown 1234 f
	[ "$status" -eq 0 ]
	id=$(dr_id)
	chmod 755 "$TEST_DIR"
	chown -R 65534:65534 "$AIRLOCK_STATE_DIR" "$WORK"
	run setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp \
		AIRLOCK_STATE_DIR="$AIRLOCK_STATE_DIR" "$AIRLOCK" apply "$id"
	[ "$status" -eq 21 ] || { echo "$status $output"; return 1; }
	[[ "$output" == *"owned by 1234:0, which only root can give"* ]]
	[ "$(stat -c %u f)" = 65534 ]
}

@test "appending to a set-user-ID file as root: PRIVILEGED_FILE (root's real run keeps the bit; the snapshot cannot)" {
	echo x > tool && chmod 4755 tool
	dr --expect tool -- sh -c 'echo y >> tool'
	[ "$status" -eq 13 ] || { echo "$output $stderr"; return 1; }
	[ "$(verdict)" = PRIVILEGED_FILE ]
	jq -e '.dryrun.changes[0] | .refused == "setuid" and .mode == "4755"' <<<"$output"
}

@test "a device node root's real run would make: NEEDS_PRIVILEGE, even when the script ignores the failure" {
	dr --expect '**' -- sh -c 'mknod dev c 1 3 || true; echo ok > f'
	[ "$status" -eq 18 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(verdict)" = NEEDS_PRIVILEGE ]
	jq -e '.dryrun.problems[] | select(.needs_privilege == "device_node") | .count == 1' <<<"$output"
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 21 ]
	[ ! -e f ]
	# A fifo is no device: nothing is missing.
	dr --expect p -- mkfifo p
	[ "$status" -eq 0 ]
}

@test "a file capability or a trusted.* attribute root's real run would set: NEEDS_PRIVILEGE" {
	command -v setfattr >/dev/null || skip "attr is not installed"
	echo x > tool
	dr --expect '**' -- sh -c 'setfattr -n trusted.note -v x tool || true; echo ok > f'
	[ "$status" -eq 18 ] || { echo "$status $output $stderr"; return 1; }
	jq -e '.dryrun.problems[] | select(.needs_privilege == "xattr") | .count == 1' <<<"$output"
	dr --expect '**' -- sh -c 'setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= tool || true'
	[ "$status" -eq 18 ]
	[ "$(verdict)" = NEEDS_PRIVILEGE ]
	# user.* attributes are the workspace's own: carried, no privilege needed
	dr --expect '**' -- setfattr -n user.note -v x tool
	[ "$status" -eq 0 ]
}

@test "attacks as root in the dry run fail as before: state dir, hidden credentials, umount, mknod, chmod +s" {
	mkdir -p "$TEST_DIR/home/.ssh" && echo secret > "$TEST_DIR/home/.ssh/id_rsa" && chmod 600 "$TEST_DIR/home/.ssh/id_rsa"
	echo x > tool
	# the state directory: hidden, and read-only were it seen
	dr -- sh -c "ls '$AIRLOCK_STATE_DIR'/ 2>&1; echo pwn > '$AIRLOCK_STATE_DIR/x' 2>&1; true"
	[ ! -e "$AIRLOCK_STATE_DIR/x" ]
	# shellcheck disable=SC2143 # the lines left are printed when there are any
	[ -z "$(jq -r .stdout <<<"$output" | grep -v -e 'No such' -e 'Read-only' -e 'Permission' -e '^$')" ] ||
		{ jq -r .stdout <<<"$output"; return 1; }
	# a hidden credential file
	run --separate-stderr env HOME="$TEST_DIR/home" "$AIRLOCK" dryrun --json -- \
		sh -c "cat '$TEST_DIR/home/.ssh/id_rsa'; true"
	! jq -r .stdout <<<"$output" | grep -q secret || false
	# the hide mount stays: no CAP_SYS_ADMIN
	run --separate-stderr env HOME="$TEST_DIR/home" "$AIRLOCK" dryrun --json -- \
		sh -c "umount '$TEST_DIR/home/.ssh' 2>/dev/null || umount -l '$TEST_DIR/home/.ssh' 2>/dev/null; cat '$TEST_DIR/home/.ssh/id_rsa'; true"
	! jq -r .stdout <<<"$output" | grep -q secret || false
	# a device node is refused by the kernel (and named, above)
	dr -- sh -c 'mknod mem c 1 1 && echo made; true'
	[[ "$(jq -r .stdout <<<"$output")" != *made* ]]
	# chmod +s: refused by the filter
	dr -- sh -c 'chmod u+s tool && echo set; true'
	[[ "$(jq -r .stdout <<<"$output")" != *set* ]]
	[ "$(stat -c %a tool)" = 644 ]
	# no capability beyond the five, whatever the command executes
	dr -- sh -c 'hostname evil 2>/dev/null && echo renamed; ip link add x type dummy 2>/dev/null && echo link; true'
	[[ "$(jq -r .stdout <<<"$output")" != *renamed* ]]
	[[ "$(jq -r .stdout <<<"$output")" != *link* ]]
}

@test "a file of a group outside root's old one-id map is copied up now (no EOVERFLOW)" {
	echo x > grp && chown 0:1000 grp && chmod 664 grp
	dr --expect grp -- sh -c 'echo y >> grp'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	run "$AIRLOCK" apply "$(dr_id)"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g f 2>/dev/null || stat -c %u:%g grp)" = 0:1000 ]
}

@test "a root dry run's receipts match the schema (owners, owner_changed, NEEDS_PRIVILEGE)" {
	echo x > f
	dr --expect '**' -- sh -c 'chown 1234 f; echo n > n'
	[ "$status" -eq 0 ]
	dr --expect '**' -- sh -c 'mknod dev b 7 0 || true; echo ok > f'
	[ "$status" -eq 18 ]
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the human view names the owner change and the missing privilege" {
	echo x > f
	run "$AIRLOCK" dryrun --expect '**' -- sh -c 'chown 1234:4321 f; mknod dev c 1 3 || true'
	[ "$status" -eq 18 ]
	[[ "$output" == *"dry run "*": NEEDS_PRIVILEGE"* ]]
	[[ "$output" == *"owner       f (owner 0:0 -> 1234:4321)"* ]]
	[[ "$output" == *"root's real run would do what the quarantine cannot: make a device node (1 times); not applied"* ]]
}

@test "the workspace root's owner: seen as it is, and a chown of it carried, applied and rolled back" {
	chown 1234:1234 .
	dr --expect . -- sh -c 'stat -c %u:%g .; chown 4321:4321 .'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(jq -r .stdout <<<"$output")" = 1234:1234 ]
	jq -e '.dryrun.changes | length == 1 and (.[0] | .change == "owner_changed" and .type == "dir" and
		.path == "." and .uid == 4321 and .gid == 4321 and .old_uid == 1234 and .old_gid == 1234)' <<<"$output"
	id=$(dr_id)
	run "$AIRLOCK" apply "$id"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g .)" = 4321:4321 ]
	run "$AIRLOCK" rollback "$id"
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g .)" = 1234:1234 ]
}

@test "root without CAP_SETUID and CAP_SETGID: its own ids only, no owners carried, the snapshot's root its own" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	chown 1234:1234 .
	run --separate-stderr setpriv --bounding-set=-setuid,-setgid "$AIRLOCK" dryrun --json --expect new -- \
		sh -c 'cat /proc/self/uid_map; echo x > new'
	[ "$status" -eq 0 ] || { echo "$status $output $stderr"; return 1; }
	[ "$(jq -r .stdout <<<"$output" | awk 'NR==1 {print $1, $2, $3}')" = "0 0 1" ]
	jq -e '.dryrun.changes == [.dryrun.changes[0]] and .dryrun.changes[0].uid == null' <<<"$output"
}

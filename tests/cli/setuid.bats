#!/usr/bin/env bats
# No set-user-ID or set-group-ID file, and no file capability, leaves the
# quarantine (docs/sandbox.md, "No set-id files"): the workspace is the
# host's, and outside the quarantine nosuid no longer holds. Each test makes
# the attempt inside `airlock run`, then looks at the HOST tree. Runs as root
# and as uid 65534.
load helpers

PY=/usr/bin/python3

# Set-id files in the workspace, as the host sees them, except under host/
# (what the test itself put there).
setid_on_host() {
	find "$WORK" -path "$WORK/host" -prune -o -perm /6000 -type f -printf '%p %m\n'
}

no_setid_on_host() {
	local found
	found=$(setid_on_host)
	[ -z "$found" ] || { echo "set-id files on the host: $found"; return 1; }
}

# The receipt records a seccomp denial of one of the named syscalls.
denied() {
	rq --arg names "$*" '[.sandbox.denials[].syscall] as $d | ($names | split(" ")) | any(. as $n | $d | index($n) != null)' |
		grep -qx true || { echo "no denial of $* in $(rq -c .sandbox.denials)"; return 1; }
}

@test "chmod 4755, 2755, 6755, u+s and g+s: refused, recorded, nothing set-id on the host" {
	cp /bin/true existing # the host's own file, there before the run
	al run -- sh -c 'for m in 4755 2755 6755 u+s g+s ug+s; do cp /bin/true "f$m"; chmod "$m" "f$m" && echo "chmod $m worked"; done
		chmod u+s existing && echo "existing worked"; true'
	[ "$status" -eq 0 ]
	for m in 4755 2755 6755 u+s g+s ug+s; do [ -f "f$m" ]; done
	[[ "$(rq .stdout)" != *worked* ]]
	no_setid_on_host
	denied chmod fchmodat fchmodat2
	# An ordinary chmod still works.
	al run -- sh -c 'cp /bin/true plain && chmod 700 plain'
	[ "$status" -eq 0 ]
	[ "$(stat -c %a plain)" = 700 ]
}

@test "install -m 4755 and -m 2755: refused" {
	al run -- sh -c 'install -m 4755 /bin/true i1; install -m 2755 /bin/true i2; true'
	[ "$status" -eq 0 ]
	no_setid_on_host
	denied chmod fchmod fchmodat fchmodat2
}

@test "cp -p and cp -a of a set-id file keep no set-id bit" {
	mkdir host && cp /bin/true host/suid && chmod 6755 host/suid
	al run -- sh -c 'cp -p host/suid p1; cp -a host/suid p2; cp -p /usr/bin/passwd p3; cp -a /usr/bin/passwd p4; true'
	[ "$status" -eq 0 ]
	[ -f p1 ]
	[ -f p2 ]
	[ -f p3 ]
	no_setid_on_host
	denied chmod fchmod fchmodat fchmodat2
}

@test "tar -xpf of an archive with set-id members keeps no set-id bit" {
	mkdir host
	"$PY" - host/t.tar <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, mode in (("tsuid", 0o4755), ("tsgid", 0o2755), ("both", 0o6755)):
        data = b"#!/bin/sh\necho hi\n"
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        t.addfile(info, io.BytesIO(data))
EOF
	al run -- sh -c 'tar -xpf host/t.tar; tar -xf host/t.tar --same-permissions -C host 2>/dev/null; true'
	[ "$status" -eq 0 ]
	[ -f tsuid ]
	[ -f both ]
	no_setid_on_host
	[ -z "$(find host -perm /6000 -type f)" ]
	denied chmod fchmod fchmodat fchmodat2 open openat creat
}

@test "python: open and mknod with a set-id mode, fchmod, chmod through /proc/self/fd, fchmodat2 and openat2" {
	cat > attack.py <<'EOF'
import ctypes, errno, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def attempt(what, f):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
def sys_call(nr, *args):
    if libc.syscall(nr, *args) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
attempt("open", lambda: os.close(os.open("o1", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("open_sgid", lambda: os.close(os.open("o2", os.O_CREAT | os.O_WRONLY, 0o2755)))
attempt("tmpfile", lambda: os.close(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)))
attempt("mkdir", lambda: os.mkdir("d1", 0o2755))
attempt("mknod", lambda: os.mknod("n1", 0o104755))
fd = os.open("plain", os.O_CREAT | os.O_WRONLY, 0o755)
attempt("fchmod", lambda: os.fchmod(fd, 0o4755))
attempt("procfd", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o6755))
attempt("chmod", lambda: os.chmod("plain", 0o4755))
attempt("nofollow", lambda: os.chmod("plain", 0o4755, follow_symlinks=False))
AT_FDCWD = ctypes.c_int(-100)
attempt("fchmodat2", lambda: sys_call(452, AT_FDCWD, b"plain", 0o4755, 0))
how = struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, 0o4755, 0)
attempt("openat2", lambda: sys_call(437, AT_FDCWD, b"o3", how, len(how)))
# Harmless ones still work.
attempt("plain_open", lambda: os.close(os.open("o4", os.O_CREAT | os.O_WRONLY, 0o755)))
attempt("plain_chmod", lambda: os.fchmod(fd, 0o700))
EOF
	al run -- "$PY" attack.py
	[ "$status" -eq 0 ]
	out=$(rq .stdout)
	echo "$out"
	for a in open open_sgid tmpfile mkdir mknod fchmod procfd chmod nofollow fchmodat2; do
		grep -qx "$a EPERM" <<<"$out"
	done
	grep -qx "openat2 ENOSYS" <<<"$out"
	grep -qx "plain_open ok" <<<"$out"
	grep -qx "plain_chmod ok" <<<"$out"
	[ ! -e o3 ]
	[ ! -e o1 ]
	[ ! -e n1 ]
	[ ! -e d1 ]
	[ "$(stat -c %a plain)" = 700 ]
	no_setid_on_host
	[ -z "$(find "$WORK" -perm /6000)" ]
	denied fchmod
	denied fchmodat2
	denied openat open
	denied mkdir mkdirat
	denied mknod mknodat
}

@test "a hard link to a set-id file outside the workspace fails (another mount)" {
	al run -- sh -c 'ln /usr/bin/passwd p 2>&1; ln /usr/bin/su s 2>&1; true'
	[ "$status" -eq 0 ]
	[ ! -e p ]
	[ ! -e s ]
	[[ "$(rq .stdout)" == *"Invalid cross-device link"* ]]
	no_setid_on_host
}

@test "file capabilities: setcap and a raw security.capability attribute are refused" {
	cat > caps.py <<'EOF'
import os, struct
# VFS_CAP_REVISION_2, effective, permitted CAP_NET_RAW (13)
value = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)
open("c2", "wb").close()
try:
    os.setxattr("c2", "security.capability", value)
    print("setxattr ok")
except OSError as e:
    print("setxattr", e.errno)
EOF
	al run -- sh -c 'cp /bin/true c1; /usr/sbin/setcap cap_net_raw+ep c1; echo "setcap $?"; /usr/bin/python3 caps.py'
	[ "$status" -eq 0 ]
	echo "$(rq .stdout)"
	[[ "$(rq .stdout)" != *"setcap 0"* ]]
	[[ "$(rq .stdout)" != *"setxattr ok"* ]]
	[ -f c1 ]
	[ -f c2 ]
	[ -z "$(/usr/sbin/getcap c1 c2)" ]
	! getfattr -n security.capability c1 c2 2>/dev/null | grep -q capability || false
}

@test "a POSIX ACL set through setxattr adds no set-id bit" {
	cat > acl.py <<'EOF'
import os, struct
# system.posix_acl_access: version 2, USER_OBJ rwx, GROUP_OBJ r-x, OTHER r-x
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, 0xffffffff)
                                      for tag, perm in ((1, 7), (4, 5), (0x20, 5)))
open("a1", "wb").close()
try:
    os.setxattr("a1", "system.posix_acl_access", acl)
    print("acl ok", oct(os.stat("a1").st_mode))
except OSError as e:
    print("acl", e.errno)
EOF
	al run -- "$PY" acl.py
	[ "$status" -eq 0 ]
	echo "$(rq .stdout)"
	[ -f a1 ]
	no_setid_on_host
}

@test "in a set-group-ID directory of the host, new directories inherit it but no file gets it" {
	mkdir -p host/shared && chmod 2775 host/shared
	cat > sgid.py <<'EOF'
import os
os.mkdir("host/shared/sub", 0o755)
for path in ("host/shared/f", "host/shared/sub/g"):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o775))
try:
    os.close(os.open("host/shared/h", os.O_CREAT | os.O_WRONLY, 0o2775))
    print("h ok")
except OSError as e:
    print("h", e.errno)
os.chmod("host/shared/f", 0o775)
EOF
	al run -- "$PY" sgid.py
	[ "$status" -eq 0 ]
	[ -f host/shared/f ]
	[ -f host/shared/sub/g ]
	[ -z "$(find host -type f -perm /6000)" ]
	# The directory inherits the bit: it runs nothing (docs/sandbox.md).
	[ "$(stat -c %a host/shared/sub)" = 2755 ]
	no_setid_on_host
	denied open openat
}

@test "the filter holds in a dry run's traced snapshot too; a refused chmod 4755, even undone by chmod 700, is PRIVILEGED_FILE (the snapshot cannot know what the real run made of the bit)" {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'cp /bin/true rs; chmod 4755 rs; chmod 700 rs'
	[ "$status" -eq 13 ]
	[ "$(jq -r .dryrun.verdict <<<"$output")" = PRIVILEGED_FILE ]
	jq -e '.dryrun.changes[] | select(.path == "rs") | .mode == "0700"' <<<"$output"
	jq -e '[.sandbox.denials[].syscall] | index("fchmodat") != null' <<<"$output"
	jq -e '[.dryrun.problems[] | select(.refused_setid == "fchmodat" and .count == 1)] | length == 1' <<<"$output"
}

# The set-id requests the filter refuses, each ignored by the script: the
# real run (as the owner, or as root) leaves a set-id object; the dry run
# cannot, and says so instead of NO_EFFECT or DRY_RUN_OK.
@test "dry run: a refused set-id request the script ignores is PRIVILEGED_FILE, never NO_EFFECT, DRY_RUN_OK or OUTSIDE_WRITE" {
	echo x > f
	dv() { jq -r .dryrun.verdict <<<"$output"; }
	refused() { # syscall
		jq -e --arg s "$1" '[.dryrun.problems[] | select(.refused_setid == $s and .count >= 1)] | length == 1' <<<"$output" ||
			{ jq -c .dryrun.problems <<<"$output"; return 1; }
	}
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c 'chmod u+s f || true'
	[ "$status" -eq 13 ] && [ "$(dv)" = PRIVILEGED_FILE ] && refused fchmodat
	jq -e '.dryrun.changes == []' <<<"$output"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect f -- sh -c 'chmod 4755 f || true; echo y >> f'
	[ "$status" -eq 13 ] && [ "$(dv)" = PRIVILEGED_FILE ] && refused fchmodat
	# never applied: the change set holds only the append, not the real run's set-id file
	run --separate-stderr "$AIRLOCK" apply "$(jq -r .id <<<"$output")"
	[ "$status" -eq 21 ]
	one_error_line "verdict is PRIVILEGED_FILE"
	[ "$(cat f)" = x ]
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'install -m 4755 /bin/true i1; true'
	[ "$status" -eq 13 ]
	[ "$(dv)" = PRIVILEGED_FILE ]
	jq -e '[.dryrun.problems[] | select(.refused_setid)] | length == 1' <<<"$output"
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- $PY -c 'import os
for what in (lambda: os.open("o1", os.O_CREAT | os.O_WRONLY, 0o4755), lambda: os.mkdir("d1", 0o2755)):
    try: what()
    except OSError: pass'
	[ "$status" -eq 13 ] && [ "$(dv)" = PRIVILEGED_FILE ] && refused openat
	jq -e '[.dryrun.problems[] | select(.refused_setid)][0].count == 2' <<<"$output"
	# with a write attempted outside too: still PRIVILEGED_FILE
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c 'touch /usr/airlock-setid-test 2>/dev/null; chmod g+s f 2>/dev/null; true'
	[ "$status" -eq 13 ] && [ "$(dv)" = PRIVILEGED_FILE ] && refused fchmodat
	# The human view names it.
	run --separate-stderr "$AIRLOCK" dryrun -- sh -c 'chmod u+s f || true'
	[ "$status" -eq 13 ]
	[[ "$stderr$output" == *"refused set-id request"* ]] || { echo "$stderr$output"; return 1; }
	# A failed command stays DRY_RUN_FAILED, the refusal still listed.
	run --separate-stderr "$AIRLOCK" dryrun --json -- sh -c 'chmod u+s f'
	[ "$status" -eq 1 ] && [ "$(dv)" = DRY_RUN_FAILED ] && refused fchmodat
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	echo "$output"
	[ "$status" -eq 0 ]
	# Plain run is unchanged.
	al run -- sh -c 'chmod u+s f || true'
	[ "$status" -eq 0 ]
	no_setid_on_host
	[ "$(stat -c %a f)" = 644 ]
}

@test "permit: a dry run that ends PRIVILEGED_FILE through a refused set-id request is rejected" {
	echo x > f
	run --separate-stderr "$AIRLOCK" permit propose - <<<'{"argv":["sh","-c","chmod u+s f || true"],"reason":"r","expected_paths":[]}'
	PID=$(jq -r .permit <<<"$output")
	run --separate-stderr "$AIRLOCK" permit dryrun "$PID"
	[ "$status" -eq 35 ]
	jq -e '.state == "REJECTED"' "$AIRLOCK_STATE_DIR/permits/$PID.json"
	run --separate-stderr "$AIRLOCK" permit exec "$PID"
	[ "$status" -eq 21 ]
	[ "$(stat -c %a f)" = 644 ]
}

@test "dry run: a set-id file in the change set is named (PRIVILEGED_FILE), and apply refuses it" {
	mkdir host && cp /bin/true host/tool && chmod 4755 host/tool
	# A new name for the host's set-user-ID file: in the snapshot a new
	# set-user-ID object, which apply would move into the real tree.
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'ln host/tool tool2; echo x > plain'
	[ "$status" -eq 13 ]
	ID=$(jq -r .id <<<"$output")
	[ "$(jq -r .dryrun.verdict <<<"$output")" = PRIVILEGED_FILE ]
	# host/tool now shares its inode with tool2: a new hard link, carried
	# as an exchange of host/tool, so refused as well.
	jq -e '.dryrun.problems == [{"refused": "host/tool", "change": "modified", "reason": "setuid"},
		{"refused": "tool2", "change": "created", "reason": "setuid"}]' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "tool2") | .refused == "setuid" and .mode == "4755"' <<<"$output"
	jq -e '.dryrun.changes[] | select(.path == "plain") | has("refused") | not' <<<"$output"
	[ "$(jq -r .verdict "$AIRLOCK_STATE_DIR/dryruns/$ID/changeset.json")" = PRIVILEGED_FILE ]
	# The human view names it too.
	run --separate-stderr "$AIRLOCK" dryrun --expect '**' -- ln host/tool tool3
	[ "$status" -eq 13 ]
	[[ "$output" == *"PRIVILEGED_FILE"* ]]
	[[ "$output" == *"refused, setuid: tool3 (created)"* ]]
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "verdict is PRIVILEGED_FILE"
	[ ! -e tool2 ]
	[ ! -e plain ]
	no_setid_on_host
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" \
		"$AIRLOCK_STATE_DIR"/receipts/*.json
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "apply never installs a staged set-id object, even under a clean verdict" {
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'cp /bin/true newtool; mkdir d; cp /bin/true d/t'
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
	upper="$AIRLOCK_STATE_DIR/dryruns/$ID/upper"
	# What the dry run staged, changed after it (the filter refuses it inside).
	chmod 2755 "$upper/d/t"
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "d/t (setgid): apply never installs a set-id file"
	[ ! -e newtool ]
	[ ! -e d ]
	chmod 755 "$upper/d/t"
	chmod 4755 "$upper/newtool"
	al apply "$ID"
	[ "$status" -eq 21 ]
	one_error_line "newtool (setuid)"
	chmod 755 "$upper/newtool"
	if [ "$(id -u)" -eq 0 ]; then
		/usr/sbin/setcap cap_net_raw+ep "$upper/newtool"
		al apply "$ID"
		[ "$status" -eq 21 ]
		one_error_line "newtool (capability)"
		/usr/sbin/setcap -r "$upper/newtool"
	fi
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ -f newtool ]
	[ -f d/t ]
	no_setid_on_host
}

@test "dry run in a set-group-ID directory: the inherited bit of a new directory is no refusal" {
	mkdir -p host/shared && chmod 2775 host/shared
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' -- sh -c 'mkdir host/shared/sub && echo x > host/shared/sub/f'
	[ "$status" -eq 0 ]
	ID=$(jq -r .id <<<"$output")
	[ "$(jq -r .dryrun.verdict <<<"$output")" = DRY_RUN_OK ]
	al apply "$ID"
	[ "$status" -eq 0 ]
	[ -f host/shared/sub/f ]
	[ -z "$(find host -type f -perm /6000)" ]
}

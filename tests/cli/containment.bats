#!/usr/bin/env bats
# The quarantine against attacks (shared/research/sandbox-anchors.md, section
# 7). Each test runs one attack through `airlock run` with the default
# sandbox and asserts that it failed and that the host is unchanged. The
# suite runs as root in CI and again as uid 65534 (scripts/test.sh); the
# terminal attacks also run on a pty.
load helpers

# A private fake home with credentials, and a target outside the workspace.
setup() {
	setup_dirs
	export HOME="$TEST_DIR/home"
	mkdir -p "$HOME/.ssh" "$HOME/.aws" "$HOME/.config/gh"
	echo "PRIVATE-KEY-MATERIAL" > "$HOME/.ssh/id_ed25519"
	echo "aws_secret_access_key=AKIASECRET" > "$HOME/.aws/credentials"
	echo "oauth_token: gho_secret" > "$HOME/.config/gh/hosts.yml"
	echo "machine x password hunter2" > "$HOME/.netrc"
	echo "original" > "$TEST_DIR/outside.txt"
	# The tree under test may itself live below /tmp, which the quarantine
	# replaces: the probe runs from the workspace (the test dir holds the
	# state dir and HOME, refused as a workspace).
	PROBE="$WORK/probe"
	cp "$AIRLOCK_PROBE" "$PROBE"
}

# Processes a test expects gone, by pid: killed here if they are not.
LEFT=()

teardown() {
	for pid in "${LEFT[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	chmod -R u+rwX "$TEST_DIR" 2>/dev/null || true
	rm -rf "$TEST_DIR"
}

# Where each process (and each of its threads) is: state, kernel wait channel
# and, as root, the kernel stack. For a wait that did not end.
where_is() { # pid...
	local pid task
	for pid in "$@"; do
		[ -d "/proc/$pid" ] || { echo "$pid: gone"; continue; }
		echo "$pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		for task in /proc/"$pid"/task/*; do
			echo "  ${task##*/}: $(grep '^State:' "$task/status" 2>/dev/null) wchan=$(cat "$task/wchan" 2>/dev/null)"
			sed 's/^/    /' "$task/stack" 2>/dev/null || true
		done
	done
}

# True while the process exists and is not a zombie.
process_alive() {
	[ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# The probe's verdict: blocked (exit 0) and the seccomp denial recorded.
probe_blocked() { # mode, syscall name expected in denials ("" for none)
	al run -- "$PROBE" "$1"
	[ "$status" -eq 0 ] || { echo "probe $1: $(rq .stdout)"; return 1; }
	[[ "$(rq .stdout)" == blocked:* ]]
	[[ "$(rq .stdout)" != *ESCAPED* ]]
	if [ -n "$2" ]; then
		rq ".sandbox.denials | map(.syscall) | index(\"$2\") != null" | grep -qx true
	fi
}

@test "the receipt's manifest lists every layer actually enforced" {
	al run -- true
	[ "$status" -eq 0 ]
	rq '.sandbox.enforced.namespaces | sort | join(",")' | grep -qx 'cgroup,ipc,mount,net,pid,user,uts'
	[ "$(rq .sandbox.enforced.network)" = loopback ]
	[ "$(rq .sandbox.enforced.capabilities)" = none ]
	[ "$(rq .sandbox.enforced.no_new_privs)" = true ]
	[ "$(rq .sandbox.enforced.landlock.abi)" -ge 1 ]
	[ "$(rq .sandbox.enforced.seccomp.rules)" -ge 40 ]
	[ "$(rq .sandbox.enforced.workspace)" = "$(pwd -P)" ]
	rq '.sandbox.enforced.hidden | index("'"$HOME"'/.ssh") != null' | grep -qx true
	[ "$(rq .sandbox.enforced.limits.processes)" -gt 0 ]
}

@test "1 read ssh keys: hidden" {
	al run -- cat "$HOME/.ssh/id_ed25519"
	[ "$status" -ne 0 ]
	[[ "$(rq .stdout)" != *PRIVATE-KEY* ]]
}

@test "2 read cloud and gh credentials and .netrc: hidden" {
	al run -- sh -c "cat '$HOME/.aws/credentials' '$HOME/.config/gh/hosts.yml' '$HOME/.netrc'"
	[ "$status" -ne 0 ]
	! grep -rq 'AKIASECRET\|gho_secret\|hunter2' "$AIRLOCK_STATE_DIR/receipts" || false
}

@test "3 secrets in the environment: not passed" {
	export GITHUB_TOKEN=ghp_x AWS_SECRET_ACCESS_KEY=y MY_API_KEY=z
	al run -- sh -c 'env | grep -i -E "token|secret|key" || echo none'
	[ "$(rq .stdout)" = none ]
}

@test "4 write outside the workspace: the host file is unchanged" {
	al run -- sh -c "echo pwned > '$TEST_DIR/outside.txt'; echo pwned > /etc/airlock-pwned"
	[ "$status" -ne 0 ]
	[ "$(cat "$TEST_DIR/outside.txt")" = original ]
	[ ! -e /etc/airlock-pwned ]
}

@test "5 write into the caller's home: read-only" {
	al run -- sh -c "echo pwned > '$HOME/.bashrc'"
	[ "$status" -ne 0 ]
	[ ! -e "$HOME/.bashrc" ]
}

@test "6 write through a symlink planted in the workspace" {
	ln -s "$TEST_DIR/outside.txt" link
	ln -s /etc/passwd passwd-link
	al run -- sh -c 'echo pwned > link; echo pwned >> passwd-link'
	[ "$status" -ne 0 ]
	[ "$(cat "$TEST_DIR/outside.txt")" = original ]
	! grep -q pwned /etc/passwd || false
}

@test "7 hard-link an outside file into the workspace" {
	al run -- ln "$TEST_DIR/outside.txt" stolen
	[ "$status" -ne 0 ]
	[ ! -e stolen ]
}

@test "8 remount / read-write (also as root)" {
	probe_blocked remount mount
	al run -- sh -c 'mount -o remount,rw / 2>&1; touch /usr/airlock-pwned'
	[ "$status" -ne 0 ]
	[ ! -e /usr/airlock-pwned ]
}

@test "9 mount a filesystem" {
	probe_blocked mount mount
}

@test "10 the new mount API (open_tree, fsopen)" {
	probe_blocked open_tree open_tree
	probe_blocked fsopen fsopen
}

@test "11 nested user namespace" {
	probe_blocked unshare unshare
	probe_blocked clone_newns clone
}

@test "12 join a namespace with setns" {
	probe_blocked setns setns
}

@test "13 ptrace another process" {
	probe_blocked ptrace ptrace
}

@test "14 read another process's memory (process_vm_readv)" {
	probe_blocked process_vm_readv process_vm_readv
}

@test "15 kernel keyrings" {
	probe_blocked keyctl keyctl
	probe_blocked add_key add_key
}

@test "16 eBPF and perf events" {
	probe_blocked bpf bpf
	probe_blocked perf_event_open perf_event_open
}

@test "17 userfaultfd and io_uring" {
	probe_blocked userfaultfd userfaultfd
	probe_blocked io_uring io_uring_setup
}

@test "18 kexec and kernel modules" {
	probe_blocked kexec kexec_load
	probe_blocked init_module init_module
}

@test "19 TIOCSTI, also with high bits in the request, and TIOCLINUX" {
	probe_blocked tiocsti ioctl
	probe_blocked tiocsti_high ioctl
	probe_blocked tioclinux ioctl
}

@test "20 TIOCSTI on a pty: nothing reaches the caller's terminal" {
	command -v script >/dev/null || skip "needs script(1)"
	cat > inject.sh <<SH
"$AIRLOCK" run -- "$PROBE" tiocsti >/dev/null 2>&1
# whatever was pushed into this terminal would be read and run here
if read -t 1 line; then eval "\$line"; fi
SH
	script -qec "sh inject.sh" /dev/null </dev/null >/dev/null 2>&1 || true
	[ ! -e x ]
	[ ! -e PWNED ]
	run jq -s 'map(.sandbox.denials[]?.syscall) | index("ioctl") != null' "$AIRLOCK_STATE_DIR"/receipts/*.json
	[ "$output" = true ]
}

@test "21 a foreign architecture (32-bit int 0x80) is killed by seccomp" {
	# Where the kernel itself refuses int 0x80 (SIGSEGV outside any sandbox,
	# as on the development VM), there is nothing for the filter to catch.
	"$PROBE" int80 >/dev/null 2>&1 && host_status=0 || host_status=$?
	[ "$host_status" -ne 139 ] || skip "int 0x80 faults on this kernel even outside the sandbox"
	al run -- "$PROBE" int80
	[[ "$(rq .stdout)" != *ESCAPED* ]]
	[ "$(rq .status)" = signaled ]
	[ "$(rq .sandbox.killed_by)" = seccomp ]
}

@test "22 chroot, sethostname, mknod" {
	probe_blocked chroot chroot
	probe_blocked sethostname ""
	probe_blocked mknod ""
}

@test "23 no capabilities, no_new_privs, even when root calls" {
	al run -- grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
	[ "$(rq '.stdout' | grep -c ':[[:space:]]*0000000000000000$')" -eq 5 ]
	rq .stdout | grep -q 'NoNewPrivs:[[:space:]]*1'
	rq .stdout | grep -q 'Seccomp:[[:space:]]*2'
}

@test "24 host processes are invisible and cannot be signaled" {
	sleep 37.5 &
	host_pid=$!
	al run -- sh -c "kill -TERM $host_pid; kill -9 -1; ps -e | wc -l"
	kill -0 "$host_pid"
	kill "$host_pid"
	[ "$(rq '.stdout' | grep -cv '^$' || true)" -ge 0 ]
	al run -- sh -c 'ls /proc | grep -c "^[0-9]"'
	[ "$(rq .stdout)" -le 4 ]
}

@test "25 TCP to a host service on loopback: unreachable" {
	port=$((20000 + RANDOM % 20000))
	timeout 10 python3 -c "
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(1); s.settimeout(8)
try:
    s.accept(); open('$TEST_DIR/tcp-reached', 'w').write('yes')
except socket.timeout:
    pass
" &
	listener=$!
	sleep 0.3
	al run -- bash -c "echo hi > /dev/tcp/127.0.0.1/$port"
	[ "$status" -ne 0 ]
	kill "$listener" 2>/dev/null || true
	wait "$listener" 2>/dev/null || true
	[ ! -e "$TEST_DIR/tcp-reached" ]
}

@test "26 UDP (DNS-style) to a host service: never arrives" {
	port=$((20000 + RANDOM % 20000))
	timeout 10 python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', $port)); s.settimeout(3)
try:
    s.recvfrom(100); open('$TEST_DIR/udp-reached', 'w').write('yes')
except socket.timeout:
    pass
" &
	listener=$!
	sleep 0.3
	al run -- bash -c "echo query > /dev/udp/127.0.0.1/$port"
	wait "$listener" || true
	[ ! -e "$TEST_DIR/udp-reached" ]
}

@test "27 only loopback exists in the network namespace" {
	al run -- cat /proc/net/dev
	[ "$(rq '.stdout' | grep -c ':')" -eq 1 ]
	rq .stdout | grep -q 'lo:'
}

@test "28 host Unix sockets: path and abstract" {
	timeout 10 python3 -c "
import socket
a = socket.socket(socket.AF_UNIX); a.bind('\0airlock-test-$$'); a.listen(1)
p = socket.socket(socket.AF_UNIX); p.bind('$TEST_DIR/host.sock'); p.listen(1)
a.settimeout(4); p.settimeout(0.1)
for s in (a, p):
    try:
        s.accept(); open('$TEST_DIR/unix-reached', 'w').write('yes')
    except socket.timeout:
        pass
" &
	listener=$!
	sleep 0.3
	al run -- python3 -c "
import socket
for addr in ('\0airlock-test-$$', '$TEST_DIR/host.sock'):
    try:
        socket.socket(socket.AF_UNIX).connect(addr); print('ESCAPED', addr)
    except OSError as e:
        print('blocked', e.errno)
"
	wait "$listener" || true
	[ ! -e "$TEST_DIR/unix-reached" ]
	! rq .stdout | grep -q ESCAPED || false
}

@test "29 fork bomb: the process limit holds and nothing is left" {
	printf '{"schema": "airlock.policy/1", "limits": {"processes": 64}}' > "$TEST_DIR/p.json"
	al run --policy "$TEST_DIR/p.json" --timeout 5s -- bash -c ":(){ :|:& };:; sleep 1 # forkbomb-$$"
	[ "$(rq .sandbox.enforced.limits.processes)" -eq 64 ]
	if rq '.sandbox.enforced.cgroup_controllers | index("pids") != null' | grep -qx true; then
		rq '.sandbox.limits_hit | index("processes") != null' | grep -qx true
	fi
	sleep 0.5
	! pgrep -f "forkbomb-$$" >/dev/null || false
	[ "$(rq .status)" = timeout ] || [ "$(rq .status)" = exited ]
}

@test "30 memory bomb: the memory limit stops it, and says which" {
	printf '{"schema": "airlock.policy/1", "limits": {"memory_bytes": 67108864}}' > "$TEST_DIR/p.json"
	al run --policy "$TEST_DIR/p.json" --timeout 20s -- python3 -c '
x = []
while True:
    x.append(bytearray(1 << 20))'
	[ "$status" -ne 0 ]
	if rq '.sandbox.enforced.cgroup_controllers | index("memory") != null' | grep -qx true; then
		# a memory cgroup (root on this host): the OOM killer, named
		[ "$(rq .sandbox.killed_by)" = memory ]
		rq '.sandbox.limits_hit | index("memory") != null' | grep -qx true
	else
		# RLIMIT_AS (unprivileged): the allocation fails
		rq .stderr | grep -q MemoryError
	fi
}

@test "31 disk fill in /tmp: the tmpfs cap stops it" {
	al run --timeout 20s -- sh -c 'head -c 400M /dev/zero > /tmp/fill'
	[ "$status" -ne 0 ]
	rq .stderr | grep -q 'No space left'
}

@test "32 a large file in the workspace: the file size limit kills it" {
	printf '{"schema": "airlock.policy/1", "limits": {"file_size_bytes": 1048576}}' > "$TEST_DIR/p.json"
	al run --policy "$TEST_DIR/p.json" -- sh -c 'head -c 2M /dev/zero > big'
	[ "$status" -ne 0 ]
	[ "$(stat -c %s big)" -le 1048576 ]
}

@test "33 CPU spinning: the CPU limit kills it, and says so" {
	printf '{"schema": "airlock.policy/1", "limits": {"cpu_seconds": 1}}' > "$TEST_DIR/p.json"
	al run --policy "$TEST_DIR/p.json" --timeout 20s -- sh -c 'while :; do :; done'
	[ "$(rq .status)" = signaled ]
	[ "$(rq .sandbox.killed_by)" = cpu ]
}

@test "34 output flood: capture stays bounded and the run ends" {
	al run --timeout 1s -- yes
	[ "$status" -eq 124 ]
	[ "$(rq .output.stdout.truncated)" = true ]
	[ "$(rq '.stdout | length')" -lt 9000 ]
	[ "$(rq .output.stdout.bytes)" -gt 100000 ]
}

@test "35 timeout evasion: TERM ignored, setsid, double fork" {
	al run --timeout 500ms --kill-after 500ms -- sh -c "trap '' TERM; setsid sleep 38.5$$ & (sleep 38.5$$ &); while :; do sleep 0.1; done"
	[ "$status" -eq 124 ]
	no_process_with "sleep 38.5$$"
}

@test "36 a background child holding stdout after exit" {
	al run -- sh -c "sleep 39.5$$ & echo done"
	[ "$status" -eq 0 ]
	[ "$(rq .descendants_killed)" -ge 1 ]
	no_process_with "sleep 39.5$$"
}

@test "37 tamper with receipts: the state dir is invisible" {
	"$AIRLOCK" run -- true >/dev/null
	before=$(sha256sum "$AIRLOCK_STATE_DIR/receipts/1.json")
	al run -- sh -c "ls '$AIRLOCK_STATE_DIR'; rm -f '$AIRLOCK_STATE_DIR/receipts/1.json'; echo x > '$AIRLOCK_STATE_DIR/receipts/1.json'"
	[ "$status" -ne 0 ]
	[ "$(sha256sum "$AIRLOCK_STATE_DIR/receipts/1.json")" = "$before" ]
}

@test "38 a state dir inside the workspace: refused, so the command cannot swap it" {
	export AIRLOCK_STATE_DIR="$WORK/.state"
	al run -- sh -c 'mv .state .old && mkdir -p .state/receipts && touch ran'
	[ "$status" -eq 125 ]
	[ "$(rq .status)" = invalid ]
	[[ "$(rq .error)" == *"holds airlock's state directory"* ]]
	[ ! -e ran ]
	[ ! -e .old ]
	al run --allow-workspace=home,system -- true
	[ "$status" -eq 125 ]
	[ "$(rq '.sandbox.allow_workspace | join(",")')" = home,system ]
}

@test "39 .git/hooks and .git/config stay read-only in the workspace" {
	mkdir -p .git/hooks
	echo '[core]' > .git/config
	al run -- sh -c 'echo "touch PWNED" > .git/hooks/pre-commit; echo evil >> .git/config; echo ok > allowed.txt'
	[ ! -e .git/hooks/pre-commit ]
	[ "$(cat .git/config)" = '[core]' ]
	[ "$(cat allowed.txt)" = ok ]
	# The policy's four, then each agent host's configuration (core/agents/agenthost.c).
	[ "$(rq --arg w "$WORK/" '.sandbox.enforced.read_only[:4] | map(ltrimstr($w)) | join(" ")')" = ".git/hooks .git/config .airlock .envrc" ]
	rq '.sandbox.enforced.read_only[]' | grep -qx "$WORK/.claude"
}

@test "40 kernel interfaces: sysrq, /proc/sys, /sys, block devices" {
	al run -- sh -c 'echo b > /proc/sysrq-trigger; echo 1 > /proc/sys/kernel/sysrq; echo x > /sys/kernel/uevent_helper; ls /dev/sda /dev/kmsg'
	[ "$status" -ne 0 ]
	rq .stdout | grep -vq 'sda'
}

@test "41 cross-run persistence through /tmp" {
	al run -- sh -c 'echo planted > /tmp/persist'
	[ "$status" -eq 0 ]
	al run -- cat /tmp/persist
	[ "$status" -ne 0 ]
	[ ! -e /tmp/persist ]
}

@test "42 argv injection is executed verbatim, never by a shell" {
	al run -- echo '$(touch PWNED)' ';' 'touch PWNED2' '&&' '`id`'
	[ "$status" -eq 0 ]
	[ ! -e PWNED ]
	[ ! -e PWNED2 ]
	[ "$(rq .stdout)" = '$(touch PWNED) ; touch PWNED2 && `id`' ]
}

@test "43 an inherited descriptor does not reach the command" {
	echo secret-in-fd > "$TEST_DIR/fdsecret"
	al run -- sh -c 'cat <&7; ls /proc/self/fd' 7<"$TEST_DIR/fdsecret"
	[[ "$(rq .stdout)" != *secret-in-fd* ]]
}

@test "44 the workspace stays writable, and only it" {
	al run -- sh -c 'mkdir -p a/b && echo data > a/b/c && mv a/b/c a/d && rm -r a/b'
	[ "$status" -eq 0 ]
	[ "$(cat a/d)" = data ]
}

@test "45 --net host is an explicit, recorded choice" {
	al run --net host -- cat /proc/net/dev
	[ "$status" -eq 0 ]
	[ "$(rq .sandbox.enforced.network)" = host ]
	rq '.sandbox.enforced.namespaces | index("net") == null' | grep -qx true
}

@test "46 --sandbox=none is recorded as such" {
	al run --sandbox=none -- true
	[ "$(rq .sandbox.profile)" = none ]
	[ "$(rq .sandbox.enforced)" = null ]
}

@test "47 an exec failure in the quarantine is always reported as one (regression: a race read it as exit 125)" {
	printf 'echo hi\n' > noshebang.sh
	chmod 755 noshebang.sh
	for i in $(seq 40); do
		run "$AIRLOCK" run -- ./noshebang.sh
		[ "$status" -eq 126 ] || { echo "attempt $i: status $status"; return 1; }
	done
}

@test "48 airlock doctor reports every layer working here" {
	run "$AIRLOCK" doctor
	[ "$status" -eq 0 ]
	for layer in "user namespaces" "fresh /proc" "landlock" "quarantined run"; do
		grep -q "^ok  *$layer" <<<"$output"
	done
	[[ "${lines[-1]}" == "the quarantine works on this host" ]]
}

@test "49 a workspace below /run stays writable while /run itself is empty and read-only" {
	[ "$(id -u)" -eq 0 ] || skip "only root can make a directory in /run"
	ws=$(mktemp -d /run/airlock-ws.XXXXXX)
	run "$AIRLOCK" run --workspace "$ws" --cwd "$ws" -- sh -c 'echo ok > f; touch /run/x; ls /run'
	output_line=$(cat "$ws/f")
	rm -rf "$ws"
	[ "$output_line" = ok ]
	[ ! -e /run/x ]
}

@test "50 renaming .git away does not let a planted hook reach the host" {
	mkdir -p .git/hooks
	echo '[core]' > .git/config
	al run -- sh -c 'mv .git .gitx; mkdir -p .git/hooks; echo "touch PWNED" > .git/hooks/pre-commit; mv .git/hooks .git/h2; rmdir .git/hooks'
	[ ! -e .gitx ]
	[ ! -e .git/h2 ]
	[ -d .git/hooks ]
	[ -z "$(ls -A .git/hooks)" ]
	[ "$(cat .git/config)" = '[core]' ]
}

@test "51 protected paths that do not exist yet get nothing on the host; what the command makes there is moved aside" {
	mkdir fresh && cd fresh # $WORK holds the probe
	al run -- sh -c 'ls -A; echo evil > .envrc; mkdir -p .airlock/x; echo ok > allowed.txt'
	[ "$status" -eq 14 ]
	[ "$(rq .stdout)" = "" ]
	[ "$(cat allowed.txt)" = ok ]
	[ ! -e .envrc ]
	[ ! -e .airlock ]
	[ ! -e .git ]
	[ "$(cat "$AIRLOCK_STATE_DIR/quarantine/$(receipt_id)/.envrc")" = evil ]
	[ -d "$AIRLOCK_STATE_DIR/quarantine/$(receipt_id)/.airlock/x" ]
	rq '.sandbox.enforced.read_only | join(" ")' | grep -q '\.envrc'
	rq '.sandbox.enforced.read_only | join(" ")' | grep -q '\.airlock'
	mkdir .git
	al run -- sh -c 'mkdir -p .git/hooks; echo "touch PWNED" > .git/hooks/pre-commit; echo evil > .git/config; mv .git .gitx'
	[ "$status" -ne 0 ]
	[ -d .git ]
	[ "$(ls -A .git)" = hooks ]
	[ -z "$(ls -A .git/hooks)" ]
	[ ! -e .gitx ]
	rq '.host_code.moved_aside[].path' | sort | tr '\n' ' ' | grep -qx '.git/config .git/hooks/pre-commit '
	rq '.sandbox.enforced.read_only | join(" ")' | grep -q '\.git/hooks'
}

@test "52 a protected path that is a symlink pins the link and protects its target" {
	mkdir -p .git tools/hooks
	ln -s ../tools/hooks .git/hooks
	al run -- sh -c 'echo "touch PWNED" > .git/hooks/pre-commit; echo "touch PWNED" > tools/hooks/pre-commit; rm .git/hooks; mv .git/hooks .git/h2'
	[ -L .git/hooks ]
	[ "$(readlink .git/hooks)" = ../tools/hooks ]
	[ ! -e tools/hooks/pre-commit ]
	[ ! -e .git/h2 ]
}

@test "53 concurrent runs each move aside what they made at a protected path" {
	"$AIRLOCK" run --timeout 20s -- sh -c 'sleep 2; echo first > .envrc' >/dev/null &
	sleep 0.5
	al run -- sh -c '[ ! -e .envrc ] && echo second > .envrc'
	[ "$status" -eq 14 ]
	[ "$(cat "$AIRLOCK_STATE_DIR/quarantine/$(receipt_id)/.envrc")" = second ]
	wait
	[ ! -e .envrc ]
	[ "$(cat "$AIRLOCK_STATE_DIR"/quarantine/*/.envrc | sort | tr '\n' ' ')" = "first second " ]
}

@test "54 the quarantine's init is out of reach: no forged exit status through /proc/1/fd, no state dir, no memory" {
	# Regression: init was dumpable, so the command could open its
	# descriptors through /proc/1/fd, write a forged status on the pipe to
	# the supervisor and be recorded as a success (which closes a failure).
	al run -- sh -c 'trap "" PIPE
		for f in /proc/1/fd/*; do
			case $(readlink "$f") in pipe*) head -c 64 /dev/zero > "$f" 2>/dev/null && echo "ESCAPED wrote $f";; esac
		done
		for f in /proc/1/fd/*; do readlink "$f" >/dev/null 2>&1 && echo "ESCAPED $f readable"; done
		ls /proc/1/fd/3/ 2>/dev/null | grep -q . && echo "ESCAPED state dir"
		echo x 2>/dev/null > /proc/1/mem && echo "ESCAPED mem"
		exit 3'
	[ "$status" -eq 3 ]
	[ "$(rq .exit_code)" = 3 ]
	[ "$(rq .match_expected)" = false ]
	[[ "$(rq .stdout)" != *ESCAPED* ]]
}

@test "55 memory is limited once: by the run's memory cgroup where there is one, else by RLIMIT_AS" {
	al run -- sh -c 'ulimit -v'
	[ "$status" -eq 0 ]
	if rq '.sandbox.enforced.cgroup_controllers | index("memory") != null' | grep -qx true; then
		[ "$(rq .stdout)" = unlimited ]
	else
		[ "$(rq .stdout)" = "$(( $(rq .sandbox.enforced.limits_partial.memory_bytes) / 1024 ))" ]
	fi
}

@test "57 socket families beyond Unix, IPv4, IPv6 and netlink route: refused (vsock ignores network namespaces) and recorded" {
	al run -- "$PROBE" socket_families
	[ "$status" -eq 0 ] || { echo "$(rq .stdout)"; return 1; }
	! rq .stdout | grep -q ESCAPED || false
	# each refusal is the filter's, whatever the kernel offers
	[ "$(rq .stdout | grep -c EAFNOSUPPORT)" -ge 8 ] || { rq .stdout; return 1; }
	rq '.sandbox.denials | map(select(.syscall == "socket")) | .[0].count' | grep -qx 9
	rq '.sandbox.denials | map(.syscall) | index("socketpair") != null' | grep -qx true
	al run -- "$PROBE" socket_allowed
	[ "$(rq .stdout)" = ok ]
	[ "$(rq '.sandbox.denials | length')" -eq 0 ]
}

@test "58 memory held in a memfd: a limit RLIMIT_AS cannot hold is not claimed" {
	printf '{"schema": "airlock.policy/1", "limits": {"memory_bytes": 268435456}}' > "$TEST_DIR/p.json"
	al run --policy "$TEST_DIR/p.json" --timeout 30s -- python3 -c '
import os
fd = os.memfd_create("hog")
chunk = bytes(1 << 20)
for i in range(768):
    os.write(fd, chunk)
print("held", os.fstat(fd).st_size >> 20)'
	[ "$(rq .sandbox.enforced.limit_mechanisms.memory_bytes.mechanism)" != null ] || return 1
	if rq '.sandbox.enforced.cgroup_controllers | index("memory") != null' | grep -qx true; then
		# the memory cgroup counts shared memory: the hog does not get its 768 MiB
		[ "$(rq .stdout)" != "held 768" ]
		[ "$(rq .sandbox.killed_by)" = memory ]
		[ "$(rq .sandbox.enforced.limits.memory_bytes)" -eq 268435456 ]
		[ "$(rq .sandbox.enforced.limit_mechanisms.memory_bytes.mechanism)" = "cgroup-v1 memory" ]
		[ "$(rq .sandbox.enforced.limit_mechanisms.memory_bytes.scope)" = run ]
	else
		# RLIMIT_AS bounds each process's address space, not memory: the
		# hog holds 768 MiB, and the receipt does not claim the limit
		[ "$(rq .stdout)" = "held 768" ]
		[ "$(rq .sandbox.enforced.limits.memory_bytes)" = null ]
		[ "$(rq .sandbox.enforced.limits_partial.memory_bytes)" -eq 268435456 ]
		[ "$(rq .sandbox.enforced.limit_mechanisms.memory_bytes.mechanism)" = RLIMIT_AS ]
		[ "$(rq .sandbox.enforced.limit_mechanisms.memory_bytes.scope)" = process ]
	fi
	# every limit named in the manifest says what held it
	[ "$(rq '(.sandbox.enforced.limits + .sandbox.enforced.limits_partial | keys) == (.sandbox.enforced.limit_mechanisms | keys)')" = true ]
	run "$BATS_TEST_DIRNAME/validate-receipt.py" "$BATS_TEST_DIRNAME/../../docs/receipt.schema.json" "$(receipt)"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "56 init does not outlive a supervisor killed before init armed PR_SET_PDEATHSIG (regression: holding the supervisor's pipe ends, it saw no hang-up and waited for go forever)" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -qq -o /dev/null -e inject=getpid:delay_enter=1 true 2>/dev/null ||
		skip "strace cannot trace or inject delays here"
	# strace holds the window open, with no hook in airlock: the supervisor
	# stops on its way out of clone3 (for sup_us), init on entering its
	# first prctl, PR_SET_PDEATHSIG (for init_us; injections count per
	# process, so the supervisor's own first prctl, the subreaper's before
	# clone3, waits as long). Killed in there, the supervisor never says go;
	# strace holds its exit too until its delay ends, which must come
	# before init arms the signal: only then is init orphaned unarmed.
	local sup_us=1500000 init_us=4000000 marker="7.$$$RANDOM" log="$TEST_DIR/strace.log"
	strace -f -q -ttt -o "$log" -e trace=prctl,clone3 -e signal=none \
		-e inject=prctl:delay_enter=$init_us:when=1 -e inject=clone3:delay_exit=$sup_us \
		"$AIRLOCK" run -- sleep "$marker" >/dev/null 2>&1 &
	local tracer=$! supervisor="" init="" pid
	LEFT+=("$tracer")
	# Until init shows, however long a loaded machine takes to start
	# airlock (the whole suite's two lanes: seen over 10 s); a wait, not a
	# timed assertion, so a generous bound.
	local until=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$until" ]; do
		[ -n "$supervisor" ] || supervisor=$(pgrep -P "$tracer" || true)
		if [ -n "$supervisor" ]; then
			for pid in $(pgrep -P "$supervisor" || true); do
				# init: the child that is pid 1 of a namespace of its own
				grep -qE '^NSpid:.*[[:space:]]1$' "/proc/$pid/status" 2>/dev/null && init=$pid
			done
		fi
		[ -n "$init" ] && break
		sleep 0.05
	done
	[ -n "$init" ] || {
		echo "init never started"
		cat "$log"
		where_is "$tracer" "$supervisor"
		return 1
	}
	LEFT+=("$init")
	kill -KILL "$supervisor"
	local killed_at=${EPOCHREALTIME/,/.} # after the kill, never before
	while process_alive "$supervisor"; do
		sleep 0.05
	done
	local gone_at=${EPOCHREALTIME/,/.} # after its exit, never before
	local deadline=$((SECONDS + init_us / 1000000 + 5))
	while process_alive "$init" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	# Inside the window: killed before clone3 returned, gone before init's
	# prctl did (strace stamps each call as it enters; the delays follow).
	awk -v s="$supervisor" -v i="$init" -v k="$killed_at" -v g="$gone_at" \
		-v ds="$sup_us" -v di="$init_us" '
		$1 == s && $3 ~ /^clone3\(/ && !c { c = $2 }
		$1 == i && $3 ~ /^prctl\(PR_SET_PDEATHSIG/ && !a { a = $2 }
		END {
			if (!c || !a || k >= c + ds / 1e6 || g >= a + di / 1e6) {
				print "missed the window: clone3 at " c ", killed at " k ", gone at " g ", prctl at " a
				exit 1
			}
		}' "$log"
	if process_alive "$init"; then
		echo "init $init outlived its supervisor:"
		grep "^$init " "$log" | tail -3
		return 1
	fi
	wait "$tracer" || true
	no_process_with "$marker"
}

@test "59 a directory swapped for a symlink between the plan and the mounts does not carry a read-only path's mount away (the mounts resolve no symlink the plan did not see)" {
	# AIRLOCK_TEST_AFTER_PLAN (a test build's hook, src/sandbox/supervise.c)
	# stands in for a concurrent writer, another run's command: after the
	# plan saw .git as a directory, .git becomes an absolute symlink to its
	# new name. Followed, the read-only mount of .git/hooks would land on
	# the host's path outside the new root and leave the hooks writable.
	# The workspace lies outside /tmp, where the new root is staged (below
	# it the host's path would lead back into the staged tree).
	[ -d /var/tmp ] && [ -w /var/tmp ] || skip "no writable /var/tmp"
	local ws
	ws=$(mktemp -d /var/tmp/airlock-59.XXXXXX)
	cd "$ws"
	mkdir -p .git/hooks
	echo '[core]' > .git/config
	local marker="$TEST_DIR/swapped"
	AIRLOCK_TEST_AFTER_PLAN="mv '$ws/.git' '$ws/real' && ln -s '$ws/real' '$ws/.git' && touch '$marker'" \
		al run -- sh -c 'echo "touch PWNED" > real/hooks/pre-commit; echo evil >> real/config'
	local planted=no config
	[ ! -e real/hooks/pre-commit ] || planted=yes
	config=$(cat real/config)
	cd "$WORK"
	rm -rf "$ws"
	[ -e "$marker" ] || skip "not a test build (-Dtest_hooks=true)"
	[ "$planted" = no ]
	[ "$config" = '[core]' ]
}

# Whether a process whose command line holds $1 is left, waiting up to 5 s
# for the kernel to finish a kill (a wait, not a timed assertion).
gone_within() { # marker
	local until=$((SECONDS + 5))
	while pgrep -f -- "$1" >/dev/null && [ "$SECONDS" -lt "$until" ]; do
		sleep 0.1
	done
	no_process_with "$1"
}

@test "60 the supervisor killed at any moment of the start leaves no process behind" {
	# init is a fork of airlock: its command line is the supervisor's, so
	# the marker finds init, the command and the supervisor alike.
	local marker="60.$$$RANDOM" i pid
	# After the plan, before init is cloned (a test build's hook; in a
	# release build the run just goes on and is killed below).
	AIRLOCK_TEST_AFTER_PLAN='kill -KILL $PPID' "$AIRLOCK" run -- sleep "$marker" >/dev/null 2>&1 || true
	gone_within "$marker"
	# Spread over the policy, the plan, init's set-up and the command.
	for i in 0 1 2 3 4 5 6 7 8 9 10 12 14 16 20 25 30 40 60; do
		"$AIRLOCK" run -- sleep "$marker" >/dev/null 2>&1 &
		pid=$!
		sleep "$(printf '0.%03d' "$i")"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	gone_within "$marker"
}

@test "61 a run refused (no such command) leaves no process, and the next run is whole" {
	local marker="61.$$$RANDOM"
	run -127 --separate-stderr "$AIRLOCK" run -- "./no-such-command-$marker"
	[ "$(rq .status)" != exited ]
	gone_within "$marker"
	# the next run is whole
	al run -- sh -c 'echo ok'
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = ok ]
}

@test "62 the command runs on the caller's CPUs" {
	local mine
	mine=$(grep Cpus_allowed_list /proc/self/status)
	al run -- grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ]
	[ "$(rq .stdout)" = "$mine" ]
	command -v taskset >/dev/null || return 0
	[ "$(nproc)" -gt 1 ] || return 0
	run --separate-stderr taskset -c 0 "$AIRLOCK" run -- grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" == *$'\t'0 ]]
}

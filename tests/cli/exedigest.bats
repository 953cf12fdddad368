#!/usr/bin/env bats
# The digest cache of large executables (core/store/exedigest.h,
# docs/state-dir.md cache/exe-digests): a receipt's exec_identity.sha256 is
# always the digest of the bytes the file had, whether it was read or taken
# from the cache; the cache is read only where that is sound.

load helpers

# The state directory's file system keeps times as the key needs (the
# cache is used on ext2/3/4 only).
cacheable_fs() {
	case "$(stat -f -c %T "$1")" in
	ext2/ext3) return 0 ;;
	*) return 1 ;;
	esac
}

setup() {
	setup_dirs
	cacheable_fs "$WORK" || skip "$(stat -f -c %T "$WORK") keeps no cache"
}

# An executable script of about $2 MiB (default 3) at $1: it prints its
# first argument, then a comment of random bytes (base64) that sh never
# reads.
make_exe() {
	local path=$1 mib=${2:-3}
	{
		printf '#!/bin/sh\necho "ran $1"\nexit 0\n# '
		head -c $((mib * 768 * 1024)) /dev/urandom | base64 -w 0
		printf '\n'
	} >"$path.new"
	chmod 755 "$path.new"
	# Written back, as a program installed a while ago: a file with dirty
	# pages is not stored (its own test below).
	sync "$path.new"
	mv -f "$path.new" "$path"
}

# Lets the files of the working directory settle: their pages written
# back (a file with dirty pages is not stored) and their last change past
# the cache's 2 s margin.
settle() {
	local f
	for f in ./*; do
		[ ! -f "$f" ] || sync "$f"
	done
	sleep 2.2
}

# Runs $1 through airlock (no quarantine) and checks the receipt's digest
# against sha256sum of the file as it is now.
run_check() {
	al run --sandbox=none -- "$1" x
	[ "$status" -eq 0 ]
	[ "$(rq .exec_identity.sha256)" = "$(sha256sum <"$1" | cut -d' ' -f1)" ] || {
		echo "step ${step:-}: receipt $(rq .exec_identity.sha256), file $(sha256sum <"$1")" >&2
		return 1
	}
	[ "$(rq .exec_identity.size)" = "$(stat -c %s "$1")" ]
}

# The bytes airlock itself (not the command: no -f) read while running $1.
bytes_read() {
	traced -o "$TEST_DIR/strace" -e trace=read,pread64 -e signal=none \
		"$AIRLOCK" run --sandbox=none -- "$1" x >/dev/null 2>&1
	awk -F'= ' '/^(read|pread64)\(/ { s += $NF } END { print s + 0 }' "$TEST_DIR/strace"
}

cache_file() {
	echo "$AIRLOCK_STATE_DIR/cache/exe-digests"
}

# The cache file is whole: the magic, then 48 + 88n + 32 bytes.
cache_whole() {
	local f size
	f=$(cache_file)
	[ -f "$f" ] && [ ! -L "$f" ]
	[ "$(head -c 8 "$f")" = AIRLEXD1 ]
	size=$(stat -c %s "$f")
	[ $(((size - 80) % 88)) -eq 0 ] && [ "$size" -ge 80 ] && [ "$size" -le 5712 ]
}

@test "a second run of an unchanged large executable reads none of its bytes" {
	command -v strace >/dev/null || skip "no strace"
	make_exe ./exe 4
	settle
	first=$(bytes_read ./exe)
	second=$(bytes_read ./exe)
	echo "read $first, then $second" >&2
	[ "$first" -ge $((4 * 1024 * 1024)) ]
	[ "$second" -lt $((1024 * 1024)) ]
	cache_whole
	run_check ./exe
}

@test "a small executable never touches the cache: the same system calls as ever" {
	command -v strace >/dev/null || skip "no strace"
	printf '#!/bin/sh\nexit 0\n' >small
	head -c 200000 /dev/zero | tr '\0' '#' >>small
	chmod 755 small
	settle
	for _ in 1 2; do
		traced -o "$TEST_DIR/strace" -e trace=%file,fstatfs,sync_file_range,%desc \
			"$AIRLOCK" run --sandbox=none -- ./small >/dev/null
		run ! grep -E 'exe-digests|"cache"|fstatfs|sync_file_range' "$TEST_DIR/strace"
	done
	[ ! -e "$AIRLOCK_STATE_DIR/cache" ]
	run_check ./small
}

@test "the threshold: a file of 256 KiB is cached, one a byte smaller is hashed with no look-up" {
	command -v strace >/dev/null || skip "no strace"
	for n in 262144 262143; do
		printf '#!/bin/sh\nexit 0\n' >"exe$n"
		head -c $((n - 17)) /dev/zero | tr '\0' '#' >>"exe$n"
		chmod 755 "exe$n"
		[ "$(stat -c %s "exe$n")" -eq "$n" ]
	done
	settle
	[ "$(bytes_read ./exe262144)" -ge 262144 ]
	[ "$(bytes_read ./exe262144)" -lt 65536 ]
	[ "$(bytes_read ./exe262143)" -ge 262143 ]
	traced -o "$TEST_DIR/strace" -e trace=%file,fstatfs,%desc "$AIRLOCK" run --sandbox=none -- ./exe262143 >/dev/null
	run ! grep -E 'exe-digests|fstatfs' "$TEST_DIR/strace"
	run_check ./exe262144
	run_check ./exe262143
}

@test "a file changed less than 2 s ago is hashed and not stored (racy timestamps)" {
	make_exe ./exe 2
	run_check ./exe
	[ ! -e "$(cache_file)" ]
	# Rewritten in place, same size, within the same second as that run.
	size=$(stat -c %s exe)
	{ printf '#!/bin/sh\necho "ran $1"\nexit 0\n# '; head -c "$size" /dev/urandom | base64 -w 0; } |
		head -c "$size" >exe.body
	dd if=exe.body of=exe conv=notrunc status=none
	[ "$(stat -c %s exe)" = "$size" ]
	run_check ./exe
	[ ! -e "$(cache_file)" ]
}

# A program just built has pages the kernel has not written yet (for up to
# 30 s, hundreds of MiB for a debug build): its first run is not held up
# writing them back (sync_file_range waited for every page), it hashes the
# file and stores nothing; once the pages are written, a run stores it.
@test "a large executable with pages not yet written back is hashed, not stored, and its run waits for no writeback" {
	command -v strace >/dev/null || skip "no strace"
	# A new file, as a linker makes: ext4 writes back at its close a file
	# truncated and written again (auto_da_alloc).
	rm -f exe
	{
		printf '#!/bin/sh\nexit 0\n# '
		head -c $((6 * 1024 * 1024)) /dev/urandom | base64 -w 0
	} >exe
	chmod 755 exe
	sleep 2.2 # past the 2 s margin, its pages not written back
	# Whether they still are when the run looks depends on the machine (an
	# apply's syncfs anywhere writes them): stored or not, the run must not
	# write them back itself.
	traced -o "$TEST_DIR/strace" -e trace=sync_file_range,read,pread64 -e signal=none \
		"$AIRLOCK" run --sandbox=none -- ./exe >/dev/null
	run ! grep sync_file_range "$TEST_DIR/strace"
	[ "$(awk -F'= ' '/^(read|pread64)\(/ { s += $NF } END { print s + 0 }' "$TEST_DIR/strace")" \
		-ge $((6 * 1024 * 1024)) ]
	# Written back: stored by the next run (if not by that one), then a hit.
	sync exe
	bytes_read ./exe >/dev/null
	[ "$(bytes_read ./exe)" -lt $((1024 * 1024)) ]
	run_check ./exe
}

@test "a write through a shared mapping's dirty page after the entry was stored is seen (its pages were cleaned)" {
	make_exe ./exe 3
	settle
	# A writer keeps the file mapped: its page dirty since well over 2 s,
	# where further writes move no timestamp until the page is written back.
	python3 - "$PWD/exe" "$TEST_DIR" <<-'EOF' &
		import mmap, os, sys, time
		path, d = sys.argv[1], sys.argv[2]
		fd = os.open(path, os.O_RDWR)
		m = mmap.mmap(fd, 0)
		m[40960:40961] = b"A"
		time.sleep(0.6)
		m[40961:40962] = b"B"
		time.sleep(2.4)
		open(d + "/ready", "w").close()
		while not os.path.exists(d + "/go"):
		    time.sleep(0.05)
		m[40962:40963] = b"C"
		m.close()
		os.close(fd)
	EOF
	writer=$!
	for _ in $(seq 1 200); do
		[ -e "$TEST_DIR/ready" ] || ! kill -0 "$writer" 2>/dev/null && break
		sleep 0.05
	done
	[ -e "$TEST_DIR/ready" ]
	# Open for writing: the exec fails (ETXTBSY), its digest is taken.
	al run --sandbox=none -- ./exe
	[ "$(rq .exec_identity.sha256)" = "$(sha256sum <exe | cut -d' ' -f1)" ]
	touch "$TEST_DIR/go"
	wait "$writer"
	run_check ./exe
}

@test "a write whose bytes land seconds after its time update is not cached with the bytes before it" {
	make_exe ./exe 3
	settle
	# A kernel moves mtime and ctime when a write begins, then copies; the
	# copy waits here for a FUSE server's answer (its source is a mapping of
	# the server's file) while the times are already over 2 s old.
	python3 "$BATS_TEST_DIRNAME/fuse-stall-write.py" "$PWD/exe" 5 40960 "$TEST_DIR/ready" \
		2>"$TEST_DIR/writer.err" &
	writer=$!
	for _ in $(seq 1 100); do
		[ -e "$TEST_DIR/ready" ] || ! kill -0 "$writer" 2>/dev/null && break
		sleep 0.05
	done
	if [ ! -e "$TEST_DIR/ready" ]; then
		wait "$writer" && r=0 || r=$?
		[ "$r" -eq 77 ] && skip "no FUSE mount for this user: $(cat "$TEST_DIR/writer.err")"
		cat "$TEST_DIR/writer.err" >&2
		return 1
	fi
	settle
	# Open for writing: the exec fails (ETXTBSY), its digest is taken from
	# the bytes before the write.
	al run --sandbox=none -- ./exe
	wait "$writer"
	cat "$TEST_DIR/writer.err" >&2
	[ "$(head -c 45056 exe | tail -c 4096 | tr -cd Z | wc -c)" -eq 4096 ]
	run_check ./exe
	run_check ./exe
}

# Differential: generated sequences of changes to a large executable, each
# followed by a run (after a settle or not, once or twice); every receipt's
# digest is sha256sum's of the file at that run.
@test "differential: every receipt's digest is the file's, whatever changed it and when" {
	seed=${EXEDIGEST_SEED:-$((RANDOM))}
	echo "seed $seed (EXEDIGEST_SEED=$seed to replay)" >&2
	RANDOM=$seed
	make_exe ./exe 3
	make_exe ./other 3
	settle
	run_check ./exe
	run_check ./exe # a hit
	cache_whole
	size() { stat -c %s exe; }
	rewrite_same_size() {
		local n
		n=$(size)
		{ printf '#!/bin/sh\necho "ran $1"\nexit 0\n# '; head -c "$n" /dev/urandom | base64 -w 0; } |
			head -c "$n" >exe.body
		dd if=exe.body of=exe conv=notrunc status=none
	}
	ops=(rewrite_same_size append truncate_rewrite rename_over cp_p touch_back chmod_x
		mtime_back racy_rewrite nothing)
	append() { printf 'tail %s\n' "$RANDOM" >>exe; }
	truncate_rewrite() {
		local n
		n=$(size)
		truncate -s 0 exe
		{ printf '#!/bin/sh\necho "ran $1"\nexit 0\n# '; head -c "$n" /dev/urandom | base64 -w 0; } |
			head -c "$n" >>exe
	}
	rename_over() { make_exe ./exe 3; }
	cp_p() { cp -p other exe; }
	touch_back() {
		rewrite_same_size
		touch -d '2001-01-01 00:00:00' exe
	}
	chmod_x() { chmod 700 exe; chmod 755 exe; }
	# The mtime set back to the very value the cache was keyed by.
	mtime_back() {
		local m
		m=$(stat -c '%.9Y' exe)
		rewrite_same_size
		touch -m -d "@$m" exe
		[ "$(stat -c '%.9Y' exe)" = "$m" ]
	}
	# Rewritten in the same second as the run before it.
	racy_rewrite() {
		run_check ./exe
		rewrite_same_size
	}
	nothing() { :; }
	for step in $(seq 1 14); do
		op=${ops[RANDOM % ${#ops[@]}]}
		echo "step $step: $op" >&2
		"$op"
		if [ $((RANDOM % 3)) -eq 0 ]; then
			settle
		fi
		run_check ./exe
		if [ $((RANDOM % 2)) -eq 0 ]; then
			run_check ./exe
		fi
	done
	# Every kind of change once more, each after a settled, cached run.
	for op in rewrite_same_size mtime_back touch_back cp_p truncate_rewrite append rename_over; do
		step=$op
		settle
		run_check ./exe
		run_check ./exe
		"$op"
		run_check ./exe
	done
	cache_whole
}

@test "a planted cache file is a miss and is replaced: garbage, oversized, torn, a symlink, a FIFO, another owner's" {
	make_exe ./exe 2
	settle
	run_check ./exe
	cache_whole
	good=$TEST_DIR/good
	cp "$(cache_file)" "$good"
	# A forged file: well formed, with this file's key and another digest.
	forged=$TEST_DIR/forged
	python3 - "$good" "$forged" <<-'EOF'
		import hashlib, sys
		b = bytearray(open(sys.argv[1], "rb").read())
		b[48 + 56:48 + 88] = b"\x01" * 32
		b[-32:] = hashlib.sha256(bytes(b[:-32])).digest()
		open(sys.argv[2], "wb").write(bytes(b))
	EOF
	plant() {
		rm -f "$(cache_file)"
		case $1 in
		garbage) head -c 300 /dev/urandom >"$(cache_file)" ;;
		oversized) { cat "$forged"; head -c 8000 /dev/zero; } >"$(cache_file)" ;;
		torn) head -c $(($(stat -c %s "$forged") - 7)) "$forged" >"$(cache_file)" ;;
		symlink) ln -s "$forged" "$(cache_file)" ;;
		fifo) mkfifo "$(cache_file)" ;;
		owner)
			cp "$forged" "$(cache_file)"
			chown 65534 "$(cache_file)"
			;;
		esac
	}
	for kind in garbage oversized torn symlink fifo owner; do
		[ "$kind" != owner ] || [ "$(id -u)" -eq 0 ] || continue
		step=$kind
		plant "$kind"
		run_check ./exe
		cache_whole
		# And read back: the forged digest never reaches a receipt.
		run_check ./exe
	done
	# A forged file the user owns, in place, is trusted: the state
	# directory is the user's, out of the agent's reach (below).
}

@test "20 concurrent runs leave a whole cache and correct receipts" {
	for i in 1 2 3; do make_exe "./exe$i" 2; done
	settle
	for i in $(seq 1 20); do
		"$AIRLOCK" run --sandbox=none -- "./exe$((i % 3 + 1))" x >"$TEST_DIR/out.$i" 2>&1 &
	done
	wait
	for i in $(seq 1 20); do
		id=$(jq -r .receipt "$TEST_DIR/out.$i")
		exe=./exe$((i % 3 + 1))
		[ "$(jq -r .exec_identity.sha256 "$(receipt_file "$id")")" = "$(sha256sum <"$exe" | cut -d' ' -f1)" ]
	done
	cache_whole
	for i in 1 2 3; do run_check "./exe$i"; done
	[ -z "$(find "$AIRLOCK_STATE_DIR/cache" -name '.*.tmp')" ]
}

@test "the cache is out of the quarantine's reach" {
	make_exe ./exe 2
	settle
	run_check ./exe
	cache_whole
	before=$(sha256sum <"$(cache_file)")
	al run -- sh -c 'cat "$1/cache/exe-digests" >/dev/null && echo read; echo x >"$1/cache/exe-digests" && echo wrote; ls "$1/cache" && echo listed; exit 0' sh "$AIRLOCK_STATE_DIR"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *read* ]]
	[[ "$(rq .stdout)" != *wrote* ]]
	[[ "$(rq .stdout)" != *listed* ]]
	[ "$(sha256sum <"$(cache_file)")" = "$before" ]
}

@test "a re-run's check reads the file, not the cache" {
	command -v strace >/dev/null || skip "no strace"
	make_exe ./exe 2
	printf '#!/bin/sh\nexit 1\n' | dd of=exe conv=notrunc status=none
	settle
	al run --sandbox=none -- ./exe
	[ "$status" -ne 0 ]
	failed=$(receipt_id)
	[ "$(bytes_read ./exe)" -lt $((1024 * 1024)) ] # cached
	run traced -o "$TEST_DIR/strace" -e trace=read,pread64 -e signal=none \
		"$AIRLOCK" run --sandbox=none --fixes "$failed" -- true
	[[ "$output" == *'"receipt":'*'"receipt":'* ]] # the fix, then the re-run
	# The re-run compared the digest of the bytes it read.
	awk -F'= ' '/^(read|pread64)\(/ { s += $NF } END { exit !(s >= 2 * 1024 * 1024) }' "$TEST_DIR/strace"
}

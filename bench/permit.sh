#!/bin/sh
# A permit's whole path for a one-file change, step by step, against running
# the command directly (make, and `airlock run`): propose -> dryrun -> exec for
# a generated file (risk 3), and propose -> dryrun -> approve -> exec for a
# tracked one (risk 4; the passphrase typed into a pty by script(1), so the
# approver's scrypt is in the number). Medians of N rounds (default 15); the
# tree is reset between rounds, outside the timing. Prints a Markdown section
# for docs/BENCHMARKS.md.
#
# Then, in one interleaved hyperfine run (bench/lib.sh, hyperfine_rounds),
# the whole risk-3 path as one timed command each: `airlock run -- make -s
# gen` against propose -> dryrun -> exec (three processes), propose -> exec
# (exec dry-runs a PROPOSED permit itself) and `propose --exec` (one
# process), for this binary and, when given, a baseline binary (main's
# build: the forms it does not know are left out), and the dry run alone
# (`airlock dryrun -- make -s gen`, which leaves the workspace as it is), the
# floor of any permit's path. Each command removes gen.txt again; each binary
# has its own state directory.
#   bench/permit.sh AIRLOCK_BINARY [ROUNDS] [BASELINE_BINARY]
#   PERMIT_BENCH_ONLY=interleaved: the second part only
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=$(realpath "$1")
rounds=${2:-15}
baseline=${3:+$(realpath "$3")}
work=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
export AIRLOCK_STATE_DIR="$work/state"
pass='bench horse battery'

ws="$work/ws"
mkdir -p "$ws" && cd "$ws"
git init -q . && git config user.email b@b && git config user.name b
printf 'gen:\n\techo new > gen.txt\ntracked:\n\techo more >> notes.txt\n' > Makefile
echo notes > notes.txt && echo gen.txt > .gitignore
git add -A . && git commit -qm init
printf '%s\n%s\n' "$pass" "$pass" | script -qec "'$airlock' approver init" /dev/null >/dev/null

now_ns() { date +%s%N; }
# step NAME CMD...: runs CMD, appends its ms to $work/NAME
step() {
	name=$1; shift
	t0=$(now_ns)
	"$@" >/dev/null 2>&1 || true
	t1=$(now_ns)
	echo "$(( (t1 - t0) / 1000 ))" >> "$work/$name"
}
median() { # file of microseconds -> ms, 1 decimal
	sort -n "$work/$1" | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f", m / 1000}'
}
last_id() { jq -r .permit "$work/out"; }

i=0
[ "${PERMIT_BENCH_ONLY:-}" != interleaved ] || i=$rounds
while [ "$i" -lt "$rounds" ]; do
	step direct_make make -s gen
	rm -f gen.txt
	step direct_run "$airlock" run -- make -s gen
	rm -f gen.txt
	# risk 3
	t0=$(now_ns)
	echo '{"argv":["make","-s","gen"],"reason":"bench","expected_paths":["gen.txt"]}' |
		"$airlock" permit propose - > "$work/out"
	t1=$(now_ns); echo "$(( (t1 - t0) / 1000 ))" >> "$work/p3_propose"
	id=$(last_id)
	step p3_dryrun "$airlock" permit dryrun "$id"
	step p3_exec "$airlock" permit exec "$id"
	[ "$(cat gen.txt)" = new ] || { echo "risk 3 exec did not apply" >&2; exit 1; }
	rm -f gen.txt
	# risk 4
	t0=$(now_ns)
	echo '{"argv":["make","-s","tracked"],"reason":"bench","expected_paths":["notes.txt"]}' |
		"$airlock" permit propose - > "$work/out"
	t1=$(now_ns); echo "$(( (t1 - t0) / 1000 ))" >> "$work/p4_propose"
	id=$(last_id)
	step p4_dryrun "$airlock" permit dryrun "$id"
	t0=$(now_ns)
	echo "$pass" | script -qec "'$airlock' permit approve $id" /dev/null >/dev/null
	t1=$(now_ns); echo "$(( (t1 - t0) / 1000 ))" >> "$work/p4_approve"
	step p4_exec "$airlock" permit exec "$id"
	[ "$(jq -r .state "$AIRLOCK_STATE_DIR/permits/$id.json")" = APPLIED ] ||
		{ echo "risk 4 exec did not apply" >&2; exit 1; }
	git checkout -q notes.txt
	i=$((i + 1))
done
# script(1) alone, to subtract the pty's own cost from approve.
i=0
[ "${PERMIT_BENCH_ONLY:-}" != interleaved ] || i=$rounds
while [ "$i" -lt "$rounds" ]; do
	t0=$(now_ns); echo x | script -qec "cat >/dev/null" /dev/null >/dev/null; t1=$(now_ns)
	echo "$(( (t1 - t0) / 1000 ))" >> "$work/script_only"
	i=$((i + 1))
done

if [ "${PERMIT_BENCH_ONLY:-}" != interleaved ]; then
	sum() { echo "$@" | awk '{s=0; for (i=1;i<=NF;i++) s+=$i; printf "%.1f", s}'; }
	t3=$(sum "$(median p3_propose)" "$(median p3_dryrun)" "$(median p3_exec)")
	t4=$(sum "$(median p4_propose)" "$(median p4_dryrun)" "$(median p4_approve)" "$(median p4_exec)")
	echo "## Permits: propose -> dryrun -> (approve ->) exec for a one-file change"
	echo
	echo "Medians of $rounds rounds, ms, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo
	echo "| path | propose | dryrun | approve | exec | whole path |"
	echo "|---|---:|---:|---:|---:|---:|"
	echo "| \`make -s gen\` directly | | | | | $(median direct_make) |"
	echo "| \`airlock run -- make -s gen\` | | | | | $(median direct_run) |"
	echo "| permit, risk 3 (\`make -s gen\`, ignored file) | $(median p3_propose) | $(median p3_dryrun) | | $(median p3_exec) | $t3 |"
	echo "| permit, risk 4 (\`make -s tracked\`, tracked file) | $(median p4_propose) | $(median p4_dryrun) | $(median p4_approve) (script(1) alone: $(median script_only)) | $(median p4_exec) | $t4 |"

fi

# The interleaved comparison: one script per form and binary, each a whole
# path that leaves the workspace as it found it.
proposal='{"argv":["make","-s","gen"],"reason":"bench","expected_paths":["gen.txt"]}'
forms() { # binary: the forms it knows
	echo run dry three
	if "$1" permit --help 2>&1 | grep -q -- 'propose \[--exec\]'; then
		echo two one
	fi
}
# shellcheck disable=SC2016 # the lines are the form's script's own
write_form() { # file binary state form
	{
		echo "export AIRLOCK_STATE_DIR='$3'"
		echo "cd '$ws'"
		case $4 in
		run) echo "'$2' run -- make -s gen >/dev/null" ;;
		dry) echo "'$2' dryrun -- make -s gen >/dev/null" ;;
		three | two)
			echo "out=\$(echo '$proposal' | '$2' permit propose -)"
			echo 'id=${out#*\"permit\":}; id=${id%%,*}'
			[ "$4" = two ] || echo "'$2' permit dryrun \"\$id\" >/dev/null"
			echo "'$2' permit exec \"\$id\" >/dev/null"
			;;
		one) echo "echo '$proposal' | '$2' permit propose --exec - >/dev/null" ;;
		esac
		# A path that did not apply is counted, not fatal: on this loaded
		# VM a quarantine's setup fails now and then (setup_error).
		if [ "$4" = dry ]; then # the same check's cost; a dry run writes no gen.txt
			echo ": \"\$(cat gen.txt 2>/dev/null)\""
		else
			echo "[ \"\$(cat gen.txt 2>/dev/null)\" = new ] || echo x >>'$1.failed'"
		fi
		echo 'rm -f gen.txt'
	} >"$1"
}
set --
labels=""
for which in new base; do
	bin=$airlock
	[ "$which" = new ] || bin=$baseline
	[ -n "$bin" ] || continue
	mkdir -p "$work/state-$which"
	for form in $(forms "$bin"); do
		write_form "$work/$which-$form.sh" "$bin" "$work/state-$which" "$form"
		set -- "$@" "sh $work/$which-$form.sh"
		labels="$labels $which-$form"
	done
done
bench_settle
hyperfine_rounds "$work/inter.json" "${PERMIT_BENCH_INTER_ROUNDS:-5}" "${PERMIT_BENCH_INTER_RUNS:-10}" "$@"
echo
echo "## Permits, risk 3, the whole path against one \`airlock run\`, interleaved"
echo
echo "hyperfine_rounds, ${PERMIT_BENCH_INTER_ROUNDS:-5} rounds of ${PERMIT_BENCH_INTER_RUNS:-10} runs, medians in ms (each includes sh and \`rm\`), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
echo
echo "| binary | form | median ms | vs \`airlock run\` of the same binary | runs that did not apply |"
echo "|---|---|---:|---:|---:|"
k=0
for label in $labels; do
	which=${label%%-*}
	form=${label#*-}
	t=$(median_ms "$work/inter.json" "$k")
	k_run=0
	j=0
	for l in $labels; do
		[ "$l" != "$which-run" ] || k_run=$j
		j=$((j + 1))
	done
	t_run=$(median_ms "$work/inter.json" "$k_run")
	case $form in
	run) what="\`airlock run -- make -s gen\`" ;;
	dry) what="the dry run alone: \`airlock dryrun -- make -s gen\`" ;;
	three) what="propose -> dryrun -> exec" ;;
	two) what="propose -> exec (exec dry-runs it)" ;;
	one) what="\`propose --exec\`" ;;
	esac
	failed=0
	[ ! -e "$work/$label.sh.failed" ] || failed=$(wc -l <"$work/$label.sh.failed")
	echo "| $which | $what | $t | $(ratio "$t" "$t_run") | $failed |"
	k=$((k + 1))
done

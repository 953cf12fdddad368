#!/bin/bash
# The allowlist proxy's cost (docs/network.md, issue 25), offline: a local
# HTTP server on 127.0.0.2 (tests/helpers/netserve.py, sendfile) serving a
# sparse file, its name bench.test in a hosts file put over /etc/hosts for
# airlock only (tests/helpers/nethosts.sh). Three measures, each side by side
# in one interleaved hyperfine (bench/lib.sh's hyperfine_rounds):
#   1. a 1 GiB download (curl to /dev/null) through the proxy against the
#      same run with the host's network (`--net host`) and against curl on
#      the host without airlock (goal: proxy >= 0.8x of direct);
#   2. the added latency per connection: one curl fetching a small file over
#      N new connections (Connection: close), through the proxy against
#      `--net host`;
#   3. `run -- true` with an allowlist configured against the built-in policy.
# Both airlock runs of 1 and 2 use the same policy (curl off deny_argv0);
# --net host overrides its allowlist for the run. Measure 1's transfer alone
# (curl's speed_download) is also taken through the floor of any proxy, a
# plain splice relay (bench/netrelay_floor.c, the second loopback connection
# and nothing else), and, as root with perf(1), the CPU the relay (airlock's
# proxy, the floor) spends per download (perf stat -p). Markdown on stdout.
#   bench/netproxy.sh AIRLOCK [BEFORE]
# BEFORE: a second airlock binary (an older build), whose proxy is measured
# beside AIRLOCK's in the same interleaved loops. ROUNDS, RUNS:
# hyperfine_rounds' (default 3 and 3); GIB: the download's size in GiB
# (default 1); CONNS: connections of measure 2 (default 100); SPEEDS: rounds
# of the speed and CPU loops (default 7).
set -eu
airlock=$(realpath "$1")
before=${2:+$(realpath "$2")}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
helpers=$here/../tests/helpers
rounds=${ROUNDS:-3}
runs=${RUNS:-3}
gib=${GIB:-1}
conns=${CONNS:-100}
work=$(mktemp -d /tmp/netproxy-bench.XXXXXX)
server=
floor=
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	[ -z "$floor" ] || kill "$floor" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/www" "$work/ws" "$work/state"
truncate -s "${gib}G" "$work/www/big"
printf 'small\n' >"$work/www/small"
printf '127.0.0.1 localhost\n127.0.0.2 bench.test\n' >"$work/hosts"
chmod -R a+rX "$work"
export AIRLOCK_STATE_DIR="$work/state"
/usr/bin/python3 "$helpers/netserve.py" "$work/served.log" "http:127.0.0.2:0:$work/www" >"$work/ready" &
server=$!
for _ in $(seq 100); do grep -q '^ready' "$work/ready" 2>/dev/null && break; sleep 0.1; done
read -r _ _ _ port <"$work/ready"
cc -O2 -pthread -o "$work/netrelay_floor" "$here/netrelay_floor.c"
"$work/netrelay_floor" 127.0.0.3 127.0.0.2 "$port" >"$work/floor.ready" &
floor=$!
for _ in $(seq 100); do grep -q '^ready' "$work/floor.ready" 2>/dev/null && break; sleep 0.1; done
read -r _ floor_port <"$work/floor.ready"

# The allowlist policy, approved by a throwaway approver (as
# tests/cli/helpers.bash's approve_policy does it, at a terminal).
jq -n --arg p "$port" '{schema: "airlock.policy/1",
	sandbox: {net: {allow: ["bench.test:\($p)", "127.0.0.2:\($p)"]}},
	deny_argv0: ["sudo", "su", "doas", "ssh", "scp", "sftp", "dd", "mkfs", "reboot", "shutdown", "halt", "poweroff"]}' >"$work/net.json"
pass="bench pass phrase"
printf '%s\n%s\n' "$pass" "$pass" | script -qec "'$airlock' approver init" /dev/null >/dev/null
script -qec "'$airlock' policy approve '$work/net.json'" /dev/null <<<"$pass" >/dev/null
[ -z "$before" ] || script -qec "'$before' policy approve '$work/net.json'" /dev/null <<<"$pass" >/dev/null

cd "$work/ws"
al="$helpers/nethosts.sh $work/hosts $airlock run --workspace $work/ws"
al_before="$helpers/nethosts.sh $work/hosts $before run --workspace $work/ws"
big="http://bench.test:$port/big"
small=$(seq -s ' ' -f "http://bench.test:$port/small?%g" 1 "$conns")
curl_big="curl -fsS -o /dev/null $big"
curl_small="curl -fsS -o /dev/null -H Connection:close $small"

# each command once, to fail here rather than inside hyperfine
for c in "$al --policy $work/net.json --net host -- $curl_big" "$al --policy $work/net.json -- $curl_big" \
	"$al --policy $work/net.json -- true" ${before:+"$al_before --policy $work/net.json -- $curl_big"} \
	"curl -fsS -o /dev/null http://127.0.0.3:$floor_port/big"; do
	out=$($c 2>&1) || { echo "failed: $c: $out" >&2; exit 1; }
done

echo "## The allowlist proxy (bench/netproxy.sh)"
echo
echo "load average before: $(cat /proc/loadavg)"
echo
hyperfine_rounds "$work/big.json" "$rounds" "$runs" \
	"$helpers/nethosts.sh $work/hosts $curl_big" \
	"$al --policy $work/net.json --net host -- $curl_big" \
	"$al --policy $work/net.json -- $curl_big" \
	"curl -fsS -o /dev/null http://127.0.0.3:$floor_port/big" \
	${before:+"$al_before --policy $work/net.json -- $curl_big"}
host=$(median_ms "$work/big.json" 0)
nethost=$(median_ms "$work/big.json" 1)
proxy=$(median_ms "$work/big.json" 2)
floor_ms=$(median_ms "$work/big.json" 3)
mib=$((gib * 1024))
echo "### ${gib} GiB download, curl to /dev/null (median ms of $((rounds * runs)) runs)"
echo
echo "| path | ms | MiB/s | throughput vs curl on the host |"
echo "|---|---:|---:|---:|"
echo "| curl on the host, no airlock | $host | $(echo "$mib * 1000 / $host" | bc) | 1.00 |"
echo "| airlock run --net host | $nethost | $(echo "$mib * 1000 / $nethost" | bc) | $(ratio "$host" "$nethost") |"
echo "| floor: a plain splice relay, curl on the host | $floor_ms | $(echo "$mib * 1000 / $floor_ms" | bc) | $(ratio "$host" "$floor_ms") |"
echo "| airlock run, allowlist proxy | $proxy | $(echo "$mib * 1000 / $proxy" | bc) | $(ratio "$host" "$proxy") |"
if [ -n "$before" ]; then
	b=$(median_ms "$work/big.json" 4)
	echo "| airlock run, allowlist proxy, BEFORE | $b | $(echo "$mib * 1000 / $b" | bc) | $(ratio "$host" "$b") |"
fi
echo
echo "proxy against --net host (same run overhead): $(ratio "$nethost" "$proxy")x the throughput"
echo
# The transfer alone, as curl measures it (speed_download, bytes/s), without
# the run's start and end: SPEEDS rounds, the paths interleaved.
speed_of() { # host|run command...: curl's speed_download, from its stdout or the run's receipt
	where=$1
	shift
	if [ "$where" = host ]; then
		"$@"
		return
	fi
	line=$("$@")
	jq -r .stdout "$AIRLOCK_STATE_DIR/receipts/$(jq -r .receipt <<<"$line").json"
}
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
curl_speed="curl -fsS -o /dev/null -w %{speed_download} $big"
floor_speed="curl -fsS -o /dev/null -w %{speed_download} http://127.0.0.3:$floor_port/big"
paths="host nethost floor proxy${before:+ before}"
for p in $paths; do rm -f "$work/s.$p"; done
for _ in $(seq "${SPEEDS:-7}"); do
	# shellcheck disable=SC2086 # the commands are words
	{
		speed_of host "$helpers/nethosts.sh" "$work/hosts" $curl_speed >>"$work/s.host"
		echo >>"$work/s.host"
		speed_of run $al --policy "$work/net.json" --net host -- $curl_speed >>"$work/s.nethost"
		echo >>"$work/s.nethost"
		speed_of host $floor_speed >>"$work/s.floor"
		echo >>"$work/s.floor"
		speed_of run $al --policy "$work/net.json" -- $curl_speed >>"$work/s.proxy"
		echo >>"$work/s.proxy"
		if [ -n "$before" ]; then
			speed_of run $al_before --policy "$work/net.json" -- $curl_speed >>"$work/s.before"
			echo >>"$work/s.before"
		fi
	}
done
sh_=$(grep . "$work/s.host" | median)
echo "### the transfer alone: curl's speed_download (median of ${SPEEDS:-7}, interleaved)"
echo
echo "| path | MiB/s | vs curl on the host | all rounds, MiB/s |"
echo "|---|---:|---:|---|"
for p in $paths; do
	case $p in
	host) what="curl on the host, no airlock" ;;
	nethost) what="airlock run --net host" ;;
	floor) what="floor: a plain splice relay (bench/netrelay_floor.c), curl on the host" ;;
	proxy) what="airlock run, allowlist proxy" ;;
	before) what="airlock run, allowlist proxy, BEFORE ($before)" ;;
	esac
	v=$(grep . "$work/s.$p" | median)
	all=$(grep . "$work/s.$p" | awk '{printf "%s%d", (NR > 1 ? " " : ""), $1 / 1048576}')
	echo "| $what | $(echo "$v / 1048576" | bc) | $(ratio "$v" "$sh_") | $all |"
done
echo
# The relay's CPU per download: perf stat of the proxy process (found by
# its argv once the run has started it; the download waits 0.3 s for
# perf to attach) or of the floor relay, task-clock and context switches.
# As root (the proxy runs as nobody, not dumpable) with perf(1) only.
cpu_of() { # pid [command...]: perf stat of pid until it exits or command ends
	pid=$1
	shift
	perf stat -x, -e task-clock,context-switches -p "$pid" -o "$work/perf.txt" "$@" >/dev/null
}
proxy_under() { # pid: the proxy process (`airlock __netproxy`) below pid, another helper's aside
	for c in $(pgrep -f -- ' __netproxy '); do
		a=$c
		while [ "$a" -gt 1 ]; do
			[ "$a" = "$1" ] && { echo "$c"; return 0; }
			a=$(awk '{print $4}' "/proc/$a/stat" 2>/dev/null) || break
		done
	done
	return 1
}
if [ "$(id -u)" -eq 0 ] && command -v perf >/dev/null; then
	cpupaths="floor proxy${before:+ before}"
	for p in $cpupaths; do rm -f "$work/c.$p"; done
	for _ in $(seq "${SPEEDS:-7}"); do
		for p in $cpupaths; do
			if [ "$p" = floor ]; then
				# shellcheck disable=SC2086 # the command is words
				cpu_of "$floor" $floor_speed
			else
				run=$al
				[ "$p" = proxy ] || run=$al_before
				# shellcheck disable=SC2086 # the commands are words
				$run --policy "$work/net.json" -- sh -c "sleep 0.3; $curl_speed" >/dev/null &
				job=$!
				pid=
				for _ in $(seq 50); do
					pid=$(proxy_under "$job") && break
					sleep 0.01
				done
				[ -n "$pid" ] || { echo "the proxy of the run was not found" >&2; exit 1; }
				cpu_of "$pid"
				wait "$job"
			fi
			awk -F, '/task-clock/ {t = $1} /context-switches/ {c = $1} END {print t, c}' "$work/perf.txt" >>"$work/c.$p"
		done
	done
	echo "### the relay's CPU per ${gib} GiB (perf stat -p, median of ${SPEEDS:-7}, interleaved)"
	echo
	echo "| relay | task-clock ms | context switches | all rounds, ms |"
	echo "|---|---:|---:|---|"
	for p in $cpupaths; do
		case $p in
		floor) what="floor (bench/netrelay_floor.c)" ;;
		proxy) what="airlock's proxy" ;;
		before) what="airlock's proxy, BEFORE" ;;
		esac
		echo "| $what | $(cut -d' ' -f1 "$work/c.$p" | median) | $(cut -d' ' -f2 "$work/c.$p" | median) | $(cut -d' ' -f1 "$work/c.$p" | awk '{printf "%s%d", (NR > 1 ? " " : ""), $1}') |"
	done
	echo
fi
hyperfine_rounds "$work/conn.json" "$rounds" "$runs" \
	"$al --policy $work/net.json --net host -- $curl_small" \
	"$al --policy $work/net.json -- $curl_small"
a=$(median_ms "$work/conn.json" 0)
b=$(median_ms "$work/conn.json" 1)
echo "### $conns connections of one small GET each (one curl, Connection: close)"
echo
echo "| path | ms |"
echo "|---|---:|"
echo "| airlock run --net host | $a |"
echo "| airlock run, allowlist proxy | $b |"
echo
echo "added per connection: $(echo "scale=3; ($b - $a) / $conns" | bc) ms"
echo
hyperfine_rounds "$work/true.json" "$rounds" "$((runs * 3))" \
	"$al -- true" \
	"$al --policy $work/net.json -- true"
a=$(median_ms "$work/true.json" 0)
b=$(median_ms "$work/true.json" 1)
echo "### run -- true"
echo
echo "| policy | ms |"
echo "|---|---:|"
echo "| built-in (loopback) | $a |"
echo "| allowlist (the proxy started and stopped) | $b |"
echo
echo "ratio: $(ratio "$b" "$a")x"
echo
echo "load average after: $(cat /proc/loadavg)"

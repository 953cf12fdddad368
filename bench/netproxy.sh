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
# --net host overrides its allowlist for the run. Markdown on stdout.
#   bench/netproxy.sh AIRLOCK
# ROUNDS, RUNS: hyperfine_rounds' (default 3 and 3); GIB: the download's size
# in GiB (default 1); CONNS: connections of measure 2 (default 100).
set -eu
airlock=$(realpath "$1")
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
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
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

# The allowlist policy, approved by a throwaway approver (as
# tests/cli/helpers.bash's approve_policy does it, at a terminal).
jq -n --arg p "$port" '{schema: "airlock.policy/1",
	sandbox: {net: {allow: ["bench.test:\($p)", "127.0.0.2:\($p)"]}},
	deny_argv0: ["sudo", "su", "doas", "ssh", "scp", "sftp", "dd", "mkfs", "reboot", "shutdown", "halt", "poweroff"]}' >"$work/net.json"
pass="bench pass phrase"
printf '%s\n%s\n' "$pass" "$pass" | script -qec "'$airlock' approver init" /dev/null >/dev/null
script -qec "'$airlock' policy approve '$work/net.json'" /dev/null <<<"$pass" >/dev/null

cd "$work/ws"
al="$helpers/nethosts.sh $work/hosts $airlock run --workspace $work/ws"
big="http://bench.test:$port/big"
small=$(seq -s ' ' -f "http://bench.test:$port/small?%g" 1 "$conns")
curl_big="curl -fsS -o /dev/null $big"
curl_small="curl -fsS -o /dev/null -H Connection:close $small"

# each command once, to fail here rather than inside hyperfine
for c in "$al --policy $work/net.json --net host -- $curl_big" "$al --policy $work/net.json -- $curl_big" \
	"$al --policy $work/net.json -- true"; do
	out=$($c 2>&1) || { echo "failed: $c: $out" >&2; exit 1; }
done

echo "## The allowlist proxy (bench/netproxy.sh)"
echo
echo "load average before: $(cat /proc/loadavg)"
echo
hyperfine_rounds "$work/big.json" "$rounds" "$runs" \
	"$helpers/nethosts.sh $work/hosts $curl_big" \
	"$al --policy $work/net.json --net host -- $curl_big" \
	"$al --policy $work/net.json -- $curl_big"
host=$(median_ms "$work/big.json" 0)
nethost=$(median_ms "$work/big.json" 1)
proxy=$(median_ms "$work/big.json" 2)
mib=$((gib * 1024))
echo "### ${gib} GiB download, curl to /dev/null (median ms of $((rounds * runs)) runs)"
echo
echo "| path | ms | MiB/s | throughput vs curl on the host |"
echo "|---|---:|---:|---:|"
echo "| curl on the host, no airlock | $host | $(echo "$mib * 1000 / $host" | bc) | 1.00 |"
echo "| airlock run --net host | $nethost | $(echo "$mib * 1000 / $nethost" | bc) | $(ratio "$host" "$nethost") |"
echo "| airlock run, allowlist proxy | $proxy | $(echo "$mib * 1000 / $proxy" | bc) | $(ratio "$host" "$proxy") |"
echo
echo "proxy against --net host (same run overhead): $(ratio "$nethost" "$proxy")x the throughput"
echo
# The transfer alone, as curl measures it (speed_download, bytes/s), without
# the run's start and end: SPEEDS rounds, the three paths interleaved.
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
rm -f "$work/s.host" "$work/s.nethost" "$work/s.proxy"
for _ in $(seq "${SPEEDS:-7}"); do
	# shellcheck disable=SC2086 # the commands are words
	{
		speed_of host "$helpers/nethosts.sh" "$work/hosts" $curl_speed >>"$work/s.host"
		echo >>"$work/s.host"
		speed_of run $al --policy "$work/net.json" --net host -- $curl_speed >>"$work/s.nethost"
		echo >>"$work/s.nethost"
		speed_of run $al --policy "$work/net.json" -- $curl_speed >>"$work/s.proxy"
		echo >>"$work/s.proxy"
	}
done
sh_=$(grep . "$work/s.host" | median)
sn=$(grep . "$work/s.nethost" | median)
sp=$(grep . "$work/s.proxy" | median)
echo "### the transfer alone: curl's speed_download (median of ${SPEEDS:-7}, interleaved)"
echo
echo "| path | MiB/s | vs curl on the host |"
echo "|---|---:|---:|"
echo "| curl on the host, no airlock | $(echo "$sh_ / 1048576" | bc) | 1.00 |"
echo "| airlock run --net host | $(echo "$sn / 1048576" | bc) | $(ratio "$sn" "$sh_") |"
echo "| airlock run, allowlist proxy | $(echo "$sp / 1048576" | bc) | $(ratio "$sp" "$sh_") |"
echo
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

#!/bin/sh
# The cost of airlock's connect() mediation (docs/sandbox.md, "Unix
# sockets"): 10,000 connects to a Unix socket in the quarantine's /tmp and
# 10,000 loopback TCP connects, on the host, in `--sandbox=none`, in the
# quarantine, and, given a second airlock built without the mediation (e.g.
# from the commit before it), in its quarantine. Markdown on stdout.
#   bench/connect.sh AIRLOCK [BASELINE_AIRLOCK]
set -eu
airlock=$1
baseline=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/connect_loop" "$(dirname "$0")/connect_loop.c"
export AIRLOCK_STATE_DIR="$work/state"
mkdir -p "$work/ws"
cd "$work/ws"
n=${CONNECTS:-10000}
# The median of 5 runs of one probe, in microseconds per connect.
median_us() { # command...
	for _ in 1 2 3 4 5; do
		"$@" | tail -n 1
	done | sort -n | sed -n 3p
}
inside() { # airlock, probe args...
	a=$1
	shift
	"$a" run --workspace "$work" -- "$work/connect_loop" "$@" >"$work/line"
	jq -j .stdout "$AIRLOCK_STATE_DIR/receipts/$(jq -r .receipt "$work/line").json"
}
echo "## connect(): $n connects, mean microseconds each (median of 5 runs)"
echo
echo "| where | Unix socket in /tmp | TCP on 127.0.0.1 |"
echo "|---|---:|---:|"
echo "| host, no airlock | $(median_us "$work/connect_loop" unix "$work" "$n") | $(median_us "$work/connect_loop" tcp "$n") |"
echo "| quarantine, connect mediated by the supervisor | $(median_us inside "$airlock" unix /tmp "$n") | $(median_us inside "$airlock" tcp "$n") |"
if [ -n "$baseline" ]; then
	echo "| quarantine without mediation (baseline build) | $(median_us inside "$baseline" unix /tmp "$n") | $(median_us inside "$baseline" tcp "$n") |"
fi
echo

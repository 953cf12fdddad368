#!/bin/sh
# `airlock mcp`'s round trip: tools/call run of `true` against
# `airlock run -- true` (fork, exec, the same run), and tools/list, measured
# by one client process that keeps one server for the whole run and
# interleaves the three in rounds, so that drift falls on all alike. The
# client spawns `airlock run` with posix_spawn (no shell). Prints a Markdown
# section for docs/bench/mcp.md.
#   bench/mcp.sh [AIRLOCK_BINARY] [ROUNDS] [PER_ROUND]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
airlock=${1:-$(bench_build_here build-release airlock)}
rounds=${2:-20}
per=${3:-25}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
echo "## airlock mcp: tools/call run vs airlock run"
echo
echo "load average before: $(cat /proc/loadavg)"
echo
python3 - "$airlock" "$work" "$rounds" "$per" <<'PY'
import json, os, statistics, subprocess, sys, time
airlock, work, rounds, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ws = os.path.join(work, "ws")
srv = subprocess.Popen([airlock, "mcp", "--state-dir", os.path.join(work, "state-mcp"),
                        "--workspace", ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ws)
n = 0
def rpc(method, params=None):
    global n
    n += 1
    msg = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        msg["params"] = params
    srv.stdin.write((json.dumps(msg) + "\n").encode())
    srv.stdin.flush()
    while True:
        line = json.loads(srv.stdout.readline())
        if line.get("id") == n:
            return line
rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}})
devnull = os.open(os.devnull, os.O_WRONLY)
env = dict(os.environ, AIRLOCK_STATE_DIR=os.path.join(work, "state-cli"))
def cli_run():
    pid = os.posix_spawn(airlock, [airlock, "run", "--", "true"], env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
def mcp_run():
    r = rpc("tools/call", {"name": "run", "arguments": {"argv": ["true"]}})
    assert r["result"]["structuredContent"]["exit_code"] == 0, r
def tools_list():
    assert len(rpc("tools/list")["result"]["tools"]) == 10
os.chdir(ws)
cases = [("airlock run -- true", cli_run), ("tools/call run true", mcp_run), ("tools/list", tools_list)]
times = {name: [] for name, _ in cases}
for fn in (cli_run, mcp_run, tools_list):  # warm-up
    for _ in range(3):
        fn()
for r in range(rounds):
    for name, fn in cases:
        for _ in range(per):
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1000)
srv.stdin.close()
srv.wait()
med = {k: statistics.median(v) for k, v in times.items()}
print("| | median ms | p10 | p90 |")
print("|---|---|---|---|")
for name, _ in cases:
    q = statistics.quantiles(times[name], n=10)
    print("| %s | %.3f | %.3f | %.3f |" % (name, med[name], q[0], q[-1]))
print()
d = med["tools/call run true"] - med["airlock run -- true"]
print("%d round trips each, in %d interleaved rounds. tools/call run over airlock run: %.2fx (%+.3f ms)."
      % (rounds * per, rounds, med["tools/call run true"] / med["airlock run -- true"], d))
PY
echo
echo "load average after: $(cat /proc/loadavg)"

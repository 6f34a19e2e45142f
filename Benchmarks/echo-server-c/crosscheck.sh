#!/bin/sh
# W3 (4 MiB echo) against echo-server-c instead of TestServer: is the W3 row of BENCHMARKS.md
# the clients' or the server's? Runs each client RUNS times, interleaved, against the C server
# with lws's default receive buffer and with 1 MiB, and prints the median MB/s of each and its
# ratio to raw C. Used by `make bench-w3-crosscheck`.
#
#   crosscheck.sh BIN_DIR WSBENCH_C ECHO_SERVER_C [PICOWS_PYTHON]
set -eu
bin=$1 wsbench_c=$2 server=$3 python=${4:-}
runs=${RUNS:-3}
for rx in 0 1048576; do
    port_file=$(mktemp)
    "$server" --port 0 --rx "$rx" >"$port_file" &
    server_pid=$!
    tries=0
    while [ ! -s "$port_file" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
    url="ws://127.0.0.1:$(cat "$port_file")/echo"
    results=$(mktemp)
    i=0
    while [ $i -lt "$runs" ]; do
        "$wsbench_c" --workload W3 --url "$url" >>"$results"
        "$bin/wsbench" --workload W3 --url "$url" >>"$results"
        "$bin/wsbench" --workload W3 --url "$url" --executor loop >>"$results"
        if [ -n "$python" ]; then
            $python "$(dirname "$0")/../peers/picows/wsbench_picows.py" --workload W3 --url "$url" >>"$results" 2>/dev/null || true
        fi
        i=$((i + 1))
    done
    kill "$server_pid"
    echo "W3 against echo-server-c --rx $rx ($runs runs each, median MB/s, ratio to raw C):"
    python3 - "$results" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    try:
        report = json.loads(line)
    except ValueError:
        continue
    if report.get("ok"):
        runs.setdefault(report["client"], []).append(report["mb_per_s"])
raw = statistics.median(runs.get("raw-c", [0])) or None
for client, figures in runs.items():
    median = statistics.median(figures)
    ratio = f"{median / raw:.2f}x" if raw else "-"
    print(f"  {client:24} {median:8.0f} MB/s  {ratio}")
PY
    rm -f "$port_file" "$results"
done

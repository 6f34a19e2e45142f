#!/usr/bin/env python3
"""`make bench`: wsbench (WebSocketStreams) against wsbench-c (raw libwebsockets), side by side.

Starts the release TestServer (no compression) on a free loopback port, runs every workload for
every client interleaved (raw C, ours, ours on the loop executor, then again) --runs times, and
prints a markdown table of medians with the ratio ours / raw C and the target. The table, the
machine it ran on and the hand-written analysis in Benchmarks/analysis.md go to --out.

With --tls (the default) a second TestServer serves wss:// (`--tls`, certificates generated at
start; the CA file it prints is given to every client as SSL_CERT_FILE), and every workload also
runs over wss://, interleaved with the ws:// runs of the same workload. Two more tables: the wss://
figures against raw C, and ours over wss:// against ours over ws:// in the same run, with the
server's CPU share (server CPU seconds / wall seconds of the client run) beside each.

With --peer NAME=COMMAND (repeatable), other WebSocket clients with wsbench-c's command line and
JSON line (Benchmarks/peers/: websocket-kit, picows) run interleaved with ours, after ours, for every
workload and scheme, and appear as extra columns with their ratio to raw C. Each peer is first
probed with a short W1 run; one that does not answer with an ok JSON line (not built, not
installed) is left out, and the output says so. A peer without a figure for a workload shows n/a.
The tables also say, for the figures where ours should be ahead of peers (AHEAD_OF_PEERS), whether
ours and ours on the loop executor beat every peer that ran.

Only the Python standard library is used. Speed is never asserted here: the table says which
targets were met on this run.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# (workload, path on the server, extra arguments, figures: (key, better, target ratio or None)).
# The targets are the hot-path issue's, for ours on the default executor (on the loop executor
# W1 aims at >= 1.10x and p50 <= 1.00x; the column shows the default executor's target for both).
WORKLOADS = [
    ("W1", "/echo", [], [("rtt_per_s", "higher", 0.80), ("p50_us", "lower", 1.30), ("p99_us", "lower", None)]),
    ("W2", "/echo", [], [("msgs_per_s", "higher", 2.00), ("mb_per_s", "higher", None)]),
    ("W3", "/echo", [], [("mb_per_s", "higher", 10.0)]),
    ("W4", "/push?count=200000&size=128", [], [("msgs_per_s", "higher", 1.20)]),
    ("W5", "/echo", [], [("rss_per_conn_kb", "lower", 0.80), ("open_s", "lower", 1.50)]),
    ("W6", "/push?count=2000&size=128", [], [("msgs_per_s", "higher", 1.20)]),
]

CLIENTS = ["raw-c", "websocketstreams", "websocketstreams+loop"]
OURS = CLIENTS[1:]

# Figures where ours should be ahead of every peer (the README's goal); the tables say which of
# ours (ours, loop) beat every peer that ran, on the medians.
AHEAD_OF_PEERS = {("W1", "rtt_per_s"), ("W1", "p50_us"), ("W3", "mb_per_s")}

# Each wss:// figure of ours should be within WSS_TOLERANCE of the same figure over ws:// in the
# same run (rates at least 0.75x, latency and memory at most 1.25x), except where the server's CPU
# share on the wss:// run is above SERVER_BOUND_SHARE (then the server is what limits the figure;
# never for memory, which the server's load does not explain).
WSS_TOLERANCE = 0.25
SERVER_BOUND_SHARE = 0.80


def client_command(client, args):
    if client == "raw-c":
        return [args.wsbench_c]
    if client in args.peers:
        return list(args.peers[client])
    command = [os.path.join(args.bin, "wsbench")]
    if client.endswith("+loop"):
        command += ["--executor", "loop"]
    return command


def process_cpu_seconds(pid):
    """User + system CPU seconds of a running process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(client, workload, path, extra, server, args):
    """One client run against `server` (a Server); the client's JSON report plus CPU and wall time."""
    command = client_command(client, args) + [
        "--workload", workload, "--url", f"{server.scheme}://127.0.0.1:{server.port}{path}",
        "--time-limit", "60"] + extra
    environment = dict(os.environ)
    if server.ca_file:
        environment["SSL_CERT_FILE"] = server.ca_file
    server_before = process_cpu_seconds(server.process.pid)
    client_before = children_cpu_seconds()
    started = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
        line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            report = {"ok": False, "error": f"unparsable output: {result.stdout!r} {result.stderr!r}"}
        if not report.get("ok") and result.stderr.strip():
            report.setdefault("error", result.stderr.strip()[-500:])
    except subprocess.TimeoutExpired as timeout:
        line = "timed out"
        report = {"ok": False, "error": f"no answer in {timeout.timeout:.0f} s (killed); stdout "
                  f"{timeout.stdout!r}, stderr {timeout.stderr!r}"}
    wall = time.monotonic() - started
    client_cpu = children_cpu_seconds() - client_before
    server_cpu = process_cpu_seconds(server.process.pid) - server_before
    report["_client_cpu_s"] = client_cpu
    report["_server_cpu_s"] = server_cpu
    report["_wall_s"] = wall
    if not report.get("ok"):
        print(f"  {client} {server.scheme} {workload}: NOT OK: {report.get('error', line)}", file=sys.stderr)
    return report


class Server:
    """A running TestServer: its process, scheme, port and (wss://) the CA file it printed."""

    def __init__(self, process, scheme, port, ca_file):
        self.process = process
        self.scheme = scheme
        self.port = port
        self.ca_file = ca_file

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(args, workdir, tls=False, compression=False, command=None):
    """Starts TestServer on a free loopback port; with `tls`, waits for the `CA certificate: PATH`
    line it prints (its stdout goes to a log file, flushed right after the port file is written).
    With `compression`, it accepts permessage-deflate (W9); `command` starts another server taking
    `--port-file` (W9's python websockets server)."""
    name = ("tls" if tls else "plain") + ("-deflate" if compression else "") + ("-other" if command else "")
    port_file = os.path.join(workdir, f"port-{name}")
    log_path = os.path.join(workdir, f"server-{name}.log")
    if command is not None:
        command = list(command) + ["--port-file", port_file]
    else:
        command = [os.path.join(args.bin, "TestServer"), "--host", "127.0.0.1", "--port", "0",
                   "--port-file", port_file] + ([] if compression else ["--no-compression"]) + (["--tls"] if tls else [])
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    port = ca_file = None
    for _ in range(400):
        if port is None and os.path.exists(port_file):
            text = open(port_file).read().strip()
            port = int(text) if text else None
        if tls and ca_file is None:
            for line in open(log_path):
                if line.startswith("CA certificate:"):
                    ca_file = line.split(":", 1)[1].strip()
        if port is not None and (not tls or ca_file):
            return Server(process, "wss" if tls else "ws", port, ca_file)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"TestServer ({' '.join(command[1:])}) did not start; its output: {open(log_path).read()!r}")


def parse_peer(text):
    """NAME=COMMAND, the command split as a shell would (no shell runs it)."""
    name, sep, command = text.partition("=")
    if not sep or not name or not command.strip():
        raise argparse.ArgumentTypeError(f"--peer wants NAME=COMMAND, got {text!r}")
    if name in CLIENTS:
        raise argparse.ArgumentTypeError(f"--peer {name}: that name is one of ours")
    return name, shlex.split(command)


def probe_peer(name, command, server):
    """A short W1 run of the peer: None when it answered with an ok JSON line, else why not."""
    try:
        result = subprocess.run(command + ["--workload", "W1", "--url", f"{server.scheme}://127.0.0.1:{server.port}/echo",
                                           "--count", "10", "--time-limit", "10"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{type(error).__name__}: {error}"
    lines = result.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        report = {}
    if report.get("ok"):
        return None
    reason = report.get("error") or result.stderr.strip() or result.stdout.strip() or f"exit status {result.returncode}"
    return reason.splitlines()[-1][:300] if reason.strip() else f"exit status {result.returncode}"


def median(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def fmt(value):
    if value is None:
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def machine_description(load_before, load_after):
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lws = subprocess.run(["pkg-config", "--modversion", "libwebsockets"], capture_output=True, text=True).stdout.strip()
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Machine: {os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}",
        f"- Load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}; "
        f"after: {' '.join(f'{x:.2f}' for x in load_after)}",
        f"- libwebsockets {lws or '?'}; {swift[0] if swift else 'swift ?'}; release builds",
    ]


def profile(args, port, workdir):
    """perf's view of one W3 and one W4 run of wsbench (global executor), by shared object."""
    if not shutil.which("perf"):
        return ["perf is not installed; no profile."]
    lines = []
    for workload, path in (("W3", "/echo"), ("W4", "/push?count=1000000&size=128")):
        data = os.path.join(workdir, f"{workload}.perf")
        extra = ["--count", "1000000"] if workload == "W4" else []
        command = ["perf", "record", "-q", "-F", "2000", "-o", data, "--",
                   os.path.join(args.bin, "wsbench"), "--workload", workload,
                   "--url", f"ws://127.0.0.1:{port}{path}"] + extra
        if subprocess.run(command, capture_output=True).returncode != 0:
            lines.append(f"perf record failed for {workload}.")
            continue
        report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,dso",
                                 "--stdio", "-q"], capture_output=True, text=True).stdout
        lines.append(f"`perf record` of wsbench {workload} (global executor), share of samples by thread and "
                     "library (`ws-shared-loop` is the service thread; the others run the consumer task):")
        lines.append("")
        lines.append("```")
        lines.extend([l.rstrip() for l in report.splitlines() if l.strip() and "%" in l][:12])
        lines.append("```")
        lines.append("")
    return lines


def peer_median(reports, key):
    """A peer's median over its ok runs only (n/a when none was ok, e.g. a workload it lacks)."""
    return median(r.get(key) for r in reports if r.get("ok"))


def ahead_of_peers(results, scheme, workload, key, better, peers):
    """Which of ours beat every peer on this figure's medians, e.g. `ours ✓, loop ✗ (picows)`."""
    if (workload, key) not in AHEAD_OF_PEERS or not peers:
        return ""
    values = {peer: peer_median(results[(scheme, workload, peer)], key) for peer in peers}
    values = {peer: value for peer, value in values.items() if value is not None}
    if not values:
        return "no peer figure"
    cells = []
    for client, label in zip(OURS, ("ours", "loop")):
        ours = median(r.get(key) for r in results[(scheme, workload, client)])
        if ours is None:
            cells.append(f"{label} n/a")
            continue
        ahead_of = [peer for peer, value in values.items() if (ours > value if better == "higher" else ours < value)]
        behind = [peer for peer in values if peer not in ahead_of]
        cells.append(f"{label} ✓" if not behind else f"{label} ✗ ({', '.join(behind)})")
    return ", ".join(cells)


def comparison_table(results, scheme, peers=()):
    """Medians of every figure over `scheme`, ours / raw C with the targets, then each peer / raw C,
    and for the AHEAD_OF_PEERS figures which of ours beat every peer."""
    header = "| Workload | Figure | raw C (lws) | ours | ours / raw C | ours, loop executor | loop / raw C | Target |"
    rule = "|---|---|---:|---:|---:|---:|---:|---|"
    for peer in peers:
        header += f" {peer} | {peer} / raw C |"
        rule += "---:|---:|"
    if peers:
        header += " Ahead of peers |"
        rule += "---|"
    table = [header, rule]
    for workload, _, _, figures in WORKLOADS:
        for key, better, target in figures:
            raw = median(r.get(key) for r in results[(scheme, workload, "raw-c")])
            row = [workload, f"`{key}`", fmt(raw)]
            for client in OURS:
                ours = median(r.get(key) for r in results[(scheme, workload, client)])
                ratio = ours / raw if ours is not None and raw else None
                met = ""
                if ratio is not None and target is not None:
                    ok = ratio >= target if better == "higher" else ratio <= target
                    met = " ✓" if ok else " ✗"
                row += [fmt(ours), (f"{ratio:.2f}x{met}" if ratio is not None else "n/a")]
            row.append(("≥ " if better == "higher" else "≤ ") + f"{target:.2f}x" if target else "")
            for peer in peers:
                value = peer_median(results[(scheme, workload, peer)], key)
                ratio = value / raw if value is not None and raw else None
                row += [fmt(value), f"{ratio:.2f}x" if ratio is not None else "n/a"]
            if peers:
                row.append(ahead_of_peers(results, scheme, workload, key, better, peers))
            table.append("| " + " | ".join(row) + " |")
    return table


# Where the hot-path issue started (its table: one interleaved run of 3 reps against a C lws echo
# server, ratios to raw lws C; W1 p50 and W5 lower is better). Printed beside this run's ratios.
BEFORE = {
    ("W1", "rtt_per_s"): {"websocketstreams": 0.70, "websocketstreams+loop": 0.92, "websocket-kit": 0.90, "picows": 0.92},
    ("W1", "p50_us"): {"websocketstreams": 1.32, "websocketstreams+loop": 1.10, "websocket-kit": 1.13, "picows": 1.08},
    ("W2", "msgs_per_s"): {"websocketstreams": 0.82, "websocketstreams+loop": 0.79, "websocket-kit": 1.27, "picows": 1.78},
    ("W3", "mb_per_s"): {"websocketstreams": 0.84, "websocketstreams+loop": 0.89, "websocket-kit": 3.91, "picows": 9.62},
    ("W4", "msgs_per_s"): {"websocketstreams": 0.58, "websocketstreams+loop": 0.46, "websocket-kit": 0.98, "picows": 0.74},
    ("W5", "open_s"): {"websocketstreams": 6.37, "websocketstreams+loop": 5.13, "websocket-kit": 1.82, "picows": 2.42},
    ("W5", "rss_per_conn_kb"): {"websocketstreams": 0.68, "websocketstreams+loop": 0.67, "websocket-kit": 1.47, "picows": 3.33},
}


def before_after_table(results, peers):
    """The issue's starting ratios (BEFORE) against this run's, over ws://, for ours and each peer."""
    clients = [c for c in OURS + list(peers) if any(c in row for row in BEFORE.values())]
    names = {"websocketstreams": "ours", "websocketstreams+loop": "ours, loop executor"}
    table = ["| Workload | Figure | " + " | ".join(f"{names.get(c, c)}: before -> now" for c in clients) + " |",
             "|---|---|" + "---:|" * len(clients)]
    for (workload, key), before in BEFORE.items():
        raw = median(r.get(key) for r in results[("ws", workload, "raw-c")])
        cells = []
        for client in clients:
            now = peer_median(results[("ws", workload, client)], key) if ("ws", workload, client) in results else None
            ratio = f"{now / raw:.2f}x" if now is not None and raw else "n/a"
            cells.append(f"{before[client]:.2f}x -> {ratio}" if client in before else ratio)
        table.append(f"| {workload} | `{key}` | " + " | ".join(cells) + " |")
    return table


def cpu_table(results, scheme, clients=CLIENTS):
    names = " / ".join({"raw-c": "raw C", "websocketstreams": "ours", "websocketstreams+loop": "loop"}.get(c, c)
                       for c in clients)
    cpu = [f"| Workload | client CPU s: {names} | server CPU s: {names} |", "|---|---|---|"]
    for workload, _, _, _ in WORKLOADS:
        client_cpu = " / ".join(fmt(median(r["_client_cpu_s"] for r in results[(scheme, workload, c)])) for c in clients)
        server_cpu = " / ".join(fmt(median(r["_server_cpu_s"] for r in results[(scheme, workload, c)])) for c in clients)
        cpu.append(f"| {workload} | {client_cpu} | {server_cpu} |")
    return cpu


def server_share(reports):
    """Median share of one CPU the server used during the client's runs (can exceed 100%)."""
    return median(r["_server_cpu_s"] / r["_wall_s"] for r in reports if r.get("_wall_s"))


def percent(value):
    return "n/a" if value is None else f"{value * 100:.0f}%"


def tls_cost_table(results):
    """Ours over wss:// / ours over ws://, run for run's medians, with the server's CPU share."""
    table = ["| Workload | Figure | ours ws:// | ours wss:// | wss / ws | loop ws:// | loop wss:// | wss / ws "
             "| server CPU share ws / wss (ours; loop) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for workload, _, _, figures in WORKLOADS:
        shares = {client: (server_share(results[("ws", workload, client)]),
                           server_share(results[("wss", workload, client)])) for client in CLIENTS[1:]}
        for key, better, _ in figures:
            row = [workload, f"`{key}`"]
            for client in CLIENTS[1:]:
                plain = median(r.get(key) for r in results[("ws", workload, client)])
                secure = median(r.get(key) for r in results[("wss", workload, client)])
                ratio = secure / plain if secure is not None and plain else None
                mark = ""
                if ratio is not None:
                    within = ratio >= 1 - WSS_TOLERANCE if better == "higher" else ratio <= 1 + WSS_TOLERANCE
                    wss_share = shares[client][1]
                    if within:
                        mark = " ✓"
                    elif wss_share is not None and wss_share > SERVER_BOUND_SHARE and not key.startswith("rss"):
                        mark = " (server-bound)"
                    else:
                        mark = " ✗"
                row += [fmt(plain), fmt(secure), f"{ratio:.2f}x{mark}" if ratio is not None else "n/a"]
            row.append("; ".join(f"{percent(shares[c][0])} / {percent(shares[c][1])}" for c in CLIENTS[1:]))
            table.append("| " + " | ".join(row) + " |")
    return table


# W7 (scale): connections opened, held with keep-alive, closed; once per client, at 1,000 and
# at --w7-connections, with pings every 20 s (held 45 s) and every 5 s (held 20 s).
W7_FIGURES = [("open_ms_per_1000", "lower"), ("rss_per_conn_kb", "lower"), ("idle_cpu_pct", "lower"),
              ("close_s", "lower"), ("lost", "lower")]
W7_PINGS = [(20, 45), (5, 20)]


def wait_for_time_wait_to_clear(limit=1000, longest=75):
    """Waits (at most `longest` seconds) until fewer than `limit` TCP sockets are in TIME_WAIT.

    A W7 run leaves its connections in TIME_WAIT for 60 s, and while they are there the
    kernel's search for a free ephemeral port on connect walks them: the next run's open time
    would be the previous run's, not its own."""
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        try:
            fields = open("/proc/net/sockstat").read().split("TCP:", 1)[1].split("\n", 1)[0].split()
            if int(fields[fields.index("tw") + 1]) < limit:
                return
        except (OSError, ValueError, IndexError):
            return
        time.sleep(1)


def scale_section(args, workdir):
    """W7 for raw C and ours against a fresh TestServer; markdown lines."""
    server = start_server(args, workdir)
    rows = []
    try:
        for connections in (1000, args.w7_connections):
            for ping, hold in W7_PINGS:
                reports = {}
                for client in ("raw-c", "websocketstreams"):
                    wait_for_time_wait_to_clear()
                    # raw C on libev's epoll too (--event-lib ev), as ours runs: lws's own poll()
                    # would measure the backend, not the client.
                    command = client_command(client, args) + (["--event-lib", "ev"] if client == "raw-c" else []) + [
                        "--workload", "W7", "--url", f"ws://127.0.0.1:{server.port}/echo",
                        "--connections", str(connections), "--hold", str(hold), "--ping-interval", str(ping),
                        "--time-limit", str(hold + 240)]
                    result = subprocess.run(command, capture_output=True, text=True, timeout=hold + 300)
                    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
                    try:
                        reports[client] = json.loads(line)
                    except json.JSONDecodeError:
                        reports[client] = {"ok": False}
                    shown = {k: v for k, v in reports[client].items() if k not in ("client", "workload")}
                    print(f"W7 {connections} ping {ping}s {client}: {json.dumps(shown)}", flush=True)
                for key, _ in W7_FIGURES:
                    raw = reports["raw-c"].get(key) if reports["raw-c"].get("ok") else None
                    ours = reports["websocketstreams"].get(key) if reports["websocketstreams"].get("ok") else None
                    ratio = f"{ours / raw:.2f}x" if ours is not None and raw else "n/a"
                    rows.append(f"| {connections:,} | {ping} s | `{key}` | {fmt(raw)} | {fmt(ours)} | {ratio} |")
    finally:
        server.stop()
    return ["## Many connections (W7)", "",
            "`wsbench --workload W7` and `wsbench-c --workload W7`, one run each against a fresh TestServer: "
            "open N connections (100 handshakes at a time), hold them with keep-alive pings (20 s pings "
            "held 45 s, 5 s pings held 20 s), close them all. Open time per 1,000 connections, resident "
            "memory per connection, the client's CPU while idle (% of one core), the time to close all, "
            "connections lost while held. n/a: the client had no ok run.", "",
            "| Connections | Pings | Figure | raw C (lws) | ours | ours / raw C |", "|---:|---:|---|---:|---:|---:|",
            *rows, ""]


# W1 in latency mode (`make bench-w1`, and a section of `make bench`): the clients run interleaved
# in one loop per round, and each ratio is the median of the rounds' ratios to raw C's run of the
# same round. (client, extra wsbench arguments): the raw C and peer commands take none.
W1_LATENCY_CLIENTS = [
    ("raw-c", []),
    ("websocketstreams", []),
    ("websocketstreams+loop", ["--executor", "loop"]),
    ("websocketstreams+latency", ["--latency-mode"]),
    ("websocketstreams+loop+latency", ["--executor", "loop", "--latency-mode"]),
]
W1_NAMES = {"raw-c": "raw C (lws)", "websocketstreams": "ours", "websocketstreams+loop": "ours, loop executor",
            "websocketstreams+latency": "ours, latency mode", "websocketstreams+loop+latency": "ours, loop executor, latency mode"}


def w1_targets(client, rtt_ratio, p50_ratio, p50_gap, peer_ratios):
    """The latency issue's targets for `client` on this run's medians: (text, met or None)."""
    if client == "websocketstreams+loop+latency":
        return "rtt ≥ 1.50x, p50 ≤ 0.60x", (rtt_ratio is not None and rtt_ratio >= 1.5
                                             and p50_ratio is not None and p50_ratio <= 0.6)
    if client == "websocketstreams+latency":
        return "rtt ≥ 1.20x", rtt_ratio is not None and rtt_ratio >= 1.2
    if client == "websocketstreams":
        best_peer = max(peer_ratios.values()) if peer_ratios else None
        text = "rtt ≥ picows' ratio" + (f" ({best_peer:.2f}x)" if best_peer is not None else "") + ", p50 ≤ raw C + 10 µs"
        met = (rtt_ratio is not None and p50_gap is not None and p50_gap <= 10
               and (best_peer is None or rtt_ratio >= best_peer))
        return text, met
    return "", None


def w1_latency_section(args, server, peers, runs):
    """W1 for raw C, ours (default and loop executor, each with and without latency mode) and the
    peers, interleaved round by round against `server`; markdown lines."""
    clients = [(name, extra) for name, extra in W1_LATENCY_CLIENTS] + [(peer, []) for peer in peers]
    reports = {name: [] for name, _ in clients}
    load_before = os.getloadavg()
    for run in range(1, runs + 1):
        for name, extra in clients:
            command = client_command(name if name in args.peers or name == "raw-c" else "websocketstreams", args) + extra
            before = children_cpu_seconds()
            started = time.monotonic()
            try:
                result = subprocess.run(command + ["--workload", "W1", "--url", f"ws://127.0.0.1:{server.port}/echo",
                                                   "--count", str(args.w1_count), "--time-limit", "60"],
                                        capture_output=True, text=True, timeout=90)
                lines = result.stdout.strip().splitlines()
                report = json.loads(lines[-1]) if lines else {"ok": False, "error": result.stderr[-300:]}
            except (subprocess.TimeoutExpired, json.JSONDecodeError) as error:
                report = {"ok": False, "error": str(error)[:300]}
            report["_wall_s"] = time.monotonic() - started
            report["_client_cpu_s"] = children_cpu_seconds() - before
            reports[name].append(report)
            shown = {k: v for k, v in report.items() if k in ("ok", "rtt_per_s", "p50_us", "p99_us", "error")}
            print(f"W1 run {run} {name}: {json.dumps(shown)}", flush=True)
    load_after = os.getloadavg()

    def paired(name, key):
        """The median over rounds of this client's figure / raw C's in the same round."""
        ratios = [mine.get(key) / raw.get(key) for mine, raw in zip(reports[name], reports["raw-c"])
                  if mine.get("ok") and raw.get("ok") and raw.get(key)]
        return statistics.median(ratios) if ratios else None

    def gap(name):
        gaps = [mine["p50_us"] - raw["p50_us"] for mine, raw in zip(reports[name], reports["raw-c"])
                if mine.get("ok") and raw.get("ok")]
        return statistics.median(gaps) if gaps else None

    peer_ratios = {peer: paired(peer, "rtt_per_s") for peer in peers if paired(peer, "rtt_per_s") is not None}
    rows = ["| Client | round trips/s | / raw C | p50 µs | / raw C | p50 − raw C's (µs) | p99 µs "
            "| client CPU s per wall s | Target | Met |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for name, _ in clients:
        ok = [r for r in reports[name] if r.get("ok")]
        rtt = median(r.get("rtt_per_s") for r in ok)
        p50 = median(r.get("p50_us") for r in ok)
        p99 = median(r.get("p99_us") for r in ok)
        cpu = median(r["_client_cpu_s"] / r["_wall_s"] for r in ok if r.get("_wall_s"))
        rtt_ratio, p50_ratio, p50_gap = (None, None, None) if name == "raw-c" else (
            paired(name, "rtt_per_s"), paired(name, "p50_us"), gap(name))
        target, met = w1_targets(name, rtt_ratio, p50_ratio, p50_gap, peer_ratios)
        rows.append("| " + " | ".join([
            W1_NAMES.get(name, name), fmt(rtt), f"{rtt_ratio:.2f}x" if rtt_ratio is not None else ("1.00x" if name == "raw-c" else "n/a"),
            fmt(p50), f"{p50_ratio:.2f}x" if p50_ratio is not None else ("1.00x" if name == "raw-c" else "n/a"),
            f"{p50_gap:+.1f}" if p50_gap is not None else "", fmt(p99), fmt(cpu), target,
            "" if met is None else ("✓" if met else "✗")]) + " |")
    failed = {name: sum(1 for r in reports[name] if not r.get("ok")) for name, _ in clients}
    return ["## W1 in latency mode", "",
            f"`wsbench --workload W1` ({args.w1_count:,} round trips of 32 bytes) for raw C, ours on the default "
            "and the loop executor, each without and with `--latency-mode` (a loop of its own with "
            "`WebSocketEventLoop.Configuration.lowLatency()`, which polls its sockets before it sleeps)"
            + "".join(f", {peer}" for peer in peers) + f", run in turn {runs} times against one TestServer, "
            "unpinned. Figures are medians; each ratio is the median of the rounds' ratios to raw C's run of "
            "the same round. The client's CPU seconds per wall second show what polling costs (1.0: one core).", "",
            f"- Load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}; "
            f"after: {' '.join(f'{x:.2f}' for x in load_after)}", "",
            *rows, "",
            "Runs that did not complete: " + (", ".join(f"{n} {c}" for n, c in failed.items() if c) or "none") + ".", ""]


def replace_w1_section(args):
    """`--only-w1`: W1 in latency mode against a fresh TestServer; prints its section and writes it
    into --out in place of the one there (or at its end)."""
    workdir = tempfile.mkdtemp(prefix="wsbench-")
    server = start_server(args, workdir)
    try:
        peers = []
        for name, command in args.peers.items():
            reason = probe_peer(name, command, server)
            if reason is None:
                peers.append(name)
            else:
                print(f"peer {name} left out: {reason}", file=sys.stderr, flush=True)
        lines = w1_latency_section(args, server, peers, args.runs)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(lines))
    replace_markdown_section(args.out, "## W1 in latency mode", lines)


def replace_markdown_section(path, heading, lines):
    """Puts `lines` (starting with `heading`) into the markdown file at `path` in place of the
    section with that heading (up to the next `## `), or at its end."""
    existing = open(path).read().splitlines() if os.path.exists(path) else []
    if heading in existing:
        start = existing.index(heading)
        end = next((i for i in range(start + 1, len(existing)) if existing[i].startswith("## ")), len(existing))
        existing[start:end] = lines
    else:
        existing += [""] + lines
    with open(path, "w") as out:
        out.write("\n".join(existing) + "\n")


# W9 (talking connections, compression on by default): N connections with the clients' default
# settings, each sending a 1 KiB JSON text and reading its echo every W9_PERIOD seconds, W9_ROUNDS
# rounds; against TestServer with compression (libwebsockets: 15-bit windows whatever is asked)
# and against python websockets' server (12-bit windows, honoured). Targets (issue 39), for ours at
# the larger N: RSS per connection after talking at most 24 KB against python websockets, 48 KB
# against TestServer.
W9_FIGURES = [("rss_per_conn_kb", "lower"), ("rss_per_conn_kb_idle", "lower"), ("wire_bytes_per_msg_out", "lower"),
              ("wire_bytes_per_msg_in", "lower"), ("cpu_us_per_msg", "lower"), ("open_s", "lower")]
W9_RSS_TARGETS = {"TestServer": 48, "python websockets": 24}
W9_ROUNDS = 2
W9_PERIOD = 10
# Ours before issue 39 (default offer `client_max_window_bits`, memLevel 8, zlib's state held between
# messages), measured with this W9 on 2026-11-27 (1,000 / 10,000 connections).
W9_BEFORE = {
    ("python websockets", 1000, "rss_per_conn_kb"): 113.1, ("python websockets", 1000, "rss_per_conn_kb_idle"): 11.0,
    ("TestServer", 1000, "rss_per_conn_kb"): 113.3, ("TestServer", 1000, "rss_per_conn_kb_idle"): 10.7,
    ("python websockets", 10000, "rss_per_conn_kb"): 111.5, ("python websockets", 10000, "rss_per_conn_kb_idle"): 10.0,
    ("TestServer", 10000, "rss_per_conn_kb"): 111.5, ("TestServer", 10000, "rss_per_conn_kb_idle"): 9.8,
    **{(server, n, "wire_bytes_per_msg_out"): 262.8 for server in ("python websockets", "TestServer") for n in (1000, 10000)},
    **{("python websockets", n, "wire_bytes_per_msg_in"): 258.8 for n in (1000, 10000)},
    **{("TestServer", n, "wire_bytes_per_msg_in"): 297.9 for n in (1000, 10000)},
}


def w9_clients(args):
    """W9's clients: ours, raw C (lws with its permessage-deflate extension), python websockets
    when its client runs."""
    clients = {"websocketstreams": [os.path.join(args.bin, "wsbench"), "--ping-interval", "0"],
               # lws on libev's epoll, as ours runs (its own poll() is O(sockets) a pass: 8.7 ms of CPU
               # per message at 10,000 connections, and the rounds ran 9x late).
               "raw-c": [args.wsbench_c, "--event-lib", "ev"]}
    if args.w9_python:
        clients["python-websockets"] = [args.w9_python, os.path.join(os.path.dirname(__file__), "peers", "websockets",
                                                                     "wsbench_websockets.py")]
    return clients


def w9_section(args, workdir):
    """W9 for every client against TestServer (compression on) and python websockets' server; markdown lines."""
    servers = [("TestServer", None)]
    if args.w9_python:
        servers.append(("python websockets", [args.w9_python, os.path.join(os.path.dirname(__file__), "peers",
                                                                           "websockets", "echo_server.py")]))
    clients = w9_clients(args)
    rows = []
    for server_name, server_command in servers:
        server = start_server(args, workdir, compression=True, command=server_command)
        try:
            for connections in (1000, args.w9_connections):
                reports = {}
                for client, command in clients.items():
                    wait_for_time_wait_to_clear()
                    command = command + ["--workload", "W9", "--url", f"ws://127.0.0.1:{server.port}/echo",
                                         "--connections", str(connections), "--count", str(W9_ROUNDS),
                                         "--period", str(W9_PERIOD), "--time-limit", str(W9_ROUNDS * W9_PERIOD + 240)]
                    result = subprocess.run(command, capture_output=True, text=True,
                                            timeout=W9_ROUNDS * W9_PERIOD + 300)
                    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
                    try:
                        reports[client] = json.loads(line)
                    except json.JSONDecodeError:
                        reports[client] = {"ok": False, "error": result.stderr[-300:]}
                    shown = {k: v for k, v in reports[client].items() if k not in ("client", "workload")}
                    print(f"W9 {server_name} {connections} {client}: {json.dumps(shown)}", flush=True)
                for key, _ in W9_FIGURES:
                    cells = []
                    for client in clients:
                        report = reports[client]
                        cells.append(fmt(report.get(key)) if report.get("ok") else "n/a")
                    before = W9_BEFORE.get((server_name, connections, key))
                    target = ""
                    if key == "rss_per_conn_kb" and connections == args.w9_connections:
                        ours = reports["websocketstreams"].get(key) if reports["websocketstreams"].get("ok") else None
                        limit = W9_RSS_TARGETS[server_name]
                        target = f"≤ {limit}" + ("" if ours is None else " ✓" if ours <= limit else " ✗")
                    rows.append(f"| {server_name} | {connections:,} | `{key}` | " + " | ".join(cells)
                                + f" | {fmt(before)} | {target} |")
        finally:
            server.stop()
    names = {"websocketstreams": "ours", "python-websockets": "python websockets (client)", "raw-c": "raw C"}
    return ["## Talking connections, compression on (W9)", "",
            f"`wsbench --workload W9`: N connections with each client's default settings (compression offered), "
            f"each sending a 1 KiB JSON text of the trade feed and reading its echo every {W9_PERIOD} s, "
            f"{W9_ROUNDS} rounds, the connections spread evenly over the period; one run per client, against "
            "TestServer with compression (libwebsockets compresses with 15-bit windows whatever is asked) and "
            "python websockets' server (12-bit windows, memLevel 5, honoured). Raw C is lws's client with lws's own "
            "permessage-deflate extension and its default offer (`client_max_window_bits`), as lws's examples enable it, "
            "on libev's epoll (`--event-lib ev`). "
            "RSS per connection after the first "
            "round (every connection has talked; `_idle`: before any message) minus the RSS before connecting; TCP "
            "payload bytes per message each way (frame headers included; `TCP_INFO`); client CPU per message sent "
            "and its echo read (one run: noisy). Ours runs without keep-alive pings (`--ping-interval 0`), as the "
            "python client does. *Before*: ours before issue 39.", "",
            "| Server | Connections | Figure | " + " | ".join(names.get(c, c) for c in clients) + " | ours before | target |",
            "|---|---:|---|" + "---:|" * len(clients) + "---:|---|", *rows, ""]


def replace_section(args, title, make_lines, how):
    """Runs one section and writes it into --out in place of the one titled `title` (or at its end)."""
    workdir = tempfile.mkdtemp(prefix="wsbench-")
    try:
        lines = make_lines(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lines[2] += f" Run on its own (`{how}`), {datetime.date.today().isoformat()}, load average before: " \
                + ", ".join(f"{load:.2f}" for load in os.getloadavg()) + "."
    text = open(args.out).read() if os.path.exists(args.out) else ""
    section = "\n".join(lines) + "\n"
    start = text.find(title)
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip() + "\n\n" + section
    with open(args.out, "w") as out:
        out.write(text)
    print("\n".join(lines))
    return 0


# W8 (messages larger than memory): one message each way, sent and read in pieces through
# /frame-echo; the targets are the messages issue's: peak RSS growth under 32 MiB, and at least
# half of our W3 rate in the same run.
W8_RSS_LIMIT_MB = 32
W8_RATE_OF_W3 = 0.5


# The messages issue's target for batches: W4 and W6 read through `messageBatches` (the
# `ours-batches` peer column) at least 1.3x picows' figure in the same run.
BATCHES_OVER_PICOWS = 1.3


def batches_lines(results, peers):
    """ours-batches against picows on W4 and W6, when both ran; markdown lines."""
    if "ours-batches" not in peers or "picows" not in peers:
        return []
    lines = [f"`messageBatches` (the `ours-batches` column) against picows, medians of this run; the target is "
             f"≥ {BATCHES_OVER_PICOWS:.1f}x:", ""]
    for scheme in ("ws", "wss"):
        cells = []
        for workload in ("W4", "W6"):
            if (scheme, workload, "picows") not in results:
                continue
            batches = peer_median(results[(scheme, workload, "ours-batches")], "msgs_per_s")
            picows = peer_median(results[(scheme, workload, "picows")], "msgs_per_s")
            ratio = batches / picows if batches and picows else None
            met = "" if ratio is None else (" ✓" if ratio >= BATCHES_OVER_PICOWS else " ✗")
            cells.append(f"{workload} {fmt(batches)} / {fmt(picows)} = {fmt(ratio)}x{met}")
        if cells:
            lines.append(f"- {scheme}://: " + "; ".join(cells))
    return lines + [""]


def streamed_section(args, server, results, runs):
    """W8 for ours, `runs` times against the plain server; markdown lines."""
    reports = []
    for run in range(1, runs + 1):
        report = run_one("websocketstreams", "W8", "/frame-echo", [], server, args)
        reports.append(report)
        shown = {k: v for k, v in report.items() if not k.startswith("_") and k not in ("client", "workload")}
        print(f"run {run} W8 ws websocketstreams: {json.dumps(shown)}", flush=True)
    ok = [r for r in reports if r.get("ok")]
    rate = median(r["mb_per_s"] for r in ok) if ok else None
    growth = max((r["peak_rss_growth_mb"] for r in ok if "peak_rss_growth_mb" in r), default=None)
    w3 = peer_median(results.get(("ws", "W3", "websocketstreams"), []), "mb_per_s")
    ratio = rate / w3 if rate and w3 else None
    size = ok[0]["message_mb"] if ok else None
    mark = lambda met: "✓" if met else "✗"
    return ["## Messages larger than memory (W8)", "",
            f"`wsbench --workload W8`: one {fmt(size)} MB message sent with `send(streaming:as:)` in 64 KiB pieces "
            "to `/frame-echo` (which echoes each frame as it arrives) while the echo is read through "
            "`messageStreams`; the peak resident size is reset after connecting and read at the end. "
            f"{len(ok)} of {len(reports)} runs ok; the rate is their median, the growth their largest.", "",
            "| figure | ours | target | met |", "|---|---|---|---|",
            f"| MB/s each way | {fmt(rate)} | ≥ {W8_RATE_OF_W3:.1f}x our W3 ({fmt(w3)} MB/s this run): {fmt(ratio)}x "
            f"| {mark(ratio is not None and ratio >= W8_RATE_OF_W3)} |",
            f"| peak RSS growth (MiB) | {fmt(growth)} | < {W8_RSS_LIMIT_MB} | "
            f"{mark(growth is not None and growth < W8_RSS_LIMIT_MB)} |", ""]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="release build folder with wsbench and TestServer")
    parser.add_argument("--wsbench-c", required=True, help="the raw C client binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--analysis", default=os.path.join(os.path.dirname(__file__), "analysis.md"))
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--w7-connections", type=int, default=10000,
                        help="the larger W7 scale (the smaller is 1,000); 0 skips W7")
    parser.add_argument("--only-w7", action="store_true",
                        help="run W7 only, and put its section into --out in place of the one there (or at its end)")
    parser.add_argument("--w9-connections", type=int, default=10000,
                        help="the larger W9 scale (the smaller is 1,000); 0 skips W9")
    parser.add_argument("--w9-python", default=None,
                        help="a python with `websockets` installed: W9's second server and its python client")
    parser.add_argument("--only-w9", action="store_true",
                        help="run W9 only, and put its section into --out in place of the one there (or at its end)")
    parser.add_argument("--tls", action=argparse.BooleanOptionalAction, default=True,
                        help="also run every workload over wss:// (default: on; --no-tls for ws:// only)")
    parser.add_argument("--peer", action="append", type=parse_peer, default=[], metavar="NAME=COMMAND",
                        help="another client with wsbench-c's command line and JSON line, run beside ours "
                             "(repeatable), e.g. --peer picows='venv/bin/python Benchmarks/peers/picows/wsbench_picows.py'")
    parser.add_argument("--only-w1", action="store_true",
                        help="run the W1 latency-mode section only (raw C, ours with and without latency mode on "
                             "both executors, the peers), print it and put it into --out in place of the one there")
    parser.add_argument("--w1-count", type=int, default=20000, help="round trips per W1 latency-mode run")
    args = parser.parse_args()
    args.peers = dict(args.peer)
    if args.only_w7:
        return replace_section(args, "## Many connections (W7)", scale_section, "make bench-w7")
    if args.only_w9:
        return replace_section(args, "## Talking connections, compression on (W9)", w9_section, "make bench-w9")
    if args.only_w1:
        return replace_w1_section(args)

    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="wsbench-")
    servers = []
    results = {}  # (scheme, workload, client) -> [reports]
    try:
        servers.append(start_server(args, workdir))
        if args.tls:
            servers.append(start_server(args, workdir, tls=True))
        plain = servers[0]
        peers, peers_not_run = [], {}
        for name, command in args.peers.items():
            reason = probe_peer(name, command, plain)
            if reason is None:
                peers.append(name)
            else:
                peers_not_run[name] = reason
                print(f"peer {name} left out: {reason}", file=sys.stderr, flush=True)
        clients = CLIENTS + peers
        for run in range(1, args.runs + 1):
            for workload, path, extra, _ in WORKLOADS:
                for server in servers:
                    for client in clients:
                        report = run_one(client, workload, path, extra, server, args)
                        results.setdefault((server.scheme, workload, client), []).append(report)
                        shown = {k: v for k, v in report.items() if not k.startswith("_") and k not in ("client", "workload")}
                        print(f"run {run} {workload} {server.scheme} {client}: {json.dumps(shown)}", flush=True)
        streamed_lines = streamed_section(args, plain, results, args.runs)
        w1_lines = w1_latency_section(args, plain, peers, args.runs)
        floor = subprocess.run([os.path.join(args.bin, "wsbench"), "--workload", "asyncstream"],
                               capture_output=True, text=True)
        floor_ns = json.loads(floor.stdout.strip().splitlines()[-1]).get("ns_per_element") if floor.stdout.strip() else None
        profile_lines = [] if args.no_profile else profile(args, plain.port, workdir)
        scale_lines = scale_section(args, workdir) if args.w7_connections > 0 else []
        talking_lines = w9_section(args, workdir) if args.w9_connections > 0 else []
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    table = comparison_table(results, "ws", peers)
    cpu = cpu_table(results, "ws", clients)

    w3 = []
    for client in clients:
        reports = results[("ws", "W3", client)]
        # A column with no W3 of its own (ours-batches) reports ok with a count of 0: n/a.
        per_byte = median(r["_client_cpu_s"] / (2 * r["count"] * 4 * 1024 * 1024) * 1e9
                          for r in reports if r.get("ok") and r.get("count"))
        w3.append(f"{client} {fmt(per_byte)} ns")

    def failures(scheme):
        counted = sum(1 for (s, _, c), reports in results.items() if s == scheme and c in CLIENTS
                      for r in reports if not r.get("ok"))
        by_peer = {peer: sum(1 for w, _, _, _ in WORKLOADS for r in results[(scheme, w, peer)] if not r.get("ok"))
                   for peer in peers}
        text = f"{counted}"
        if peers:
            text += " (peers: " + ", ".join(f"{peer} {n}" for peer, n in by_peer.items()) + ")"
        failed = sorted({f"{peer} {w}" for peer in peers for w, _, _, _ in WORKLOADS
                         if results[(scheme, w, peer)] and not any(r.get("ok") for r in results[(scheme, w, peer)])})
        if failed:
            text += "; no ok run, so n/a: " + ", ".join(failed)
        return text

    def peer_line(peer):
        notes = sorted({f"{k} {v}" for reports in (results[(s, w, peer)] for s in ("ws", "wss") for w, _, _, _ in WORKLOADS
                                                   if (s, w, peer) in results)
                        for r in reports for k, v in r.items()
                        if k not in ("client", "workload", "error") and not k.startswith("_") and isinstance(v, str)})
        shown = [os.path.relpath(word) if os.path.isabs(word) and word.startswith(os.getcwd() + os.sep) else word
                 for word in args.peers[peer]]
        return f"- Peer `{peer}`: `{shlex.join(shown)}`" + (f" ({'; '.join(notes)})" if notes else "")

    peer_lines = [peer_line(peer) for peer in peers]
    peer_lines += [f"- Peer `{peer}` not run: {reason}" for peer, reason in peers_not_run.items()]

    lines = ["# Benchmarks", "",
             "Generated by `make bench` (Benchmarks/run_benchmarks.py); the analysis after the tables is "
             "Benchmarks/analysis.md. Medians of "
             f"{args.runs} interleaved runs (raw C, ours, ours on the loop executor"
             + "".join(f", {peer}" for peer in peers) + ", repeated) against the bundled "
             "TestServer (release, no compression) on loopback. Ratios are ours / raw C: for rates higher is "
             "better, for latency and memory lower is better."
             + (" Peers (Benchmarks/peers/) are other clients users would pick, given the same workloads and "
                "the same command line; their columns are medians of their ok runs, with their ratio to raw C. "
                "*Ahead of peers* says, for the figures where ours should beat every peer, which of ours "
                "(ours; loop: ours on the loop executor) did, and which peer was ahead where not."
                if args.peers else ""), ""]
    lines += machine_description(load_before, load_after)
    lines += peer_lines
    lines += ["", "## Over ws://", "", *table, "",
              f"Runs that did not complete: {failures('ws')}.", "",
              *batches_lines(results, peers),
              "Before and after: the ratios to raw C where the hot-path issue started (its table: one interleaved "
              "run of 3 repetitions against a C lws echo server, W6 and TLS not yet measured) and in this run. "
              "The load averages above are this run's.", "",
              *before_after_table(results, peers), "",
              "CPU time per run (user + system), medians:", "", *cpu, "",
              "W3 client CPU per payload byte (4 MiB out and back, both directions counted): " + "; ".join(w3) + ".", "",
              f"The floor under any `AsyncStream` API on this machine (`wsbench --workload asyncstream`): "
              f"{fmt(floor_ns)} ns per element.", ""]
    if args.tls:
        tls_table = comparison_table(results, "wss", peers)
        tls_cost = tls_cost_table(results)
        lines += ["## Over wss://", "",
                  "The same workloads against a second TestServer started with `--tls` (a certificate for "
                  "127.0.0.1 and localhost signed by a CA generated at start), every client verifying the chain "
                  "and the host name with that CA as `SSL_CERT_FILE`. Each workload's wss:// runs follow its "
                  "ws:// runs.", "", *tls_table, "",
                  f"Runs that did not complete: {failures('wss')}.", "",
                  "Ours over wss:// against ours over ws:// in the same run (✓: within "
                  f"{WSS_TOLERANCE:.0%}; server-bound: not within it, but the server's CPU share on the wss:// "
                  f"runs is above {SERVER_BOUND_SHARE:.0%}; never said of memory). The server's CPU share is its CPU seconds over the "
                  "wall seconds of the client's run (process start to exit; 100% is one core):", "",
                  *tls_cost, "",
                  "CPU time per wss:// run (user + system), medians:", "", *cpu_table(results, "wss", clients), ""]
    lines += w1_lines
    lines += streamed_lines
    lines += scale_lines
    lines += talking_lines
    if profile_lines:
        lines += ["## Profiles", "", *profile_lines]
    if os.path.exists(args.analysis):
        lines += ["", open(args.analysis).read().rstrip(), ""]
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(table))
    if args.tls:
        print("\nover wss://\n" + "\n".join(tls_table))
        print("\nours over wss:// / ours over ws://\n" + "\n".join(tls_cost))
    for line in peer_lines:
        print(line)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

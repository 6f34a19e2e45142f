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

Only the Python standard library is used. Speed is never asserted here: the table says which
targets were met on this run.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# (workload, path on the server, extra arguments, figures: (key, better, target ratio or None))
WORKLOADS = [
    ("W1", "/echo", [], [("rtt_per_s", "higher", 0.90), ("p50_us", "lower", 1.15), ("p99_us", "lower", None)]),
    ("W2", "/echo", [], [("msgs_per_s", "higher", 1.00), ("mb_per_s", "higher", None)]),
    ("W3", "/echo", [], [("mb_per_s", "higher", 0.95)]),
    ("W4", "/push?count=200000&size=128", [], [("msgs_per_s", "higher", 0.96)]),
    ("W5", "/echo", [], [("rss_per_conn_kb", "lower", 1.40), ("open_s", "lower", None)]),
    ("W6", "/push?count=2000&size=128", [], [("msgs_per_s", "higher", 0.90)]),
]

CLIENTS = ["raw-c", "websocketstreams", "websocketstreams+loop"]

# Each wss:// figure of ours should be within WSS_TOLERANCE of the same figure over ws:// in the
# same run (rates at least 0.75x, latency and memory at most 1.25x), except where the server's CPU
# share on the wss:// run is above SERVER_BOUND_SHARE (then the server is what limits the figure;
# never for memory, which the server's load does not explain).
WSS_TOLERANCE = 0.25
SERVER_BOUND_SHARE = 0.80


def client_command(client, args):
    if client == "raw-c":
        return [args.wsbench_c]
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


def start_server(args, workdir, tls=False):
    """Starts TestServer on a free loopback port; with `tls`, waits for the `CA certificate: PATH`
    line it prints (its stdout goes to a log file, flushed right after the port file is written)."""
    name = "tls" if tls else "plain"
    port_file = os.path.join(workdir, f"port-{name}")
    log_path = os.path.join(workdir, f"server-{name}.log")
    command = [os.path.join(args.bin, "TestServer"), "--host", "127.0.0.1", "--port", "0", "--no-compression",
               "--port-file", port_file] + (["--tls"] if tls else [])
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


def comparison_table(results, scheme):
    """Medians of every figure over `scheme`, ours / raw C, with the targets."""
    table = ["| Workload | Figure | raw C (lws) | ours | ours / raw C | ours, loop executor | loop / raw C | Target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for workload, _, _, figures in WORKLOADS:
        for key, better, target in figures:
            raw = median(r.get(key) for r in results[(scheme, workload, "raw-c")])
            row = [workload, f"`{key}`", fmt(raw)]
            for client in CLIENTS[1:]:
                ours = median(r.get(key) for r in results[(scheme, workload, client)])
                ratio = ours / raw if ours is not None and raw else None
                met = ""
                if ratio is not None and target is not None:
                    ok = ratio >= target if better == "higher" else ratio <= target
                    met = " ✓" if ok else " ✗"
                row += [fmt(ours), (f"{ratio:.2f}x{met}" if ratio is not None else "n/a")]
            row.append(("≥ " if better == "higher" else "≤ ") + f"{target:.2f}x" if target else "")
            table.append("| " + " | ".join(row) + " |")
    return table


def cpu_table(results, scheme):
    cpu = ["| Workload | client CPU s: raw C / ours / loop | server CPU s: raw C / ours / loop |", "|---|---|---|"]
    for workload, _, _, _ in WORKLOADS:
        client_cpu = " / ".join(fmt(median(r["_client_cpu_s"] for r in results[(scheme, workload, c)])) for c in CLIENTS)
        server_cpu = " / ".join(fmt(median(r["_server_cpu_s"] for r in results[(scheme, workload, c)])) for c in CLIENTS)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="release build folder with wsbench and TestServer")
    parser.add_argument("--wsbench-c", required=True, help="the raw C client binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--analysis", default=os.path.join(os.path.dirname(__file__), "analysis.md"))
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--tls", action=argparse.BooleanOptionalAction, default=True,
                        help="also run every workload over wss:// (default: on; --no-tls for ws:// only)")
    args = parser.parse_args()

    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="wsbench-")
    servers = []
    results = {}  # (scheme, workload, client) -> [reports]
    try:
        servers.append(start_server(args, workdir))
        if args.tls:
            servers.append(start_server(args, workdir, tls=True))
        plain = servers[0]
        for run in range(1, args.runs + 1):
            for workload, path, extra, _ in WORKLOADS:
                for server in servers:
                    for client in CLIENTS:
                        report = run_one(client, workload, path, extra, server, args)
                        results.setdefault((server.scheme, workload, client), []).append(report)
                        shown = {k: v for k, v in report.items() if not k.startswith("_") and k not in ("client", "workload")}
                        print(f"run {run} {workload} {server.scheme} {client}: {json.dumps(shown)}", flush=True)
        floor = subprocess.run([os.path.join(args.bin, "wsbench"), "--workload", "asyncstream"],
                               capture_output=True, text=True)
        floor_ns = json.loads(floor.stdout.strip().splitlines()[-1]).get("ns_per_element") if floor.stdout.strip() else None
        profile_lines = [] if args.no_profile else profile(args, plain.port, workdir)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    table = comparison_table(results, "ws")
    cpu = cpu_table(results, "ws")

    w3 = []
    for client in CLIENTS:
        reports = results[("ws", "W3", client)]
        per_byte = median(r["_client_cpu_s"] / (2 * r["count"] * 4 * 1024 * 1024) * 1e9 for r in reports if r.get("ok"))
        w3.append(f"{client} {fmt(per_byte)} ns")

    def failures(scheme):
        return sum(1 for (s, _, _), reports in results.items() if s == scheme for r in reports if not r.get("ok"))

    lines = ["# Benchmarks", "",
             "Generated by `make bench` (Benchmarks/run_benchmarks.py); the analysis after the tables is "
             "Benchmarks/analysis.md. Medians of "
             f"{args.runs} interleaved runs (raw C, ours, ours on the loop executor, repeated) against the bundled "
             "TestServer (release, no compression) on loopback. Ratios are ours / raw C: for rates higher is "
             "better, for latency and memory lower is better.", ""]
    lines += machine_description(load_before, load_after)
    lines += ["", "## Over ws://", "", *table, "",
              f"Runs that did not complete: {failures('ws')}.", "",
              "CPU time per run (user + system), medians:", "", *cpu, "",
              "W3 client CPU per payload byte (4 MiB out and back, both directions counted): " + "; ".join(w3) + ".", "",
              f"The floor under any `AsyncStream` API on this machine (`wsbench --workload asyncstream`): "
              f"{fmt(floor_ns)} ns per element.", ""]
    if args.tls:
        tls_table = comparison_table(results, "wss")
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
                  "CPU time per wss:// run (user + system), medians:", "", *cpu_table(results, "wss"), ""]
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
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

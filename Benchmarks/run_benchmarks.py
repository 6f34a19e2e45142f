#!/usr/bin/env python3
"""`make bench`: wsbench (WebSocketStreams) against wsbench-c (raw libwebsockets), side by side.

Starts the release TestServer (no compression) on a free loopback port, runs every workload for
every client interleaved (raw C, ours, ours on the loop executor, then again) --runs times, and
prints a markdown table of medians with the ratio ours / raw C and the target. The table, the
machine it ran on and the hand-written analysis in Benchmarks/analysis.md go to --out.

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


def run_one(client, workload, path, extra, port, server_pid, args):
    command = client_command(client, args) + [
        "--workload", workload, "--url", f"ws://127.0.0.1:{port}{path}", "--time-limit", "60"] + extra
    server_before = process_cpu_seconds(server_pid)
    client_before = children_cpu_seconds()
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - started
    client_cpu = children_cpu_seconds() - client_before
    server_cpu = process_cpu_seconds(server_pid) - server_before
    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
    try:
        report = json.loads(line)
    except json.JSONDecodeError:
        report = {"ok": False, "error": f"unparsable output: {result.stdout!r} {result.stderr!r}"}
    report["_client_cpu_s"] = client_cpu
    report["_server_cpu_s"] = server_cpu
    report["_wall_s"] = wall
    if not report.get("ok"):
        print(f"  {client} {workload}: NOT OK: {report.get('error', line)}", file=sys.stderr)
    return report


def start_server(args, workdir):
    port_file = os.path.join(workdir, "port")
    log = open(os.path.join(workdir, "server.log"), "w")
    server = subprocess.Popen(
        [os.path.join(args.bin, "TestServer"), "--host", "127.0.0.1", "--port", "0", "--no-compression",
         "--port-file", port_file], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return server, int(open(port_file).read().strip())
        time.sleep(0.05)
    server.kill()
    raise SystemExit("TestServer did not start")


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="release build folder with wsbench and TestServer")
    parser.add_argument("--wsbench-c", required=True, help="the raw C client binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--analysis", default=os.path.join(os.path.dirname(__file__), "analysis.md"))
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()

    load_before = os.getloadavg()
    workdir = tempfile.mkdtemp(prefix="wsbench-")
    server, port = start_server(args, workdir)
    results = {}  # (workload, client) -> [reports]
    try:
        for run in range(1, args.runs + 1):
            for workload, path, extra, _ in WORKLOADS:
                for client in CLIENTS:
                    report = run_one(client, workload, path, extra, port, server.pid, args)
                    results.setdefault((workload, client), []).append(report)
                    shown = {k: v for k, v in report.items() if not k.startswith("_") and k not in ("client", "workload")}
                    print(f"run {run} {workload} {client}: {json.dumps(shown)}", flush=True)
        floor = subprocess.run([os.path.join(args.bin, "wsbench"), "--workload", "asyncstream"],
                               capture_output=True, text=True)
        floor_ns = json.loads(floor.stdout.strip().splitlines()[-1]).get("ns_per_element") if floor.stdout.strip() else None
        profile_lines = [] if args.no_profile else profile(args, port, workdir)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    table = ["| Workload | Figure | raw C (lws) | ours | ours / raw C | ours, loop executor | loop / raw C | Target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for workload, _, _, figures in WORKLOADS:
        for key, better, target in figures:
            raw = median(r.get(key) for r in results[(workload, "raw-c")])
            row = [workload, f"`{key}`", fmt(raw)]
            for client in CLIENTS[1:]:
                ours = median(r.get(key) for r in results[(workload, client)])
                ratio = ours / raw if ours is not None and raw else None
                met = ""
                if ratio is not None and target is not None:
                    ok = ratio >= target if better == "higher" else ratio <= target
                    met = " ✓" if ok else " ✗"
                row += [fmt(ours), (f"{ratio:.2f}x{met}" if ratio is not None else "n/a")]
            row.append(("≥ " if better == "higher" else "≤ ") + f"{target:.2f}x" if target else "")
            table.append("| " + " | ".join(row) + " |")

    cpu = ["| Workload | client CPU s: raw C / ours / loop | server CPU s: raw C / ours / loop |", "|---|---|---|"]
    for workload, _, _, _ in WORKLOADS:
        client_cpu = " / ".join(fmt(median(r["_client_cpu_s"] for r in results[(workload, c)])) for c in CLIENTS)
        server_cpu = " / ".join(fmt(median(r["_server_cpu_s"] for r in results[(workload, c)])) for c in CLIENTS)
        cpu.append(f"| {workload} | {client_cpu} | {server_cpu} |")

    w3 = []
    for client in CLIENTS:
        reports = results[("W3", client)]
        per_byte = median(r["_client_cpu_s"] / (2 * r["count"] * 4 * 1024 * 1024) * 1e9 for r in reports if r.get("ok"))
        w3.append(f"{client} {fmt(per_byte)} ns")
    failures = sum(1 for reports in results.values() for r in reports if not r.get("ok"))

    lines = ["# Benchmarks", "",
             "Generated by `make bench` (Benchmarks/run_benchmarks.py); the analysis after the tables is "
             "Benchmarks/analysis.md. Medians of "
             f"{args.runs} interleaved runs (raw C, ours, ours on the loop executor, repeated) against the bundled "
             "TestServer (release, no compression) on loopback. Ratios are ours / raw C: for rates higher is "
             "better, for latency and memory lower is better.", ""]
    lines += machine_description(load_before, load_after)
    lines += ["", *table, "",
              f"Runs that did not complete: {failures}.", "",
              "CPU time per run (user + system), medians:", "", *cpu, "",
              "W3 client CPU per payload byte (4 MiB out and back, both directions counted): " + "; ".join(w3) + ".", "",
              f"The floor under any `AsyncStream` API on this machine (`wsbench --workload asyncstream`): "
              f"{fmt(floor_ns)} ns per element.", ""]
    if profile_lines:
        lines += ["## Profiles", "", *profile_lines]
    if os.path.exists(args.analysis):
        lines += ["", open(args.analysis).read().rstrip(), ""]
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(table))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""wsbench_websockets: wsbench's W9 written on python `websockets` (asyncio), as a client beside ours.

    wsbench_websockets.py --workload W9 --url ws://HOST:PORT/PATH [--connections N] [--count ROUNDS]
                          [--period SECONDS] [--size BYTES] [--inflight K] [--time-limit S]

W9 as wsbench runs it (Benchmarks/wsbench/TalkingConnectionsWorkload.swift): open --connections
(at most --inflight handshakes at a time) with the library's defaults (websockets offers
permessage-deflate with 12-bit windows both ways and compresses with memLevel 5), then --count
rounds: in each, every connection sends one --size JSON text of the trade feed (the same bytes as
wsbench's JSONFeed) and reads its echo, the connections spread evenly over --period seconds.
Figures: rss_per_conn_kb after the first round (every connection has talked once) minus the
resident size before connecting, per connection (also _idle, before any message, and _end, after
the last round); wire_bytes_per_msg_out and _in, the TCP payload bytes (TCP_INFO bytes_acked and
bytes_received over every socket) per message during the rounds; cpu_us_per_msg, this process's
CPU during the rounds per message sent and its echo received. One JSON line, as wsbench prints.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import struct
import sys
import time

from websockets.asyncio.client import connect


def resident_kilobytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGESIZE") // 1024)


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tcp_bytes(sockets):
    """(sent and acknowledged, received) TCP payload bytes over `sockets` (Linux TCP_INFO)."""
    sent = received = 0
    for sock in sockets:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
        if len(info) >= 136:
            acked, got = struct.unpack_from("QQ", info, 120)
            sent += acked
            received += got
    return sent, received


class SplitMix:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        mask = (1 << 64) - 1
        self.state = (self.state + 0x9E3779B97F4A7C15) & mask
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)


def json_feed(count, size):
    """wsbench's JSONFeed.messages(count:size:): python's repr of a float is Swift's description."""
    generator = SplitMix(0x5EED)
    symbols = ["BTCUSD", "ETHUSD", "SOLUSD", "XRPUSD"]
    sequence = 0
    messages = []
    for _ in range(count):
        text = "["
        while len(text.encode()) < size:
            sequence += 1
            price = (generator.next() % 6_000_000) / 100
            quantity = (generator.next() % 50_000) / 10_000
            side = "buy" if generator.next() % 2 == 0 else "sell"
            symbol = symbols[generator.next() % 4]
            text += (f'{{"sym":"{symbol}","px":{price!r},"qty":{quantity!r},'
                     f'"ts":{1_700_000_000_000 + sequence * 37},"side":"{side}"}},')
        messages.append(text.encode()[:size].decode())
    return messages


async def run(options):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    feed = json_feed(1000, options.size)
    report = {"client": "python-websockets", "workload": "W9", "ok": False,
              "count": options.connections * options.count, "completed": 0, "elapsed_s": 0}
    # Warm-up: one connection opened and closed, so the library's one-time costs are in the baseline.
    async with connect(options.url, ping_interval=None, max_size=None):
        pass
    before = resident_kilobytes()
    semaphore = asyncio.Semaphore(options.inflight)

    async def open_one():
        async with semaphore:
            return await connect(options.url, ping_interval=None, max_size=None, open_timeout=60)

    started = time.monotonic()
    results = await asyncio.gather(*(open_one() for _ in range(options.connections)), return_exceptions=True)
    connections = [r for r in results if not isinstance(r, BaseException)]
    failures = [r for r in results if isinstance(r, BaseException)]
    open_s = time.monotonic() - started
    idle = resident_kilobytes()
    sockets = [c.transport.get_extra_info("socket") for c in connections]
    sent_before, received_before = tcp_bytes(sockets)
    cpu_before = cpu_seconds()
    completed = 0
    talked = idle
    error = f"connect failed: {failures[0]!r}" if failures else None
    rounds_started = time.monotonic()
    try:
        for round_index in range(options.count):
            round_start = rounds_started + round_index * options.period
            for index, connection in enumerate(connections):
                due = round_start + options.period * index / max(1, len(connections))
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await connection.send(feed[(index * options.count + round_index) % len(feed)])
                await connection.recv()
                completed += 1
            if round_index == 0:
                talked = resident_kilobytes()
    except Exception as failure:  # the report says what went wrong
        error = error or f"{failure!r}"
    cpu = cpu_seconds() - cpu_before
    elapsed = time.monotonic() - rounds_started
    sent_after, received_after = tcp_bytes(sockets)
    end = resident_kilobytes()
    count = max(1, len(connections))
    report.update({
        "ok": error is None and completed == options.connections * options.count,
        "completed": completed, "elapsed_s": round(elapsed, 6), "connections": len(connections),
        "open_s": round(open_s, 6),
        "rss_per_conn_kb": round((talked - before) / count, 3),
        "rss_per_conn_kb_idle": round((idle - before) / count, 3),
        "rss_per_conn_kb_end": round((end - before) / count, 3),
        "wire_bytes_per_msg_out": round((sent_after - sent_before) / max(1, completed), 3),
        "wire_bytes_per_msg_in": round((received_after - received_before) / max(1, completed), 3),
        "cpu_us_per_msg": round(cpu / max(1, completed) * 1e6, 3),
    })
    if error:
        report["error"] = error
    await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--count", type=int, default=3, help="rounds: messages per connection")
    parser.add_argument("--period", type=float, default=10)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--inflight", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=None)
    parser.add_argument("--ping-interval", type=float, default=None, help="ignored: no keep-alive pings")
    options = parser.parse_args()
    if options.workload != "W9":
        print(json.dumps({"client": "python-websockets", "workload": options.workload, "ok": False,
                          "count": 0, "completed": 0, "elapsed_s": 0, "error": "only W9"}))
        return 1
    limit = options.time_limit or (options.count * options.period + 120)
    try:
        report = asyncio.run(asyncio.wait_for(run(options), limit))
    except asyncio.TimeoutError:
        report = {"client": "python-websockets", "workload": "W9", "ok": False, "count": 0, "completed": 0,
                  "elapsed_s": limit, "error": f"no result in {limit} s"}
    print(json.dumps(report, separators=(",", ":")))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""wsbench_picows: the wsbench workloads written on picows, as a peer for `make bench`.

Same command line and JSON line as wsbench-c (Benchmarks/wsbench-c):

    wsbench_picows.py --workload W1..W6 --url ws[s]://HOST:PORT/PATH [--count N] [--size BYTES]
                      [--inflight K] [--connections C] [--time-limit S]

Written as a user of picows writes a client: `ws_connect` with a `WSListener` subclass whose
`on_ws_frame` answers from the callback, on asyncio's loop (uvloop's when it is installed; the
JSON line's `event_loop` says which). picows hands over frames, not messages: a message is
complete at its final frame, and its payload is counted where it lies in picows' receive buffer
(no copy), as picows intends. wss:// uses `ssl.create_default_context()`, which verifies the
chain and the host name and honours SSL_CERT_FILE.
"""
import argparse
import asyncio
import json
import math
import os
import ssl
import sys
import time

from picows import WSCloseCode, WSListener, WSMsgType, ws_connect

try:
    import uvloop
except ImportError:  # plain asyncio then
    uvloop = None

DEFAULT_COUNT = {1: 20000, 2: 100000, 3: 50, 4: 200000, 5: 1000, 6: 2000}
DEFAULT_SIZE = {1: 32, 2: 1024, 3: 4 * 1024 * 1024, 4: 128, 5: 0, 6: 128}
DATA_FRAMES = (WSMsgType.TEXT, WSMsgType.BINARY, WSMsgType.CONTINUATION)


def resident_kilobytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGESIZE") // 1024)


def percentile(ordered, p):
    """Nearest rank, as wsbench and wsbench-c compute it."""
    if not ordered:
        return 0.0
    rank = min(max(math.ceil(p * len(ordered) / 100 - 1e-9), 1), len(ordered))
    return ordered[rank - 1]


class Run:
    """What one run has done so far; touched only from the event loop's thread."""

    def __init__(self, options, loop):
        self.options = options
        self.workload = options.workload
        self.done = loop.create_future()
        self.open = 0
        self.failed = 0
        self.sent = 0
        self.completed = 0
        self.received_bytes = 0
        self.start = None
        self.end = None
        self.rtt_us = []
        self.error = None
        self.transports = []
        self.text = b"x" * options.size
        self.payload = b"x" * options.size
        if self.workload == 5:
            self.target = options.connections
        elif self.workload == 6:
            self.target = options.count * options.connections
        else:
            self.target = options.count

    def is_done(self):
        if self.workload == 5:
            return self.open + self.failed >= self.options.connections
        return self.completed >= self.target

    def finish_if_done(self):
        if self.end is None and self.is_done():
            self.finish()

    def finish(self):
        if self.end is None:
            self.end = time.monotonic()
        if not self.done.done():
            self.done.set_result(None)

    def fail(self, reason):
        if self.error is None:
            self.error = reason


class PingPongListener(WSListener):
    """W1: one text message in flight; the next goes out when its echo arrives."""

    def __init__(self, run):
        super().__init__()
        self.run = run
        self.sent_at = 0.0

    def send_next(self, transport):
        run = self.run
        run.sent += 1
        self.sent_at = time.monotonic()
        transport.send(WSMsgType.TEXT, run.text)

    def on_ws_connected(self, transport):
        opened(self.run, transport)
        if self.run.sent < self.run.options.count:
            self.send_next(transport)

    def on_ws_frame(self, transport, frame):
        if frame.msg_type not in DATA_FRAMES or not frame.fin:
            return
        run = self.run
        run.completed += 1
        if run.completed <= run.options.count:
            run.rtt_us.append((time.monotonic() - self.sent_at) * 1e6)
        if run.sent < run.options.count:
            self.send_next(transport)
        run.finish_if_done()

    def on_ws_disconnected(self, transport):
        disconnected(self.run)


class EchoListener(WSListener):
    """W2 (--inflight binary messages in flight) and W3 (one at a time)."""

    def __init__(self, run):
        super().__init__()
        self.run = run
        self.window = 1 if run.workload == 3 else max(1, run.options.inflight)

    def on_ws_connected(self, transport):
        run = self.run
        opened(run, transport)
        while run.sent < min(self.window, run.options.count):
            run.sent += 1
            transport.send(WSMsgType.BINARY, run.payload)

    def on_ws_frame(self, transport, frame):
        if frame.msg_type not in DATA_FRAMES:
            return
        run = self.run
        run.received_bytes += frame.payload_size
        if not frame.fin:
            return
        run.completed += 1
        if run.sent < run.options.count:
            run.sent += 1
            transport.send(WSMsgType.BINARY, run.payload)
        run.finish_if_done()

    def on_ws_disconnected(self, transport):
        disconnected(self.run)


class PushListener(WSListener):
    """W4 and W6: counts the messages the server pushes."""

    def __init__(self, run):
        super().__init__()
        self.run = run

    def on_ws_connected(self, transport):
        opened(self.run, transport)

    def on_ws_frame(self, transport, frame):
        if frame.msg_type not in DATA_FRAMES:
            return
        run = self.run
        run.received_bytes += frame.payload_size
        if frame.fin:
            run.completed += 1
            run.finish_if_done()

    def on_ws_disconnected(self, transport):
        disconnected(self.run)


class IdleListener(WSListener):
    """W5: a connection that is opened and held."""

    def __init__(self, run):
        super().__init__()
        self.run = run


def opened(run, transport):
    run.open += 1
    run.transports.append(transport)
    if run.start is None:
        run.start = time.monotonic()


def disconnected(run):
    if run.end is None:
        run.fail("connection closed before the run completed")
        run.finish()


LISTENERS = {1: PingPongListener, 2: EchoListener, 3: EchoListener, 4: PushListener, 5: IdleListener, 6: PushListener}


async def connect(run, ssl_context):
    listener = LISTENERS[run.workload]
    try:
        transport, _ = await ws_connect(lambda: listener(run), run.options.url, ssl_context=ssl_context)
        return transport
    except Exception as error:  # counted, and the first reported
        run.failed += 1
        run.fail(f"connect failed: {type(error).__name__}: {error}")
        run.finish_if_done()
        return None


async def bench(options):
    loop = asyncio.get_running_loop()
    run = Run(options, loop)
    ssl_context = ssl.create_default_context() if options.url.startswith("wss://") else None
    resident_before = 0
    if run.workload == 5:
        # One connection opened and closed first, so the loop's and TLS's one-time allocations
        # are in the baseline (as lws's context is in wsbench-c's; wsbench does the same).
        warm = Run(options, loop)
        transport = await connect(warm, ssl_context)
        if transport is None:
            run.fail(warm.error)
        else:
            transport.send_close(WSCloseCode.OK)
            transport.disconnect()
            await transport.wait_disconnected()
        resident_before = resident_kilobytes()
    connect_started = time.monotonic()
    tasks = []
    if run.error is None:
        if run.workload == 5:
            async def open_idle():
                transport = await connect(run, ssl_context)
                if transport is not None:
                    opened(run, transport)
                    run.finish_if_done()
            tasks = [asyncio.ensure_future(open_idle()) for _ in range(options.connections)]
        else:
            tasks = [asyncio.ensure_future(connect(run, ssl_context)) for _ in range(options.connections)]
        try:
            await asyncio.wait_for(asyncio.shield(run.done), options.time_limit)
        except asyncio.TimeoutError:
            pass
    stop = run.end if run.end is not None else time.monotonic()
    resident_after = resident_kilobytes()
    ok = run.is_done() and run.failed == 0 and run.error is None
    began = connect_started if run.workload == 5 else run.start
    elapsed = stop - began if began is not None else 0.0
    per_second = 1 / elapsed if elapsed > 0 else 0.0
    report = {"client": "picows", "workload": f"W{run.workload}", "ok": ok, "count": run.target,
              "completed": run.open if run.workload == 5 else run.completed, "elapsed_s": round(elapsed, 6)}
    if run.workload == 1:
        ordered = sorted(run.rtt_us)
        report.update(rtt_per_s=round(len(ordered) * per_second, 1), p50_us=round(percentile(ordered, 50), 1),
                      p99_us=round(percentile(ordered, 99), 1))
    elif run.workload == 5:
        report.update(open_s=round(elapsed, 6),
                      rss_per_conn_kb=round((resident_after - resident_before) / run.open, 2) if run.open else 0.0)
    else:
        report.update(msgs_per_s=round(run.completed * per_second, 1),
                      mb_per_s=round(run.received_bytes * per_second / 1e6, 3))
    report["event_loop"] = "uvloop" if uvloop is not None else "asyncio"
    if not ok:
        report["error"] = run.error or f"time limit reached with {report['completed']} of {run.target} done"
    print(json.dumps(report, separators=(",", ":")), flush=True)

    # Close every connection; a server that does not answer within 5 s is not waited for.
    run.end = run.end or stop  # closing is not a failure any more
    for transport in run.transports:
        transport.send_close(WSCloseCode.OK)
        transport.disconnect()
    waits = [transport.wait_disconnected() for transport in run.transports]
    if waits:
        await asyncio.wait([asyncio.ensure_future(w) for w in waits], timeout=5)
    for task in tasks:
        task.cancel()
    return 0 if ok else 1


def parse(argv):
    def usage(message):
        print(f"wsbench_picows: {message}", file=sys.stderr)
        sys.exit(2)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--count", type=int, default=-1)
    parser.add_argument("--size", type=int, default=-1)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--connections", type=int, default=-1)
    parser.add_argument("--time-limit", dest="time_limit", type=float, default=60.0)
    options = parser.parse_args(argv)
    if options.workload not in {f"W{n}" for n in range(1, 7)}:
        usage("--workload must be W1..W6")
    if not options.url.startswith(("ws://", "wss://")):
        usage("--url must be ws:// or wss://")
    options.workload = int(options.workload[1])
    if options.count < 0:
        options.count = DEFAULT_COUNT[options.workload]
    if options.size < 0:
        options.size = DEFAULT_SIZE[options.workload]
    if options.connections < 0:
        options.connections = options.count if options.workload == 5 else 100 if options.workload == 6 else 1
    return options


def main():
    options = parse(sys.argv[1:])
    if uvloop is not None:
        return uvloop.run(bench(options))
    return asyncio.run(bench(options))


if __name__ == "__main__":
    sys.exit(main())

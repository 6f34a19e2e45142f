#!/usr/bin/env python3
"""A python `websockets` echo server with its default permessage-deflate (12-bit windows both ways,
memLevel 5, context takeover), which honours the windows a client negotiates; W9's second server
(Benchmarks/run_benchmarks.py) and a peer for checking compression byte for byte.

    echo_server.py [--host 127.0.0.1] [--port 0] [--port-file FILE]
                   [--server-max-window-bits N] [--client-max-window-bits N]
                   [--server-no-context-takeover] [--client-no-context-takeover] [--no-compression]

Every path echoes each message with its type. With any window or context takeover option the
extension is configured with those instead of websockets' defaults (what is not given keeps
websockets' default of the factory: 15-bit windows, context takeover, memLevel 8), so a test can
make the server compress with a 9-bit window or reset its window after every message. Prints
`ws://HOST:PORT` once listening (and writes the port to --port-file). No keep-alive pings: the
clients measure their own.
"""
import argparse
import asyncio
import resource

from websockets.asyncio.server import serve
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory


async def echo(connection):
    try:
        async for message in connection:
            await connection.send(message)
    except Exception:  # a client that drops is not the server's failure
        pass


def extensions(options):
    custom = (options.server_max_window_bits, options.client_max_window_bits,
              options.server_no_context_takeover, options.client_no_context_takeover)
    if options.no_compression:
        return None, None
    if not any(custom):
        return None, "deflate"  # websockets' defaults: 12-bit windows, memLevel 5
    factory = ServerPerMessageDeflateFactory(
        server_no_context_takeover=options.server_no_context_takeover,
        client_no_context_takeover=options.client_no_context_takeover,
        server_max_window_bits=options.server_max_window_bits,
        client_max_window_bits=options.client_max_window_bits)
    return [factory], None


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--server-max-window-bits", type=int)
    parser.add_argument("--client-max-window-bits", type=int)
    parser.add_argument("--server-no-context-takeover", action="store_true")
    parser.add_argument("--client-no-context-takeover", action="store_true")
    parser.add_argument("--no-compression", action="store_true")
    options = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    custom, compression = extensions(options)
    async with serve(echo, options.host, options.port, extensions=custom, compression=compression,
                     ping_interval=None, max_size=None, backlog=4096) as server:
        port = server.sockets[0].getsockname()[1]
        if options.port_file:
            with open(options.port_file, "w") as file:
                file.write(f"{port}\n")
        print(f"ws://{options.host}:{port}", flush=True)
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

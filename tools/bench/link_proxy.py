#!/usr/bin/env python3
"""An emulated network link on loopback, for the remote benchmarks (this kernel has no netem): a
TCP proxy that forwards 127.0.0.1:PORT to an upstream server, delaying every byte by half the
round trip in each direction and capping the rate of each direction across all connections
(one shared link, as a NIC is shared).

    link_proxy.py --upstream 127.0.0.1:8080 --rtt-ms 20 --rate-mbps 4000

Prints "port N" once it listens, then serves until its stdin closes (or SIGTERM). Each chunk of
bytes read from one side is delivered to the other at max(arrival, the link free) + its transfer
time at the rate + RTT/2, in order per connection: a window of bytes in flight behaves as on a
long link, so one connection's rate is bounded by its window over the round trip, as TCP's is.
Its own CPU bounds it too (asyncio on one core): the benchmark reports what it carried.
"""

import argparse
import asyncio
import signal
import sys
import time


class Direction:
    """One direction of the link: its rate, shared by every connection."""

    def __init__(self, rate_bytes_per_s: float, one_way_s: float) -> None:
        self.rate = rate_bytes_per_s
        self.one_way = one_way_s
        self.free_at = 0.0

    def due(self, n: int) -> float:
        now = time.monotonic()
        if self.rate > 0:
            self.free_at = max(self.free_at, now) + n / self.rate
            return self.free_at + self.one_way
        return now + self.one_way


async def pump(reader, writer, link: Direction) -> None:
    """Copies reader to writer through `link`: each piece delivered when it is due, in order."""
    queue: asyncio.Queue = asyncio.Queue(maxsize=256)

    async def deliver() -> None:
        while True:
            item = await queue.get()
            if item is None:
                break
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(256 << 10)
            if not data:
                break
            await queue.put((link.due(len(data)), data))
    except (ConnectionError, OSError):
        pass
    await queue.put(None)
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def main(args) -> None:
    host, port = args.upstream.rsplit(":", 1)
    one_way = args.rtt_ms / 2000.0
    rate = args.rate_mbps * 1e6 / 8 if args.rate_mbps > 0 else 0.0
    up, down = Direction(rate, one_way), Direction(rate, one_way)

    async def handle(client_reader, client_writer) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, up),
                             pump(server_reader, client_writer, down))

    server = await asyncio.start_server(handle, "127.0.0.1", args.port)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    loop = asyncio.get_running_loop()
    # Connections still open at the stop end with it: their cancellation is no error.
    loop.set_exception_handler(
        lambda lp, ctx: None if isinstance(ctx.get("exception"), (asyncio.CancelledError,
                                                                   ConnectionError))
        else lp.default_exception_handler(ctx))
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
    loop.add_reader(sys.stdin.fileno(),
                    lambda: sys.stdin.buffer.read1(4096) or stop.done() or stop.set_result(None))
    await stop
    server.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--upstream", required=True, help="HOST:PORT of the server")
    p.add_argument("--port", type=int, default=0, help="where to listen (0: a free port)")
    p.add_argument("--rtt-ms", type=float, default=20.0, help="round trip added")
    p.add_argument("--rate-mbps", type=float, default=0.0,
                   help="each direction's rate in megabits per second (0: no cap)")
    asyncio.run(main(p.parse_args()))

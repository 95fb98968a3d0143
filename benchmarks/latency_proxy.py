"""A local S3-compatible server (moto) behind a TCP proxy that adds network latency.

The proxy is a delay line: every byte is forwarded `rtt/2` after it arrived, in each direction, so
each HTTP request/response round trip costs one `rtt` more. Throughput is not throttled and
connections run in parallel, like a real link with latency rather than a slow server. Handshakes are
not charged: moto closes every connection after one response, whereas S3 clients keep pooled
connections alive, so charging them would double the latency of every request.

Run it on its own (prints one JSON line with both endpoints, serves until killed or stdin closes):

    python benchmarks/latency_proxy.py --rtt-ms 50

or from Python with `S3WithLatency(rtt_ms=50)`, which runs the same thing in a child process so the
server's Python work never competes for the benchmark's interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


async def _delay_line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, one_way: float) -> None:
    """Copy reader to writer, releasing each chunk `one_way` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def receive() -> None:
        while data := await reader.read(65536):
            queue.put_nowait((loop.time(), data))
        queue.put_nowait((loop.time(), b""))

    receiving = asyncio.create_task(receive())
    try:
        while True:
            arrived, data = await queue.get()
            wait = arrived + one_way - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    finally:
        receiving.cancel()
        with contextlib.suppress(Exception):
            writer.write_eof()


async def serve_proxy(target_port: int, rtt: float, ready: asyncio.Future[int]) -> None:
    """Listen on 127.0.0.1 (free port, reported through `ready`) and forward to `target_port`."""

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_w.close()
            return
        try:
            await asyncio.gather(
                _delay_line(client_r, server_w, rtt / 2), _delay_line(server_r, client_w, rtt / 2)
            )
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass  # a peer went away, or the proxy is shutting down
        finally:
            for w in (client_w, server_w):
                with contextlib.suppress(Exception):
                    w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    ready.set_result(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def _serve(rtt_ms: float, buckets: list[str]) -> None:
    """Start moto and the proxy, print their endpoints as one JSON line, serve until stdin closes."""
    os.environ.update(CREDENTIALS)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log on the benchmark's terminal
    from moto.server import ThreadedMotoServer

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    direct = f"http://{host}:{port}"
    import boto3

    s3 = boto3.client("s3", endpoint_url=direct, region_name="us-east-1")
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[int] = loop.create_future()
        proxy = asyncio.create_task(serve_proxy(port, rtt_ms / 1000, ready))
        proxy_port = await ready
        print(json.dumps({"direct": direct, "proxy": f"http://127.0.0.1:{proxy_port}"}), flush=True)
        closed = asyncio.Event()

        def wait_for_stdin_eof() -> None:
            sys.stdin.read()
            loop.call_soon_threadsafe(closed.set)

        threading.Thread(target=wait_for_stdin_eof, daemon=True).start()
        await closed.wait()
        proxy.cancel()
        moto.stop()
        # Exit without cancelling the connections still in flight: the parent is done with them.
        os._exit(0)

    asyncio.run(main())


class S3WithLatency:
    """Context manager: moto plus latency proxy in a child process; `.proxy` and `.direct` endpoints."""

    def __init__(self, rtt_ms: float = 50.0, buckets: tuple[str, ...] = ("bench",)) -> None:
        self.rtt_ms = rtt_ms
        self.buckets = buckets
        self.proxy = ""
        self.direct = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> S3WithLatency:
        args = [sys.executable, str(Path(__file__).resolve()), "--rtt-ms", str(self.rtt_ms)]
        for b in self.buckets:
            args += ["--bucket", b]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the S3 server with latency proxy failed to start")
        endpoints = json.loads(line)
        self.proxy, self.direct = endpoints["proxy"], endpoints["direct"]
        os.environ.update(CREDENTIALS)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is None:
            return
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def storage_options(self, *, through_proxy: bool = True) -> dict[str, str]:
        """LanceDB storage options for the (delayed or direct) endpoint."""
        endpoint = self.proxy if through_proxy else self.direct
        return {"endpoint": endpoint, "allow_http": "true", "region": "us-east-1"}


def measure_rtt(endpoint: str, n: int = 5) -> float:
    """Median seconds of an HTTP GET on one kept-alive connection (checks the injected latency)."""
    import http.client
    from urllib.parse import urlparse

    url = urlparse(endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("GET", "/")
        conn.getresponse().read()
        times.append(time.perf_counter() - start)
    conn.close()
    return sorted(times)[len(times) // 2]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, default=50.0, help="added round-trip time (default 50)")
    parser.add_argument("--bucket", action="append", default=None, help="bucket to create (default bench)")
    args = parser.parse_args()
    _serve(args.rtt_ms, args.bucket or ["bench"])

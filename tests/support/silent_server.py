"""A TCP server on 127.0.0.1 that accepts every connection, reads what it is sent and never answers:
an embedder or model server that hangs after the request, the worst case for a waiting command."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


class SilentServer:
    """Accepts and holds connections open without a byte of reply; counts the connections it took.

    With `drip`, it answers each request with a status line and then one byte of body every `drip`
    seconds, never finishing: a server that never stalls long enough for a per-read timeout.
    """

    def __init__(self, drip: float | None = None) -> None:
        self.drip = drip
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.connections = 0
        self._held: list[socket.socket] = []
        self._closed = threading.Event()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._held.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            if self.drip is not None:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99999\r\n\r\n"
                )
                while not self._closed.wait(self.drip):
                    conn.sendall(b" ")
            while conn.recv(65536):
                pass

    def close(self) -> None:
        """Stop accepting and drop every held connection."""
        self._closed.set()
        self._listener.close()
        for conn in self._held:
            with contextlib.suppress(OSError):
                conn.close()


@contextlib.contextmanager
def silent_server(drip: float | None = None) -> Iterator[SilentServer]:
    """A running `SilentServer`, closed afterwards."""
    server = SilentServer(drip)
    threading.Thread(target=server._accept, daemon=True).start()
    try:
        yield server
    finally:
        server.close()

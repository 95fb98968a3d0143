"""A TCP proxy on 127.0.0.1 in front of a real server that can be told to stall: it keeps every
connection open but forwards nothing, like an object store that stopped answering."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class StallingProxy:
    """Forward 127.0.0.1:`port` to `target`; `stall()` freezes all traffic, `resume()` lets it flow."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.flowing = threading.Event()
        self.flowing.set()
        self._closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> StallingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed.set()
        self.flowing.set()
        self._listener.close()

    def stall(self) -> None:
        """Stop forwarding: requests in flight and new ones get no answer."""
        self.flowing.clear()

    def resume(self) -> None:
        """Forward again."""
        self.flowing.set()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self.flowing.wait()
                if self._closed.is_set():
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

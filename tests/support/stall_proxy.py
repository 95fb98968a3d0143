"""A TCP proxy on 127.0.0.1 in front of a real server that can be told to stall, to slow down or to drop
its connections, or to refuse access: like an object store that stopped answering, answers slowly, cut the
line or revoked the credentials."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType


class StallingProxy:
    """Forward 127.0.0.1:`port` to `target`; `stall()` freezes all traffic, `resume()` lets it flow,
    `delay` seconds are waited before each piece of a request is forwarded, `drop()` cuts every
    open connection, `stall_after()` stalls once a chosen request has reached the server."""

    def __init__(self, target_port: int, delay: float = 0.0) -> None:
        self.target_port = target_port
        self.delay = delay
        self.flowing = threading.Event()
        self.flowing.set()
        self.forbidding = threading.Event()
        # What a request is answered with while `forbidding`, instead of the store: its head and body.
        self.answer = (_FORBIDDEN, _ACCESS_DENIED)
        self.cutting = threading.Event()
        self._closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._open: set[socket.socket] = set()
        self._stall_after: tuple[bytes, ...] = ()
        self._armed_by: tuple[bytes, ...] = ()  # the request that must pass first (`stall_after(after=)`)
        self.stalled_at = 0  # how many requests had come (`heads`) up to the one `stall_after` stalled at
        self._guard = threading.Lock()
        self.requests = 0  # HTTP requests that reached the proxy (stalled, forbidden or not)
        self.heads: list[bytes] = []  # their first lines (method and path), in the order they came

    def __enter__(self) -> StallingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed.set()
        self.resume()
        self._listener.close()

    def stall(self) -> None:
        """Stop forwarding: requests in flight and new ones get no answer."""
        self.flowing.clear()

    def resume(self) -> None:
        """Forward again."""
        self.flowing.set()

    def forbid(self) -> None:
        """Answer every request from now on with 403 Forbidden, as a store that revoked access would: a
        failure no client retries, so it comes at once whatever the timeouts (open connections are cut)."""
        self.forbidding.set()
        self.drop()

    def fail_with(self, status: int, reason: str) -> None:
        """Answer every request from now on with this error status, as a failing store would (a 500, a
        503); open connections are cut."""
        head = b"HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nConnection: close\r\n" % (
            status,
            reason.encode(),
        )
        body = b"<?xml version='1.0'?><Error><Code>InternalError</Code><Message>%s</Message></Error>" % (
            reason.encode()
        )
        self.answer = (head + b"Content-Length: %d\r\n\r\n", body)
        self.forbid()

    def cut(self) -> None:
        """Reset every connection, open or new, once its request came: a line that drops mid-request."""
        self.cutting.set()
        self.drop()

    def stall_after(self, *markers: bytes, after: tuple[bytes, ...] = ()) -> None:
        """Forward the next request whose head holds every marker, then stall: the server acts on it but
        its answer, like every later request, waits for `resume()`. With `after`, only such a request
        that comes once one holding every `after` marker has passed."""
        self._armed_by = after
        self._stall_after = markers

    def drop(self) -> None:
        """Reset every open connection, as a network that went down would (new ones are accepted)."""
        with self._guard:
            dropped, self._open = self._open, set()
        for s in dropped:
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.forbidding.is_set() or self.cutting.is_set():
                threading.Thread(target=self._forbid, args=(client,), daemon=True).start()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._guard:
                self._open.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, request: bool) -> None:
        came = 0
        try:
            while data := source.recv(65536):
                if request and data.startswith((b"GET ", b"PUT ", b"HEAD ", b"POST ", b"DELETE ")):
                    self.requests += 1
                    with self._guard:
                        self.heads.append(data.split(b"\r\n", 1)[0])
                        came = len(self.heads)  # this request's place among them
                self.flowing.wait()
                if self._closed.is_set():
                    break
                if request and self.delay:
                    time.sleep(self.delay)
                # Looked at before forwarding: the answer, and the client's next request, may come back
                # before this thread would look after.
                if request and self._armed_by:
                    if all(m in data for m in self._armed_by):
                        self._armed_by = ()
                elif request and self._stall_after and all(m in data for m in self._stall_after):
                    self._stall_after = ()
                    self.stalled_at = came
                    self.stall()  # this request still goes (it waited already); its answer does not
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._guard:
                self._open.difference_update((source, sink))

    def _forbid(self, client: socket.socket) -> None:
        """Read one request (its headers, and its body by Content-Length), answer 403 (or `fail_with`'s
        status) and close; while `cutting`, reset the connection instead of answering."""
        with contextlib.suppress(OSError), client:
            client.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data:
                more = client.recv(65536)
                if not more:
                    return
                data += more
            self.requests += 1
            self.heads.append(data.split(b"\r\n", 1)[0])
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            if self.cutting.is_set():
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return  # closed with a reset, before any answer
            while len(body) < length and (more := client.recv(65536)):
                body += more
            status, answer = self.answer
            client.sendall(status % len(answer) + answer)


_FORBIDDEN = (
    b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n"
)
_ACCESS_DENIED = (
    b"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
)

"""A fast, deterministic OpenAI-compatible embeddings server on 127.0.0.1, for large test corpora.

Each text becomes a normalised bag of hashed words (feature hashing), so texts sharing words are near
each other and vector search finds the right documents, at a few microseconds per text. The bundled
model is far too slow to embed tens of thousands of chunks in a test or a benchmark here.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

_WORD = re.compile(r"\w+")


def hash_vectors(texts: list[str], dimension: int) -> np.ndarray:
    """The server's vectors for `texts`: signed word hashes summed into `dimension` slots, unit length."""
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            slot, sign = word_slot(word, dimension)
            out[row, slot] += sign
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.maximum(norms, 1e-12)
    out[norms[:, 0] == 0, 0] = 1.0  # a text without words still gets a valid vector
    return out


@functools.lru_cache(maxsize=1 << 20)
def word_slot(word: str, dimension: int) -> tuple[int, float]:
    """The slot a (lower-cased) word adds to and the sign it adds with."""
    # Not crc32: it is linear, so words differing in a digit or two land on related slots.
    h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
    return h % dimension, 1.0 if (h >> 63) & 1 else -1.0


@dataclass(frozen=True)
class Reply:
    """A scripted answer instead of embeddings: an error status, a malformed body, or a dropped connection."""

    status: int = 200
    body: object = b""  # bytes are sent as they are, anything else as JSON
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering


Intercept = Callable[[dict, dict[str, str]], Reply | None]
"""Sees each request's JSON body and headers; returns a `Reply` to send instead of embeddings, or None."""


def _handler(
    embed: Callable[[list[str]], np.ndarray], intercept: Intercept | None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one connection serves a whole ingest
        disable_nagle_algorithm = True  # else each response waits ~40 ms for a delayed ACK

        def handle(self) -> None:
            # The client may give up first (a timeout test) or be dropped on purpose.
            with contextlib.suppress(ConnectionError):
                super().handle()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = intercept(body, dict(self.headers)) if intercept is not None else None
            if reply is not None:
                self._send_reply(reply)
                return
            texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
            vectors = np.asarray(embed(texts), dtype=np.float32)
            as_base64 = body.get("encoding_format") == "base64"
            rows = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": base64.b64encode(v.tobytes()).decode() if as_base64 else v.tolist(),
                }
                for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            payload = {"object": "list", "data": rows, "model": body["model"], "usage": usage}
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_reply(self, reply: Reply) -> None:
            if reply.drop:
                self.close_connection = True
                return
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serve_hash_embedder(dimension: int = 64) -> Iterator[str]:
    """Run the server on a free local port; yields its base URL (for `[embedder] base_url`)."""
    with serve_embeddings(lambda texts: hash_vectors(texts, dimension)) as url:
        yield url


@contextmanager
def serve_embeddings(
    embed: Callable[[list[str]], np.ndarray], intercept: Intercept | None = None
) -> Iterator[str]:
    """An OpenAI-compatible /v1/embeddings server on 127.0.0.1 answering with `embed(texts)`.

    `intercept` may answer a request differently (see `Reply`), e.g. to test a client's error handling.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(embed, intercept))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()

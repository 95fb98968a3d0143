"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, scripted per request, for e2e tests.

Requests asking for a stream get the same reply as server-sent events.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A reply is (HTTP status, response body); a responder turns each request body into one.
Reply = tuple[int, dict[str, Any]]
Responder = Callable[[dict[str, Any]], Reply]


def completion(message: dict[str, Any], finish_reason: str, model: str = "test") -> Reply:
    """A successful chat completion holding one assistant message."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}
    return 200, {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    """A response that calls one tool."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return completion({"content": None, "tool_calls": [call]}, "tool_calls")


def answer(text: str, *, delay: float = 0.0) -> Reply:
    """A final text answer; streamed, its words are sent `delay` seconds apart."""
    status, reply = completion({"content": text}, "stop")
    return status, {**reply, _DELAY: delay} if delay else reply


_DELAY = "x-stub-delay"  # taken out of the reply before it is sent


def stream_chunks(reply: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A completion as the chunks of a streamed response: text word by word, tool calls whole, then usage."""
    choice = reply["choices"][0]
    message = choice["message"]
    base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for word in re.findall(r"\s*\S+", message.get("content") or ""):
        yield chunk({"content": word})
    for n, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": n, **call}]})
    yield chunk({}, choice["finish_reason"])
    yield {**base, "choices": [], "usage": reply["usage"]}


class StubServer:
    """The running server: its base URL and every request body it received."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""
        self.abandoned = 0  # streamed responses the client hung up on


@contextmanager
def serve(responder: Responder) -> Iterator[StubServer]:
    """Run the stub on an ephemeral port in a thread for the duration of the block."""
    stub = StubServer(responder)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            stub.requests.append(body)
            if not self.path.endswith("/chat/completions"):
                status, reply = 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            else:
                status, reply = stub.responder(body)
            delay = reply.pop(_DELAY, 0.0)
            if status == 200 and body.get("stream"):
                self._stream(reply, delay)
                return
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: dict[str, Any], delay: float) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for chunk in stream_chunks(reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if delay and chunk["choices"] and "content" in chunk["choices"][0]["delta"]:
                        time.sleep(delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                stub.abandoned += 1  # the client stopped listening (a cancelled answer)

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

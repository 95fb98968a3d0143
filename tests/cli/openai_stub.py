"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, scripted per request, for e2e tests."""

from __future__ import annotations

import json
import threading
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


def answer(text: str) -> Reply:
    """A final text answer."""
    return completion({"content": text}, "stop")


class StubServer:
    """The running server: its base URL and every request body it received."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""


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
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

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

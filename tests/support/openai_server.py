"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for end-to-end CLI tests.

Each POST to /v1/chat/completions is answered by the next reply of the script. A reply is a fixed
message (`say`, `tool_calls`) or a function of the request body returning one, so a step can read the
tool results the model was sent (`tool_results`) and act on them, e.g. cite ids a program printed.
Shared by the `ask` and `analyze` CLI tests.

    with ScriptedOpenAI(tool_calls(("search", {"query": "x"})), say("done")) as server:
        cli("ask", "q", "--model", server.model)   # with OPENAI_BASE_URL=server.base_url in the env
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Message = dict[str, Any]
Reply = Message | Callable[[dict[str, Any]], Message]


def say(text: str) -> Message:
    """A final assistant message."""
    return {"role": "assistant", "content": text}


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> Message:
    """An assistant message calling the given tools, e.g. tool_calls(("search", {"query": "x"}))."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for n, (name, args) in enumerate(calls)
        ],
    }


def tool_results(body: dict[str, Any], name: str | None = None) -> list[str]:
    """The contents of the tool results in a request (optionally of one tool), oldest first."""
    names: dict[str, str] = {}
    results: list[str] = []
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool" and (name is None or names.get(message["tool_call_id"]) == name):
            content = message["content"]
            results.append(content if isinstance(content, str) else json.dumps(content))
    return results


class ScriptedOpenAI:
    """The server; use as a context manager. `requests` keeps every request body received."""

    model = "openai-chat:scripted"

    def __init__(self, *replies: Reply) -> None:
        self.replies: list[Reply] = list(replies)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (ending in /v1) to configure the client with."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Message | None:
        with self._lock:
            self.requests.append(body)
            index = len(self.requests) - 1
            if index >= len(self.replies):
                return None
            reply = self.replies[index]
        return reply(body) if callable(reply) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                message = server._next(body)
                if message is None:
                    error = {"message": f"script exhausted after {len(server.replies)} replies"}
                    self._send(500, {"error": {**error, "type": "server_error"}})
                    return
                self._send(200, completion(body.get("model", "scripted"), message, len(server.requests)))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def completion(model: str, message: Message, n: int) -> dict[str, Any]:
    """A chat.completion response body carrying `message`."""
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }

"""What `haiku serve` adds: time to the first streamed token through the server, and an idle server's memory.

One small database (24 Markdown documents added with `haiku add-src`, reused from --work). The same
scripted model (a pydantic-ai FunctionModel: search, cite, then a 40-word answer streamed word by word)
answers the same question two ways, --passes times each after a warm-up:

- in process: the agent `haiku serve` runs (the chat's composition), `agent.run` with a stream handler,
  timed from the call to the first text delta;
- through the server: `haiku serve`'s app under uvicorn on 127.0.0.1 in this process, an HTTP client
  posting the AG-UI request, timed from the POST to the first `TEXT_MESSAGE_CONTENT` event;
- in process with the quotes held: the same composition under `ask`'s policy (`quotes="redirect"`, which
  holds an answer until complete to check its quotes, where `haiku serve` streams with `quotes="flag"`),
  to show what holding costs the first token.

`--word-ms N` waits N ms between the answer's words (0: as fast as the model function yields them; a
hosted model writes some 20-100 words a second), so the held answer's cost shows.

Then the memory of an idle `haiku serve` subprocess (RSS after start-up, and after the page and its info
were fetched).

    python benchmarks/serve.py [--work DIR] [--passes 20] [--word-ms 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from common import Table, haiku, result
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    TextPartDelta,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from haiku_cli.agents import ask as ask_agent
from haiku_cli.agents.question import build_agent
from haiku_cli.capabilities.state import HaikuDeps
from haiku_cli.chat.host import CONVERSATION, conversation_capabilities
from haiku_cli.databases.workspace import Workspace
from haiku_cli.web.app import WebApp, serve

QUESTION = "Which documents talk about topic 7?"
ANSWER = " ".join(["Topic seven is described in the cited document [1]."] * 5)
TOPICS = [
    f"Topic {n} covers subject {n} in depth, with examples and notes about item {n}." for n in range(24)
]


def build(work: Path) -> Path:
    """The database (built once, reused from --work) and its config file."""
    config = work / "haiku.toml"
    db = work / "bench.lancedb"
    config.write_text(f'[databases]\nbench = "{db}"\n', encoding="utf-8")
    if not db.exists():
        docs = work / "docs"
        docs.mkdir(exist_ok=True)
        for n, text in enumerate(TOPICS):
            (docs / f"topic-{n}.md").write_text(f"# Topic {n}\n\n{text}\n", encoding="utf-8")
        haiku(["add-src", str(docs), "--database", "bench"], config)
    return config


def scripted(word_ms: float = 0) -> FunctionModel:
    """Search, cite the first result shown, then stream the answer word by word (`word_ms` apart)."""

    def step(messages: list[ModelMessage]) -> int:
        last_user = max(
            i
            for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and m.parts and any(p.part_kind == "user-prompt" for p in m.parts)
        )
        return sum(1 for m in messages[last_user:] if isinstance(m, ModelResponse))

    def shown(messages: list[ModelMessage]) -> list[str]:
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart) and p.tool_name == "search"
        ]
        return re.findall(r"^\[([0-9a-f-]{36})\]", str(returns[-1].content), re.MULTILINE)[:1]

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        n = step(messages)
        if n == 0:
            yield {
                0: DeltaToolCall(name="search", json_args=json.dumps({"query": "topic 7"}), tool_call_id="s")
            }
        elif n == 1:
            yield {
                0: DeltaToolCall(
                    name="cite", json_args=json.dumps({"chunk_ids": shown(messages)}), tool_call_id="c"
                )
            }
        else:
            for word in re.findall(r"\s*\S+", ANSWER):
                yield word
                if word_ms:
                    await anyio.sleep(word_ms / 1000)

    def whole(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise NotImplementedError("this benchmark only streams")

    return FunctionModel(whole, stream_function=stream)


async def in_process(agent: Agent[HaikuDeps, str], passes: int) -> list[float]:
    """Seconds from `agent.run` to the first text delta, per pass."""
    times = []
    for _ in range(passes + 1):
        start = time.perf_counter()
        first: list[float] = []

        async def handler(ctx: Any, events: Any, first: list[float] = first, start: float = start) -> None:
            async for event in events:
                if not first and isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    first.append(time.perf_counter() - start)

        await agent.run(QUESTION, deps=HaikuDeps(), event_stream_handler=handler)
        times.append(first[0])
    return times[1:]


async def through_server(app: WebApp, passes: int) -> list[float]:
    """Seconds from the AG-UI POST to the first TEXT_MESSAGE_CONTENT event, per pass."""
    urls: list[str] = []
    times = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve(app, port=0, announce=urls.append))
        while not urls:
            await anyio.sleep(0.01)
        body = {
            "threadId": "t",
            "runId": "r",
            "state": None,
            "tools": [],
            "context": [],
            "forwardedProps": {},
            "messages": [{"id": "u", "role": "user", "content": QUESTION}],
        }
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(passes + 1):
                start = time.perf_counter()
                first = None
                async with client.stream(
                    "POST", urls[0] + "api/agui", json=body, headers={"accept": "text/event-stream"}
                ) as response:
                    async for line in response.aiter_lines():
                        if first is None and '"TEXT_MESSAGE_CONTENT"' in line:
                            first = time.perf_counter() - start
                times.append(first)
        tg.cancel_scope.cancel()
    return [t for t in times[1:] if t is not None]


def idle_memory(config: Path) -> dict[str, float]:
    """RSS of a `haiku serve` subprocess once listening, and after the page and /api/info were served."""
    env = {**os.environ, "HAIKU_CONFIG": str(config), "OPENAI_API_KEY": "unused"}
    process = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "serve", "--model", "openai-chat:bench", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = process.stdout.readline().strip() if process.stdout else ""
        time.sleep(1)
        started = rss_mb(process.pid)
        for path in ("", "static/app.js", "api/info"):
            httpx.get(url + path).raise_for_status()
        time.sleep(1)
        return {"started_mb": started, "after_page_mb": rss_mb(process.pid)}
    finally:
        process.terminate()
        process.wait(timeout=10)


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return round(int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024, 1)  # type: ignore[union-attr]


def summary(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2)}


def main() -> None:
    """Build (or reuse) the database, time both paths, measure the idle server, print (and --json)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--word-ms", type=float, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with result("serve", "`haiku serve` and `haiku mcp`") as table:
        serve_rows(table, run(args))


def serve_rows(table: Table, found: dict) -> None:
    """First streamed token through the server against the same agent in process; an idle server's RSS."""
    ours, direct, held = found["through_server"], found["in_process"], found["in_process_quotes_held"]
    table.add(
        "first streamed token through `haiku serve`, p50 / p95",
        f"{ours['p50_ms']} / {ours['p95_ms']} ms",
        f"the same agent in process: {direct['p50_ms']} / {direct['p95_ms']} ms",
        f"{found['ratio_p50']}x",
    )
    table.add(
        "the same in process with the answer held until its quotes are checked, p50",
        f"{held['p50_ms']} ms",
        f"not held: {direct['p50_ms']} ms",
        f"{found['held_ratio_p50']}x",
    )
    idle = found["idle_server"]
    table.add(
        "idle `haiku serve` memory",
        f"{idle['started_mb']} MB RSS ({idle['after_page_mb']} MB after the page)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = args.work or Path(tempfile.mkdtemp(prefix="haiku-serve-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    config = build(work)
    ws = Workspace.load(config)

    async def each() -> tuple[list[float], list[float], list[float]]:
        model = scripted(args.word_ms)
        app = await WebApp.open(ws, ws.select_many(), model)
        # ask's quote handling over the same capabilities: every answer held until complete.
        held = build_agent(
            [*app.conversations.evidence, *conversation_capabilities(analysis=False)],
            model,
            ask_agent.INSTRUCTIONS + CONVERSATION,
            settings=ws.settings.model,
            quotes="redirect",
        )
        direct = await in_process(app.conversations.agent, args.passes)
        return direct, await through_server(app, args.passes), await in_process(held, args.passes)

    direct, served, held = anyio.run(each)
    result: dict[str, Any] = {
        "passes": args.passes,
        "word_ms": args.word_ms,
        "loadavg_1min": round(os.getloadavg()[0], 2),
        "in_process": summary(direct),
        "through_server": summary(served),
        "in_process_quotes_held": summary(held),
    }
    result["ratio_p50"] = round(result["through_server"]["p50_ms"] / result["in_process"]["p50_ms"], 2)
    result["held_ratio_p50"] = round(
        result["in_process_quotes_held"]["p50_ms"] / result["in_process"]["p50_ms"], 2
    )
    result["idle_server"] = idle_memory(config)
    print(
        f"first token, in process     p50 {result['in_process']['p50_ms']} ms, "
        f"p95 {result['in_process']['p95_ms']} ms"
    )
    print(
        f"first token, through server p50 {result['through_server']['p50_ms']} ms, "
        f"p95 {result['through_server']['p95_ms']} ms (x{result['ratio_p50']})"
    )
    print(
        f"first token, quotes held    p50 {result['in_process_quotes_held']['p50_ms']} ms, "
        f"p95 {result['in_process_quotes_held']['p95_ms']} ms (x{result['held_ratio_p50']} in process)"
    )
    print(
        f"idle server RSS {result['idle_server']['started_mb']} MB at start, "
        f"{result['idle_server']['after_page_mb']} MB after serving the page"
    )
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()

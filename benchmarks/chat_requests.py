"""Per-turn request size of `haiku chat`: a scripted 10-question conversation over CISI, via the chat host.

The model is a script (each question: one search, cite the top two results, answer), so the numbers are
what the chat's own agent sends: the instructions, the carried history and whatever the registered
capabilities do to it. Request size is counted in characters of the messages the model receives (and
roughly tokens, characters / 4). Prints a table and, with --json, a JSON object.

    python benchmarks/chat_requests.py [--data ../shared/data/cisi] [--docs 300] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import anyio
from common import DEFAULT_DATA, haiku, load_beir, write_corpus_files
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

QUESTIONS = 10
_CHUNK_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)


def build(work: Path, corpus: dict[str, dict], docs: int) -> Path:
    """One database `cisi` with the first `docs` documents; reused if present."""
    config = work / "config.toml"
    config.write_text(f'[databases]\ncisi = "{work / "cisi.lancedb"}"\n', encoding="utf-8")
    if not (work / "cisi.lancedb").exists():
        ids = sorted(corpus, key=int)[:docs]
        write_corpus_files({i: corpus[i] for i in ids}, work / "docs")
        haiku(["add-src", str(work / "docs"), "-d", "cisi"], config)
    return config


def scripted_model(sizes: list[tuple[int, int]]) -> FunctionModel:
    """Search with the question, cite the top two results, answer; record (question, size) per request."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        question = sum(1 for m in messages for p in getattr(m, "parts", []) if isinstance(p, UserPromptPart))
        sizes.append((question, len(ModelMessagesTypeAdapter.dump_json(messages))))
        last = messages[-1]
        returned = (
            [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        )
        if not returned:
            prompt = next(p for p in last.parts if isinstance(p, UserPromptPart))
            return ModelResponse(parts=[ToolCallPart("search", {"query": str(prompt.content)[:200]})])
        if returned[0].tool_name == "search":
            ids = _CHUNK_ID.findall(returned[0].model_response_str())[:2]
            return ModelResponse(parts=[ToolCallPart("cite", {"chunk_ids": ids})])
        return ModelResponse(parts=[TextPart("The documents discuss this [1][2].")])

    return FunctionModel(respond)


async def converse(config: Path, questions: list[str], sizes: list[tuple[int, int]]) -> None:
    """The conversation through the chat's host, as `haiku chat` runs it."""
    os.environ["HAIKU_CONFIG"] = str(config)
    from haiku_cli.chat.host import ChatHost
    from haiku_cli.chat.sessions import SessionStore
    from haiku_cli.databases.workspace import Workspace

    ws = Workspace.load()
    store = SessionStore(config.parent / "sessions")
    host = await ChatHost.open(ws, session="bench", model=scripted_model(sizes), store=store)
    host.clear()
    for q in questions:
        await host.ask(q)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=300, help="documents of CISI to index")
    parser.add_argument("--work", type=Path, default=None, help="keep the database here (reused)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpus, queries, _ = load_beir(args.data)
    questions = [queries[q] for q in sorted(queries, key=int)[:QUESTIONS]]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        config = build(work, corpus, args.docs)
        sizes: list[tuple[int, int]] = []
        anyio.run(converse, config, questions, sizes)
    turns = []
    for n in range(1, QUESTIONS + 1):
        mine = [s for q, s in sizes if q == n]
        turns.append({"question": n, "requests": len(mine), "first_chars": mine[0], "last_chars": mine[-1]})
    print(
        f"{'turn':>4}  {'requests':>8}  {'first request':>14}  {'last request':>13}  {'~tokens':>8}",
        file=sys.stderr,
    )
    for t in turns:
        print(
            f"{t['question']:>4}  {t['requests']:>8}  {t['first_chars']:>14,}  {t['last_chars']:>13,}"
            f"  {t['last_chars'] // 4:>8,}",
            file=sys.stderr,
        )
    growth = turns[-1]["last_chars"] / turns[0]["last_chars"]
    print(f"last request of turn 10 / turn 1: {growth:.2f}x", file=sys.stderr)
    if args.json:
        print(json.dumps({"docs": args.docs, "turns": turns, "growth_10_over_1": round(growth, 2)}))


if __name__ == "__main__":
    main()

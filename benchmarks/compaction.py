"""Request size per turn of a 10-question conversation over CISI, with and without evidence compaction.

Builds a small database from the first documents of CISI with `haiku add-src`, then holds the same
scripted conversation twice through the real capabilities (retrieval, citation policy, and in the second
run `EvidenceCompaction`): each question searches twice, cites two chunks and answers. The model is a
pydantic-ai FunctionModel, so the figures are what a model would be sent, not what one would answer.
Size is the model-visible text of a request (instructions, prompts, tool calls and returns) in characters,
and in tokens of the bundled embedder's tokenizer (a WordPiece proxy for an LLM's).

    python benchmarks/compaction.py [--data ../shared/data/cisi] [--docs 300] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from common import DEFAULT_DATA, Table, haiku, load_beir, ratio, result, timed, write_corpus_files
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from haiku_cli.capabilities import CitationPolicy, EvidenceCompaction, HaikuDeps, RetrievalCapability
from haiku_cli.databases.workspace import Workspace

QUESTIONS = 10
CHUNK_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)


def build(work: Path, data: Path, docs: int) -> Path:
    """A config naming one database of the first `docs` CISI documents (reused if present)."""
    config = work / "config.toml"
    work.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[databases]\ncisi = "{work / "cisi.lancedb"}"\n', encoding="utf-8")
    if not (work / "cisi.lancedb").exists():
        corpus, _, _ = load_beir(data)
        ids = sorted(corpus, key=int)[:docs]
        write_corpus_files({i: corpus[i] for i in ids}, work / "docs")
        _, secs = timed(lambda: haiku(["add-src", str(work / "docs")], config))
        print(f"ingested {len(ids)} documents in {secs:.1f} s", file=sys.stderr)
    return config


def visible_text(messages: Sequence[ModelMessage], instructions: str | None) -> str:
    """What the model reads of a request: instructions, prompts, calls and returns."""
    pieces = [instructions or ""]
    for m in messages:
        for p in m.parts:
            if isinstance(p, UserPromptPart | TextPart):
                pieces.append(str(p.content))
            elif isinstance(p, ToolReturnPart):
                pieces.append(p.model_response_str())
            elif isinstance(p, ToolCallPart):
                pieces.append(p.tool_name + p.args_as_json_str())
    return "\n".join(pieces)


class Conversationalist:
    """The scripted model: per question, two searches, a citation of two chunks, then an answer."""

    def __init__(self) -> None:
        self.question = ""
        self.per_question: list[list[str]] = []  # each question's requests, as visible text

    def begin(self, question: str) -> None:
        """Script the next question; its requests are recorded from now on."""
        self.question = question
        self.per_question.append([])

    def sizes(self, embedder: object) -> dict[str, int]:
        """The latest question's request count and the size of its first and of its largest request."""
        sent = self.per_question[-1]
        largest = max(sent, key=len)
        return {
            "requests": len(sent),
            "first_chars": len(sent[0]),
            "largest_chars": len(largest),
            "largest_tokens": tokens(embedder, largest),
        }

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.per_question[-1].append(visible_text(messages, info.instructions))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        step = len(self.per_question[-1])
        question = self.question
        if step == 1:
            return ModelResponse(parts=[ToolCallPart("search", {"query": " ".join(question.split()[:12])})])
        if step == 2:
            return ModelResponse(parts=[ToolCallPart("search", {"query": " ".join(question.split()[-12:])})])
        if step == 3:
            returns = [p for p in last.parts if isinstance(p, ToolReturnPart) and p.tool_name == "search"]
            ids = CHUNK_ID.findall(returns[-1].model_response_str()) if returns else []
            return ModelResponse(parts=[ToolCallPart("cite", {"chunk_ids": ids[:2] or []})])
        return ModelResponse(parts=[TextPart("According to the documents, [1] and [2].")])


def converse(ws: Workspace, questions: Sequence[str], *, compaction: bool) -> list[dict[str, int]]:
    """Hold the conversation; per question, the size of its first and of its largest request."""
    model = Conversationalist()
    capabilities = [
        RetrievalCapability(ws),
        CitationPolicy(),
        *([EvidenceCompaction()] if compaction else []),
    ]
    agent = Agent(FunctionModel(model.respond), deps_type=HaikuDeps, capabilities=capabilities)
    deps = HaikuDeps()
    history: list[ModelMessage] = []
    rows = []
    for q in questions:
        model.begin(q)
        result = agent.run_sync(q, deps=deps, message_history=history)
        history = result.all_messages()
        rows.append(model.sizes(ws.embedder))
    return rows


def tokens(embedder: object, text: str) -> int:
    """`text` in the embedder's tokens (a proxy for an LLM's); characters / 4 without a tokenizer."""
    count = getattr(embedder, "count_tokens", None)
    return int(count(text)) if callable(count) else len(text) // 4  # a remote embedder: a rough guess


def conversation(doc: str, prefix: str) -> tuple[argparse.Namespace, Workspace, list[str]]:
    """The command line these conversation benchmarks share, the database built (or reused) from it, and
    the first `QUESTIONS` judged CISI queries; `args.work` is the folder used."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.work = args.work or Path(tempfile.mkdtemp(prefix=prefix))
    config = build(args.work, args.data, args.docs)
    _, queries, _ = load_beir(args.data)
    return args, Workspace.load(config), [queries[q] for q in sorted(queries, key=int)[:QUESTIONS]]


def turn_rows(table: Table, label: str, mine: dict, other: dict, other_label: str) -> None:
    """The last question's largest and first request, against the same conversation held another way."""
    table.add(
        f"{label}: largest request of the last question",
        f"{mine['largest_chars']:,} chars ({mine['largest_tokens']:,} tokens)",
        f"{other_label}: {other['largest_chars']:,} chars ({other['largest_tokens']:,} tokens)",
        ratio(mine["largest_chars"], other["largest_chars"]),
    )
    table.add(
        f"{label}: first request of the last question (the carried history)",
        f"{mine['first_chars']:,} chars",
        f"{other_label}: {other['first_chars']:,} chars",
        ratio(mine["first_chars"], other["first_chars"]),
    )


def main() -> None:
    """Build, converse twice, print the curve (and JSON); write the area's table."""
    title = "Request size in a conversation: evidence compaction"
    with result("conversation", title) as table:
        args, ws, questions = conversation(__doc__, "haiku-compaction-")
        plain = converse(ws, questions, compaction=False)
        compacted = converse(ws, questions, compaction=True)
        label = f"{len(plain)}-question conversation with evidence compaction"
        turn_rows(table, label, compacted[-1], plain[-1], "without")
    print("turn  requests  largest request chars (tokens): plain -> compacted  ratio")
    for i, (a, b) in enumerate(zip(plain, compacted, strict=True), 1):
        ratio = b["largest_chars"] / a["largest_chars"]
        print(
            f"{i:>4}  {a['requests']:>8}  {a['largest_chars']:>7} ({a['largest_tokens']:>6}) -> "
            f"{b['largest_chars']:>7} ({b['largest_tokens']:>6})  {ratio:.2f}"
        )
    if args.json:
        print(json.dumps({"docs": args.docs, "plain": plain, "compacted": compacted}))


if __name__ == "__main__":
    main()

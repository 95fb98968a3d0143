"""What deferred loading costs per question: requests and characters sent, deferred vs loaded up front.

Same database, questions, scripted model and size measure as `compaction.py` (each question searches
twice, cites two chunks and answers). Three agents, each held once with its evidence capabilities loaded
up front and once with them deferred (`defer_loading=True`: the model sees their descriptions and
`load_capability`, and loads what it needs first: `search`'s capability, once per conversation):

- ask: retrieval + citation policy, one question per run (no history), as `haiku ask`;
- analyze: analysis + citation policy, one question per run, as `haiku analyze`;
- chat: retrieval + analysis + policy + compaction, a 10-question conversation (`haiku chat --analysis`).

Characters are the model-visible text of every request of a question, summed (what a provider bills as
input), plus the largest single request.

    python benchmarks/deferred.py [--data ../shared/data/cisi] [--docs 300] [--work DIR] [--json]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from common import Table, ratio, result
from compaction import Conversationalist, conversation, visible_text
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from haiku_cli.capabilities import (
    AnalysisCapability,
    CitationPolicy,
    EvidenceCompaction,
    HaikuDeps,
    RetrievalCapability,
)
from haiku_cli.databases.workspace import Workspace


class Loader(Conversationalist):
    """`compaction.py`'s model, which first loads the capability serving `search` when it is not offered."""

    def __init__(self, load: str) -> None:
        super().__init__()
        self.load = load
        self.loading: list[str] = []  # the latest question's load requests, apart from the script's steps

    def begin(self, question: str) -> None:
        super().begin(question)
        self.loading = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(t.name == "search" for t in info.function_tools):
            self.loading.append(visible_text(messages, info.instructions))
            return ModelResponse(parts=[ToolCallPart("load_capability", {"id": self.load})])
        return super().respond(messages, info)

    def sizes_sent(self) -> dict[str, int]:
        """The latest question's requests, total characters sent and largest request."""
        sent = [*self.loading, *self.per_question[-1]]
        return {"requests": len(sent), "chars": sum(map(len, sent)), "largest_chars": max(map(len, sent))}


def hold(ws: Workspace, questions: Sequence[str], kind: str, *, deferred: set[str]) -> list[dict[str, int]]:
    """Ask the questions with one agent kind, deferring the named capabilities; per question, its sizes."""
    retrieval = RetrievalCapability(ws, defer_loading="retrieval" in deferred)
    analysis = AnalysisCapability(ws, defer_loading="analysis" in deferred)
    evidence = {"ask": [retrieval], "analyze": [analysis], "chat": [retrieval, analysis]}[kind]
    model = Loader("analysis" if kind == "analyze" else "retrieval")
    extra = [EvidenceCompaction()] if kind == "chat" else []
    agent = Agent(
        FunctionModel(model.respond), deps_type=HaikuDeps, capabilities=[*evidence, CitationPolicy(), *extra]
    )
    deps, history, rows = HaikuDeps(), list[ModelMessage](), []
    for q in questions:
        model.begin(q)
        if kind == "chat":
            result = agent.run_sync(q, deps=deps, message_history=history)
            history = result.all_messages()
        else:
            agent.run_sync(q, deps=HaikuDeps())
        rows.append(model.sizes_sent())
    return rows


def measure() -> dict:
    """Build (or reuse) the database, hold each agent eager and deferred, print the comparison."""
    args, ws, questions = conversation(__doc__, "haiku-deferred-")
    report: dict[str, dict[str, list[dict[str, int]]]] = {}

    def mean(rows: list[dict[str, int]], key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    print(
        "agent (deferred)              per question (mean): requests, chars sent, largest: eager -> deferred"
    )
    runs = [
        ("ask", {"retrieval"}),
        ("analyze", {"analysis"}),
        ("chat", {"retrieval", "analysis"}),
        ("chat", {"analysis"}),
    ]
    for kind, deferred in runs:
        eager = report.setdefault(kind, {}).setdefault("eager", hold(ws, questions, kind, deferred=set()))
        late = hold(ws, questions, kind, deferred=deferred)
        report[kind]["deferred " + "+".join(sorted(deferred))] = late
        print(
            f"{kind + ' (' + '+'.join(sorted(deferred)) + ')':<28}  {mean(eager, 'requests'):.1f} -> "
            f"{mean(late, 'requests'):.1f}   {mean(eager, 'chars'):.0f} -> {mean(late, 'chars'):.0f} "
            f"({mean(late, 'chars') / mean(eager, 'chars'):.2f})   "
            f"{mean(eager, 'largest_chars'):.0f} -> {mean(late, 'largest_chars'):.0f}"
        )
    if args.json:
        print(json.dumps({"docs": args.docs, "questions": len(questions), **report}))
    return report


def deferred_rows(table: Table, raw: dict) -> None:
    """Characters and requests per question of each agent deferred, against it loaded up front."""

    def mean(rows: list[dict], key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    for kind, held in raw.items():
        eager = held["eager"]
        for name, late in held.items():
            if name != "eager":
                table.add(
                    f"{kind}, {name}: characters sent per question (requests)",
                    f"{mean(late, 'chars'):,.0f} ({mean(late, 'requests'):.1f})",
                    f"loaded up front: {mean(eager, 'chars'):,.0f} ({mean(eager, 'requests'):.1f})",
                    ratio(mean(late, "chars"), mean(eager, "chars")),
                )


def main() -> None:
    with result("deferred", "Deferred capabilities: what a question sends") as table:
        deferred_rows(table, measure())


if __name__ == "__main__":
    main()

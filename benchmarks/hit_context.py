"""Characters the model is sent per question with context around hits, against the chunks alone.

Same database and questions as `compaction.py` (the first CISI documents, the first judged queries). Each
question is searched as the retrieval capability runs it (its hits, the documents' text when context is
on, and the result text the model reads); the bound `[search] context_chars` takes each value given.
Bound 0 is today's result with each hit's heading path added: the chunks alone.

Then each question is searched twice, as `compaction.py`'s scripted model does (its first 12 words, then
its last 12): every text sent afresh by each search ("resent"), against the second search leaving out
what the first sent and naming those hits by id instead ("sent once", what the capability does).

    python benchmarks/hit_context.py [--data ../shared/data/cisi] [--docs 300] [--work DIR] [--json]
"""

from __future__ import annotations

import json
import statistics
import time

import anyio
from common import Table, result
from compaction import conversation

from haiku_cli.capabilities.context import Sent, document_texts, format_results
from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace

BOUNDS = (0, 200, 400, 800)


async def sent(ws: Workspace, question: str, bound: int, memory: Sent | None = None) -> tuple[int, float]:
    """Characters of one search's result as the model reads it, and the seconds the context took; with
    `memory`, what earlier searches of the answer sent is left out (and `memory` grows)."""
    selection = ws.select_many(())
    hits = await operations.search_hits(ws, selection, question, search_type="auto", limit=10)
    started = time.perf_counter()
    texts = await document_texts(ws.pool, selection, hits) if bound else {}
    shown = format_results(
        question, hits, texts, show_database=False, units_left=1, context_chars=bound, sent=memory
    )
    return len(shown), time.perf_counter() - started


def two_searches(ws: Workspace, question: str, bound: int, *, once: bool) -> int:
    """Characters of a question's two searches (its first 12 words, then its last 12)."""
    memory = Sent() if once else None
    words = question.split()
    return sum(anyio.run(sent, ws, " ".join(q), bound, memory)[0] for q in (words[:12], words[-12:]))


def measure() -> dict:
    """Characters per question at each bound, and of two searches resent or sent once; printed too."""
    args, ws, questions = conversation(__doc__ or "", "haiku-context-")
    results = {}
    for bound in BOUNDS:
        measured = [anyio.run(sent, ws, q, bound) for q in questions]
        chars = [c for c, _ in measured]
        results[bound] = {
            "chars_per_question": statistics.mean(chars),
            "max_chars": max(chars),
            "context_ms_p50": statistics.median(s for _, s in measured) * 1000,
        }
    base = results[0]["chars_per_question"]
    for r in results.values():
        r["ratio_to_chunks_alone"] = r["chars_per_question"] / base
    twice = {}
    for bound in BOUNDS:
        resent = [two_searches(ws, q, bound, once=False) for q in questions]
        once = [two_searches(ws, q, bound, once=True) for q in questions]
        twice[bound] = {
            "resent_chars_per_question": statistics.mean(resent),
            "sent_once_chars_per_question": statistics.mean(once),
            "ratio": sum(once) / sum(resent),
        }
    report = {"questions": len(questions), "bounds": results, "two_searches": twice}
    if args.json:
        print(json.dumps(report))
        return report
    print(f"{len(questions)} questions, one search each (10 hits)")
    for bound, r in results.items():
        print(
            f"context_chars={bound:>4}: {r['chars_per_question']:8.0f} chars/question "
            f"(x{r['ratio_to_chunks_alone']:.2f}), max {r['max_chars']}, context read p50 "
            f"{r['context_ms_p50']:.1f} ms"
        )
    print("two searches per question (10 hits each): resent -> sent once")
    for bound, t in twice.items():
        print(
            f"context_chars={bound:>4}: {t['resent_chars_per_question']:8.0f} -> "
            f"{t['sent_once_chars_per_question']:8.0f} chars/question (x{t['ratio']:.2f})"
        )

    return report


def context_rows(table: Table, raw: dict) -> None:
    bounds, twice = raw["bounds"], raw["two_searches"]
    for bound, b in bounds.items():
        if bound:
            table.add(
                f"one search, `[search] context_chars` {bound}: characters per question",
                f"{b['chars_per_question']:,.0f} (largest {b['max_chars']:,})",
                f"chunks alone: {bounds[0]['chars_per_question']:,.0f}",
                f"{b['ratio_to_chunks_alone']:.2f}x",
            )
    for bound, w in twice.items():
        table.add(
            f"two searches of one question, context_chars {bound}: each text sent once",
            f"{w['sent_once_chars_per_question']:,.0f} chars",
            f"resent: {w['resent_chars_per_question']:,.0f}",
            f"{w['ratio']:.2f}x",
        )


def main() -> None:
    with result("context", "Context around hits") as table:
        context_rows(table, measure())


if __name__ == "__main__":
    main()

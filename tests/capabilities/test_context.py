"""Each hit reaches the model with its heading path and bounded neighbouring text; hits that meet merge."""

from __future__ import annotations

from pathlib import Path

import anyio

from haiku_cli.capabilities.context import format_results
from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.search.hits import SearchHit
from tests.agents.test_ask import ask_sync
from tests.capabilities.script import Script, cite_first, returns, search, text

GUIDE = (
    "# Harbour guide\n\n## Tides\n\n"
    "Before the tide table: the harbour dries at low water springs.\n\n"
    "The tide rises twice a day; high water at the bar comes an hour after the town.\n\n"
    "After the tide table: moor only on the visitors' pontoon.\n\n"
    "## Fuel\n\nDiesel is sold at the north quay from eight until six.\n"
)


def _workspace(tmp_path: Path, write_config, workspace, context: int | None) -> Workspace:
    setting = "" if context is None else f"\n[search]\ncontext_chars = {context}\n"
    write_config(f'[databases]\nguide = "{tmp_path / "guide.lancedb"}"\n{setting}')
    ws = workspace()
    path = tmp_path / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    anyio.run(lambda: operations.add_sources(ws, ws.locations["guide"], [str(path)], title=None, metadata={}))
    return ws


def _shown(ws: Workspace, query: str) -> str:
    script = Script(search(query), cite_first(), text("Twice a day [1]."))
    ask_sync(ws, "When is high water?", script)
    return returns(script.seen[-1], "search")[0]


def test_a_hit_comes_with_its_heading_path_and_neighbouring_text(tmp_path, write_config, workspace) -> None:
    shown = _shown(_workspace(tmp_path, write_config, workspace, None), "high water at the bar")
    assert "§ Harbour guide > Tides" in shown
    assert "twice a day" in shown
    # Neighbouring text from the same document, before and after, within the bound.
    assert "(context" in shown
    assert shown.count("twice a day") == 1  # nothing sent twice


def test_no_context_when_the_bound_is_zero(tmp_path, write_config, workspace) -> None:
    shown = _shown(_workspace(tmp_path, write_config, workspace, 0), "high water at the bar")
    assert "§ Harbour guide > Tides" in shown and "(context" not in shown


def _hit(rank: int, chunk: str, start: int, end: int, doc: str = "d1", headings=("Tides",)) -> SearchHit:
    return SearchHit(
        database="guide", document_id=doc, document_uri=None, document_title="Guide", chunk_id=chunk,
        content=TEXT[start:end], score=1.0, rank=rank, heading_path=list(headings),
        char_start=start, char_end=end,
    )  # fmt: skip


N = len("Sentence 00 of the guide. ")
TEXT = "".join(f"Sentence {i:02d} of the guide. " for i in range(40))


def test_hits_of_one_document_that_meet_are_one_passage_and_no_text_is_sent_twice() -> None:
    hits = [
        _hit(1, "c-b", N * 10, N * 12),
        _hit(2, "c-a", N * 5, N * 9),
        _hit(3, "c-far", N * 30, N * 31),
    ]
    shown = format_results(
        "q", hits, {("guide", "d1"): TEXT}, show_database=False, units_left=1, context_chars=2 * N
    )
    for i in range(40):
        assert shown.count(f"Sentence {i:02d} ") <= 1  # nothing twice
    # c-a and c-b are a sentence apart: within the bound, one passage in document order; c-far apart.
    assert shown.index("[c-a]") < shown.index("[c-b] (same document)") < shown.index("[c-far]")
    assert "Sentence 04" in shown and "Sentence 12" in shown  # a sentence of context either side
    assert "Sentence 03" not in shown and "Sentence 13" not in shown  # and no more
    assert "Sentence 09" in shown  # the text between the two hits, once


def test_without_a_bound_each_hit_is_its_text_alone_in_rank_order() -> None:
    hits = [_hit(1, "c-b", N * 10, N * 12), _hit(2, "c-a", N * 5, N * 9)]
    shown = format_results(
        "q", hits, {("guide", "d1"): TEXT}, show_database=False, units_left=1, context_chars=0
    )
    assert (
        shown.index("[c-b]") < shown.index("[c-a]") and "(context" not in shown and "Sentence 09" not in shown
    )

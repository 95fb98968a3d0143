"""Each hit reaches the model with its heading path and bounded neighbouring text; hits that meet merge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio

from haiku_cli.capabilities import HaikuDeps
from haiku_cli.capabilities.context import Sent, format_results
from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.search.hits import SearchHit
from tests.agents.test_ask import ask_sync
from tests.capabilities.script import Script, cite_first, returns, run, search, text

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


def test_a_second_search_of_the_answer_sends_no_text_twice_and_refers_to_hits_by_id() -> None:
    texts = {("guide", "d1"): TEXT}
    sent = Sent()
    first = format_results(
        "q1", [_hit(1, "c-a", N * 5, N * 9)], texts, show_database=False, units_left=2, context_chars=2 * N,
        sent=sent,
    )  # fmt: skip
    assert "Sentence 04" in first and "Sentence 09" in first  # c-a and a sentence either side
    # The second search finds c-a again, c-b (its first sentence went out as c-a's context) and c-c
    # (wholly inside c-a's text).
    hits = [_hit(1, "c-a", N * 5, N * 9), _hit(2, "c-b", N * 9, N * 12), _hit(3, "c-c", N * 6, N * 7)]
    second = format_results(
        "q2", hits, texts, show_database=False, units_left=1, context_chars=2 * N, sent=sent
    )
    # Nothing twice across the two searches (but the opening a reference names).
    both = "\n".join(line for line in (first + second).split("\n") if "already shown" not in line)
    for i in range(40):
        assert both.count(f"Sentence {i:02d} ") <= 1, i
    assert "[c-a] already shown above" in second
    assert "[c-c] already shown above: the text beginning 'Sentence 06 of the guide." in second
    # c-b's new text (and a sentence after it) is sent, its sentence sent as context is not.
    assert "Sentence 10" in second and "Sentence 11" in second and "Sentence 12" in second
    assert "Sentence 09" not in second


def test_without_context_a_hit_shown_by_an_earlier_search_is_named_not_resent() -> None:
    sent = Sent()
    hits = [_hit(1, "c-a", N * 5, N * 9)]
    format_results("q1", hits, {}, show_database=False, units_left=2, context_chars=0, sent=sent)
    second = format_results(
        "q2", [*hits, _hit(2, "c-b", N * 10, N * 12)], {}, show_database=False, units_left=1,
        context_chars=0, sent=sent,
    )  # fmt: skip
    assert "[c-a] already shown above" in second and "Sentence 05" not in second
    assert "Sentence 10" in second


def test_two_searches_of_one_question_send_each_text_once_and_a_new_question_starts_afresh(
    tmp_path, write_config, workspace
) -> None:
    ws = _workspace(tmp_path, write_config, workspace, None)
    script = Script(
        search("high water at the bar"),
        search("when does the tide rise"),
        cite_first(),
        text("Twice a day [1]."),
        search("high water at the bar"),
        cite_first(),
        text("Twice a day [1]."),
    )
    _, deps = run(ws, script, "When is high water?")
    first, second = returns(script.seen[2], "search")
    assert "twice a day" in first and "twice a day" not in second
    assert re.search(r"^\[[0-9a-f-]{36}\] already shown above$", second, re.MULTILINE)
    # The state is carried as JSON: the next question is sent the text again.
    deps = HaikuDeps.restore(json.loads(json.dumps(deps.dump())))
    run(ws, script, "And again?", deps=deps)
    assert "twice a day" in returns(script.seen[-1], "search")[-1]

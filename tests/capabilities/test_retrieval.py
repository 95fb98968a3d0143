"""The retrieval capability against real databases, with the model scripted by FunctionModel."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse

from haiku_cli.capabilities import EvidenceState, HaikuDeps, RetrievalCapability
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.script import Script, call, chunk_ids, cite_first, returns, run, search, text


def retrieval_state(deps: HaikuDeps) -> EvidenceState:
    return deps.get("retrieval", EvidenceState)


def test_search_then_cite_records_a_labelled_citation(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    output, deps = run(kb, script, "What is the capital of France?")

    assert output == "Paris [1]."
    state = retrieval_state(deps)
    [citation] = state.citations
    assert citation.index == 1
    assert citation.database == "notes"
    assert citation.document_title == "France"
    assert "Paris" in citation.content
    assert citation.chunk_id == chunk_ids(script.last)[0]
    assert state.grounded and not state.violation
    assert "Cited [1]" in returns(script.last, "cite")[0]


def test_results_name_chunk_ids_and_their_database_when_several_are_covered(kb: Workspace) -> None:
    script = Script(search("energy"), cite_first(), text("ok [1]"))
    run(kb, script)
    shown = returns(script.last, "search")[0]
    assert all(f"[{i}] database: " in shown for i in chunk_ids(script.last))
    assert "database: notes" in shown and "database: papers" in shown


def test_one_database_results_are_not_labelled(kb: Workspace) -> None:
    script = Script(search("energy"), cite_first(), text("ok [1]"))
    run(kb, script, sources=["papers"])
    shown = returns(script.last, "search")[0]
    assert chunk_ids(script.last) and "database:" not in shown


def test_scoped_question_never_sees_another_database(kb: Workspace) -> None:
    # The query matches the notes database best, but the question is scoped to papers.
    script = Script(search("capital of France Paris Seine"), cite_first(), text("ok [1]"))
    _, deps = run(kb, script, sources=["papers"])
    state = retrieval_state(deps)
    assert {r.database for r in state.evidence} == {"papers"}
    assert "river Seine" not in returns(script.last, "search")[0]
    assert [c.database for c in state.citations] == ["papers"]


def test_scoped_cite_cannot_reach_another_database(kb: Workspace) -> None:
    notes_ids: list[str] = []

    def remember_and_cite(messages: list[ModelMessage]) -> ModelResponse:
        notes_ids.extend(chunk_ids(messages))
        return cite_first()(messages)

    run(kb, Script(search("capital of France"), remember_and_cite, text("Paris [1].")), sources=["notes"])
    script = Script(call(("cite", {"chunk_ids": notes_ids[:1]})), text("nothing"))
    _, deps = run(kb, script, sources=["papers"])
    assert "is not a chunk id in the searched databases" in returns(script.last, "cite")[0]
    assert retrieval_state(deps).citations == []


def test_searches_in_one_response_share_a_unit(kb: Workspace) -> None:
    script = Script(
        search("France", "basil", "cells"),  # one unit for all three
        search("plants"),  # the second unit
        search("sun"),  # over a budget of 2
        cite_first(),
        text("done [1]"),
    )
    _, deps = run(kb, script, budget=2)
    state = retrieval_state(deps)
    assert state.units == {1: 3, 2: 1}
    assert len(state.searches) == 4
    assert "Search limit reached" in returns(script.last, "search")[-1]


def test_more_than_three_searches_in_one_response_are_refused(kb: Workspace) -> None:
    script = Script(search("a1", "b2", "c3", "d4"), cite_first(), text("done [1]"))
    _, deps = run(kb, script)
    shown = returns(script.last, "search")
    assert sum("At most 3 searches per response" in r for r in shown) == 1
    assert retrieval_state(deps).units == {1: 3}


def test_budget_exhausted_tells_the_model_to_answer(kb: Workspace) -> None:
    script = Script(search("France"), search("basil"), cite_first(), text("Paris [1]."))
    _, deps = run(kb, script, budget=1)
    last = returns(script.last, "search")[-1]
    assert last.startswith("Search limit reached") and "Answer from what you have found" in last
    assert len(retrieval_state(deps).searches) == 1


def test_mistyped_chunk_id_is_refused_and_the_model_can_correct_it(kb: Workspace) -> None:
    def mistyped(messages: list[ModelMessage]) -> ModelResponse:
        good = chunk_ids(messages)[0]
        return call(("cite", {"chunk_ids": [good[:-1] + ("0" if good[-1] != "0" else "1")]}))

    script = Script(search("capital of France"), mistyped, cite_first(), text("Paris [1]."))
    _, deps = run(kb, script)
    first_cite = returns(script.last, "cite")[0]
    assert "is not a chunk id in the searched databases" in first_cite
    state = retrieval_state(deps)
    assert [c.index for c in state.citations] == [1]
    assert state.grounded


def test_bracketed_and_repeated_ids_cite_once(kb: Workspace) -> None:
    def bracketed(messages: list[ModelMessage]) -> ModelResponse:
        first = chunk_ids(messages)[0]
        return call(("cite", {"chunk_ids": [f"[{first}]", f" {first} "]}))

    script = Script(search("capital of France"), bracketed, cite_first(), text("Paris [1]."))
    _, deps = run(kb, script)
    assert [c.index for c in retrieval_state(deps).citations] == [1]


def test_colliding_chunk_id_across_databases_is_not_guessed(
    make_db, write_config, workspace, tmp_path: Path
) -> None:
    original, _ = make_db("notes", [{"text": "The capital of France is Paris.", "title": "France"}])
    shutil.copytree(original.uri, tmp_path / "mirror.lancedb")
    write_config(f'[databases]\nnotes = "{original.uri}"\nmirror = "{tmp_path / "mirror.lancedb"}"\n')
    ws = workspace()
    script = Script(
        search("capital of France"),
        cite_first(),
        call(("cite", {"chunk_ids": []})),
        text("The documents do not say."),
    )
    _, deps = run(ws, script)
    report = returns(script.last, "cite")[0]
    assert "is held by more than one database (notes, mirror)" in report
    assert "cite a different chunk" in report
    assert retrieval_state(deps).citations == []


def test_ungrounded_declaration(kb: Workspace) -> None:
    script = Script(
        search("volcanoes of Iceland"), call(("cite", {"chunk_ids": []})), text("The documents do not say.")
    )
    _, deps = run(kb, script)
    state = retrieval_state(deps)
    assert state.declared_ungrounded and not state.grounded and not state.violation
    assert "not grounded" in returns(script.last, "cite")[0]


def test_citing_after_declaring_ungrounded_grounds_the_answer(kb: Workspace) -> None:
    script = Script(search("France"), call(("cite", {"chunk_ids": []})), cite_first(), text("Paris [1]."))
    _, deps = run(kb, script)
    assert retrieval_state(deps).grounded


def test_filter_in_state_narrows_search(kb: Workspace) -> None:
    deps = HaikuDeps()
    RetrievalCapability(kb).evidence(deps).document_filter = "title = 'Gardening'"
    script = Script(search("France Paris energy basil"), cite_first(), text("ok [1]"))
    run(kb, script, deps=deps)
    assert {r.database for r in retrieval_state(deps).evidence} == {"notes"}
    assert "Gardening" in returns(script.last, "search")[0]
    assert len(chunk_ids(script.last)) == 1


def test_empty_query_costs_nothing(kb: Workspace) -> None:
    script = Script(search("  "), text("ok"))
    _, deps = run(kb, script)
    assert retrieval_state(deps).units == {}
    assert "empty" in returns(script.last, "search")[0]


def test_instructions_name_the_covered_databases(kb: Workspace) -> None:
    script = Script(text("hello"))
    run(kb, script, sources=["papers"])
    assert "covers the database papers." in (script.seen[0][0].instructions or "")

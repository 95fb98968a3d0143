"""State models: round-tripping by key, the search budget, answers, scope and citation markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from haiku_cli.capabilities import (
    Citation,
    EvidenceRef,
    EvidenceState,
    HaikuDeps,
    PolicyState,
    ScopeError,
    Source,
    host_selection,
    question_filter,
    question_selection,
    sources_of,
)
from haiku_cli.capabilities.citations import clean_ids, number_markers
from haiku_cli.config.settings import Settings
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError


def _citation(index: int, chunk_id: str) -> Citation:
    return Citation(
        index=index, database="notes", document_id="d", chunk_id=chunk_id, content="text", pages=[2]
    )


def test_state_round_trips_through_json_by_key() -> None:
    deps = HaikuDeps()
    evidence = deps.get("retrieval", EvidenceState)
    evidence.sources = [Source(name="notes"), Source(name="x", path="/tmp/x.lancedb")]
    evidence.document_filter = "title = 'a'"
    evidence.spend_search(1, budget=5, per_response=3)
    evidence.saw([EvidenceRef(database="notes", chunk_id="c1")])
    evidence.citations.append(_citation(1, "c1"))
    deps.get("citation_policy", PolicyState).outcome = "grounded"

    restored = HaikuDeps.restore(json.loads(json.dumps(deps.dump())))
    assert restored.get("retrieval", EvidenceState) == evidence
    assert restored.get("retrieval", EvidenceState).units == {1: 1}  # int keys survive JSON
    assert restored.get("citation_policy", PolicyState).outcome == "grounded"


def test_get_returns_one_live_object() -> None:
    deps = HaikuDeps()
    deps.get("k", EvidenceState).answer = 3
    assert deps.get("k", EvidenceState).answer == 3
    assert isinstance(deps.state["k"], EvidenceState)


def test_get_converts_a_model_of_another_class() -> None:
    class Extended(EvidenceState):
        executions: int = 0

    deps = HaikuDeps(state={"k": EvidenceState(answer=2)})
    assert deps.get("k", Extended) == Extended(answer=2)
    assert type(deps.state["k"]) is Extended


def test_dump_keeps_values_that_are_not_models() -> None:
    class Other(BaseModel):
        n: int = 1

    assert HaikuDeps(state={"a": {"n": 2}, "b": Other()}).dump() == {"a": {"n": 2}, "b": {"n": 1}}


def test_budget_units_are_per_response() -> None:
    state = EvidenceState()
    spend = [state.spend_search(step, budget=2, per_response=3) for step in (1, 1, 1, 1, 2, 3)]
    assert spend == ["ok", "ok", "ok", "response_full", "ok", "exhausted"]
    assert state.units_left(2) == 0


def test_a_new_question_resets_the_answer_and_keeps_the_conversation() -> None:
    state = EvidenceState(sources=[Source(name="notes")], document_filter="f")
    state.begin_question("run-1", "first?")
    state.spend_search(1, budget=5, per_response=3)
    state.saw([EvidenceRef(database="notes", chunk_id="c")])
    state.citations.append(_citation(1, "c"))
    state.declared_ungrounded = True
    state.violation = True
    state.begin_question("run-2", "second?")
    assert state.answer == 2 and state.prior_citations == 1
    assert state.earlier[0].answer == 1 and state.earlier[0].citation.chunk_id == "c"
    assert state.units == {} and state.evidence == [] and state.citations == []
    assert not state.declared_ungrounded and not state.violation
    assert state.sources == [Source(name="notes")] and state.document_filter == "f"
    assert state.has_evidence  # the earlier citation keeps evidence in play
    assert state.in_progress is not None and state.in_progress.runs == ["run-2"]
    assert state.asked == {1: "first?", 2: "second?"}


def test_saw_records_each_chunk_once() -> None:
    state = EvidenceState()
    ref = EvidenceRef(database="a", chunk_id="c")
    state.saw([ref, ref])
    state.saw([ref, EvidenceRef(database="b", chunk_id="c")])
    assert len(state.evidence) == 2


def test_number_markers_replaces_cited_ids_only() -> None:
    citations = [_citation(1, "aaa"), _citation(2, "bbb")]
    assert number_markers("x [aaa] y [bbb][aaa] z [ccc] [1]", citations) == "x [1] y [2][1] z [ccc] [1]"
    assert number_markers("nothing", []) == "nothing"


def test_clean_ids() -> None:
    assert clean_ids(["[a]", " a ", "", "b", "[ ]"]) == ["a", "b"]


def test_sources_name_configured_databases_and_keep_paths_for_others(tmp_path: Path) -> None:
    settings = Settings.model_validate({"databases": {"notes": str(tmp_path / "notes.lancedb")}})
    ws = Workspace(settings)
    by_path = ws.select_many(paths=[tmp_path / "other.lancedb"])
    assert sources_of(ws, ws.select_many()) == [Source(name="notes")]
    assert sources_of(ws, by_path) == [Source(name="other", path=str(tmp_path / "other.lancedb"))]
    assert host_selection(ws, sources_of(ws, by_path)) == by_path
    assert host_selection(ws, []) == ws.select_many()
    with pytest.raises(InputError, match="unknown database 'gone'"):
        host_selection(ws, [Source(name="gone")])


def test_carried_sources_narrow_the_host_scope_and_never_widen_it(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"databases": {n: str(tmp_path / f"{n}.lancedb") for n in ("notes", "papers", "mail")}}
    )
    ws = Workspace(settings)
    other = str(tmp_path / "other.lancedb")
    host = [Source(name="notes"), Source(name="papers"), Source(name="other", path=other)]
    assert question_selection(ws, host, []).names == ["notes", "papers", "other"]
    assert question_selection(ws, host, [Source(name="papers")]).names == ["papers"]
    assert question_selection(ws, host, [Source(name="other", path=other)]).names == ["other"]
    outside = [
        [Source(name="mail")],  # configured, but not the host's
        [Source(name="notes"), Source(name="mail")],
        [Source(name="notes", path=str(tmp_path / "elsewhere.lancedb"))],  # a configured name, moved
        [Source(name="other")],  # the host's path database, claimed as configured
        [Source(name="other", path=str(tmp_path / "planted.lancedb"))],
    ]
    for carried in outside:
        with pytest.raises(ScopeError, match=r"outside this host's databases .*never widen it"):
            question_selection(ws, host, carried)
    # A host with no scope allows every configured database, and no path at all.
    assert question_selection(ws, [], [Source(name="mail")]).names == ["mail"]
    with pytest.raises(ScopeError, match=r"database 'x' at '/tmp/x\.lancedb'"):
        question_selection(ws, [], [Source(name="x", path="/tmp/x.lancedb")])
    assert not (tmp_path / "elsewhere.lancedb").exists() and not (tmp_path / "planted.lancedb").exists()


def test_a_host_filter_cannot_be_replaced_by_carried_state() -> None:
    assert question_filter(None, "year > 2000") == "year > 2000"
    assert question_filter("team = 'a'", None) == "team = 'a'"
    assert question_filter("team = 'a'", "team = 'a'") == "team = 'a'"
    with pytest.raises(ScopeError, match="cannot replace the host's filter"):
        question_filter("team = 'a'", "team = 'a' OR 1 = 1")

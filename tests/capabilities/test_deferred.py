"""Deferred loading: the model first sees the capabilities' descriptions and `load_capability` only.

The question is begun by the always-on policy, so a capability loaded mid-run keeps its own evidence whole
(compaction does not take it for an earlier question's) and the answer is judged grounded when it cites.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse

from haiku_cli.capabilities import (
    AnalysisCapability,
    CitationPolicy,
    EvidenceCompaction,
    EvidenceState,
    HaikuDeps,
    PolicyState,
    RetrievalCapability,
)
from haiku_cli.capabilities.analysis import AnalysisState
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.analysis_script import cite_printed, execute, last_output
from tests.capabilities.script import Script, agent_tools, call, chunk_ids, cite_first, returns, search, text
from tests.capabilities.test_questions import carried


def load(*ids: str) -> ModelResponse:
    return call(*(("load_capability", {"id": i}) for i in ids))


def deferred_agent(
    ws: Workspace, script: Script, *, retrieval: bool, analysis: bool
) -> Agent[HaikuDeps, str]:
    capabilities = []
    if retrieval:
        capabilities.append(RetrievalCapability(ws, defer_loading=True))
    if analysis:
        capabilities.append(AnalysisCapability(ws, defer_loading=True))
    return Agent(
        script.model,
        deps_type=HaikuDeps,
        capabilities=[*capabilities, CitationPolicy(), EvidenceCompaction()],
    )


def outcome(deps: HaikuDeps) -> str | None:
    return deps.get("citation_policy", PolicyState).outcome


def test_deferred_retrieval_is_loaded_searched_cited_and_grounded(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(load("retrieval"), search("capital of France"), cite_first(), text("Paris [1]."))
    agent = deferred_agent(kb, first, retrieval=True, analysis=False)
    result = agent.run_sync("What is the capital of France?", deps=deps)
    # Before the load the model sees the catalog only: no search tool, no search instructions.
    assert [t.name for t in agent_tools(first, 0)] == ["load_capability"]
    catalog = str(first.infos[0].instructions)
    assert "Search the user's documents and cite" in catalog and "search units" not in catalog
    # The question's own results reach the model whole (not as an earlier question's receipt) ...
    assert "Paris" in returns(first.seen[2], "search")[0]
    state = deps.get("retrieval", EvidenceState)
    assert state.asked == {1: "What is the capital of France?"} and state.in_progress is None
    assert state.grounded and outcome(deps) == "grounded"  # ... so the model cited and was grounded.

    # The next question in the conversation: retrieval stays loaded; the first one's results compact.
    deps = carried(deps)
    second = Script(search("basil sun"), cite_first(), text("Basil [1]."))
    deferred_agent(kb, second, retrieval=True, analysis=False).run_sync(
        "What grows in the sun?", deps=deps, message_history=result.all_messages()
    )
    shown = returns(second.seen[1], "search")
    assert shown[0].startswith("[Search 'capital of France' for the earlier question") and "Basil" in shown[1]
    assert deps.get("retrieval", EvidenceState).answer == 2 and outcome(deps) == "grounded"


def test_deferred_analysis_runs_a_program_cites_and_is_grounded(kb: Workspace) -> None:
    deps = HaikuDeps()
    program = "x = 1\nprint(search('capital of France', 1)[0]['chunk_id'])"
    script = Script(load("analysis"), execute(program), cite_printed(), text("Paris [1]."))
    agent = deferred_agent(kb, script, retrieval=False, analysis=True)
    result = agent.run_sync("Capital of France?", deps=deps)
    assert last_output(script.last).startswith("ok")
    state = deps.get("analysis", AnalysisState)
    assert len(state.executions) == 1 and state.grounded and outcome(deps) == "grounded"
    # The next question: still loaded (by the history), and a fresh sandbox (the run's own, closed after).
    again = Script(
        execute("try:\n    print(x)\nexcept NameError:\n    print('fresh')"),
        call(("cite", {"chunk_ids": []})),
        text("No."),
    )
    deferred_agent(kb, again, retrieval=False, analysis=True).run_sync(
        "And?", deps=carried(deps), message_history=result.all_messages()
    )
    assert last_output(again.last) == "ok\nstdout:\nfresh"


def test_analysis_loaded_alone_serves_search_when_both_are_deferred(kb: Workspace) -> None:
    deps = HaikuDeps()
    script = Script(load("analysis"), search("capital of France"), cite_first(), text("Paris [1]."))
    deferred_agent(kb, script, retrieval=True, analysis=True).run_sync("Capital of France?", deps=deps)
    assert {t.name for t in agent_tools(script, 1)} >= {"search", "cite", "execute_code"}
    assert "Paris" in returns(script.seen[2], "search")[0]
    assert deps.get("analysis", AnalysisState).grounded and outcome(deps) == "grounded"


def test_both_deferred_loaded_together_search_compute_and_cite(kb: Workspace) -> None:
    deps = HaikuDeps()
    script = Script(
        load("retrieval", "analysis"),
        call(
            ("search", {"query": "capital of France"}),
            ("execute_code", {"code": "print(len(list_documents()))"}),
        ),
        cite_first(),
        text("Paris [1]; 4 documents."),
    )
    deferred_agent(kb, script, retrieval=True, analysis=True).run_sync("Capital, and how many?", deps=deps)
    assert "Paris" in returns(script.seen[2], "search")[0]
    assert last_output(script.seen[2]) == "ok\nstdout:\n4"
    assert deps.get("retrieval", EvidenceState).grounded and outcome(deps) == "grounded"


def test_another_capabilitys_record_covers_a_search_it_served(kb: Workspace) -> None:
    # Question 1: analysis, loaded alone, serves `search`; its state holds the record of that search.
    deps = HaikuDeps()
    first = Script(load("analysis"), search("capital of France"), cite_first(), text("Paris [1]."))
    result = deferred_agent(kb, first, retrieval=True, analysis=True).run_sync("Capital?", deps=deps)
    assert [s.query for s in deps.get("analysis", AnalysisState).searches] == ["capital of France"]
    # Question 2: retrieval is loaded and serves `search` now. The earlier search return in the history is
    # covered by analysis's record: not refused as dropped state, and compacted as an earlier question's.
    latest = lambda messages: call(("cite", {"chunk_ids": chunk_ids(messages)[-1:]}))  # noqa: E731
    second = Script(load("retrieval"), search("basil sun"), latest, text("Basil [1]."))
    deferred_agent(kb, second, retrieval=True, analysis=True).run_sync(
        "What grows in the sun?", deps=carried(deps), message_history=result.all_messages()
    )
    earlier, latest_results = returns(second.seen[2], "search")
    assert earlier.startswith("[Search 'capital of France' for the earlier question 'Capital?'")
    assert "Basil" in latest_results

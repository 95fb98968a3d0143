"""The analysis capability against real databases and a real sandbox, with the model scripted."""

from __future__ import annotations

import json

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from haiku_cli.capabilities import CitationPolicy, EvidenceState, HaikuDeps, PolicyState, RetrievalCapability
from haiku_cli.capabilities.analysis import AnalysisCapability, AnalysisState
from haiku_cli.config.settings import SandboxSettings
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.analysis_script import (
    analysis_state,
    cite_printed,
    execute,
    last_output,
    run_analysis,
)
from tests.capabilities.script import Script, agent_tools, call, cite_first, returns, search, text

COUNT_PROGRAM = (
    "docs = list_documents()\n"
    "hits = [d for d in docs if 'energy' in open(d['path'] + 'content.txt').read()]\n"
    "print(len(docs), len(hits))"
)
CHUNKS_PROGRAM = (
    "import json\n"
    "for d in hits:\n"
    "    for line in open(d['path'] + 'chunks.jsonl'):\n"
    "        c = json.loads(line)\n"
    "        print(c['database'], c['id'])"
)


def test_list_documents_count_cite_and_answer(kb: Workspace) -> None:
    script = Script(
        execute(COUNT_PROGRAM),
        execute(CHUNKS_PROGRAM),  # `hits` persisted from the first execution
        cite_printed(),
        text("4 documents; 1 mentions energy [1]."),
    )
    output, deps = run_analysis(kb, script, "How many documents mention energy?")

    assert output == "4 documents; 1 mentions energy [1]."
    outputs = returns(script.last, "execute_code")
    assert outputs[0] == "ok\nstdout:\n4 1"
    assert outputs[1].startswith("ok\nstdout:\npapers ")
    state = analysis_state(deps)
    assert [(e.ok, e.step) for e in state.executions] == [(True, 1), (True, 2)]
    [citation] = state.citations
    assert citation.database == "papers" and citation.document_title == "Plants"
    assert state.grounded and not state.violation
    assert deps.get("citation_policy", PolicyState).outcome == "grounded"


def test_a_runtime_error_then_a_fix(kb: Workspace) -> None:
    script = Script(
        execute("docs = list_documents()\nprint(docs[0]['name'])"),
        execute("print(sorted(d['title'] for d in docs))"),
        call(("cite", {"chunk_ids": []})),
        text("The titles are Cells, France, Gardening and Plants."),
    )
    _, deps = run_analysis(kb, script)
    error, fixed = returns(script.last, "execute_code")
    assert error.startswith("error\nstderr:\nTraceback")
    assert "KeyError" in error and "name" in error
    assert fixed == "ok\nstdout:\n['Cells', 'France', 'Gardening', 'Plants']"
    assert [e.ok for e in analysis_state(deps).executions] == [False, True]


def test_the_time_limit_is_reported_and_analysis_goes_on(kb: Workspace) -> None:
    kb.settings = kb.settings.model_copy(update={"sandbox": SandboxSettings(timeout_seconds=0.5)})
    script = Script(
        execute("n = 1\nwhile True:\n    n += 1"),
        execute("print(len(list_documents()))"),
        call(("cite", {"chunk_ids": []})),
        text("There are 4 documents."),
    )
    run_analysis(kb, script)
    limited, after = returns(script.last, "execute_code")
    assert "TimeoutError" in limited and "hit the time limit" in limited
    assert "variables from earlier executions are gone" in limited
    assert after == "ok\nstdout:\n4"
    # The model is told the limits up front, too.
    assert "0.5 s" in (script.seen[0][0].instructions or "")


def test_search_inside_the_sandbox_is_labelled_and_counts_as_evidence(kb: Workspace) -> None:
    script = Script(
        execute(
            "hits = search('capital of France', limit=2)\nfor h in hits: print(h['database'], h['chunk_id'])"
        ),
        text("Paris."),  # no citation: sent back once
        cite_printed(),
        text("Paris [1]."),
    )
    output, deps = run_analysis(kb, script, "What is the capital of France?")
    assert output == "Paris [1]."
    state = analysis_state(deps)
    assert {r.database for r in state.evidence} <= {"notes", "papers"}
    assert len(state.evidence) == 2
    assert "notes" in last_output(script.last)
    assert deps.get("citation_policy", PolicyState).redirected  # sent back once for not citing
    assert state.citations[0].database == "notes"


def test_citations_from_chunks_a_program_found(kb: Workspace) -> None:
    script = Script(
        execute(
            "import json\n"
            "for d in list_documents():\n"
            "    for line in open(d['path'] + 'chunks.jsonl'):\n"
            "        c = json.loads(line)\n"
            "        if 'ATP' in c['text'] or 'Paris' in c['text']:\n"
            "            print(c['id'])"
        ),
        cite_printed(2),
        text("Paris [1]; ATP [2]."),
    )
    _, deps = run_analysis(kb, script)
    citations = analysis_state(deps).citations
    assert [(c.index, c.database, c.document_title) for c in citations] == [
        (1, "notes", "France"),
        (2, "papers", "Cells"),
    ]


def test_an_uncited_analysis_is_redirected_once_then_recorded(kb: Workspace) -> None:
    script = Script(execute("print(len(list_documents()))"), text("4."), text("Four."))
    output, deps = run_analysis(kb, script)
    assert output == "Four."
    policy = deps.get("citation_policy", PolicyState)
    assert policy.redirected and policy.outcome == "violation"
    assert analysis_state(deps).violation


def test_a_scoped_question_computes_over_its_databases_only(kb: Workspace) -> None:
    script = Script(
        execute(
            "import os\n"
            "print(sorted({d['database'] for d in list_documents()}), len(os.listdir('/documents')))\n"
            "print(sorted({h['database'] for h in search('capital of France Paris')}))"
        ),
        call(("cite", {"chunk_ids": []})),
        text("Only papers."),
    )
    run_analysis(kb, script, sources=["papers"])
    assert returns(script.last, "execute_code")[0] == "ok\nstdout:\n['papers'] 2\n['papers']"


def test_variables_last_for_one_question_only(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(execute("remembered = 42"), call(("cite", {"chunk_ids": []})), text("ok"))
    run_analysis(kb, first, deps=deps)
    second = Script(execute("print(remembered)"), call(("cite", {"chunk_ids": []})), text("gone"))
    run_analysis(kb, second, deps=deps)
    assert "NameError" in returns(second.last, "execute_code")[0]
    state = analysis_state(deps)
    assert [e.answer for e in state.executions] == [1, 2]
    assert [e.code for e in state.current_executions()] == ["print(remembered)"]


def test_state_round_trips_through_json_and_shares_the_evidence_base(kb: Workspace) -> None:
    script = Script(execute("print(1)"), call(("cite", {"chunk_ids": []})), text("one"))
    _, deps = run_analysis(kb, script)
    restored = HaikuDeps.restore(json.loads(json.dumps(deps.dump())))
    state = analysis_state(restored)
    assert isinstance(state, EvidenceState)
    assert state == analysis_state(deps)
    assert state.executions[0].stdout == "1\n"
    assert set(EvidenceState.model_fields) < set(AnalysisState.model_fields)
    assert set(AnalysisState.model_fields) - set(EvidenceState.model_fields) == {"executions"}


def test_executions_are_limited_per_question(kb: Workspace) -> None:
    kb.settings = kb.settings.model_copy(update={"sandbox": SandboxSettings(max_executions=1)})
    script = Script(execute("print(1)"), execute("print(2)"), call(("cite", {"chunk_ids": []})), text("x"))
    run_analysis(kb, script)
    assert "limit of 1 executions per question is reached" in returns(script.last, "execute_code")[1]


def test_the_tools_offered_are_execute_code_search_and_cite(kb: Workspace) -> None:
    model = TestModel(call_tools=[], custom_output_text="nothing to do")
    agent = Agent(model, deps_type=HaikuDeps, capabilities=[AnalysisCapability(kb), CitationPolicy()])
    agent.run_sync("hi", deps=HaikuDeps())
    params = model.last_model_request_parameters
    assert params is not None
    assert sorted(t.name for t in params.function_tools) == ["cite", "execute_code", "search"]


def test_retrieval_and_analysis_share_search_and_cite_on_one_agent(kb: Workspace) -> None:
    retrieval, analysis = RetrievalCapability(kb), AnalysisCapability(kb)
    script = Script(
        call(
            ("search", {"query": "capital of France"}),
            ("execute_code", {"code": "print(len(list_documents()))"}),
        ),
        cite_first(),
        text("Paris [1], among 4 documents."),
    )
    deps = HaikuDeps()
    agent = Agent(script.model, deps_type=HaikuDeps, capabilities=[retrieval, analysis, CitationPolicy()])
    agent.run_sync("What is the capital, and how many documents are there?", deps=deps)
    tools = sorted(t.name for t in agent_tools(script))
    assert tools == ["cite", "execute_code", "search"]
    searched, computed = retrieval.evidence(deps), analysis_state(deps)
    assert [s.query for s in searched.searches] == ["capital of France"] and computed.searches == []
    assert [e.stdout for e in computed.executions] == ["4\n"]
    assert [c.index for c in searched.citations] == [1] and searched.grounded
    assert deps.get("citation_policy", PolicyState).outcome == "grounded"


def test_the_first_registered_evidence_capability_serves_search(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    deps = HaikuDeps()
    capabilities = [AnalysisCapability(kb), RetrievalCapability(kb), CitationPolicy()]
    Agent(script.model, deps_type=HaikuDeps, capabilities=capabilities).run_sync("q", deps=deps)
    assert len(analysis_state(deps).searches) == 1 and analysis_state(deps).grounded
    assert deps.get("retrieval", EvidenceState).searches == []

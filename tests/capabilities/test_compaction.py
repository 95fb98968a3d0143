"""Evidence compaction: receipts for earlier questions' evidence, one capsule, history untouched."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse

from haiku_cli.capabilities import (
    AnalysisCapability,
    CitationPolicy,
    EvidenceCompaction,
    EvidenceState,
    HaikuDeps,
    RetrievalCapability,
)
from haiku_cli.capabilities.analysis import AnalysisState
from haiku_cli.capabilities.compaction import CAPSULE_HEADING
from haiku_cli.capabilities.state import Source
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.analysis_script import execute
from tests.capabilities.script import Script, Step, call, returns, search, text
from tests.capabilities.test_questions import server_dies


class Conversation:
    """One agent, its deps and history, asked question after question."""

    def __init__(self, ws: Workspace, *steps: Step, compaction: bool = True, analysis: bool = False) -> None:
        self.script = Script(*steps)
        capabilities = [RetrievalCapability(ws, limit=2), CitationPolicy()]
        if analysis:
            capabilities.insert(1, AnalysisCapability(ws))
        if compaction:
            capabilities.append(EvidenceCompaction())
        self.agent = Agent(self.script.model, deps_type=HaikuDeps, capabilities=capabilities)
        self.deps = HaikuDeps()
        self.history: list[ModelMessage] = []

    def ask(self, question: str | None) -> str:
        result = self.agent.run_sync(question, deps=self.deps, message_history=self.history)
        self.history = result.all_messages()
        return result.output


def cite_latest(messages: list[ModelMessage]) -> ModelResponse:
    """Cite the first chunk of the latest search results."""
    latest = returns(messages, "search")[-1]
    return call(("cite", {"chunk_ids": re.findall(r"^\[([0-9a-f-]{36})\]", latest, re.MULTILINE)[:1]}))


def grounded(query: str, answer: str) -> list[Step]:
    return [search(query), cite_latest, text(answer)]


def capsules(messages: Sequence[ModelMessage]) -> list[str]:
    return [r for r in returns(messages) if CAPSULE_HEADING in r]


def test_three_questions_leave_receipts_and_exactly_one_capsule(kb: Workspace) -> None:
    chat = Conversation(
        kb,
        *grounded("capital of France", "Paris [1]."),
        *grounded("basil sun", "Sun [1]."),
        search("cells energy"),
        text("ATP."),
        text("ATP, as the documents say."),
    )
    chat.ask("What is the capital of France?")
    chat.ask("What does basil need?")
    chat.ask("What makes ATP?")
    first_of_q3, second_of_q3 = chat.script.seen[6], chat.script.seen[7]
    searches = returns(first_of_q3, "search")
    assert len(searches) == 2 and all(s.startswith("[Search ") for s in searches)
    assert "'capital of France' for the earlier question 'What is the capital of France?'" in searches[0]
    [capsule] = capsules(first_of_q3)
    assert capsule == searches[1]  # the newest earlier evidence return carries it
    # Grouped by question, newest first; each chunk once, with its id and database.
    groups = capsule[capsule.index(CAPSULE_HEADING) :]  # the receipt ahead of it names a question too
    assert groups.index("'What does basil need?'") < groups.index("'What is the capital of France?'")
    assert "database: notes; Gardening" in capsule and "database: notes; France" in capsule
    cited = {c.citation.chunk_id for c in chat.deps.get("retrieval", EvidenceState).earlier}
    assert {i for i in cited if f"[{i}]" in capsule} == cited
    # `cite` acknowledgements are not evidence: they pass untouched.
    assert all(r.startswith("Cited [1]") for r in returns(first_of_q3, "cite"))
    # Within the question in progress, its own search results stay whole.
    assert returns(second_of_q3, "search")[-1].startswith("Results for 'cells energy'")
    # The stored history keeps everything.
    assert not capsules(chat.history)
    assert sum(r.startswith("Results for") for r in returns(chat.history, "search")) == 3


def test_a_chunk_cited_twice_is_shown_once_under_the_later_question(kb: Workspace) -> None:
    chat = Conversation(
        kb,
        *grounded("capital of France", "Paris [1]."),
        *grounded("capital of France Paris", "Paris again [1]."),
        text("Bye."),
        text("Bye."),
    )
    chat.ask("Capital?")
    chat.ask("Capital, really?")
    chat.ask("Thanks")
    [capsule] = capsules(chat.script.seen[6])
    [chunk] = {c.citation.chunk_id for c in chat.deps.get("retrieval", EvidenceState).earlier}
    assert capsule.count(f"[{chunk}]") == 1
    assert "'Capital, really?'" in capsule and "'Capital?'" not in capsule


def test_two_evidence_returns_in_one_request_carry_one_capsule(kb: Workspace) -> None:
    chat = Conversation(
        kb, search("capital of France", "basil sun"), cite_latest, text("ok [1]"), text("hi"), text("hi")
    )
    chat.ask("Two things?")
    chat.ask("And?")
    first_of_q2 = chat.script.seen[3]
    searches = returns(first_of_q2, "search")
    assert len(searches) == 2 and all(s.startswith("[Search ") for s in searches)
    assert [CAPSULE_HEADING in s for s in searches] == [False, True]  # the later part of the request


def test_a_resumed_question_compacts_what_lies_below_it(kb: Workspace) -> None:
    chat = Conversation(kb, *grounded("capital of France", "Paris [1]."), search("basil sun"), server_dies)
    chat.ask("Capital?")
    with capture_run_messages() as interrupted, pytest.raises(RuntimeError):
        chat.ask("Basil?")
    chat.history = interrupted
    chat.script.steps += [cite_latest, text("Sun [1].")]
    chat.ask(None)  # resume
    resumed = chat.script.seen[5]
    searches = returns(resumed, "search")
    assert searches[0].startswith("[Search 'capital of France'") and CAPSULE_HEADING in searches[0]
    assert searches[1].startswith("Results for 'basil sun'")  # the question in progress keeps its evidence


def test_analysis_output_of_earlier_questions_is_compacted(kb: Workspace) -> None:
    declare = call(("cite", {"chunk_ids": []}))
    chat = Conversation(
        kb, execute("print('x' * 500)"), declare, text("x."), text("hi"), text("hi"), analysis=True
    )
    chat.ask("Print x?")
    chat.ask("Hello?")
    [receipt] = returns(chat.script.seen[3], "execute_code")
    assert (
        receipt.startswith("[A program for the earlier question 'Print x?' ran") and "x" * 500 not in receipt
    )
    assert "its output (501 characters)" in receipt


def test_the_carried_state_keeps_earlier_programs_as_receipts_only(kb: Workspace) -> None:
    declare = call(("cite", {"chunk_ids": []}))
    program = "print('x' * 3000)"
    chat = Conversation(
        kb, execute(program), declare, text("x."), execute("print(1)"), declare, text("1."), analysis=True
    )
    chat.ask("Print x?")
    assert "x" * 3000 in json.dumps(chat.deps.dump())  # the answer's own program, whole while it is current
    chat.ask("Print 1?")
    carried = json.dumps(chat.deps.dump())
    assert "x" * 3000 not in carried and program not in carried  # one question on, only its receipt is left
    [earlier, current] = chat.deps.get("analysis", AnalysisState).executions
    assert (earlier.answer, earlier.ok, earlier.output_length) == (1, True, 3001)
    assert (current.code, current.stdout) == ("print(1)", "1\n")
    assert program in str(chat.history)  # the history still holds it all


def test_without_compaction_the_request_carries_the_transcript_untouched(kb: Workspace) -> None:
    steps = [*grounded("capital of France", "Paris [1]."), *grounded("basil sun", "Sun [1].")]
    chat = Conversation(kb, *steps, compaction=False)
    chat.ask("Capital?")
    carried = len(chat.history)
    chat.ask("Basil?")
    # The second question's first request is the stored transcript plus its prompt, byte for byte.
    sent = chat.script.seen[3]
    assert ModelMessagesTypeAdapter.dump_json(sent) == ModelMessagesTypeAdapter.dump_json(
        chat.history[: carried + 1]
    )
    assert re.search(r"Results for 'capital of France'", returns(sent)[0])


def test_a_follow_up_narrowed_to_fewer_databases_is_offered_only_their_chunks(kb: Workspace) -> None:
    cells: list[str] = []

    def cite_cells(messages: list[ModelMessage]) -> ModelResponse:
        return call(("cite", {"chunk_ids": cells}))

    chat = Conversation(
        kb,
        *grounded("mitochondria ATP cells", "ATP [1]."),
        *grounded("capital of France", "Paris [1]."),
        search("river Seine"),
        cite_cells,
        call(("cite", {"chunk_ids": []})),
        text("The documents here do not say."),
    )
    chat.ask("What makes ATP?")
    state = chat.deps.get("retrieval", EvidenceState)
    [cited] = state.citations
    assert cited.database == "papers"
    cells.append(cited.chunk_id)
    chat.ask("What is the capital of France?")  # both databases still: the Cells chunk is offered
    assert cited.chunk_id in capsules(chat.script.seen[3])[0]
    # The follow-up narrowed to notes (one tick in a picker): carried state narrows the host's scope.
    state.sources = [Source(name="notes")]
    chat.ask("And what of the river?")
    [capsule] = capsules(chat.script.seen[6])
    assert cited.chunk_id not in capsule and cited.content not in capsule
    receipt = "[Cited from the database papers, which this question does not cover: Cells; not citable now.]"
    assert receipt in capsule
    assert "database: notes; France" in capsule  # notes' earlier chunk stays citable
    refused = returns(chat.script.seen[8], "cite")[-1]
    assert refused == (
        f"Not cited: {cited.chunk_id!r} is a chunk of the database papers, which this question does not "
        "cover; cite only chunks from this question's databases (search them for the point it made)."
    )
    assert "changed since" not in refused
    assert all(c.database == "notes" for c in state.citations)

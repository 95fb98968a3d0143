"""A web host behind pydantic-ai's real `AGUIAdapter`: the browser's state may narrow the host's scope only.

The adapter replaces `deps.state` with whatever the browser sends when a run starts, so the host's choice
of databases lives on the capability; the host returns `deps.dump()` as a state snapshot after each run.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import pytest
from ag_ui.core import (
    BaseEvent,
    Message,
    RunAgentInput,
    RunErrorEvent,
    StateSnapshotEvent,
    UserMessage,
)
from pydantic_ai import Agent
from pydantic_ai.run import AgentRunResult
from pydantic_ai.ui.ag_ui import AGUIAdapter

from haiku_cli.capabilities import (
    CitationPolicy,
    EvidenceState,
    HaikuDeps,
    PolicyState,
    RetrievalCapability,
    Source,
)
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.script import chunk_ids, cite_first, returns, search, text
from tests.chat.streaming import StreamScript


def host_agent(ws: Workspace, script: StreamScript) -> Agent[HaikuDeps, str]:
    """A web backend's agent: its host chose `notes` only, whatever the browser asks for."""
    retrieval = RetrievalCapability(ws, scope=(Source(name="notes"),))
    return Agent(script.model, deps_type=HaikuDeps, capabilities=[retrieval, CitationPolicy()])


def turn(
    agent: Agent[HaikuDeps, str], messages: Sequence[Message], state: Any
) -> tuple[list[BaseEvent], HaikuDeps, list[AgentRunResult[Any]]]:
    """One AG-UI request as a web host serves it: fresh deps, the browser's input, a state snapshot back."""
    deps = HaikuDeps()
    finished: list[AgentRunResult[Any]] = []

    async def snapshot(result: AgentRunResult[Any]) -> AsyncIterator[BaseEvent]:
        # The adapter emits no state of its own: the host returns the whole namespace map.
        finished.append(result)
        yield StateSnapshotEvent(snapshot=deps.dump())

    run_input = RunAgentInput(
        thread_id="thread",
        run_id=str(uuid.uuid4()),
        state=state,
        messages=list(messages),
        tools=[],
        context=[],
        forwarded_props=None,
    )
    adapter = AGUIAdapter(agent, run_input=run_input)

    async def collect() -> list[BaseEvent]:
        return [event async for event in adapter.run_stream(deps=deps, on_complete=snapshot)]

    return anyio.run(collect), deps, finished


def ask_message(text_: str) -> UserMessage:
    return UserMessage(id=str(uuid.uuid4()), content=text_)


def snapshot_of(events: Sequence[BaseEvent]) -> dict[str, Any]:
    [snap] = [e for e in events if isinstance(e, StateSnapshotEvent)]
    return snap.snapshot


def error_of(events: Sequence[BaseEvent]) -> str:
    [error] = [e for e in events if isinstance(e, RunErrorEvent)]
    return error.message


def papers_shown(script: StreamScript) -> bool:
    return any("Photosynthesis" in r or "mitochondrion" in r for r in returns(script.last, "search"))


@pytest.mark.parametrize("first_state", [None, {}], ids=["no-state", "empty-state"])
def test_a_browser_conversation_stays_in_the_hosts_scope(kb: Workspace, first_state: Any) -> None:
    script = StreamScript(search("light energy"), cite_first(), text("Nothing on that [1]."))
    question = ask_message("What converts light energy into chemical energy?")
    events, deps, [first] = turn(host_agent(kb, script), [question], first_state)
    # The run had no prompt (the question is the history's last user message) and searched `notes` only.
    assert chunk_ids(script.last) and not papers_shown(script)
    state = deps.get("retrieval", EvidenceState)
    assert state.asked == {1: "What converts light energy into chemical energy?"}
    assert {c.database for c in state.citations} == {"notes"}
    carried = snapshot_of(events)
    assert set(carried) == {"retrieval", "citation_policy"} and carried["retrieval"]["answer"] == 1

    # The browser echoes the snapshot with its next message: the same conversation, the same scope.
    second = StreamScript(search("photosynthesis chloroplasts"), cite_first(), text("Still notes [1]."))
    history = [*AGUIAdapter.dump_messages(first.all_messages()), ask_message("And in chloroplasts?")]
    events, deps, _ = turn(host_agent(kb, second), history, carried)
    assert not [e for e in events if isinstance(e, RunErrorEvent)]
    assert not papers_shown(second)
    assert deps.get("retrieval", EvidenceState).answer == 2
    assert deps.get("citation_policy", PolicyState).outcome == "grounded"
    assert snapshot_of(events)["retrieval"]["answer"] == 2


@pytest.mark.parametrize(
    "sources",
    [
        [{"name": "papers"}],  # configured, but not the host's choice
        [{"name": "notes"}, {"name": "papers"}],
        [{"name": "notes", "path": "/tmp/planted.lancedb"}],  # a path the host never gave
    ],
)
def test_a_tampered_state_is_refused_before_the_model_is_asked(kb: Workspace, sources: list[Any]) -> None:
    script = StreamScript(search("photosynthesis"), cite_first(), text("Chloroplasts [1]."))
    tampered = {"retrieval": {"sources": sources}}
    events, _, finished = turn(host_agent(kb, script), [ask_message("What do chloroplasts do?")], tampered)
    assert "outside this host's databases (notes)" in error_of(events)
    assert script.seen == [] and finished == []


def test_a_browser_may_narrow_the_hosts_scope(kb: Workspace) -> None:
    script = StreamScript(search("photosynthesis"), cite_first(), text("Nothing on that [1]."))
    retrieval = RetrievalCapability(kb)  # this host allows every configured database
    agent = Agent(script.model, deps_type=HaikuDeps, capabilities=[retrieval, CitationPolicy()])
    narrowed = {"retrieval": {"sources": [{"name": "notes"}]}}
    events, _, _ = turn(agent, [ask_message("What do chloroplasts do?")], narrowed)
    assert not papers_shown(script) and chunk_ids(script.last)
    assert snapshot_of(events)["retrieval"]["sources"] == [{"name": "notes", "path": None}]


def test_a_browser_that_drops_the_state_but_echoes_the_history_is_told_to_carry_it(kb: Workspace) -> None:
    script = StreamScript(search("capital of France"), cite_first(), text("Paris [1]."))
    _, _, [first] = turn(host_agent(kb, script), [ask_message("What is the capital of France?")], None)
    history = [*AGUIAdapter.dump_messages(first.all_messages()), ask_message("And its river?")]
    again = StreamScript(text("The Seine."))
    events, _, finished = turn(host_agent(kb, again), history, {})
    assert "carry deps.state" in error_of(events)
    assert again.seen == [] and finished == []

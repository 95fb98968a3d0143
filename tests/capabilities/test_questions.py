"""Question identity across runs: resuming an interrupted question, no-prompt questions, carried state."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from haiku_cli.capabilities import (
    AnalysisCapability,
    CarriedStateError,
    CitationPolicy,
    EvidenceState,
    HaikuDeps,
    PolicyState,
    RetrievalCapability,
)
from haiku_cli.capabilities.analysis import AnalysisState
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from tests.capabilities.analysis_script import execute
from tests.capabilities.script import Script, call, cite_first, search, text


def retrieval_state(deps: HaikuDeps) -> EvidenceState:
    return deps.get("retrieval", EvidenceState)


def agent(ws: Workspace, script: Script, *, analysis: bool = False) -> Agent[HaikuDeps, str]:
    capabilities = [RetrievalCapability(ws), CitationPolicy()]
    if analysis:
        capabilities.insert(1, AnalysisCapability(ws))
    return Agent(script.model, deps_type=HaikuDeps, capabilities=capabilities)


def carried(deps: HaikuDeps) -> HaikuDeps:
    """The state as a host stores and reads it back."""
    return HaikuDeps.restore(json.loads(json.dumps(deps.dump())))


def declare() -> ModelResponse:
    return call(("cite", {"chunk_ids": []}))


def server_dies(messages: list[ModelMessage]) -> ModelResponse:
    raise RuntimeError("the model server went away")


def test_a_question_interrupted_by_an_error_resumes_with_its_budget_and_evidence(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(search("capital of France"), server_dies)
    with capture_run_messages() as interrupted, pytest.raises(RuntimeError):
        agent(kb, first).run_sync("What is the capital of France?", deps=deps, message_history=[])
    deps = carried(deps)
    state = retrieval_state(deps)
    assert state.in_progress is not None and state.units == {1: 1} and state.evidence

    # The host resumes with the history it captured and no new prompt.
    second = Script(search("Paris"), cite_first(), text("Paris [1]."))
    result = agent(kb, second).run_sync(deps=deps, message_history=interrupted)
    state = retrieval_state(deps)
    assert result.output == "Paris [1]."
    assert state.answer == 1  # still the first question
    assert state.units == {1: 1, 2: 1}  # the interrupted search still counts against the budget
    assert "search units left: 3" in str(second.last)
    assert state.grounded and state.in_progress is None
    assert deps.get("citation_policy", PolicyState).outcome == "grounded"


def test_a_run_without_a_prompt_after_a_finished_question_is_a_new_question(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = agent(kb, Script(search("capital of France"), cite_first(), text("Paris [1].")))
    history = first.run_sync("What is the capital of France?", deps=deps).all_messages()
    # A UI adapter appends the user's next message to the history and runs without a prompt.
    asked = [*history, ModelRequest(parts=[UserPromptPart("And what grows in the sun?")])]
    second = Script(search("basil sun"), cite_first(), text("Basil [1]."))
    agent(kb, second).run_sync(deps=deps, message_history=asked)
    state = retrieval_state(deps)
    assert state.answer == 2
    assert state.asked[2] == "And what grows in the sun?"
    assert state.units == {1: 1} and [c.index for c in state.citations] == [1]
    assert state.prior_citations == 1


def test_history_carried_without_its_state_is_refused_before_the_model_is_asked(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = agent(kb, Script(search("capital of France"), cite_first(), text("Paris [1].")))
    history = first.run_sync("What is the capital of France?", deps=deps).all_messages()
    second = Script(text("As I said, Paris."))
    with pytest.raises(CarriedStateError, match=r"carry deps.state .*together with the messages"):
        agent(kb, second).run_sync("Tell me again", deps=HaikuDeps(), message_history=history)
    assert second.seen == []
    # With its state, the same history is fine.
    agent(kb, Script(cite_first(), text("Paris [1].")), analysis=False).run_sync(
        "Tell me again", deps=carried(deps), message_history=history
    )


def test_a_host_with_both_capabilities_that_used_only_retrieval_is_not_refused(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = agent(kb, Script(search("capital of France"), cite_first(), text("Paris [1].")), analysis=True)
    history = first.run_sync("What is the capital of France?", deps=deps).all_messages()
    assert deps.get("analysis", AnalysisState).tool_calls == []  # it never served evidence
    second = Script(cite_first(), text("Paris [1]."))
    result = agent(kb, second, analysis=True).run_sync("Again?", deps=carried(deps), message_history=history)
    assert result.output == "Paris [1]."


def test_dropping_the_analysis_state_is_refused_when_its_evidence_is_in_the_history(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = agent(kb, Script(execute("print(1)"), declare(), text("1")), analysis=True)
    history = first.run_sync("How many?", deps=deps).all_messages()
    kept = carried(deps)
    del kept.state["analysis"]
    with pytest.raises(CarriedStateError, match=r"`execute_code` results .*deps.state\['analysis'\]"):
        agent(kb, Script(text("1")), analysis=True).run_sync("Again?", deps=kept, message_history=history)


def test_a_history_ending_in_an_unanswered_search_without_state_is_refused(kb: Workspace) -> None:
    # The host lost the state of a question whose search call the model is still owed the results of.
    owed = [
        ModelRequest(parts=[UserPromptPart("What is the capital of France?")]),
        ModelResponse(parts=[ToolCallPart("search", {"query": "capital of France"})]),
    ]
    script = Script(text("Paris."))
    with pytest.raises(CarriedStateError, match="a question still in progress"):
        agent(kb, script).run_sync(deps=HaikuDeps(), message_history=owed)
    assert script.seen == []


def test_a_run_paused_for_approval_keeps_its_question_in_progress(kb: Workspace) -> None:
    script = Script(
        call(("search", {"query": "capital of France"}), ("send_email", {"to": "boss"})),
        cite_first(),
        text("Paris [1]; mail sent."),
    )
    agent = Agent(
        script.model,
        deps_type=HaikuDeps,
        output_type=[str, DeferredToolRequests],
        capabilities=[RetrievalCapability(kb), CitationPolicy()],
    )

    @agent.tool_plain(requires_approval=True)
    def send_email(to: str) -> str:
        return f"sent to {to}"

    deps = HaikuDeps()
    paused = agent.run_sync("Capital of France? Then mail it.", deps=deps)
    assert isinstance(paused.output, DeferredToolRequests)
    state = retrieval_state(deps)
    assert state.in_progress is not None and state.evidence
    assert deps.get("citation_policy", PolicyState).outcome is None  # a pause is not an ending

    [approval] = paused.output.approvals
    deps = carried(deps)
    resumed = agent.run_sync(
        deps=deps,
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={approval.tool_call_id: True}),
    )
    assert resumed.output == "Paris [1]; mail sent."
    state = retrieval_state(deps)
    assert state.answer == 1 and state.asked == {1: "Capital of France? Then mail it."}  # the same question
    assert state.grounded and state.in_progress is None
    policy = deps.get("citation_policy", PolicyState)
    assert policy.outcome == "grounded" and policy.history == []


@dataclass
class HostDeps:
    """A host's own deps: its fields, plus the plain `state` dict the capabilities keep their state in."""

    user: str
    state: dict[str, Any] = field(default_factory=dict)


def test_a_hosts_own_deps_with_a_state_dict_carry_the_capabilities_state(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    agent = Agent(script.model, deps_type=HostDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    deps = HostDeps(user="ann")
    assert agent.run_sync("What is the capital of France?", deps=deps).output == "Paris [1]."  # type: ignore[arg-type]
    assert deps.state["retrieval"].grounded and deps.state["citation_policy"].outcome == "grounded"


def test_deps_without_a_state_dict_are_refused_in_one_line(kb: Workspace) -> None:
    script = Script(text("Paris."))
    agent = Agent(script.model, deps_type=str, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    refused = (
        r"state in `deps.state`, a dict, but the run's deps \(str\) have no `state` attribute: use HaikuDeps"
    )
    with pytest.raises(InputError, match=refused):
        agent.run_sync("Capital?", deps="ann")  # type: ignore[arg-type]
    assert script.seen == []


@pytest.mark.parametrize("ui_adapter", [False, True])
def test_a_new_prompt_after_an_interrupted_run_begins_a_new_question(kb: Workspace, ui_adapter: bool) -> None:
    deps = HaikuDeps()
    with capture_run_messages() as interrupted, pytest.raises(RuntimeError):
        agent(kb, Script(search("capital of France"), server_dies)).run_sync("Capital of France?", deps=deps)
    deps = carried(deps)
    second = Script(search("basil sun"), cite_first(), text("Basil [1]."))
    if ui_adapter:  # the user's next message appended to the history, no prompt
        asked = [*interrupted, ModelRequest(parts=[UserPromptPart("And basil?")])]
        agent(kb, second).run_sync(deps=deps, message_history=asked)
    else:
        agent(kb, second).run_sync("And basil?", deps=deps, message_history=interrupted)
    state = retrieval_state(deps)
    assert state.answer == 2 and state.asked[2] == "And basil?"
    assert state.units == {1: 1}  # a budget of its own, not the interrupted question's
    assert state.grounded and state.in_progress is None and state.prior_citations == 0
    policy = deps.get("citation_policy", PolicyState)
    assert policy.outcome == "grounded" and policy.in_progress is None


def test_dropping_only_the_policy_state_is_refused_like_the_evidence_states(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = agent(kb, Script(search("capital of France"), cite_first(), text("Paris [1].")))
    history = first.run_sync("What is the capital of France?", deps=deps).all_messages()
    kept = carried(deps)
    del kept.state["citation_policy"]
    second = Script(text("As I said, Paris."))
    with pytest.raises(CarriedStateError, match=r"deps.state\['citation_policy'\] has no record"):
        agent(kb, second).run_sync("Tell me again", deps=kept, message_history=history)
    assert second.seen == []
    # A UI adapter's first question (the prompt in the history, no state yet) is not refused.
    fresh = HaikuDeps()
    asked = [ModelRequest(parts=[UserPromptPart("What is the capital of France?")])]
    third = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    assert agent(kb, third).run_sync(deps=fresh, message_history=asked).output == "Paris [1]."


@pytest.mark.parametrize(("dropped", "tool"), [("analysis", "execute_code"), ("retrieval", "search")])
def test_each_capabilitys_record_is_judged_on_its_own_when_one_of_two_is_dropped(
    kb: Workspace, dropped: str, tool: str
) -> None:
    # Both capabilities served evidence; the host carries one's record and drops the other's. The record
    # it kept says nothing of the other's returns, so the history is refused all the same.
    deps = HaikuDeps()
    first = Script(search("capital of France"), execute("print(1)"), cite_first(), text("Paris [1]."))
    history = agent(kb, first, analysis=True).run_sync("Capital?", deps=deps).all_messages()
    assert retrieval_state(deps).tool_calls and deps.get("analysis", AnalysisState).tool_calls
    kept = carried(deps)
    del kept.state[dropped]
    second = Script(text("Paris."))
    with pytest.raises(CarriedStateError, match=rf"`{tool}` results .*deps.state\['{dropped}'\]"):
        agent(kb, second, analysis=True).run_sync("Again?", deps=kept, message_history=history)
    assert second.seen == []

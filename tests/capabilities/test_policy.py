"""The citation policy: cite or declare, one redirect, then a recorded violation; one decision per answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, capture_run_messages
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from haiku_cli.capabilities import (
    REDIRECT_TAG,
    Citation,
    CitationPolicy,
    EarlierCitation,
    EvidenceCapability,
    EvidenceRef,
    EvidenceState,
    HaikuDeps,
    PolicyState,
    RetrievalCapability,
)
from haiku_cli.capabilities.policy import decide, redirect_sent
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.script import (
    Script,
    agent_tools,
    call,
    chunk_ids,
    cite_first,
    returns,
    run,
    search,
    text,
)
from tests.capabilities.test_deferred import deferred_agent, load
from tests.capabilities.test_questions import server_dies
from tests.chat.streaming import StreamScript


def policy_state(deps: HaikuDeps) -> PolicyState:
    return deps.get("citation_policy", PolicyState)


def retrieval_state(deps: HaikuDeps) -> EvidenceState:
    return deps.get("retrieval", EvidenceState)


def redirects_seen(script: Script) -> int:
    """How many of our redirects the model was shown in its latest request (found by tag).

    A FunctionModel gets prepared messages, where retry feedback arrives as a fenced user prompt.
    """
    return sum(
        1
        for m in script.last
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart | RetryFeedbackPart) and REDIRECT_TAG in str(p.content)
    )


def test_model_that_never_cites_is_redirected_once_then_recorded(kb: Workspace) -> None:
    script = Script(search("capital of France"), text("Paris."), text("Paris, really."))
    output, deps = run(kb, script)
    assert output == "Paris, really."
    assert redirects_seen(script) == 1
    assert policy_state(deps).redirected and policy_state(deps).outcome == "violation"
    state = retrieval_state(deps)
    assert state.violation and not state.grounded


def test_redirected_model_that_cites_is_grounded(kb: Workspace) -> None:
    script = Script(search("capital of France"), text("Paris."), cite_first(), text("Paris [1]."))
    _, deps = run(kb, script)
    assert policy_state(deps).outcome == "grounded"
    assert policy_state(deps).redirected
    assert retrieval_state(deps).grounded and not retrieval_state(deps).violation


def test_redirected_model_may_declare_ungrounded(kb: Workspace) -> None:
    script = Script(
        search("volcanoes"),
        text("Lots."),
        call(("cite", {"chunk_ids": []})),
        text("The documents do not say."),
    )
    _, deps = run(kb, script)
    assert policy_state(deps).outcome == "ungrounded"
    assert not retrieval_state(deps).violation


def test_answer_without_evidence_is_not_redirected(kb: Workspace) -> None:
    script = Script(text("Hello! Ask me about your documents."))
    _, deps = run(kb, script)
    assert policy_state(deps).outcome == "no_evidence"
    assert len(script.seen) == 1


def test_search_with_no_results_is_no_evidence(kb: Workspace) -> None:
    deps = HaikuDeps()
    RetrievalCapability(kb).evidence(deps).document_filter = "title = 'no such title'"
    script = Script(search("anything"), text("The documents do not say."))
    run(kb, script, deps=deps)
    assert policy_state(deps).outcome == "no_evidence"


def test_earlier_citations_put_evidence_in_play_for_the_next_answer(kb: Workspace) -> None:
    first = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    _, deps = run(kb, first)
    # The host carries state across runs as JSON.
    deps = HaikuDeps.restore(json.loads(json.dumps(deps.dump())))
    second = Script(text("As I said, Paris."), text("As I said, Paris."))
    run(kb, second, deps=deps)
    assert redirects_seen(second) == 1
    policy = policy_state(deps)
    assert policy.history == ["grounded"] and policy.outcome == "violation"
    state = retrieval_state(deps)
    assert state.answer == 2 and state.prior_citations == 1 and state.citations == []


def test_duplicate_policies_make_one_decision(kb: Workspace) -> None:
    script = Script(search("capital of France"), text("Paris."), text("Paris."))
    _, deps = run(kb, script, extra=[CitationPolicy()])
    assert redirects_seen(script) == 1
    assert policy_state(deps).outcome == "violation"


def test_without_an_output_retry_left_the_violation_is_recorded_not_raised(kb: Workspace) -> None:
    script = Script(search("capital of France"), text("Paris."))
    deps = HaikuDeps()
    agent = Agent(
        script.model,
        deps_type=HaikuDeps,
        capabilities=[RetrievalCapability(kb), CitationPolicy()],
        retries={"output": 0},
    )
    assert agent.run_sync("q", deps=deps).output == "Paris."
    assert policy_state(deps).outcome == "violation"
    assert retrieval_state(deps).violation


@dataclass(eq=False)
class Notebook(EvidenceCapability):
    """A second evidence capability, standing in for analysis: its evidence arrives at run start."""

    seed: bool = True
    state_key: str = "notebook"

    def evidence(self, deps: HaikuDeps) -> EvidenceState:
        return deps.get(self.state_key, EvidenceState)

    def evidence_tools(self) -> frozenset[str]:
        return frozenset()

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        await super().before_run(ctx)
        if self.seed:
            self.evidence(ctx.deps).saw([EvidenceRef(database="notes", chunk_id="computed")])


def test_several_evidence_capabilities_get_one_redirect_and_one_decision(kb: Workspace) -> None:
    script = Script(text("An answer."), text("An answer."))
    _, deps = run(kb, script, extra=[Notebook()])
    assert redirects_seen(script) == 1
    assert policy_state(deps).outcome == "violation"
    assert deps.get("notebook", EvidenceState).violation
    assert not retrieval_state(deps).violation  # it gathered nothing for this answer


def test_a_citation_from_any_evidence_capability_satisfies_the_policy(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    _, deps = run(kb, script, extra=[Notebook()])
    assert policy_state(deps).outcome == "grounded"
    assert not deps.get("notebook", EvidenceState).violation


def test_redirect_is_recognised_by_its_tag_in_this_run_only() -> None:
    tagged = ModelRequest(
        parts=[RetryFeedbackPart(f"{REDIRECT_TAG} reworded prose", retry=_retry())], run_id="r1"
    )
    prose = ModelRequest(parts=[RetryFeedbackPart("please cite your sources", retry=_retry())], run_id="r1")
    user = ModelRequest(parts=[UserPromptPart(f"{REDIRECT_TAG} typed by a user")], run_id="r1")
    answered = ModelResponse(parts=[TextPart("Paris.")], run_id="r1")
    assert redirect_sent([tagged, answered], {"r1"})
    assert not redirect_sent([prose, answered, user, answered], {"r1"})
    assert not redirect_sent([tagged, answered], {"r2"})
    # Queued but never answered (the run stopped at a limit): not sent, so it is asked again.
    assert not redirect_sent([answered, tagged], {"r1"})


def _retry() -> RetryInfo:
    return RetryInfo(cause="model_retry", attempt=1)


def _state(
    *,
    evidence: bool = False,
    cited: bool = False,
    declared: bool = False,
    prior: int = 0,
    later: bool = False,
    newer: bool = False,
) -> EvidenceState:
    citation = Citation(index=1, database="d", document_id="x", chunk_id="c", content="t")
    state = EvidenceState(earlier=[EarlierCitation(answer=1, citation=citation)] * prior)
    if evidence:
        state.saw([EvidenceRef(database="d", chunk_id="c")])
    if declared:
        state.declare_ungrounded()
    if later:  # evidence newer than the declaration
        state.saw([EvidenceRef(database="d", chunk_id="newer")])
    if cited:
        state.citations.append(citation)
        state.spoke()
    if newer:  # evidence newer than the citation
        state.saw([EvidenceRef(database="d", chunk_id="newest")])
    return state


@pytest.mark.parametrize(
    ("states", "redirected", "expected"),
    [
        ([_state(evidence=True, cited=True)], False, "grounded"),
        ([_state(evidence=True, declared=True)], False, "ungrounded"),
        ([_state(evidence=True, cited=True, declared=True)], False, "grounded"),
        ([_state(evidence=True, declared=True, later=True)], False, "redirect"),
        ([_state()], False, "no_evidence"),
        ([], False, "no_evidence"),
        ([_state(evidence=True)], False, "redirect"),
        ([_state(prior=2)], False, "redirect"),
        ([_state(evidence=True)], True, "violation"),
        ([_state(evidence=True, cited=True), _state()], False, "grounded"),
        ([_state(evidence=True, cited=True, newer=True)], False, "redirect"),  # a fresh declaration is due
        ([_state(evidence=True, cited=True, newer=True)], True, "grounded"),  # the citation stands
        ([_state(evidence=True, cited=True, newer=True, declared=True)], True, "grounded"),
    ],
)
def test_decide(states: list[EvidenceState], redirected: bool, expected: str) -> None:
    assert decide(states, redirected=redirected) == expected


class Answer(BaseModel):
    answer: str


def final(answer: str) -> ModelResponse:
    return call(("final_result", {"answer": answer}))


def tagged(messages: Sequence[ModelMessage]) -> int:
    """How many of our redirects a stored history holds, in whatever part carried them."""
    return sum(
        1
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryFeedbackPart | SystemPromptPart)
        and REDIRECT_TAG in str(p.content)
    )


def test_structured_output_is_redirected_once(kb: Workspace) -> None:
    script = Script(search("capital of France"), final("Paris."), final("Paris!"), final("Paris!!"))
    deps = HaikuDeps()
    agent = Agent(
        script.model,
        deps_type=HaikuDeps,
        output_type=Answer,
        capabilities=[RetrievalCapability(kb), CitationPolicy()],
        retries={"output": 3},
    )
    result = agent.run_sync("What is the capital of France?", deps=deps)
    assert result.output == Answer(answer="Paris!")
    assert tagged(result.all_messages()) == 1 and len(script.seen) == 3
    assert policy_state(deps).outcome == "violation" and retrieval_state(deps).violation


def test_declaring_ungrounded_after_a_citation_keeps_the_answer_grounded(kb: Workspace) -> None:
    script = Script(
        search("capital of France"), cite_first(), call(("cite", {"chunk_ids": []})), text("Paris [1].")
    )
    _, deps = run(kb, script)
    state = retrieval_state(deps)
    assert state.grounded and [c.index for c in state.citations] == [1]
    assert policy_state(deps).outcome == "grounded"
    assert "keeps its citations [1]" in returns(script.last, "cite")[-1]


def test_newer_evidence_after_an_ungrounded_declaration_needs_a_fresh_one(kb: Workspace) -> None:
    declare = call(("cite", {"chunk_ids": []}))
    script = Script(
        search("basil sun"), declare, search("capital of France"), text("No."), declare, text("No.")
    )
    deps = HaikuDeps()
    capabilities = [RetrievalCapability(kb, limit=1), CitationPolicy()]  # one new chunk per search
    Agent(script.model, deps_type=HaikuDeps, capabilities=capabilities).run_sync("q", deps=deps)
    assert redirects_seen(script) == 1
    assert policy_state(deps).outcome == "ungrounded" and not retrieval_state(deps).violation


def test_an_ending_no_per_response_hook_saw_is_judged_after_the_run(kb: Workspace) -> None:
    # The output is judged before the search in the same response runs: evidence arrives after the answer.
    script = Script(call(("final_result", {"answer": "Paris."}), ("search", {"query": "capital of France"})))
    deps = HaikuDeps()
    agent = Agent(
        script.model,
        deps_type=HaikuDeps,
        output_type=Answer,
        end_strategy="exhaustive",
        capabilities=[RetrievalCapability(kb), CitationPolicy()],
    )
    agent.run_sync("q", deps=deps)
    assert retrieval_state(deps).evidence
    assert policy_state(deps).outcome == "violation" and retrieval_state(deps).violation
    # The next question files it once.
    run(kb, Script(text("Hello.")), deps=deps)
    assert policy_state(deps).history == ["violation"]


def test_a_redirect_sent_before_an_interruption_is_not_sent_again_on_resumption(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(search("capital of France"), text("Paris."), server_dies)
    agent = Agent(first.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    with capture_run_messages() as interrupted, pytest.raises(RuntimeError):
        agent.run_sync("Capital?", deps=deps)
    assert tagged(interrupted) == 1
    second = Script(text("Paris, again."), text("Paris, once more."))
    agent = Agent(second.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    result = agent.run_sync(deps=deps, message_history=interrupted)
    assert result.output == "Paris, again." and tagged(result.all_messages()) == 1
    assert policy_state(deps).outcome == "violation"


def test_a_question_resumed_before_its_redirect_is_redirected_once_in_the_resuming_run(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(search("capital of France"), server_dies)
    agent = Agent(first.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    with capture_run_messages() as interrupted, pytest.raises(RuntimeError):
        agent.run_sync("Capital?", deps=deps)
    # The resuming run sends the redirect; its own redirect counts, so the second uncited answer ends it.
    second = Script(text("Paris."), text("Paris, again."), text("Paris, once more."))
    agent = Agent(
        second.model,
        deps_type=HaikuDeps,
        capabilities=[RetrievalCapability(kb), CitationPolicy()],
        retries={"output": 3},  # room for a second redirect, were one sent
    )
    result = agent.run_sync(deps=deps, message_history=interrupted)
    assert result.output == "Paris, again." and tagged(result.all_messages()) == 1
    assert policy_state(deps).outcome == "violation" and retrieval_state(deps).violation


def streamed(agent: Agent[HaikuDeps, str], deps: HaikuDeps) -> tuple[str, list[ModelMessage], list[str]]:
    """Run under `run_stream` (which cannot retry); the output, the messages and every text the host saw."""
    seen: list[str] = []

    async def go() -> tuple[str, list[ModelMessage]]:
        async with agent.run_stream("Capital?", deps=deps) as stream:
            async for text_so_far in stream.stream_text():
                seen.append(text_so_far)
            return await stream.get_output(), stream.all_messages()

    output, messages = anyio.run(go)
    return output, messages, seen


def streaming_agent(ws: Workspace, script: StreamScript) -> Agent[HaikuDeps, str]:
    return Agent(script.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(ws), CitationPolicy()])


def test_a_streamed_model_about_to_cite_is_not_redirected(kb: Workspace) -> None:
    script = StreamScript(search("capital of France"), cite_first(), text("Paris [1]."))
    deps = HaikuDeps()
    output, messages, _ = streamed(streaming_agent(kb, script), deps)
    # The same decision as `run()`: nothing ended the question uncited, so nothing was sent back.
    assert output == "Paris [1]." and len(script.seen) == 3 and tagged(messages) == 0
    assert all(REDIRECT_TAG not in str(request) for request in script.seen)
    assert policy_state(deps).outcome == "grounded" and not policy_state(deps).redirected


def test_a_streamed_draft_ending_uncited_is_redirected_before_the_host_sees_it(kb: Workspace) -> None:
    script = StreamScript(
        search("capital of France"), text("Paris, I think."), cite_first(), text("Paris [1].")
    )
    deps = HaikuDeps()
    output, messages, seen = streamed(streaming_agent(kb, script), deps)
    assert output == "Paris [1]."
    assert not any("I think" in t for t in seen)  # the draft never reached the host
    assert REDIRECT_TAG in str(script.seen[2][-1])  # the model was asked again, as `run()` would
    assert "I think" not in str(messages)  # the stored history holds the answer only
    assert policy_state(deps).redirected and policy_state(deps).outcome == "grounded"


def test_a_streamed_answer_that_ignores_the_redirect_is_recorded_once(kb: Workspace) -> None:
    script = StreamScript(search("capital of France"), text("Paris."), text("Paris, still."))
    deps = HaikuDeps()
    output, _, _ = streamed(streaming_agent(kb, script), deps)
    assert output == "Paris, still." and len(script.seen) == 3
    assert policy_state(deps).outcome == "violation" and retrieval_state(deps).violation


def test_a_host_that_withdraws_cite_gets_a_violation_not_a_redirect_to_a_gone_tool(kb: Workspace) -> None:
    async def without_cite(
        ctx: RunContext[HaikuDeps], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return [t for t in tool_defs if t.name != "cite"]

    script = Script(search("capital of France"), text("Paris."))
    _, deps = run(kb, script, extra=[PrepareTools(without_cite)])
    assert "cite" not in {t.name for t in agent_tools(script, 1)}
    assert len(script.seen) == 2 and redirects_seen(script) == 0
    assert policy_state(deps).outcome == "violation" and retrieval_state(deps).violation


def test_newer_evidence_after_a_citation_needs_a_fresh_citation_or_declaration(kb: Workspace) -> None:
    latest = lambda messages: call(("cite", {"chunk_ids": chunk_ids(messages)[-1:]}))  # noqa: E731
    script = Script(
        search("capital of France"),
        cite_first(),
        search("basil sun"),  # a new chunk, shown after the citation
        text("Paris [1]."),  # sent back: the basil chunk is neither cited nor declared
        latest,
        text("Paris [1]; basil [2]."),
    )
    deps = HaikuDeps()
    capabilities = [RetrievalCapability(kb, limit=1), CitationPolicy()]
    Agent(script.model, deps_type=HaikuDeps, capabilities=capabilities).run_sync("q", deps=deps)
    assert redirects_seen(script) == 1
    assert [c.index for c in retrieval_state(deps).citations] == [1, 2]
    assert policy_state(deps).outcome == "grounded"
    # Ignoring the redirect keeps the answer grounded by what it cited: a citation is never withdrawn.
    ignored = Script(search("capital of France"), cite_first(), search("basil sun"), text("A."), text("B."))
    deps = HaikuDeps()
    Agent(ignored.model, deps_type=HaikuDeps, capabilities=capabilities).run_sync("q", deps=deps)
    assert redirects_seen(ignored) == 1 and policy_state(deps).outcome == "grounded"


def test_a_redirect_queued_by_a_run_stopped_at_its_limit_is_asked_again(kb: Workspace) -> None:
    deps = HaikuDeps()
    first = Script(search("capital of France"), text("Paris."))
    agent = Agent(first.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])
    with capture_run_messages() as stopped, pytest.raises(UsageLimitExceeded):
        agent.run_sync("Capital?", deps=deps, usage_limits=UsageLimits(request_limit=2))
    assert tagged(stopped) == 1 and len(first.seen) == 2  # queued, never answered
    # Resumed under `run_stream`: that redirect never reached the model, so an uncited answer is held back
    # and sent back once more instead of being let through as a violation.
    second = StreamScript(text("Paris, again."), cite_first(), text("Paris [1]."))
    agent = Agent(second.model, deps_type=HaikuDeps, capabilities=[RetrievalCapability(kb), CitationPolicy()])

    async def go() -> str:
        async with agent.run_stream(deps=deps, message_history=stopped) as stream:
            return await stream.get_output()

    assert anyio.run(go) == "Paris [1]."
    assert policy_state(deps).outcome == "grounded" and policy_state(deps).held_back


def test_instructions_never_name_cite_when_the_model_cannot_call_it(kb: Workspace) -> None:
    async def without_cite(
        ctx: RunContext[HaikuDeps], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return [t for t in tool_defs if t.name != "cite"]

    withheld = Script(search("capital of France"), text("Paris."))
    run(kb, withheld, extra=[PrepareTools(without_cite)])
    assert all("`cite`" not in str(info.instructions) for info in withheld.infos)
    assert "Ground every answer in the documents." in str(withheld.infos[0].instructions)
    assert "`search` tool" in str(withheld.infos[0].instructions)
    # Offered: the same rule names it.
    offered = Script(search("capital of France"), cite_first(), text("Paris [1]."))
    run(kb, offered)
    assert "call `cite` with the ids" in str(offered.infos[0].instructions)


def test_instructions_name_cite_only_once_a_deferred_retrieval_is_loaded(kb: Workspace) -> None:
    script = Script(load("retrieval"), search("capital of France"), cite_first(), text("Paris [1]."))
    deferred_agent(kb, script, retrieval=True, analysis=False).run_sync(
        "Capital of France?", deps=HaikuDeps()
    )
    assert "`cite`" not in str(script.infos[0].instructions)  # only the catalog: cite is not callable yet
    assert "call `cite` with the ids" in str(script.infos[1].instructions)

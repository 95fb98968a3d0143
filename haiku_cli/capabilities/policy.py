"""The citation policy: an answer built on evidence must cite it or say it is ungrounded.

One decision per answer, across every registered evidence capability. When a final response would end
the question with evidence in play and nothing cited or declared, the model is sent back once per
question (recognised by a machine tag in whatever part carried it); the outcome is recorded after the
run, so an ending no per-response hook saw (a stream, `end_strategy="early"`) is still judged, once.

A streamed response cannot be taken back once its text reaches the reader (and `run_stream` cannot retry
at all), so for streamed requests the redirect comes before the response instead: the first streamed
request after this question was shown evidence, with nothing cited or declared, carries the redirect and
allows no text or output-tool answer, so the model must cite, declare or search first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    RetryFeedbackPart,
    SystemPromptPart,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.output import OutputContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests

from haiku_cli.capabilities.evidence import evidence_states, finish_questions, track_questions
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps, Question

# A machine tag, so recognising our own redirect never depends on its (editable) prose.
REDIRECT_TAG = "<haiku:cite-or-declare/>"
REDIRECT_MESSAGE = (
    f"{REDIRECT_TAG} You gathered evidence but neither cited it nor declared the answer ungrounded. "
    "Call `cite` with the ids of the chunks your answer relies on, or `cite` with an empty list if the "
    "documents do not support an answer; then give your answer again."
)
STREAM_REDIRECT_MESSAGE = (
    f"{REDIRECT_TAG} Before you answer: evidence is in play and nothing is cited or declared yet. Call "
    "`cite` with the ids of the chunks your answer will rely on, or `cite` with an empty list if the "
    "documents do not support an answer (you may also search first); then answer."
)

Outcome = Literal["grounded", "ungrounded", "no_evidence", "violation"]
StreamedRedirect = Literal["before", "after"]
Decision = Outcome | Literal["redirect"]


class PolicyState(BaseModel):
    """The policy's record: the question in progress, whether it was sent back, and outcomes so far."""

    in_progress: Question | None = None
    redirected: bool = False
    outcome: Outcome | None = None
    history: list[Outcome] = Field(default_factory=list)  # outcomes of earlier answers, oldest first

    def begin_question(self, run_id: str | None) -> None:
        """File the previous answer's outcome and start a new question."""
        if self.outcome is not None:
            self.history.append(self.outcome)
        self.outcome = None
        self.redirected = False
        self.in_progress = Question(number=len(self.history) + 1, runs=[run_id] if run_id else [])

    def runs(self) -> set[str]:
        """The runs that worked on the question in progress."""
        return set(self.in_progress.runs) if self.in_progress is not None else set()


def decide(states: Sequence[EvidenceState], *, redirected: bool) -> Decision:
    """The one decision on a final response, given every evidence state and whether we already redirected."""
    if any(s.grounded for s in states):
        return "grounded"
    if any(s.settled for s in states):
        return "ungrounded"
    if not any(s.has_evidence for s in states):
        return "no_evidence"
    return "violation" if redirected else "redirect"


def redirect_sent(messages: Sequence[ModelMessage], runs: set[str]) -> bool:
    """Whether the question's runs hold our redirect, by its tag, in any part pydantic-ai may carry it in.

    That is retry feedback (text output), a retried output-tool return (structured output), or the system
    note a streamed request carries. A user's own prompt never counts, whatever it says.
    """
    for message in messages:
        if not isinstance(message, ModelRequest) or message.run_id not in runs:
            continue
        for part in message.parts:
            if isinstance(part, RetryFeedbackPart | SystemPromptPart) or (
                isinstance(part, ToolReturnPart) and part.outcome == "retried"
            ):
                content = part.content
            else:
                continue
            if isinstance(content, str) and REDIRECT_TAG in content:
                return True
    return False


@dataclass(eq=False)
class CitationPolicy(AbstractCapability[HaikuDeps]):
    """Hold every answer built on evidence to citing it or declaring it ungrounded (one per agent)."""

    _: KW_ONLY
    # A default id makes a second instance merge into the first: an agent has one policy.
    id: str | None = "citation_policy"
    state_key: str = "citation_policy"
    # "before": streamed requests get the redirect ahead of the answer (works under `run_stream`, which
    # cannot retry). "after": a host driving streamed runs with `run()`/`run_stream_events()`/`iter()`,
    # where output retries work, gets the usual redirect and replaces the streamed draft itself.
    streamed_redirect: StreamedRedirect = "before"

    def state(self, deps: HaikuDeps) -> PolicyState:
        """The live policy state in `deps.state`."""
        return deps.get(self.state_key, PolicyState)

    def get_instructions(self) -> str:
        """The grounding rule, as the model should hear it."""
        return (
            "Ground every answer in the documents. Before answering, call `cite` with the ids of the chunks "
            "that support it, and mark each supported statement with the number `cite` returns, like [1]. "
            "If the documents do not answer the question, say plainly that the documents do not say, and "
            "call `cite` with an empty list to declare the answer ungrounded."
        )

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        """Begin a question, or resume the one in progress (its redirect stays sent).

        The policy is always on, so it also begins the question in every evidence capability's state:
        one deferred until the model loads it runs no hook of its own at run start.
        """
        track_questions(ctx)
        policy = self.state(ctx.deps)
        if policy.in_progress is None:
            policy.begin_question(ctx.run_id)
        elif ctx.run_id and ctx.run_id not in policy.in_progress.runs:
            policy.in_progress.runs.append(ctx.run_id)

    def _decide(self, ctx: RunContext[HaikuDeps]) -> Decision:
        policy = self.state(ctx.deps)
        return decide(evidence_states(ctx), redirected=redirect_sent(ctx.messages, policy.runs()))

    async def before_model_request(
        self, ctx: RunContext[HaikuDeps], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Streamed requests get the redirect before the response, with no way to answer on that step.

        Only once this question has been shown evidence: a follow-up that has not searched yet is judged
        like any answer (redirected after the fact where the run can retry, else recorded).
        """
        if self.streamed_redirect != "before" or not request_context.streaming:
            return request_context
        if self._decide(ctx) != "redirect":
            return request_context
        if not any(s.evidence_mark for s in evidence_states(ctx)):
            return request_context
        self.state(ctx.deps).redirected = True
        ctx.enqueue(SystemPromptPart(STREAM_REDIRECT_MESSAGE))
        params = replace(request_context.model_request_parameters, allow_text_output=False, output_tools=[])
        return replace(request_context, model_request_parameters=params)

    async def after_output_process(
        self, ctx: RunContext[HaikuDeps], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Send a final response back once if it would end the question with evidence left uncited."""
        if ctx.partial_output or isinstance(output, DeferredToolRequests):
            return output
        if self._decide(ctx) == "redirect" and ctx.retry < ctx.max_retries:
            self.state(ctx.deps).redirected = True
            raise ModelRetry(REDIRECT_MESSAGE)
        return output

    async def after_run(
        self, ctx: RunContext[HaikuDeps], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Record the answer's outcome once, however it ended; a pause for deferred tools is not an end."""
        policy = self.state(ctx.deps)
        if isinstance(result.output, DeferredToolRequests) or policy.in_progress is None:
            return result
        states = evidence_states(ctx)
        outcome = decide(states, redirected=True)
        if outcome == "violation":
            # Let the answer through, but never silently: each state that held evidence records it.
            for s in states:
                s.violation = s.has_evidence
        policy.outcome = outcome  # type: ignore[assignment]
        policy.in_progress = None
        finish_questions(ctx, result)
        return result

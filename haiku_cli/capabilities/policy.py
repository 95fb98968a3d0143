"""The citation policy: an answer built on evidence must cite it or say it is ungrounded.

One decision per answer, across every registered evidence capability. When a final response would end
the question with evidence in play and nothing cited or declared, the model is sent back once per
question (recognised by a machine tag in whatever part carried it); the outcome is recorded after the
run, so an ending no per-response hook saw (a stream, `end_strategy="early"`) is still judged, once.

A streamed response cannot be taken back once its text reaches the reader (and `run_stream` cannot retry
at all), so a streamed response that may be sent back is held until it is complete: if it would end the
question uncited, the host never sees it and the model is asked again with the same redirect, inside the
same model request; otherwise it is passed on whole. The decision is `run()`'s: only an answer that would
end the question uncited is redirected. So with quotes (`quotes="redirect"`): while the question's quote
redirect is unspent and evidence is in play, a streamed text response is held until complete, its quotes
checked, and one quoting what the cited chunks do not hold is asked again with the quote redirect before
the host sees it. A host that would rather stream every answer live (`quotes="flag"`, `haiku serve`) holds
a draft only for the citation redirect: quotes are then never sent back, only checked once the answer
stands and flagged in the policy's record (`PolicyState.quotes`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.output import OutputContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import DeferredToolRequests

from haiku_cli.capabilities.evidence import (
    CarriedStateError,
    evidence_states,
    finish_questions,
    resumes,
    track_questions,
)
from haiku_cli.capabilities.quotes import QuoteCheck, check_answer
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps, Question, state_of

# A machine tag, so recognising our own redirect never depends on its (editable) prose.
REDIRECT_TAG = "<haiku:cite-or-declare/>"
REDIRECT_MESSAGE = (
    f"{REDIRECT_TAG} You gathered evidence but neither cited it nor declared the answer ungrounded. "
    "Call `cite` with the ids of the chunks your answer relies on, or `cite` with an empty list if the "
    "documents do not support an answer; then give your answer again."
)

# The grounding rule while the model cannot call `cite`: it names no tool.
WITHOUT_CITE = (
    "Ground every answer in the documents. If the documents do not answer the question, say plainly "
    "that the documents do not say."
)

# Told once per question when a quoted passage is not in the chunks the answer cites.
QUOTE_TAG = "<haiku:quote-not-in-evidence/>"


def quote_message(quotes: Sequence[str]) -> str:
    """The redirect for quotes the cited chunks do not hold."""
    listed = "; ".join(f'"{q}"' for q in quotes)
    return (
        f"{QUOTE_TAG} These quoted passages are not in the evidence you cited: {listed}. Quote only words "
        "that stand in the cited chunks (cite the chunk that holds a passage), or paraphrase without "
        "quotation marks; then give your answer again."
    )


Outcome = Literal["grounded", "ungrounded", "no_evidence", "violation"]
StreamedRedirect = Literal["before", "after"]
QuoteHandling = Literal["redirect", "flag"]
Decision = Outcome | Literal["redirect"]


class PolicyState(BaseModel):
    """The policy's record: the question in progress, whether it was sent back, and outcomes so far."""

    in_progress: Question | None = None
    redirected: bool = False  # this question was sent back
    held_back: bool = False  # ... by holding a streamed draft back (that redirect is not in the history)
    quote_held_back: bool = False  # a held streamed draft's quotes were sent back (not in the history)
    outcome: Outcome | None = None
    # The answer's quoted passages, checked once it stands; an unverified one is flagged, not hidden.
    quotes: list[QuoteCheck] = Field(default_factory=list)
    history: list[Outcome] = Field(default_factory=list)  # outcomes of earlier answers, oldest first

    def begin_question(self, run_id: str | None) -> None:
        """File the previous answer's outcome and start a new question."""
        if self.outcome is not None:
            self.history.append(self.outcome)
        self.outcome = None
        self.redirected = False
        self.held_back = False
        self.quote_held_back = False
        self.quotes = []
        self.in_progress = Question(number=len(self.history) + 1, runs=[run_id] if run_id else [])

    def runs(self) -> set[str]:
        """The runs that worked on the question in progress."""
        return set(self.in_progress.runs) if self.in_progress is not None else set()


def decide(states: Sequence[EvidenceState], *, redirected: bool) -> Decision:
    """The one decision on a final response, given every evidence state and whether we already redirected.

    Evidence shown after the model last cited or declared needs a fresh citation or declaration: such an
    answer is sent back once. A citation is never withdrawn, so after that one redirect an answer that
    cites anything is grounded.
    """
    owing = any(s.has_evidence and not s.settled for s in states)
    if any(s.grounded for s in states) and (redirected or not owing):
        return "grounded"
    if owing:
        return "violation" if redirected else "redirect"
    if any(s.has_evidence for s in states):
        return "ungrounded"
    return "no_evidence"


def redirect_sent(messages: Sequence[ModelMessage], runs: set[str], tag: str = REDIRECT_TAG) -> bool:
    """Whether the question's runs hold our redirect, by its tag, and the model has answered it since.

    The tag is found in any part pydantic-ai may carry it in: retry feedback (text output) or a retried
    output-tool return (structured output). A user's own prompt never counts, whatever it says; nor does a
    redirect no response follows (a run stopped at a limit after queueing it): that one is asked again.
    """
    for i, message in enumerate(messages):
        if not isinstance(message, ModelRequest) or message.run_id not in runs:
            continue
        for part in message.parts:
            if isinstance(part, RetryFeedbackPart | SystemPromptPart) or (
                isinstance(part, ToolReturnPart) and part.outcome == "retried"
            ):
                content = part.content
            else:
                continue
            answered = any(isinstance(m, ModelResponse) for m in messages[i + 1 :])
            if isinstance(content, str) and tag in content and answered:
                return True
    return False


def cite_available(ctx: RunContext[Any]) -> bool:
    """Whether the model can call `cite` now; a host may withdraw or hide it (e.g. with `PrepareTools`).

    Without it the policy never redirects (it would point at a tool that is gone): an answer that owes a
    citation is recorded as a violation instead.
    """
    return ctx.is_tool_available("cite")


def ends_question(response: ModelResponse, parameters: ModelRequestParameters) -> bool:
    """Whether a response would end the run: it calls no function tool (text, or an output tool only)."""
    tools = {t.name for t in parameters.function_tools}
    return not any(isinstance(p, ToolCallPart) and p.tool_name in tools for p in response.parts)


@dataclass(eq=False)
class CitationPolicy(AbstractCapability[HaikuDeps]):
    """Hold every answer built on evidence to citing it or declaring it ungrounded (one per agent)."""

    _: KW_ONLY
    # A default id makes a second instance merge into the first: an agent has one policy.
    id: str | None = "citation_policy"
    state_key: str = "citation_policy"
    # "before": a streamed response that may be sent back is held until complete and, if it would end the
    # question uncited, redirected before the host sees it (works under `run_stream`, which cannot retry).
    # "after": a host driving streamed runs with `run()`/`run_stream_events()`/`iter()`, where output
    # retries work, sees the draft stream, gets the usual redirect and replaces the draft itself.
    streamed_redirect: StreamedRedirect = "before"
    # "redirect": an answer quoting what its cited chunks do not hold is sent back once per question, so
    # in "before" mode every text answer is held until complete while that redirect is unspent.
    # "flag": never sent back for its quotes, so answers stream live (only a draft owing a citation is
    # held); an unverified quote is flagged in `PolicyState.quotes` for the host to show.
    quotes: QuoteHandling = "redirect"

    def state(self, deps: HaikuDeps) -> PolicyState:
        """The live policy state in `deps.state`."""
        return state_of(deps, self.state_key, PolicyState)

    def get_instructions(self) -> Callable[[RunContext[HaikuDeps]], str]:
        """The grounding rule, as the model should hear it: naming `cite` only while it can call it (a
        host may withhold it; a deferred capability offers it only once loaded)."""

        def instructions(ctx: RunContext[HaikuDeps]) -> str:
            if not cite_available(ctx):
                return WITHOUT_CITE
            return (
                "Ground every answer in the documents. Before answering, call `cite` with the ids of the "
                "chunks that support it, and mark each supported statement with the number `cite` "
                "returns, like [1]. If the documents do not answer the question, say plainly that the "
                "documents do not say, and call `cite` with an empty list to declare the answer "
                "ungrounded."
            )

        return instructions

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        """Begin a question, or resume the one in progress (its redirect stays sent).

        The policy is always on, so it also begins the question in every evidence capability's state:
        one deferred until the model loads it runs no hook of its own at run start.
        """
        self._check_carried(ctx)
        track_questions(ctx)
        policy = self.state(ctx.deps)
        if not resumes(ctx, policy.in_progress):
            policy.begin_question(ctx.run_id)
        elif ctx.run_id and policy.in_progress is not None and ctx.run_id not in policy.in_progress.runs:
            policy.in_progress.runs.append(ctx.run_id)

    def _check_carried(self, ctx: RunContext[HaikuDeps]) -> None:
        """Refuse a history carried without the policy's record, as evidence states refuse theirs.

        Earlier questions in the evidence states' records (not one this run began) with no policy record
        beside them mean the host dropped this key: its outcomes and redirects would be lost silently.
        """
        if self.state_key in ctx.deps.state or not ctx.messages:
            return
        for state in evidence_states(ctx):
            current = state.in_progress
            begun_here = current is not None and bool(ctx.run_id) and ctx.run_id in current.runs
            earlier = [n for n in state.asked if not (begun_here and current and n == current.number)]
            if earlier:
                raise CarriedStateError(
                    f"the message history holds earlier questions, but deps.state['{self.state_key}'] "
                    "has no record of them: carry deps.state (HaikuDeps.dump() and HaikuDeps.restore()) "
                    "together with the messages"
                )

    def _decide(self, ctx: RunContext[HaikuDeps]) -> Decision:
        policy = self.state(ctx.deps)
        redirected = policy.held_back or redirect_sent(ctx.messages, policy.runs())
        return decide(evidence_states(ctx), redirected=redirected)

    def may_redirect(self, ctx: RunContext[HaikuDeps]) -> bool:
        """Whether a response that ends the question now would be sent back."""
        return self._decide(ctx) == "redirect" and cite_available(ctx)

    def get_wrapper_model(self, model: Model) -> Model | None:
        """Streamed requests go through `HoldBack`, which redirects a draft before the host sees it."""
        return HoldBack(model, self) if self.streamed_redirect == "before" else None

    async def after_output_process(
        self, ctx: RunContext[HaikuDeps], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Send a final response back once if it would end the question with evidence left uncited."""
        if ctx.partial_output or isinstance(output, DeferredToolRequests):
            return output
        if self.may_redirect(ctx) and ctx.retry < ctx.max_retries:
            self.state(ctx.deps).redirected = True
            raise ModelRetry(REDIRECT_MESSAGE)
        if isinstance(output, str) and ctx.retry < ctx.max_retries and self.quotes_due(ctx):
            unverified = self.unverified_quotes(ctx, output)
            if unverified:
                raise ModelRetry(quote_message(unverified))
        return output

    def quotes_due(self, ctx: RunContext[HaikuDeps]) -> bool:
        """Whether an answer's quotes would still be sent back: evidence is in play and the question's one
        quote redirect is unspent (sent in the history and answered, or held back from a stream); never
        when quotes are only flagged."""
        policy = self.state(ctx.deps)
        if (
            self.quotes == "flag"
            or policy.quote_held_back
            or not any(s.has_evidence for s in evidence_states(ctx))
        ):
            return False
        return not redirect_sent(ctx.messages, policy.runs(), QUOTE_TAG)

    def unverified_quotes(self, ctx: RunContext[HaikuDeps], answer: str) -> list[str]:
        """The passages the answer (or `cite`) quotes that no chunk cited for this answer holds."""
        return [q.text for q in check_answer(answer, evidence_states(ctx)) if not q.verified]

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
        if isinstance(result.output, str):
            policy.quotes = check_answer(result.output, states)
        policy.in_progress = None
        finish_questions(ctx, result)
        return result


class HoldBack(WrapperModel):
    """A model whose streamed responses the policy may send back before the host sees them.

    Only while a response ending the question would be redirected (evidence shown, nothing cited or
    declared since, `cite` available; or quotes not yet checked) is a streamed response held until
    complete. If it calls a tool, or needs no redirect, it is replayed whole; otherwise it is dropped and
    the model is asked again, with the draft and the redirect `run()` would send, within the same model
    request (each redirect once per question, as in `run()`).
    """

    def __init__(self, wrapped: Model, policy: CitationPolicy) -> None:
        super().__init__(wrapped)
        self.policy = policy

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Stream the response, holding back (and redirecting) a draft that `run()` would send back."""
        args = (model_settings, model_request_parameters, run_context)
        asked = messages
        while run_context is not None and self._may_hold(run_context):
            async with self.wrapped.request_stream(asked, *args) as stream:
                events = [event async for event in stream]
                draft = stream.get()
            redirect = self._redirect(run_context, draft, model_request_parameters)
            if redirect is None:
                yield CompletedStreamedResponse(
                    draft, model_request_parameters=model_request_parameters, replay_events=events
                )
                return
            asked = [*asked, draft, ModelRequest(parts=[UserPromptPart(redirect)])]
        async with self.wrapped.request_stream(asked, *args) as stream:
            yield stream

    def _may_hold(self, ctx: RunContext[HaikuDeps]) -> bool:
        return self.policy.may_redirect(ctx) or self.policy.quotes_due(ctx)

    def _redirect(
        self, ctx: RunContext[HaikuDeps], draft: ModelResponse, parameters: ModelRequestParameters
    ) -> str | None:
        """The redirect a complete draft gets (recorded as sent), or None to pass it on."""
        if not ends_question(draft, parameters):
            return None
        policy = self.policy.state(ctx.deps)
        if self.policy.may_redirect(ctx):
            policy.redirected = policy.held_back = True
            return REDIRECT_MESSAGE
        # Text output only, as `run()` checks quotes of a `str` output (an output tool is structured).
        if any(isinstance(p, ToolCallPart) for p in draft.parts) or not self.policy.quotes_due(ctx):
            return None
        unverified = self.policy.unverified_quotes(ctx, draft.text or "")
        if not unverified:
            return None
        policy.quote_held_back = True
        return quote_message(unverified)

"""The base of evidence-gathering capabilities: question identity, carried state, and what `cite` reads.

A question begins in the first run that has no question in progress (`EvidenceState.in_progress`) and
ends after the run that answers it. A run that pauses for deferred tools, or raises, leaves it in
progress, so the next run resumes it with its budget, evidence and citations.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.picture_parts import reads_images
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps, Question, Source
from haiku_cli.databases.pictures import PictureKey
from haiku_cli.databases.resolve import ResolvedChunk
from haiku_cli.errors import InputError
from haiku_cli.store.records import PictureRecord

QUESTION_CHARS = 300  # enough of a question to recognise it in a capsule heading


class CarriedStateError(InputError):
    """A host carried the message history of a conversation without the capability state that goes with it."""


class EvidenceCapability(AbstractCapability[HaikuDeps]):
    """A capability that gathers evidence for answers; `CitationPolicy` judges all of them together."""

    @abstractmethod
    def evidence(self, deps: HaikuDeps) -> EvidenceState:
        """This capability's live evidence state in `deps.state` (usable outside a run, e.g. by the host)."""

    @abstractmethod
    def evidence_tools(self) -> frozenset[str]:
        """The tools whose returns, when this capability makes them, show the model evidence."""

    def check_scope(self, deps: HaikuDeps) -> None:
        """Refuse (`ScopeError`) carried state asking for more than the host allows; by default no scope."""

    def covers(self, deps: HaikuDeps) -> list[str] | None:
        """The databases the question in `deps` covers, by name; None: not limited to any."""
        return None

    def sends_images(self, ctx: RunContext[HaikuDeps]) -> bool:
        """Whether pictures go to this run's model as images (else as labels alone): its profile says so."""
        return reads_images(ctx)

    async def pictures(self, deps: HaikuDeps, keys: Sequence[PictureKey]) -> dict[PictureKey, PictureRecord]:
        """The pictures named by `keys` this capability can still fetch (missing ones left out); none here."""
        return {}

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        """Begin or resume the question (see `track_questions`; `CitationPolicy` does it too)."""
        track_questions(ctx)

    async def after_run(
        self, ctx: RunContext[HaikuDeps], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """The question is answered unless the run only paused for deferred tool work."""
        finish_questions(ctx, result)
        return result


def track_questions(ctx: RunContext[HaikuDeps]) -> None:
    """Begin a new question in every evidence state of the run, or resume the one in progress.

    Refused before the model is asked: carried state asking for databases outside a capability's host
    scope (`ScopeError`), and a history whose evidence the carried state has no record of
    (`CarriedStateError`). Called from an always-on hook (the policy's) as well as each evidence
    capability's own, since a capability deferred until the model loads it runs no hook at run start;
    calling it again within a run changes nothing.
    """
    caps = evidence_capabilities(ctx)
    if not caps:
        return
    for cap in caps:
        cap.check_scope(ctx.deps)
    states = evidence_states(ctx)
    tools = frozenset[str]().union(*(cap.evidence_tools() for cap in caps))
    unknown = _unknown_returns(ctx.messages, tools, {i for s in states for i in s.tool_calls})
    if unknown:
        raise _dropped(caps, unknown, f"`{unknown}` results from earlier questions")
    owed = _owed(ctx.messages, tools)
    if ctx.prompt is None and owed is not None and all(s.in_progress is None for s in states):
        raise _dropped(caps, owed, "a question still in progress")
    for state in states:
        if resumes(ctx, state.in_progress):
            state.resume_question(ctx.run_id)
        else:
            state.begin_question(ctx.run_id, question_text(ctx), abandon=state.in_progress is not None)


def resumes(ctx: RunContext[Any], in_progress: Question | None) -> bool:
    """Whether this run continues the question in progress rather than beginning a new one.

    A host resumes an interrupted question explicitly, by running again with no new prompt and the
    history it captured (ending in the question's own requests). A new prompt, given to the run or
    appended to the history by a UI adapter, begins a new question, even after an interrupted run.
    """
    if in_progress is None:
        return False
    if ctx.run_id and ctx.run_id in in_progress.runs:
        return True  # this run already began or resumed it (the hook is called more than once)
    return ctx.prompt is None and not _asks_anew(ctx.messages, set(in_progress.runs))


def _asks_anew(messages: Sequence[ModelMessage], runs: set[str]) -> bool:
    """Whether the history ends in a user's prompt that no run of the question in progress sent."""
    last = messages[-1] if messages else None
    return (
        isinstance(last, ModelRequest)
        and last.run_id not in runs
        and any(isinstance(p, UserPromptPart) for p in last.parts)
    )


def finish_questions(ctx: RunContext[HaikuDeps], result: AgentRunResult[Any]) -> None:
    """The run answered its question, in every evidence state, unless it only paused for deferred tools."""
    if not isinstance(result.output, DeferredToolRequests):
        for state in evidence_states(ctx):
            state.finish_question()


def _dropped(caps: Sequence[EvidenceCapability], tool: str, what: str) -> CarriedStateError:
    owner = next((c for c in caps if tool in c.evidence_tools()), caps[0])
    key = getattr(owner, "state_key", type(owner).__name__)
    return CarriedStateError(
        f"the message history holds {what}, but deps.state['{key}'] has no record of it: "
        "carry deps.state (HaikuDeps.dump() and HaikuDeps.restore()) together with the messages"
    )


def record_return(ctx: RunContext[HaikuDeps], state: EvidenceState) -> dict[str, Any]:
    """Note the evidence return the running tool makes; returns the fields identifying it (`EvidenceReturn`).

    The call id is kept so that a later run can tell whether the state was carried with the history.
    """
    if ctx.tool_call_id is not None:
        state.tool_calls.append(ctx.tool_call_id)
    return {
        "answer": state.answer,
        "step": ctx.run_step,
        "run_id": ctx.run_id,
        "tool_call_id": ctx.tool_call_id,
    }


def question_text(ctx: RunContext[HaikuDeps]) -> str:
    """The words of the question a run begins: its prompt, else the latest user prompt in the history."""
    prompt: Any = ctx.prompt
    if prompt is None:
        prompt = next(
            (
                p.content
                for m in reversed(ctx.messages)
                if isinstance(m, ModelRequest)
                for p in reversed(m.parts)
                if isinstance(p, UserPromptPart)
            ),
            "",
        )
    if not isinstance(prompt, str):
        prompt = " ".join(p for p in prompt if isinstance(p, str))
    text = " ".join(prompt.split())
    return text if len(text) <= QUESTION_CHARS else text[:QUESTION_CHARS] + "…"


def _owed(messages: Sequence[ModelMessage], tools: frozenset[str]) -> str | None:
    """The evidence tool the history ends mid-question in (calls awaiting or just answered), if any."""
    if not messages:
        return None
    last = messages[-1]
    kind = ToolCallPart if isinstance(last, ModelResponse) else ToolReturnPart
    return next((p.tool_name for p in last.parts if isinstance(p, kind) and p.tool_name in tools), None)


def _unknown_returns(messages: Sequence[ModelMessage], tools: frozenset[str], known: set[str]) -> str | None:
    """The name of a tool whose evidence return in the history this state never made, if any."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if (
                    isinstance(part, ToolReturnPart)
                    and part.tool_name in tools
                    and part.outcome == "success"
                    and part.tool_call_id not in known
                ):
                    return part.tool_name
    return None


def evidence_capabilities(ctx: RunContext[HaikuDeps]) -> list[EvidenceCapability]:
    """The evidence capabilities registered for this run, in registration order."""
    return [cap for cap in ctx.capabilities.values() if isinstance(cap, EvidenceCapability)]


def question_databases(ctx: RunContext[HaikuDeps]) -> set[str] | None:
    """The databases the run's question covers, by name (None: no capability limits them)."""
    covered = [c for c in (cap.covers(ctx.deps) for cap in evidence_capabilities(ctx)) if c is not None]
    return set().union(*covered) if covered else None


def evidence_states(ctx: RunContext[HaikuDeps]) -> list[EvidenceState]:
    """The evidence states of every evidence capability registered for this run (each state once)."""
    states: list[EvidenceState] = []
    for cap in evidence_capabilities(ctx):
        state = cap.evidence(ctx.deps)
        if all(state is not s for s in states):
            states.append(state)
    return states


def set_scope(
    deps: HaikuDeps,
    capabilities: Iterable[EvidenceCapability],
    sources: Sequence[Source],
    document_filter: str | None = None,
) -> None:
    """Narrow the question to `sources` (and a filter) in every given capability's state alike.

    This is carried state: it may only narrow each capability's host `scope` (checked when a run begins).
    """
    for cap in capabilities:
        state = cap.evidence(deps)
        state.sources = list(sources)
        state.document_filter = document_filter


def declare_ungrounded(ctx: RunContext[HaikuDeps], state: EvidenceState) -> None:
    """Record `cite([])` in `state`; it speaks for the evidence shown so far in every evidence state."""
    state.declare_ungrounded()
    for s in evidence_states(ctx):
        s.spoke()


def record_citations(
    ctx: RunContext[HaikuDeps], state: EvidenceState, found: Sequence[ResolvedChunk]
) -> list[Citation]:
    """Add resolved chunks to `state` as citations and return them, numbered across all evidence states.

    A chunk already cited in this answer (by any evidence capability) keeps its number. Citing only ever
    adds: it never narrows what the answer cites. A citation speaks for all the evidence shown so far, in
    every evidence state. Call this without awaiting in between reading and writing: tools of one
    response run concurrently.
    """
    states = evidence_states(ctx)
    if all(state is not s for s in states):
        states.append(state)
    if found:
        for s in states:
            s.spoke()
    cited = {(c.database, c.chunk_id): c for s in states for c in s.citations}
    next_index = 1 + max((c.index for c in cited.values()), default=0)
    result: list[Citation] = []
    for chunk in found:
        citation = cited.get((chunk.database, chunk.chunk.id))
        if citation is None:
            citation = Citation.from_resolved(next_index, chunk)
            next_index += 1
            state.citations.append(citation)
            cited[(citation.database, citation.chunk_id)] = citation
        result.append(citation)
    return result

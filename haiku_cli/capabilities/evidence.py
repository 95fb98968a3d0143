"""The base of evidence-gathering capabilities, and what the citation policy and `cite` read across them."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps
from haiku_cli.databases.resolve import ResolvedChunk


class EvidenceCapability(AbstractCapability[HaikuDeps]):
    """A capability that gathers evidence for answers; `CitationPolicy` judges all of them together."""

    @abstractmethod
    def evidence(self, deps: HaikuDeps) -> EvidenceState:
        """This capability's live evidence state in `deps.state` (usable outside a run, e.g. by the host)."""

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        """Each run answers one question: start its budget, evidence and citations afresh."""
        self.evidence(ctx.deps).begin_answer()


def evidence_states(ctx: RunContext[HaikuDeps]) -> list[EvidenceState]:
    """The evidence states of every evidence capability registered for this run (each state once)."""
    states: list[EvidenceState] = []
    for cap in ctx.capabilities.values():
        if isinstance(cap, EvidenceCapability):
            state = cap.evidence(ctx.deps)
            if all(state is not s for s in states):
                states.append(state)
    return states


def record_citations(
    ctx: RunContext[HaikuDeps], state: EvidenceState, found: Sequence[ResolvedChunk]
) -> list[Citation]:
    """Add resolved chunks to `state` as citations and return them, numbered across all evidence states.

    A chunk already cited in this answer (by any evidence capability) keeps its number. Call this
    without awaiting in between reading and writing: tools of one response run concurrently.
    """
    states = evidence_states(ctx)
    if all(state is not s for s in states):
        states.append(state)
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
    if result:
        # The latest word wins: citing after `cite([])` means the model found support after all.
        state.declared_ungrounded = False
    return result

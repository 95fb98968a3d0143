"""Capability state: a plain dict on the agent's deps, one JSON-compatible model per capability key.

A host carries `deps.state` (or its `dump()`) between runs; each capability re-hydrates its own key lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from haiku_cli.capabilities.citations import Citation

StateT = TypeVar("StateT", bound=BaseModel)


@dataclass
class HaikuDeps:
    """The agent's deps: capability state under one key per capability (hosts may subclass to add fields)."""

    state: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, model: type[StateT]) -> StateT:
        """The live state model under `key`, validated from its JSON form (or created) on first access."""
        raw = self.state.get(key)
        if isinstance(raw, model):
            return raw
        if isinstance(raw, BaseModel):
            # Stored as another class (a base or sibling model): go through JSON so the type is exact.
            raw = raw.model_dump(mode="json")
        live = model.model_validate(raw or {})
        # Keep the live model under its key so tools, hooks and instructions share one object.
        self.state[key] = live
        return live

    def dump(self) -> dict[str, Any]:
        """A JSON-compatible copy of the whole state dict, to store and later pass to `restore`."""
        return {
            k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in self.state.items()
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> HaikuDeps:
        """Deps over a state dict read back from JSON; each key is validated when its capability reads it."""
        return cls(state=dict(data))


class Source(BaseModel):
    """A database a question is scoped to: a configured name, or a database given by path."""

    name: str
    path: str | None = None  # set only for databases named by path (`--db`), never for configured ones


class EvidenceRef(BaseModel):
    """A chunk shown to the model, and the database it came from."""

    database: str
    chunk_id: str


class SearchRecord(BaseModel):
    """One search a model made: which answer and run step it belonged to, and what it returned."""

    answer: int
    step: int
    query: str
    results: list[EvidenceRef] = Field(default_factory=list)


SpendOutcome = Literal["ok", "response_full", "exhausted"]


class EvidenceState(BaseModel):
    """What an evidence-gathering capability knows about the current answer and the conversation.

    `sources`, `document_filter`, `searches` and `prior_citations` span the conversation; the remaining
    fields describe the current answer and are reset by `begin_answer` at the start of every run.
    Capabilities that gather evidence another way (e.g. code execution) subclass this to add their own.
    """

    sources: list[Source] = Field(default_factory=list)  # empty: every configured database
    document_filter: str | None = None
    answer: int = 0  # answers begun under this state (one per agent run)
    searches: list[SearchRecord] = Field(default_factory=list)
    prior_citations: int = 0  # citations made by earlier answers
    units: dict[int, int] = Field(default_factory=dict)  # run step -> searches emitted in that response
    evidence: list[EvidenceRef] = Field(default_factory=list)  # chunks shown to the model this answer
    citations: list[Citation] = Field(default_factory=list)
    declared_ungrounded: bool = False  # the model called cite([]) (and cited nothing after)
    violation: bool = False  # the answer ended with evidence but neither cited nor declared

    def begin_answer(self) -> None:
        """Start a new answer: its budget, evidence, citations and flags start empty."""
        self.prior_citations += len(self.citations)
        self.answer += 1
        self.units = {}
        self.evidence = []
        self.citations = []
        self.declared_ungrounded = False
        self.violation = False

    def spend_search(self, step: int, *, budget: int, per_response: int) -> SpendOutcome:
        """Charge one search made in run step `step`: a response's searches share one unit of the budget."""
        used = self.units.get(step)
        if used is None:
            if len(self.units) >= budget:
                return "exhausted"
            self.units[step] = 1
            return "ok"
        if used >= per_response:
            return "response_full"
        self.units[step] = used + 1
        return "ok"

    def units_left(self, budget: int) -> int:
        """Search units this answer may still spend."""
        return max(0, budget - len(self.units))

    def saw(self, refs: list[EvidenceRef]) -> None:
        """Record chunks shown to the model (once each)."""
        known = {(r.database, r.chunk_id) for r in self.evidence}
        for ref in refs:
            if (ref.database, ref.chunk_id) not in known:
                known.add((ref.database, ref.chunk_id))
                self.evidence.append(ref)

    @property
    def has_evidence(self) -> bool:
        """Evidence is in play: this answer was shown chunks, or earlier answers cited some."""
        return bool(self.evidence) or self.prior_citations > 0

    @property
    def grounded(self) -> bool:
        """This answer cited at least one chunk and was not declared ungrounded afterwards."""
        return bool(self.citations) and not self.declared_ungrounded

    @property
    def settled(self) -> bool:
        """The model cited something or explicitly declared the answer ungrounded."""
        return bool(self.citations) or self.declared_ungrounded

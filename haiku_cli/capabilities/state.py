"""Capability state: a plain dict on the agent's deps, one JSON-compatible model per capability key.

A host carries `deps.state` (or its `dump()`) between runs; each capability re-hydrates its own key lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field

from haiku_cli.capabilities.citations import Citation
from haiku_cli.errors import InputError

StateT = TypeVar("StateT", bound=BaseModel)


@dataclass
class HaikuDeps:
    """The agent's deps: capability state under one key per capability (hosts may subclass to add fields)."""

    state: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, model: type[StateT]) -> StateT:
        """The live state model under `key`, validated from its JSON form (or created) on first access."""
        return state_of(self, key, model)

    def dump(self) -> dict[str, Any]:
        """A JSON-compatible copy of the whole state dict, to store and later pass to `restore`."""
        return {
            k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in self.state.items()
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> HaikuDeps:
        """Deps over a state dict read back from JSON; each key is validated when its capability reads it."""
        return cls(state=dict(data))


def state_of(deps: object, key: str, model: type[StateT]) -> StateT:
    """The live state model under `key` of any deps with a plain `state` dict (`HaikuDeps`, or a host's own).

    Validated from its JSON form (or created) on first access, then kept under its key so tools, hooks
    and instructions share one object. Deps without a `state` dict are refused in one line.
    """
    states = getattr(deps, "state", None)
    if not isinstance(states, dict):
        has = "no `state` attribute" if states is None else f"a `state` of type {type(states).__name__}"
        raise InputError(
            f"haiku's capabilities keep their state in `deps.state`, a dict, but the run's deps "
            f"({type(deps).__name__}) have {has}: use HaikuDeps, or give the deps a `state: dict[str, Any]`"
        )
    raw = states.get(key)
    if isinstance(raw, model):
        return raw
    if isinstance(raw, BaseModel):
        # Stored as another class (a base or sibling model): go through JSON so the type is exact.
        raw = raw.model_dump(mode="json")
    live = model.model_validate(raw or {})
    states[key] = live
    return live


class Source(BaseModel):
    """A database a question is scoped to: a configured name, or a database given by path."""

    name: str
    path: str | None = None  # set only for databases named by path (`--db`), never for configured ones


class EvidenceRef(BaseModel):
    """A chunk shown to the model, and the database it came from."""

    database: str
    chunk_id: str


class SentText(BaseModel):
    """Character ranges of one document's text already sent to the model in this answer's search results."""

    database: str
    document_id: str
    ranges: list[tuple[int, int]] = Field(default_factory=list)  # sorted, disjoint


class Question(BaseModel):
    """A question being answered: its number under this state, its words, and the runs that worked on it."""

    number: int
    text: str = ""
    runs: list[str] = Field(default_factory=list)  # run ids, the one that began it first


class EvidenceReturn(BaseModel):
    """One tool return that showed the model evidence, identified so it can be found in the transcript."""

    TOOL: ClassVar[str] = ""  # the tool whose return this records

    answer: int
    step: int
    run_id: str | None = None
    tool_call_id: str | None = None

    def receipt(self, question: str) -> str:
        """What stands in for this return once its question is answered (see the compaction capability)."""
        return f"[Evidence shown for the earlier question {question!r}; compacted.]"


class SearchRecord(EvidenceReturn):
    """One search a model made: which answer and run step it belonged to, and what it returned."""

    TOOL: ClassVar[str] = "search"

    query: str
    results: list[EvidenceRef] = Field(default_factory=list)

    def receipt(self, question: str) -> str:
        """A one-line stand-in for the results of a search made for an earlier question."""
        return (
            f"[Search {self.query!r} for the earlier question {question!r} showed {len(self.results)} "
            "results, since compacted; the chunks cited then are listed with the latest earlier results.]"
        )


class EarlierCitation(BaseModel):
    """A citation an earlier answer made, kept so later questions can be held to it and shown it."""

    answer: int
    citation: Citation


SpendOutcome = Literal["ok", "response_full", "exhausted"]


class EvidenceState(BaseModel):
    """What an evidence-gathering capability knows about the current answer and the conversation.

    `sources`, `document_filter`, `searches`, `asked` and `earlier` span the conversation; the remaining
    fields describe the current answer and start afresh when a new question begins. `in_progress` is the
    authority on whether a run continues a question or begins one. Capabilities that gather evidence another
    way (e.g. code execution) subclass this to add their own records.
    """

    sources: list[Source] = Field(default_factory=list)  # empty: every configured database
    document_filter: str | None = None
    answer: int = 0  # questions begun under this state
    in_progress: Question | None = None  # set while a question is being answered (or was interrupted)
    asked: dict[int, str] = Field(default_factory=dict)  # question number -> its words
    searches: list[SearchRecord] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)  # ids of every evidence return this state made
    earlier: list[EarlierCitation] = Field(default_factory=list)  # citations of finished answers
    units: dict[int, int] = Field(default_factory=dict)  # response -> searches emitted in it
    step_offset: int = 0  # responses of earlier runs of this question, so a resumed run's steps are new
    evidence: list[EvidenceRef] = Field(default_factory=list)  # chunks shown to the model this answer
    citations: list[Citation] = Field(default_factory=list)
    quotes: list[str] = Field(default_factory=list)  # passages passed to `cite` as `quote`, this answer
    # What this answer's search results sent: document text by range, and chunks shown as hits (by id), so
    # a later search of the same answer refers to them instead of sending them again.
    sent_text: list[SentText] = Field(default_factory=list)
    sent_chunks: list[EvidenceRef] = Field(default_factory=list)
    declared_ungrounded: bool = False  # the model called cite([]) for this answer
    declared_at: int = 0  # `evidence_mark` when it did
    # `evidence_mark` when the model last cited or declared (in any evidence capability): the evidence it
    # has spoken for. Newer evidence needs a fresh citation or declaration.
    spoken_at: int | None = None
    violation: bool = False  # the answer ended with evidence but neither cited nor declared

    def begin_question(self, run_id: str | None, text: str = "", *, abandon: bool = False) -> None:
        """Start a new question: file the last answer's citations, then start budget and evidence afresh.

        With `abandon`, the question in progress was interrupted and never answered: its citations are
        not filed as an earlier answer's.
        """
        if not abandon:
            self.earlier += [EarlierCitation(answer=self.answer, citation=c) for c in self.citations]
        self.answer += 1
        self.asked[self.answer] = text
        self.in_progress = Question(number=self.answer, text=text, runs=[run_id] if run_id else [])
        self.units = {}
        self.step_offset = 0
        self.evidence = []
        self.citations = []
        self.quotes = []
        self.sent_text = []
        self.sent_chunks = []
        self.declared_ungrounded = False
        self.declared_at = 0
        self.spoken_at = None
        self.violation = False

    def resume_question(self, run_id: str | None) -> None:
        """Continue the question in progress in another run (after a deferred-tool pause or an error)."""
        if self.in_progress is not None and run_id and run_id not in self.in_progress.runs:
            self.in_progress.runs.append(run_id)
            # A new run counts its steps from 1 again; its responses must not share a unit with earlier ones.
            self.step_offset = max(self.units, default=0)

    def finish_question(self) -> None:
        """The question is answered: the next run begins a new one."""
        self.in_progress = None

    def spend_search(self, step: int, *, budget: int, per_response: int) -> SpendOutcome:
        """Charge one search made in run step `step`: a response's searches share one unit of the budget."""
        response = self.step_offset + step
        used = self.units.get(response)
        if used is None:
            if len(self.units) >= budget:
                return "exhausted"
            self.units[response] = 1
            return "ok"
        if used >= per_response:
            return "response_full"
        self.units[response] = used + 1
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

    def evidence_returns(self) -> list[EvidenceReturn]:
        """Every tool return that showed the model evidence, across the conversation."""
        return list(self.searches)

    @property
    def evidence_mark(self) -> int:
        """How much evidence this answer has been shown; grows only with genuinely new evidence."""
        return len(self.evidence)

    def declare_ungrounded(self) -> None:
        """The model said the documents do not support the answer (`cite([])`), as of the evidence so far."""
        self.declared_ungrounded = True
        self.declared_at = self.evidence_mark
        self.spoke()

    def spoke(self) -> None:
        """The model cited or declared: it has spoken for the evidence shown so far."""
        self.spoken_at = self.evidence_mark

    @property
    def prior_citations(self) -> int:
        """Citations made by earlier answers."""
        return len(self.earlier)

    @property
    def has_evidence(self) -> bool:
        """Evidence is in play: this answer was shown chunks, or earlier answers cited some."""
        return self.evidence_mark > 0 or bool(self.earlier)

    @property
    def grounded(self) -> bool:
        """This answer cited at least one chunk; a citation is never withdrawn by a later `cite([])`."""
        return bool(self.citations)

    @property
    def settled(self) -> bool:
        """The model cited or declared since it was last shown new evidence (a citation stays, regardless)."""
        return self.spoken_at is not None and self.evidence_mark <= self.spoken_at

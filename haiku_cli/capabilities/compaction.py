"""Evidence compaction: earlier questions' evidence shrinks to receipts in each request, history untouched.

Registering `EvidenceCompaction` is the only switch. Every outgoing request is rewritten, never the stored
history (`all_messages()` keeps everything): each evidence return (a search's results, a program's output)
made for a question before the one in progress becomes a one-line receipt, and the newest of them also
carries the one capsule: every chunk earlier answers cited, grouped by the question that last cited it,
newest group first, each rendered once with its chunk id and database, so it stays citable. Parts are
rewritten in place, so every tool return stays paired with its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, replace

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models import ModelRequestContext

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.evidence import evidence_states
from haiku_cli.capabilities.state import EvidenceReturn, EvidenceState, HaikuDeps

CAPSULE_HEADING = "Chunks cited by earlier answers (cite them again by the same id if they still apply):"


@dataclass(frozen=True)
class _Earlier:
    """An evidence return of an earlier question, where it sits in the request, and its stand-in."""

    message: int
    part: int
    receipt: str


def compact(
    messages: Sequence[ModelMessage], earlier: Sequence[_Earlier], capsule: str
) -> list[ModelMessage]:
    """The messages with earlier evidence returns as receipts, the newest one also carrying the capsule."""
    if not earlier:
        return list(messages)
    newest = max(earlier, key=lambda e: (e.message, e.part))
    by_message: dict[int, dict[int, str]] = {}
    for e in earlier:
        text = e.receipt + (f"\n\n{capsule}" if e is newest and capsule else "")
        by_message.setdefault(e.message, {})[e.part] = text
    result = list(messages)
    for index, parts in by_message.items():
        message = result[index]
        assert isinstance(message, ModelRequest)
        # New part and message objects: the stored history must not change.
        new_parts = [replace(p, content=parts[i]) if i in parts else p for i, p in enumerate(message.parts)]
        result[index] = replace(message, parts=new_parts)
    return result


def render_capsule(groups: Sequence[tuple[str, Sequence[Citation]]]) -> str:
    """The capsule: each group's question, then its chunks as `[chunk id] database: ...; title` and text."""
    if not groups:
        return ""
    blocks = [CAPSULE_HEADING]
    for question, citations in groups:
        blocks.append(f"For the earlier question {question!r}:")
        for c in citations:
            head = f"[{c.chunk_id}] database: {c.database}; {c.document_title or 'untitled'}"
            if c.document_uri:
                head += f" <{c.document_uri}>"
            if c.pages:
                head += f" p. {', '.join(str(p) for p in c.pages)}"
            blocks.append(f"{head}\n{c.content}")
    return "\n\n".join(blocks)


def capsule_groups(states: Sequence[EvidenceState]) -> list[tuple[str, list[Citation]]]:
    """Every chunk earlier answers cited, under the question that last cited it, newest question first."""
    latest: dict[tuple[str, str], tuple[int, str, Citation]] = {}
    for state in states:
        for earlier in state.earlier:
            key = (earlier.citation.database, earlier.citation.chunk_id)
            if key not in latest or earlier.answer >= latest[key][0]:
                latest[key] = (earlier.answer, state.asked.get(earlier.answer, ""), earlier.citation)
    groups: dict[int, tuple[str, list[Citation]]] = {}
    for answer, question, citation in latest.values():
        groups.setdefault(answer, (question, []))[1].append(citation)
    return [groups[a] for a in sorted(groups, reverse=True)]


def earlier_returns(messages: Sequence[ModelMessage], states: Sequence[EvidenceState]) -> list[_Earlier]:
    """The evidence returns in `messages` made for questions before each state's question in progress.

    A return belongs to the state holding a record of its tool and call id, whichever capability served
    the tool then (with deferred loading, that may change from one question to the next).
    """
    found: list[_Earlier] = []
    for state in states:
        current = state.in_progress.number if state.in_progress is not None else state.answer + 1
        records: dict[tuple[str, str], list[EvidenceReturn]] = {}
        for record in state.evidence_returns():
            if record.tool_call_id is not None:
                records.setdefault((record.TOOL, record.tool_call_id), []).append(record)
        for m, message in enumerate(messages):
            if not isinstance(message, ModelRequest):
                continue
            for p, part in enumerate(message.parts):
                if not isinstance(part, ToolReturnPart):
                    continue
                record = _match(records.get((part.tool_name, part.tool_call_id), []), message.run_id)
                if record is not None and record.answer < current:
                    found.append(_Earlier(m, p, record.receipt(state.asked.get(record.answer, ""))))
    return found


def _match(candidates: list[EvidenceReturn], run_id: str | None) -> EvidenceReturn | None:
    # Some servers reuse tool call ids across turns; the run that made the call tells them apart.
    if len(candidates) > 1 and run_id is not None:
        candidates = [c for c in candidates if c.run_id == run_id] or candidates
    return candidates[-1] if candidates else None


@dataclass(eq=False)
class EvidenceCompaction(AbstractCapability[HaikuDeps]):
    """Send earlier questions' evidence as receipts plus one capsule of what was cited (one per agent)."""

    _: KW_ONLY
    id: str | None = "evidence_compaction"

    async def prepare_model_request(
        self, ctx: RunContext[HaikuDeps], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Rewrite this request's messages; the run's stored history is left as it is."""
        states = evidence_states(ctx)
        earlier = earlier_returns(request_context.messages, states)
        if not earlier:
            return request_context
        capsule = render_capsule(capsule_groups(states))
        return replace(request_context, messages=compact(request_context.messages, earlier, capsule))

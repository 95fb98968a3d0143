"""Evidence compaction: earlier questions' evidence shrinks to receipts in each request, history untouched.

Registering `EvidenceCompaction` is the only switch. Every outgoing request is rewritten, never the stored
history (`all_messages()` keeps everything): each evidence return (a search's results, a program's output)
made for a question before the one in progress becomes a one-line receipt, and the newest of them also
carries the one capsule: every chunk earlier answers cited, grouped by the question that last cited it,
newest group first, each rendered once with its chunk id and database, so it stays citable. Only
chunks of the databases the question in progress covers are offered: one cited from a database a
narrowed follow-up no longer covers is listed as a receipt naming its database, without its id or text.
Parts are rewritten in place, so every tool return stays paired with its call.

The pictures those cited chunks cover follow the capsule, each once (by database, document and
reference) with a fresh label, fetched through the capability whose state cited them; one that cannot be
fetched any more (its document deleted since) is left out, label and all. Our pictures sent earlier in
user messages (a label with our tag and an image right after it) are dropped from the request, since the
cited ones come back beside the capsule; anything else a user sent is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import BinaryContent, ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models import ModelRequestContext

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.evidence import (
    EvidenceCapability,
    evidence_capabilities,
    evidence_states,
    question_databases,
)
from haiku_cli.capabilities.picture_parts import keys_in, picture_items, without_owned
from haiku_cli.capabilities.state import EvidenceReturn, EvidenceState, HaikuDeps, state_of
from haiku_cli.databases.pictures import PictureKey

CAPSULE_HEADING = "Chunks cited by earlier answers (cite them again by the same id if they still apply):"
CAPSULE_PICTURES = 8  # the pictures of cited chunks re-sent beside the capsule, newest answers' first


@dataclass(frozen=True)
class _Earlier:
    """An evidence return of an earlier question, where it sits in the request, and its stand-in."""

    message: int
    part: int
    receipt: str


def compact(
    messages: Sequence[ModelMessage],
    earlier: Sequence[_Earlier],
    capsule: str,
    pictures: Sequence[str | BinaryContent] = (),
) -> list[ModelMessage]:
    """The messages with earlier evidence returns as receipts, the newest one also carrying the capsule
    and, after it, the `pictures` items; our pictures in the user messages of earlier turns are dropped.

    Pure: the pictures were fetched by the caller.
    """
    if not earlier:
        return list(messages)
    newest = max(earlier, key=lambda e: (e.message, e.part))
    by_message: dict[int, dict[int, str | list[str | BinaryContent]]] = {}
    for e in earlier:
        text = e.receipt + (f"\n\n{capsule}" if e is newest and capsule else "")
        by_message.setdefault(e.message, {})[e.part] = [text, *pictures] if e is newest and pictures else text
    result = list(messages)
    # The question in progress begins at the latest user prompt: what came before it is earlier turns.
    asked = [i for i, m in enumerate(messages) if isinstance(m, ModelRequest) and _prompted(m)]
    earlier_turns = asked[-1] if asked else 0
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest) or (index >= earlier_turns and index not in by_message):
            continue
        parts = by_message.get(index, {})
        # New part and message objects: the stored history must not change.
        new_parts = [
            # (`earlier` names tool returns only.)
            _with_content(p, parts[i])
            if i in parts and isinstance(p, ToolReturnPart)
            else _without_our_pictures(p)
            for i, p in enumerate(message.parts)
        ]
        if any(new is not old for new, old in zip(new_parts, message.parts, strict=True)):
            result[index] = replace(message, parts=new_parts)
    return result


def _prompted(message: ModelRequest) -> bool:
    return any(isinstance(p, UserPromptPart) for p in message.parts)


def _without_our_pictures(part: Any) -> Any:
    if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
        return part
    kept = without_owned(list(part.content))
    return part if len(kept) == len(part.content) else replace(part, content=kept)


def capsule_pictures(
    owners: Sequence[tuple[EvidenceCapability, EvidenceState]],
    groups: Sequence[tuple[str, Sequence[Citation]]],
) -> list[tuple[PictureKey, EvidenceCapability, str | None]]:
    """The pictures the capsule's chunks cover, in capsule order, each once, with the capability that
    fetches it (the one whose state cited it) and its document's title."""
    owner_of: dict[tuple[str, str], EvidenceCapability] = {}
    for cap, state in owners:
        for e in state.earlier:
            owner_of.setdefault((e.citation.database, e.citation.chunk_id), cap)
    found: dict[PictureKey, tuple[PictureKey, EvidenceCapability, str | None]] = {}
    for _, citations in groups:
        for c in citations:
            for key in keys_in([(c.database, c.document_id, c.content)]):
                owner = owner_of.get((c.database, c.chunk_id))
                if owner is not None and key not in found:
                    found[key] = (key, owner, c.document_title)
    return list(found.values())[:CAPSULE_PICTURES]


def _with_content(part: ToolReturnPart[Any], content: str | list[str | BinaryContent]) -> ToolReturnPart[Any]:
    return replace(part, content=content)


def render_capsule(groups: Sequence[tuple[str, Sequence[Citation]]], covered: set[str] | None = None) -> str:
    """The capsule: each group's question, then its chunks as `[chunk id] database: ...; title` and text.

    A chunk of a database outside `covered` (the question's databases; None: every one) is a receipt
    naming its database and title, with no id to cite it by.
    """
    if not groups:
        return ""
    blocks = [CAPSULE_HEADING]
    for question, citations in groups:
        blocks.append(f"For the earlier question {question!r}:")
        for c in citations:
            if covered is not None and c.database not in covered:
                blocks.append(
                    f"[Cited from the database {c.database}, which this question does not cover: "
                    f"{c.document_title or 'untitled'}; not citable now.]"
                )
                continue
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
                matched = _match(records.get((part.tool_name, part.tool_call_id), []), message.run_id)
                if matched is not None and matched.answer < current:
                    found.append(_Earlier(m, p, matched.receipt(state.asked.get(matched.answer, ""))))
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
    # Evidence states this agent registers no capability for, by state key, whose earlier returns must
    # still be compacted: a chat resumed without the analysis it used before.
    unregistered: Mapping[str, type[EvidenceState]] = field(default_factory=dict)

    async def prepare_model_request(
        self, ctx: RunContext[HaikuDeps], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Rewrite this request's messages; the run's stored history is left as it is."""
        states = evidence_states(ctx)
        for key, model in self.unregistered.items():
            state = state_of(ctx.deps, key, model) if key in ctx.deps.state else None
            if state is not None and all(state is not s for s in states):
                states.append(state)
        earlier = earlier_returns(request_context.messages, states)
        if not earlier:
            return request_context
        covered = question_databases(ctx)
        groups = capsule_groups(states)
        capsule = render_capsule(groups, covered)
        citable = [(q, [c for c in cs if covered is None or c.database in covered]) for q, cs in groups]
        pictures = await _fetch(ctx, capsule_pictures(_owners(ctx), citable))
        messages = compact(request_context.messages, earlier, capsule, pictures)
        return replace(request_context, messages=messages)


def _owners(ctx: RunContext[HaikuDeps]) -> list[tuple[EvidenceCapability, EvidenceState]]:
    """Each evidence state of the run with the first capability registered for it."""
    owners: list[tuple[EvidenceCapability, EvidenceState]] = []
    for cap in evidence_capabilities(ctx):
        state = cap.evidence(ctx.deps)
        if all(state is not s for _, s in owners):
            owners.append((cap, state))
    return owners


async def _fetch(
    ctx: RunContext[HaikuDeps], wanted: Sequence[tuple[PictureKey, EvidenceCapability, str | None]]
) -> list[str | BinaryContent]:
    """The wanted pictures still there, as labelled items (fetched through their owners)."""
    by_owner: dict[int, tuple[EvidenceCapability, list[PictureKey]]] = {}
    for key, owner, _ in wanted:
        by_owner.setdefault(id(owner), (owner, []))[1].append(key)
    found = {}
    for owner, keys in by_owner.values():
        found.update(await owner.pictures(ctx.deps, keys))
    shown = [(key, found[key], title) for key, _, title in wanted if key in found]
    images = all(owner.sends_images(ctx) for owner, _ in by_owner.values())
    return picture_items(shown, images=images)

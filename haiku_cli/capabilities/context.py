"""Search results as the model reads them: each hit with its section heading path and a bounded amount of
the text around it in its document; hits of one document that meet are merged into one passage, and
nothing is sent twice within an answer: text an earlier search of the same answer sent (a hit's, or
context) is left out, and a hit whose text the model already has is referred to by its id."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.search.hits import SearchHit
from haiku_cli.store import reads

MAX_CHUNK_CHARS = 4000  # a runaway chunk must not crowd the rest of the results out of the context

DocumentKey = tuple[str, str]  # (database, document id)


@dataclass
class _Passage:
    """A run of one document holding one or more hits (in document order), with context either side."""

    start: int
    end: int
    hits: list[SearchHit] = field(default_factory=list)
    rank: int = 0  # the best rank among its hits


async def document_texts(
    pool: DatabasePool, selection: Selection, hits: Sequence[SearchHit]
) -> dict[DocumentKey, str]:
    """The stored text of each document a hit with a known place belongs to (what context is cut from)."""
    wanted: dict[str, set[str]] = {}
    for h in hits:
        if h.char_start is not None and h.char_end is not None:
            wanted.setdefault(h.database, set()).add(h.document_id)
    if not wanted:
        return {}
    dbs = [db for db in await pool.clients_covering(selection) if db.name in wanted]

    found = await asyncio.gather(*(reads.get_documents(db, wanted[db.name], content=True) for db in dbs))
    return {(db.name, i): doc.content for db, docs in zip(dbs, found, strict=True) for i, doc in docs.items()}


def format_results(
    query: str,
    hits: Sequence[SearchHit],
    texts: dict[DocumentKey, str],
    *,
    show_database: bool,
    units_left: int,
    context_chars: int,
    sent: Sent | None = None,
) -> str:
    """The results as the model sees them: per passage `[chunk id]`, database when several, title, uri,
    pages and heading path, then the text, with up to `context_chars` of neighbouring text per hit.

    With `sent` (what earlier searches of this answer sent), text sent before is not sent again: a hit
    whose text the model has is referred to by its id, and `sent` grows by what this result sends.
    """
    if not hits:
        return f"No results for {query!r}. Search units left: {units_left}."
    sent = sent if sent is not None else Sent()
    blocks = [f"Results for {query!r} (search units left: {units_left}):"]
    for passage in _passages(hits, texts, context_chars):
        blocks.append(_render(passage, texts, sent, show_database=show_database))
    return "\n\n".join(blocks)


@dataclass
class Sent:
    """What the model was already sent in this answer's search results: character ranges of each
    document's text (sorted, disjoint), and the chunks it was shown as hits, by (database, chunk id)."""

    ranges: dict[DocumentKey, list[tuple[int, int]]] = field(default_factory=dict)
    chunks: set[tuple[str, str]] = field(default_factory=set)

    def unsent(self, key: DocumentKey, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of `start:end` of a document's text not sent yet, in order."""
        parts, at = [], start
        for a, b in self.ranges.get(key, ()):
            if b <= at or a >= end:
                continue
            if a > at:
                parts.append((at, a))
            at = max(at, b)
        if at < end:
            parts.append((at, end))
        return parts

    def add(self, key: DocumentKey, start: int, end: int) -> None:
        """Note that `start:end` of a document's text was sent."""
        if end <= start:
            return
        merged: list[tuple[int, int]] = []
        for a, b in sorted([*self.ranges.get(key, ()), (start, end)]):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.ranges[key] = merged


def _passages(
    hits: Sequence[SearchHit], texts: dict[DocumentKey, str], context_chars: int
) -> list[_Passage | SearchHit]:
    """Hits with a known place grouped into passages of their documents (merged where their context
    meets), in the order of each passage's best hit; the rest as they are."""
    half = context_chars // 2
    by_document: dict[DocumentKey, list[_Passage]] = {}
    loose: list[tuple[int, _Passage | SearchHit]] = []
    for h in hits:
        text = texts.get((h.database, h.document_id))
        if text is None or h.char_start is None or h.char_end is None:
            loose.append((h.rank, h))
            continue
        start, end = max(0, h.char_start - half), min(len(text), h.char_end + half)
        by_document.setdefault((h.database, h.document_id), []).append(_Passage(start, end, [h], h.rank))
    for found in by_document.values():
        merged: list[_Passage] = []
        for p in sorted(found, key=lambda p: (p.start, p.end)):
            if merged and p.start <= merged[-1].end:
                last = merged[-1]
                last.end = max(last.end, p.end)
                last.hits += p.hits
                last.rank = min(last.rank, p.rank)
            else:
                merged.append(p)
        loose.extend((p.rank, p) for p in merged)
    return [p for _, p in sorted(loose, key=lambda item: item[0])]


def _head(hit: SearchHit, *, show_database: bool) -> str:
    head = f"[{hit.chunk_id}]"
    if show_database:
        head += f" database: {hit.database};"
    head += f" {hit.document_title or 'untitled'}"
    if hit.document_uri:
        head += f" <{hit.document_uri}>"
    if hit.pages:
        head += f" p. {', '.join(str(p) for p in hit.pages)}"
    if hit.heading_path:
        head += f" § {' > '.join(hit.heading_path)}"
    if hit.stale:
        # The model may then say that what it quotes may no longer be what the source says.
        what = "changed" if hit.source_state == "changed" else "was deleted or moved"
        head += f" [stale: the source {what} since this text was indexed; it may be out of date]"
    return head


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHUNK_CHARS else text[:MAX_CHUNK_CHARS] + " …"


def _render(
    passage: _Passage | SearchHit, texts: dict[DocumentKey, str], sent: Sent, *, show_database: bool
) -> str:
    if isinstance(passage, SearchHit):
        key = (passage.database, passage.chunk_id)
        if key in sent.chunks:
            return f"[{passage.chunk_id}] already shown above"
        sent.chunks.add(key)
        return f"{_head(passage, show_database=show_database)}\n{_cut(passage.content)}"
    first = passage.hits[0]
    document = (first.database, first.document_id)
    text = texts[document]

    def unsent(start: int, end: int, limit: int | None = None) -> str:
        """The text of `start:end` not sent yet, "…" marking what is left out, noted as sent now."""
        shown, left = [], limit
        for a, b in sent.unsent(document, start, end):
            if left is not None:
                if left <= 0:
                    break
                b = min(b, a + left)  # a runaway chunk is cut, and only what is sent is noted
                left -= b - a
            shown.append(("…" if a > start else "") + text[a:b] + ("…" if b < end else ""))
            sent.add(document, a, b)
        return " ".join(shown)

    lines: list[str] = []
    at = passage.start
    if at < (first.char_start or 0):
        before = unsent(at, first.char_start or 0).strip().lstrip("…")
        if before:
            lines.append(f"(context before) …{before}")
        at = first.char_start or 0
    headed = False
    for i, hit in enumerate(passage.hits):
        start = max(at, hit.char_start or 0)
        following = passage.hits[i + 1].char_start if i + 1 < len(passage.hits) else None
        # A hit's text runs to the next hit's start at most (chunks of one passage may overlap: sent once).
        end = max(start, min(hit.char_end or start, following if following is not None else len(text)))
        body = unsent(start, end, MAX_CHUNK_CHARS)
        key = (hit.database, hit.chunk_id)
        if body.strip():
            if headed:
                path = f" § {' > '.join(hit.heading_path)}" if hit.heading_path else ""
                lines.append(f"[{hit.chunk_id}] (same document){path}")
            else:
                lines.append(_head(hit, show_database=show_database))
            headed = True
            lines.append(body)
        elif key in sent.chunks:
            lines.append(f"[{hit.chunk_id}] already shown above")
        else:
            # Its text went out inside other text (another hit's, or context): say which, by its opening.
            opening = _opening(" ".join(text[hit.char_start or 0 : hit.char_end or 0].split()))
            lines.append(f"[{hit.chunk_id}] already shown above: the text beginning {opening!r}")
        sent.chunks.add(key)
        at = max(at, end)
        if following is not None and following > at:  # text between two hits of the passage
            between = unsent(at, following).strip()
            if between:
                lines.append(f"(context) {between}")
            at = following
    if at < passage.end:
        after = unsent(at, passage.end).strip().rstrip("…")
        if after:
            lines.append(f"(context after) {after}…")
    return "\n".join(line for line in lines if line.strip())


def _opening(text: str, chars: int = 40) -> str:
    return text if len(text) <= chars else text[:chars] + "…"

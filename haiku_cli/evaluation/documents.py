"""Which stored documents (and chunks) a judgment names: by id, uri, path, file name or file stem."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from haiku_cli.databases import queries
from haiku_cli.databases.reading import read_one
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.evaluation.judgments import BadLine, Expected, Judgments
from haiku_cli.store import reads
from haiku_cli.store.location import Location
from haiku_cli.store.records import DocumentSummary

DocKey = tuple[str, str]  # (database, document id)
ChunkKey = tuple[str, str]  # (database, chunk id)
_PAGE = 1000
_BATCH = 500  # document ids in one read's filter


@dataclass
class DocumentIndex:
    """Every document of a selection under each name a judgment may give it."""

    exact: dict[str, set[DocKey]] = field(default_factory=lambda: defaultdict(set))  # id, uri, path
    loose: dict[str, set[DocKey]] = field(default_factory=lambda: defaultdict(set))  # file name, stem
    documents: dict[DocKey, DocumentSummary] = field(default_factory=dict)

    def add(self, database: str, doc: DocumentSummary) -> None:
        key = (database, doc.id)
        self.documents[key] = doc
        self.exact[doc.id].add(key)
        if doc.uri:
            self.exact[doc.uri].add(key)
            path = path_of(doc.uri)
            self.exact[path].add(key)
            name = PurePosixPath(path)
            self.loose[name.name].add(key)
            self.loose[name.stem].add(key)

    def resolve(self, reference: str, bases: Iterable[Path]) -> set[DocKey]:
        """The documents `reference` names: exactly (id, uri, path as given or under one of `bases`), else
        by file name or stem (every document of that name, in every database: the same file added to two
        databases is relevant in both)."""
        ref = reference.strip()
        found = self.exact.get(ref)
        if found:
            return set(found)
        for base in bases:
            path = os.path.abspath(os.path.join(base, os.path.expanduser(ref)))
            if self.exact.get(path):
                return set(self.exact[path])
        return set(self.loose.get(ref, ()))


def path_of(uri: str) -> str:
    """The path of a `file://` uri (what `add-src` stores), else the uri itself."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


async def load_index(ws: Workspace, selection: Selection) -> DocumentIndex:
    """Every document of the selection's written databases, page by page."""
    index = DocumentIndex()
    for location in selection.locations:
        offset = 0
        while True:
            page = await queries.list_documents(ws, location, limit=_PAGE, offset=offset)
            for doc in page.documents:
                index.add(location.name, doc)
            if not page.truncated:
                break
            offset += _PAGE
    return index


@dataclass
class Relevance:
    """One question's judgments resolved to stored documents: each one's grade, and its answering lines."""

    grades: dict[DocKey, float] = field(default_factory=dict)
    lines: dict[DocKey, list[tuple[int, int]]] = field(default_factory=dict)


def resolve_all(judgments: Judgments, index: DocumentIndex) -> tuple[dict[str, Relevance], list[BadLine]]:
    """Each question's relevant documents; a reference naming none is a bad line, and a question left
    with none is not evaluated."""
    bases = [judgments.base, Path.cwd()]
    resolved: dict[str, Relevance] = {}
    bad: list[BadLine] = []
    for question in judgments.questions:
        relevance = Relevance()
        for expected in question.expected:
            keys = index.resolve(expected.reference, bases)
            if not keys:
                bad.append(BadLine(expected.where, _unknown(expected)))
            for key in keys:
                relevance.grades[key] = max(relevance.grades.get(key, 0.0), expected.grade)
                if expected.lines is not None:
                    relevance.lines.setdefault(key, []).append(expected.lines)
        if relevance.grades:
            resolved[question.id] = relevance
    return resolved, bad


def _unknown(expected: Expected) -> str:
    return (
        f"no document {expected.reference!r} in the selected databases (by id, uri, path, file name or stem)"
    )


class ChunkJudge:
    """A question's relevant chunks: the chunks of its relevant documents (those overlapping the
    answering lines, when the judgment gives lines), each with its document's grade."""

    def __init__(self, ws: Workspace, selection: Selection) -> None:
        self._ws = ws
        self._locations: dict[str, Location] = {loc.name: loc for loc in selection.locations}
        self._chunks: dict[DocKey, list[tuple[str, int | None, int | None]]] = {}

    async def grades(self, relevance: Relevance) -> dict[ChunkKey, float]:
        graded: dict[ChunkKey, float] = {}
        for key, grade in relevance.grades.items():
            for chunk_id, start, end in await self._chunks_of(key):
                if relevant_lines(relevance.lines.get(key), start, end):
                    graded[(key[0], chunk_id)] = grade
        return graded

    async def preload(self, keys: Iterable[DocKey]) -> None:
        """Read the chunks of many documents a batch of ids at a time (one read each, not one a document)."""
        by_database: dict[str, list[str]] = defaultdict(list)
        for database, doc_id in dict.fromkeys(keys):
            if (database, doc_id) not in self._chunks:
                by_database[database].append(doc_id)
        for database, ids in by_database.items():
            for start in range(0, len(ids), _BATCH):
                batch = ids[start : start + _BATCH]
                found = await read_one(
                    self._ws.pool,
                    self._locations[database],
                    partial(reads.chunks_of_documents, document_ids=batch),
                )
                for doc_id, chunks in found.items():
                    self._chunks[(database, doc_id)] = [(c.id, c.line_start, c.line_end) for c in chunks]

    async def _chunks_of(self, key: DocKey) -> list[tuple[str, int | None, int | None]]:
        if key not in self._chunks:
            await self.preload([key])
        return self._chunks[key]


def relevant_lines(spans: list[tuple[int, int]] | None, start: int | None, end: int | None) -> bool:
    """Whether a chunk on lines start..end answers: any chunk when no lines are judged, else one that
    overlaps them (a chunk of unknown lines cannot be placed, so it does not)."""
    if spans is None:
        return True
    if start is None or end is None:
        return False
    return any(start <= b and a <= end for a, b in spans)

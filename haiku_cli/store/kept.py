"""Stored chunk ids (and vectors) handed on to the identical chunks of a re-chunked document.

A rebuild and a re-added (updated) document both cut a document into chunks again; each new chunk that
is identical to a stored one of its document keeps that chunk's id, so citations saved in chat sessions
still resolve.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.reads import chunk_rows_of
from haiku_cli.store.transaction import storage_errors


def chunk_key(text: str, heading_path: Sequence[str], pages: Sequence[int]) -> bytes:
    """What a new chunk must share with a stored chunk of its document to keep that chunk's id.

    Its text, heading path and pages (what a citation shows and what is embedded), not its order: when
    a new chunk size re-cuts the start of a document, an identical passage further on is still the
    passage that saved citations point at.
    """
    encoded = json.dumps([text, list(heading_path), list(pages)], ensure_ascii=False).encode("utf-8")
    return hashlib.blake2b(encoded, digest_size=16).digest()


class Kept(NamedTuple):
    """A stored chunk handed on: its id, and when asked for its vector with a digest of the text it
    was made from (else None)."""

    id: str
    vector: np.ndarray | None
    embedded: bytes | None = None

    def vector_for(self, text: str) -> np.ndarray | None:
        """The stored vector if it was made from `text` (the same title, headings and passage), else None."""
        return self.vector if self.embedded is not None and self.embedded == text_digest(text) else None


def text_digest(text: str) -> bytes:
    """What identifies an embedded text, kept instead of the text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


_COLUMNS = ["id", "document_id", "order", "text", "heading_path", "pages"]


class KeptIds:
    """The live chunks' ids of some documents, handed out to the identical chunks made again.

    Read per batch of documents in one query (two when only some want their vectors), keeping their
    keys, not their texts, so memory does not grow with the database. A text repeated within a
    document is matched occurrence by occurrence, in order, and each stored id is handed out at most
    once. The vectors of the documents in `vectors_of` are handed out with their ids.
    """

    def __init__(
        self,
        db: Database,
        document_ids: Iterable[str],
        *,
        vectors_of: Collection[str] = (),
        what: str = "cannot be read",
    ) -> None:
        self._kept: dict[tuple[str, bytes], deque[Kept]] = defaultdict(deque)
        ids = list(document_ids)
        with storage_errors(db, what):
            # The vectors only of the documents that ask for them (a second query when some do not):
            # another document of the batch may be a very long one.
            self._add(wait(chunk_rows_of(db, [i for i in ids if i not in vectors_of], _COLUMNS)))
            # With the text each vector was made from: a vector stands in for a new chunk's only if
            # that text is the one the new chunk would embed (its title, headings and passage).
            with_vectors = [*_COLUMNS, "vector", "search_text"]
            self._add(wait(chunk_rows_of(db, [i for i in ids if i in vectors_of], with_vectors)))

    def _add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        vectors, embedded = None, None
        if "vector" in table.column_names:
            # Float32 rows of one array: the stored size, not a Python float per number.
            flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            vectors = flat.reshape(table.num_rows, -1)
            embedded = [text_digest(t or "") for t in table.column("search_text").to_pylist()]
        rows = table.select(_COLUMNS).to_pylist()
        for i in sorted(range(len(rows)), key=lambda i: rows[i]["order"]):
            r = rows[i]
            key = chunk_key(r["text"], r["heading_path"] or [], r["pages"] or [])
            kept = (
                Kept(r["id"], None)
                if vectors is None or embedded is None
                else Kept(r["id"], vectors[i], embedded[i])
            )
            self._kept[(r["document_id"], key)].append(kept)

    def take(
        self, document_id: str, text: str, heading_path: Sequence[str], pages: Sequence[int]
    ) -> Kept | None:
        """The stored chunk of the document identical to this one (not handed out yet), or None."""
        kept = self._kept.get((document_id, chunk_key(text, heading_path, pages)))
        return kept.popleft() if kept else None

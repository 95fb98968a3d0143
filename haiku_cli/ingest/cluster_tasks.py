"""The worker side of `add-src --engine ray`: what a Ray actor runs to read, chunk and embed an add's items,
and to write new documents' chunks as uncommitted Lance fragments (see ingest/cluster.py)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from haiku_cli.errors import HaikuError
from haiku_cli.ingest.items import Item, Prepared, item_label
from haiku_cli.ingest.kinds import read_item
from haiku_cli.ingest.kinds.base import Contents, Kind, ListRequest, Reading

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from haiku_cli.config.settings import EmbedderSettings, IngestSettings
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.chunking import Chunk
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.objects import ObjectStores
    from haiku_cli.store.fragments import FragmentTarget
    from haiku_cli.store.records import DocumentSummary, NewChunk

_T = TypeVar("_T")

# An actor writes the rows it holds as one fragment once they reach either bound: an add's fragments
# (and the driver's metadata of them, ~1.2 KB each) grow with its rows / 8,192, not with its calls, while
# an actor holds a few tens of MB of Arrow rows.
_FRAGMENT_ROWS = 8192
_FRAGMENT_BYTES = 64 << 20

# Of each item whose chunk rows an actor holds: the uri of each of its documents whose rows those are (the
# item's own, and those read out of it: a mail's attachments), with the document id and content hash.
Written = dict[int, dict[str, tuple[str, str]]]


@dataclass(frozen=True)
class Job:
    """What every task of one add needs, put in the cluster's object store once."""

    limits: IngestSettings
    objects: ObjectStores | None
    embedder: EmbedderSettings
    title: str | None
    die_once: str | None = None
    pause: str | None = None  # HAIKU_TEST_PAUSE of the driver, for the tasks' `ray-task` checkpoint
    # Where new documents' chunks go as fragments (None: every chunk comes back to the driver).
    target: FragmentTarget | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # --meta, which new documents' chunks copy
    # A given title or metadata may change a stored document: then every item is chunked and embedded.
    reembed: bool = False
    # Content hashes of documents a sync found gone from their source: a new file with one of them takes
    # its document's id over (a move), so its chunks go back to the writer rather than into a fragment.
    moved: frozenset[str] = frozenset()


class Preparer:
    """A Ray actor, one per cluster CPU of an add: prepares the batches it is sent and holds new documents'
    chunk rows (as Arrow) until it has a fragment's worth, which it writes; a call returns the fragments
    it wrote, and `finish` writes the rest."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.rows: list[pa.Table] = []
        self.count = 0
        self.bytes = 0

    def prepare(
        self,
        batch: list[tuple[int, Item]],
        known: dict[str, str],
        fetched: dict[Any, Any] | None = None,
        redo: Written | None = None,
    ) -> tuple[list[Prepared], list[Any], Written]:
        """Prepare a batch as `prepare_items` does, holding its new rows; the items (none for a `redo`), the
        fragments written, and the documents of each item whose rows it holds."""
        from haiku_cli.store.fragments import chunk_rows

        prepared, written, ids = prepare_items(batch, self.job, known, fetched, redo)
        if written and self.job.target is not None:
            target = self.job.target
            rows = _fragment_step(lambda: chunk_rows(target, written), target)
            self.rows.append(rows)
            self.count += rows.num_rows
            self.bytes += rows.nbytes
        full = self.count >= _FRAGMENT_ROWS or self.bytes >= _FRAGMENT_BYTES
        return ([] if redo is not None else prepared), (self._write() if full else []), ids

    def finish(self) -> tuple[list[Prepared], list[Any], Written]:
        """Write the rows held; shaped as `prepare`'s result."""
        return [], self._write(), {}

    def _write(self) -> list[Any]:
        import pyarrow as pa

        from haiku_cli.store.fragments import write_chunk_fragments

        target = self.job.target
        if not self.rows or target is None:
            return []
        rows = pa.concat_tables(self.rows)
        self.rows, self.count, self.bytes = [], 0, 0
        fragments = _fragment_step(lambda: write_chunk_fragments(target, rows), target)
        if self.job.die_once and not os.path.exists(self.job.die_once):
            Path(self.job.die_once).touch()
            os._exit(1)  # as a worker that dies would, its fragment written: another prepares its rows again
        return fragments


def prepare_items(
    batch: list[tuple[int, Item]],
    job: Job,
    known: dict[str, str],
    fetched: dict[Any, Any] | None = None,
    redo: Written | None = None,
) -> tuple[list[Prepared], list[tuple[DocumentSummary, NewChunk]], Written]:
    """Read, chunk and embed a few items and the documents read out of them (each item's input error is
    returned, not raised); the items, the chunks of new documents (to be written as fragments, when there
    is a target), and the documents whose chunks those are.

    `known`: the content hash stored under a document's uri; a document that has it is not chunked or
    embedded (the writer finds it unchanged, unless a given title or metadata changes it), and a
    document stored under its uri comes back with its chunks, for the writer to update. `fetched`: URLs
    downloaded already. `redo`: items whose chunks were made before and lost, to be made again under the
    same document ids.
    """
    from haiku_cli.ingest.part_documents import part_label
    from haiku_cli.store.writer_lock import checkpoint

    if job.pause:
        checkpoint("ray-task", job.pause)
    embedder = _worker_embedder(job.embedder)
    out: list[Prepared] = []
    written: list[tuple[DocumentSummary, NewChunk]] = []  # new documents' chunks, for the fragments
    ids: Written = {}
    for position, item in batch:
        label = item_label(item)
        try:
            got = fetched.get(item) if fetched else None
            seen, doc = read_item(item, Reading(job.limits, job.objects), got)
            again = redo.get(position) if redo is not None else None
            # The item's new rows are kept only once all of its documents are prepared: an item that fails
            # half-way leaves no row of a document the writer never hears of.
            held: dict[str, tuple[str, str]] = {}
            rows: list[tuple[DocumentSummary, NewChunk]] = []
            one = _prepare_document(doc, embedder, job, known, again, job.title, held, rows)
            # A mail's attachments and a mailbox's messages go the same way, each a document of its own
            # (the writer adds them without the given title).
            parts = tuple(
                dataclasses.replace(
                    _prepare_document(child, embedder, job, known, again, None, held, rows),
                    position=position,
                    label=part_label(label, doc.uri, child.uri),
                )
                for child in (doc.children if doc.owns_children and doc.uri else ())
            )
            written += rows
            if held:
                ids[position] = held
            out.append(dataclasses.replace(one, position=position, label=label, seen=seen, parts=parts))
        except HaikuError as exc:
            out.append(Prepared(position, label, error=exc))
    return out, written, ids


def _prepare_document(
    doc: ConvertedDocument,
    embedder: Embedder,
    job: Job,
    known: dict[str, str],
    again: dict[str, tuple[str, str]] | None,
    given_title: str | None,
    held: dict[str, tuple[str, str]],
    written: list[tuple[DocumentSummary, NewChunk]],
) -> Prepared:
    """One document read, chunked and embedded (not when its content is stored under its uri): a new one's
    chunk rows go to `written` and its id and content hash to `held`; any other's come back with it.
    `again`: the ids a redo makes the rows of documents under (None: not a redo)."""
    import anyio

    from haiku_cli.ingest.chunking import chunk_document
    from haiku_cli.ingest.embedding import embedding_text
    from haiku_cli.ingest.stored import content_hash, stored_content, stored_metadata

    digest = content_hash(stored_content(doc), [p.data for p in doc.pictures])
    before = again.get(doc.uri) if again is not None else None
    stored = known.get(doc.uri)
    if before is None and stored == digest and not job.reembed:  # the writer finds it unchanged
        return Prepared(0, "", document=doc)
    chunks = chunk_document(doc, embedder.count_tokens, max_tokens=embedder.max_tokens)
    title = given_title or doc.title
    texts = [embedding_text(title, c) for c in chunks]
    vectors = anyio.run(embedder.embed_documents, texts) if texts else None
    new = before is not None or (stored is None and digest not in job.moved and bool(doc.uri))
    if job.target is None or not new or vectors is None:
        return Prepared(0, "", document=doc, chunks=chunks, vectors=vectors, title=title)
    metadata = stored_metadata(doc, job.metadata)
    document = _new_document(doc.uri, title, metadata, before[0] if before else None)
    written += [(document, c) for c in _rows_of(chunks, title, vectors)]
    held[doc.uri] = (document.id, digest)
    return Prepared(0, "", document=doc, title=title, document_id=document.id, written=len(chunks))


def _new_document(
    uri: str, title: str | None, metadata: dict[str, Any], given: str | None = None
) -> DocumentSummary:
    """The identity a new document's chunk rows carry: the id the writer then stores the document under
    (`given`: the one it had when its rows were made before)."""
    from datetime import UTC, datetime

    from haiku_cli.store.document_writes import new_id
    from haiku_cli.store.records import DocumentSummary

    now = datetime.now(UTC)
    return DocumentSummary(
        id=given or new_id(), uri=uri, title=title, metadata=metadata, created_at=now, updated_at=now
    )


def _rows_of(chunks: list[Chunk], title: str | None, vectors: np.ndarray) -> list[NewChunk]:
    """The chunks with their vectors as the store takes them (what a local add makes of them)."""
    from haiku_cli.ingest.embedding import new_chunks

    return new_chunks([(title, c) for c in chunks], list(vectors))


def _fragment_step(step: Callable[[], _T], target: FragmentTarget) -> _T:
    """Run a step of writing fragments; a storage failure is one line naming the database (exit 3)."""
    try:
        return step()
    except HaikuError:
        raise
    except Exception as exc:
        from haiku_cli.store.failures import storage_failure

        raise storage_failure(target.location, "cannot be written", exc) from exc


_embedders: dict[tuple[str | None, str | None, float, int], Embedder] = {}


def _worker_embedder(settings: EmbedderSettings) -> Embedder:
    """The worker process's embedder, made once: the bundled model runs on the CPUs Ray gave the task."""
    import ray

    from haiku_cli.embed import _bundle, load_embedder
    from haiku_cli.embed.embedder import BundledEmbedder

    cpus = int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)) or 1
    key = (settings.model, settings.base_url, settings.timeout_seconds, cpus)
    if key not in _embedders:
        if (settings.model or _bundle.DEFAULT_EMBEDDER_NAME) == _bundle.DEFAULT_EMBEDDER_NAME:
            _embedders[key] = BundledEmbedder(threads=cpus)
        else:
            _embedders[key] = load_embedder(
                settings.model, base_url=settings.base_url, timeout=settings.timeout_seconds
            )
    return _embedders[key]


def list_contents(kind: Kind, source: str, request: ListRequest) -> Contents:
    """A Ray task: list a source as the driver would (near the data: a listing is one request per 1,000
    keys, each a round trip from wherever it runs)."""
    contents = kind.contents(source, request)
    contents.entries = list(contents.entries)  # sent back whole
    return contents

"""`add-src --engine ray`: items are read, chunked and embedded as Ray tasks, which write new documents'
chunks as uncommitted Lance fragments; this process writes the rest and commits the fragments.

The driver lists the sources (their sizes decide whether a cluster is worth starting), sends the items
to the cluster a few per task, and hands back what the tasks return, in the order of the items, to the
Ingestor a local add uses. A task writes the chunk rows of documents not stored yet as fragments next
to the chunks table (store/fragments.py) and returns the documents without them; a document stored
under its uri comes back with its chunks and vectors, for the Ingestor to update as a local add does
(kept ids, reused vectors). The driver writes documents, pictures and updates, then commits every
fragment in one Append: all of it inside one journalled write under the writer lock, its indexes
brought up to date afterwards as after any add (docs/scale-out.md).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import HaikuError, InputError, ModelError
from haiku_cli.ingest.objects import ObjectFile
from haiku_cli.ingest.pipeline import Item, Prepared, item_label, read_item
from haiku_cli.ingest.sources import TextFile

if TYPE_CHECKING:
    import numpy as np

    from haiku_cli.config.settings import EmbedderSettings, IngestSettings, RaySettings
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.chunking import Chunk
    from haiku_cli.ingest.objects import Listing, ObjectStores
    from haiku_cli.ingest.sources import FileChoice
    from haiku_cli.store.fragments import FragmentTarget
    from haiku_cli.store.records import DocumentSummary, NewChunk

RAY_EXTRA = "pip install 'haiku-cli[ray]'"
# A task takes up to this many items or bytes: enough to make Ray's per-task cost (milliseconds) small
# beside the embedding (about 35 chunks/s per worker CPU), few enough to spread a folder over a cluster.
_TASK_ITEMS = 16
_TASK_BYTES = 1 << 20
# Tasks in flight per cluster CPU: one running, one waiting, so no worker idles while memory stays bounded.
_IN_FLIGHT_PER_CPU = 2
_CONNECT_SECONDS = 5.0
# How long a failed or interrupted add waits for its cancelled tasks' workers to end before it removes
# the fragments they wrote (a force-cancelled task's worker is killed at once).
_CANCEL_WAIT_SECONDS = 30.0
# A test hook: a file path; the first task to find it missing creates it and kills its own worker process
# once its work is done (its fragments written, never to be committed).
_DIE_ONCE = "HAIKU_TEST_RAY_DIE"


def require_ray() -> None:
    """Stop with one line naming the extra when Ray is not installed (found, not imported: an add that
    turns out small never pays for importing it)."""
    from importlib.util import find_spec

    try:
        found = find_spec("ray") is not None
    except ValueError:  # a `ray` in sys.modules without a spec: what `import ray` would fail on too
        found = False
    if not found:
        raise InputError(f"--engine ray needs Ray, which is not installed: {RAY_EXTRA}")


@dataclass(frozen=True)
class _Job:
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


@dataclass
class ClusterWork:
    """An add's items as the cluster prepares them, in order, and the fragments its tasks wrote so far:
    `documents` are the ids the fragments' chunks were written under (each a new document's)."""

    prepared: AsyncIterator[Prepared]
    fragments: list[Any] = field(default_factory=list)
    documents: set[str] = field(default_factory=set)


class RayEngine:
    """Runs an add's reading, chunking and embedding on a Ray cluster (or here, when it is small)."""

    def __init__(
        self,
        settings: RaySettings,
        embedder: EmbedderSettings,
        *,
        address: str | None = None,
        note: Callable[[str], None] = lambda _: None,
    ) -> None:
        """`address` (`--ray-address`) wins over `[ray] address`; `note` is told why an add stays here."""
        self.settings = settings
        self.embedder = embedder
        self.address = address or settings.address
        self.note = note
        self._started = False  # this process joined (or started) the cluster: it leaves it when done

    def check_address(self) -> None:
        """Stop at once, before any database is opened, when a `host:port` address does not answer."""
        if self.address:
            _reachable(self.address)

    def worth_it(self, items: Sequence[tuple[int, Item]]) -> bool:
        """Whether the items are big enough for the cluster (`[ray] min_mb`); if not, say so."""
        from haiku_cli.ingest.convert.limits import megabytes

        size = sum(_size(item) for _, item in items)
        if items and size >= self.settings.min_mb * 2**20:
            return True
        self.note(
            f"{megabytes(size)} to add, under [ray] min_mb = {self.settings.min_mb:g} MB: "
            "adding in this process (starting the cluster's work would take longer)"
        )
        return False

    @asynccontextmanager
    async def running(
        self,
        items: Sequence[tuple[int, Item]],
        *,
        title: str | None,
        limits: IngestSettings,
        objects: ObjectStores | None,
        known: dict[str, str],
        metadata: dict[str, Any],
        target: FragmentTarget | None,
        moved: frozenset[str] = frozenset(),
    ) -> AsyncIterator[ClusterWork]:
        """Connect to the cluster and yield the items prepared by it, in order; on exit (Ctrl-C or a
        failure too) cancel what is still running and wait for it to end, and leave a cluster this add
        started. `known`: the content hash stored under each uri; `target`: where fragments go."""
        import ray

        self._join()
        hooks = os.environ.get(_DIE_ONCE), os.environ.get("HAIKU_TEST_PAUSE")
        job = _Job(
            limits, objects, self.embedder, title, *hooks, target, metadata, bool(title or metadata), moved
        )
        pending: deque[Any] = deque()
        work = ClusterWork(_nothing())
        work.prepared = self._results(items, job, known, pending, work)
        try:
            yield work
        finally:
            for ref in pending:
                ray.cancel(ref, force=True, recursive=True)
            if pending:
                # A task still running may be writing a fragment: the add removes those left over only
                # once no task of it is left to write one.
                ray.wait(list(pending), num_returns=len(pending), timeout=_CANCEL_WAIT_SECONDS)
            if self._started:
                ray.shutdown()
                self._started = False

    def lists_on_cluster(self) -> bool:
        """Whether object-storage prefixes are listed by a task on the cluster: only one running already
        (an address given, or joined by this process), never one started just to list (a small add
        would then wait for a cluster it does not use)."""
        import sys

        if self.address or os.environ.get("RAY_ADDRESS"):
            return True
        ray = sys.modules.get("ray")  # not imported for this: an add that stays here never pays for it
        return ray is not None and ray.is_initialized()

    async def listing(self, objects: ObjectStores, source: str, choice: FileChoice) -> Listing:
        """List a source on object storage in a task on the cluster, near the bucket (a listing is one
        request per 1,000 keys, each a round trip from wherever it runs)."""
        import asyncio

        import ray

        self._join()
        task = ray.remote(max_retries=self.settings.max_retries, retry_exceptions=False)(_list)
        try:
            return await asyncio.wrap_future(task.remote(objects, source, choice).future())
        except ray.exceptions.RayError as exc:
            if isinstance(cause := getattr(exc, "cause", None), HaikuError):
                raise cause from None  # the listing's own error (no such prefix), reported as locally
            raise ModelError(f"the Ray cluster failed to list {source}: {_first_line(exc)}") from None

    def _join(self) -> None:
        # On the calling (main) thread: Ray sets its signal handlers on the main one.
        if not self._started:
            self._started = self._connect()

    def _connect(self) -> bool:
        """Join the cluster (one already joined by this process is used as it is); whether this started it."""
        import ray

        if ray.is_initialized():
            return False
        ray_logs = logging.getLogger("ray")
        level = ray_logs.level
        try:
            # Starting a cluster forks its processes, which exec at once: LanceDB's and Lance's warnings
            # about forks do not apply; nor do Ray's notes on a new local cluster (its token, dashboard).
            ray_logs.setLevel(logging.ERROR)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "lancedb fork support", RuntimeWarning)
                warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,
                    configure_logging=False,
                )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"at {self.address}" if self.address else "(RAY_ADDRESS, or one running here)"
            raise InputError(f"the Ray cluster {where} cannot be reached: {_first_line(exc)}") from None
        finally:
            ray_logs.setLevel(level)
        return True

    async def _results(
        self,
        items: Sequence[tuple[int, Item]],
        job: _Job,
        known: dict[str, str],
        pending: deque[Any],
        work: ClusterWork,
    ) -> AsyncIterator[Prepared]:
        import asyncio

        import ray

        task = ray.remote(max_retries=self.settings.max_retries, retry_exceptions=False)(_prepare)
        job_ref = ray.put(job)
        window = max(2, int(ray.cluster_resources().get("CPU", 1)) * _IN_FLIGHT_PER_CPU)
        batches = _batches(items)
        for batch in batches:
            pending.append(task.remote(batch, job_ref, _known_of(batch, known)))
            if len(pending) >= window:
                break
        while pending:
            try:
                done = await asyncio.wrap_future(pending[0].future())
            except ray.exceptions.RayError as exc:
                if isinstance(cause := getattr(exc, "cause", None), HaikuError):
                    raise cause from None  # a task's own failure (its fragments cannot be written)
                raise ModelError(f"the Ray cluster failed to prepare the items: {_first_line(exc)}") from None
            pending.popleft()
            following = next(batches, None)
            if following is not None:
                pending.append(task.remote(following, job_ref, _known_of(following, known)))
            prepared, fragments = done
            work.fragments.extend(fragments)
            work.documents.update(p.document_id for p in prepared if p.document_id is not None)
            for one in prepared:
                yield one


async def _nothing() -> AsyncIterator[Prepared]:
    return
    yield


def _list(objects: ObjectStores, source: str, choice: FileChoice) -> Listing:
    """A Ray task: list a source on object storage as the driver would."""
    return objects.get(source).listing(source, choice)


def _reachable(address: str) -> None:
    """Raise when a `host:port` cluster address does not answer (Ray itself retries for minutes)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        return  # `auto`, `local`: Ray's own words
    try:
        socket.create_connection((host, port), timeout=_CONNECT_SECONDS).close()
    except OSError as exc:
        raise InputError(
            f"the Ray cluster at {address} cannot be reached ({exc.strerror or exc}); start it with "
            "`ray start --head` there, or check --ray-address"
        ) from None


def _batches(items: Sequence[tuple[int, Item]]) -> Iterator[list[tuple[int, Item]]]:
    """The items in order, a task's worth at a time."""
    batch: list[tuple[int, Item]] = []
    size = 0
    for entry in items:
        batch.append(entry)
        size += _size(entry[1])
        if len(batch) >= _TASK_ITEMS or size >= _TASK_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _known_of(batch: list[tuple[int, Item]], known: dict[str, str]) -> dict[str, str]:
    """The stored content hashes of the uris a task's items will have (a task is sent only its own)."""
    from haiku_cli.ingest.convert.dispatch import file_uri

    uris = (
        item.uri
        if isinstance(item, ObjectFile)
        else item
        if isinstance(item, str)
        else file_uri(item.path if isinstance(item, TextFile) else item)
        for _, item in batch
    )
    return {uri: known[uri] for uri in uris if uri in known}


def _size(item: Item) -> int:
    """An item's bytes as listed (a URL's are not known until it is fetched: 0)."""
    if isinstance(item, ObjectFile):
        return item.size
    if isinstance(item, str):
        return 0
    try:
        return (item.path if isinstance(item, TextFile) else Path(item)).stat().st_size
    except OSError:
        return 0  # reported when it is read


def _prepare(
    batch: list[tuple[int, Item]], job: _Job, known: dict[str, str]
) -> tuple[list[Prepared], list[Any]]:
    """A Ray task: read, chunk and embed a few items (each one's input error is returned, not raised),
    writing the chunks of documents not stored yet as fragments; the items, and the fragments' metadata.

    `known`: the content hash stored under an item's uri; a document that has it is not chunked or
    embedded (the writer finds it unchanged, unless a given title or metadata changes it), and a
    document stored under its uri comes back with its chunks, for the writer to update.
    """
    import anyio

    from haiku_cli.ingest.chunking import chunk_document
    from haiku_cli.ingest.embedding import embedding_text
    from haiku_cli.ingest.stored import content_hash, stored_content
    from haiku_cli.store.writer import checkpoint

    if job.pause:
        checkpoint("ray-task", job.pause)
    embedder = _worker_embedder(job.embedder)
    out: list[Prepared] = []
    written: list[tuple[DocumentSummary, NewChunk]] = []  # new documents' chunks, for the fragments
    for position, item in batch:
        label = item_label(item)
        try:
            seen, doc = read_item(item, job.limits, job.objects)
            digest = content_hash(stored_content(doc), [p.data for p in doc.pictures])
            stored = known.get(doc.uri)
            if stored == digest and not job.reembed:  # stored already: the writer finds it unchanged
                out.append(Prepared(position, label, seen, doc))
                continue
            chunks = chunk_document(doc, embedder.count_tokens, max_tokens=embedder.max_tokens)
            title = job.title or doc.title
            texts = [embedding_text(title, c) for c in chunks]
            vectors = anyio.run(embedder.embed_documents, texts) if texts else None
            new = stored is None and digest not in job.moved and bool(doc.uri)
            if job.target is None or not new or vectors is None:
                out.append(Prepared(position, label, seen, doc, chunks, vectors, title))
                continue
            document = _new_document(doc.uri, title, job.metadata)
            written += [(document, c) for c in _rows_of(chunks, title, vectors)]
            out.append(
                Prepared(
                    position, label, seen, doc, title=title, document_id=document.id, written=len(chunks)
                )
            )
        except HaikuError as exc:
            out.append(Prepared(position, label, error=exc))
    fragments = _write_fragments(job.target, written) if written and job.target is not None else []
    if job.die_once and not os.path.exists(job.die_once):
        Path(job.die_once).touch()
        os._exit(1)  # as a worker that dies would, its work done: Ray runs the task again elsewhere
    return out, fragments


def _new_document(uri: str, title: str | None, metadata: dict[str, Any]) -> DocumentSummary:
    """The identity a new document's chunk rows carry: the id the writer then stores the document under."""
    from datetime import UTC, datetime

    from haiku_cli.store.records import DocumentSummary
    from haiku_cli.store.writes import new_id

    now = datetime.now(UTC)
    return DocumentSummary(
        id=new_id(), uri=uri, title=title, metadata=metadata, created_at=now, updated_at=now
    )


def _rows_of(chunks: list[Chunk], title: str | None, vectors: np.ndarray) -> list[NewChunk]:
    """The chunks with their vectors as the store takes them (what a local add makes of them)."""
    from haiku_cli.ingest.embedding import new_chunks

    return new_chunks([(title, c) for c in chunks], list(vectors))


def _write_fragments(target: FragmentTarget, written: list[tuple[DocumentSummary, NewChunk]]) -> list[Any]:
    """Write the chunks as fragments; a storage failure is one line naming the database (exit 3)."""
    from haiku_cli.store.fragments import write_chunk_fragments

    try:
        return write_chunk_fragments(target, written)
    except HaikuError:
        raise
    except Exception as exc:
        from haiku_cli.store.handle import storage_failure

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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

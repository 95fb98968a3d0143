"""`add-src --engine ray`: items are read, chunked and embedded by Ray actors, which write new documents'
chunks as uncommitted Lance fragments; this process writes the rest and commits the fragments.

The driver lists the sources (their sizes decide whether a cluster is worth starting), sends the items
to the cluster a few per call, one actor per cluster CPU, and hands back what the calls return, in the
order of the items, to the Ingestor a local add uses. An actor holds the chunk rows of documents not
stored yet until it has a fragment's worth, writes them as one fragment next to the chunks table
(store/fragments.py), and returns the documents without them; a document stored under its uri comes
back with its chunks and vectors, for the Ingestor to update as a local add does (kept ids, reused
vectors). An actor that dies loses the rows it held: the items they came from are prepared again by a
new actor under the same document ids. The driver writes documents, pictures and updates, then commits
every fragment in one Append: all of it inside one journalled write under the writer lock, its indexes
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
from typing import TYPE_CHECKING, Any, TypeVar

from haiku_cli.errors import HaikuError, InputError, ModelError
from haiku_cli.ingest.objects import ObjectFile
from haiku_cli.ingest.pipeline import Item, Prepared, item_label, read_item
from haiku_cli.ingest.sources import TextFile

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from haiku_cli.config.settings import EmbedderSettings, IngestSettings, RaySettings
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.chunking import Chunk
    from haiku_cli.ingest.convert.url import Fetched
    from haiku_cli.ingest.objects import Listing, ObjectStores
    from haiku_cli.ingest.sources import FileChoice
    from haiku_cli.store.fragments import FragmentTarget
    from haiku_cli.store.records import DocumentSummary, NewChunk

_T = TypeVar("_T")

RAY_EXTRA = "pip install 'haiku-cli[ray]'"
# A call takes up to this many items or bytes: enough to make Ray's per-call cost (milliseconds) small
# beside the embedding (about 35 chunks/s per worker CPU), few enough to spread a folder over a cluster.
_TASK_ITEMS = 16
_TASK_BYTES = 1 << 20
# Calls in flight per actor (one per cluster CPU): one running, one waiting, so no worker idles while the
# driver holds a bounded number of results.
_IN_FLIGHT_PER_CPU = 2
# An actor writes the rows it holds as one fragment once they reach either bound: an add's fragments
# (and the driver's metadata of them, ~1.2 KB each) grow with its rows / 8,192, not with its calls, while
# an actor holds a few tens of MB of Arrow rows.
_FRAGMENT_ROWS = 8192
_FRAGMENT_BYTES = 64 << 20
_CONNECT_SECONDS = 5.0
# How long a failed or interrupted add waits for its killed actors to end before it removes the
# fragments they wrote.
_CANCEL_WAIT_SECONDS = 30.0
# A test hook: a file path; the first actor to find it missing when it writes a fragment creates it and
# kills its own worker process once the fragment is written (never to be committed).
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
        fetched: dict[str, Fetched] | None = None,
    ) -> AsyncIterator[ClusterWork]:
        """Connect to the cluster and yield the items prepared by it, in order; on exit (Ctrl-C or a
        failure too) cancel what is still running and wait for it to end, and leave a cluster this add
        started. `known`: the content hash stored under each uri; `target`: where fragments go;
        `fetched`: URLs a sync downloaded already (to compare them), sent to the worker that reads them."""
        import ray

        self._join()
        hooks = os.environ.get(_DIE_ONCE), os.environ.get("HAIKU_TEST_PAUSE")
        job = _Job(
            limits, objects, self.embedder, title, *hooks, target, metadata, bool(title or metadata), moved
        )
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        pool = _Pool(ray.put(job), cpus, self.settings.max_retries)
        work = ClusterWork(_nothing())
        work.prepared = _results(items, known, fetched or {}, pool, work)
        try:
            yield work
        finally:
            # An actor still running may be writing a fragment: the add removes those left over only once
            # no actor of it is left to write one.
            pool.stop()
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
        except Exception as exc:  # Ray's own `Exception` or `TimeoutError`: a cluster that did not start
            if self.address:
                raise InputError(
                    f"the Ray cluster at {self.address} cannot be reached: {_first_line(exc)}"
                ) from None
            raise ModelError(
                f"a local Ray cluster did not start: {_first_line(exc)}; start one yourself (ray start "
                "--head) and name it with --ray-address, or add without --engine ray"
            ) from None
        finally:
            ray_logs.setLevel(level)
        return True


async def _results(
    items: Sequence[tuple[int, Item]],
    known: dict[str, str],
    fetched: dict[str, Fetched],
    pool: _Pool,
    work: ClusterWork,
) -> AsyncIterator[Prepared]:
    """The items as the pool's actors prepare them, in order; the fragments they write go to `work`."""
    import asyncio

    import ray

    batches = _batches(items)

    def send_next(slot: int) -> bool:
        batch = next(batches, None)
        if batch is not None:
            urls = {item: fetched[item] for _, item in batch if isinstance(item, str) and item in fetched}
            pool.send(slot, batch, _known_of(batch, known), urls)
        return batch is not None

    sending = all(send_next(slot) for _ in range(_IN_FLIGHT_PER_CPU) for slot in range(pool.size))
    if not sending:
        pool.finish_all()  # every batch is sent: each actor writes what it holds after its last one
    while pool.pending:
        call = pool.pending[0]
        try:
            done = await asyncio.wrap_future(call.ref.future())
        except ray.exceptions.RayActorError as exc:
            pool.replace(call.slot, exc)  # its worker died: what it held is prepared again elsewhere
            continue
        except ray.exceptions.RayError as exc:
            if isinstance(cause := getattr(exc, "cause", None), HaikuError):
                raise cause from None  # a call's own failure (its fragments cannot be written)
            raise ModelError(f"the Ray cluster failed to prepare the items: {_first_line(exc)}") from None
        pool.pending.popleft()
        prepared, fragments, written = done
        work.fragments.extend(fragments)
        pool.took(call, bool(fragments), written)
        if call.batch is None or call.redo is not None:
            continue  # a finish, or rows made again, whose items were handed on before
        if sending and not (sending := send_next(call.slot)):
            pool.finish_all()
        work.documents.update(p.document_id for p in prepared if p.document_id is not None)
        for one in prepared:
            yield one
    pool.stop()  # every row is written: the actors' CPUs are free for other work while this one commits


@dataclass
class _Call:
    """A call in flight to an actor: a batch to prepare, or one whose rows the actor's predecessor held
    and lost (`redo`: the document id and content hash each item's rows had), or the actor's finish
    (`batch` None). `tries`: the actors that died while it was theirs."""

    ref: Any
    slot: int
    batch: list[tuple[int, Item]] | None
    known: dict[str, str] = field(default_factory=dict)
    fetched: dict[str, Fetched] = field(default_factory=dict)
    redo: dict[int, tuple[str, str]] | None = None
    tries: int = 0


@dataclass
class _Held:
    """A batch taken from an actor whose rows it holds unwritten: what to prepare again if it dies."""

    batch: list[tuple[int, Item]]  # those of its items whose rows it holds
    fetched: dict[str, Fetched]
    written: dict[int, tuple[str, str]]
    tries: int


class _Pool:
    """An add's actors, one per cluster CPU (made when first sent a batch), the calls in flight to them in
    the order their results are taken, and the batches whose rows each actor holds unwritten.

    An actor runs its calls in the order sent, and writes every row it holds when it writes a fragment;
    so a call that returns fragments means every row sent to that actor before is written.
    """

    def __init__(self, job: Any, size: int, max_retries: int) -> None:
        import ray

        self._remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Preparer)
        self._job = job
        self.size = size
        self.max_retries = max_retries
        self.actors: list[Any] = [None] * size
        self.held: list[list[_Held]] = [[] for _ in range(size)]
        self.pending: deque[_Call] = deque()
        self._gone: list[Any] = []  # actors replaced: killed again at the end, in case one lingers

    def _actor(self, slot: int) -> Any:
        if self.actors[slot] is None:
            self.actors[slot] = self._remote.remote(self._job)
        return self.actors[slot]

    def send(
        self, slot: int, batch: list[tuple[int, Item]], known: dict[str, str], fetched: dict[str, Fetched]
    ) -> None:
        """Send a batch to the slot's actor, its result taken after those sent before."""
        ref = self._actor(slot).prepare.remote(batch, known, fetched)
        self.pending.append(_Call(ref, slot, batch, known, fetched))

    def finish_all(self) -> None:
        """Have every actor write what it holds, after the calls sent to it."""
        for slot, actor in enumerate(self.actors):
            if actor is not None:
                self.pending.append(_Call(actor.finish.remote(), slot, None))

    def took(self, call: _Call, flushed: bool, written: dict[int, tuple[str, str]]) -> None:
        """Note a call's result: the rows its actor holds unwritten now (a redo's are checked)."""
        if call.redo is not None and written != call.redo:
            raise ModelError(
                "the Ray cluster lost chunks it had made and could not make the same again (a source "
                "changed while the add ran); run the add again"
            )
        if flushed or call.batch is None:
            self.held[call.slot] = []
        elif written:
            batch = [(p, item) for p, item in call.batch if p in written]
            self.held[call.slot].append(_Held(batch, call.fetched, written, call.tries))

    def replace(self, slot: int, exc: BaseException) -> None:
        """The slot's actor died: a new one prepares again the rows the old one held, then the calls still
        in flight to it, in their order; past `max_retries` deaths of a call's actor the add fails."""
        import ray

        self._gone.append(self.actors[slot])
        ray.kill(self.actors[slot], no_restart=True)
        self.actors[slot] = None
        actor = self._actor(slot)
        again = [
            _Call(None, slot, held.batch, fetched=held.fetched, redo=held.written) for held in self.held[slot]
        ]
        for call, held in zip(again, self.held[slot], strict=True):
            call.tries = held.tries + 1
        self.held[slot] = []
        in_flight = [call for call in self.pending if call.slot == slot]
        for call in in_flight:
            call.tries += 1
        for call in [*again, *in_flight]:  # sent in the order the new actor is to run them
            if call.tries > self.max_retries:
                raise ModelError(f"the Ray cluster failed to prepare the items: {_first_line(exc)}")
            if call.batch is None:
                call.ref = actor.finish.remote()
            else:
                call.ref = actor.prepare.remote(call.batch, call.known, call.fetched, call.redo)
        self.pending.extendleft(reversed(again))  # taken first: they run first

    def stop(self) -> None:
        """Kill every actor (a finished add's too: it frees their CPUs) and wait until the ones with calls
        in flight have ended, so no fragment is being written once this returns."""
        import ray

        for actor in [*self.actors, *self._gone]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        refs = [call.ref for call in self.pending if call.ref is not None]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=_CANCEL_WAIT_SECONDS)
        self.pending.clear()


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


class _Preparer:
    """A Ray actor, one per cluster CPU of an add: prepares the batches it is sent and holds new documents'
    chunk rows (as Arrow) until it has a fragment's worth, which it writes; a call returns the fragments
    it wrote, and `finish` writes the rest."""

    def __init__(self, job: _Job) -> None:
        self.job = job
        self.rows: list[pa.Table] = []
        self.count = 0
        self.bytes = 0

    def prepare(
        self,
        batch: list[tuple[int, Item]],
        known: dict[str, str],
        fetched: dict[str, Fetched] | None = None,
        redo: dict[int, tuple[str, str]] | None = None,
    ) -> tuple[list[Prepared], list[Any], dict[int, tuple[str, str]]]:
        """Prepare a batch as `_prepare` does, holding its new rows; the items (none for a `redo`), the
        fragments written, and the document id and content hash of each item whose rows it holds."""
        from haiku_cli.store.fragments import chunk_rows

        prepared, written, ids = _prepare(batch, self.job, known, fetched, redo)
        if written and self.job.target is not None:
            target = self.job.target
            rows = _fragment_step(lambda: chunk_rows(target, written), target)
            self.rows.append(rows)
            self.count += rows.num_rows
            self.bytes += rows.nbytes
        full = self.count >= _FRAGMENT_ROWS or self.bytes >= _FRAGMENT_BYTES
        return ([] if redo is not None else prepared), (self._write() if full else []), ids

    def finish(self) -> tuple[list[Prepared], list[Any], dict[int, tuple[str, str]]]:
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


def _prepare(
    batch: list[tuple[int, Item]],
    job: _Job,
    known: dict[str, str],
    fetched: dict[str, Fetched] | None = None,
    redo: dict[int, tuple[str, str]] | None = None,
) -> tuple[list[Prepared], list[tuple[DocumentSummary, NewChunk]], dict[int, tuple[str, str]]]:
    """Read, chunk and embed a few items (each one's input error is returned, not raised); the items, the
    chunks of new documents (to be written as fragments, when there is a target), and the document id and
    content hash of each item whose chunks those are.

    `known`: the content hash stored under an item's uri; a document that has it is not chunked or
    embedded (the writer finds it unchanged, unless a given title or metadata changes it), and a
    document stored under its uri comes back with its chunks, for the writer to update. `fetched`: URLs
    downloaded already. `redo`: items whose chunks were made before and lost, to be made again under the
    same document ids.
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
    ids: dict[int, tuple[str, str]] = {}
    for position, item in batch:
        label = item_label(item)
        try:
            got = fetched.get(item) if fetched and isinstance(item, str) else None
            seen, doc = read_item(item, job.limits, job.objects, got)
            digest = content_hash(stored_content(doc), [p.data for p in doc.pictures])
            again = redo.get(position) if redo is not None else None
            stored = known.get(doc.uri)
            if again is None and stored == digest and not job.reembed:  # the writer finds it unchanged
                out.append(Prepared(position, label, seen, doc))
                continue
            chunks = chunk_document(doc, embedder.count_tokens, max_tokens=embedder.max_tokens)
            title = job.title or doc.title
            texts = [embedding_text(title, c) for c in chunks]
            vectors = anyio.run(embedder.embed_documents, texts) if texts else None
            new = again is not None or (stored is None and digest not in job.moved and bool(doc.uri))
            if job.target is None or not new or vectors is None:
                out.append(Prepared(position, label, seen, doc, chunks, vectors, title))
                continue
            document = _new_document(doc.uri, title, job.metadata, again[0] if again else None)
            written += [(document, c) for c in _rows_of(chunks, title, vectors)]
            ids[position] = (document.id, digest)
            out.append(
                Prepared(
                    position, label, seen, doc, title=title, document_id=document.id, written=len(chunks)
                )
            )
        except HaikuError as exc:
            out.append(Prepared(position, label, error=exc))
    return out, written, ids


def _new_document(
    uri: str, title: str | None, metadata: dict[str, Any], given: str | None = None
) -> DocumentSummary:
    """The identity a new document's chunk rows carry: the id the writer then stores the document under
    (`given`: the one it had when its rows were made before)."""
    from datetime import UTC, datetime

    from haiku_cli.store.records import DocumentSummary
    from haiku_cli.store.writes import new_id

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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

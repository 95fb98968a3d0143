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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from haiku_cli.errors import HaikuError, InputError, ModelError, exception_reason
from haiku_cli.ingest.cluster_pool import Pool
from haiku_cli.ingest.cluster_tasks import Job, list_contents
from haiku_cli.ingest.items import Item, Prepared
from haiku_cli.ingest.kinds import item_kind

if TYPE_CHECKING:
    from haiku_cli.config.settings import EmbedderSettings, IngestSettings, RaySettings, Settings
    from haiku_cli.ingest.ingestor import Ingestor
    from haiku_cli.ingest.kinds.base import Contents, Kind, ListRequest, Reading
    from haiku_cli.ingest.objects import ObjectStores
    from haiku_cli.ingest.remembering import Seen
    from haiku_cli.store.fragments import FragmentTarget

RAY_EXTRA = "pip install 'haiku-cli[ray]'"
# A call takes up to this many items or bytes: enough to make Ray's per-call cost (milliseconds) small
# beside the embedding (about 35 chunks/s per worker CPU), few enough to spread a folder over a cluster.
_TASK_ITEMS = 16
_TASK_BYTES = 1 << 20
# Calls in flight per actor (one per cluster CPU): one running, one waiting, so no worker idles while the
# driver holds a bounded number of results.
_IN_FLIGHT_PER_CPU = 2
_CONNECT_SECONDS = 5.0
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


def ray_engine(
    settings: Settings, embedder_name: str, *, address: str | None, note: Callable[[str], None]
) -> RayEngine:
    """The Ray engine of an add; without Ray installed, or with an embedder its workers cannot make (one
    given to the workspace, `embedder_name`, rather than configured), or an address that does not
    answer, the add stops before any database is opened."""
    from haiku_cli.embed import DEFAULT_EMBEDDER_NAME

    require_ray()
    configured = settings.embedder.model or DEFAULT_EMBEDDER_NAME
    if embedder_name != configured:
        raise InputError(
            f"--engine ray embeds with the configured embedder ({configured}), not {embedder_name}"
        )
    engine = RayEngine(settings.ray, settings.embedder, address=address, note=note)
    engine.check_address()
    return engine


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

    @property
    def fragments(self) -> bool:
        """Whether new documents' chunks are written by the workers as fragments (`[ray] fragments`)."""
        return self.settings.fragments

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
        fetched: dict[Any, Any] | None = None,
    ) -> AsyncIterator[ClusterWork]:
        """Connect to the cluster and yield the items prepared by it, in order; on exit (Ctrl-C or a
        failure too) cancel what is still running and wait for it to end, and leave a cluster this add
        started. `known`: the content hash stored under each uri; `target`: where fragments go;
        `fetched`: URLs a sync downloaded already (to compare them), sent to the worker that reads them."""
        import ray

        self._join()
        hooks = os.environ.get(_DIE_ONCE), os.environ.get("HAIKU_TEST_PAUSE")
        job = Job(
            limits, objects, self.embedder, title, *hooks, target, metadata, bool(title or metadata), moved
        )
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        pool = Pool(ray.put(job), cpus, self.settings.max_retries)
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
        """Whether sources listed over the network (object-storage prefixes) are listed by a task on the
        cluster: only one running already (an address given, or joined by this process), never one
        started just to list (a small add would then wait for a cluster it does not use)."""
        import sys

        if self.address or os.environ.get("RAY_ADDRESS"):
            return True
        ray = sys.modules.get("ray")  # not imported for this: an add that stays here never pays for it
        return ray is not None and ray.is_initialized()

    async def listing(self, kind: Kind, source: str, request: ListRequest) -> Contents:
        """What a source holds; a kind listed over the network is listed in a task on a cluster already
        running (near the bucket: a listing is one request per 1,000 keys, each a round trip from
        wherever it runs), any other here."""
        import asyncio

        if not (kind.listed_remotely and self.lists_on_cluster()):
            return await anyio.to_thread.run_sync(kind.contents, source, request)
        import ray

        self._join()
        task = ray.remote(max_retries=self.settings.max_retries, retry_exceptions=False)(list_contents)
        try:
            return await asyncio.wrap_future(task.remote(kind, source, request).future())
        except ray.exceptions.RayError as exc:
            if isinstance(cause := getattr(exc, "cause", None), HaikuError):
                raise cause from None  # the listing's own error (no such prefix), reported as locally
            reason = exception_reason(exc, upto="line")
            raise ModelError(f"the Ray cluster failed to list {source}: {reason}") from None

    async def write(
        self,
        ingestor: Ingestor,
        items: Sequence[tuple[int, Item]],
        *,
        title: str | None,
        metadata: dict[str, Any],
        reading: Reading,
        fetched: dict[Any, Any] | None = None,
    ) -> dict[int, Seen]:
        """Have the cluster read, chunk and embed the items, and store them (inside the caller's write): the
        documents and updates written here, new documents' chunks committed as the workers' fragments.

        The cluster's work is entered inside the write, so that a failure ends every task (and what they
        wrote) before the write is undone. A sync's documents that may have moved (`moved_from`) come back
        with their chunks, for the writer to keep their ids; `fetched`: URLs a sync downloaded already (it
        asked whether they changed), which the workers are sent rather than download again.
        """
        from haiku_cli.store.fragments import commit_fragments, fragment_target
        from haiku_cli.store.reads import stored_hashes
        from haiku_cli.store.transaction import storage_errors

        db = ingestor.db
        seen: dict[int, Seen] = {}
        # A stored document's hash: a worker neither embeds one it finds unchanged nor writes its chunks.
        known = await stored_hashes(db)
        target = await anyio.to_thread.run_sync(fragment_target, db) if self.settings.fragments else None
        ingestor.keep_points = target is None  # documents written are whole only once the fragments are in
        ingestor.held.bound(reading.limits.commit_chunks, reading.limits.commit_seconds)
        ingestor.progress.add_files(len(items))
        running = self.running(
            items,
            title=title,
            limits=reading.limits,
            objects=reading.objects,
            known=known,
            metadata=metadata,
            target=target,
            moved=frozenset(ingestor.moved_from),
            fetched=fetched,
        )
        async with running as work:
            async with ingestor.pipelined():
                await _add_prepared(ingestor, work.prepared, title=title, metadata=metadata, seen=seen)
            if target is not None:
                # Chunks of documents not stored after all (a source given twice) are deleted in the same
                # write.
                dropped = sorted(work.documents - ingestor.in_fragments)
                with storage_errors(db, "cannot be written"):
                    await anyio.to_thread.run_sync(commit_fragments, db, work.fragments, dropped)
        return seen

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
            reason = exception_reason(exc, upto="line")
            raise InputError(f"the Ray cluster {where} cannot be reached: {reason}") from None
        except Exception as exc:  # Ray's own `Exception` or `TimeoutError`: a cluster that did not start
            reason = exception_reason(exc, upto="line")
            if self.address:
                raise InputError(f"the Ray cluster at {self.address} cannot be reached: {reason}") from None
            raise ModelError(
                f"a local Ray cluster did not start: {reason}; start one yourself (ray start "
                "--head) and name it with --ray-address, or add without --engine ray"
            ) from None
        finally:
            ray_logs.setLevel(level)
        return True


async def _results(
    items: Sequence[tuple[int, Item]],
    known: dict[str, str],
    fetched: dict[Any, Any],
    pool: Pool,
    work: ClusterWork,
) -> AsyncIterator[Prepared]:
    """The items as the pool's actors prepare them, in order; the fragments they write go to `work`."""
    import asyncio

    import ray

    batches = _batches(items)
    parts = _parts_known(known)

    def send_next(slot: int) -> bool:
        batch = next(batches, None)
        if batch is not None:
            urls = {item: fetched[item] for _, item in batch if item in fetched}
            pool.send(slot, batch, _known_of(batch, known, parts), urls)
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
            reason = exception_reason(exc, upto="line")
            raise ModelError(f"the Ray cluster failed to prepare the items: {reason}") from None
        pool.pending.popleft()
        prepared, fragments, written = done
        work.fragments.extend(fragments)
        pool.took(call, bool(fragments), written)
        if call.batch is None or call.redo is not None:
            continue  # a finish, or rows made again, whose items were handed on before
        if sending and not (sending := send_next(call.slot)):
            pool.finish_all()
        documents = (one for p in prepared for one in (p, *p.parts))
        work.documents.update(d.document_id for d in documents if d.document_id is not None)
        for one in prepared:
            yield one
    pool.stop()  # every row is written: the actors' CPUs are free for other work while this one commits


async def _add_prepared(
    ingestor: Ingestor,
    prepared: AsyncIterator[Prepared],
    *,
    title: str | None,
    metadata: dict[str, Any],
    seen: dict[int, Seen],
) -> None:
    """Queue items the cluster read, chunked and embedded, in order, as the in-process engine does."""
    async for item in prepared:
        ingestor.position = item.position
        ingestor.progress.reading(item.label)
        try:
            if item.error is not None:
                raise item.error
            assert item.document is not None and item.seen is not None  # a worker sends either or an error
            seen[item.position] = item.seen
            await ingestor.add(
                item.document, source=item.label, title=title, metadata=metadata, prepared=item
            )
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise
            ingestor.fail(item.label, str(exc))
        finally:
            ingestor.progress.file_done()


async def _nothing() -> AsyncIterator[Prepared]:
    return
    yield


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


def _known_of(
    batch: list[tuple[int, Item]], known: dict[str, str], parts: dict[str, dict[str, str]]
) -> dict[str, str]:
    """The stored content hashes of the uris a task's items will have, and of the documents stored as
    read out of them (a task is sent only its own)."""
    found: dict[str, str] = {}
    for uri in (item_kind(item).uri(item) for _, item in batch):
        if uri in known:
            found[uri] = known[uri]
        found.update(parts.get(uri, {}))
    return found


def _parts_known(known: dict[str, str]) -> dict[str, dict[str, str]]:
    """The stored content hashes of documents read out of another (`<uri>#attachment/...`), under each
    uri before a `#` of theirs (the one they were read out of may have a `#` of its own)."""
    parts: dict[str, dict[str, str]] = {}
    for uri, digest in known.items():
        at = uri.find("#")
        while at != -1:
            parts.setdefault(uri[:at], {})[uri] = digest
            at = uri.find("#", at + 1)
    return parts


def _size(item: Item) -> int:
    """An item's bytes as listed (a URL's are not known until it is fetched: 0)."""
    return item_kind(item).size(item)

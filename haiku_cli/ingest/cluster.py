"""`add-src --engine ray`: items are read, chunked and embedded as Ray tasks; this process writes them.

The driver lists the sources (their sizes decide whether a cluster is worth starting), sends the items
to the cluster a few per task, and hands back what the tasks return, in the order of the items, to the
Ingestor a local add uses: one all-or-nothing write under the database's writer lock and journal, its
indexes brought up to date as after any add. Workers never touch the database (docs/scale-out.md).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import HaikuError, InputError, ModelError
from haiku_cli.ingest.objects import ObjectFile
from haiku_cli.ingest.pipeline import Item, Prepared, item_label, read_item
from haiku_cli.ingest.sources import TextFile

if TYPE_CHECKING:
    from haiku_cli.config.settings import EmbedderSettings, IngestSettings, RaySettings
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.objects import ObjectStores

RAY_EXTRA = "pip install 'haiku-cli[ray]'"
# A task takes up to this many items or bytes: enough to make Ray's per-task cost (milliseconds) small
# beside the embedding (about 35 chunks/s per worker CPU), few enough to spread a folder over a cluster.
_TASK_ITEMS = 16
_TASK_BYTES = 1 << 20
# Tasks in flight per cluster CPU: one running, one waiting, so no worker idles while memory stays bounded.
_IN_FLIGHT_PER_CPU = 2
_CONNECT_SECONDS = 5.0
# A test hook: a file path; the first task to find it missing creates it and kills its own worker process.
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
    ) -> AsyncIterator[AsyncIterator[Prepared]]:
        """Connect to the cluster and yield the items prepared by it, in order; on exit (Ctrl-C or a
        failure too) cancel what is still running, and leave a cluster this add started."""
        import ray

        started = self._connect()  # on this thread: Ray sets its signal handlers on the main one
        hooks = os.environ.get(_DIE_ONCE), os.environ.get("HAIKU_TEST_PAUSE")
        job = _Job(limits, objects, self.embedder, title, *hooks)
        pending: deque[Any] = deque()
        try:
            yield self._results(items, job, known, pending)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True, recursive=True)
            if started:
                ray.shutdown()

    def _connect(self) -> bool:
        """Join the cluster (one already joined by this process is used as it is); whether this started it."""
        import ray

        if ray.is_initialized():
            return False
        ray_logs = logging.getLogger("ray")
        level = ray_logs.level
        try:
            # Starting a cluster forks its processes, which exec at once: LanceDB's warning about forks
            # does not apply; nor do Ray's notes on a new local cluster (its token, its dashboard).
            ray_logs.setLevel(logging.ERROR)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "lancedb fork support", RuntimeWarning)
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
        self, items: Sequence[tuple[int, Item]], job: _Job, known: dict[str, str], pending: deque[Any]
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
                raise ModelError(f"the Ray cluster failed to prepare the items: {_first_line(exc)}") from None
            pending.popleft()
            following = next(batches, None)
            if following is not None:
                pending.append(task.remote(following, job_ref, _known_of(following, known)))
            for prepared in done:
                yield prepared


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


def _prepare(batch: list[tuple[int, Item]], job: _Job, known: dict[str, str]) -> list[Prepared]:
    """A Ray task: read, chunk and embed a few items (each one's input error is returned, not raised).

    `known`: the content hash stored under an item's uri; a document that has it is not chunked or
    embedded (the writer finds it unchanged).
    """
    import anyio

    from haiku_cli.ingest.chunking import chunk_document
    from haiku_cli.ingest.embedding import embedding_text
    from haiku_cli.ingest.stored import content_hash, stored_content
    from haiku_cli.store.writer import checkpoint

    if job.die_once and not os.path.exists(job.die_once):
        Path(job.die_once).touch()
        os._exit(1)  # as a worker that dies would: Ray runs the task again elsewhere
    if job.pause:
        checkpoint("ray-task", job.pause)
    embedder = _worker_embedder(job.embedder)
    out: list[Prepared] = []
    for position, item in batch:
        label = item_label(item)
        try:
            seen, doc = read_item(item, job.limits, job.objects)
            digest = content_hash(stored_content(doc), [p.data for p in doc.pictures])
            if known.get(doc.uri) == digest:  # stored already: the writer finds it unchanged
                out.append(Prepared(position, label, seen, doc))
                continue
            chunks = chunk_document(doc, embedder.count_tokens, max_tokens=embedder.max_tokens)
            title = job.title or doc.title
            texts = [embedding_text(title, c) for c in chunks]
            vectors = anyio.run(embedder.embed_documents, texts) if texts else None
            out.append(Prepared(position, label, seen, doc, chunks, vectors, title))
        except HaikuError as exc:
            out.append(Prepared(position, label, error=exc))
    return out


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

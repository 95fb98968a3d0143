"""A workspace: the loaded settings, the pool of open databases and the configured embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from haiku_cli.config.loader import load_settings
from haiku_cli.config.settings import Settings
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import (
    Selection,
    configured,
    lookup,
    searchable,
    select_many,
    select_one,
)
from haiku_cli.store.database import EmbedderSpec
from haiku_cli.store.location import Location
from haiku_cli.store.wait_policy import WaitPolicy

if TYPE_CHECKING:
    import numpy as np

    from haiku_cli.embed import Embedder


class Workspace:
    """Everything a command needs besides its arguments; one per process (or per host program)."""

    def __init__(
        self,
        settings: Settings,
        config_file: Path | None = None,
        *,
        embedder: Embedder | None = None,
        on_write_wait: Callable[[str], None] | None = None,
        on_write_waited: Callable[[], None] | None = None,
        on_write_note: Callable[[str], None] | None = None,
    ) -> None:
        """A workspace over `settings`; `embedder` replaces the configured one (tests, host programs).

        A second writer to a database waits for the first as configured, telling `on_write_wait` why
        (once per wait) and `on_write_waited` when the wait is over; `on_write_note` is told when a writer
        takes over the lease of one presumed dead.
        """
        self.settings = settings
        self.config_file = config_file
        storage = settings.storage
        self.pool = DatabasePool(
            WaitPolicy(
                storage.write_wait_seconds,
                on_write_wait,
                storage.lease_seconds,
                on_write_waited,
                note=on_write_note,
            ),
            storage.timeout_seconds,
            max_open=settings.server.max_open_databases,
        )
        self._embedder = embedder
        # `--check-remote`: hits and documents of URLs and objects are asked whether they changed (one
        # request each, bounded by [storage] timeout_seconds); only local files are looked at otherwise.
        self.check_remote = False
        # `haiku mcp`/`serve --sync-before-search`: each search of a server first syncs the remembered
        # sources whose files changed (databases/refreshing.py); the operator's choice, never a client's.
        self.sync_before_search = False

    def read_at(self, tag: str | None) -> None:
        """Read every database at this tag from now on (`--at`; None: at their latest), writing none."""
        if tag is not None:
            from haiku_cli.store.tags import check_name

            check_name(tag)
        self.pool.at = tag

    def derived(self, settings: Settings) -> Workspace:
        """A workspace over other settings (the same config file), sharing this one's embedder, with a pool
        of its own: what `haiku eval --compare` runs each setting in."""
        return Workspace(settings, self.config_file, embedder=self.embedder)

    @classmethod
    def load(
        cls,
        config: Path | None = None,
        *,
        embedder: Embedder | None = None,
        on_write_wait: Callable[[str], None] | None = None,
        on_write_waited: Callable[[], None] | None = None,
        on_write_note: Callable[[str], None] | None = None,
    ) -> Workspace:
        """Read the config (`--config` > `HAIKU_CONFIG` > user config dir) into a workspace."""
        settings, path = load_settings(config)
        return cls(
            settings,
            path,
            embedder=embedder,
            on_write_wait=on_write_wait,
            on_write_waited=on_write_waited,
            on_write_note=on_write_note,
        )

    @property
    def embedder(self) -> Embedder:
        """The embedder: the injected one, else the configured one loaded on first use."""
        if self._embedder is None:
            from haiku_cli.embed import load_embedder

            cfg = self.settings.embedder
            self._embedder = load_embedder(cfg.model, base_url=cfg.base_url, timeout=cfg.timeout_seconds)
        return self._embedder

    def embedder_spec(self) -> EmbedderSpec:
        """Name and dimension of the configured embedder, as stored in databases (from sync code only)."""
        return EmbedderSpec(self.embedder.name, self.embedder.dimension)

    async def resolve_embedder_spec(self) -> EmbedderSpec:
        """`embedder_spec` for async code: a remote model's dimension is probed without blocking the loop."""
        dimension = await self.embedder.resolve_dimension()
        return EmbedderSpec(self.embedder.name, dimension)

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query with the configured embedder."""
        return await self.embedder.embed_query(text)

    @cached_property
    def locations(self) -> dict[str, Location]:
        """The configured databases by name (the one `default` database when none are configured)."""
        return configured(self.settings)

    def select_many(self, names: Sequence[str] = (), paths: Sequence[Path] = ()) -> Selection:
        """The set for search, ask and analyze."""
        return select_many(self.locations, names, paths)

    def select_one(self, names: Sequence[str] = (), paths: Sequence[Path] = ()) -> Location:
        """The single database of every other command."""
        return select_one(self.locations, names, paths)

    def lookup(self, name: str) -> Location:
        """A configured database by name, or an error listing the configured ones."""
        return lookup(self.locations, name)

    async def check_served(self, selection: Selection) -> tuple[Selection, list[str]]:
        """What a server (`haiku mcp`, `haiku serve`) checks before it takes requests: the part of the
        selection written so far, and the local databases nothing was added to yet.

        Every database that cannot be read fails here, naming it; none is opened that can be looked at
        on this machine (requests open them). With nothing written at all, that is the failure.
        """
        written, not_created = searchable(selection)
        await self.pool.check(written)
        return written, not_created

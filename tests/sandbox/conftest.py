"""A small real corpus for the sandbox tests: three databases built once per module with the real embedder.

`gamma` is a byte-for-byte copy of `alpha`, so the two hold the same document and chunk ids.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from haiku_cli.config.settings import SandboxSettings, Settings
from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.sandbox.corpus import open_corpus_sandbox
from haiku_cli.sandbox.runner import Sandbox
from haiku_cli.store.location import Location
from tests.support.pictures import png

ALPHA = [
    {
        "title": "Cats",
        "text": "The cat sat on the mat. Cats purr when they are happy.",
        "metadata": {"kind": "pet"},
    },
    {"title": "Dogs", "text": "Dogs bark at night. A dog is loyal.", "metadata": {"kind": "pet"}},
    {"title": "Lions", "text": "A lion is a big cat. Lions live in prides.", "metadata": {"kind": "wild"}},
]
BETA = [
    {
        "title": "Sparrows",
        "text": "Sparrows sing in the morning. The secret word is heliotrope.",
        "metadata": {},
    },
    {"title": "Owls", "text": "Owls hunt at night and sleep by day.", "metadata": {}},
]


@pytest.fixture
def anyio_backend() -> str:
    """monty's async pool needs asyncio."""
    return "asyncio"


@dataclass
class Corpus:
    """The test databases and their document ids."""

    locations: dict[str, Location]
    ids: dict[str, list[str]]
    embedder: Any

    def workspace(self, **sandbox: Any) -> Workspace:
        """A workspace with the given sandbox limits, sharing the session's embedder."""
        return Workspace(Settings(sandbox=SandboxSettings(**sandbox)), embedder=self.embedder)

    def selection(self, *names: str) -> Selection:
        """The named databases, in order."""
        return Selection(tuple(self.locations[n] for n in names))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder) -> Corpus:
    """alpha (3 pets), beta (2 birds), gamma (a copy of alpha) and figures (a document with a picture)."""
    root: Path = tmp_path_factory.mktemp("corpus")
    ws = Workspace(Settings(), embedder=embedder)
    locations = {name: Location(name, str(root / f"{name}.lancedb")) for name in ("alpha", "beta")}

    async def build() -> dict[str, list[str]]:
        ids: dict[str, list[str]] = {}
        for name, docs in (("alpha", ALPHA), ("beta", BETA)):
            ids[name] = []
            for d in docs:
                report = await operations.add_text(
                    ws, locations[name], d["text"], title=d["title"], metadata=d["metadata"]
                )
                ids[name].append(report.outcomes[0].document_id)
        return ids

    ids = anyio.run(build)
    figures = root / "figures-src"
    figures.mkdir()
    (figures / "chart.md").write_text("# Chart\n\nRevenue by quarter.\n\n![Revenue bars](chart.png)\n")
    (figures / "chart.png").write_bytes(png(64, 48))
    locations["figures"] = Location("figures", str(root / "figures.lancedb"))
    added = anyio.run(
        lambda: operations.add_sources(ws, locations["figures"], [str(figures)], title=None, metadata={})
    )
    ids["figures"] = [o.document_id for o in added.outcomes if o.document_id]
    shutil.copytree(root / "alpha.lancedb", root / "gamma.lancedb")
    locations["gamma"] = Location("gamma", str(root / "gamma.lancedb"))
    ids["gamma"] = list(ids["alpha"])
    return Corpus(locations, ids, embedder)


SandboxFactory = Callable[..., Any]


@pytest.fixture
def open_box(corpus: Corpus) -> SandboxFactory:
    """`async with open_box("alpha", timeout_seconds=1) as box:` — a corpus sandbox over named databases."""

    @asynccontextmanager
    async def open_(*names: str, document_filter: str | None = None, **limits: Any) -> AsyncIterator[Sandbox]:
        ws = corpus.workspace(**limits)
        async with open_corpus_sandbox(ws, corpus.selection(*names), document_filter=document_filter) as box:
            yield box

    return open_

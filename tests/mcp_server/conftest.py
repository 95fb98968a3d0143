"""Real databases for the MCP server tests: `alpha` and `beta` served, `gamma` configured but out of scope."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from haiku_cli.config.settings import Settings
from haiku_cli.databases.workspace import Workspace
from haiku_cli.mcp_server.tools import ServerScope
from haiku_cli.store.location import Location
from tests.conftest import fill

CORPUS = {
    "alpha": [
        {
            "text": "The moon's gravity raises two tidal bulges, so most coasts see two high tides a day.",
            "title": "Tides",
            "metadata": {"topic": "sea"},
        },
        {"text": "Ocean currents carry warm water from the tropics toward the poles.", "title": "Currents"},
    ],
    "beta": [
        {
            "text": "Tide pools are rocky hollows the retreating tide leaves full of sea water and life.",
            "title": "Tide pools",
            "metadata": {"topic": "sea"},
        },
        {
            "text": "Volcanoes erupt molten rock, which is called lava once it reaches the surface.",
            "title": "Volcanoes",
        },
    ],
    # Configured, matching the same queries, but never in the served selection.
    "gamma": [{"text": "Secret gamma notes on spring tides and neap tides.", "title": "Gamma tides"}],
}
SERVED = ("alpha", "beta")
START_TIMEOUT = 120  # seconds; a cold start imports lancedb and pydantic-ai on a shared machine


@pytest.fixture(scope="package")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """Three real databases built once for the package, and a config naming all of them."""
    root = tmp_path_factory.mktemp("mcp")
    ws = Workspace(Settings(), embedder=embedder)
    lines = ["[databases]"]
    for name, docs in CORPUS.items():
        path = root / f"{name}.lancedb"
        fill(ws, Location(name, str(path)), docs)
        lines.append(f'{name} = "{path}"')
    (root / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def scope(corpus: Path, embedder) -> Callable[..., ServerScope]:
    """A server scope over the corpus: `alpha` and `beta` unless told otherwise."""

    def make(names: tuple[str, ...] = SERVED, model: str | None = None) -> ServerScope:
        ws = Workspace.load(corpus / "config.toml", embedder=embedder)
        return ServerScope(ws, ws.select_many(list(names)), model)

    return make


def haiku_command() -> list[str]:
    """The installed `haiku` next to this interpreter, else the module."""
    exe = Path(sys.executable).with_name("haiku")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "haiku_cli"]


def server_env(corpus: Path, **extra: str) -> dict[str, str]:
    """The environment of a spawned server: the corpus config, and no model unless given."""
    # The session's cache folder is kept: no server under test writes to the user's cache.
    kept = ("HAIKU_CACHE_DIR",)
    env = {k: v for k, v in os.environ.items() if k in kept or not k.startswith(("HAIKU_", "OPENAI_"))}
    env.update(HAIKU_CONFIG=str(corpus / "config.toml"), HAIKU_DATA_DIR=str(corpus / "data"), **extra)
    return env


@contextmanager
def serving_http(corpus: Path, host: str = "127.0.0.1", **env: str) -> Iterator[str]:
    """`haiku mcp --http` on a free port of `host`, serving alpha and beta; yields the URL it printed."""
    log = corpus / "http-server.log"
    proc = subprocess.Popen(
        [*haiku_command(), "mcp", "--http", "--host", host, "--port", "0", "-d", "alpha", "-d", "beta"],
        env=server_env(corpus, **env),
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    try:
        url = first_line[0].strip() if first_line else ""
        if not (url.startswith("http://127.0.0.1:") and url.endswith("/mcp")):
            pytest.fail(f"no URL from haiku mcp --http: {url!r} {log.read_text()}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="package")
def http_url(corpus: Path) -> Iterator[str]:
    """The HTTP server of `serving_http`, shared by the package's tests."""
    with serving_http(corpus) as url:
        yield url

"""Shared fixtures: an isolated config and data dir per test, real databases built with the real embedder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store.location import Location

_ENV_KEYS = (
    "HAIKU_CONFIG",
    "HAIKU_CONFIG_DIR",
    "HAIKU_DATA_DIR",
    "HAIKU_CACHE_DIR",
    "HAIKU_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "NO_COLOR",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files holding slow (end-to-end) tests first, each file's tests together and in their order: the
    workers take the work as it comes, so the quick files left at the end even them out, rather than
    one worker idling while the other runs a long test last."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture(scope="session")
def embedder():
    """The real default embedder, loaded once per test session."""
    from haiku_cli.embed import load_embedder

    return load_embedder()


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the session's haiku processes, so none writes to the user's real cache."""
    return tmp_path_factory.mktemp("haiku-cache")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_cache: Path) -> Path:
    """Every test gets its own config file path and data dir; the user's real ones are never read."""
    for key in _ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    # An empty file: a config file named by HAIKU_CONFIG must exist, and empty means the defaults.
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("HAIKU_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("HAIKU_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HAIKU_CACHE_DIR", str(session_cache))
    monkeypatch.setenv("COLUMNS", "200")
    # No read command starts a background daemon unless a test of it asks (tests/cli/test_daemon_auto.py).
    monkeypatch.setenv("HAIKU_NO_DAEMON", "1")
    return tmp_path


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    """Write the test's config file."""

    def write(text: str) -> Path:
        path = tmp_path / "config.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def workspace(embedder) -> Callable[[], Workspace]:
    """A workspace over the test's config, sharing the session's embedder."""

    def make() -> Workspace:
        return Workspace.load(embedder=embedder)

    return make


Doc = str | dict


def fill(ws: Workspace, location: Location, docs: Sequence[Doc]) -> list[str]:
    """Add texts (or dicts with text/title/metadata) to a database; returns their document ids."""

    async def go() -> list[str]:
        ids = []
        for d in docs:
            d = {"text": d} if isinstance(d, str) else d
            report = await operations.add_text(
                ws, location, d["text"], title=d.get("title"), metadata=d.get("metadata", {})
            )
            ids.append(report.outcomes[0].document_id)
        return ids

    return anyio.run(go)


@pytest.fixture
def make_db(tmp_path: Path, workspace) -> Callable[..., tuple[Location, list[str]]]:
    """Create a real local database at tmp/NAME.lancedb holding the given documents."""

    def make(name: str, docs: Sequence[Doc]) -> tuple[Location, list[str]]:
        location = Location(name, str(tmp_path / f"{name}.lancedb"))
        return location, fill(workspace(), location, docs)

    return make


@pytest.fixture
def cli() -> Callable[..., object]:
    """Invoke the typer app in-process; stdout and stderr are kept apart."""
    from haiku_cli.cli.app import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A real S3-compatible server (moto) on 127.0.0.1 with a bucket `lab`; yields its endpoint URL."""
    from haiku_cli.store.database import quiet_lance_logs

    quiet_lance_logs()
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    # Credentials come from the environment, as they would for a user; never from the config file.
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lab")
    yield endpoint
    server.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v

"""Faults of the servers and systems haiku depends on, seen from the command line: each one ends the
command in bounded time, with one line naming what failed and the documented exit code."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from haiku_cli.errors import ExitCode
from tests.support.hash_embedder import serve_embeddings, serve_hash_embedder
from tests.support.permissions import without_root_powers
from tests.support.silent_server import silent_server


@pytest.fixture
def embedder_at(write_config, tmp_path: Path) -> Callable[[str], None]:
    """Configure database `notes` and the `ollama:hash` embedder served at the given URL."""

    def configure(url: str) -> None:
        notes = tmp_path / "notes.lancedb"
        embedder = f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n'
        write_config(f'{embedder}[databases]\nnotes = "{notes}"\n')

    return configure


def test_an_embedder_that_never_answers_ends_add_and_search_within_its_timeout(
    cli, embedder_at, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with serve_hash_embedder() as url:
        embedder_at(url)
        assert cli("add", "Kestrels hover over fields.", "-d", "notes").exit_code == 0
    monkeypatch.setenv("HAIKU_EMBEDDER_TIMEOUT", "0.5")
    with silent_server() as server:
        embedder_at(server.url)
        expected = (
            f"haiku: the embedding model server at {server.url}/ did not answer within 0.5 s for "
            "'ollama:hash'; check the server, or raise [embedder] timeout_seconds (HAIKU_EMBEDDER_TIMEOUT)\n"
        )
        for args in (("add", "Herons wade.", "-d", "notes"), ("search", "kestrels", "-d", "notes")):
            result = cli(*args)
            assert (result.exit_code, result.stderr) == (ExitCode.MODEL, expected), args
    with serve_hash_embedder() as url:  # nothing of the failed add was kept
        embedder_at(url)
        assert cli("list", "-d", "notes", "--json").stdout.count('"title"') == 1


def test_nan_vectors_are_the_embedders_failure_before_anything_is_written(
    cli, embedder_at, tmp_path: Path
) -> None:
    with serve_hash_embedder() as url:
        embedder_at(url)
        assert cli("add", "Kestrels hover over fields.", "-d", "notes").exit_code == 0

    def nan(texts: list[str]) -> np.ndarray:
        return np.full((len(texts), 64), np.nan, dtype=np.float32)

    expected = (
        "haiku: embedding model 'ollama:hash' returned vectors with NaN or infinite values (1 of 1 texts); "
        "check the embedding server\n"
    )
    with serve_embeddings(nan) as url:
        embedder_at(url)
        for args in (("add", "Herons wade.", "-d", "notes"), ("search", "kestrels", "-d", "notes")):
            result = cli(*args)
            assert (result.exit_code, result.stderr) == (ExitCode.MODEL, expected), args
        # A database's first add fails the same way, and leaves no database.
        result = cli("add", "Herons wade.", "--db", str(tmp_path / "fresh.lancedb"))
        assert (result.exit_code, result.stderr) == (ExitCode.MODEL, expected)
    assert not (tmp_path / "fresh.lancedb").exists()
    with serve_hash_embedder() as url:
        embedder_at(url)
        assert cli("list", "-d", "notes", "--json").stdout.count('"title"') == 1


def test_vectors_of_another_size_are_blamed_on_the_embedder_not_the_database(cli, embedder_at) -> None:
    with serve_hash_embedder(64) as url:
        embedder_at(url)
        assert cli("add", "Kestrels hover over fields.", "-d", "notes").exit_code == 0
    with serve_hash_embedder(32) as url:
        embedder_at(url)
        for args in (("add", "Herons wade.", "-d", "notes"), ("search", "kestrels", "-d", "notes")):
            result = cli(*args)
            assert (result.exit_code, result.stderr) == (
                ExitCode.MODEL,
                "haiku: embedding model 'ollama:hash' returned 32-dimensional vectors, but database 'notes' "
                "was written with it at 64; check that its server still serves the model the database was "
                "written with\n",
            ), args


def test_a_database_folder_without_read_permission_is_one_database_line(cli, tmp_path: Path) -> None:
    db = tmp_path / "notes.lancedb"
    assert cli("add", "Kestrels hover over fields.", "--db", str(db)).exit_code == 0
    db.chmod(0)
    try:
        for args in (("search", "kestrels"), ("list",), ("add", "Owls.")):
            run = subprocess.run(
                [*without_root_powers(), sys.executable, "-m", "haiku_cli", *args, "--db", str(db)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert (run.returncode, run.stderr) == (
                ExitCode.DATABASE,
                "haiku: database 'notes' cannot be read: permission denied\n",
            ), args
    finally:
        db.chmod(0o755)

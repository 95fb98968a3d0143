"""A fresh reading command imports only its path: no write-path module and no other command's module.

Each command runs in a fresh interpreter, as `haiku` does, and the haiku modules it loaded are listed after
it answered: what a command imports is what every fresh run of it pays for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from haiku_cli.cli.app import COMMANDS

# Modules of the write path: writing, its lock and journal, index upkeep, ingest, tags.
WRITE_PATH = (
    "haiku_cli.store.writer_lock",
    "haiku_cli.store.document_writes",
    "haiku_cli.store.transaction",
    "haiku_cli.store.journal",
    "haiku_cli.store.adding",
    "haiku_cli.store.maintenance",
    "haiku_cli.store.indexes",
    "haiku_cli.store.vector_segments",
    "haiku_cli.store.tags",
    "haiku_cli.store.command_log",
    # Not store.source_tables: a search reads its hits' remembered file states there (their freshness); its
    # writes load the write path when they run.
    "haiku_cli.databases.operations",
    "haiku_cli.ingest",
)

_LIST_MODULES = """
import json, runpy, sys
sys.argv = ["haiku", *sys.argv[2:]]
try:
    runpy.run_module("haiku_cli", run_name="__main__")
except SystemExit as exit:
    code = exit.code
else:
    code = 0
with open(OUT, "w") as out:
    mine = sorted(m for m in sys.modules if m.startswith(("haiku_cli", "typer._adapters")))
    json.dump({"code": code, "modules": mine}, out)
"""


def _loaded(tmp_path: Path, *args: str) -> list[str]:
    listing = tmp_path / "modules.json"
    env = {**os.environ, "HAIKU_NO_DAEMON": "1"}
    script = _LIST_MODULES.replace("OUT", repr(str(listing)))
    done = subprocess.run(
        [sys.executable, "-c", script, "-", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(listing.read_text(encoding="utf-8"))
    assert found["code"] in (0, None), done.stderr
    return found["modules"]


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("search", ["--type", "fts", "fox"]),
        ("search", ["fox"]),
        ("list", []),
        ("get", ["DOC"]),
        ("info", []),
    ],
)
def test_a_read_command_imports_only_its_path(
    tmp_path: Path, make_db, write_config, command: str, args: list[str]
) -> None:
    location, ids = make_db("notes", ["the quick brown fox jumps over the lazy dog", "lance stores vectors"])
    write_config(f'[databases]\nnotes = "{location.uri}"\n')
    args = [ids[0] if a == "DOC" else a for a in args]
    loaded = _loaded(tmp_path, command, *args)

    assert f"haiku_cli.cli.{COMMANDS[command]}" in loaded  # the command did run
    writing = [m for m in loaded if any(m == w or m.startswith(w + ".") for w in WRITE_PATH)]
    assert writing == [], f"`haiku {command}` imported the write path"
    others = {f"haiku_cli.cli.{m}" for m in COMMANDS.values()} - {f"haiku_cli.cli.{COMMANDS[command]}"}
    assert sorted(others & set(loaded)) == [], f"`haiku {command}` imported other commands' modules"
    # Its options' values taken as given (cli/coercion.py): no pydantic schema built for them.
    assert "typer._adapters" not in loaded

"""The installed `haiku` command in a subprocess: startup, pipes, kills."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _haiku() -> list[str]:
    exe = shutil.which("haiku")
    return [exe] if exe else [sys.executable, "-m", "haiku_cli"]


def _run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*_haiku(), *args], capture_output=True, text=True, env=os.environ.copy(), **kw)


def test_help_and_version() -> None:
    assert _run("--help").returncode == 0
    assert _run("--version").stdout.startswith("haiku ")


def test_piped_output_is_plain_and_errors_have_no_traceback(tmp_path: Path) -> None:
    doc = tmp_path / "a.md"
    doc.write_text("# Tides\n\nThe moon's gravity raises two tidal bulges.\n")
    added = _run("add-src", str(doc))
    assert added.returncode == 0, added.stderr
    found = _run("search", "moon tides")
    assert "Tides" in found.stdout and "\x1b[" not in found.stdout  # no colour codes in a pipe
    bad = _run("search", "x", "--filter", "(((")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and bad.stderr.startswith("haiku: ")


def test_notes_on_stderr_are_whole_lines_in_a_pipe(tmp_path: Path) -> None:
    # A log of stderr is grepped line by line: a note is not cut at the 80 columns rich assumes in a pipe.
    config = tmp_path / "two.toml"
    config.write_text(
        f'[databases]\nnotes = "{tmp_path}/n.lancedb"\nnot_yet_written_papers = "{tmp_path}/p.lancedb"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"HAIKU_CONFIG": str(config)}
    run = partial(subprocess.run, capture_output=True, text=True, env=env)
    assert run([*_haiku(), "add", "moon tides", "-d", "notes"]).returncode == 0
    found = run([*_haiku(), "search", "tides"])
    assert found.returncode == 0 and found.stderr == (
        "(database 'not_yet_written_papers' is not created yet: nothing added to it; searched the others)\n"
    )


def test_python_dash_m_works() -> None:
    result = subprocess.run([sys.executable, "-m", "haiku_cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("haiku ")


def test_kill_during_ingest_leaves_a_usable_database(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    # 600 one-chunk documents, two batches of embedding, committed as one group: the kill lands once the
    # group's rows are in the tables and the add's journal still names the versions from before it.
    for i in range(600):
        (folder / f"doc{i:04}.md").write_text(f"# Document {i}\n\nRivers carry sediment to delta {i}.\n")
    db = tmp_path / "k.lancedb"
    assert _run("add", "Kept from before.", "--db", str(db)).returncode == 0
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "HAIKU_TEST_PAUSE": f"data-written:{gate}"}
    proc = subprocess.Popen([*_haiku(), "add-src", str(folder), "--db", str(db)], env=env)
    deadline = time.time() + 240
    while time.time() < deadline and not any(gate.glob("*.reached")):
        time.sleep(0.2)
    assert any(gate.glob("*.reached")), "the add did not reach its commit"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Readers see the database as it was; the next writer undoes the half-done add.
    for _ in range(2):
        listed = _run("list", "--db", str(db), "--json", "--limit", "10000")
        assert listed.returncode == 0, listed.stderr
        assert [d["title"] for d in json.loads(listed.stdout)["documents"]] == ["Kept from before."]
        info = json.loads(_run("info", "--db", str(db), "--json").stdout)
        assert (info["documents"], info["chunks"]) == (1, 1)
    # The next add (one text: what matters is that it writes, not what) finds nothing of the killed one.
    again = _run("add", "Added after the kill.", "--db", str(db), "--json")
    assert again.returncode == 0, again.stderr
    listed = json.loads(_run("list", "--db", str(db), "--json", "--limit", "10000").stdout)
    assert [d["title"] for d in listed["documents"]] == ["Kept from before.", "Added after the kill."]
    info = json.loads(_run("info", "--db", str(db), "--json").stdout)
    assert (info["documents"], info["chunks"]) == (2, 2)

"""Two `haiku` writer commands on one database: the second waits, or fails naming the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.store.test_writer_lock import _wait_for
from tests.support.children import ctrl_c_preexec, reaped

pytestmark = pytest.mark.slow


def test_second_add_fails_at_once_naming_the_first_when_told_not_to_wait(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "notes.lancedb"
    assert cli("add", "Kestrels hover over fields.", "--db", str(db)).exit_code == 0
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "HAIKU_TEST_PAUSE": f"data-written:{gate}"}
    first = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "add", "Owls hunt at night.", "--db", str(db)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    with reaped(first):
        _wait_for(lambda: any(gate.glob("*.reached")), "the first add to pause")
        monkeypatch.setenv("HAIKU_WRITE_WAIT", "0")
        second = cli("add", "Swifts sleep on the wing.", "--db", str(db))
        assert second.exit_code == ExitCode.DATABASE
        assert second.stderr.startswith(f"haiku: database 'notes' is being written by pid {first.pid} on ")
        assert len(second.stderr.splitlines()) == 1
        (gate / "data-written.go").touch()
        assert first.wait(60) == 0, first.stderr.read()
    monkeypatch.delenv("HAIKU_WRITE_WAIT")
    listed = json.loads(cli("list", "--db", str(db), "--json").stdout)
    assert len(listed["documents"]) == 2


def test_ctrl_c_during_an_add_keeps_what_was_written_and_a_rerun_finds_it_unchanged(
    cli, tmp_path: Path
) -> None:
    import signal

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nKestrel number {i} hovers over the field.\n")
    db = tmp_path / "notes.lancedb"
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "HAIKU_TEST_PAUSE": f"data-written:{gate}"}
    add = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "add-src", str(folder), "--db", str(db)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_preexec(),
    )
    with reaped(add):
        _wait_for(lambda: any(gate.glob("*.reached")), "the add to write its batch")
        add.send_signal(signal.SIGINT)  # Ctrl-C while the batch is being committed
        (gate / "data-written.go").touch()
        assert add.wait(60) == ExitCode.INTERRUPTED
        assert add.stderr.read().splitlines()[-1] == (
            "haiku: interrupted: kept 3 documents (3 chunks); run the same add-src to add the rest"
        )
    again = json.loads(cli("add-src", str(folder), "--db", str(db), "--json").stdout)
    assert [o["status"] for o in again["outcomes"]] == ["unchanged"] * 3

"""Ctrl-C during a write command, in a real `haiku` process: the line says what stands, and the database
holds exactly that."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.support.children import ctrl_c_preexec, reaped

pytestmark = pytest.mark.slow

_KEPT = re.compile(r"kept ([\d,]+) documents? \(([\d,]+) chunks?\)")
_LONG = 16  # chunks of the long document


def _haiku(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "haiku_cli", *args], capture_output=True, text=True, **kw)


def _interrupted(args: list[str], point: str, gate: Path) -> tuple[int, str]:
    """Run `haiku ARGS` until it reaches checkpoint `point`, send it SIGINT there and let it go on: its
    exit code and stderr."""
    gate.mkdir()
    env = {**os.environ, "HAIKU_TEST_PAUSE": f"{point}:{gate}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_preexec(),
    )
    with reaped(proc):
        deadline = time.monotonic() + 240
        while not any(gate.glob(f"{point}.*.reached")):
            assert proc.poll() is None, f"haiku ended before {point}"
            assert time.monotonic() < deadline, f"haiku never reached {point}"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _delivered(proc.pid, signal.SIGINT, deadline)
        (gate / f"{point}.go").touch()
        _, err = proc.communicate(timeout=240)
        return proc.returncode, err


def _delivered(pid: int, signum: int, deadline: float) -> None:
    """Wait until the signal is no longer pending: the process took it (its handler wakes the loop)."""
    bit = 1 << (signum - 1)
    while True:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        if not any(int(fields[k], 16) & bit for k in ("SigPnd", "ShdPnd")):
            return
        assert time.monotonic() < deadline, "the signal was never taken"
        time.sleep(0.01)


def _folder(tmp_path: Path) -> Path:
    """500 one-chunk documents, one of 16 chunks that the first batch of 512 cuts, then 10 more."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(500):
        (folder / f"a{i:03}.md").write_text(f"# Note {i}\n\nRivers carry sediment to delta {i}.\n")
    words = [
        "river",
        "delta",
        "sediment",
        "carries",
        "silt",
        "downstream",
        "across",
        "the",
        "floodplain",
        "where",
        "herons",
        "wade",
    ]
    paragraphs = [
        " ".join(f"{words[(i * 7 + p) % len(words)]}{i % 13}" for i in range(170)) for p in range(8)
    ]
    (folder / "b-long.md").write_text("# Long\n\n" + ".\n\n".join(paragraphs) + ".\n")
    for i in range(10):
        (folder / f"c{i:02}.md").write_text(f"# Late {i}\n\nHerons wade at dusk {i}.\n")
    return folder


def _stored(db: Path) -> tuple[list[str], int]:
    listed = _haiku("list", "--db", str(db), "--json", "--limit", "10000")
    assert listed.returncode == 0, listed.stderr
    info = json.loads(_haiku("info", "--db", str(db), "--json").stdout)
    return [d["title"] for d in json.loads(listed.stdout)["documents"]], info["chunks"]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_an_interrupted_add_keeps_the_whole_documents_it_committed_and_says_so(
    write_config, tmp_path: Path
) -> None:
    write_config("[ingest]\ncommit_chunks = 1\n")
    folder = _folder(tmp_path)
    db = tmp_path / "k.lancedb"
    assert _haiku("add", "Kept from before.", "--title", "Before", "--db", str(db)).returncode == 0
    # Paused at the first commit (the 500 whole documents before the cut one), Ctrl-C; then the cut
    # document's first part is committed too, and must be undone.
    code, err = _interrupted(["add-src", str(folder), "--db", str(db)], "data-written", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    line = err.strip().splitlines()[-1]
    assert line == "haiku: interrupted: kept 500 documents (500 chunks); run the same add-src to add the rest"
    documents, chunks = map(_number, _KEPT.search(line).groups())  # type: ignore[union-attr]
    titles, stored_chunks = _stored(db)
    assert len(titles) == 1 + documents and stored_chunks == 1 + chunks
    assert "Long" not in titles and "Late 0" not in titles
    # The same add-src adds the rest, finding the kept ones unchanged.
    again = _haiku("add-src", str(folder), "--db", str(db), "--json")
    assert again.returncode == 0, again.stderr
    statuses = [o["status"] for o in json.loads(again.stdout)["outcomes"]]
    assert (statuses.count("unchanged"), statuses.count("added")) == (500, 11)
    titles, stored_chunks = _stored(db)
    assert (len(titles), stored_chunks) == (1 + 511, 1 + 500 + _LONG + 10)


def test_an_add_interrupted_before_its_first_commit_says_it_kept_nothing(
    write_config, tmp_path: Path
) -> None:
    write_config("[ingest]\ncommit_chunks = 1\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nOwls hunt at night {i}.\n")
    db = tmp_path / "k.lancedb"
    assert _haiku("add", "Kept from before.", "--title", "Before", "--db", str(db)).returncode == 0
    code, err = _interrupted(["add-src", str(folder), "--db", str(db)], "journal-written", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    last = err.strip().splitlines()[-1]
    assert last == "haiku: interrupted: kept nothing of this add; run the same add-src again"
    assert _stored(db) == (["Before"], 1)


def _notes(folder: Path, count: int, word: str) -> Path:
    folder.mkdir(exist_ok=True)
    for i in range(count):
        (folder / f"{word}{i}.md").write_text(f"# {word.title()} {i}\n\nThe {word} at the estuary {i}.\n")
    return folder


def test_an_interrupted_sync_says_which_sources_stand_and_what_of_the_last_it_kept(
    write_config, tmp_path: Path
) -> None:
    write_config("[ingest]\ncommit_chunks = 1\n")
    first, second = _notes(tmp_path / "a-first", 2, "heron"), _notes(tmp_path / "b-second", 1, "owl")
    db = tmp_path / "s.lancedb"
    assert _haiku("add-src", str(first), str(second), "--db", str(db)).returncode == 0
    (first / "heron1.md").unlink()  # the first source's sync deletes, and writes no chunk
    _notes(second, 3, "owl")  # the second's adds two documents, paused at their commit
    code, err = _interrupted(["sync", "--db", str(db)], "data-written", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == (
        "haiku: interrupted: stored the changes of 1 source; kept 2 documents (2 chunks) of the source "
        "being synced; run haiku sync again to finish"
    )
    assert sorted(_stored(db)[0]) == ["Heron 0", "Owl 0", "Owl 1", "Owl 2"]
    assert _stored(db)[1] == 4


def test_an_interrupted_rebuild_says_nothing_was_rebuilt_and_nothing_was(tmp_path: Path) -> None:
    db = tmp_path / "r.lancedb"
    assert _haiku("add-src", str(_notes(tmp_path / "docs", 2, "kestrel")), "--db", str(db)).returncode == 0
    before = json.loads(_haiku("info", "--db", str(db), "--json").stdout)["versions"]
    code, err = _interrupted(["rebuild", "--db", str(db)], "rebuild-batch", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == (
        "haiku: interrupted: nothing was rebuilt, the database is as it was; run haiku rebuild again"
    )
    assert json.loads(_haiku("info", "--db", str(db), "--json").stdout)["versions"] == before
    assert sorted(_stored(db)[0]) == ["Kestrel 0", "Kestrel 1"]
    tables = sorted(p.name for p in db.iterdir() if p.name.startswith("chunks"))
    assert tables == ["chunks.lance"]  # the new table is gone


def test_a_watch_stopped_by_ctrl_c_says_what_of_the_sync_under_way_it_kept(
    write_config, tmp_path: Path
) -> None:
    write_config("[ingest]\ncommit_chunks = 1\n")
    folder = _notes(tmp_path / "docs", 1, "egret")
    db = tmp_path / "w.lancedb"
    assert _haiku("add-src", str(folder), "--db", str(db)).returncode == 0
    _notes(folder, 2, "egret")  # found by the watch's first sweep, paused at its commit
    code, err = _interrupted(["watch", "--db", str(db)], "data-written", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == (
        "haiku: stopped watching: kept 1 document (1 chunk) of the source being synced; "
        "haiku sync or watch picks up the rest"
    )
    assert _stored(db) == (["Egret 0", "Egret 1"], 2)


def test_a_move_kept_by_an_interrupted_sync_is_not_deleted_by_the_next(write_config, tmp_path: Path) -> None:
    write_config("[ingest]\ncommit_chunks = 1\n")
    folder = _notes(tmp_path / "docs", 2, "plover")
    db = tmp_path / "m.lancedb"
    assert _haiku("add-src", str(folder), "--db", str(db)).returncode == 0
    (folder / "plover0.md").rename(folder / "renamed.md")  # the same document under another name
    code, err = _interrupted(["sync", "--db", str(db)], "data-written", tmp_path / "gate")
    assert code == ExitCode.INTERRUPTED, err
    assert "kept 1 document (1 chunk) of the source being synced" in err
    done = _haiku("sync", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    assert _stored(db) == (["Plover 0", "Plover 1"], 2)


def test_an_interrupted_delete_says_what_stands_after_the_step_under_way(tmp_path: Path) -> None:
    # Ctrl-C with the delete's journal written: its one step (in a worker thread) ends whole, committed,
    # and the line says so. Left to asyncio, Ctrl-C abandoned that thread: "interrupted" (and a line
    # of "nothing was changed") came while the delete went on to commit after it.
    db = tmp_path / "d.lancedb"
    for title in ("Heron", "Egret"):
        assert _haiku("add", f"The {title} wades.", "--title", title, "--db", str(db)).returncode == 0
    listed = json.loads(_haiku("list", "--db", str(db), "--json").stdout)["documents"]
    heron = next(d["id"] for d in listed if d["title"] == "Heron")
    code, err = _interrupted(["delete", heron, "--db", str(db)], "journal-written", tmp_path / "gate")
    assert (code, err.strip().splitlines()[-1]) == (
        ExitCode.INTERRUPTED,
        "haiku: interrupted after the delete was stored",
    )
    assert _stored(db)[0] == ["Egret"]


def test_a_write_command_stoppable_by_ctrl_c_still_fails_with_its_own_line(tmp_path: Path) -> None:
    # The Ctrl-C watch around a write must not wrap its failure (it was `internal error: ExceptionGroup`).
    db = tmp_path / "f.lancedb"
    assert _haiku("add", "Herons wade.", "--db", str(db)).returncode == 0
    gone = _haiku("delete", "nope", "--db", str(db))
    assert (gone.returncode, gone.stderr.splitlines()[0]) == (
        ExitCode.INPUT,
        f"haiku: no document with id, id prefix, uri or path 'nope' in database 'f'; haiku list --db {db} "
        "shows the ids",
    )

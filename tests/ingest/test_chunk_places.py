"""Chunks written before haiku recorded where they stand (schema 2) get their places from `vacuum`: the
same characters a new database gives the same file's chunks, found again in the document's text."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio

from haiku_cli.databases import operations
from haiku_cli.ingest.chunk_places import locate
from haiku_cli.store import Location, open_database, schema
from haiku_cli.store.maintenance import upgrade_layout
from haiku_cli.store.writer_lock import exclusive
from tests.conftest import fill
from tests.support.old_layout import create_v2_database

CODE = "\n".join(f"    total_{n} = compute_value({n}) * factor + offset  # step {n}" for n in range(60))
SOURCE = (
    "---\ntitle: Brewing\n---\n\n"
    "# Brewing\n\n"
    "Espresso brewing ratios: one to two, in thirty seconds.\n"
    "<!-- a note\nfor editors -->\n"
    "Grind finer when the shot runs fast.\n\n"
    "## Code\n\n"
    f"```python\ndef brew():\n{CODE}\n```\n\n"
    "## Milk\n\n" + " ".join(f"Steam the milk to sixty degrees, sentence {n}." for n in range(80)) + "\n"
)


def _places(location: Location) -> list[tuple]:
    db = open_database(location)
    rows = db.chunks.search().select(["order", "text", *schema.SPAN_FIELDS]).limit(1000).to_list()
    return sorted((r["order"], r["text"], *(r[f] for f in schema.SPAN_FIELDS)) for r in rows)


def _add(workspace, location: Location, path: Path) -> None:
    anyio.run(lambda: operations.add_sources(workspace(), location, [str(path)], title=None, metadata={}))


def test_vacuum_gives_an_old_databases_chunks_the_characters_a_new_one_gives_them(
    workspace, embedder, tmp_path: Path
) -> None:
    path = tmp_path / "brewing.md"
    path.write_text(SOURCE, encoding="utf-8")
    new = Location("new", str(tmp_path / "new.lancedb"))
    _add(workspace, new, path)
    old = Location("old", str(tmp_path / "old.lancedb"))
    create_v2_database(old, embedder.name, embedder.dimension)
    _add(workspace, old, path)
    expected = _places(new)
    assert len(expected) > 3 and all(p[2] is not None and p[4] is not None for p in expected)
    assert any(p[1].startswith("```python\ntotal_11") for p in expected)  # a code block fenced again

    report = anyio.run(lambda: operations.vacuum(workspace(), old))
    assert report.upgraded_layout and report.placed_chunks == len(expected)
    placed = _places(old)
    # The characters as a new database has them; the source lines stay unknown (the stored text does
    # not say how many lines of the file, its front matter, came before it).
    assert [p[:4] for p in placed] == [p[:4] for p in expected]
    assert all(p[4:] == (None, None) for p in placed)
    content = open_database(old).documents.search().select(["content"]).to_list()[0]["content"]
    assert anyio.run(lambda: operations.info(workspace(), old)).upgrade is None
    assert content[placed[0][2] : placed[0][3]].startswith("Espresso brewing ratios")
    again = anyio.run(lambda: operations.vacuum(workspace(), old))
    assert again.placed_chunks == 0 and _places(old) == placed


def test_a_chunk_is_found_paragraph_by_paragraph_and_only_where_it_stands_whole() -> None:
    content = "Intro.\n\n\n\nFirst part.\n\n<!--x-->\n\nSecond part.\n\nTail."
    assert locate(content, "First part.\n\nSecond part.") is None  # a comment's text between them
    spaced = "Intro.\n\n\n\nFirst part.\n\n\n\nSecond part."
    assert locate(spaced, "First part.\n\nSecond part.") == (10, 37)
    assert locate(spaced, "Intro.", at=1) is None  # never before where the previous chunk began
    fenced = "```\na\nb\nc\n```"
    assert locate(fenced, "```\nb\nc\n```") == (6, 9)  # a cut block's chunk stands where its code does


_PLACE = textwrap.dedent(
    """
    import sys
    from haiku_cli.ingest.chunk_places import fill_places
    from haiku_cli.store import Location, open_database

    print(fill_places(open_database(Location("old", sys.argv[1]), writable=True)))
    """
)


def test_a_kill_between_dropping_and_merging_the_place_columns_is_undone(
    workspace, embedder, tmp_path: Path
) -> None:
    path = tmp_path / "brewing.md"
    path.write_text(SOURCE, encoding="utf-8")
    old = Location("old", str(tmp_path / "old.lancedb"))
    create_v2_database(old, embedder.name, embedder.dimension)
    _add(workspace, old, path)
    db = open_database(old, writable=True)
    with exclusive(db):
        assert upgrade_layout(db)  # the layout alone, as a vacuum of an earlier haiku left it
    fill(workspace(), old, [{"text": "Cold brew steeps for twelve hours.", "title": "Cold"}])  # placed
    before = _places(old)
    assert sum(p[2] is None for p in before) == len(before) - 1

    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env["HAIKU_TEST_PAUSE"] = f"places-dropped:{gate}"
    proc = subprocess.Popen([sys.executable, "-c", _PLACE, old.uri], env=env)
    deadline = time.monotonic() + 120
    while not any(gate.glob("places-dropped.*.reached")):
        assert time.monotonic() < deadline and proc.poll() is None, "the placing never reached its pause"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)

    assert _places(old) == before  # readers read the state before the unfinished write
    report = anyio.run(lambda: operations.vacuum(workspace(), old))  # undoes it, then places again
    assert report.placed_chunks == len(before) - 1
    after = _places(old)
    assert [p for p in after if p[1].startswith("Cold brew")] == [
        p for p in before if p[1].startswith("Cold")
    ]
    assert all(p[2] is not None for p in after)

"""`search --sync` finds the files made in, and forgets those removed from, a remembered folder since
it was last read (a stat per directory listed; only the directories whose time moved are walked)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def _found(cli, query: str) -> tuple[set[str], list[str]]:
    done = cli("search", query, "--sync", "-n", "10", "--json")
    assert done.exit_code == 0, done.stderr
    found = json.loads(done.stdout)
    named = {Path(h["document_uri"]).name for h in found["hits"] if query in h["content"].lower()}
    return named, found["notes"]


def _settle(folder: Path) -> None:
    """Every directory's time set well in the past, as a folder untouched for a while is."""
    for directory, _, _ in os.walk(folder):
        os.utime(directory, ns=(0, 1_000_000_000_000_000_000))


def test_a_note_dropped_into_a_remembered_folder_is_found_by_the_next_search_sync(
    cli, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    (notes / "old").mkdir(parents=True)
    (notes / "kept.txt").write_text("The kept note speaks of herons.\n", encoding="utf-8")
    (notes / "old" / "gone.txt").write_text("The gone note speaks of kingfishers.\n", encoding="utf-8")
    (notes / "skip.log").write_text("A kingfisher in a log file.\n", encoding="utf-8")
    assert cli("add-src", str(notes), "--exclude", "*.log").exit_code == 0
    _settle(notes)
    # Not synced since it was added: walked whole once, its directories remembered, nothing said.
    assert _found(cli, "kingfisher") == ({"gone.txt"}, [])
    assert _found(cli, "kingfisher") == ({"gone.txt"}, [])  # nothing moved: nothing synced

    (notes / "fresh.txt").write_text("The fresh note speaks of kingfishers diving.\n", encoding="utf-8")
    (notes / "new" / "deeper").mkdir(parents=True)
    (notes / "new" / "deeper" / "nested.txt").write_text("A nested kingfisher note.\n", encoding="utf-8")
    (notes / "other.log").write_text("A kingfisher the exclude leaves out.\n", encoding="utf-8")
    (notes / "old" / "gone.txt").unlink()
    (listed,) = json.loads(cli("sources", "--json").stdout)["sources"]
    assert (listed["dirs_changed"], listed["missing"]) == (2, 1)  # the folder itself, and old/
    shown = cli("sources")
    assert "dirs changed" in shown.stdout and "haiku sync -d default" in shown.stderr
    hits, said = _found(cli, "kingfisher")
    assert hits == {"fresh.txt", "nested.txt"}
    assert said == [f"synced {notes} [default]: 2 added, 1 deleted"]
    (listed,) = json.loads(cli("sources", "--json").stdout)["sources"]
    assert (listed["documents"], listed["dirs_changed"], listed["missing"]) == (3, 0, 0)

    _settle(notes)
    assert _found(cli, "kingfisher")[1] == []  # times moved, nothing new: looked at, nothing said
    (notes / "new" / "deeper" / "nested.txt").rename(notes / "new" / "moved.txt")
    hits, said = _found(cli, "kingfisher")
    assert hits == {"fresh.txt", "moved.txt"} and said == [f"synced {notes} [default]: 1 updated"]


def test_a_folder_added_and_never_synced_is_looked_at_whole_by_search_sync(cli, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kept.txt").write_text("The kept note speaks of herons.\n", encoding="utf-8")
    assert cli("add-src", str(notes)).exit_code == 0
    (notes / "sub").mkdir()
    (notes / "sub" / "fresh.txt").write_text("A fresh note of kingfishers.\n", encoding="utf-8")
    hits, said = _found(cli, "kingfisher")
    assert "fresh.txt" in hits and said == [f"synced {notes} [default]: 1 added"]

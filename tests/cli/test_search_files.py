"""`search --files`: one line per document, its best chunk; `no results` is said on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from haiku_cli.cli import render


def _long_guide(folder: Path) -> None:
    sections = "\n\n".join(
        f"## Tide table {n}\n\n" + " ".join(["Spring tides and neap tides follow the moon."] * 30)
        for n in range(8)
    )
    (folder / "tides.md").write_text(f"# Tides\n\n{sections}\n", encoding="utf-8")
    (folder / "moon.md").write_text("# Moon\n\nThe moon pulls the tides twice a day.\n", encoding="utf-8")
    (folder / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n", encoding="utf-8")


def test_files_gives_each_document_once_with_its_best_chunk(cli, tmp_path: Path) -> None:
    _long_guide(tmp_path)
    assert cli("add-src", str(tmp_path)).exit_code == 0
    chunks = json.loads(cli("search", "spring and neap tides", "-n", "3", "--json").stdout)["hits"]
    assert {h["document_title"] for h in chunks} == {"Tides"}  # one document crowds the chunk ranking
    files = json.loads(cli("search", "spring and neap tides", "-n", "3", "--files", "--json").stdout)
    titles = [h["document_title"] for h in files["hits"]]
    assert titles[0] == "Tides" and sorted(titles) == ["Moon", "Owls", "Tides"]
    assert [h["rank"] for h in files["hits"]] == [1, 2, 3] and files["id"] == "1"  # never null
    assert files["hits"][0]["chunk_id"] == chunks[0]["chunk_id"]  # its best chunk
    text = cli("search", "spring and neap tides", "-n", "2", "--files").stdout.splitlines()
    assert len(text) == 2 and text[0].startswith(" 1. ") and "Tides" in text[0] and "tides.md" in text[0]
    doc_id = files["hits"][0]["document_id"]
    assert f" {doc_id[:8]} " in text[0] and "— " in text[0] and "Moon" in text[1]


def test_no_results_is_said_on_stderr_leaving_stdout_empty(cli) -> None:
    cli("add", "Owls hunt at night.")
    for extra in ([], ["--files"]):
        result = cli("search", "zebra", "--type", "fts", *extra)
        assert result.exit_code == 0 and result.stdout == "" and "no results" in result.stderr


def test_an_excerpt_ends_and_starts_between_words() -> None:
    text = " ".join(f"word{n:03d}" for n in range(200))
    cut = render.excerpt(text, ["word100"], width=60)
    inner = cut.strip("…").split(" ")
    assert all(w.startswith("word") and len(w) == 7 for w in inner), cut
    assert "word100" in cut

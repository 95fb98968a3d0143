"""Tables and hits fit an 80-column terminal; in a pipe every cell is whole and no line ends in padding."""

from __future__ import annotations

import io
import json

import pytest

from haiku_cli.cli import output, render, tables

UUID = "3f2b8c1e"  # a short id, as list shows it
URI = "file:///tmp/pytest-of-someone/pytest-12/scratch/notes/very/deep/folder/the-one-asked-for.md"
TITLE = "A Remarkably Long Title That Would Otherwise Wrap Over Several Lines Of An Eighty Column Terminal"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    screen = io.StringIO()
    console = output._Console(file=screen, width=80, force_terminal=True, color_system=None, highlight=False)
    monkeypatch.setattr(output, "out", console)
    return screen


def test_middle_keeps_the_start_and_the_end() -> None:
    assert tables.middle("short", 10) == "short"
    cut = tables.middle(URI, 30)
    assert len(cut) == 30 and cut.startswith("file:///tmp/") and cut.endswith("asked-for.md") and "…" in cut


def test_a_table_fits_80_columns_with_the_kept_column_whole(terminal: io.StringIO) -> None:
    render.table(["id", "title", "uri", "updated"], [(UUID, TITLE, URI, "2024-01-02 03:04")] * 2)
    lines = terminal.getvalue().splitlines()
    assert len(lines) == 3  # a header and one line per row: nothing wrapped
    assert all(len(line) <= 80 for line in lines)
    assert all(UUID in line and line.endswith("2024-01-02 03:04") for line in lines[1:])
    assert "the-one-asked-for.md" not in lines[1] or "…" in lines[1]
    assert lines[1].split("  ")[1].startswith("A Remarkably")


def test_a_piped_table_has_whole_cells_and_no_trailing_padding(capsys: pytest.CaptureFixture[str]) -> None:
    render.table(["id", "title", "uri"], [(UUID, TITLE, "x"), ("b", "t", URI)])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert TITLE in lines[1] and URI in lines[2]


def test_list_and_search_show_short_ids_that_get_takes(cli, tmp_path) -> None:
    note = tmp_path / "lamps.md"
    note.write_text("# Lamps\n\nLanterns burn kerosene.\n", encoding="utf-8")
    assert cli("add-src", str(note)).exit_code == 0
    doc_id = json.loads(cli("list", "--json").stdout)["documents"][0]["id"]
    listed = cli("list").stdout.splitlines()
    assert listed[1].split()[0] == doc_id[:8] and doc_id not in listed[1]
    hits = cli("search", "kerosene").stdout
    assert f"    {doc_id[:8]}  file://" in hits and doc_id not in hits
    got = cli("get", doc_id[:8])
    assert got.exit_code == 0 and "Lanterns burn kerosene." in got.stdout
    other = cli("add", "Owls hunt at night.").stdout
    assert other.startswith("added ") and " → " in other and len(other.split(" → ")[1].split()[0]) == 8
    gone = cli("delete", doc_id[:8]).stdout
    assert gone.startswith(f"deleted {doc_id[:8]} (Lamps)") and doc_id not in gone


def test_get_shows_metadata_as_key_value_lines_and_times_in_utc(cli) -> None:
    added = cli("add", "Lanterns burn kerosene.", "--meta", "year=1901", "--meta", "kind=oil lamp", "--json")
    doc_id = json.loads(added.stdout)["outcomes"][0]["document_id"]
    lines = cli("get", doc_id).stdout.splitlines()
    assert " metadata: year=1901" in lines and "           kind=oil lamp" in lines
    assert not any("{'" in line for line in lines)  # never a Python dict
    created = next(line for line in lines if line.lstrip().startswith("created:"))
    assert created.endswith(" UTC") and "+00:00" not in created


DOC_ID = "3f2b8c1e-9a4d-4e57-b1c2-7d9e0f6a5b43"


def _long_hit():
    """A hit whose title and uri are each longer than a line of 80 columns."""
    from haiku_cli.search.hits import SearchHit

    return SearchHit(
        database="papers",
        document_id=DOC_ID,
        document_uri=URI,
        document_title=TITLE,
        chunk_id="c1",
        content="Tides rise and fall twice a day.",
        score=0.5,
        rank=1,
        heading_path=["Tables"],
    )


def test_hits_and_citations_fit_80_columns_keeping_the_id_and_the_file_name(terminal: io.StringIO) -> None:
    from haiku_cli.capabilities.citations import Citation

    doc_id, hit = DOC_ID, _long_hit()
    render.search_hits("tides", [hit])
    same = hit.model_dump(include={"database", "document_id", "document_uri", "document_title", "chunk_id"})
    render.citations([Citation(index=1, content="Tides rise.", **same)], "tides")
    render.search_hits("tides", [hit], files=True)
    lines = [line for line in terminal.getvalue().splitlines() if line.strip()]
    assert all(len(line) <= 80 for line in lines), lines
    head, where, cited = lines[0], lines[1], next(line for line in lines if line.startswith("[1]"))
    assert head.startswith(" 1. A Remarkably") and head.endswith("[papers]  score 0.500")
    assert where.startswith(f"    {doc_id[:8]}  file:///") and where.endswith("asked-for.md  § Tables")
    assert cited.startswith("[1] A Remarkably") and "asked-for.md" in cited and cited.endswith("[papers]")
    # --files: one line a document; at 80 columns which document and where it is come first, readable.
    one_line = lines[-1]
    assert one_line.startswith(f" 1. {doc_id[:8]}  A Remarkably") and len(one_line) <= 80
    assert "Terminal  [papers]  file:///" in one_line
    assert one_line.endswith("-one-asked-for.md")


def test_a_files_line_adds_the_section_and_excerpt_where_the_terminal_has_room(monkeypatch) -> None:
    screen = io.StringIO()
    wide = output._Console(file=screen, width=260, force_terminal=True, color_system=None, highlight=False)
    monkeypatch.setattr(output, "out", wide)
    render.search_hits("tides", [_long_hit()], files=True)
    (line,) = screen.getvalue().splitlines()
    assert len(line) <= 260 and TITLE in line and URI in line
    assert line.endswith("asked-for.md  § Tables  — Tides rise and fall twice a day.")

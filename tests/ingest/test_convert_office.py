"""PowerPoint and spreadsheets, on files the tests write with python-pptx and openpyxl."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import pytest

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest import pipeline
from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError
from haiku_cli.ingest.stored import from_stored, stored_content
from tests.ingest.support import chunks_by_id, new_db


def _saved(document: Any) -> bytes:
    """A python-pptx presentation or an openpyxl workbook as the bytes of its file."""
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _deck(slides: list[tuple[str, str, str]], title: str = "") -> bytes:
    """A presentation of (title, body, speaker notes) slides; an empty title makes a blank slide."""
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = title
    for heading, body, notes in slides:
        if not heading:
            deck.slides.add_slide(deck.slide_layouts[6])  # blank
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
        slide.shapes.title.text = heading
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    return _saved(deck)


def test_slides_are_pages_with_their_titles_as_headings_and_their_notes(tmp_path: Path) -> None:
    path = tmp_path / "talk.pptx"
    path.write_bytes(
        _deck(
            [
                ("Why Lanterns", "They light the way", "Pause here for questions"),
                ("", "", ""),
                ("Costs", "Oil is cheap", ""),
            ]
        )
    )
    doc = convert_file(path)
    assert doc.title == "Why Lanterns"  # no title in the properties: the first slide's
    assert [s.page for s in doc.segments] == [1, 2, 3]
    assert (
        doc.segments[0].text
        == "## Why Lanterns\n\nThey light the way\n\nSpeaker notes:\n\nPause here for questions"
    )
    assert doc.segments[1].text == ""
    assert doc.segments[2].text == "## Costs\n\nOil is cheap"
    # Stored and read back (a rebuild), the slides keep their numbers.
    again = from_stored(doc.uri, doc.title, stored_content(doc))
    assert [(s.page, s.text) for s in again.segments] == [(s.page, s.text) for s in doc.segments]


def test_a_slide_picture_is_kept_with_its_slide_number(tmp_path: Path) -> None:
    from PIL import Image
    from pptx import Presentation
    from pptx.util import Inches

    png = io.BytesIO()
    Image.new("RGB", (240, 120), (200, 40, 40)).save(png, "PNG")
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Chart"
    picture = slide.shapes.add_picture(io.BytesIO(png.getvalue()), Inches(1), Inches(2))
    picture._element.nvPicPr.cNvPr.set("descr", "Oil prices")
    path = tmp_path / "chart.pptx"
    path.write_bytes(_saved(deck))
    doc = convert_file(path)
    assert [(p.page, p.caption, p.width, p.height) for p in doc.pictures] == [(2, "Oil prices", 240, 120)]
    assert doc.segments[1].text == "## Chart\n\n![Oil prices](picture:image-1)"


def test_text_inside_grouped_shapes_is_read(tmp_path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    group = slide.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "Grouped words"
    path = tmp_path / "grouped.pptx"
    path.write_bytes(_saved(deck))
    assert convert_file(path).segments[0].text == "Grouped words"


def test_the_properties_title_wins(tmp_path: Path) -> None:
    path = tmp_path / "talk.pptx"
    path.write_bytes(_deck([("Intro", "x", "")], title="Quarterly Review"))
    assert convert_file(path).title == "Quarterly Review"


def test_a_hit_in_a_slide_carries_its_slide_number(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    path = tmp_path / "talk.pptx"
    path.write_bytes(
        _deck([("Opening", "Welcome everyone", ""), ("Budget", "Lantern oil costs", "Mention oil")])
    )
    report = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(path)], title=None, metadata={}))
    assert [o.status for o in report.outcomes] == ["added"]
    chunks = sorted((p, t) for _, t, p in chunks_by_id(db).values())
    assert chunks == [([1], "Welcome everyone"), ([2], "Lantern oil costs\n\nSpeaker notes:\n\nMention oil")]


def _workbook(sheets: dict[str, list[list[object]]]) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    return _saved(book)


def test_each_sheet_is_a_section_with_its_rows_under_their_header(tmp_path: Path) -> None:
    path = tmp_path / "ledger.xlsx"
    path.write_bytes(
        _workbook(
            {
                "People": [["Name", "Year"], ["Ada", 1843], ["Grace", 1952.0], [None, None]],
                "Empty": [],
                "Wide": [[f"c{i}" for i in range(10)], list(range(10))],
            }
        )
    )
    doc = convert_file(path)
    assert doc.title == "ledger"
    assert doc.text == (
        "## People\n\n| Name | Year |\n| --- | --- |\n| Ada | 1843 |\n| Grace | 1952 |\n\n"
        "## Wide\n\n- " + " · ".join(f"c{i}: {i}" for i in range(10))
    )


def test_a_long_sheet_is_cut_into_chunks_that_each_name_the_columns(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    path = tmp_path / "stock.xlsx"
    rows = [["Item", "Count"]] + [[f"lantern model {i}", i] for i in range(400)]
    path.write_bytes(_workbook({"Stock": rows}))
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(path)], title=None, metadata={}))
    texts = [t for _, t, _ in chunks_by_id(db).values()]
    assert len(texts) > 3
    assert all(t.startswith("| Item | Count |") for t in texts)


def test_a_sheet_over_the_text_limit_is_refused_while_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.xlsx"
    path.write_bytes(_workbook({"Rows": [["A"]] + [["x" * 100] for _ in range(2000)]}))
    with pytest.raises(
        ConversionError,
        match=r"big\.xlsx: .*over the limit of 0\.1 MB; skipped \(raise \[ingest\] max_text_mb",
    ):
        convert_file(path, IngestSettings(max_text_mb=0.1))


def test_csv_rows_keep_their_header(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text('name;city\nAda;"London; UK"\nGrace;Arlington\n', encoding="utf-8")
    doc = convert_file(path)
    assert doc.text == "| name | city |\n| --- | --- |\n| Ada | London; UK |\n| Grace | Arlington |"
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1\t2\n", encoding="utf-8")
    assert convert_file(tsv).text == "| a | b |\n| --- | --- |\n| 1 | 2 |"
    served = convert_bytes(b"x,y\n1,2\n", uri="https://example.com/data", content_type="text/csv")
    assert served.text == "| x | y |\n| --- | --- |\n| 1 | 2 |"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("broken.pptx", b"PK\x03\x04 not really a zip", "corrupt PPTX"),
        ("broken.xlsx", b"just text", "corrupt XLSX"),
        ("broken.csv", b'a,b\n"unclosed\x00', "binary data, not text"),
    ],
)
def test_a_malformed_file_is_refused_with_one_line(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ConversionError) as caught:
        convert_file(path)
    assert str(caught.value).startswith(f"{path}: {reason}") and "\n" not in str(caught.value)


def test_a_malformed_file_is_skipped_and_the_rest_added(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "broken.pptx").write_bytes(b"PK\x03\x04 not really a zip")
    (folder / "good.pptx").write_bytes(_deck([("Fine", "a good slide", "")]))
    (folder / "sheet.xlsx").write_bytes(_workbook({"S": [["k"], ["v"]]}))
    report = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    assert sorted((Path(o.source).name, o.status) for o in report.outcomes) == [
        ("broken.pptx", "failed"),
        ("good.pptx", "added"),
        ("sheet.xlsx", "added"),
    ]

"""DOCX conversion: headings as markdown, lists, tables, titles."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.ingest.chunking import chunk_document
from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError

from .helpers import make_docx, words


def test_docx_structure(tmp_path: Path) -> None:
    path = tmp_path / "guide.docx"
    path.write_bytes(make_docx(title="Core Title"))
    doc = convert_file(path)
    assert doc.title == "Core Title"
    assert doc.text == (
        "# Install\n\nHaiku installs with pip.\n\n## On Linux\n\nUse a virtual environment.\n\n"
        "- first step\n\n- second step\n\n| name | value |\n| --- | --- |\n| a\\|b | 2 |"
    )
    chunks = chunk_document(doc, words)
    assert [c.heading_path for c in chunks] == [["Install"], ["Install", "On Linux"]]
    assert chunks[1].pages == []


def test_docx_title_fallbacks(tmp_path: Path) -> None:
    path = tmp_path / "notes.docx"
    path.write_bytes(make_docx())
    assert convert_file(path).title == "Install"  # the first top-level heading


def test_docx_by_sniffing() -> None:
    doc = convert_bytes(make_docx(), uri="https://x.test/download", content_type="application/octet-stream")
    assert "Haiku installs with pip." in doc.text


def test_corrupt_docx(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 definitely not a zip")
    with pytest.raises(ConversionError, match=r"broken\.docx: corrupt DOCX"):
        convert_file(path)


@pytest.mark.parametrize("core", ["Proceedings Template - WORD", "report_final_v2.docx", "untitled"])
def test_a_junk_core_title_gives_way_to_the_first_heading(tmp_path: Path, core: str) -> None:
    path = tmp_path / "paper.docx"
    path.write_bytes(make_docx(title=core))
    assert convert_file(path).title == "Install"

"""Glyphs without a Unicode map: named by TeX's math fonts, else marked, never dropped."""

from __future__ import annotations

from pathlib import Path

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert.pdf_glyphs import MARK, glyph_for
from tests.ingest.helpers import make_pdf


def test_tex_math_fonts_name_their_glyphs() -> None:
    assert glyph_for("ABCDEF+CMMI10", 0x0F) == "ϵ"
    assert glyph_for("CMMI7", 0x0B) == "\u03b1"  # alpha
    assert glyph_for("XYZABC+CMSY10", 0x14) == "≤"
    assert glyph_for("CMSY10", 0x15) == "≥"
    assert glyph_for("Helvetica", 0x0F) == MARK


def test_a_glyph_without_a_unicode_map_is_marked_where_it_stood(tmp_path: Path) -> None:
    path = tmp_path / "bound.pdf"
    # Helvetica's WinAnsi encoding has nothing at code 15: PDFium gives the raw code back.
    path.write_bytes(make_pdf(["a bound on clock uncertainty \x0f and how bad does \x0f get"]))
    text = convert_file(path, IngestSettings(ocr="off")).text
    assert text == f"a bound on clock uncertainty {MARK} and how bad does {MARK} get"

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


def _unmapped_font(base_font: bytes) -> bytes:
    """A font without a ToUnicode map whose codes 33 and 80 are glyphs no Unicode name knows (as TeX's
    symbol fonts name theirs): PDFium hands back the raw codes, `!` and `P`."""
    return (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /%s /Encoding << /BaseEncoding /WinAnsiEncoding "
        b"/Differences [33 /arrowrighttex 80 /summationtext] >> >>" % base_font
    )


def test_tex_math_glyphs_past_the_control_codes_are_mapped_by_their_font(tmp_path: Path) -> None:
    assert glyph_for("CMSY10", 0x21) == "→"
    assert glyph_for("ABCDEF+CMEX10", 0x50) == "∑"
    assert glyph_for("CMMI10", 0x22) == "ε"
    assert glyph_for("CMMI10", 0x61) == "a"  # math italic letters are the letters
    path = tmp_path / "symbols.pdf"
    # A raw control code (TeX sets Greek letters and relations below 32) tells a page of math from the rest.
    path.write_bytes(make_pdf(["x \x14 y ! z and A"], font=_unmapped_font(b"CMSY10")))
    assert convert_file(path, IngestSettings(ocr="off")).text == "x ≤ y → z and A"
    path.write_bytes(make_pdf(["P of x \x14 1"], font=_unmapped_font(b"CMEX10")))
    assert convert_file(path, IngestSettings(ocr="off")).text == "∑ of x [ 1"


def test_another_fonts_unmapped_letters_are_kept_and_its_control_codes_marked(tmp_path: Path) -> None:
    path = tmp_path / "plain.pdf"
    path.write_bytes(make_pdf(["Pay ! now \x0f done"], font=_unmapped_font(b"Helvetica")))
    assert convert_file(path, IngestSettings(ocr="off")).text == f"Pay ! now {MARK} done"

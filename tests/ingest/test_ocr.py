"""OCR of scanned PDF pages and image files (the `ocr` extra, which the `test` extra installs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert.ocr import MISSING, ocr_available, read_picture
from haiku_cli.ingest.document import ConversionError
from tests.ingest.helpers import make_pdf
from tests.support.scans import scanned_pdf, words_image, words_png


def _words(text: str) -> set[str]:
    return {w.strip(".,:;").lower() for w in text.split()}


def test_the_extra_is_installed_for_the_tests() -> None:
    # CI installs '.[test]', which holds '.[ocr]': the OCR tests below run there, never skipped.
    assert ocr_available()


def test_a_picture_is_read_line_by_line() -> None:
    read = read_picture(words_image(["Harbour lantern", "seventeen oysters"]), seconds=60)
    assert read.complete
    assert [_words(line) for line in read.lines if line] == [
        {"harbour", "lantern"},
        {"seventeen", "oysters"},
    ]


def test_a_scanned_pdf_is_read_page_by_page(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf([["Quarterly harbour report"], ["Lantern maintenance schedule"]]))
    doc = convert_file(path)
    first, second = doc.segments
    assert (first.page, second.page) == (1, 2)
    assert doc.title is not None and _words(doc.title) == {"quarterly", "harbour", "report"}
    assert {"quarterly", "harbour", "report"} <= _words(first.text)
    assert {"lantern", "maintenance", "schedule"} <= _words(second.text)
    assert "lantern" not in _words(first.text)
    # The page's picture is kept too, its marker above the words read from it.
    assert [p.reference for p in doc.pictures] == ["p1-scan", "p2-scan"]
    assert first.text.startswith("![page 1, which has no text layer](picture:p1-scan)")
    assert doc.notes == ()


def _small_typed_pdf(text: str) -> bytes:
    """A one-line text page cut down to the strip its line is set in (a small page reads fast)."""
    import io

    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(make_pdf([text]))
    pdf[0].set_mediabox(60, 700, 320, 760)
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def test_text_pages_are_not_read_by_ocr_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "typed.pdf"
    path.write_bytes(_small_typed_pdf("Typed words of the text layer."))
    assert convert_file(path).segments[0].text == "Typed words of the text layer."
    always = convert_file(path, IngestSettings(ocr="always"))
    assert {"typed", "words", "text", "layer"} <= _words(always.segments[0].text)


def test_ocr_off_keeps_a_scan_as_its_picture_only(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf([["Quarterly harbour report"]]))
    doc = convert_file(path, IngestSettings(ocr="off"))
    assert doc.segments[0].text == "![page 1, which has no text layer](picture:p1-scan)"
    assert MISSING not in doc.notes


def test_the_time_bound_keeps_what_was_read_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf([["Quarterly harbour report", "Lantern maintenance schedule"]]))
    doc = convert_file(path, IngestSettings(ocr_page_seconds=1e-9))
    assert any("OCR stopped after" in n and "ocr_page_seconds" in n for n in doc.notes)


def test_an_image_file_is_a_document_of_its_words_and_keeps_its_picture(tmp_path: Path) -> None:
    path = tmp_path / "whiteboard.png"
    path.write_bytes(words_png(["Retrospective actions", "rotate the pager weekly"]))
    doc = convert_file(path)
    assert doc.title == "whiteboard"
    assert {"retrospective", "actions", "rotate", "pager", "weekly"} <= _words(doc.text)
    (picture,) = doc.pictures
    assert (picture.reference, picture.format, picture.width) == ("image", "png", 900)
    assert doc.text.startswith("![whiteboard](picture:image)")


@pytest.mark.parametrize("suffix", [".jpg", ".webp", ".tiff"])
def test_other_image_formats_are_read(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"note{suffix}"
    words_image(["Lighthouse keeper"]).save(path)
    assert {"lighthouse", "keeper"} <= _words(convert_file(path).text)


def test_a_damaged_image_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(ConversionError, match=r"broken.png: (not an image|damaged image)"):
        convert_file(path)

"""PDF conversion: pages, titles, bookmarks, running headers and the failure modes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from haiku_cli.ingest.chunking import chunk_document
from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError

from .helpers import make_pdf, words


def write(tmp_path: Path, data: bytes, name: str = "doc.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_two_pages(tmp_path: Path) -> None:
    path = write(
        tmp_path, make_pdf(["Alpha page text.\nSecond line of one.", "Beta page text."], title="Doc Title")
    )
    doc = convert_file(path)
    assert doc.title == "Doc Title"
    assert [(s.page, s.text) for s in doc.segments] == [
        (1, "Alpha page text.\nSecond line of one."),
        (2, "Beta page text."),
    ]
    assert doc.text == "Alpha page text.\nSecond line of one.\n\nBeta page text."


def test_title_falls_back_to_stem(tmp_path: Path) -> None:
    assert convert_file(write(tmp_path, make_pdf(["text"]), "report.pdf")).title == "report"


def test_blank_pages_keep_their_place(tmp_path: Path) -> None:
    doc = convert_file(write(tmp_path, make_pdf(["one", "", "three"])))
    assert [s.page for s in doc.segments] == [1, 2, 3]
    assert doc.segments[1].text == ""
    assert doc.text == "one\n\nthree"


def test_chunks_carry_page_numbers(tmp_path: Path) -> None:
    sizes = {1: 30, 2: 30, 3: 200, 4: 30}  # page 3 alone needs several chunks
    pages = [" ".join(f"p{n}w{i}." for i in range(size)) for n, size in sizes.items()]
    doc = convert_file(write(tmp_path, make_pdf(pages)))
    chunks = chunk_document(doc, words, max_tokens=100, overlap_tokens=0)
    for chunk in chunks:
        assert chunk.pages == sorted({int(w[1]) for w in chunk.text.split()})
    assert chunks[0].pages == [1, 2]  # short pages share a chunk: pages flow on under one heading
    assert sum(c.pages == [3] for c in chunks) >= 2
    assert {p for c in chunks for p in c.pages} == {1, 2, 3, 4}


def test_bookmarks_become_headings(tmp_path: Path) -> None:
    pages = ["1 Introduction\nWelcome text.", "1.1 Scope\nScope text.\n2 Usage\nUsage text."]
    data = make_pdf(pages, bookmarks=[("Introduction", 0), ("Scope", 1), ("Usage", 1)])
    doc = convert_file(write(tmp_path, data))
    assert "# 1 Introduction" in doc.segments[0].text
    chunks = chunk_document(doc, words)
    assert [(c.heading_path, c.text, c.pages) for c in chunks] == [
        (["1 Introduction"], "Welcome text.", [1]),
        (["1.1 Scope"], "Scope text.", [2]),
        (["2 Usage"], "Usage text.", [2]),
    ]


def test_running_headers_and_page_numbers_dropped(tmp_path: Path) -> None:
    pages = [f"ACME Manual\nBody of page {n} is here.\n{n}" for n in range(1, 6)]
    doc = convert_file(write(tmp_path, make_pdf(pages)))
    assert [s.text for s in doc.segments] == [f"Body of page {n} is here." for n in range(1, 6)]


def test_markdown_lookalikes_are_escaped(tmp_path: Path) -> None:
    doc = convert_file(write(tmp_path, make_pdf(["Example:\n# a shell comment\nmore"])))
    assert chunk_document(doc, words)[0].heading_path == []
    assert "\\# a shell comment" in doc.text


def test_corrupt_pdf(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"broken\.pdf: corrupt PDF"):
        convert_file(write(tmp_path, b"%PDF-1.4\nthis is not really a pdf\n%%EOF", "broken.pdf"))
    truncated = make_pdf(["text"])[:60]
    with pytest.raises(ConversionError, match="corrupt PDF"):
        convert_file(write(tmp_path, truncated, "cut.pdf"))


def test_no_text_layer(tmp_path: Path) -> None:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.new_page(612, 792)
    out = io.BytesIO()
    pdf.save(out)
    with pytest.raises(ConversionError, match=r"scan\.pdf: no text layer \(scanned\?\)"):
        convert_file(write(tmp_path, out.getvalue(), "scan.pdf"))


def test_pdf_bytes_by_content_type_and_sniffing() -> None:
    data = make_pdf(["from the web"])
    assert (
        convert_bytes(data, uri="https://x.test/get?id=1", content_type="application/pdf").text
        == "from the web"
    )
    assert convert_bytes(data, uri="https://x.test/blob", content_type=None).segments[0].page == 1

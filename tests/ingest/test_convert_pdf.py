"""PDF conversion: pages, titles, bookmarks, running headers and the failure modes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.chunking import chunk_document
from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError

from .helpers import locked_pdf, make_pdf, words


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


def test_a_password_protected_pdf_is_named_so_and_a_corrupt_one_is_not(tmp_path: Path) -> None:
    # PDFium's error code tells them apart; its message says "Incorrect password error" either way.
    with pytest.raises(ConversionError, match=r"/locked\.pdf: password-protected PDF$"):
        convert_file(write(tmp_path, locked_pdf(), "locked.pdf"))
    with pytest.raises(ConversionError, match=r"/password\.pdf: corrupt PDF$"):
        convert_file(write(tmp_path, b"%PDF-1.4\npassword required\n%%EOF", "password.pdf"))


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


_PAPER = "Consensus in the Cloud\nAnn Author, Bob Writer\nAbstract. We study how replicas agree on a log."


@pytest.mark.parametrize(
    "metadata",
    ["paper.dvi", "untitled", "Proceedings Template - WORD", "Microsoft Word - final2.doc", "88300 162..177"],
)
def test_a_junk_metadata_title_gives_way_to_the_largest_type(tmp_path: Path, metadata: str) -> None:
    data = make_pdf([_PAPER, "System Model\nMore text."], title=metadata, sizes={(0, 0): 24})
    assert convert_file(write(tmp_path, data)).title == "Consensus in the Cloud"


def test_a_metadata_title_of_another_part_gives_way_to_the_largest_type(tmp_path: Path) -> None:
    # Dynamo's metadata names one of its sections, which is not on the first page.
    data = make_pdf([_PAPER, "System Model\nMore text."], title="System Model", sizes={(0, 0): 24})
    assert convert_file(write(tmp_path, data)).title == "Consensus in the Cloud"


def test_a_metadata_title_printed_on_the_first_page_is_kept(tmp_path: Path) -> None:
    data = make_pdf([_PAPER], title="Consensus  in the cloud", sizes={(0, 1): 24})
    assert convert_file(write(tmp_path, data)).title == "Consensus in the cloud"


def test_a_title_over_two_lines_is_joined(tmp_path: Path) -> None:
    pages = ["A Study of\nReplicated Logs\nBody text in the usual size, at some length here."]
    data = make_pdf(pages, sizes={(0, 0): 20, (0, 1): 20})
    assert convert_file(write(tmp_path, data), None).title == "A Study of Replicated Logs"


def test_junk_everywhere_leaves_the_file_name(tmp_path: Path) -> None:
    # No metadata worth having and no type larger than the body: the file name is the best title.
    data = make_pdf(["Body text only.\nMore of the body."], title="paper.dvi")
    assert convert_file(write(tmp_path, data, "dynamo.pdf")).title == "dynamo"
    stray = make_pdf(["OM O M OGO\nBody text only, in the body size."], sizes={(0, 0): 30})
    assert convert_file(write(tmp_path, stray, "ledger.pdf")).title == "ledger"


_PROSE = (
    "Proceedings of the annual symposium on operating systems principles, where we present the design "
    "and implementation of a replicated log that tolerates the failures of a minority of its servers."
)


def _shifted(text: str) -> str:
    # What a font without a Unicode map yields: each glyph code 29 below the letter's ("7KH" for "The").
    return " ".join("".join(chr(ord(c) - 29) for c in word) for word in text.split())


def test_a_garbled_page_is_left_out_with_a_note(tmp_path: Path) -> None:
    caesar = "".join(chr((ord(c) - 94) % 26 + 97) if c.islower() else c for c in _PROSE)  # "wkh" for "the"
    pages = [_PROSE, _shifted(_PROSE), caesar, "".join(map(chr, range(0xA4, 0xC0))) * 4, "Last page text."]
    # OCR off: these pages' glyphs draw the same garbage (see test_ocr for pages OCR reads).
    doc = convert_file(write(tmp_path, make_pdf(pages), "mixed.pdf"), IngestSettings(ocr="off"))
    assert [s.page for s in doc.segments] == [1, 2, 3, 4, 5]
    assert [bool(s.text) for s in doc.segments] == [True, False, False, False, True]
    assert doc.notes == (
        f"{tmp_path / 'mixed.pdf'}: pages 2-4 left out: the text layer is unreadable (garbled fonts)",
    )


def test_real_text_of_other_kinds_is_not_taken_for_garbage(tmp_path: Path) -> None:
    pages = [
        "def add(items, total=0):\n    for item in items:\n        total += item.value  # sum them\n"
        "    return input_stream.tell(), total, cp1252, getElementById('x')\n" * 3,
        "Region  Q1 2019  Q2 2019  Q3 2019\nNorth  1,204.50  1,399.00  1,520.75\n"
        "South  980.00  1,010.25\n" * 3,
        "Comité de démolition : procès-verbal de la séance publique du 20 juin 2023, tenue à la mairie.",
    ]
    doc = convert_file(write(tmp_path, make_pdf(pages)))
    assert all(s.text for s in doc.segments) and doc.notes == ()


def test_a_pdf_that_is_all_garbage_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"junk\.pdf: the text layer is unreadable \(garbled fonts\)"):
        convert_file(write(tmp_path, make_pdf([_shifted(_PROSE)] * 2), "junk.pdf"), IngestSettings(ocr="off"))


def test_a_table_header_in_large_type_is_no_title(tmp_path: Path) -> None:
    header = "DOCUMENT NO." + " " * 30 + "PAYEE NAME" + " " * 30 + "AMOUNT"
    rows = "\n".join(f"B-{n} ACME OFFICE SUPPLY COMPANY {n}.00" for n in range(1191, 1200))
    data = make_pdf([f"{header}\n{rows}"], sizes={(0, 0): 16})
    assert convert_file(write(tmp_path, data, "senate-expenditures.pdf")).title == "senate-expenditures"


def test_a_metadata_title_found_only_inside_longer_words_is_not_on_the_page(tmp_path: Path) -> None:
    page = "Consensus in the Cloud\nRestarting replicas: a model of ordered logs, at some length."
    data = make_pdf([page], title="Art", sizes={(0, 0): 24})
    assert convert_file(write(tmp_path, data)).title == "Consensus in the Cloud"


def test_a_page_stream_that_inflates_past_its_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    # A few kilobytes that inflate to 3 MB: past a 2 MB bound, refused naming the setting; under it, read.
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(make_pdf(["Kestrels hover over fields."], padding=3 << 20))
    assert pdf.stat().st_size < 20_000
    with pytest.raises(ConversionError) as refused:
        convert_file(pdf, limits=IngestSettings(max_pdf_stream_mb=2))
    assert str(refused.value) == (
        f"{pdf}: a page stream decompresses to more than the limit of 2 MB; skipped "
        "(raise [ingest] max_pdf_stream_mb in the config file to add it)"
    )
    doc = convert_file(pdf, limits=IngestSettings(max_pdf_stream_mb=4))
    assert "Kestrels hover over fields." in doc.text

"""Plain text, markdown, raw text and the dispatch rules shared by files and bytes."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from haiku_cli.errors import InputError
from haiku_cli.ingest.convert import SUPPORTED_SUFFIXES, convert_bytes, convert_file, convert_text
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment


def test_plain_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first line\r\nsecond line\n\nnext para\n", encoding="utf-8")
    doc = convert_file(path)
    assert doc.uri == path.resolve().as_uri()
    assert doc.title == "notes"
    assert doc.text == "first line\nsecond line\n\nnext para"
    assert [s.page for s in doc.segments] == [None]


@pytest.mark.parametrize("name", ["README", "server.log", "guide.rst", "x.TEXT"])
def test_other_text_suffixes(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    assert convert_file(path).text == "a,b\n1,2"


def test_markdown_title_and_front_matter(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text("---\ntitle: From Front Matter\ntags: [a]\n---\n# Heading\n\nBody.\n", encoding="utf-8")
    doc = convert_file(path)
    assert doc.title == "From Front Matter"
    assert doc.text == "# Heading\n\nBody."
    path.write_text("Intro\n\n```\n# not a heading\n```\n\n# Real Title #\n", encoding="utf-8")
    assert convert_file(path).title == "Real Title"
    path.write_text("Setext Title\n============\n\ntext\n", encoding="utf-8")
    assert convert_file(path).title == "Setext Title"
    path.write_text("no heading here\n", encoding="utf-8")
    assert convert_file(path).title == "guide"


def test_markdown_starting_with_a_rule_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "rule.md"
    path.write_text("---\n\nplain text\n\n---\nmore\n", encoding="utf-8")
    assert "plain text" in convert_file(path).text


@pytest.mark.parametrize("content", [b"", b"   \n\t\n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(ConversionError, match=r"empty\.txt is empty"):
        convert_file(path)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ConversionError, match=r"image\.txt: binary data, not text"):
        convert_file(path)


def test_latin1_file_is_read_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("# Caf\u00e9\n\ncr\u00e8me br\u00fbl\u00e9e \u2013 \u20ac5".encode("cp1252"))
    doc = convert_file(path)
    assert doc.title == "Caf\u00e9" and "cr\u00e8me br\u00fbl\u00e9e \u2013 \u20ac5" in doc.text
    assert doc.notes == (f"{path}: not UTF-8; read as Latin-1 (Windows-1252)",)


def test_declared_charset_that_does_not_fit_is_refused() -> None:
    with pytest.raises(ConversionError, match="not UTF-8 text"):
        convert_bytes(
            "caf\u00e9".encode("latin-1"), uri="https://x.test/a", content_type="text/plain; charset=utf-8"
        )


def test_utf16_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "h\u00e9llo".encode("utf-16-le"))
    assert convert_file(path).text == "h\u00e9llo"


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes(codecs.BOM_UTF8 + b"# Title\n")
    assert convert_file(path).text == "# Title"


def test_unsupported_missing_and_directory(tmp_path: Path) -> None:
    path = tmp_path / "archive.xyz"
    path.write_bytes(b"data")
    with pytest.raises(ConversionError, match=r"archive\.xyz: unsupported file type \.xyz"):
        convert_file(path)
    with pytest.raises(ConversionError, match="no such file"):
        convert_file(tmp_path / "missing.txt")
    with pytest.raises(ConversionError, match="is a directory"):
        convert_file(tmp_path)


def test_conversion_error_is_an_input_error_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(InputError) as info:
        convert_file(path)
    assert "\n" not in str(info.value)


def test_form_feeds_do_not_survive(tmp_path: Path) -> None:
    # The pipeline stores PDF pages joined by form feeds, so other text must not contain any.
    path = tmp_path / "ff.txt"
    path.write_text("page one\fpage two\n", encoding="utf-8")
    assert "\f" not in convert_file(path).text


def test_supported_suffixes() -> None:
    assert {
        ".txt",
        ".md",
        ".markdown",
        ".html",
        ".htm",
        ".pdf",
        ".docx",
        ".rst",
        ".csv",
    } <= SUPPORTED_SUFFIXES
    assert all(s == s.lower() and s.startswith(".") for s in SUPPORTED_SUFFIXES)


def test_convert_text_titles() -> None:
    assert convert_text("# Hello\n\nworld").title == "Hello"
    assert convert_text("just some words\nmore", title="Given").title == "Given"
    long = "word " * 40
    title = convert_text(long).title
    assert title is not None and len(title) <= 80 and title.endswith("\u2026")
    doc = convert_text("a note", uri="note:1")
    assert doc.uri == "note:1" and doc.text == "a note"
    with pytest.raises(ConversionError, match="empty"):
        convert_text("  \n ")


def test_convert_bytes_dispatch() -> None:
    md = convert_bytes(
        b"# T\n\nbody", uri="https://x.test/readme.md", content_type="text/plain; charset=utf-8"
    )
    assert md.title == "T"
    latin = convert_bytes(
        "caf\u00e9".encode("latin-1"), uri="https://x.test/a", content_type="text/plain; charset=ISO-8859-1"
    )
    assert latin.text == "caf\u00e9"
    html = convert_bytes(
        b"<!DOCTYPE html><title>Sniffed</title><p>hi</p>", uri="https://x.test/", content_type=None
    )
    assert html.title == "Sniffed" and html.text == "hi"
    plain = convert_bytes(
        b"hello", uri="https://x.test/files/report.txt", content_type="application/octet-stream"
    )
    assert plain.title == "report" and plain.text == "hello"
    with pytest.raises(ConversionError, match="unsupported content type image/gif"):
        convert_bytes(b"GIF89a", uri="https://x.test/a.gif", content_type="image/gif")


def test_document_text_joins_segments() -> None:
    doc = ConvertedDocument("", None, [Segment("one\n", 1), Segment("   ", 2), Segment("two", 3)])
    assert doc.text == "one\n\ntwo"


@pytest.mark.parametrize(
    ("name", "text", "title"),
    [
        ("ch16-03-shared-state.md", "## Shared-State Concurrency\n\nMutexes.\n\n# Later H1\n", "Later H1"),
        (
            "ch16-03-shared-state.md",
            "Intro line.\n\n## Shared-State Concurrency\n\n### Deeper\n",
            "Shared-State Concurrency",
        ),
        ("guide.rst", "=======\nOverview\n=======\n\nText.\n", "Overview"),
        ("guide.rst", "Install\n*******\n\nText.\n", "Install"),
        ("notes.md", "No heading at all.\n", "notes"),
    ],
)
def test_a_document_without_an_h1_is_titled_by_its_first_heading(
    tmp_path: Path, name: str, text: str, title: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert convert_file(path).title == title


def test_extension_block_markers_are_not_stored() -> None:
    source = (
        "# Tabs\n\n"
        "//// tab | Test\n\nRun it.\n\n////\n\n"
        "/// note | Take care\nThe body.\n///\n\n"
        '!!! warning "Hot"\n    Oil burns.\n\n'
        "???+ tip\n    Trim the wick.\n\n"
        "::: details Summary\nInside.\n:::\n\n"
        "```\n///\n!!! kept in code\n```\n"
    )
    doc = convert_bytes(source.encode(), uri="file:///t.md", content_type="text/markdown")
    assert doc.text == (
        "# Tabs\n\nTest\n\nRun it.\n\n\n\nTake care\nThe body.\n\n\n"
        "Hot\n    Oil burns.\n\n\n    Trim the wick.\n\nSummary\nInside.\n\n\n"
        "```\n///\n!!! kept in code\n```"
    )
    assert doc.text.count("\n") == source.strip("\n").count("\n")  # lines stay the file's lines

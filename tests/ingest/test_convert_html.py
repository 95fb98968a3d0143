"""HTML conversion: markdown out, boilerplate gone, titles found."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError

PAGE = """<!DOCTYPE html>
<html><head><title>Page Title</title><meta charset="utf-8">
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<h1>Main Heading</h1>
<p>Hello <b>world</b>, caf\u00e9.</p>
<h2>Details</h2>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<pre><code>x = 1

y = 2</code></pre>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUg" alt="a chart">
</body></html>
"""


def test_html_file(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = convert_file(path)
    assert doc.title == "Page Title"
    text = doc.text
    assert text.startswith("# Main Heading")
    assert "Hello **world**, caf\u00e9." in text
    assert "## Details" in text
    assert "| k | v |" in text
    assert "x = 1\n\ny = 2" in text
    for gone in ("color: red", "script text", "Home", "About", "base64", "title: Page Title"):
        assert gone not in text
    assert "a chart" in text


def test_title_falls_back_to_h1_then_stem(tmp_path: Path) -> None:
    path = tmp_path / "fallback.htm"
    path.write_text("<html><body><h1>Only H1</h1><p>text</p></body></html>", encoding="utf-8")
    assert convert_file(path).title == "Only H1"
    path.write_text("<p>text</p>", encoding="utf-8")
    assert convert_file(path).title == "fallback"


def test_declared_charset_and_windows_1252_fallback() -> None:
    declared = '<meta charset="iso-8859-1"><p>caf\u00e9</p>'.encode("latin-1")
    assert convert_bytes(declared, uri="https://x.test/", content_type="text/html").text == "caf\u00e9"
    undeclared = "<p>\u201cquoted\u201d</p>".encode("cp1252")
    assert (
        "\u201cquoted\u201d"
        in convert_bytes(undeclared, uri="https://x.test/", content_type="text/html").text
    )


def test_html_without_content_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "blank.html"
    path.write_text(
        "<html><head><title>T</title><script>x()</script></head><body> </body></html>", encoding="utf-8"
    )
    with pytest.raises(ConversionError, match="is empty"):
        convert_file(path)


def test_relative_links_resolve_against_url() -> None:
    doc = convert_bytes(
        b'<p><a href="/docs">docs</a></p>', uri="https://x.test/a/b", content_type="text/html"
    )
    assert "https://x.test/docs" in doc.text


def test_converted_text_over_the_limit_is_refused_with_the_setting(tmp_path: Path) -> None:
    from haiku_cli.config.settings import IngestSettings

    path = tmp_path / "long.html"
    path.write_text("<html><body>" + "<p>Swifts never land.</p>" * 2000 + "</body></html>")
    assert convert_file(path, IngestSettings(max_text_mb=1)).text.count("Swifts") == 2000
    with pytest.raises(ConversionError) as refused:
        convert_file(path, IngestSettings(max_text_mb=0.01))
    assert str(refused.value) == (
        f"{path}: text of 39 KB, over the limit of 0.01 MB; skipped "
        "(raise [ingest] max_text_mb in the config file to add it)"
    )


def test_permalinks_beside_headings_leave_heading_paths() -> None:
    from haiku_cli.ingest.chunking import chunk_document

    page = (
        b'<title>Errors</title><h1 id="handling-errors">Handling Errors<a class="headerlink" '
        b'href="#handling-errors" title="Permanent link">&para;</a></h1><p>Text here.</p>'
        b'<h2 id="x">Use it <a class="anchor" href="#x">#</a></h2><p>More.</p>'
        b'<h2 id="y">Other <a href="#y">&sect;</a></h2><p>See <a href="#x">the use</a>.</p>'
    )
    doc = convert_bytes(page, uri="https://x.test/errors.html", content_type="text/html")
    assert [c.heading_path for c in chunk_document(doc, lambda s: len(s.split()))] == [
        ["Handling Errors"],
        ["Handling Errors", "Use it"],
        ["Handling Errors", "Other"],
    ]
    assert "[the use](https://x.test/errors.html#x)" in doc.text  # a link in the text stays

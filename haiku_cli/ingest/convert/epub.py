"""E-books (.epub): the chapters of the spine, in reading order, each a section read as HTML."""

from __future__ import annotations

import io
import posixpath
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree

from haiku_cli.ingest.convert.html import convert_html
from haiku_cli.ingest.convert.markdown import first_any_heading
from haiku_cli.ingest.convert.packages import check_unpacked_size
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html")


def read_epub(raw: RawDocument) -> ConvertedDocument:
    """Each chapter a section: its own first heading, else one named after its file, so chapters never
    share a chunk; titled by the book's dc:title."""
    check_unpacked_size(raw.data, raw.label, raw.limits, "EPUB")
    try:
        with zipfile.ZipFile(io.BytesIO(raw.data)) as book:
            title, chapters = _spine(book)
            segments = [_chapter(book, path, raw) for path in chapters]
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, UnicodeDecodeError, ValueError) as exc:
        raise ConversionError(f"{raw.label}: corrupt EPUB ({type(exc).__name__})") from exc
    segments = [s for s in segments if s.text.strip()]
    return ConvertedDocument(uri=raw.uri, title=title or raw.fallback_title, segments=segments)


def _spine(book: zipfile.ZipFile) -> tuple[str | None, list[str]]:
    """The book's title and the paths of its chapters in spine order."""
    container = ElementTree.fromstring(book.read("META-INF/container.xml"))
    rootfile = container.find(f".//{_CONTAINER}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise ValueError("no package document")
    opf_path = rootfile.get("full-path", "")
    package = ElementTree.fromstring(book.read(opf_path))
    base = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): (item.get("href", ""), item.get("media-type", ""))
        for item in package.iter(f"{_OPF}item")
        if "nav" not in (item.get("properties") or "").split()  # the table of contents, not a chapter
    }
    chapters = []
    for ref in package.iter(f"{_OPF}itemref"):
        href, media_type = manifest.get(ref.get("idref"), ("", ""))
        if href and media_type in _CHAPTER_TYPES:
            chapters.append(posixpath.normpath(posixpath.join(base, unquote(href))))
    if not chapters:
        raise ValueError("no chapters in the spine")
    title_element = package.find(f".//{_DC}title")
    title = " ".join((title_element.text or "").split()) if title_element is not None else ""
    return title or None, chapters


def _chapter(book: zipfile.ZipFile, path: str, raw: RawDocument) -> Segment:
    label = f"{raw.label}!{path}"
    doc = convert_html(book.read(path), label=label, uri=raw.uri, fallback_title=None)
    body = doc.text
    if body.strip() and first_any_heading(body.split("\n\n", 1)[0]) is None:
        name = doc.title or posixpath.splitext(posixpath.basename(path))[0]
        body = f"# {name}\n\n{body}"
    return Segment(body)


CONVERTER = Converter(
    name="epub",
    read=read_epub,
    suffixes=(".epub",),
    media_types=("application/epub+zip",),
    sniff=lambda data: data.startswith(b"PK\x03\x04") and b"mimetypeapplication/epub+zip" in data[:100],
)

"""HTML to markdown through html-to-markdown, without scripts, styles or navigation."""

from __future__ import annotations

import re
from typing import Any

from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.linked import with_linked_pictures
from haiku_cli.ingest.convert.markdown import split_front_matter
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.convert.text import decode_text, normalize_newlines
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# Boilerplate that carries no content of its own; html-to-markdown already drops script/style text.
_EXCLUDE = [
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "svg",
    "iframe",
    "[role=navigation]",
    "[aria-hidden=true]",
    # Permalinks beside headings (MkDocs/Sphinx `¶`, Asciidoctor and GitHub-style anchors).
    "a.headerlink",
    "a.anchor",
    "a.hash-link",
]


# Apache, nginx and Python's http.server title their folder listings so.
_LISTING_TITLE = re.compile(r"(?:index of|directory listing for)\s+/", re.IGNORECASE)
_LINK = re.compile(r"\[[^\]]*\]\([^)\s]+")
_LISTING_LINKS = 5


def sniff_charset(data: bytes) -> str | None:
    """The charset a `<meta>` tag near the top declares, if any."""
    m = _META_CHARSET.search(data[:4096])
    return m.group(1).decode("ascii") if m else None


def decode_html(data: bytes, label: str, charset: str | None) -> str:
    """Decode HTML by the declared charset, else UTF-8, else windows-1252 as browsers do."""
    declared = charset or sniff_charset(data)
    if declared:
        try:
            return normalize_newlines(data.decode(declared, errors="replace"))
        except LookupError:
            pass  # an unknown charset name: fall through to the usual guesses
    try:
        return decode_text(data, label, "utf-8")
    except ConversionError:
        if b"\x00" in data[:8192]:
            raise
        return normalize_newlines(data.decode("cp1252", errors="replace"))


def convert_html(
    data: bytes, *, label: str, uri: str, fallback_title: str | None, charset: str | None = None
) -> ConvertedDocument:
    """Convert an HTML page to one markdown segment, titled by <title>, else the first h1, else fallback."""
    from html_to_markdown import ConversionOptions, convert

    html = decode_html(data, label, charset)
    options = ConversionOptions(
        extract_metadata=True,
        exclude_selectors=_EXCLUDE,
        inline_data_media="keep",  # read as pictures, else as their alt text (convert.linked)
        base_url=uri if uri.startswith(("http://", "https://")) else None,
    )
    try:
        result = convert(html, options)
    except Exception as exc:  # the library raises its own hierarchy; any failure means unreadable HTML
        reason = exception_reason(exc, upto="line")
        raise ConversionError(f"{label}: cannot convert HTML ({reason})") from exc
    # With metadata extraction on, the converter prepends it as YAML front matter; it is not content.
    _, body = split_front_matter(result.content or "")
    title = _html_title(result.metadata) or fallback_title
    notes: tuple[str, ...] = ()
    if uri.startswith(("http://", "https://")) and _directory_listing(title, body):
        notes = (
            f"{label}: a directory listing, stored as one page of links; nothing it links to is crawled",
        )
    return ConvertedDocument(uri=uri, title=title, segments=[Segment(body.strip("\n"))], notes=notes)


def _directory_listing(title: str | None, body: str) -> bool:
    """Whether a page is a server's listing of a folder: titled so, or little more than a list of links."""
    if title and _LISTING_TITLE.match(title):
        return True
    lines = [line for line in body.splitlines() if line.strip()]
    linked = sum(bool(_LINK.search(line)) for line in lines)
    return linked >= _LISTING_LINKS and linked >= 0.8 * len(lines)


def _html_title(metadata: Any) -> str | None:
    document = getattr(metadata, "document", None)
    title = " ".join((getattr(document, "title", None) or "").split())
    if title:
        return title
    for header in getattr(metadata, "headers", None) or []:
        if header.level == 1 and header.text.strip():
            return " ".join(header.text.split())
    return None


def read_html(raw: RawDocument) -> ConvertedDocument:
    """An HTML page, its linked images stored as its pictures."""
    doc = convert_html(
        raw.data, label=raw.label, uri=raw.uri, fallback_title=raw.fallback_title, charset=raw.charset
    )
    return with_linked_pictures(doc, raw.label, raw.limits)


def _is_html(data: bytes) -> bool:
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html"))


CONVERTER = Converter(
    name="html",
    read=read_html,
    suffixes=(".html", ".htm"),
    media_types=("text/html", "application/xhtml+xml"),
    sniff=_is_html,
)

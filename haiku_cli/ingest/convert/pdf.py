"""PDF text layer through pypdfium2: one segment per page, running headers dropped, bookmarks as headings."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.garbled import unreadable
from haiku_cli.ingest.convert.pdf_glyphs import map_unmapped
from haiku_cli.ingest.convert.pdf_scans import Scans, read_scans
from haiku_cli.ingest.convert.pdf_streams import check_pdf_streams
from haiku_cli.ingest.convert.pdf_title import largest_type, pick_title
from haiku_cli.ingest.convert.registry import Converter, reading
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

# PDFium is not thread-safe; conversions may run in worker threads.
_PDFIUM_LOCK = threading.Lock()

_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
# PDFium marks a hyphen at a line break with \x02; private-use glyphs are font artefacts. Form feeds
# go too: the pipeline stores pages joined by them.
_SOFT_HYPHEN = re.compile(r"\x02\n?")
_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff\ufffe\uffff]")
# Lines a markdown reader would take for structure; PDF text has none, so such lines are escaped.
_MARKDOWN_LOOKALIKE = re.compile(r"^( {0,3})(#|```|~~~)")
# Bare page numbers ("12", "- 12 -", "Page 3 of 9", "xiv") at the top or bottom of a page.
_ROMAN = r"(?=[mdclxvi])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_PAGE_NUMBER = re.compile(
    rf"(?:page\s+)?[-\u2013(\[]?\s*(?:\d+|{_ROMAN})\s*[-\u2013)\]]?(?:\s*(?:of|/)\s*\d+)?", re.IGNORECASE
)
# Table-of-contents dot leaders carry nothing but tokens.
_DOT_LEADER = re.compile(r"(?:[ \t]*\.){5,}[ \t]*")
_SECTION_PREFIX = re.compile(
    r"(?:(?:chapter|section|appendix|part)\s+)?[0-9a-z]{0,4}(?:\.[0-9a-z]+)*[.:)]?\s+", re.IGNORECASE
)


def _unopened(exc: Exception) -> str:
    """Why PDFium would not open a document, by the error code it gives for a load (not its message)."""
    import pypdfium2.raw as pdfium_c

    locked = getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD
    return "password-protected PDF" if locked else "corrupt PDF"


def convert_pdf(
    data: bytes, *, label: str, uri: str, fallback_title: str | None, limits: IngestSettings | None = None
) -> ConvertedDocument:
    """Extract the text layer and the pictures page by page (a page without text is kept as a render);
    a corrupt PDF, or one with neither text nor pictures, raises ConversionError."""
    import pypdfium2 as pdfium

    from haiku_cli.ingest.convert.images import PictureCollector
    from haiku_cli.ingest.convert.pdf_pictures import page_pictures, place_markers

    collector = PictureCollector(label, limits)
    limits = collector.limits
    check_pdf_streams(data, label, limits)

    with _PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise ConversionError(f"{label}: {_unopened(exc)}") from exc
        try:
            read = [_page_lines(pdf, i) for i in range(len(pdf))]
            scans = read_scans(pdf, read, limits, label, _unlocked, _page_ranges)
            # A garbled page OCR did not read keeps its place, empty.
            garbled = [i + 1 for i, lines in enumerate(read) if lines is None and i not in scans.lines]
            recovered = [i + 1 for i, lines in enumerate(read) if lines is None and i in scans.lines]
            pages = [scans.lines.get(i) or lines or [] for i, lines in enumerate(read)]
            title = _title(pdf, pages, scans)
            # A garbled page is not a scan: its images are kept, but it is not rendered.
            placed = [_pictures(pdf, i, read[i], collector, page_pictures) for i in range(len(pdf))]
            bookmarks = _bookmarks(pdf)
        except pdfium.PdfiumError as exc:
            raise ConversionError(f"{label}: corrupt PDF") from exc
        finally:
            pdf.close()
    if not any(line.strip() for lines in pages for line in lines) and not collector.pictures:
        if garbled:
            raise ConversionError(f"{label}: the text layer is unreadable (garbled fonts); nothing to index")
        raise ConversionError(f"{label}: no text layer (scanned?)")
    notes = _garbled_notes(label, garbled, recovered) + tuple(scans.notes)
    _drop_running_lines(pages)
    _mark_headings(pages, bookmarks)
    for lines, here in zip(pages, placed, strict=True):
        place_markers(lines, here, collector)
    # Every page keeps its segment, blank or not, so segment i is always page i + 1.
    segments = [Segment("\n".join(lines).strip("\n"), page=i + 1) for i, lines in enumerate(pages)]
    pictures, picture_notes = collector.finish()
    return ConvertedDocument(
        uri=uri,
        title=title or fallback_title,
        segments=segments,
        pictures=pictures,
        notes=notes + picture_notes,
    )


def _title(pdf: Any, pages: list[list[str]], scans: Scans) -> str | None:
    """The title from the metadata, the first page with text on it (of the first two) and its type sizes."""
    first = next((i for i, lines in enumerate(pages[:2]) if any(x.strip() for x in lines)), None)
    # Type sizes come from the text layer: a page read by OCR offers its first line instead.
    if first is not None and first in scans.lines:
        font_title = scans.first_line(first)
    else:
        font_title = _largest_type(pdf, first) if first is not None else None
    first_text = "\n".join(pages[first]) if first is not None else ""
    return pick_title(pdf.get_metadata_dict().get("Title"), first_text, font_title)


def _garbled_notes(label: str, garbled: list[int], recovered: list[int]) -> tuple[str, ...]:
    """The pages whose text layer could not be read: left out, or read by OCR instead."""
    notes: tuple[str, ...] = ()
    for numbers, done in ((garbled, "left out"), (recovered, "read by OCR instead")):
        if numbers:
            which = f"page{'' if len(numbers) == 1 else 's'} {_page_ranges(numbers)}"
            notes += (f"{label}: {which} {done}: the text layer is unreadable (garbled fonts)",)
    return notes


@contextmanager
def _unlocked() -> Iterator[None]:
    """PDFium free for other threads while this one (holding the lock) does long work without it."""
    _PDFIUM_LOCK.release()
    try:
        yield
    finally:
        _PDFIUM_LOCK.acquire()


def _pictures(pdf: Any, index: int, lines: list[str] | None, collector: Any, collect: Any) -> list[Any]:
    page = pdf[index]
    try:
        has_text = lines is None or any(line.strip() for line in lines)
        return collect(page, index + 1, collector, has_text=has_text)
    except Exception as exc:  # PDFium or Pillow failing on one page's pictures: the text is still read
        collector.skip(f"on page {index + 1}", f"cannot be read ({type(exc).__name__})")
        return []
    finally:
        page.close()


def _page_ranges(pages: list[int]) -> str:
    """`1, 3-5, 9` for the pages 1, 3, 4, 5 and 9."""
    runs: list[list[int]] = []
    for page in pages:
        if runs and page == runs[-1][-1] + 1:
            runs[-1].append(page)
        else:
            runs.append([page])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _page_lines(pdf: Any, index: int) -> list[str] | None:
    """The page's lines, cleaned; None when its text layer is mojibake."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            raw = map_unmapped(textpage.get_text_range(), textpage)
        finally:
            textpage.close()
    finally:
        page.close()
    text = _SOFT_HYPHEN.sub("", raw.replace("\r\n", "\n").replace("\r", "\n"))
    text = text.translate(_LIGATURES)
    if unreadable(text):  # judged before font artefacts go: they are part of what makes it garbage
        return None
    text = _DOT_LEADER.sub(" … ", _JUNK.sub("", text))
    return [_MARKDOWN_LOOKALIKE.sub(r"\1\\\2", line.rstrip()) for line in text.split("\n")]


def _largest_type(pdf: Any, index: int) -> str | None:
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            return largest_type(textpage)
        finally:
            textpage.close()
    finally:
        page.close()


def _bookmarks(pdf: Any) -> list[tuple[int, str, int]]:
    """(level from 1, title, 0-based page index) of each bookmark that points at a page."""
    found = []
    for mark in pdf.get_toc(max_depth=6):
        dest = mark.get_dest()
        index = dest.get_index() if dest is not None else None
        title = " ".join((mark.get_title() or "").split())
        if index is not None and title:
            found.append((mark.level + 1, title, index))
    return found


def _drop_running_lines(pages: list[list[str]]) -> None:
    """Remove page numbers and the headers and footers that repeat at the edges of most pages."""

    def key(line: str) -> str:
        return re.sub(r"\d+", "#", " ".join(line.split()).lower())

    def edges(lines: list[str]) -> list[int]:
        filled = [i for i, line in enumerate(lines) if line.strip()]
        # A page's only line is content, whatever it looks like.
        return sorted({filled[0], filled[-1]}) if len(filled) > 1 else []

    counts: Counter[str] = Counter()
    for lines in pages:
        counts.update({key(lines[i]) for i in edges(lines)})
    running = {k for k, n in counts.items() if n >= max(3, len(pages) // 2)}
    for lines in pages:
        for i in edges(lines):
            if key(lines[i]) in running or _PAGE_NUMBER.fullmatch(lines[i].strip()):
                lines[i] = ""


def _mark_headings(pages: list[list[str]], bookmarks: list[tuple[int, str, int]]) -> None:
    """Turn the line each bookmark names on its target page into a markdown heading of its level."""
    cursor: dict[int, int] = {}
    for level, title, index in bookmarks:
        if not 0 <= index < len(pages):
            continue
        lines = pages[index]
        start = cursor.get(index, 0)
        for i in [*range(start, len(lines)), *range(start)]:
            if _names_heading(lines[i], title):
                lines[i] = f"\n{'#' * min(level, 6)} {' '.join(lines[i].split())}\n"
                cursor[index] = i + 1
                break


def _names_heading(line: str, title: str) -> bool:
    line = " ".join(line.split()).lower()
    title = title.lower()
    if line == title:
        return True
    # "3.1 Shell Syntax" or "Chapter 3: Basics" for the bookmark "Shell Syntax" / "Basics".
    return line.endswith(title) and bool(_SECTION_PREFIX.fullmatch(line[: len(line) - len(title)]))


CONVERTER = Converter(
    name="pdf",
    read=reading(convert_pdf),
    suffixes=(".pdf",),
    media_types=("application/pdf", "application/x-pdf"),
    sniff=lambda data: data.startswith(b"%PDF-"),
)

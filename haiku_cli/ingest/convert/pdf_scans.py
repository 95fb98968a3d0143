"""PDF pages read by OCR: those without a usable text layer (none, or garbled), or every page when asked."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.garbled import unreadable
from haiku_cli.ingest.convert.ocr import MISSING, ocr_available, read_picture, report_progress
from haiku_cli.ingest.convert.pdf_title import reads_as_words

# Rendered for OCR at this many dots per inch, at most _MAX_SIDE pixels on the longer side (RapidOCR
# scales larger pictures down to that before detection anyway).
_OCR_DPI = 200
_MAX_SIDE = 2000
_TITLE_CHARS = 100


@dataclass
class Scans:
    """The lines OCR read, by 0-based page index, and what a user should know about it."""

    lines: dict[int, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)  # 1-based: pages without text OCR could have read

    def first_line(self, index: int) -> str | None:
        """The first line OCR read on a page, when it is short enough to be a title."""
        line = next((x.strip() for x in self.lines.get(index, []) if x.strip()), "")
        return line if 0 < len(line) <= _TITLE_CHARS and reads_as_words(line) else None


def read_scans(
    pdf: Any,
    read: list[list[str] | None],
    limits: IngestSettings,
    label: str,
    unlocked: Callable[[], AbstractContextManager[None]],
    page_ranges: Callable[[list[int]], str],
) -> Scans:
    """OCR the pages that need it (`read[i]` is None for a garbled page). `unlocked` lets other threads use
    PDFium while a page is recognised; rendering happens under the lock."""
    scans = Scans()
    if limits.ocr == "off":
        return scans
    wanted = [i for i, lines in enumerate(read) if limits.ocr == "always" or _needs_ocr(pdf, i, lines)]
    if not wanted:
        return scans
    if not ocr_available():
        textless = [
            i + 1 for i in wanted if (lines := read[i]) is not None and not any(x.strip() for x in lines)
        ]
        if textless:
            which = f"page{'' if len(textless) == 1 else 's'} {page_ranges(textless)}"
            scans.notes.append(f"{label}: {which} without a text layer kept as pictures only")
        scans.notes.append(MISSING)
        scans.unread = textless
        return scans
    cut: list[int] = []
    for n, i in enumerate(wanted, start=1):
        report_progress(f"OCR page {n}/{len(wanted)}")
        image = _render(pdf, i)
        with unlocked():
            text = read_picture(image, limits.ocr_page_seconds)
        if not text.complete:
            cut.append(i + 1)
        # A page whose glyphs draw garbage (a cipher, a symbol font) reads as garbage: not kept.
        if any(line.strip() for line in text.lines) and not unreadable("\n".join(text.lines)):
            scans.lines[i] = text.lines
    if cut:
        which = f"page{'' if len(cut) == 1 else 's'} {page_ranges(cut)}"
        scans.notes.append(
            f"{label}: {which}: OCR stopped after {limits.ocr_page_seconds:g} s a page, the rest of the "
            "page left out (raise [ingest] ocr_page_seconds)"
        )
    return scans


def _needs_ocr(pdf: Any, index: int, lines: list[str] | None) -> bool:
    if lines is None:
        return True  # garbled: its text layer is no use
    if any(line.strip() for line in lines):
        return False
    page = pdf[index]
    try:
        return next(iter(page.get_objects(max_depth=1)), None) is not None  # a blank page has nothing to read
    finally:
        page.close()


def _render(pdf: Any, index: int) -> Any:
    page = pdf[index]
    try:
        width, height = page.get_size()
        scale = min(_OCR_DPI / 72, _MAX_SIDE / max(width, height, 1))
        return page.render(scale=scale, grayscale=True).to_pil()
    finally:
        page.close()

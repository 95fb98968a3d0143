"""The pictures of a PDF page: its image objects, or a render of a page without text (a scan).

Each picture's marker goes into the page's lines where the image sits (after the lines above its middle),
so the chunk around a figure, and usually its caption, covers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from haiku_cli.ingest.convert.images import PictureCollector
from haiku_cli.store.markers import marker

# Lines that caption a figure: "Figure 3: ...", "Fig. 2.", "Table 1 -", "Plate IV".
_CAPTION = re.compile(
    r"^\s*(?:fig(?:ure)?|table|plate|chart|diagram|exhibit)\.?\s*[\dIVXivx]+", re.IGNORECASE
)
# A page render for a scanned page: enough to read it, at most this many dots per inch.
_RENDER_DPI = 150


@dataclass(frozen=True)
class Placed:
    """A picture's marker and the processed line of its page it goes before."""

    line: int
    reference: str
    caption: str = ""


def page_pictures(page: Any, number: int, collector: PictureCollector, has_text: bool) -> list[Placed]:
    """Collect the pictures of one page (1-based `number`); where each goes among the page's lines."""
    import pypdfium2 as pdfium

    if not has_text:
        return _scan(page, number, collector)
    placed: list[Placed] = []
    lines: tuple[list[float], list[int]] | None = None
    objects = page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=3)
    for n, obj in enumerate(objects, start=1):
        reference = f"p{number}-{n}"
        box = tuple(float(v) for v in obj.get_bounds())
        picture = _image(obj, reference, collector, page=number, box=box, source=f"page {number} image {n}")
        if picture is None:
            continue
        if lines is None:
            lines = _raw_lines(page)
        tops, joined = lines
        middle = (box[1] + box[3]) / 2
        # After the last line above the image's middle (blank lines have no place on the page).
        raw = max((i + 1 for i, top in enumerate(tops) if top > middle), default=0)
        placed.append(Placed(raw - joined[min(raw, len(joined) - 1)], reference))
    return placed


def _scan(page: Any, number: int, collector: PictureCollector) -> list[Placed]:
    if next(iter(page.get_objects(max_depth=1)), None) is None:
        return []  # a blank page: nothing to show
    reference = f"p{number}-scan"
    if collector.over_limit():
        return []
    width, height = page.get_size()
    scale = min(_RENDER_DPI / 72, (collector.limits.max_picture_pixels / max(width * height, 1)) ** 0.5)
    image = page.render(scale=scale).to_pil()
    if all(low == high for low, high in image.getextrema()):
        return []  # drawn, but in one color: blank all the same
    caption = f"page {number}, which has no text layer"
    box = (0.0, 0.0, float(width), float(height))
    if collector.add_image(image, reference, page=number, box=box, source="page render", caption=caption):
        return [Placed(0, reference, caption)]
    return []


def _image(obj: Any, reference: str, collector: PictureCollector, **place: Any) -> Any:
    width, height = obj.get_px_size()
    if collector.declared_too_large(width, height, reference):
        return None
    try:
        # The stream as stored: its size and digest tell tiles and repeated logos before any decoding.
        stored = bytes(obj.get_data(decode_simple=False))
        if collector.decoration(width, height, stored, repeats=True) or collector.over_limit():
            return None
        if obj.get_filters() == ["DCTDecode"]:
            # A JPEG as stored: kept as it is when within the limits, no re-encoding.
            return collector.add_encoded(stored, reference, check=False, **place)
        image = obj.get_bitmap(render=False).to_pil()
    except Exception as exc:  # PDFium's failures on a damaged or exotic image object
        collector.skip(reference, f"cannot be decoded ({type(exc).__name__})")
        return None
    return collector.add_image(image, reference, check=False, **place)


def _raw_lines(page: Any) -> tuple[list[float], list[int]]:
    """Per raw line of the page's text (as `get_text_range` breaks them): its top in points, and how many
    lines before it ended in a soft hyphen (the converter joins those to the next line)."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        count = min(textpage.count_chars(), len(text))
        tops: list[float] = []
        joined = [0]
        top = 0.0
        for i in range(count):
            ch = text[i]
            if ch == "\n" or (ch == "\r" and text[i + 1 : i + 2] != "\n"):
                tops.append(top)
                ended_soft = text[i - 1 : i] == "\x02" or text[i - 2 : i] == "\x02\r"
                joined.append(joined[-1] + ended_soft)
                top = 0.0
            elif ch != "\r":
                top = max(top, textpage.get_charbox(i)[3])
        tops.append(top)
        return tops, joined
    finally:
        textpage.close()


def place_markers(lines: list[str], placed: list[Placed], collector: PictureCollector) -> None:
    """Insert each picture's marker into its page's lines, as a paragraph of its own.

    A figure without a caption takes a caption line ("Figure 2: ...") right after it, if there is one.
    """
    for item in sorted(placed, key=lambda p: p.line, reverse=True):
        index = max(0, min(len(lines), item.line))
        caption = item.caption or _caption_after(lines, index)
        if caption and not item.caption:
            collector.set_caption(item.reference, caption)
        lines.insert(index, f"\n{marker(item.reference, caption)}\n")


def _caption_after(lines: list[str], index: int) -> str:
    for line in lines[index : index + 8]:
        if line.strip():
            return line.strip() if _CAPTION.match(line) else ""
    return ""

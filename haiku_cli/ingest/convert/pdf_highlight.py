"""A PDF page drawn as a PNG with some of its text highlighted, found through PDFium's text boxes."""

from __future__ import annotations

import io
import re
from typing import Any

from haiku_cli.ingest.convert.pdf import _PDFIUM_LOCK
from haiku_cli.ingest.document import ConversionError
from haiku_cli.store.markers import MARKER

_SCALE = 2.0  # 144 dpi: small print stays readable
_HIGHLIGHT = (255, 214, 0, 110)  # translucent yellow
_MIN_LINE = 4  # shorter lines (a page number, a stray word) would be found all over the page


def highlight_page(data: bytes, page: int, text: str, *, label: str) -> tuple[bytes, int]:
    """The 1-based `page` of a PDF as PNG bytes with the lines of `text` found on it highlighted, and
    how many were found. A line is looked for after the previous one found, so repeats keep their order."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    with _PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise ConversionError(f"{label}: cannot be opened as a PDF") from exc
        try:
            if not 1 <= page <= len(pdf):
                raise ConversionError(f"{label}: has no page {page} (it has {len(pdf)}); was it changed?")
            pdf_page = pdf[page - 1]
            _, height = pdf_page.get_size()
            image = pdf_page.render(scale=_SCALE).to_pil().convert("RGBA")
            textpage = pdf_page.get_textpage()
            boxes, found = [], 0
            start = 0
            for line in highlight_lines(text):
                searcher = textpage.search(line, match_case=False, index=start)
                hit = searcher.get_next()
                searcher.close()
                if hit is None:
                    continue
                index, count = hit
                found += 1
                start = index + count
                for i in range(textpage.count_rects(index, count)):
                    left, bottom, right, top = textpage.get_rect(i)
                    boxes.append(
                        (left * _SCALE, (height - top) * _SCALE, right * _SCALE, (height - bottom) * _SCALE)
                    )
            scanned = textpage.count_chars() == 0
            textpage.close()
            pdf_page.close()
        finally:
            pdf.close()
    if scanned:
        boxes, found = _ocr_boxes(image, text)
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for box in boxes:
        draw.rectangle(box, fill=_HIGHLIGHT)
    out = io.BytesIO()
    Image.alpha_composite(image, overlay).convert("RGB").save(out, format="PNG")
    return out.getvalue(), found


def _ocr_boxes(image: Any, text: str) -> tuple[list[tuple[float, float, float, float]], int]:
    """For a page without a text layer (its text was read by OCR): the boxes of the lines OCR reads on
    the drawn page that hold a line of `text`, and how many of the text's lines were found."""
    from haiku_cli.ingest.convert.ocr import ocr_available, read_lines

    if not ocr_available():
        return [], 0
    read = [(" ".join(line.lower().split()), box) for line, box in read_lines(image.convert("RGB"), 60)]
    boxes, found = [], 0
    for line in highlight_lines(text):
        wanted = line.lower()
        hits = [box for seen, box in read if len(seen) >= _MIN_LINE and (seen in wanted or wanted in seen)]
        found += bool(hits)
        boxes.extend(hits)
    return boxes, found


def highlight_lines(text: str) -> list[str]:
    """The chunk's lines as they may appear on the page: no picture markers, heading marks or escapes."""
    lines = []
    for raw in MARKER.sub("", text).splitlines():
        line = re.sub(r"^\s*(?:#{1,6}\s+|\\\\(?=[#`~]))", "", raw).strip()
        line = " ".join(line.split())
        if len(line) >= _MIN_LINE:
            lines.append(line)
    return lines

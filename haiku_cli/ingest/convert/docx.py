"""Word .docx through python-docx: headings become markdown #, lists bullets, tables markdown tables."""

from __future__ import annotations

import io
import re
from typing import Any

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.images import PictureCollector
from haiku_cli.ingest.convert.office_tables import markdown_table
from haiku_cli.ingest.convert.packages import check_unpacked_size
from haiku_cli.ingest.convert.pdf_title import clean_metadata_title
from haiku_cli.ingest.convert.registry import Converter, reading
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment
from haiku_cli.store.markers import marker

_HEADING = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def convert_docx(
    data: bytes, *, label: str, uri: str, fallback_title: str | None, limits: IngestSettings
) -> ConvertedDocument:
    """Convert a .docx body, in document order, to one markdown segment titled by its core properties.

    A package that would decompress beyond the `[ingest]` limits (a decompression bomb) is refused
    before anything is decompressed.
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    check_unpacked_size(data, label, limits, "DOCX")
    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, OSError) as exc:
        raise ConversionError(f"{label}: corrupt DOCX") from exc
    except Exception as exc:  # zipfile and lxml raise a variety of errors on damaged packages
        raise ConversionError(f"{label}: corrupt DOCX ({type(exc).__name__})") from exc

    styles = _StyleNames(document)
    collector = PictureCollector(label, limits)
    blocks: list[str] = []
    first_title: str | None = None
    for item in document.iter_inner_content():
        if hasattr(item, "rows"):
            blocks.append(markdown_table(item))
            continue
        text, is_title = _paragraph(item, styles)
        if text:
            blocks.append(text)
            if is_title and first_title is None:
                first_title = text.lstrip("# ").strip()
        blocks.extend(_inline_pictures(document, item, collector))
    # A template's name or a file name left in the core properties is no title.
    core_title = clean_metadata_title(document.core_properties.title)
    title = core_title or first_title or fallback_title
    body = "\n\n".join(b for b in blocks if b.strip())
    pictures, notes = collector.finish()
    return ConvertedDocument(uri=uri, title=title, segments=[Segment(body)], pictures=pictures, notes=notes)


def _inline_pictures(document: Any, paragraph: Any, collector: PictureCollector) -> list[str]:
    """Store the images drawn in a paragraph; their markers, which follow the paragraph's text."""
    markers = []
    for drawing in paragraph._p.xpath(".//wp:inline | .//wp:anchor"):  # python-docx has no picture API
        reference = collector.next_reference()
        described = drawing.xpath("./wp:docPr")
        caption = ""
        if described:
            caption = described[0].get("descr") or described[0].get("title") or ""
        for rid in drawing.xpath(".//a:blip/@r:embed")[:1]:
            part = document.part.related_parts.get(rid)
            blob = getattr(part, "blob", None)
            if blob is None:
                collector.skip(reference, "its image is missing from the package")
            elif collector.add_encoded(blob, reference, caption=caption, source=str(part.partname)):
                markers.append(marker(reference, caption))
    return markers


class _StyleNames:
    """Paragraph style names by style id, looked up once per document.

    python-docx's `paragraph.style` searches the styles part on every call (milliseconds each), which
    made a document of many thousand paragraphs take minutes and a decompression bomb hours.
    """

    def __init__(self, document: Any) -> None:
        from docx.enum.style import WD_STYLE_TYPE

        self._names = {s.style_id: s.name or "" for s in document.styles if s.type == WD_STYLE_TYPE.PARAGRAPH}
        default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
        self._default = (default.name or "") if default is not None else ""

    def of(self, paragraph: Any) -> str:
        """The name of a paragraph's style ("" when it has none)."""
        style_id = paragraph._p.style  # the raw w:pStyle id; python-docx has no public cheap accessor
        if style_id is None:
            return self._default
        return self._names.get(style_id, self._default)


def _paragraph(paragraph: Any, styles: _StyleNames) -> tuple[str, bool]:
    """The markdown for one paragraph, and whether it is a title or top-level heading."""
    text = " ".join(paragraph.text.split())
    if not text:
        return "", False
    style = styles.of(paragraph)
    if style.lower() == "title":
        return f"# {text}", True
    m = _HEADING.match(style)
    if m:
        level = max(1, min(int(m.group(1)), 6))
        return f"{'#' * level} {text}", level == 1
    lowered = style.lower()
    if lowered.startswith("list number"):
        return f"1. {text}", False
    if lowered.startswith("list"):
        return f"- {text}", False
    return text, False


CONVERTER = Converter(
    name="docx",
    read=reading(convert_docx),
    suffixes=(".docx",),
    media_types=("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
    sniff=lambda data: data.startswith(b"PK\x03\x04") and b"word/document.xml" in data,
)

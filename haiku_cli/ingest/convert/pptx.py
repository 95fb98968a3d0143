"""PowerPoint (.pptx): one page per slide, so hits and citations carry the slide's number as PDFs carry
their page's; each slide's title a heading, its text, tables and speaker notes below."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from haiku_cli.ingest.convert.images import PictureCollector
from haiku_cli.ingest.convert.office_tables import markdown_table
from haiku_cli.ingest.convert.packages import check_unpacked_size
from haiku_cli.ingest.convert.pdf_title import clean_metadata_title
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment
from haiku_cli.store.markers import marker


def read_pptx(raw: RawDocument) -> ConvertedDocument:
    """Every slide as one segment numbered as the slide is (an empty slide keeps its number, empty)."""
    from pptx import Presentation

    check_unpacked_size(raw.data, raw.label, raw.limits, "PPTX")
    collector = PictureCollector(raw.label, raw.limits)
    try:
        deck = Presentation(io.BytesIO(raw.data))
        slides = [_slide(slide, number, collector) for number, slide in enumerate(deck.slides, start=1)]
        core_title = clean_metadata_title(deck.core_properties.title)
    except Exception as exc:  # zipfile, lxml and python-pptx raise a variety of errors on damaged packages
        raise ConversionError(f"{raw.label}: corrupt PPTX ({type(exc).__name__})") from exc
    first_title = next((title for title, _ in slides if title), None)
    segments = [Segment(text, page=number) for number, (_, text) in enumerate(slides, start=1)]
    pictures, notes = collector.finish()
    title = core_title or first_title or raw.fallback_title
    return ConvertedDocument(uri=raw.uri, title=title, segments=segments, pictures=pictures, notes=notes)


def _slide(slide: Any, number: int, collector: PictureCollector) -> tuple[str | None, str]:
    """A slide's title and its Markdown: the title as a heading, the other shapes' text and pictures,
    the notes."""
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    blocks = [f"## {title}"] if title else []
    for shape in _shapes(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            blocks.append(markdown_table(shape.table))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            blocks.append(_paragraphs(shape.text_frame))
        elif hasattr(shape, "image"):
            blocks.append(_picture(shape, number, collector))
    if slide.has_notes_slide:
        notes = _paragraphs(slide.notes_slide.notes_text_frame) if slide.notes_slide.notes_text_frame else ""
        if notes:
            blocks.append(f"Speaker notes:\n\n{notes}")
    return title or None, "\n\n".join(b for b in blocks if b.strip())


def _shapes(shapes: Any) -> Iterator[Any]:
    """Shapes in reading order, those inside groups included."""
    for shape in shapes:
        if getattr(shape, "shape_type", None) is not None and hasattr(shape, "shapes"):
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _picture(shape: Any, number: int, collector: PictureCollector) -> str:
    """Store a picture shape's image; its marker, or "" when it is skipped."""
    reference = collector.next_reference()
    described = shape._element.xpath("./p:nvPicPr/p:cNvPr/@descr")  # python-pptx has no alt-text API
    caption = str(described[0]) if described else ""
    try:
        image = shape.image
        blob, name = image.blob, image.filename
    except (KeyError, ValueError, AttributeError):
        collector.skip(reference, "its image is missing from the package")
        return ""
    kept = collector.add_encoded(blob, reference, caption=caption, page=number, source=name)
    return marker(reference, caption) if kept is not None else ""


def _paragraphs(frame: Any) -> str:
    lines = []
    for paragraph in frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if text:
            # Indented paragraphs are bullets under the one above.
            lines.append(f"{'  ' * paragraph.level}- {text}" if paragraph.level else text)
    return "\n".join(lines)


CONVERTER = Converter(
    name="pptx",
    read=read_pptx,
    suffixes=(".pptx",),
    media_types=("application/vnd.openxmlformats-officedocument.presentationml.presentation",),
    sniff=lambda data: data.startswith(b"PK\x03\x04") and b"ppt/presentation.xml" in data,
)

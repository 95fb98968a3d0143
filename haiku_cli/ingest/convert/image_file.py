"""An image file (`.png`, `.jpg`, `.webp`, `.tiff`, ...) as a document: its picture, and the text OCR reads
in it below the picture's marker. Each frame of a multi-page TIFF is a page."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.images import BOMB_FACTOR, PictureCollector
from haiku_cli.ingest.convert.ocr import EXTRA, ocr_available, read_picture, report_progress
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment
from haiku_cli.store.markers import marker

if TYPE_CHECKING:
    from PIL.Image import Image

# What OCR reads: at most this many pixels on the longer side (RapidOCR detects on no more than that).
_OCR_SIDE = 2000


def convert_image(
    data: bytes, *, label: str, uri: str, fallback_title: str | None, limits: IngestSettings | None = None
) -> ConvertedDocument:
    """The image's pictures (a frame each) with the text OCR reads in them; a damaged image, or one
    declaring a decompression bomb's pixel count, raises ConversionError."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    limits = limits or IngestSettings()
    collector = PictureCollector(label, limits)
    segments: list[Segment] = []
    cut: list[int] = []
    caption = fallback_title or ""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > BOMB_FACTOR * limits.max_picture_pixels:
                raise ConversionError(f"{label}: declares {width}x{height} pixels, too many to decode")
            frames = getattr(image, "n_frames", 1)
            for n, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if n > max(1, limits.max_pictures):
                    break
                frame.load()
                page = n if frames > 1 else None
                reference = f"page-{n}" if frames > 1 else "image"
                lines: list[str] = []
                if limits.ocr != "off":
                    report_progress(f"OCR image {n}/{frames}" if frames > 1 else "OCR")
                    read = read_picture(_for_ocr(frame), limits.ocr_page_seconds)
                    lines = read.lines
                    if not read.complete:
                        cut.append(n)
                kept = collector.add_image(frame.copy(), reference, page=page, source="image file")
                mark = marker(reference, caption) if kept is not None else ""
                segments.append(Segment("\n\n".join(p for p in (mark, "\n".join(lines)) if p), page=page))
    except (UnidentifiedImageError, Image.DecompressionBombError):
        raise ConversionError(f"{label}: not an image haiku can read") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:  # Pillow's ways of saying "damaged"
        raise ConversionError(f"{label}: damaged image ({type(exc).__name__})") from exc
    pictures, notes = collector.finish()
    if limits.ocr == "off":
        notes += (f"{label}: its words not read: [ingest] ocr is off",)
    if cut:
        notes += (
            f"{label}: OCR stopped after {limits.ocr_page_seconds:g} s, the rest of the image left out "
            "(raise [ingest] ocr_page_seconds)",
        )
    return ConvertedDocument(uri=uri, title=fallback_title, segments=segments, pictures=pictures, notes=notes)


def _for_ocr(frame: Image) -> Image:
    image = frame.convert("RGB")
    if max(image.size) > _OCR_SIDE:
        image.thumbnail((_OCR_SIDE, _OCR_SIDE))
    return image


def read_image(raw: RawDocument) -> ConvertedDocument:
    """An image file's pictures and the words OCR reads in them."""
    return convert_image(
        raw.data, label=raw.label, uri=raw.uri, fallback_title=raw.fallback_title, limits=raw.limits
    )


# Image files are read only with the `ocr` extra: without it their words could not be searched, and a
# folder's pictures are counted as unsupported files, as before.
CONVERTER = Converter(
    name="image",
    read=read_image,
    suffixes=(".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff"),
    media_types=("image/png", "image/jpeg", "image/webp", "image/tiff"),
    sniff=lambda data: (
        data.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*"))
        or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
    ),
    available=ocr_available,
    hint=f"images are read by OCR: pip install '{EXTRA}'",
)

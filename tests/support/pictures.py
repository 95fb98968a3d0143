"""Small documents with pictures, built for tests: PNGs drawn with Pillow, PDFs with image objects
inserted by pypdfium2 into hand-written PDFs, DOCX through python-docx."""

from __future__ import annotations

import io
from collections.abc import Sequence

from tests.ingest.helpers import make_pdf


def png(width: int = 64, height: int = 48, color: str = "red", mark: str = "blue") -> bytes:
    """A PNG of one color with a square of another (so two colors make two different pictures)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), color)
    ImageDraw.Draw(image).rectangle([4, 4, width // 2, height // 2], fill=mark)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def gif(width: int = 64, height: int = 48) -> bytes:
    """A GIF like `png()`'s picture: a format haiku keeps as a picture but does not read as a document."""
    from PIL import Image

    out = io.BytesIO()
    Image.open(io.BytesIO(png(width, height))).save(out, format="GIF")
    return out.getvalue()


def pdf_with_images(
    pages: Sequence[str], images: Sequence[tuple[int, tuple[float, float, float, float], str]] = ()
) -> bytes:
    """A PDF of text pages (see make_pdf) with images: (page index, (left, bottom, width, height), color)."""
    import pypdfium2 as pdfium
    from PIL import Image

    pdf = pdfium.PdfDocument(make_pdf(list(pages)))
    for index, (left, bottom, width, height), color in images:
        page = pdf[index]
        obj = pdfium.PdfImage.new(pdf)
        obj.set_bitmap(pdfium.PdfBitmap.from_pil(Image.open(io.BytesIO(png(int(width), int(height), color)))))
        obj.set_matrix(pdfium.PdfMatrix().scale(width, height).translate(left, bottom))
        page.insert_obj(obj)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def docx_with_image(picture: bytes, alt: str, text: str = "A paragraph before the figure.") -> bytes:
    """A DOCX of one paragraph and an inline picture described by `alt`."""
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    document.add_picture(io.BytesIO(picture))
    drawing = document.paragraphs[-1]._p.xpath(".//wp:docPr")[0]
    drawing.set("descr", alt)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def png_bomb(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares `width` x `height` pixels, as a decompression bomb does."""
    import struct
    import zlib

    data = bytearray(png(32, 32))
    header = b"IHDR" + struct.pack(">II", width, height) + bytes(data[24:29])
    data[12:29] = header
    data[29:33] = struct.pack(">I", zlib.crc32(header))
    return bytes(data)

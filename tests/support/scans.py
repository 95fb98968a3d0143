"""Pictures of words drawn with Pillow, for OCR tests: PNG files and PDFs of scanned pages (no text layer)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf")


def _font(size: int) -> Any:
    from PIL import ImageFont

    for name in _FONTS:
        if Path(name).is_file():
            return ImageFont.truetype(name, size)
    return ImageFont.load_default(size=size)  # Pillow's own TrueType font (FreeType builds)


def words_image(lines: Sequence[str], width: int = 900, size: int = 44) -> Any:
    """A white picture with `lines` written in large black type, one below the other."""
    from PIL import Image, ImageDraw

    line_height = int(size * 1.6)
    image = Image.new("RGB", (width, line_height * len(lines) + 2 * size), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((size, size + i * line_height), line, fill="black", font=_font(size))
    return image


def words_png(lines: Sequence[str]) -> bytes:
    out = io.BytesIO()
    words_image(lines).save(out, format="PNG")
    return out.getvalue()


def scanned_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF whose pages are pictures of words only, as a scanner makes them: no text layer."""
    images = [words_image(lines) for lines in pages]
    out = io.BytesIO()
    images[0].save(out, format="PDF", save_all=True, append_images=images[1:], resolution=200.0)
    return out.getvalue()

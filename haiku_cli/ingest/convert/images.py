"""Turning the images a converter finds into stored pictures, within the `[ingest]` picture limits.

Every image is decoded once with Pillow (a corrupt or unsupported one is skipped with a note, as is one
declaring a bomb's pixel count), scaled down to `max_picture_pixels`, and kept as PNG or JPEG.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.document import Picture
from haiku_cli.store.markers import clean_caption

if TYPE_CHECKING:
    from PIL.Image import Image

# Smaller images are bullets, rules, spacers and the tiles some PDFs paint backgrounds with, not figures.
# (Their byte count tells nothing more: PDF streams of plain 64x64 pictures take 27-60 bytes.)
MIN_SIDE = 32
# An image declaring more than this many times max_picture_pixels is not decoded at all.
BOMB_FACTOR = 25
_KEPT_FORMATS = {"PNG": "png", "JPEG": "jpeg"}
# Images from this many pixels with more than _FEW_COLORS colours are stored as JPEG.
_PHOTO_PIXELS = 250_000
_FEW_COLORS = 256


class PictureCollector:
    """The pictures of one document being converted, and the notes on those skipped."""

    def __init__(self, label: str, limits: IngestSettings | None = None) -> None:
        self.label = label
        self.limits = limits or IngestSettings()
        self.pictures: list[Picture] = []
        self.notes: list[str] = []
        self._over_count = 0
        self._seen = 0
        self._small = 0
        self._repeats = 0
        self._digests: set[bytes] = set()

    def next_reference(self, prefix: str = "image") -> str:
        """The reference of the next image met in document order (`image-1`, `image-2`, ...)."""
        self._seen += 1
        return f"{prefix}-{self._seen}"

    @property
    def full(self) -> bool:
        """Whether the document holds `max_pictures` already (any more are counted, not read)."""
        return len(self.pictures) >= self.limits.max_pictures

    def declared_too_large(self, width: int, height: int, reference: str) -> bool:
        """Whether an image declaring this size is a bomb (noted as skipped): check before decoding."""
        if width * height > BOMB_FACTOR * self.limits.max_picture_pixels:
            self.skip(reference, f"declares {width}x{height} pixels, too many to decode")
            return True
        return False

    def decoration(
        self, width: int, height: int, data: bytes | None = None, *, repeats: bool = False
    ) -> bool:
        """Whether an image is too small to be a figure, or (`repeats`) the same as one met before in this
        document (a logo on every page of a PDF): counted for a note, never kept. Asked before
        `over_limit`, so that such images do not use up `max_pictures`. `data`: the image as stored."""
        if min(width, height) < MIN_SIDE:
            self._small += 1
            return True
        if repeats and data is not None:
            digest = hashlib.blake2b(data, digest_size=16).digest()
            if digest in self._digests:
                self._repeats += 1
                return True
            self._digests.add(digest)
        return False

    def add_encoded(self, data: bytes, reference: str, *, check: bool = True, **place: Any) -> Picture | None:
        """Add an encoded image (a file's or a download's bytes); None when it is skipped. `check=False`:
        the caller asked `decoration` and `over_limit` already."""
        if check and self.over_limit():
            return None
        from PIL import Image, UnidentifiedImageError

        try:
            with _quiet_bombs(), Image.open(io.BytesIO(data)) as probe:
                if self.declared_too_large(*probe.size, reference):
                    return None
                if min(probe.size) < MIN_SIDE:
                    self._small += 1
                    return None
                kept = _KEPT_FORMATS.get(probe.format or "")
                probe.draft("RGB", _fit(probe.size, self.limits.max_picture_pixels))  # JPEG: decode smaller
                image = probe.copy()
                image.load()
        except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
            bomb = "declares too many pixels to decode"
            reason = "not an image format haiku reads" if isinstance(exc, UnidentifiedImageError) else bomb
            self.skip(reference, reason)
            return None
        except (OSError, ValueError, SyntaxError, EOFError) as exc:  # Pillow's ways of saying "damaged"
            self.skip(reference, f"cannot be decoded ({type(exc).__name__})")
            return None
        as_is = kept is not None and image.size == probe.size and image.mode in ("RGB", "L", "RGBA", "P")
        if as_is and len(data) <= self._max_bytes and not _too_many(image.size, self.limits):
            return self._keep(data, kept or "png", image.size, reference, **place)
        return self.add_image(image, reference, check=False, **place)

    def add_image(self, image: Image, reference: str, *, check: bool = True, **place: Any) -> Picture | None:
        """Add a decoded image, scaled down and encoded; None when it is skipped (`check` as for
        add_encoded)."""
        if check and (self.decoration(*image.size) or self.over_limit()):
            return None
        try:
            image, data, fmt = self._encoded(image)
        except (OSError, ValueError) as exc:  # a mode or depth Pillow cannot convert or write
            self.skip(reference, f"cannot be encoded ({type(exc).__name__})")
            return None
        if len(data) > self._max_bytes:
            limit = self.limits.max_picture_mb
            self.skip(reference, f"over {limit:g} MB encoded (raise [ingest] max_picture_mb)")
            return None
        return self._keep(data, fmt, image.size, reference, **place)

    def _encoded(self, image: Image) -> tuple[Image, bytes, str]:
        """The image scaled down to the pixel limit, encoded: PNG, or JPEG for photographs and scans."""
        target = _fit(image.size, self.limits.max_picture_pixels)
        if target != image.size:
            image = image.resize(target)
        if image.mode not in ("RGB", "L", "RGBA", "LA"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
        fmt = "jpeg" if _photographic(image) else "png"
        data = _encode(image.convert("RGB") if fmt == "jpeg" else image, fmt.upper())
        if len(data) > self._max_bytes and fmt == "png":
            data, fmt = _encode(image.convert("RGB"), "JPEG"), "jpeg"
        return image, data, fmt

    def finish(self) -> tuple[tuple[Picture, ...], tuple[str, ...]]:
        """The pictures kept, and the notes (one for all those over `max_pictures`)."""
        notes = list(self.notes)
        small = [f"{n} {what}" for n, what in ((self._small, "small"), (self._repeats, "repeated")) if n]
        if small:
            notes.append(
                f"{self.label}: {' and '.join(small)} image(s) skipped: under {MIN_SIDE} pixels a side, or "
                "the same image again (decoration, not figures)"
            )
        if self._over_count and self.limits.max_pictures > 0:  # 0: pictures are off, nothing to say
            notes.append(
                f"{self.label}: {self._over_count} more picture(s) not stored, over the limit of "
                f"{self.limits.max_pictures} per document (raise [ingest] max_pictures)"
            )
        return tuple(self.pictures), tuple(notes)

    @property
    def _max_bytes(self) -> int:
        return int(self.limits.max_picture_mb * 2**20)

    def over_limit(self) -> bool:
        """Whether one more picture would pass `max_pictures` (it is counted for the note, not read)."""
        if self.full:
            self._over_count += 1
            return True
        return False

    def _keep(
        self, data: bytes, fmt: str, size: tuple[int, int], reference: str, *, caption: str = "", **place: Any
    ) -> Picture | None:
        if min(size) < MIN_SIDE:
            return None
        picture = Picture(
            reference=reference,
            data=data,
            format=fmt,
            width=size[0],
            height=size[1],
            caption=clean_caption(caption),
            **place,
        )
        self.pictures.append(picture)
        return picture

    def skip(self, reference: str, reason: str) -> None:
        """Note a picture left out, and why."""
        self.notes.append(f"{self.label}: picture {reference} skipped: {reason}")

    def set_caption(self, reference: str, caption: str) -> None:
        """Give a kept picture the caption found beside it in the text."""
        for i, picture in enumerate(self.pictures):
            if picture.reference == reference:
                self.pictures[i] = replace(picture, caption=clean_caption(caption))


@contextmanager
def _quiet_bombs() -> Iterator[None]:
    # Pillow warns about large images as it opens them; `declared_too_large` judges them instead.
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        yield


def _fit(size: tuple[int, int], max_pixels: int) -> tuple[int, int]:
    """`size` scaled down, keeping its shape, to at most `max_pixels` pixels."""
    width, height = size
    if width * height <= max_pixels:
        return size
    scale = (max_pixels / (width * height)) ** 0.5
    return max(1, int(width * scale)), max(1, int(height * scale))


def _photographic(image: Image) -> bool:
    """Whether an image has the many colours of a photograph or a scan (JPEG keeps those far smaller, and
    encodes them far faster) rather than the few of a chart or diagram (PNG keeps those sharp)."""
    if "A" in image.getbands() or image.width * image.height < _PHOTO_PIXELS:
        return False
    return image.getcolors(maxcolors=_FEW_COLORS) is None


def _too_many(size: tuple[int, int], limits: IngestSettings) -> bool:
    return size[0] * size[1] > limits.max_picture_pixels


def _encode(image: Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **({"quality": 85} if fmt == "JPEG" else {"optimize": False}))
    return out.getvalue()

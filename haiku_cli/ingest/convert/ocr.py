"""Reading the words of a picture (a scanned page, an image file) offline, with the `ocr` extra.

RapidOCR's PaddleOCR models ship inside its wheel and run on onnxruntime. The models are named by path, so
RapidOCR never takes its download path (it fetches a missing or altered model file otherwise).
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL.Image import Image

EXTRA = "haiku-cli[ocr]"
# The same words in every document's notes, so that a report can say them once for a whole add.
MISSING = f"pages and images without a text layer are read by OCR once it is installed: pip install '{EXTRA}'"
_MODELS = {
    "Det": "PP-OCRv6_det_small.onnx",
    "Rec": "PP-OCRv6_rec_small.onnx",
    "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
}
# Recognised text below this confidence is noise (speckles, rules, the edges of pictures).
_MIN_SCORE = 0.5
# A line starts a new paragraph after a gap this many line heights tall.
_PARAGRAPH_GAP = 1.2

_engine: Any = None
_engine_lock = threading.Lock()

# Where a converter says which page it is reading by OCR ("OCR page 3/12"), for a progress line.
ocr_progress: ContextVar[Callable[[str], None] | None] = ContextVar("ocr_progress", default=None)


@dataclass(frozen=True)
class OcrText:
    """The lines read from one picture, top to bottom; `complete`: False when the time bound cut it short."""

    lines: list[str]
    complete: bool = True


@functools.cache
def ocr_available() -> bool:
    """Whether the `ocr` extra is installed."""
    return importlib.util.find_spec("rapidocr") is not None


def report_progress(step: str) -> None:
    """Tell whoever watches this conversion what it is doing now (nothing when no one does)."""
    show = ocr_progress.get()
    if show is not None:
        show(step)


@contextmanager
def progress_to(show: Callable[[str], None]) -> Iterator[None]:
    """Report OCR steps of conversions in this context (and threads started from it) to `show`."""
    token = ocr_progress.set(show)
    try:
        yield
    finally:
        ocr_progress.reset(token)


def read_picture(image: Image, seconds: float) -> OcrText:
    """The text of a picture, line by line. Detection runs once (bounded by the picture's size, at most
    2,000 pixels a side); recognition stops after `seconds`."""
    words, complete = _read_words(image, seconds)
    return OcrText([text for text, _ in _lines(words)], complete)


def read_lines(image: Image, seconds: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each line read in a picture with its box (left, top, right, bottom) in the picture's pixels;
    blank lines between paragraphs left out."""
    words, _ = _read_words(image, seconds)
    return [(text, box) for text, box in _lines(words) if text]


_Word = tuple[float, float, float, float, str]


def _read_words(image: Image, seconds: float) -> tuple[list[_Word], bool]:
    import numpy as np

    pixels = np.asarray(image.convert("RGB"))
    with _engine_lock:  # one engine, kept loaded; onnxruntime uses the cores itself
        engine = _load()
        start = time.monotonic()
        found = engine(pixels, use_det=True, use_cls=False, use_rec=False)
        boxes = [] if found.boxes is None else list(found.boxes)
        words: list[_Word] = []
        for box in sorted(boxes, key=lambda b: (float(b[:, 1].min()), float(b[:, 0].min()))):
            if time.monotonic() - start > seconds:
                return words, False
            x0, y0 = (int(v) for v in box.min(axis=0))
            x1, y1 = (int(v) + 1 for v in box.max(axis=0))
            crop = pixels[max(0, y0) : y1, max(0, x0) : x1]
            if crop.size == 0:
                continue
            read = engine(crop, use_det=False, use_cls=False, use_rec=True)
            text, score = _best(read)
            if text and score >= _MIN_SCORE:
                words.append((x0, y0, x1, y1, text))
    return words, True


def _best(read: Any) -> tuple[str, float]:
    texts = getattr(read, "txts", None) or ()
    scores = getattr(read, "scores", None) or ()
    if not texts:
        return "", 0.0
    return " ".join(str(texts[0]).split()), float(scores[0]) if scores else 1.0


def _lines(words: list[_Word]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Boxes grouped into lines (a box joins a line its middle lies within), left to right, with the box
    around each line; an empty line where the gap to the line above is taller than a line (a paragraph's
    end)."""
    rows: list[list[_Word]] = []
    for word in sorted(words, key=lambda w: (w[1] + w[3]) / 2):
        middle = (word[1] + word[3]) / 2
        if rows and rows[-1][0][1] <= middle <= rows[-1][0][3]:
            rows[-1].append(word)
        else:
            rows.append([word])
    lines: list[tuple[str, tuple[float, float, float, float]]] = []
    last_bottom: float | None = None
    for row in rows:
        box = (min(w[0] for w in row), min(w[1] for w in row), max(w[2] for w in row), max(w[3] for w in row))
        if last_bottom is not None and box[1] - last_bottom > _PARAGRAPH_GAP * max(w[3] - w[1] for w in row):
            lines.append(("", box))
        lines.append((" ".join(w[4] for w in sorted(row, key=lambda w: w[0])), box))
        last_bottom = box[3]
    return lines


def _load() -> Any:
    global _engine
    if _engine is None:
        import os

        import rapidocr

        models = Path(rapidocr.__file__).parent / "models"
        params: dict[str, Any] = {f"{part}.model_path": str(models / name) for part, name in _MODELS.items()}
        params["Global.log_level"] = "error"
        # Detect at the picture's own size, at most 2,000 pixels a side: RapidOCR's default scales the
        # shorter side up to 736, which makes a wide strip of words (a slide title, a receipt line) a
        # picture several times its size, and detection as many times slower.
        params["Det.limit_type"] = "max"
        params["Det.limit_side_len"] = 2000
        params["EngineConfig.onnxruntime.intra_op_num_threads"] = min(4, os.cpu_count() or 1)
        _engine = rapidocr.RapidOCR(params=params)
    return _engine

"""A PDF's title as a reader would give it: its metadata title when that looks like one, else the largest
type on the first page."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from haiku_cli.ingest.convert.title_cleanup import generic, lines_after, strip_stamps, tidy

# Office and print drivers record the application and the file name instead of a title.
_APP_PREFIX = re.compile(r"^(?:Microsoft (?:Word|PowerPoint|Excel)|Word|PowerPoint)\s+-\s+", re.IGNORECASE)
_FILE_NAME = re.compile(r"^[^\s/\\]+\.[A-Za-z][A-Za-z0-9]{0,4}$|^\S*[/\\]\S*$")
# Titles that templates and tools leave behind; compared after lower-casing and dropping punctuation.
_PLACEHOLDERS = frozenset(
    {
        "untitled",
        "untitled document",
        "title",
        "no title",
        "document",
        "new document",
        "none",
        "unknown",
        "presentation",
        "powerpoint presentation",
        "slide 1",
        "layout 1",
        "page 1",
        "word document",
        "microsoft word document",
        "abstract",
        "article",
        "paper",
        "manuscript",
        "draft",
    }
)
_WORD = re.compile(r"[^\W\d_]{3,}")
_CJK_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{2,}")
_SPLIT = re.compile(r"[\s\-\u2010-\u2015:;,.!?()\[\]{}\"'/*&+]+")
_TOKEN = re.compile(r"\w+")
# Type this much larger than the page's body text stands out as a title.
_TITLE_RATIO = 1.15
_MAX_TITLE_CHARS = 200
# Words further apart than this many type heights stand in columns.
_COLUMN_GAP = 2.0
_Box = tuple[float, float, float, float]  # left, bottom, right, top
_NO_BOX: _Box = (0.0, 0.0, 0.0, 0.0)


def pick_title(metadata: str | None, first_page: str, font_title: str | None) -> str | None:
    """The metadata title when it looks like a title for this document, else the largest-type title."""
    meta = tidy(clean_metadata_title(metadata))
    if meta is not None and (font_title is None or _on_page(meta, first_page)):
        return meta
    if font_title is None:
        return None
    # A title broken over lines in type of different sizes: its rest is on the lines after it.
    return tidy(font_title, lines_after(font_title, first_page))


def clean_metadata_title(title: str | None) -> str | None:
    """The metadata title without an application prefix, or None when it is a file name or placeholder."""
    title = _APP_PREFIX.sub("", " ".join((title or "").split()))
    if not title or _FILE_NAME.match(title) or ("_" in title and " " not in title):
        return None
    words = " ".join(_TOKEN.findall(title.lower())).replace("_", " ")
    if words in _PLACEHOLDERS or "template" in words.split():
        return None
    return title if reads_as_words(title) else None


def reads_as_words(text: str) -> bool:
    """Whether text holds a real word and its words are not mostly stray letters (`OM O M OGO`, `ZOq5`)."""
    if _CJK_WORD.search(text):
        return True  # no spaces between words to judge by
    tokens = [t for t in _SPLIT.split(text) if t]
    words = [t for t in tokens if not any(c.isdigit() for c in t)]
    if not any(_WORD.fullmatch(t) for t in words):
        return False
    return sum(len(t) for t in words) >= 3 * len(words)


def _on_page(title: str, page: str) -> bool:
    """Whether the title is printed on the page: as a phrase, or most of its (three or more) words."""
    words = _TOKEN.findall(_fold(title))
    text = _fold(page)
    if f" {' '.join(words)} " in f" {' '.join(_TOKEN.findall(text))} ":  # whole words, not "art" in "start"
        return True
    on_page = set(_TOKEN.findall(text))
    return len(words) >= 3 and sum(w in on_page for w in words) >= 0.75 * len(words)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def largest_type(textpage: Any) -> str | None:
    """The first run of lines set in the page's largest type, when that stands out from the body text."""
    count = textpage.count_chars()
    text = textpage.get_text_range()
    if not count or len(text) != count:
        return None  # characters outside the BMP shift text offsets off the character indexes
    sizes: list[float] = []
    boxes: list[_Box] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            sizes.append(0.0)
            boxes.append(_NO_BOX)
            continue
        box = textpage.get_charbox(i, loose=True)
        sizes.append(round(box[3] - box[1], 1))
        boxes.append(box)
    letters = [s for s, ch in zip(sizes, text, strict=True) if ch.isalpha()]
    if not letters:
        return None
    body = max(set(letters), key=letters.count)
    for size in sorted({s for s in letters if s >= body * _TITLE_RATIO}, reverse=True)[:3]:
        title = _lines_of_size(text, sizes, boxes, size)
        if title is not None:
            return title
    return None


def _lines_of_size(text: str, sizes: list[float], boxes: list[_Box], size: float) -> str | None:
    """The characters of the first consecutive lines set in `size`, if they read like a title."""
    lines: list[str] = []
    line: list[str] = []
    matching = 0
    widest_gap, last = 0.0, None
    for ch, s, box in zip([*text, "\n"], [*sizes, 0.0], [*boxes, _NO_BOX], strict=True):
        if ch == "\r":
            continue  # PDFium ends lines with \r\n
        if ch != "\n":
            line.append(ch)
            matching += abs(s - size) <= max(0.5, size * 0.08)
            if not ch.isspace():
                widest_gap = max(widest_gap, _gap(last, box)) if last is not None else widest_gap
                last = box
            continue
        # A line mostly in that size is taken whole: a second font in it may measure differently.
        filled = sum(not c.isspace() for c in line)
        if filled and matching * 2 >= filled:
            if widest_gap > _COLUMN_GAP * size:
                return None  # words spread over columns: a table's header row, not a title
            lines.append("".join(line).strip())
        elif lines:
            break  # the run of large lines ended
        line, matching = [], 0
        widest_gap, last = 0.0, None
    title = strip_stamps(" ".join(lines))  # a stamp in the largest type leaves the next size to look at
    if generic(title) or len(title) > _MAX_TITLE_CHARS or not reads_as_words(title):
        return None
    return title


def _gap(before: _Box, after: _Box) -> float:
    """The space between two characters' boxes, along a line running across or (rotated pages) up or down."""
    return max(after[0] - before[2], before[0] - after[2], after[1] - before[3], before[1] - after[3])

"""Reading markdown-ish text as a flat run of blocks (paragraphs, lists, tables, code) under heading paths."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from haiku_cli.ingest.convert.markdown import heading_text
from haiku_cli.ingest.document import Segment

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$|^ {0,3}(#{1,6})[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
# Setext (markdown) and reStructuredText title underlines.
_UNDERLINE = re.compile(r"^([=\-~^\"'#*+:.])\1{2,}[ \t]*$")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+")
# Tags alone (`<a id="x"></a>`, `<br>`, `</div>`) carry nothing a reader reads.
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")


@dataclass(frozen=True)
class Span:
    """Where a piece of text stands: characters [start, end) of the document's stored text, and the
    source file's lines it covers (1-based, inclusive; None where lines do not map)."""

    start: int
    end: int
    first_line: int | None = None
    last_line: int | None = None


@dataclass(frozen=True)
class Block:
    """One block of text; `kind` is "text", "list", "table" or "code" and decides how it is split."""

    text: str
    kind: str
    heading_path: tuple[str, ...]
    page: int | None
    span: Span = Span(0, 0)


class _Reader:
    def __init__(self, headings: bool) -> None:
        self.headings = headings
        self.stack: list[tuple[int, str]] = []
        self.underline_levels: dict[str, int] = {"=": 1, "-": 2}
        self.blocks: list[Block] = []
        self.buf: list[str] = []
        self.kind = "text"
        self.page: int | None = None
        # Where the buffered lines start: in the stored text, and on the source's lines.
        self.buf_start = 0
        self.buf_line: int | None = None

    def flush(self) -> None:
        joined = "\n".join(self.buf)
        text = joined.strip("\n")
        if _has_content(text, self.kind):
            path = tuple(title for _, title in self.stack)
            skipped = len(joined) - len(joined.lstrip("\n"))  # empty lines the text starts with
            start = self.buf_start + skipped
            first = None if self.buf_line is None else self.buf_line + skipped
            last = None if first is None else first + text.count("\n")
            span = Span(start, start + len(text), first, last)
            self.blocks.append(Block(text, self.kind, path, self.page, span))
        self.buf = []
        self.kind = "text"

    def take(self, line: str, start: int, number: int | None) -> None:
        """Buffer one line, which starts at `start` of the stored text and is source line `number`."""
        if not self.buf:
            self.buf_start, self.buf_line = start, number
        self.buf.append(line)

    def heading(self, level: int, title: str) -> None:
        self.flush()
        title = heading_text(title)
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        if title:
            self.stack.append((level, title))

    def underline_level(self, char: str) -> int:
        # reStructuredText ranks title styles by first appearance; markdown's = and - stay 1 and 2.
        return self.underline_levels.setdefault(char, len(self.underline_levels) + 1)

    def try_underline(self, line: str) -> bool:
        m = _UNDERLINE.match(line)
        if not m or self.kind != "text" or not self.buf:
            return False
        char = m.group(1)
        if len(self.buf) == 1:
            title = self.buf[0].strip()
        elif len(self.buf) == 2 and self.buf[0].strip() == line.strip():
            title = self.buf[1].strip()  # an overlined and underlined reStructuredText title
        else:
            return False
        markdown_style = char in "=-"
        if not title or _LIST_ITEM.match(title) or (not markdown_style and len(line.strip()) < len(title)):
            return False
        self.buf = []
        self.heading(self.underline_level(char), title)
        return True

    def read(self, segment: Segment, offset: int) -> None:
        self.page = segment.page
        fence: str | None = None
        at = offset
        for index, line in enumerate(segment.text.split("\n")):
            start, at = at, at + len(line) + 1
            number = None if segment.line is None else segment.line + index
            if fence is not None:
                self.take(line, start, number)
                f = _FENCE.match(line)
                if (
                    f
                    and f.group(1)[0] == fence[0]
                    and len(f.group(1)) >= len(fence)
                    and not line.strip(fence[0] + " \t")
                ):
                    fence = None
                    self.flush()
                continue
            if self.headings and self.try_underline(line):
                continue
            f = _FENCE.match(line)
            if f:
                self.flush()
                fence = f.group(1)
                self.kind = "code"
                self.take(line, start, number)
                continue
            m = _ATX.match(line) if self.headings else None
            if m:
                hashes = m.group(1) or m.group(3)
                self.heading(len(hashes), m.group(2) or "")
                continue
            if not line.strip() or _RULE.match(line):
                self.flush()
                continue
            kind = (
                "table" if line.lstrip().startswith("|") else ("list" if _LIST_ITEM.match(line) else "text")
            )
            if self.buf and (kind == "table") != (self.kind == "table"):
                self.flush()  # tables and prose meet without a blank line in converted HTML and PDFs
            if not self.buf:
                self.kind = kind
            self.take(line, start, number)
        self.flush()  # also closes a fence left open at the end of a segment


def _has_content(text: str, kind: str) -> bool:
    """Whether a block holds anything to read: not only markup, and not an empty code fence."""
    if kind == "code":
        return any(line.strip() for line in text.split("\n")[1:] if not _FENCE.match(line))
    return bool(_TAG.sub("", text).strip())


def read_blocks(
    segments: Sequence[Segment], offsets: Sequence[int] | None = None, *, headings: bool = True
) -> list[Block]:
    """Split segments into blocks in order; headings update the path and are not blocks themselves.

    `offsets`: where each segment starts in the document's stored text, which the blocks' spans count
    from (each segment from 0 when not given).
    """
    reader = _Reader(headings)
    for i, segment in enumerate(segments):
        reader.read(segment, 0 if offsets is None else offsets[i])
    return reader.blocks

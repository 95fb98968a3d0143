"""Structure-aware chunking: sections by heading, packed paragraphs, and finer cuts only where needed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from haiku_cli.ingest.blocks import Block, Span, read_blocks
from haiku_cli.ingest.code_blocks import code_blocks
from haiku_cli.ingest.document import ConvertedDocument
from haiku_cli.ingest.stored import segment_offsets

# Share of max_tokens kept free for special tokens, tokenizer non-additivity and the heading context
# the embedder may prepend.
MARGIN = 0.10
# No text costs less than a token per this many characters, whatever the tokenizer says.
MAX_CHARS_PER_TOKEN = 32
# Texts longer than this many characters are counted a window at a time (see `_count_windows`).
COUNT_WINDOW = 16_384
# Sentence ends: terminal punctuation, optional closing quotes or brackets, then whitespace; CJK stops.
# A match only starts where a run of punctuation starts, and takes it whole (possessive): a long run
# with no space after it ("....", a 2 MB "word") is tried once, not once per character (quadratic).
_SENTENCE_END = re.compile(r"(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019)\]]*+\s+|[\u3002\uff01\uff1f]+")
# A Markdown link is one word however many its text has, so a cut never splits one.
_WORD = re.compile(r"!?\[[^\[\]\n]{0,200}\]\([^()\s]{0,2000}\)\S*|\S+")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^\s*+\|?\s*+:?-{3,}")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for embedding, with its place in the document's structure."""

    order: int
    text: str
    heading_path: list[str]
    pages: list[int]
    span: Span | None = None  # where it was cut from: the document's text and the source's lines


@dataclass(frozen=True)
class _Unit:
    text: str
    cost: float
    pages: frozenset[int]
    span: Span


class _Chunker:
    def __init__(self, count_tokens: Callable[[str], float], max_tokens: int, overlap_tokens: int) -> None:
        self._count = count_tokens
        self._cache: dict[str, float] = {}
        self.max_tokens = max_tokens
        # Counts include whatever a tokenizer adds to every input (e.g. [CLS]/[SEP]); measure it once
        # so that costs of pieces can be summed instead of re-counting joined text.
        self.base = count_tokens("")
        self.sep = max(0.0, count_tokens("\n\n") - self.base)
        self.limit = int(max_tokens * (1 - MARGIN)) - self.base
        if self.limit < 1:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for text")
        self.overlap = max(0, min(overlap_tokens, self.limit // 4))

    def cost(self, text: str) -> float:
        cached = self._cache.get(text)
        if cached is None:
            # A run the tokenizer reads as one unknown token (a 2 MB "word") must still be cut: a chunk
            # is also what a search returns and a model reads, whose tokenizers do not say [UNK].
            floor = len(text) / MAX_CHARS_PER_TOKEN
            counted = self._count(text) if len(text) <= COUNT_WINDOW else self._count_windows(text)
            cached = self._cache[text] = max(0.0, counted - self.base, floor)
        return cached

    def _count_windows(self, text: str) -> float:
        """Count a long text a window at a time, each cut at a space where there is one.

        A tokenizer holds several hundred bytes per token while it encodes (offsets, alignments, the
        token strings): 2 MB of '.' (2 million tokens) at once peaked at 1.5 GB. Summed windows differ
        from the whole only at the cuts, which the margin covers; a finished chunk is counted whole.
        """
        total = float(self.base)
        start = 0
        while start < len(text):
            end = min(len(text), start + COUNT_WINDOW)
            if end < len(text):
                space = text.rfind(" ", start + COUNT_WINDOW // 2, end)
                end = space if space > start else end
            total += max(0.0, self._count(text[start:end]) - self.base)
            start = end
        return total

    # Packing -------------------------------------------------------------------------------------

    def section_units(self, blocks: list[Block]) -> list[_Unit]:
        units: list[_Unit] = []
        for block in blocks:
            pages = frozenset() if block.page is None else frozenset({block.page})
            cost = self.cost(block.text)
            if cost <= self.limit:
                units.append(_Unit(block.text, cost, pages, block.span))
            else:
                pieces = self.split_block(block)
                spans = _locate(block, [t for t, _ in pieces])
                units.extend(_Unit(t, c, pages, span) for (t, c), span in zip(pieces, spans, strict=True))
        return units

    def pack(self, units: list[_Unit]) -> list[_Unit]:
        """Greedily join consecutive units with blank lines while they fit the limit."""
        packed: list[_Unit] = []
        group: list[_Unit] = []
        total = 0.0
        for unit in units:
            if group and total + self.sep + unit.cost > self.limit:
                packed.append(_join(group, total))
                group, total = [], 0.0
            total += unit.cost + (self.sep if group else 0.0)
            group.append(unit)
        if group:
            packed.append(_join(group, total))
        return packed

    def verify(self, unit: _Unit) -> list[_Unit]:
        """Count a finished chunk once; in the rare case summed costs misjudged it, cut it by words."""
        # A chunk that is one counted piece is a cache hit; only joined pieces are tokenized again.
        if self.cost(unit.text) + self.base <= self.max_tokens:
            return [unit]
        # Pieces of joined blocks are not one run of the document: each says where the whole came from.
        return [_Unit(t, c, unit.pages, unit.span) for t, c in self.split_words(unit.text, self.limit)]

    # Splitting oversized blocks ------------------------------------------------------------------

    def split_block(self, block: Block) -> list[tuple[str, float]]:
        if block.kind == "table":
            return self.split_table(block.text)
        if block.kind == "code":
            return self.split_code(block.text)
        levels = ("line", "word") if block.kind in ("code", "list") else ("sentence", "line", "word")
        return self.split(block.text, levels, self.limit)

    def split_table(self, text: str) -> list[tuple[str, float]]:
        lines = text.split("\n")
        header = "\n".join(lines[:2])
        if len(lines) > 3 and _TABLE_RULE.match(lines[1]):
            header_cost = self.cost(header) + self.sep
            if header_cost < self.limit / 3:
                # Each part of a long table repeats the header row so its columns stay named.
                body = self.split("\n".join(lines[2:]), ("line", "word"), self.limit - header_cost)
                return [(f"{header}\n{t}", c + header_cost) for t, c in body]
        return self.split(text, ("line", "word"), self.limit)

    def split_code(self, text: str) -> list[tuple[str, float]]:
        lines = text.split("\n")
        opening = _FENCE.match(lines[0])
        if opening is None or len(lines) < 3:
            return self.split(text, ("line", "word"), self.limit)
        fence = opening.group(1)
        closed = lines[-1].strip().startswith(fence[0] * len(fence)) and not lines[-1].strip(fence[0] + " \t")
        body = lines[1:-1] if closed else lines[1:]
        closing = lines[-1] if closed else fence
        fence_cost = self.cost(f"{lines[0]}\n{closing}") + self.sep
        if fence_cost >= self.limit / 3:
            return self.split(text, ("line", "word"), self.limit)
        # Each part of a long code block is fenced again, so it still reads (and renders) as code.
        pieces = self.split("\n".join(body), ("line", "word"), self.limit - fence_cost)
        return [(f"{lines[0]}\n{t}\n{closing}", c + fence_cost) for t, c in pieces]

    def split(self, text: str, levels: tuple[str, ...], limit: float) -> list[tuple[str, float]]:
        """Cut `text` into pieces costing at most `limit`, at the coarsest level that has cuts."""
        level, finer = levels[0], levels[1:]
        if level == "word":
            return self.split_words(text, limit)
        spans = _sentence_spans(text) if level == "sentence" else _line_spans(text)
        if len(spans) <= 1:
            return self.split(text, finer, limit)
        pieces: list[tuple[str, float]] = []
        run: list[tuple[int, int, float]] = []  # consecutive spans that fit, joined by their own text

        def close_run() -> None:
            if run:
                pieces.extend(self.pack_spans(text, run, limit))
                run.clear()

        for start, end in spans:
            cost = self.cost(text[start:end])
            if cost > limit:
                close_run()
                pieces.extend(self.split(text[start:end], finer, limit))
            else:
                run.append((start, end, cost))
        close_run()
        return pieces

    def pack_spans(
        self, text: str, spans: list[tuple[int, int, float]], limit: float
    ) -> list[tuple[str, float]]:
        """Pack consecutive spans; each new piece repeats the last spans of the previous one as overlap."""
        pieces: list[tuple[str, float]] = []
        group: list[tuple[int, int, float]] = []
        total = 0.0
        for span in spans:
            if group and total + self.sep + span[2] > limit:
                pieces.append((text[group[0][0] : group[-1][1]], total))
                group = self.overlap_tail(group)
                total = _span_total(group, self.sep)
                while group and total + self.sep + span[2] > limit:
                    group.pop(0)
                    total = _span_total(group, self.sep)
            total += span[2] + (self.sep if group else 0.0)
            group.append(span)
        if group:
            pieces.append((text[group[0][0] : group[-1][1]], total))
        return pieces

    def overlap_tail(self, group: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
        tail: list[tuple[int, int, float]] = []
        total = 0.0
        for span in reversed(group[1:]):  # never the whole group, so every piece moves forward
            total += span[2] + (self.sep if tail else 0.0)
            if total > self.overlap:
                break
            tail.insert(0, span)
        return tail

    def split_words(self, text: str, limit: float) -> list[tuple[str, float]]:
        """Windows of whole words sized from the average cost per word, each counted exactly once or twice."""
        words = [m.span() for m in _WORD.finditer(text)]
        if len(words) <= 1:
            return self.split_chars(text.strip(), limit)
        per_word = max(self.cost(text) / len(words), 1e-9)
        step = max(1, int(limit / per_word))
        back = min(int(self.overlap / per_word), step // 2)
        pieces: list[tuple[str, float]] = []
        i = 0
        while i < len(words):
            j = min(len(words), i + step)
            while True:
                piece = text[words[i][0] : words[j - 1][1]]
                cost = self.cost(piece)
                if cost <= limit or j - i == 1:
                    break
                j = i + max(1, min(j - i - 1, int((j - i) * limit / cost)))
            if cost > limit:
                pieces.extend(self.split_chars(piece, limit))  # one "word" longer than a chunk
            else:
                pieces.append((piece, cost))
            if j >= len(words):
                break
            i = max(i + 1, j - back)
        return pieces

    def split_chars(self, text: str, limit: float) -> list[tuple[str, float]]:
        """Last resort for a run without spaces (base64, minified code): fixed-size character windows."""
        total = self.cost(text)
        if total <= limit or len(text) <= 1:
            return [(text, total)] if text else []
        step = max(1, int(len(text) * limit / total))
        pieces: list[tuple[str, float]] = []
        i = 0
        while i < len(text):
            j = min(len(text), i + step)
            cost = self.cost(text[i:j])
            while cost > limit and j - i > 1:
                j = i + max(1, min(j - i - 1, int((j - i) * limit / cost)))
                cost = self.cost(text[i:j])
            pieces.append((text[i:j], cost))
            i = j
        return pieces


def _join(units: list[_Unit], total: float) -> _Unit:
    first, last = units[0].span, units[-1].span
    span = Span(first.start, last.end, first.first_line, last.last_line)
    pages = frozenset().union(*(u.pages for u in units))
    return _Unit("\n\n".join(u.text for u in units), total, pages, span)


def _locate(block: Block, pieces: list[str]) -> list[Span]:
    """Where each piece of a split block stands; pieces come in order, each starting after the last."""
    spans: list[Span] = []
    cursor = 0  # the next piece starts here or later
    follows = 0  # where the last piece ended: a piece cut without overlap starts there
    counted, line = 0, block.span.first_line  # `line` is the source line of block.text[counted]
    for piece in pieces:
        # In repetitive text (a line of '.') the first match after the last piece's start is not the
        # piece's place: one cut without overlap is exactly where the last one ended.
        if follows > cursor and block.text.startswith(piece, follows):
            at, length = follows, len(piece)
        else:
            at, length = block.text.find(piece, cursor), len(piece)
        if at < 0:
            # A part of a table repeating its header row, or of a code block fenced again: its rows.
            body = _repeated_body(piece, block.kind)
            at, length = (block.text.find(body, cursor), len(body)) if body else (-1, 0)
        if at < 0:
            spans.append(block.span)
            continue
        if line is not None:
            line += block.text.count("\n", counted, at)
            counted = at
        last = None if line is None else line + block.text.count("\n", at, at + length)
        spans.append(Span(block.span.start + at, block.span.start + at + length, line, last))
        cursor, follows = at + 1, at + length
    return spans


def _repeated_body(piece: str, kind: str) -> str:
    if kind == "table":
        parts = piece.split("\n", 2)
        return parts[2] if len(parts) == 3 else ""
    if kind == "code":
        parts = piece.split("\n", 1)
        return parts[1].rsplit("\n", 1)[0] if len(parts) == 2 and "\n" in parts[1] else ""
    return ""


def _span_total(spans: list[tuple[int, int, float]], sep: float) -> float:
    return sum(s[2] for s in spans) + sep * max(0, len(spans) - 1)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
    bounds = zip([0, *cuts], [*cuts, len(text)], strict=True)
    return [span for s, e in bounds if (span := _trimmed(text, s, e))]


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        span = _trimmed(text, start, start + len(line))
        if span:
            spans.append(span)
        start += len(line) + 1
    return spans


def chunk_document(
    doc: ConvertedDocument,
    count_tokens: Callable[[str], int],
    max_tokens: int = 256,
    overlap_tokens: int = 32,
) -> list[Chunk]:
    """Cut a document into chunks of at most `max_tokens` (by `count_tokens`), following its structure.

    Sections (by heading) never share a chunk; within one, paragraphs are packed together, and only a
    paragraph too long for a chunk is cut (by sentence, line, then word) with a little overlap.
    """
    chunker = _Chunker(count_tokens, max_tokens, overlap_tokens)
    offsets = segment_offsets(doc)
    blocks = code_blocks(doc, offsets)
    if blocks is None:
        blocks = read_blocks(doc.segments, offsets)
    if not blocks:
        # Nothing but headings: index them as text rather than lose the document.
        blocks = read_blocks(doc.segments, offsets, headings=False)
    chunks: list[Chunk] = []
    for path, section in groupby(blocks, key=lambda b: b.heading_path):
        for packed in chunker.pack(chunker.section_units(list(section))):
            for unit in chunker.verify(packed):
                chunks.append(Chunk(len(chunks), unit.text, list(path), sorted(unit.pages), unit.span))
    return chunks

"""Source code read as blocks for chunking: one per definition (a function, a class, or a method of a long
class), so no chunk holds the end of one function and the start of the next; line windows without a
grammar. Works on stored text too, so a rebuild cuts code as an add does."""

from __future__ import annotations

from collections.abc import Sequence

from haiku_cli.ingest.blocks import Block, Span
from haiku_cli.ingest.convert.code import Definition, definitions, is_code
from haiku_cli.ingest.document import ConvertedDocument


def code_blocks(doc: ConvertedDocument, offsets: Sequence[int]) -> list[Block] | None:
    """The blocks of a source code document, or None when `doc` is not one (read it as Markdown)."""
    if not is_code(doc.uri) or len(doc.segments) != 1:
        return None
    segment = doc.segments[0]
    text, line = segment.text, segment.line
    if line is None:
        return None
    starts = [0]
    for row in text.split("\n"):
        starts.append(starts[-1] + len(row) + 1)
    units = definitions(text, doc.uri)
    if units is None:
        # No grammar: the whole text is one block, which the chunker cuts into line windows.
        units = [Definition(0, len(starts) - 2, ())]
    blocks = []
    for unit in units:
        start, end = starts[unit.first], starts[unit.last + 1] - 1
        while start < end and text[start] in "\n":
            start += 1
        body = text[start:end].rstrip()
        if not body.strip():
            continue
        first = unit.first + text.count("\n", starts[unit.first], start)
        last = first + body.count("\n")
        span = Span(offsets[0] + start, offsets[0] + start + len(body), line + first, line + last)
        blocks.append(Block(body, "code", unit.path, None, span))
    return blocks

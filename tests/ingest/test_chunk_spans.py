"""Each chunk says where it stands: characters of the document's stored text, lines of its source file."""

from __future__ import annotations

import itertools

from haiku_cli.ingest.chunking import chunk_document
from haiku_cli.ingest.convert.dispatch import convert_bytes
from haiku_cli.ingest.document import ConvertedDocument, Segment
from haiku_cli.ingest.stored import stored_content

from .helpers import words

SOURCE = (
    "---\ntitle: Tides\n---\n\n"
    "# Tides\n\nThe moon pulls the sea.\nTwice a day it rises.\n\n"
    "<!-- a note\nfor editors -->\n\n"
    "## Spring tides\n\n"
    + " ".join(f"Sentence {i} says the range is larger near full moon." for i in range(60))
    + "\n\n| day | height |\n|---|---|\n"
    + "\n".join(f"| {i} | {i / 10} m |" for i in range(80))
    + "\n\n```python\n"
    + "\n".join(f"print({i})" for i in range(120))
    + "\n```\n"
)


def _lines(first: int, last: int) -> str:
    return "\n".join(SOURCE.split("\n")[first - 1 : last])


def test_chunks_of_a_markdown_file_name_their_characters_and_source_lines() -> None:
    doc = convert_bytes(SOURCE.encode(), uri="file:///tides.md", content_type="text/markdown")
    content = stored_content(doc)
    chunks = chunk_document(doc, words, max_tokens=64)
    assert len(chunks) > 8
    for c in chunks:
        span = c.span
        assert span is not None and span.first_line is not None and span.last_line is not None
        part = content[span.start : span.end]
        # The characters hold the chunk (a table's or code block's later parts repeat its header or fence).
        assert part == c.text or part in c.text
        # The source's lines hold the same text, though front matter and a comment were left out above.
        lines = _lines(span.first_line, span.last_line).split("\n")
        assert len(lines) == part.count("\n") + 1
        assert part.split("\n")[0] in lines[0] and part.split("\n")[-1] in lines[-1]
    first = chunks[0]
    assert first.text == "The moon pulls the sea.\nTwice a day it rises."
    assert (first.span.first_line, first.span.last_line) == (7, 8)  # type: ignore[union-attr]


def test_paged_documents_have_characters_but_no_lines() -> None:
    pages = [" ".join(f"p{p}w{i}" for i in range(12)) for p in (1, 2)]
    doc = ConvertedDocument("", None, [Segment(pages[0], page=1), Segment(pages[1], page=2)])
    content = stored_content(doc)
    chunks = chunk_document(doc, words, max_tokens=16)
    assert [content[c.span.start : c.span.end] for c in chunks if c.span] == pages
    assert all(c.span and c.span.first_line is None for c in chunks)


def test_the_pieces_of_a_repetitive_line_name_their_own_characters() -> None:
    # Every piece of a line of '.' reads the same: each was located one character after the last one.
    doc = ConvertedDocument("", None, [Segment("." * 20_000)])
    chunks = chunk_document(doc, lambda text: len(text) + 2, max_tokens=256)
    spans = [c.span for c in chunks if c.span]
    assert len(spans) == len(chunks) > 50
    assert spans[0].start == 0 and spans[-1].end == 20_000
    assert all(b.start == a.end for a, b in itertools.pairwise(spans))

"""Quotes checked against the evidence: a passage an answer puts in quotation marks (or a blockquote), or
passes to `cite` as `quote`, must stand in one of the chunks it cites.

The comparison ignores case, whitespace and punctuation (a model re-spaces, re-cases and re-punctuates
what it copies), and an ellipsis stands for any omitted run: each piece must appear, in order, in the
same chunk. Short quotations ("so-called" terms, titles) are not taken for quotes of the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.state import EvidenceState

MIN_WORDS = 4  # fewer words in quotation marks are a term or a title, not a passage
_QUOTED = re.compile(r"\"([^\"\n]+)\"|\u201c([^\u201c\u201d\n]+)\u201d")
_BLOCKQUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?(.*)$")
_MARKER = re.compile(r"\[\d+\]")  # citation markers inside a quote are not part of it
_ELLIPSIS = re.compile(r"\.{3}|\u2026|\[\s*(?:\.{3}|\u2026)\s*\]")
_WORDS = re.compile(r"\w+")


class QuoteCheck(BaseModel):
    """One quoted passage: its text, whether a cited chunk holds it, and which (its chunk id)."""

    text: str
    verified: bool
    chunk: str | None = None


def quotes_in(answer: str) -> list[str]:
    """The passages an answer quotes: text in quotation marks, and each blockquote, of MIN_WORDS or more."""
    found = [a or b for a, b in _QUOTED.findall(answer)]
    block: list[str] = []
    for line in [*answer.split("\n"), ""]:
        m = _BLOCKQUOTE.match(line)
        if m:
            block.append(m.group(1))
        elif block:
            found.append(" ".join(block))
            block = []
    cleaned = (_MARKER.sub(" ", q).strip() for q in found)
    return list(dict.fromkeys(q for q in cleaned if len(_WORDS.findall(q)) >= MIN_WORDS))


def check_quotes(quotes: Iterable[str], citations: Sequence[Citation]) -> list[QuoteCheck]:
    """Each quote, verified when a cited chunk holds it (ignoring case, whitespace and punctuation)."""
    texts = [(c.chunk_id, normal(c.content)) for c in citations]
    checks = []
    for quote in dict.fromkeys(quotes):
        pieces = [p for p in (normal(part) for part in _ELLIPSIS.split(quote)) if p]
        chunk = next((cid for cid, text in texts if pieces and _in_order(pieces, text)), None)
        checks.append(QuoteCheck(text=quote, verified=chunk is not None, chunk=chunk))
    return checks


def check_answer(answer: str, states: Sequence[EvidenceState]) -> list[QuoteCheck]:
    """The answer's quotes and those passed to `cite`, checked against every chunk the answer cites."""
    citations = [c for s in states for c in s.citations]
    return check_quotes([*quotes_in(answer), *(q for s in states for q in s.quotes)], citations)


def normal(text: str) -> str:
    """The text as compared: lower-case words separated by single spaces, without punctuation."""
    return " ".join(_WORDS.findall(text.lower()))


def _in_order(pieces: list[str], text: str) -> bool:
    # Padded with spaces, so a piece matches whole words only ("sea" is not in "seal").
    padded, at = f" {text} ", 0
    for piece in pieces:
        found = padded.find(f" {piece} ", at)
        if found < 0:
            return False
        at = found + len(piece) + 1
    return True

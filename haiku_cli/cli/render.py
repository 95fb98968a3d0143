"""Human-readable rendering of results, documents and reports."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from haiku_cli.cli import output

if TYPE_CHECKING:
    from haiku_cli.search.hits import SearchHit

_WORD = re.compile(r"\w{3,}", re.UNICODE)
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "were",
        "what",
        "how",
        "does",
        "have",
        "has",
        "not",
        "you",
        "your",
    ]
)


def query_terms(query: str) -> list[str]:
    """Words of a query worth highlighting in an excerpt."""
    return [w for w in _WORD.findall(query.lower()) if w not in _STOP]


def excerpt(content: str, terms: Sequence[str], width: int = 320) -> str:
    """A window of the content around the first query term, on one line."""
    flat = " ".join(content.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for p in (lower.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def search_hits(query: str, hits: Sequence[SearchHit], *, show_database: bool = True) -> None:
    """Print ranked hits: rank, title, uri, database and a highlighted excerpt."""
    if not hits:
        output.out.print("no results", style="dim")
        return
    terms = query_terms(query)
    for hit in hits:
        head = Text()
        head.append(f"{hit.rank:>2}. ", style="bold")
        head.append(hit.document_title or hit.document_uri or hit.document_id, style="bold cyan")
        if show_database:
            head.append(f"  [{hit.database}]", style="magenta")
        head.append(f"  score {hit.score:.3f}", style="dim")
        output.out.print(head)
        where = hit.document_uri or f"id {hit.document_id}"
        if hit.heading_path:
            where += "  § " + " > ".join(hit.heading_path)
        if hit.pages:
            where += "  p. " + ",".join(str(p) for p in hit.pages)
        output.out.print(Text("    " + where, style="dim"))
        body = Text("    " + excerpt(hit.content, terms))
        body.highlight_words(terms, style="bold yellow", case_sensitive=False)
        output.out.print(body)
        output.out.print()


def table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A simple table on stdout."""
    t = Table(box=None, header_style="bold", pad_edge=False, show_header=any(columns))
    for name in columns:
        # Ids are for copying: never cut or folded.
        t.add_column(name, no_wrap=name == "id", min_width=36 if name == "id" else None)
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    output.out.print(t)


def size(n: int | None) -> str:
    """Bytes as a short human size."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"

"""Where a hit or citation stands in its document: as text (`lines 12-18`, `p. 3,4`), as a terminal link."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.style import Style

from haiku_cli.cli import output

_LINKED = ("file://", "http://", "https://")


def place(line_start: int | None, line_end: int | None, pages: Sequence[int]) -> str:
    """`lines 12-18` and/or `p. 3,4` (empty when neither is known)."""
    parts = []
    if line_start is not None:
        end = line_end if line_end is not None else line_start
        parts.append(f"line {line_start}" if end == line_start else f"lines {line_start}-{end}")
    if pages:
        parts.append("p. " + ",".join(str(p) for p in pages))
    return "  ".join(parts)


def link_style(
    uri: str | None, pages: Sequence[int], style: str = "dim", console: Console | None = None
) -> Style:
    """`style`, made a clickable link (OSC 8) to the document where the terminal shows styles; plain text
    in a pipe and under NO_COLOR, whose readers see the escape sequences as noise."""
    base = Style.parse(style)
    console = console or output.out
    if not uri or not uri.startswith(_LINKED) or not console.is_terminal or console.no_color:
        return base
    # A PDF viewer opens a `#page=N` link at that page; other documents open at their start.
    target = f"{uri}#page={pages[0]}" if pages and "#" not in uri else uri
    return base + Style(link=target)

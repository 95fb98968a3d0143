"""Tables that fit the terminal: long cells cut in the middle, kept columns whole, no padding at line ends."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rich.cells import cell_len
from rich.text import Text

from haiku_cli.cli import output
from haiku_cli.cli.output import printable

_GAP = "  "
_NARROWEST = 12  # a shortened column keeps at least this many cells: a start, "…" and an end


def middle(text: str, width: int, *, end_share: float = 0.5) -> str:
    """`text` in at most `width` cells: its start and its end around "…", the end `end_share` of them."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail_cells = int((width - 1) * end_share)
    head_cells = width - 1 - tail_cells
    head, tail = "", ""
    for ch in text:
        if cell_len(head + ch) > head_cells:
            break
        head += ch
    for ch in reversed(text):
        if cell_len(ch + tail) > tail_cells:
            break
        tail = ch + tail
    return head + "…" + tail


def fitted_widths(
    widths: Sequence[int], room: int, keep: Collection[int], cut_first: Collection[int] = ()
) -> list[int]:
    """Column widths that fit `room` cells with gaps, narrowing the widest columns not in `keep` first;
    the `cut_first` columns (the least telling) are narrowed as far as they go before any other."""
    fitted = list(widths)
    excess = sum(fitted) + len(_GAP) * (len(fitted) - 1) - room
    while excess > 0:
        narrowable = [i for i, w in enumerate(fitted) if i not in keep and w > _NARROWEST]
        narrowable = [i for i in narrowable if i in cut_first] or narrowable
        if not narrowable:
            break  # as narrow as it goes: the terminal wraps the rest
        widest = max(narrowable, key=lambda i: fitted[i])
        others = [fitted[i] for i in narrowable if i != widest]
        # Down to the next widest column (or as far as needed), so the wide ones end up equally wide.
        step = min(excess, fitted[widest] - max([_NARROWEST, *others]) or 1)
        fitted[widest] -= step
        excess -= step
    return fitted


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    keep: Collection[str] = (),
    cut_first: Collection[str] = (),
) -> None:
    """Rows under a header (none when every column name is empty), one line each.

    On a terminal the table fits its width: the widest columns not named in `keep` are shortened in the
    middle. In a pipe every cell is whole, and no line ends in padding.
    """
    header = any(columns)
    cells = [["" if v is None else printable(" ".join(str(v).split())) for v in row] for row in rows]
    lines = ([list(columns)] if header else []) + cells
    if not lines:
        return
    widths = [max(cell_len(line[i]) for line in lines) for i in range(len(columns))]
    if output.out.is_terminal:
        kept = {i for i, name in enumerate(columns) if name in keep}
        first = {i for i, name in enumerate(columns) if name in cut_first}
        widths = fitted_widths(widths, output.out.width, kept, first)
    for n, line in enumerate(lines):
        shown = [
            middle(cell, w, end_share=_end_share(name))
            for cell, w, name in zip(line, widths, columns, strict=True)
        ]
        padded = [cell + " " * (w - cell_len(cell)) for cell, w in zip(shown[:-1], widths, strict=False)]
        text = Text(_GAP.join([*padded, shown[-1]]).rstrip(), style="bold" if header and n == 0 else "")
        output.out.print(text, no_wrap=True, overflow="ignore", crop=False)


# A uri or path is cut nearer its start: its end names the file.
URI_END_SHARE = 0.7


def _end_share(column: str) -> float:
    return URI_END_SHARE if column in ("uri", "location") else 0.5

"""Tables of Word and PowerPoint files as Markdown: python-docx and python-pptx give them the same shape."""

from __future__ import annotations

from typing import Any


def markdown_table(table: Any) -> str:
    """The table as Markdown rows (the first row the header), each cell on one line, `|` escaped."""
    rows = [[" ".join(cell.text.split()).replace("|", "\\|") for cell in row.cells] for row in table.rows]
    if not rows:
        return ""
    lines = ["| " + " | ".join(cells) + " |" for cells in rows]
    lines.insert(1, "|" + " --- |" * len(rows[0]))
    return "\n".join(lines)

"""What the page's first view says: the databases in scope with their counts, and example questions.

The examples are made from document titles (no model is asked): a few documents' titles, spread over the
databases, else questions that fit any collection.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from haiku_cli.errors import HaikuError
from haiku_cli.mcp_server.tools import ServerScope

EXAMPLES = 3
# How many documents of each database are read for their titles (the oldest first, as `list` shows).
TITLES_READ = 20
LONGEST_TITLE = 60
ABOUT = ("What is \u201c{}\u201d about?", "What are the key points of \u201c{}\u201d?")
GENERIC = (
    "What topics do these documents cover?",
    "Which documents should I read first, and why?",
    "What terms do these documents define?",
)


async def welcome(scope: ServerScope) -> dict[str, Any]:
    """Each database in scope (documents and chunks, or why it could not be read) and example questions."""
    rows = await scope.list_databases()
    databases = [
        {"name": r.database, "documents": r.documents, "chunks": r.chunks, "error": r.error} for r in rows
    ]
    readable = [r.database for r in rows if r.error is None and r.documents]
    titles = await _titles(scope, readable)
    return {"databases": databases, "examples": examples(titles)}


def examples(titles: list[str]) -> list[str]:
    """Questions about the first titles, then about the whole collection (all of them without titles)."""
    chosen = [template.format(title) for template, title in zip(ABOUT, titles[: EXAMPLES - 1], strict=False)]
    return [*chosen, *GENERIC][:EXAMPLES]


async def _titles(scope: ServerScope, names: list[str]) -> list[str]:
    """Distinct document titles, taken in turn from each database so that each is represented."""
    per_database: list[list[str]] = []
    for name in names:
        try:
            found = await scope.list_documents(name, limit=TITLES_READ)
        except HaikuError:
            continue  # its row already says why it cannot be read
        per_database.append([t for t in (_title(d.title, d.uri) for d in found.documents) if t])
    seen: list[str] = []
    for rank in range(TITLES_READ):
        for titles in per_database:
            if rank < len(titles) and titles[rank] not in seen:
                seen.append(titles[rank])
    return seen


def _title(title: str | None, uri: str | None) -> str:
    """A document's title, else its file's name without the extension; shortened to fit a button."""
    text = " ".join((title or "").split())
    if not text and uri:
        text = PurePosixPath(uri.rstrip("/")).stem.replace("_", " ").replace("-", " ")
    return text if len(text) <= LONGEST_TITLE else text[: LONGEST_TITLE - 1].rstrip() + "\u2026"

"""What text output says about sources that changed since they were indexed: which text `get --lines`
prints, and what `search --sync` synced first (both on stderr: stdout stays the results)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku_cli.cli import output
from haiku_cli.cli.output import printable

if TYPE_CHECKING:
    from haiku_cli.api import DocumentPart, SourceSync


def part_source(part: DocumentPart) -> str:
    """Which text `get --lines`/`--chunk` prints, and whether the source still says it."""
    sync = f"run `haiku sync -d {part.database}`"
    if part.source_state == "missing":
        return f"the stored text (as indexed); the source is gone: {sync}"
    if part.source_state != "changed":
        return "the stored text (as indexed)"
    if part.differs:
        return f"the stored text (as indexed); the file changed since and its lines here now differ: {sync}"
    if part.differs is False:
        return f"the stored text (as indexed); the file changed since, these lines still match: {sync}"
    return f"the stored text (as indexed); the source changed since: {sync}"


def synced_before_search(database: str, done: SourceSync) -> None:
    """`search --sync`: one line on stderr per source synced first (stdout stays the results)."""
    from haiku_cli import api

    if done.error:
        output.error(f"{database}: {done.error}")
        return
    output.note(printable(api.synced_note(database, done)))

"""The line a Ctrl-C ends a write command with: what of its work stands, as the database holds it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from haiku_cli.cli import output
from haiku_cli.cli.running import exit_with
from haiku_cli.errors import ExitCode

if TYPE_CHECKING:
    from haiku_cli.api import WriteOutcome


@contextmanager
def saying(line: Callable[[Sequence[WriteOutcome]], str]) -> Iterator[None]:
    """On Ctrl-C, end with `line` of the writes that ended meanwhile (exit 130)."""
    from haiku_cli import api

    start = api.write_mark()
    try:
        yield
    except KeyboardInterrupt:
        output.error(line(api.writes_since(start)))
        exit_with(ExitCode.INTERRUPTED)


def counted(documents: int, chunks: int) -> str:
    """`97 documents (8,150 chunks)`."""
    return f"{documents:,} document{'s' * (documents != 1)} ({chunks:,} chunk{'s' * (chunks != 1)})"


def _cut(outcomes: Sequence[WriteOutcome]) -> WriteOutcome | None:
    """The write under way when Ctrl-C came (the last one, if it did not commit)."""
    return outcomes[-1] if outcomes and not outcomes[-1].stored else None


def add_line(outcomes: Sequence[WriteOutcome]) -> str:
    """What an interrupted add-src kept (its one write: committed, cut, or not begun)."""
    if outcomes and outcomes[-1].stored:
        done = counted(outcomes[-1].documents, outcomes[-1].chunks)
        return f"interrupted after the add was stored: kept all {done} it wrote"
    cut = _cut(outcomes)
    if cut is None or cut.documents == 0:
        return "interrupted: kept nothing of this add; run the same add-src again"
    return f"interrupted: kept {counted(cut.documents, cut.chunks)}; run the same add-src to add the rest"


def _synced(outcomes: Sequence[WriteOutcome]) -> list[str]:
    """`stored the changes of 2 sources`, `kept 3 documents (40 chunks) of the source being synced`."""
    stored = sum(o.stored for o in outcomes)
    parts = [f"stored the changes of {stored} source{'s' * (stored != 1)}"] if stored else []
    cut = _cut(outcomes)
    if cut is not None and cut.documents:
        parts.append(f"kept {counted(cut.documents, cut.chunks)} of the source being synced")
    elif cut is not None:
        parts.append("kept nothing of the source being synced")
    return parts


def sync_line(outcomes: Sequence[WriteOutcome]) -> str:
    """What an interrupted sync left: each source's sync is a write of its own."""
    parts = _synced(outcomes) or ["nothing was stored"]
    return f"interrupted: {'; '.join(parts)}; run haiku sync again to finish"


def watch_line(outcomes: Sequence[WriteOutcome]) -> str:
    """What a watch stopped by Ctrl-C left."""
    parts = _synced(outcomes)
    if _cut(outcomes) is None:
        return "stopped watching: " + "; ".join([*parts, "no sync was under way"])
    return f"stopped watching: {'; '.join(parts)}; haiku sync or watch picks up the rest"


def whole_line(command: str) -> Callable[[Sequence[WriteOutcome]], str]:
    """The line of an all-or-nothing write (`add`, `delete`, `tag restore`, `forget-src`) that Ctrl-C
    stopped: before its commit nothing changed; after it (during the upkeep) the write is stored."""

    def line(outcomes: Sequence[WriteOutcome]) -> str:
        if any(o.stored for o in outcomes):
            return f"interrupted after the {command} was stored"
        return f"interrupted: nothing was changed, the database is as it was; run haiku {command} again"

    return line


def rebuild_line(outcomes: Sequence[WriteOutcome]) -> str:
    """What an interrupted rebuild left: nothing until its one switching commit, all of it after."""
    if any(o.stored for o in outcomes):
        return "interrupted after the rebuild was stored: every chunk is rebuilt"
    return "interrupted: nothing was rebuilt, the database is as it was; run haiku rebuild again"

"""Consoles, JSON output and progress bars that behave on terminals and in pipes."""

from __future__ import annotations

import errno
import json
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.progress import Progress


# rich honours NO_COLOR and drops styling when the stream is not a terminal.
# On a terminal rich wraps at word boundaries; a pipe or a log file gets every line (and table row) whole,
# on stdout and stderr alike (a note cut at 80 columns breaks `grep` of a log).
class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit with 1 here; the command's error boundary treats a closed pipe as success.
        raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")


def _console(stream: Any, **kw: Any) -> _Console:
    piped = not stream.isatty()
    return _Console(highlight=False, soft_wrap=piped, width=100_000 if piped else None, **kw)


out = _console(sys.stdout)
err = _console(sys.stderr, stderr=True)


def print_json(data: Any) -> None:
    """Write JSON to stdout, unwrapped and unstyled, so scripts can parse it."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def print_model(model: BaseModel | Sequence[BaseModel]) -> None:
    """A library result as JSON: exactly its `model_dump(mode="json")` (a list of them for a sequence)."""
    if hasattr(model, "model_dump"):  # pydantic itself is not imported just to check
        print_json(model.model_dump(mode="json"))
    else:
        print_json([m.model_dump(mode="json") for m in model])


def print_json_line(data: Any) -> None:
    """One compact JSON object per line (for streams of results)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")) + "\n")
    sys.stdout.flush()


# C0/C1 controls (ESC starts terminal escape sequences, CR overwrites lines) and bidi overrides that
# reorder what is shown. Newline and tab stay: they only lay text out.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Text from documents, titles or file names, made safe for a terminal: controls shown as `\\x1b`."""
    return _UNPRINTABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "\ufffd", text
    )


def error(message: str) -> None:
    """One line on stderr (no markup interpretation: messages quote user input)."""
    err.print(f"haiku: {printable(message)}", markup=False, style="red", soft_wrap=True)


def note(message: str) -> None:
    """A progress note on stderr (e.g. why a command is waiting), unstyled."""
    err.print(f"haiku: {message}", markup=False, soft_wrap=True)


class _Bar:
    def __init__(self, progress: Progress, description: str) -> None:
        self._progress = progress
        self._task = progress.add_task(description, total=0)

    def add_total(self, chunks: int) -> None:
        task = self._progress.tasks[self._task]
        self._progress.update(self._task, total=(task.total or 0) + chunks)

    def advance(self, chunks: int) -> None:
        self._progress.advance(self._task, chunks)


@contextmanager
def progress_bar(description: str) -> Iterator[_Bar]:
    """A chunk-counting bar on stderr when it is a terminal; silent otherwise."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    with progress:
        yield _Bar(progress, description)

"""Consoles, JSON output and progress bars that behave on terminals and in pipes."""

from __future__ import annotations

import errno
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.live import Live
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


def reset_consoles() -> None:
    """Build `out` and `err` again for the streams `sys.stdout` and `sys.stderr` are now: a daemon answers
    each command on its caller's terminal or pipe, which decides colours, width and wrapping."""
    global out, err
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


_NEEDS_QUOTES = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def quoted_name(name: str) -> str:
    """A file name or URL for a one-line report: as it is, or quoted with escapes when it holds a newline,
    tab or other control (`'notes\\nold.txt'`), so that it cannot split or forge a report line."""
    if not _NEEDS_QUOTES.search(name):
        return name
    escaped = name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t")
    return "'" + printable(escaped.replace("\r", "\\r")) + "'"


def error(message: str) -> None:
    """One line on stderr (no markup interpretation: messages quote user input)."""
    err.print(f"haiku: {printable(message)}", markup=False, style="red", soft_wrap=True)


def note(message: str) -> None:
    """A progress note on stderr (e.g. why a command is waiting), unstyled."""
    err.print(f"haiku: {message}", markup=False, soft_wrap=True)


class WaitNotice:
    """Why a command waits, said once: one line counting the seconds on a terminal, one plain line when
    stderr is piped."""

    def __init__(self) -> None:
        self._live: Live | None = None

    def start(self, message: str) -> None:
        """The wait began, for the reason `message` gives."""
        if not err.is_terminal:
            note(message)
            return
        from rich.live import Live

        self._live = Live(_Waiting(message), console=err, refresh_per_second=2, transient=False)
        self._live.start()

    def end(self) -> None:
        """The wait is over; the line stays as it was last shown."""
        if self._live is not None:
            self._live.stop()
            self._live = None


class _Waiting:
    def __init__(self, message: str) -> None:
        self.message = message
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        return Text(f"haiku: {self.message} ({time.monotonic() - self.since:.0f} s)")


class _Bar:
    """Files read of files found, with chunks embedded of chunks queued as a second figure and the file
    being read; work without files (a rebuild) counts chunks alone."""

    def __init__(self, progress: Progress, description: str) -> None:
        self._progress = progress
        self._description = description
        self._task = progress.add_task(description, total=0, figures="", current="")
        self._files: list[int] | None = None  # [read, found] once an add says how many it reads
        self._chunks = [0, 0]  # [embedded, queued]

    def add_files(self, count: int) -> None:
        files = self._files = self._files or [0, 0]
        files[1] += count
        self._show()

    def reading(self, source: str) -> None:
        # The file being read takes what the other columns leave of the line, at most 40 characters;
        # on a narrow terminal it gives way first, so the database's name and the times stay whole.
        room = self._progress.console.width - _fixed_cells(self._description)
        shown = _tail(source, min(room, _CURRENT_CHARS)) if room >= _NARROWEST_CURRENT else ""
        self._progress.update(self._task, current=shown)

    def upkeep(self, step: str) -> None:
        self._progress.update(self._task, current=step)

    def file_done(self) -> None:
        if self._files is not None:
            self._files[0] += 1
        self._show()

    def add_total(self, chunks: int) -> None:
        self._chunks[1] += chunks
        self._show()

    def advance(self, chunks: int) -> None:
        self._chunks[0] += chunks
        self._show()

    def _show(self) -> None:
        chunks = f"{self._chunks[0]:,}/{self._chunks[1]:,} chunks"
        if self._files is None:
            self._progress.update(
                self._task, completed=self._chunks[0], total=self._chunks[1], figures=chunks
            )
            return
        done, found = self._files
        figures = f"{done:,}/{found:,} files  {chunks}"
        self._progress.update(self._task, completed=done, total=found, figures=figures)


_CURRENT_CHARS = 40
_NARROWEST_CURRENT = 12  # a file name cut shorter than this says nothing
_BAR_CELLS = 20
# What the other columns take besides the description: the bar, the widest figures usually seen
# ("1,234/5,678 files  123,456/234,567 chunks"), elapsed and remaining time, and the gaps between them.
_OTHER_CELLS = _BAR_CELLS + 41 + 7 + 12 + 5


def _fixed_cells(description: str) -> int:
    return len(description) + _OTHER_CELLS


def _tail(text: str, keep: int) -> str:
    # The end of a path names the file; its start is the folder every file shares.
    return text if len(text) <= keep else "…" + text[-(keep - 1) :]


def _remaining_text(seconds: float | None) -> str:
    if seconds is None:
        return "eta -:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"eta {hours}:{minutes:02d}:{secs:02d}" if hours else f"eta {minutes}:{secs:02d}"


def _remaining_column() -> Any:
    """The time left, as `eta 4:10` (rich's own column has no label, and reads as a second clock)."""
    from rich.progress import ProgressColumn, Task

    class Remaining(ProgressColumn):
        max_refresh = 0.5  # the estimate moves with every chunk; twice a second is readable

        def render(self, task: Task) -> Text:
            return Text(_remaining_text(task.time_remaining), style="cyan")

    return Remaining()


@contextmanager
def progress_bar(description: str) -> Iterator[_Bar]:
    """A bar on stderr when it is a terminal (silent otherwise): files read of files found and chunks
    embedded of chunks queued, with the file being read."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description}", style="bold"),
        BarColumn(bar_width=_BAR_CELLS),
        TextColumn("{task.fields[figures]}"),
        TimeElapsedColumn(),
        _remaining_column(),
        TextColumn("{task.fields[current]}", style="dim"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    with progress:
        yield _Bar(progress, description)


@contextmanager
def count_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A bar on stderr when it is a terminal (silent otherwise), counting items done of items in all;
    yields the function that moves it."""
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
    task = progress.add_task(description, total=None)
    with progress:
        yield lambda done, total: progress.update(task, completed=done, total=total)

"""Collecting a program's output up to a budget, and saying how much was cut."""

from __future__ import annotations

from typing import Literal

Stream = Literal["stdout", "stderr"]


def truncation_marker(dropped: int) -> str:
    """The line that replaces output over the budget, telling the model what to do about it."""
    return (
        f"\n[output truncated: {dropped} more characters not shown; "
        "print summaries, counts or slices instead of whole texts]\n"
    )


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with the marker when something was cut."""
    return text if len(text) <= limit else text[:limit] + truncation_marker(len(text) - limit)


def clip_head(text: str, limit: int) -> str:
    """`text` cut to its last `limit` characters (a traceback's end names the error), marked when cut."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} characters of traceback not shown]\n" + text[-limit:]


class Capture:
    """A print callback keeping at most `limit` characters per stream; the rest is only counted."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: dict[Stream, list[str]] = {"stdout": [], "stderr": []}
        self._size: dict[Stream, int] = {"stdout": 0, "stderr": 0}
        self._dropped: dict[Stream, int] = {"stdout": 0, "stderr": 0}

    def __call__(self, stream: Stream, text: str) -> None:
        room = self._limit - self._size[stream]
        if room > 0:
            part = text[:room]
            self._kept[stream].append(part)
            self._size[stream] += len(part)
        self._dropped[stream] += max(0, len(text) - max(room, 0))

    def write(self, stream: Stream, text: str) -> None:
        """Add host-side text (a result value) under the same budget."""
        self(stream, text)

    def text(self, stream: Stream) -> str:
        """What was kept of a stream, ending with the marker if anything was dropped."""
        kept = "".join(self._kept[stream])
        dropped = self._dropped[stream]
        return kept + truncation_marker(dropped) if dropped else kept

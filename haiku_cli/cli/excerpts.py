"""A window of a chunk around the words asked for, cut between words, never inside a Markdown link, and
with code fences kept as lines where the excerpt may take several."""

from __future__ import annotations

import re
from collections.abc import Sequence

from haiku_cli.cli.output import printable

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[[^\[\]\n]{0,200}\]\([^()\s]{0,2000}\)")
_LINK_TARGET = re.compile(r"(!?\[[^\[\]\n]{0,200}\])\(([^()\s]{0,2000})\)")
_TARGET_CHARS = 40  # a longer link target is shown shortened in its middle


def excerpt(content: str, terms: Sequence[str], width: int = 320, *, indent: str | None = None) -> str:
    """The content around the first query term, about `width` characters.

    On one line unless `indent` is given: then the lines of code blocks stay lines (indented by it).
    """
    shown = printable(_display(content))
    if indent is None:
        shown = " ".join(shown.split())
    if len(shown) > width:
        shown = _window(shown, terms, width)
    if indent is None:
        return shown
    return "\n".join(
        line if i == 0 or not line else indent + line for i, line in enumerate(shown.split("\n"))
    )


def _display(content: str) -> str:
    """Prose with its whitespace collapsed and long link targets shortened; code blocks as their lines."""
    shown = ""
    prose: list[str] = []
    code: list[str] | None = None
    fence = ""

    def add_prose() -> None:
        nonlocal shown
        text = _LINK_TARGET.sub(_shorter_target, " ".join(" ".join(prose).split()))
        if text:
            shown += (" " if shown and not shown.endswith("\n") else "") + text
        prose.clear()

    def add_code(lines: list[str]) -> None:
        nonlocal shown
        shown = shown.rstrip(" ") + ("\n" if shown else "") + "\n".join(lines) + "\n"

    for line in content.split("\n"):
        f = _FENCE.match(line)
        if code is None:
            if f:
                add_prose()
                fence, code = f.group(1), [line.strip()]
            else:
                prose.append(line)
            continue
        code.append(line.rstrip())
        if (
            f
            and f.group(1)[0] == fence[0]
            and len(f.group(1)) >= len(fence)
            and not line.strip(fence[0] + " \t")
        ):
            add_code(code)
            code = None
    if code is not None:
        add_code(code)
    add_prose()
    return shown.strip("\n")


def _shorter_target(link: re.Match[str]) -> str:
    target = link.group(2)
    if len(target) <= _TARGET_CHARS:
        return link.group(0)
    return f"{link.group(1)}({target[: _TARGET_CHARS - 13]}…{target[-12:]})"


def _window(shown: str, terms: Sequence[str], width: int) -> str:
    lower = shown.lower()
    positions = [p for p in (lower.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    end = min(len(shown), start + width)
    # A link the window cuts into is taken whole or left out, as fits.
    for link in _LINK.finditer(shown, max(0, start - 2200), min(len(shown), end + 2200)):
        if link.start() < start < link.end():
            start = link.start() if link.end() - link.start() <= width // 2 else link.end()
        if link.start() < end < link.end():
            end = link.end() if link.end() - start <= width * 5 // 4 else link.start()
    # Cut between words, not inside one (a word longer than the window is cut after all).
    if start and not shown[start - 1].isspace() and (space := _space(shown, start, end)) > 0:
        start = space + 1
    if end < len(shown) and not shown[end].isspace() and (space := _rspace(shown, start, end)) > start:
        end = space
    return ("…" if start else "") + shown[start:end].strip() + ("…" if end < len(shown) else "")


def _space(text: str, start: int, end: int) -> int:
    found = [i for i in (text.find(" ", start, end), text.find("\n", start, end)) if i >= 0]
    return min(found) if found else -1


def _rspace(text: str, start: int, end: int) -> int:
    return max(text.rfind(" ", start, end), text.rfind("\n", start, end))

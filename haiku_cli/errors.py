"""Errors every layer may raise, and the exit codes the CLI maps them to."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def echoed(value: str) -> str:
    """User input as a one-line message repeats it: a newline, tab or other control escaped (`a\\nb`), so
    that it can neither split the line nor pass for a line of its own."""
    return _CONTROLS.sub(lambda m: _ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"), value)


def exception_reason(
    exc: BaseException, *, upto: Literal["all", "line", "sentence"] = "all", limit: int = 0, cut: str = ""
) -> str:
    """Another library's exception in words for one line of a message of ours: all of its text with its
    white space folded, its first line (the rest is a traceback or a payload), or its first sentence on one
    line (provider messages run on, with links); its type's name when it has no words. `limit`, when set,
    cuts it to that many characters, the last of them `cut` (an ellipsis) when given."""
    text = str(exc).strip()
    text = next(iter(text.splitlines()), "") if upto == "line" else " ".join(text.split())
    if upto == "sentence":
        sentence = _SENTENCE.match(text)
        text = sentence.group(1) if sentence else text
    text = text or type(exc).__name__
    if limit and len(text) > limit:
        text = text[: limit - len(cut)] + cut
    return text


_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)")


class ExitCode(IntEnum):
    """Documented process exit codes of the `haiku` command."""

    OK = 0
    INPUT = 1  # bad input: a missing file, an invalid filter, an unknown database name
    USAGE = 2  # the command line itself is malformed (typer/click's own code)
    DATABASE = 3  # a database cannot be opened, read or written
    MODEL = 4  # the embedder or the language model failed or is not configured
    PARTIAL = 5  # a batch finished but some of its items failed (e.g. add-src)
    INTERNAL = 70  # a bug in haiku: rerun with --debug and report the traceback
    OUTPUT = 74  # the output cannot be written (disk full, a closed terminal)
    INTERRUPTED = 130  # Ctrl-C


@dataclass(frozen=True)
class Hint:
    """What the user can do next, worded by each front door its own way (a CLI command, an MCP tool).

    `list_documents` (to find an id) and `add_documents` (to a database not written yet) are about
    `database`; `fts_or_narrow` (databases written with different embedders) is about a set: search it by
    full text alone, or narrow it; `page_documents` says that listing, not searching, reaches every
    document; `choose_model` that a model may also be passed when starting the front door;
    `finish_upkeep` that vacuuming `database` finishes the index upkeep a stored write left. `chosen_by`
    is the CLI option that picked the database (`--database notes`, `--db PATH`), for the CLI's wording.
    """

    action: Literal[
        "list_documents", "add_documents", "fts_or_narrow", "page_documents", "choose_model", "finish_upkeep"
    ]
    database: str = ""
    chosen_by: str = ""


class HaikuError(Exception):
    """An error with a one-line message meant for the user, and optionally a `Hint` of what to do next.

    The message itself names no command: `str(error)` reads the same to a CLI user, an MCP client and a
    model; each front door adds the hint in its own terms. A message about one argument starts with its
    Python name (`limit must be at least 1`), given as `argument` so that the CLI can say `--limit`.
    """

    exit_code: ExitCode = ExitCode.INPUT

    def __init__(self, message: str = "", *, hint: Hint | None = None, argument: str = "") -> None:
        """The message, the next step when it is a command or a tool call, and the argument it is about."""
        super().__init__(message)
        self.hint = hint
        self.argument = argument
        self.parts: tuple[HaikuError, ...] = ()

    @classmethod
    def of_several(cls, errors: Sequence[HaikuError]) -> HaikuError:
        """One error for several (e.g. every database that failed to open): a line each, hints kept."""
        if len(errors) == 1:
            return errors[0]
        combined = cls("\n".join(str(e) for e in errors))
        combined.parts = tuple(errors)
        return combined

    def each(self) -> tuple[HaikuError, ...]:
        """The errors this one stands for: its parts, or itself."""
        return self.parts or (self,)


class InputError(HaikuError):
    """The user's input is wrong: say what and how to fix it."""

    exit_code = ExitCode.INPUT


class DatabaseError(HaikuError):
    """A database cannot be opened, read or written."""

    exit_code = ExitCode.DATABASE


class ModelError(HaikuError):
    """An embedder or language model is missing, unreachable or failed."""

    exit_code = ExitCode.MODEL

"""Errors every layer may raise, and the exit codes the CLI maps them to."""

from __future__ import annotations

from enum import IntEnum


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


class HaikuError(Exception):
    """An error with a one-line message meant for the user."""

    exit_code: ExitCode = ExitCode.INPUT


class InputError(HaikuError):
    """The user's input is wrong: say what and how to fix it."""

    exit_code = ExitCode.INPUT


class DatabaseError(HaikuError):
    """A database cannot be opened, read or written."""

    exit_code = ExitCode.DATABASE


class ModelError(HaikuError):
    """An embedder or language model is missing, unreachable or failed."""

    exit_code = ExitCode.MODEL

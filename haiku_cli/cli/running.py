"""Running a command's library call: async bridging, and errors turned into one line and an exit code."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import typer

from haiku_cli.cli import output
from haiku_cli.errors import ExitCode, HaikuError

T = TypeVar("T")

_debug = False


def set_debug(value: bool) -> None:
    """`--debug`: let tracebacks through."""
    global _debug
    _debug = value


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def run(fn: Callable[..., Awaitable[T] | T], *args: Any) -> T:
    """Call a library function (async or not); map its failures to one line on stderr and an exit code."""
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            return anyio.run(_await, result)
        return result  # type: ignore[return-value]
    except HaikuError as exc:
        if _debug:
            raise
        for line in str(exc).splitlines() or [type(exc).__name__]:
            output.error(line)
        raise typer.Exit(int(exc.exit_code)) from None
    except KeyboardInterrupt:
        output.error("interrupted")
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except Exception as exc:
        if _debug:
            raise
        output.error(f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        output.error("rerun with --debug for the traceback, and please report it")
        raise typer.Exit(int(ExitCode.INTERNAL)) from None


def exit_with(code: ExitCode) -> None:
    """Leave with a documented exit code (no-op for success)."""
    if code != ExitCode.OK:
        raise typer.Exit(int(code))

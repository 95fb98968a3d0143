"""One question's sandbox: a monty REPL whose variables persist across executions, under limits.

Every failure a program can cause (an exception, a time or memory limit, a crashed worker) comes back as
an `Execution` whose stderr tells the model what happened and what it still has; nothing escapes to the
host as an exception. After a limit or a crash the worker is replaced and the model is told its variables
are gone (monty gives no guarantees about a heap stopped mid-operation, and a memory bomb held in a
global would fail every later execution).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Protocol

import anyio
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncMonty,
    AsyncMontySession,
    ExternalSettledResult,
    MontyComplete,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    ResourceLimits,
)

from haiku_cli.config.settings import SandboxSettings
from haiku_cli.errors import DatabaseError, HaikuError, InputError
from haiku_cli.sandbox.bounds import check_result_size
from haiku_cli.sandbox.capture import Capture, clip, clip_head
from haiku_cli.sandbox.execution import Execution

# Host calls, file reads included, count against this budget; it is per checkout and cannot be
# switched off, so it is set far beyond what a time-limited program can use.
MAX_SUSPENSIONS = 10_000_000
# The pool kills a worker that overruns its own time limit by this much (its last-resort backstop).
BACKSTOP_SECONDS = 10.0
_ENV_CALLS = frozenset({"os.getenv", "os.environ"})
# pydantic-monty's words for a program stopped by a limit; the last is a worker killed for its memory use.
_LIMIT_MESSAGES = ("time limit exceeded", "memory limit exceeded", "exceeded its memory limit")


class FileHandler(Protocol):
    """Answers the sandbox's path calls (see `haiku_cli.sandbox.mount.DocumentMount`)."""

    async def handle(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...


FileCalls = frozenset[str]
HostFunction = Callable[..., Awaitable[Any] | Any]
HostNotes = Callable[[], list[str]]
"""What the host functions have to say about the calls of the execution that just ran (taken once)."""


class Sandbox:
    """A persistent REPL for one question; `execute` runs one program and never raises for its failures."""

    def __init__(
        self,
        pool: AsyncMonty,
        settings: SandboxSettings,
        functions: Mapping[str, HostFunction],
        files: FileHandler | None = None,
        file_calls: FileCalls = frozenset(),
        host_notes: HostNotes | None = None,
    ) -> None:
        self._pool = pool
        self._host_notes = host_notes
        self._settings = settings
        self._functions = dict(functions)
        self._files = files
        self._file_calls = file_calls
        self._checkout: Any = None
        self._session: AsyncMontySession | None = None
        # pydantic-ai runs the tool calls of one response concurrently; a REPL takes one feed at a time.
        self._lock = anyio.Lock()
        self.executions = 0

    @property
    def limits(self) -> ResourceLimits:
        """The limits every execution runs under."""
        return {
            "max_feed_duration_secs": self._settings.timeout_seconds,
            "max_memory": self._settings.memory_mb * 2**20,
            "max_suspensions": MAX_SUSPENSIONS,
        }

    @property
    def worker_pid(self) -> int | None:
        """The current worker's process id, None before the first execution (diagnostics and tests)."""
        return self._session.worker_pid if self._session is not None else None

    async def execute(self, code: str) -> Execution:
        """Run one program in the persistent session; limits and crashes become messages in stderr."""
        async with self._lock:
            if self.executions >= self._settings.max_executions:
                return Execution(
                    code=code,
                    stdout="",
                    stderr=(
                        f"not run: the limit of {self._settings.max_executions} executions per question "
                        "is reached; answer with what you have found so far"
                    ),
                    ok=False,
                )
            self.executions += 1
            return await self._execute(code)

    async def _execute(self, code: str) -> Execution:
        capture = Capture(self._settings.max_output_chars)
        session = await self._ensure_session()
        deadline = anyio.current_time() + self._settings.timeout_seconds
        notes: list[str] = []
        ok = False
        try:
            value = await self._drive(session, code, capture, deadline)
            if value is not None:
                capture.write("stdout", repr(value) + "\n")
            ok = True
        except MontyCrashedError as exc:
            await self._discard()
            if exc.timed_out:
                notes.append(self._limit_note("ran past the time limit and its worker was killed"))
            else:
                notes.append(f"the sandbox worker crashed ({exc}) and was restarted; {_GONE}")
        except (MontySyntaxError, MontyRuntimeError) as exc:
            notes.append(clip_head(exc.display("traceback"), self._settings.max_output_chars))
            if isinstance(exc, MontyRuntimeError) and _hit_limit(exc):
                await self._discard()
                notes.append(self._limit_note(_limit_name(exc)))
        except MontyError as exc:
            notes.append(clip(f"{type(exc).__name__}: {exc}", self._settings.max_output_chars))
        except RuntimeError as exc:
            # The pool refusing to go on (e.g. a finished checkout): start again from a clean worker.
            await self._discard()
            notes.append(f"the sandbox stopped ({exc}) and was restarted; {_GONE}")
        # Executions run one at a time: what the host has to say now is about this one's calls.
        notes += [f"[haiku] {note}" for note in (self._host_notes() if self._host_notes else [])]
        stderr = capture.text("stderr") + "".join(n.rstrip("\n") + "\n" for n in notes)
        return Execution(code=code, stdout=capture.text("stdout"), stderr=stderr, ok=ok)

    def _limit_note(self, what: str) -> str:
        s = self._settings
        return (
            f"[haiku] the execution {what} (limits: {s.timeout_seconds:g} s of wall time, {s.memory_mb} MB "
            f"of memory per execution). The sandbox was restarted: {_GONE}. Do less per execution, "
            "e.g. process documents in batches and keep only small results in variables."
        )

    async def _drive(self, session: AsyncMontySession, code: str, capture: Capture, deadline: float) -> Any:
        """Run a feed, answering each host call ourselves so async host functions look synchronous."""
        snap = await session.feed_start(code, external_lookup=self._functions, print_callback=capture)
        while not isinstance(snap, MontyComplete):
            if not isinstance(snap, AsyncFunctionSnapshot):
                snap = await snap.resume_auto()  # name lookups, answered from external_lookup
            elif snap.is_os_function and snap.function_name in self._file_calls and self._files is not None:
                files = self._files
                call = files.handle(snap.function_name, snap.args, snap.kwargs)
                snap = await snap.resume(await self._settle(str(snap.function_name), call, deadline))
            elif snap.is_os_function and _refused(str(snap.function_name)):
                # No environment and no host files: monty's own refusal is the answer.
                snap = await snap.resume_not_handled()
            elif snap.is_os_function:
                snap = await snap.resume_auto()  # clocks and the like, served inside the pool
            else:
                snap = await snap.resume(await self._call(snap, deadline))
        return snap.output

    async def _call(self, snap: AsyncFunctionSnapshot, deadline: float) -> ExternalSettledResult:
        fn = self._functions.get(str(snap.function_name))
        if fn is None:
            return {"exc_type": "NameError", "message": f"name {snap.function_name!r} is not defined"}
        try:
            call = fn(*snap.args, **snap.kwargs)
        except Exception as exc:  # a bad argument list: TypeError, raised where the program called
            return {"exception": _for_sandbox(exc)}
        return await self._settle(str(snap.function_name), call, deadline)

    async def _settle(self, name: str, call: Any, deadline: float) -> ExternalSettledResult:
        # Handing the program more than its memory can hold would kill the worker and all its variables.
        fits = partial(check_result_size, name, memory_mb=self._settings.memory_mb)
        return await _settle(call, deadline, self._settings.timeout_seconds, fits)

    async def _ensure_session(self) -> AsyncMontySession:
        if self._session is None:
            self._checkout = self._pool.checkout(
                limits=self.limits,
                script_name="analysis.py",
                # Sleeping would only spend wall time outside every limit (sleeps are not execution time).
                os_policy={"sleep": "zero"},
            )
            self._session = await self._checkout.__aenter__()
        return self._session

    async def _discard(self) -> None:
        """Return (or drop) the current worker; the next execution checks out a fresh one."""
        checkout, self._checkout, self._session = self._checkout, None, None
        if checkout is not None:
            with contextlib.suppress(Exception):
                await checkout.__aexit__(None, None, None)

    async def close(self) -> None:
        """Give the worker back to the pool."""
        await self._discard()


_GONE = "all variables from earlier executions are gone; recompute what you need"


async def _settle(
    call: Any, deadline: float, timeout: float, fits: Callable[[Any], None]
) -> ExternalSettledResult:
    """Await a host call within what is left of the execution's wall time; failures become sandbox errors,
    as does a result `fits` refuses (with MemoryError)."""
    remaining = deadline - anyio.current_time()
    message = (
        f"the execution's wall-time limit of {timeout:g} s was reached during a host call "
        "(search, list_documents or a file read); do fewer or smaller calls per execution"
    )
    if remaining <= 0:
        if inspect.iscoroutine(call):
            call.close()
        return {"exception": TimeoutError(message)}
    try:
        with anyio.move_on_after(remaining) as scope:
            value = await call if inspect.isawaitable(call) else call
        if scope.cancelled_caught:
            return {"exception": TimeoutError(message)}
    except Exception as exc:
        return {"exception": _for_sandbox(exc)}
    try:
        fits(value)
    except MemoryError as exc:
        return {"exception": exc}
    return {"return_value": value}


def _for_sandbox(exc: Exception) -> BaseException:
    """An exception the sandbox can raise: built-in types pass, haiku's own become their nearest built-in."""
    if isinstance(exc, InputError):
        return ValueError(str(exc))
    if isinstance(exc, DatabaseError):
        return OSError(str(exc))
    if isinstance(exc, HaikuError):
        return RuntimeError(str(exc))
    if type(exc).__module__ == "builtins":
        return exc
    return RuntimeError(f"host error: {type(exc).__name__}: {exc}")


def _refused(name: str) -> bool:
    return name in _ENV_CALLS or name == "open" or name.startswith("Path.")


def _hit_limit(exc: MontyRuntimeError) -> bool:
    """Whether a resource limit stopped the program, rather than an exception of its own.

    pydantic-monty raises a limit inside the program as a plain `TimeoutError` or `MemoryError`, the
    types a program may raise itself, and offers no attribute or subclass to tell them apart: only its
    message does. So this is the one place its text is read; the type decides which limit it was.
    """
    native = exc.exception()
    return isinstance(native, TimeoutError | MemoryError) and any(m in str(native) for m in _LIMIT_MESSAGES)


def _limit_name(exc: MontyRuntimeError) -> str:
    if isinstance(exc.exception(), MemoryError):
        return "hit the memory limit"
    return "hit the time limit"


@asynccontextmanager
async def open_sandbox(
    settings: SandboxSettings,
    functions: Mapping[str, HostFunction],
    files: FileHandler | None = None,
    file_calls: FileCalls = frozenset(),
    host_notes: HostNotes | None = None,
) -> AsyncIterator[Sandbox]:
    """Start a worker pool and yield one sandbox over it; everything is shut down on exit."""
    pool = AsyncMonty(
        min_processes=1,
        max_processes=2,
        request_timeout=settings.timeout_seconds + BACKSTOP_SECONDS,
    )
    async with pool:
        sandbox = Sandbox(pool, settings, functions, files, file_calls, host_notes)
        try:
            yield sandbox
        finally:
            await sandbox.close()

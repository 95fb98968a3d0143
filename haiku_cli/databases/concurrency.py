"""Running blocking database calls concurrently, with errors surfacing as themselves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar, cast

import anyio
import anyio.to_thread

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")


async def in_threads(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run blocking calls in worker threads at once; results in order, the first failure re-raised as is."""
    return await concurrently([partial(anyio.to_thread.run_sync, call) for call in calls])


async def concurrently(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Await several calls at once; results in order, the first failure re-raised as is."""
    results: list[T | None] = [None] * len(calls)

    async def one(i: int, call: Callable[[], Awaitable[T]]) -> None:
        results[i] = await call()

    try:
        async with anyio.create_task_group() as tg:
            for i, call in enumerate(calls):
                tg.start_soon(one, i, call)
    except BaseExceptionGroup as group:
        # A task group wraps failures; callers (and users) want the error itself, not a group, with
        # its own cause kept (what a caller may decide on, e.g. a file a vacuum removed).
        leaf = _first_leaf(group)
        raise leaf from leaf.__cause__
    return results  # type: ignore[return-value]


async def both(first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]) -> tuple[A, B]:
    """Await two calls of different result types at once (see `concurrently`)."""
    a, b = await concurrently([first, second])
    return cast(A, a), cast(B, b)


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc

"""Two stages running beside their caller: each batch is handed from one to the next, never queued."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

import anyio

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

In = TypeVar("In")
Out = TypeVar("Out")


@asynccontextmanager
async def two_stages(
    first: Callable[[In], Awaitable[Out]], second: Callable[[Out], Awaitable[None]]
) -> AsyncIterator[MemoryObjectSendStream[In]]:
    """Run `first` on each batch sent to the stream yielded and `second` on what it made, as tasks beside
    the caller; on exit, wait for both to finish every batch sent.

    Sending waits until `first` takes the batch, so at most one batch is in each stage. A failure in
    either stage or in the caller cancels the rest (after the batch in hand) and is raised as itself.
    """
    to_first, first_queue = anyio.create_memory_object_stream[In](0)
    to_second, second_queue = anyio.create_memory_object_stream[Out](0)
    try:
        async with anyio.create_task_group() as stages:
            stages.start_soon(_first_stage, first, first_queue, to_second)
            stages.start_soon(_second_stage, second, second_queue)
            with to_first:  # closed on exit: the first stage ends once it has taken the last batch
                yield to_first
    except BaseExceptionGroup as group:
        error = _first_error(group)
        raise error from error.__cause__  # the error itself, with its own cause


async def hand_on(stream: MemoryObjectSendStream[In], batch: In) -> None:
    """Send `batch` to the first stage of `two_stages`; once a stage has failed, wait to be cancelled
    instead, so that `two_stages` raises that failure rather than the broken stream."""
    try:
        await stream.send(batch)
    except anyio.BrokenResourceError:
        # The first stage closes its end only when it stops, before its failure cancels the rest.
        await anyio.sleep_forever()


async def _first_stage(
    first: Callable[[In], Awaitable[Out]],
    batches: MemoryObjectReceiveStream[In],
    out: MemoryObjectSendStream[Out],
) -> None:
    async with batches, out:
        async for batch in batches:
            await out.send(await first(batch))


async def _second_stage(
    second: Callable[[Out], Awaitable[None]], batches: MemoryObjectReceiveStream[Out]
) -> None:
    async with batches:
        async for batch in batches:
            await second(batch)


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """The error that stopped a task group (the others were cancelled because of it)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        if not isinstance(exc, anyio.get_cancelled_exc_class()):
            return exc
    return group

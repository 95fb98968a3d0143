"""Two stages beside their caller: every batch goes through both in order; a failure is raised as itself."""

from __future__ import annotations

import anyio
import pytest

from haiku_cli.ingest.stages import two_stages


async def _doubled(batch: int) -> int:
    return batch * 2


def test_every_batch_goes_through_both_stages_in_the_order_sent() -> None:
    done: list[int] = []

    async def store(batch: int) -> None:
        await anyio.sleep(0)  # the next batch goes through the first stage meanwhile
        done.append(batch)

    async def send_five() -> None:
        async with two_stages(_doubled, store) as send:
            for i in range(5):
                await send.send(i)

    anyio.run(send_five)
    assert done == [0, 2, 4, 6, 8]


def test_a_failing_stage_stops_the_caller_and_is_raised_as_itself() -> None:
    sent: list[int] = []

    async def store(batch: int) -> None:
        if batch == 2:
            raise OSError("disk full")

    async def send_many() -> None:
        async with two_stages(_doubled, store) as send:
            for i in range(100):
                await send.send(i)
                sent.append(i)

    with pytest.raises(OSError, match="disk full"):
        anyio.run(send_many)
    assert sent[-1] < 5  # the caller was cancelled a batch or two after the failure, not left sending


def test_an_error_in_the_caller_is_raised_as_itself() -> None:
    async def store(batch: int) -> None:
        pass

    async def send_then_fail() -> None:
        async with two_stages(_doubled, store) as send:
            await send.send(1)
            raise KeyError("bad source")

    with pytest.raises(KeyError, match="bad source"):
        anyio.run(send_then_fail)

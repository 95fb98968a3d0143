"""The sandbox session: persistence, limits, crashes and host calls, with plain host functions."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from haiku_cli.config.settings import SandboxSettings
from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.sandbox.runner import open_sandbox

pytestmark = pytest.mark.anyio


async def slow(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "done"


async def fails(kind: str) -> None:
    if kind == "input":
        raise InputError("bad filter")
    if kind == "database":
        raise DatabaseError("database 'alpha' cannot be reached")
    raise KeyError("nope")


def twice(x: int) -> int:
    return 2 * x


async def pages(n: int) -> list[dict[str, str]]:
    """`n` MB of text in 1 MB pieces, as a search or a file read over huge documents might return."""
    return [{"content": "x" * 2**20} for _ in range(n)]


FUNCTIONS = {"slow": slow, "fails": fails, "twice": twice, "pages": pages}


def settings(**kw) -> SandboxSettings:
    return SandboxSettings(**kw)


async def test_variables_persist_and_the_last_expression_is_shown() -> None:
    async with open_sandbox(settings(), FUNCTIONS) as box:
        first = await box.execute("counts = {'a': 1}\ndef bump(k):\n    counts[k] = counts.get(k, 0) + 1")
        second = await box.execute("bump('a'); bump('b')\ncounts")
    assert first.ok and first.stdout == ""
    assert "no output" in first.for_model()
    assert second.ok and second.stdout == "{'a': 2, 'b': 1}\n"


async def test_a_runtime_error_is_reported_and_variables_survive() -> None:
    async with open_sandbox(settings(), FUNCTIONS) as box:
        await box.execute("keep = [1, 2]")
        err = await box.execute("total = sum(keep)\nprint('before')\nkeep['x']")
        after = await box.execute("print(total, keep)")
    assert not err.ok
    assert err.stdout == "before\n"
    assert "TypeError" in err.stderr and 'File "<python-input-1>", line 3' in err.stderr
    assert err.for_model().startswith("error\nstdout:\nbefore\nstderr:\nTraceback")
    assert after.stdout == "3 [1, 2]\n"


async def test_a_syntax_error_is_reported() -> None:
    async with open_sandbox(settings(), FUNCTIONS) as box:
        run = await box.execute("def broken(:\n    pass")
    assert not run.ok
    assert "SyntaxError" in run.stderr


async def test_host_functions_look_synchronous_and_errors_arrive_as_builtin_exceptions() -> None:
    async with open_sandbox(settings(), FUNCTIONS) as box:
        run = await box.execute(
            "print(slow(0.01), twice(21))\n"
            "for kind in ['input', 'database', 'other']:\n"
            "    try:\n"
            "        fails(kind)\n"
            "    except Exception as e:\n"
            "        print(type(e).__name__, e)"
        )
        bad_args = await box.execute("twice(1, 2)")
        unknown = await box.execute("missing_function()")
    assert run.ok, run.stderr
    assert run.stdout.splitlines() == [
        "done 42",
        "ValueError bad filter",
        "OSError database 'alpha' cannot be reached",
        "KeyError 'nope'",
    ]
    assert "TypeError" in bad_args.stderr
    assert "NameError" in unknown.stderr


async def test_a_slow_host_call_hits_the_wall_time_limit_and_keeps_the_session() -> None:
    async with open_sandbox(settings(timeout_seconds=0.3), FUNCTIONS) as box:
        await box.execute("kept = 7")
        run = await box.execute("slow(5)")
        after = await box.execute("print(kept)")
    assert not run.ok
    assert (
        "TimeoutError: the execution's wall-time limit of 0.3 s was reached during a host call" in run.stderr
    )
    assert after.stdout == "7\n"


async def test_a_crashed_worker_is_replaced_and_the_model_is_told() -> None:
    async with open_sandbox(settings(), FUNCTIONS) as box:
        await box.execute("x = 1")
        pid = box.worker_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        crashed = await box.execute("print(x)")
        after = await box.execute("print('fresh')")
        gone = await box.execute("x")
    assert not crashed.ok
    assert "crashed" in crashed.stderr and "variables from earlier executions are gone" in crashed.stderr
    assert box.worker_pid != pid
    assert after.ok and after.stdout == "fresh\n"
    assert "NameError" in gone.stderr


async def test_executions_per_question_are_limited() -> None:
    async with open_sandbox(settings(max_executions=2), FUNCTIONS) as box:
        runs = [await box.execute(f"print({i})") for i in range(3)]
    assert [r.ok for r in runs] == [True, True, False]
    assert "limit of 2 executions per question is reached" in runs[2].stderr


async def test_concurrent_executions_take_turns() -> None:
    """Tool calls of one model response run concurrently; the REPL must see them one at a time."""
    results = []
    async with open_sandbox(settings(), FUNCTIONS) as box:

        async def run(i: int) -> None:
            results.append(await box.execute(f"slow(0.05)\nn = {i}\nprint(n)"))

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(run, i)
    assert all(r.ok for r in results), [r.stderr for r in results]
    assert sorted(r.stdout for r in results) == ["0\n", "1\n", "2\n"]


async def test_sleeping_costs_no_wall_time() -> None:
    async with open_sandbox(settings(timeout_seconds=1), FUNCTIONS) as box:
        started = anyio.current_time()
        run = await box.execute("import time\nfor _ in range(100):\n    time.sleep(10)\nprint('awake')")
    assert run.ok and run.stdout == "awake\n"
    assert anyio.current_time() - started < 1


async def test_a_host_result_too_big_for_the_sandbox_is_refused_and_the_session_kept() -> None:
    async with open_sandbox(settings(memory_mb=16), FUNCTIONS) as box:
        await box.execute("kept = 7")
        small = await box.execute("print(len(pages(2)))")
        huge = await box.execute("r = pages(64)")
        caught = await box.execute(
            "try:\n    pages(64)\nexcept MemoryError:\n    print('asked for too much')"
        )
        after = await box.execute("print(kept)")
    assert small.ok and small.stdout == "2\n"
    assert not huge.ok
    assert (
        "MemoryError: pages() would return more than 4 MB, over its share of the sandbox's 16 MB of memory"
        in huge.stderr
    )
    assert caught.stdout == "asked for too much\n"
    assert after.ok and after.stdout == "7\n"  # the worker and its variables survived

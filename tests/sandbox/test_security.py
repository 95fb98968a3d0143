"""Escape attempts: each must fail inside the sandbox with a clear message, and the sandbox must go on."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("open('/etc/passwd').read()", "PermissionError: no host filesystem here: '/etc/passwd'"),
        ("from pathlib import Path\nPath('/etc/passwd').read_text()", "PermissionError: no host filesystem"),
        ("from pathlib import Path\nPath('/etc').exists()", "PermissionError: no host filesystem"),
        ("import os\nos.listdir('/home')", "PermissionError: no host filesystem here: '/home'"),
        (
            "open('/documents/../etc/passwd').read()",
            "PermissionError: no host filesystem here: '/etc/passwd'",
        ),
        ("open('../../etc/passwd').read()", "PermissionError: no host filesystem here: '/etc/passwd'"),
        ("open('/tmp/x', 'w').write('x')", "PermissionError: no host filesystem here: cannot write '/tmp/x'"),
        ("import os\nos.getenv('HOME')", "not supported"),
        ("import os\nos.system('id')", "AttributeError: module 'os' has no attribute 'system'"),
        ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
        ("import socket", "ModuleNotFoundError: No module named 'socket'"),
        ("import ctypes", "ModuleNotFoundError: No module named 'ctypes'"),
        ("__import__('os')", "NameError"),
    ],
)
async def test_host_access_is_refused(open_box, code: str, expected: str) -> None:
    async with open_box("alpha") as box:
        run = await box.execute(code)
        after = await box.execute("print('still here')")
    assert not run.ok
    assert expected in run.stderr
    assert after.ok and after.stdout == "still here\n"


@pytest.mark.parametrize(
    "code",
    [
        "open(f'{base}/content.txt', 'w').write('x')",
        "open(f'{base}/content.txt', 'a').write('x')",
        "open(f'{base}/content.txt', 'wb').write(b'x')",
        "from pathlib import Path\nPath(f'{base}/content.txt').write_text('x')",
        "from pathlib import Path\nPath(f'{base}/content.txt').unlink()",
        "from pathlib import Path\nPath(f'{base}/sub').mkdir()",
        "from pathlib import Path\nPath(f'{base}/content.txt').rename(f'{base}/other.txt')",
        "from pathlib import Path\nPath('/documents/new').mkdir()",
    ],
)
async def test_documents_are_read_only(open_box, corpus, code: str) -> None:
    doc_id = corpus.ids["alpha"][0]
    async with open_box("alpha") as box:
        run = await box.execute(f"base = '/documents/{doc_id}'\n{code}")
        still = await box.execute(f"print(open('/documents/{doc_id}/content.txt').read()[:11])")
    assert not run.ok
    assert "PermissionError: read-only: /documents is mounted read-only" in run.stderr
    assert still.stdout == "The cat sat\n"


async def test_reading_a_document_of_an_unselected_database_fails(open_box, corpus) -> None:
    beta_id = corpus.ids["beta"][0]
    async with open_box("alpha") as box:
        run = await box.execute(f"open('/documents/{beta_id}/metadata.json').read()")
    assert not run.ok
    assert (
        f"FileNotFoundError: [Errno 2] No such file or directory: '/documents/{beta_id}/metadata.json'"
        in run.stderr
    )


async def test_an_infinite_loop_hits_the_time_limit_and_the_session_survives(open_box) -> None:
    async with open_box("alpha", timeout_seconds=0.5) as box:
        await box.execute("x = 41")
        run = await box.execute("while True:\n    pass")  # ended by the limit (pytest's timeout if not)
        after = await box.execute("print(x)")
        again = await box.execute("x = 1\nprint(x + 1)")
    assert not run.ok
    assert "TimeoutError" in run.stderr
    assert "hit the time limit" in run.stderr
    assert "variables from earlier executions are gone" in run.stderr
    assert "NameError" in after.stderr  # told the truth: x is gone
    assert again.ok and again.stdout == "2\n"


async def test_a_memory_bomb_hits_the_memory_limit_and_the_session_survives(open_box) -> None:
    async with open_box("alpha", memory_mb=32) as box:
        run = await box.execute("hoard = []\nwhile True:\n    hoard.append('x' * 100000)")
        instant = await box.execute("'a' * 10**9")
        after = await box.execute("print(len('ok'))")
    assert not run.ok
    assert "MemoryError: memory limit exceeded" in run.stderr
    assert "hit the memory limit" in run.stderr and "variables from earlier executions are gone" in run.stderr
    assert "MemoryError" in instant.stderr
    assert after.ok and after.stdout == "2\n"


async def test_a_timeout_or_memory_error_of_the_program_s_own_is_no_limit(open_box) -> None:
    async with open_box("alpha") as box:
        await box.execute("kept = 'yes'")
        timeout = await box.execute("raise TimeoutError('the service took too long')")
        memory = await box.execute("raise MemoryError('cache full')")
        after = await box.execute("print(kept)")
    assert "TimeoutError: the service took too long" in timeout.stderr
    assert "MemoryError: cache full" in memory.stderr
    assert not any("limit" in run.stderr for run in (timeout, memory))  # no limit was hit, none said
    assert after.ok and after.stdout == "yes\n"  # and the variables survive


async def test_deep_recursion_is_a_recursion_error(open_box) -> None:
    async with open_box("alpha") as box:
        await box.execute("kept = 'yes'")
        run = await box.execute("def down(n):\n    return down(n + 1)\ndown(0)")
        after = await box.execute("print(kept)")
    assert not run.ok
    assert "RecursionError: maximum recursion depth exceeded" in run.stderr
    # The traceback is cut from the front so the error line stays.
    assert len(run.stderr) < 25_000
    assert after.stdout == "yes\n"  # an ordinary exception: variables survive


async def test_huge_output_is_truncated_with_a_marker(open_box) -> None:
    async with open_box("alpha", max_output_chars=1000) as box:
        run = await box.execute("for i in range(200000):\n    print('line', i)")
        value = await box.execute("'y' * 5000")
    assert run.ok
    assert run.stdout.startswith("line 0\nline 1\n")
    assert "[output truncated:" in run.stdout
    assert len(run.stdout) < 1200
    assert "[output truncated: 4003 more characters" in value.stdout  # repr adds 2 quotes and a newline

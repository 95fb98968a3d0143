"""A real `haiku serve` process on a free port, for the browser and command-line tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def haiku_serve(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start `haiku serve --port 0 ARGS` (scripted model `openai-chat:test`); its URL and the process,
    whose stderr is read once the block ends (the process is stopped then)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "serve", "--model", "openai-chat:test", "--port", "0", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip() if process.stdout else ""
        if not url:
            process.wait(timeout=30)
            raise AssertionError(process.stderr.read() if process.stderr else "haiku serve printed no URL")
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=10)

"""The committed completion scripts match what the app generates now."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.cli.completions import SHELLS, completion_script

COMPLETIONS = Path(__file__).resolve().parents[2] / "completions"


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_committed_completions_are_current(shell: str) -> None:
    committed = COMPLETIONS / SHELLS[shell]
    assert committed.exists(), f"missing {committed}; run python scripts/generate_completions.py"
    assert committed.read_text(encoding="utf-8") == completion_script(shell), (
        f"{committed} is stale; run python scripts/generate_completions.py"
    )

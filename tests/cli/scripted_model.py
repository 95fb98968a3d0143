"""A fixture making every model the in-process CLI builds a scripted FunctionModel (the LLM only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from haiku_cli.agents import models
from tests.chat.streaming import StreamScript

MODEL = ("--model", "openai-chat:scripted")  # any valid model string: the script answers whatever it names


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[..., StreamScript]:
    """Call with the script's steps; `ask`, `analyze` and `chat` then talk to it (storage stays real)."""

    def use(*steps: Any) -> StreamScript:
        script = StreamScript(*steps)
        monkeypatch.setattr(models, "build_model", lambda name, base_url=None: script.model)
        return script

    return use

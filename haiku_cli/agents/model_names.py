"""Which model a command asks: the model string chosen, without loading pydantic-ai (servers ask at start)."""

from __future__ import annotations

from haiku_cli.agents.providers import check_model_string
from haiku_cli.config.settings import ModelSettings
from haiku_cli.errors import Hint, ModelError

NO_MODEL = "no language model configured: set [model] name in the config file or HAIKU_MODEL"


def model_name(settings: ModelSettings, override: str | None = None) -> str:
    """The model string: `--model`, else `HAIKU_MODEL` (folded into settings on load), else the config."""
    name = (override or settings.name or "").strip()
    if not name:
        raise ModelError(NO_MODEL, hint=Hint("choose_model"))  # the CLI adds its --model
    return name


def checked_model_name(settings: ModelSettings, override: str | None = None) -> str:
    """The model string, refused now if no question could use it (`check_model_string`)."""
    name = model_name(settings, override)
    check_model_string(name)
    return name

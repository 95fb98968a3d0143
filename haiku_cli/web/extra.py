"""Whether the packages `haiku serve` needs are installed (the `web` extra)."""

from __future__ import annotations

from haiku_cli.errors import InputError

MISSING = "haiku serve needs the web extra: pip install 'haiku-cli[web]'"


def require_web() -> None:
    """Fail with one line naming the extra when the AG-UI adapter, Starlette or uvicorn is missing."""
    try:
        import ag_ui.core  # noqa: F401
        import pydantic_ai.ui.ag_ui  # noqa: F401
        import starlette.applications  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise InputError(MISSING) from exc

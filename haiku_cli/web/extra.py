"""Whether the packages `haiku serve` needs are installed (the `web` extra)."""

from __future__ import annotations

from haiku_cli.errors import InputError

MISSING = (
    "haiku serve needs pydantic-ai's AG-UI adapter, Starlette and uvicorn: install them with "
    "pip install 'pydantic-ai-slim[ag-ui]' starlette uvicorn (or pip install '.[web]' in haiku's checkout)"
)


def require_web() -> None:
    """Fail with one line naming the extra when the AG-UI adapter, Starlette or uvicorn is missing."""
    try:
        import ag_ui.core  # noqa: F401
        import pydantic_ai.ui.ag_ui  # noqa: F401
        import starlette.applications  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise InputError(MISSING) from exc

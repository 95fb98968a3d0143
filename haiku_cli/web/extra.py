"""Whether the packages `haiku serve` needs are installed (the `web` extra)."""

from __future__ import annotations

import importlib.util
import sys

from haiku_cli.errors import InputError

MISSING = (
    "haiku serve needs pydantic-ai's AG-UI adapter, Starlette and uvicorn: install them with "
    "pip install 'pydantic-ai-slim[ag-ui]' starlette uvicorn (or pip install '.[web]' in haiku's checkout)"
)


# The AG-UI adapter's own package (pydantic-ai's adapter is part of pydantic-ai, which haiku needs anyway).
NEEDED = ("ag_ui", "starlette", "uvicorn")


def require_web() -> None:
    """Fail with one line naming the extra when the AG-UI adapter, Starlette or uvicorn is missing.

    Looked up, not imported: the adapter loads with the first question, not before the page is served.
    """
    if not all(_installed(name) for name in NEEDED):
        raise InputError(MISSING)


def _installed(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None  # None: an import of it already failed
    return importlib.util.find_spec(name) is not None

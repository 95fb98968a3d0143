"""Turn whatever an embedding model raises into a one-line ModelError."""

from __future__ import annotations

import re

from haiku_cli.errors import HaikuError, ModelError


def _one_line(text: object, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def to_model_error(exc: BaseException, name: str, base_url: str | None = None) -> HaikuError:
    """Describe `exc` from embedding model `name` in one line a user can act on."""
    if isinstance(exc, HaikuError):
        return exc
    from pydantic_ai.exceptions import (
        ModelAPIError,
        ModelAuthenticationError,
        ModelConnectionError,
        ModelHTTPError,
        ModelNotFoundError,
        ModelTimeoutError,
        UserError,
    )

    where = f" at {base_url}" if base_url else ""
    if isinstance(exc, ModelTimeoutError):
        return ModelError(f"embedding model {name}{where} timed out")
    if isinstance(exc, ModelConnectionError):
        return ModelError(f"cannot reach embedding model {name}{where}: {_one_line(exc.message)}")
    if isinstance(exc, ModelAuthenticationError):
        return ModelError(f"embedding model {name}{where} rejected the API key; check its environment")
    if isinstance(exc, ModelNotFoundError):
        return ModelError(f"embedding model {name} is not available{where}; check the model name")
    if isinstance(exc, ModelHTTPError):
        detail = _one_line(exc.body)
        return ModelError(f"embedding model {name}{where} failed: HTTP {exc.status_code}: {detail}")
    var = re.search(r"`([A-Z][A-Z0-9_]+)` environment variable", str(exc))
    if isinstance(exc, UserError) and var:
        # pydantic-ai's missing-configuration messages name the variable, then add developer hints.
        return ModelError(f"embedding model {name} needs the {var.group(1)} environment variable set")
    if isinstance(exc, ModelAPIError | UserError):
        return ModelError(f"embedding model {name}: {_one_line(exc.message)}")
    return ModelError(f"embedding model {name} failed: {type(exc).__name__}: {_one_line(exc)}")

"""Turn whatever an embedding model raises into a one-line ModelError."""

from __future__ import annotations

from haiku_cli.errors import HaikuError, ModelError
from haiku_cli.model_failures import describe_model_failure, first_sentence


def to_model_error(exc: BaseException, name: str, base_url: str | None = None) -> HaikuError:
    """Describe `exc` from embedding model `name` in one line a user can act on."""
    described = describe_model_failure(exc, name, base_url, kind="embedding model")
    if described is not None:
        return described
    # Anything an embedding call raises is the model's failure (an onnxruntime error, a bad response).
    return ModelError(f"embedding model '{name}' failed: {type(exc).__name__}: {first_sentence(exc)}")

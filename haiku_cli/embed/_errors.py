"""Turn whatever an embedding model raises into a one-line ModelError."""

from __future__ import annotations

import sys

from haiku_cli.embed.openai_compatible import ServerRejected, ServerUnreachable, UndecodableResponse
from haiku_cli.errors import HaikuError, ModelError
from haiku_cli.model_failures import Kind, describe_model_failure, first_sentence, rejection, timed_out

KIND: Kind = "embedding model"


def to_model_error(exc: BaseException, name: str, base_url: str | None = None) -> HaikuError:
    """Describe `exc` from embedding model `name` in one line a user can act on."""
    described = _describe_http_failure(exc, name, base_url)
    # Only pydantic-ai can have raised its own exceptions: without it loaded, skip its (slow) import.
    if described is None and "pydantic_ai" in sys.modules:
        described = describe_model_failure(exc, name, base_url, kind=KIND)
    if described is not None:
        return described
    # Anything an embedding call raises is the model's failure (an onnxruntime error, a bad response).
    return ModelError(f"{KIND} '{name}' failed: {type(exc).__name__}: {first_sentence(exc)}")


def _describe_http_failure(exc: BaseException, label: str, base_url: str | None) -> HaikuError | None:
    """The same lines `describe_model_failure` gives for pydantic-ai's errors, for our own HTTP client's."""
    if isinstance(exc, HaikuError):
        return exc
    where = f" at {base_url}" if base_url else ""
    if isinstance(exc, ServerUnreachable) and exc.timeout:
        return ModelError(timed_out(KIND, label, where, exc.seconds))
    if isinstance(exc, ServerUnreachable):
        return ModelError(f"cannot reach the {KIND} server{where} for '{label}': {first_sentence(exc)}")
    if isinstance(exc, UndecodableResponse):
        return ModelError(f"{KIND} '{label}' failed: {first_sentence(exc)}")
    if not isinstance(exc, ServerRejected):
        return None
    status = exc.status_code
    credentials = status in (401, 403) or exc.code == "invalid_api_key"
    unknown = status == 404 or exc.code == "model_not_found"
    line = rejection(KIND, label, status, credentials=credentials, unknown_model=unknown, detail=exc)
    return ModelError(line)

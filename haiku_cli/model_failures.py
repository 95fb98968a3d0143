"""The one translator of model-library failures (pydantic-ai and the provider SDKs under it) into one line.

Language models and embedding models fail the same ways (no key, server down, rejected, unknown model), so
both are described by the same rules; only the noun differs.
"""

from __future__ import annotations

import re
from typing import Literal

from haiku_cli.errors import HaikuError, ModelError, exception_reason

Kind = Literal["model", "embedding model"]


# The setting and variable that bound each request, named when a request runs out of time.
_TIMEOUT_SETTING = {
    "model": "[model] timeout_seconds (HAIKU_MODEL_TIMEOUT)",
    "embedding model": "[embedder] timeout_seconds (HAIKU_EMBEDDER_TIMEOUT)",
}


def describe_model_failure(
    exc: BaseException,
    label: str,
    base_url: str | None = None,
    *,
    kind: Kind = "model",
    timeout_seconds: float | None = None,
) -> HaikuError | None:
    """A one-line `ModelError` for a failure of model `label`, or None if `exc` is not a model failure.

    `timeout_seconds`, when known, is the limit a timed-out request is reported against.

    None leaves other exceptions (bugs in haiku itself) to surface as internal errors, not as the model's.
    """
    if isinstance(exc, HaikuError):
        return exc
    from pydantic_ai.exceptions import (
        ModelAPIError,
        ModelAuthenticationError,
        ModelConnectionError,
        ModelHTTPError,
        ModelNotFoundError,
        ModelRequestTimeout,
        ModelTimeoutError,
        UnexpectedModelBehavior,
        UsageLimitExceeded,
        UserError,
    )

    where = f" at {base_url}" if base_url else ""
    if isinstance(exc, UserError | ImportError):
        return ModelError(f"cannot use {kind} '{label}': {_configuration_hint(exc)}")
    if isinstance(exc, ModelTimeoutError | ModelRequestTimeout):
        return ModelError(timed_out(kind, label, where, timeout_seconds))
    if isinstance(exc, ModelConnectionError):
        return ModelError(f"cannot reach the {kind} server{where} for '{label}': {first_sentence(exc)}")
    if isinstance(exc, ModelAuthenticationError | ModelNotFoundError | ModelHTTPError):
        return ModelError(_rejected(exc, label, kind))
    # Before ModelAPIError: a response the model layer could not use is both (pydantic-ai 2.7x on), and
    # it is the answer that failed, not the request.
    if isinstance(exc, UnexpectedModelBehavior | UsageLimitExceeded):
        return ModelError(f"{kind} '{label}' did not produce a usable answer: {first_sentence(exc)}")
    if isinstance(exc, ModelAPIError):
        return ModelError(f"{kind} '{label}' failed: {first_sentence(exc)}")
    return None


def timed_out(kind: Kind, label: str, where: str, seconds: float | None) -> str:
    """How a request that ran out of time reads: the limit it had, and the setting that raises it."""
    within = f" within {seconds:g} s" if seconds is not None else " in time"
    return (
        f"the {kind} server{where} did not answer{within} for '{label}'; "
        f"check the server, or raise {_TIMEOUT_SETTING[kind]}"
    )


def _rejected(exc: Exception, label: str, kind: Kind) -> str:
    from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError, ModelNotFoundError

    status = exc.status_code if isinstance(exc, ModelHTTPError) else None
    # Servers categorise inconsistently: trust the class when pydantic-ai set one, else the status.
    credentials = isinstance(exc, ModelAuthenticationError) or status in (401, 403)
    unknown = isinstance(exc, ModelNotFoundError) or status == 404
    return rejection(kind, label, status, credentials=credentials, unknown_model=unknown, detail=exc)


def rejection(
    kind: str, label: str, status: int | None, *, credentials: bool, unknown_model: bool, detail: Exception
) -> str:
    """How a model server's refusal reads: its credentials refused, the model unknown, or its own words."""
    code = f" (HTTP {status})" if status is not None else ""
    if credentials:
        return f"the {kind} server rejected the credentials for '{label}'{code}; check the API key variable"
    if unknown_model:
        return f"the {kind} server does not know {kind} '{label}'{code}"
    return f"the {kind} server answered{code or ' with an error'} for '{label}': {first_sentence(detail)}"


def _configuration_hint(exc: BaseException) -> str:
    # "Set the `X` environment variable or pass it via `SomeProvider(...)`" speaks to programmers;
    # a CLI user can only set the variable.
    missing = re.search(r"`([A-Z][A-Z0-9_]*)` environment variable", str(exc))
    if missing:
        variable = missing.group(1)
        # A local OpenAI-compatible server (llama.cpp, vLLM, Ollama) needs its address, not a key.
        also = _INSTEAD.get(variable, "")
        return f"set the {variable} environment variable{also}"
    return first_sentence(exc)


def install_hint(exc: ImportError) -> str:
    """The `pip install "..."` a provider's missing package is installed with, as its message names it
    (the whole message when it names none)."""
    named = re.search(r'pip install "[^"]+"', str(exc))
    return named.group(0) if named else str(exc)


_INSTEAD = {
    "OPENAI_API_KEY": " (or, for an OpenAI-compatible server that needs no key, OPENAI_BASE_URL or "
    "[model] base_url)"
}


def first_sentence(exc: BaseException) -> str:
    """The first sentence of a model library's error message on one line: provider messages run on."""
    return exception_reason(exc, upto="sentence", limit=300)

"""Choosing and building the language model, and turning its failures into one clear line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelNotFoundError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.providers import Provider, infer_provider_class
from pydantic_ai.settings import ModelSettings as RequestSettings

from haiku_cli.config.settings import ModelSettings
from haiku_cli.errors import HaikuError, ModelError

NO_MODEL = "no language model configured; pass --model or set [model] name / HAIKU_MODEL"

# One SDK retry rides out a blip; more would make a dead server look like a hang.
REQUEST_SETTINGS: RequestSettings = {"max_retries": 1}


def model_name(settings: ModelSettings, override: str | None = None) -> str:
    """The model string: `--model`, else `HAIKU_MODEL` (folded into settings on load), else the config."""
    name = (override or settings.name or "").strip()
    if not name:
        raise ModelError(NO_MODEL)
    return name


def build_model(name: str, base_url: str | None = None) -> Model:
    """A pydantic-ai model for any model string; `base_url` (from `[model]`) points its provider elsewhere.

    API keys are never passed here: providers read them from the environment.
    """
    with model_errors(name):
        if base_url is None:
            return infer_model(name)
        return infer_model(name, provider_factory=lambda provider: _provider_at(provider, base_url))


def resolve_model(settings: ModelSettings, model: str | Model | None = None) -> Model:
    """The model to answer with: a ready `Model` as given, else built from the chosen model string."""
    if isinstance(model, Model):
        return model
    name = model_name(settings, model)
    # `[model] base_url` belongs to the configured provider; a `--model` of another provider ignores it.
    configured = (settings.name or name).partition(":")[0]
    base_url = settings.base_url if name.partition(":")[0] == configured else None
    return build_model(name, base_url)


def _provider_at(provider: str, base_url: str) -> Provider:
    try:
        cls = infer_provider_class(provider)
    except ValueError as exc:
        raise ModelError(f"unknown model provider '{provider}'") from exc
    try:
        return cls(base_url=base_url)  # type: ignore[call-arg]
    except TypeError as exc:
        raise ModelError(
            f"the '{provider}' provider does not take a base URL; remove [model] base_url"
        ) from exc


@contextmanager
def model_errors(label: str, base_url: str | None = None) -> Iterator[None]:
    """Map configuration, connection, authentication and HTTP failures to one-line `ModelError`s."""
    try:
        yield
    except HaikuError:
        raise
    except (UserError, ImportError) as exc:
        raise ModelError(f"cannot use model '{label}': {_configuration_hint(exc)}") from exc
    except ModelConnectionError as exc:
        where = f" at {base_url}" if base_url else ""
        raise ModelError(
            f"cannot reach the model server{where} for '{label}': {_first_sentence(exc)}"
        ) from exc
    except (ModelAuthenticationError, ModelNotFoundError, ModelHTTPError) as exc:
        raise ModelError(_rejected(exc, label)) from exc
    except ModelAPIError as exc:
        raise ModelError(f"model '{label}' failed: {_first_sentence(exc)}") from exc
    except (UnexpectedModelBehavior, UsageLimitExceeded) as exc:
        raise ModelError(f"model '{label}' did not produce a usable answer: {_first_sentence(exc)}") from exc


def _rejected(exc: ModelAPIError, label: str) -> str:
    status = exc.status_code if isinstance(exc, ModelHTTPError) else None
    code = f" (HTTP {status})" if status is not None else ""
    # Servers categorise inconsistently: trust the class when pydantic-ai set one, else the status.
    if isinstance(exc, ModelAuthenticationError) or status in (401, 403):
        return f"the model server rejected the credentials for '{label}'{code}; check the API key variable"
    if isinstance(exc, ModelNotFoundError) or status == 404:
        return f"the model server does not know model '{label}'{code}"
    return f"the model server answered{code or ' with an error'} for '{label}': {_first_sentence(exc)}"


def _configuration_hint(exc: BaseException) -> str:
    # "Set the `X` environment variable or pass it via `SomeProvider(...)`" speaks to programmers;
    # a CLI user can only set the variable.
    missing = re.search(r"Set the `([A-Z][A-Z0-9_]*)` environment variable", str(exc))
    if missing:
        return f"set the {missing.group(1)} environment variable"
    return _first_sentence(exc)


def _first_sentence(exc: BaseException) -> str:
    # Provider messages run to several sentences and links; the user needs the first one.
    text = " ".join(str(exc).split()) or type(exc).__name__
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence[:300]

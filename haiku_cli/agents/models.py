"""Choosing and building the language model, and turning its failures into one clear line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model, ModelRequestContext, infer_model
from pydantic_ai.providers import Provider, infer_provider_class
from pydantic_ai.settings import ModelSettings as RequestSettings

from haiku_cli.agents.model_names import model_name
from haiku_cli.agents.providers import refuse_unknown_model
from haiku_cli.config.settings import ModelSettings
from haiku_cli.errors import ModelError
from haiku_cli.model_failures import describe_model_failure


def request_settings(settings: ModelSettings) -> RequestSettings:
    """Per-request settings: one SDK retry rides out a blip (more would make a dead server look like a
    hang), and each attempt, and a stream's wait for its first output, gets `[model] timeout_seconds`."""
    seconds = settings.timeout_seconds
    return {"max_retries": 1, "timeout": seconds, "first_event_timeout": seconds}


def whole_request(settings: ModelSettings) -> RequestSettings:
    """For runs that do not stream: each request, retries and reading included, within the timeout too.

    A server sending a byte now and then never lets a per-read timeout run out. (A streamed answer is
    not bounded as a whole: a long answer may take longer than any wait for its next part.)
    """
    return {"request_timeout": settings.timeout_seconds}


def build_model(name: str, base_url: str | None = None) -> Model:
    """A pydantic-ai model for any model string; `base_url` (from `[model]`) points its provider elsewhere.

    API keys are never passed here: providers read them from the environment.
    """
    refuse_unknown_model(name, checks_provider=base_url is None)
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
def model_errors(
    label: str, base_url: str | None = None, timeout_seconds: float | None = None
) -> Iterator[None]:
    """Turn a language model's configuration, connection, authentication and HTTP failures into one line.

    `timeout_seconds` is the configured limit a timed-out request is reported against.
    """
    try:
        yield
    except Exception as exc:
        described = describe_model_failure(exc, label, base_url, timeout_seconds=timeout_seconds)
        if described is None or described is exc:
            raise
        raise described from exc


# What a model class raises when it indexes into a response that lacks what every answer has (an empty
# `choices` list, a missing field): the server's answer was unusable, not haiku broken.
_MALFORMED = (IndexError, KeyError, TypeError, AttributeError)


class UnreadableResponses(AbstractCapability[object]):
    """A response the model class could not read is the model's failure (exit 4), not an internal error."""

    async def on_model_request_error(
        self, ctx: RunContext[object], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """Re-raise a malformed-response error as pydantic-ai's own "unexpected model behaviour"."""
        if isinstance(error, _MALFORMED):
            what = f"its response could not be read ({type(error).__name__}: {error})"
            raise UnexpectedModelBehavior(what) from error
        raise error

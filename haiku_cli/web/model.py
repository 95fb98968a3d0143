"""The model `haiku serve` answers with, or the reason it cannot answer yet; built for the first question.

A model string naming a known provider whose provider cannot be built (its API key not set, most often)
does not stop the server: the page is served, and the first question gets the reason as one line.
A model string that names no known provider, or one whose package is missing, was refused at start
(`checked_model_name`, without loading pydantic-ai), as every other command refuses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model

from haiku_cli.agents.model_names import model_name
from haiku_cli.agents.models import resolve_model
from haiku_cli.errors import ModelError

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings as RequestSettings

    from haiku_cli.config.settings import ModelSettings


class UnavailableModel(Model):
    """A model that cannot answer: every request raises the error that building it raised."""

    def __init__(self, name: str, error: ModelError) -> None:
        super().__init__()
        self._name = name
        self.error = error

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def system(self) -> str:
        return self._name.partition(":")[0]

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: RequestSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        raise self.error

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        raise self.error
        yield  # an async generator, as the base class's is


def serving_model(settings: ModelSettings, model: str | Model | None) -> Model:
    """The model to answer with, or an `UnavailableModel` when only its provider's setup is missing.

    The model string was checked at start (`checked_model_name`): what fails to build now is its setup.
    """
    if isinstance(model, Model):
        return model
    name = model_name(settings, model)
    try:
        return resolve_model(settings, model)
    except ModelError as exc:
        return UnavailableModel(name, exc)

"""`load_embedder`: turn a model string from the config or command line into an `Embedder`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, get_args
from urllib.parse import urlsplit

from haiku_cli.embed import _bundle
from haiku_cli.embed._errors import to_model_error
from haiku_cli.embed.embedder import PROBE_TEXT, BundledEmbedder, Embedder
from haiku_cli.embed.openai_compatible import (
    DEFAULT_TIMEOUT,
    NO_KEY,
    OPENAI_DEFAULT_URL,
    OpenAICompatibleEmbeddingModel,
    openai_headers,
)
from haiku_cli.errors import HaikuError, ModelError
from haiku_cli.model_failures import install_hint

if TYPE_CHECKING:
    from pydantic_ai.embeddings import EmbeddingModel
    from pydantic_ai.providers import Provider

    # A model and what owns its connections (closed after the dimension probe).
    Built = tuple[EmbeddingModel | OpenAICompatibleEmbeddingModel, AbstractAsyncContextManager[Any]]

OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"
# Spoken by our own small client (openai_compatible.py): no pydantic-ai or openai import on the search path.
OPENAI_COMPATIBLE = ("ollama", "openai")
OPENAI_MAX_TOKENS = 8192  # OpenAI's documented input limit for its text-embedding-3 models
EXAMPLES = f"{_bundle.DEFAULT_EMBEDDER_NAME}, ollama:nomic-embed-text or openai:text-embedding-3-small"


def load_embedder(
    model: str | None = None, *, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> Embedder:
    """Build the embedder named `model` ("provider:model"); None means haiku's bundled model.

    `base_url` points an OpenAI-compatible provider (ollama, openai, ...) at a server; without it
    OLLAMA_BASE_URL / OPENAI_BASE_URL are used. It is ignored for the bundled model, as is `timeout`
    (seconds each request to an ollama or openai server may take). Bad names,
    missing keys or packages raise ModelError here; nothing is loaded or contacted until first use.
    """
    spec = (model or _bundle.DEFAULT_EMBEDDER_NAME).strip()
    provider, sep, model_name = spec.partition(":")
    if not (sep and provider and model_name):
        raise ModelError(f"embedding model {spec!r} must look like provider:model, e.g. {EXAMPLES}")
    if provider == "haiku":
        return _load_bundled(spec)
    if provider not in OPENAI_COMPATIBLE and not _offers_embeddings(provider):
        raise ModelError(f"{provider!r} is not a known embedding provider (in {spec!r}); try {EXAMPLES}")

    def build() -> Built:
        if provider in OPENAI_COMPATIBLE:
            client = _build_openai_compatible(spec, provider, model_name, base_url, timeout)
            return client, client
        return _build_remote(spec, provider, base_url)

    remote, _ = build()

    async def probe() -> int:
        # A model of its own, so the probe's connections (on a private loop) are closed afterwards.
        probe_model, owner = build()
        async with owner:
            result = await probe_model.embed([PROBE_TEXT], input_type="document")
        return len(result.embeddings[0])

    custom_url = base_url or os.environ.get("OPENAI_BASE_URL")
    max_tokens = OPENAI_MAX_TOKENS if provider == "openai" and not custom_url else None
    # Our own client bounds each request itself; a pydantic-ai model is bounded around each call.
    bound = None if provider in OPENAI_COMPATIBLE else timeout
    return Embedder(remote, name=spec, max_tokens=max_tokens, dimension_probe=probe, timeout=bound)


def _load_bundled(spec: str) -> Embedder:
    if spec != _bundle.DEFAULT_EMBEDDER_NAME:
        ours = _bundle.DEFAULT_EMBEDDER_NAME
        raise ModelError(f"unknown bundled embedding model {spec!r}; the bundled one is {ours}")
    return BundledEmbedder()


def _build_remote(spec: str, provider: str, base_url: str | None) -> Built:
    """Create a pydantic-ai embedding model and the provider it owns, mapping failures to ModelError."""
    try:
        model, owner = _build_inferred(spec, base_url)
        return model, owner or contextlib.nullcontext()
    except HaikuError:
        raise
    except ImportError as exc:
        how = install_hint(exc)
        raise ModelError(f"embedding provider {provider!r} needs an extra package: {how}") from exc
    except Exception as exc:
        raise to_model_error(exc, spec) from exc


def _offers_embeddings(provider: str) -> bool:
    """Whether pydantic-ai has embedding models for `provider` (checked up front for a clear error)."""
    try:
        from pydantic_ai.embeddings import OpenAIEmbeddingsCompatibleProvider as Compatible

        compatible = {n for alias in get_args(Compatible) for n in get_args(alias.__value__)}
    except Exception:  # pydantic-ai moved this internal list: let infer_embedding_model decide
        return True
    native = {"openai", "cohere", "bedrock", "google", "google-cloud", "sentence-transformers", "voyageai"}
    return provider.removeprefix("gateway/") in compatible | native


def _build_openai_compatible(
    spec: str, provider: str, model_name: str, base_url: str | None, timeout: float
) -> OpenAICompatibleEmbeddingModel:
    """Our own client, configured from the same settings and variables pydantic-ai's providers read."""
    if provider == "ollama":
        url = _with_v1(base_url or os.environ.get("OLLAMA_BASE_URL") or OLLAMA_DEFAULT_URL)
        key = os.environ.get("OLLAMA_API_KEY") or NO_KEY
    else:
        custom_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = os.environ.get("OPENAI_API_KEY") or ""
        if not key and not custom_url:  # OpenAI itself needs a key; a local server usually does not
            hint = "set the OPENAI_API_KEY environment variable"
            raise ModelError(f"cannot use embedding model '{spec}': {hint}")
        url, key = custom_url or OPENAI_DEFAULT_URL, key or NO_KEY
    return OpenAICompatibleEmbeddingModel(provider, model_name, url, key, openai_headers(), timeout=timeout)


def _build_inferred(spec: str, base_url: str | None) -> tuple[EmbeddingModel, Provider[Any] | None]:
    from pydantic_ai.embeddings import infer_embedding_model
    from pydantic_ai.providers import infer_provider_class

    made: list[Provider[Any]] = []

    def provider_factory(name: str) -> Provider[Any]:
        # Provider classes differ in what they take; those base_url is given for take one.
        make: Callable[..., Provider[Any]] = infer_provider_class(name)
        made.append(make(base_url=base_url) if base_url else make())
        return made[-1]

    # A provider without embedding models was refused before this (`_offers_embeddings`); any UserError
    # left (a missing key, say) is described by `to_model_error` like every other failure.
    model = infer_embedding_model(spec, provider_factory=provider_factory)
    return model, (made[-1] if made else None)


def _with_v1(url: str) -> str:
    """Ollama's OpenAI-compatible API lives under /v1; accept the bare server address too."""
    return url.rstrip("/") + "/v1" if urlsplit(url).path in ("", "/") else url

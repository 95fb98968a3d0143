"""`Embedder`: the one embedding interface the rest of haiku uses, over any pydantic-ai model.

`ollama:` and `openai:` models are our own OpenAI-compatible client, with the same `embed` and `base_url`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

from haiku_cli.embed import _bundle
from haiku_cli.embed._errors import to_model_error
from haiku_cli.embed.openai_compatible import ServerUnreachable
from haiku_cli.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    from pydantic_ai.embeddings import EmbeddingModel

    from haiku_cli.embed.openai_compatible import OpenAICompatibleEmbeddingModel

    RemoteModel = EmbeddingModel | OpenAICompatibleEmbeddingModel

DEFAULT_REMOTE_MAX_TOKENS = 512  # a limit most embedding servers accept when the model does not say
PROBE_TEXT = "dimension probe"


class Embedder:
    """Embeds documents and queries into float32, L2-normalised numpy vectors, with clear errors.

    `name` is the stable identity stored in databases; vectors from embedders with different
    names must never be mixed.
    """

    def __init__(
        self,
        model: RemoteModel,
        *,
        name: str | None = None,
        dimension: int | None = None,
        max_tokens: int | None = None,
        batch_size: int = 32,
        dimension_probe: Callable[[], Awaitable[int]] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Wrap `model`; `dimension` may be left unknown and is then probed once when first needed.

        `dimension_probe` is used when the dimension is asked for synchronously; it runs on a private
        event loop, so it should build its own client rather than reuse `model`'s connections.
        `timeout` bounds each call of the model (its own retries included), for models that do not
        bound their requests themselves.
        """
        self._timeout = timeout
        self._model = model
        self._name = name or f"{model.system}:{model.model_name}"
        self._dimension = dimension
        self._max_tokens = max_tokens or DEFAULT_REMOTE_MAX_TOKENS
        self._batch_size = batch_size
        self._dimension_probe = dimension_probe

    def __repr__(self) -> str:
        return f"Embedder(name={self._name!r})"

    @property
    def model(self) -> RemoteModel:
        """The wrapped embedding model (pydantic-ai's, or our OpenAI-compatible client)."""
        return self._model

    @property
    def name(self) -> str:
        """Stable identity of the model, e.g. "haiku:all-minilm-l6-v2" or "ollama:nomic-embed-text"."""
        return self._name

    @property
    def max_tokens(self) -> int:
        """Inputs longer than this many tokens are truncated (or rejected) by the model."""
        return self._max_tokens

    @property
    def dimension(self) -> int:
        """Vector length; for a remote model the first access embeds a probe string (blocking)."""
        if self._dimension is None:
            self._dimension = _run_blocking(self._probe_with(self._dimension_probe or self._probe))
        return self._dimension

    async def resolve_dimension(self) -> int:
        """Async form of `dimension`: probes on the running event loop with the wrapped model."""
        if self._dimension is None:
            self._dimension = await self._probe_with(self._probe)()
        return self._dimension

    def count_tokens(self, text: str) -> int:
        """Count tokens with the bundled tokenizer (exact for ours, an approximation for remote models)."""
        return _bundle.count_tokens(text)

    async def embed_documents(
        self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Embed `texts` in batches into a float32 array [n, dim] in input order.

        `on_progress` is called after each batch with the number of texts it embedded. An empty
        input gives shape (0, dim), or (0, 0) while a remote model's dimension is still unknown.
        """
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        # Similar lengths per batch means less padding locally and evenly sized remote requests.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            vectors = await self._embed([texts[i] for i in idx], "document")
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
            if on_progress is not None:
                on_progress(len(idx))
        assert out is not None
        return out

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query into a float32 vector [dim]."""
        return (await self._embed([text], "query"))[0]

    async def _embed(self, texts: list[str], input_type: Literal["query", "document"]) -> np.ndarray:
        import anyio
        import numpy as np

        try:
            with anyio.fail_after(self._timeout):  # None: no limit of its own
                result = await self._model.embed(texts, input_type=input_type)
        except TimeoutError as exc:
            stalled = ServerUnreachable(timeout=True, seconds=self._timeout or 0)
            raise to_model_error(stalled, self._name, self._model.base_url) from exc
        except Exception as exc:
            raise to_model_error(exc, self._name, self._model.base_url) from exc
        vectors = np.asarray(result.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            got = f"returned an array of shape {vectors.shape} for {len(texts)} texts"
            raise ModelError(f"embedding model {self._name} {got}")
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            # NaN would be stored and then match nothing: a search would come back empty with no error.
            bad = f"{int((~finite).sum())} of {len(texts)}"
            raise ModelError(
                f"embedding model '{self._name}' returned vectors with NaN or infinite values ({bad} texts); "
                "check the embedding server"
            )
        if self._dimension is None:
            self._dimension = vectors.shape[1]
        elif vectors.shape[1] != self._dimension:
            got = f"returned {vectors.shape[1]}-d vectors, expected {self._dimension}"
            raise ModelError(f"embedding model {self._name} {got}")
        # Normalised vectors make dot product equal cosine for every model, local or remote.
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    async def _probe(self) -> int:
        return (await self._embed([PROBE_TEXT], "document")).shape[1]

    def _probe_with(self, probe: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            try:
                return await probe()
            except Exception as exc:
                raise to_model_error(exc, self._name, self._model.base_url) from exc

        return run


def _run_blocking(make: Callable[[], Awaitable[int]]) -> int:
    """Run an async call to completion from sync code, even if this thread has a running loop."""

    async def main() -> int:
        return await make()

    # A fresh thread owns a fresh loop, so this works inside and outside of async code alike.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(main())).result()


class BundledEmbedder(Embedder):
    """The bundled all-MiniLM-L6-v2 run straight on onnxruntime.

    Search pays for no pydantic-ai import (about half a second); `model` still hands hosts the same
    model behind pydantic-ai's `EmbeddingModel` interface.
    """

    def __init__(self, threads: int | None = None) -> None:
        """Nothing is loaded until the first embedding; `threads`: onnxruntime's (default: every CPU)."""
        from haiku_cli.embed.onnx_runtime import cpu_count

        self._threads = threads or cpu_count()
        self._local: EmbeddingModel | None = None
        super().__init__(
            None,  # type: ignore[arg-type]  # built on demand by `model`
            name=_bundle.DEFAULT_EMBEDDER_NAME,
            dimension=_bundle.BUNDLED_DIMENSION,
            max_tokens=_bundle.BUNDLED_MAX_TOKENS,
        )

    @property
    def model(self) -> EmbeddingModel:
        """The bundled model as a pydantic-ai `EmbeddingModel` (same session, same vectors)."""
        if self._local is None:
            from haiku_cli.embed.onnx_model import LocalOnnxEmbeddingModel

            self._local = LocalOnnxEmbeddingModel(threads=self._threads)
        return self._local

    async def _embed(self, texts: list[str], input_type: Literal["query", "document"]) -> np.ndarray:
        import anyio.to_thread

        from haiku_cli.embed.onnx_runtime import (
            DEFAULT_BATCH_SIZE,
            DEFAULT_BATCH_TOKENS,
            encode_sorted,
            load_runtime,
        )

        runtime = await anyio.to_thread.run_sync(load_runtime, self._threads)
        vectors, _ = await anyio.to_thread.run_sync(
            encode_sorted, runtime, texts, DEFAULT_BATCH_SIZE, DEFAULT_BATCH_TOKENS
        )
        return vectors

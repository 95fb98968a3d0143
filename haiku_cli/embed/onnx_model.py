"""The bundled all-MiniLM-L6-v2 as a pydantic-ai embedding model, for hosts composing their own agents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.exceptions import UserError
from pydantic_ai.usage import RequestUsage

from haiku_cli.embed import _bundle
from haiku_cli.embed.onnx_runtime import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_TOKENS,
    cpu_count,
    encode_sorted,
    load_runtime,
)


class LocalOnnxEmbeddingModel(EmbeddingModel):
    """all-MiniLM-L6-v2 shipped inside haiku: 384-d normalised vectors, 256-token inputs, offline."""

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int | None = None,
        settings: EmbeddingSettings | None = None,
    ) -> None:
        """Configure the model; files are loaded on first use, not here."""
        super().__init__(settings=settings)
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._threads = threads or cpu_count()

    @property
    def model_name(self) -> str:
        """The bundled model's identifier."""
        return _bundle.BUNDLED_MODEL_ID

    @property
    def system(self) -> str:
        """The provider name: haiku itself."""
        return "haiku"

    @property
    def dimension(self) -> int:
        """Length of every vector this model returns."""
        return _bundle.BUNDLED_DIMENSION

    def load(self) -> None:
        """Load the ONNX session and tokenizer now instead of on the first embed call."""
        load_runtime(self._threads)

    async def embed(
        self,
        inputs: str | Sequence[str],
        *,
        input_type: EmbedInputType,
        settings: EmbeddingSettings | None = None,
    ) -> EmbeddingResult:
        """Embed on a worker thread so the event loop stays responsive; queries and documents are alike."""
        import anyio.to_thread

        texts, merged = self.prepare_embed(inputs, settings)
        dims = merged.get("dimensions")
        if dims is not None and dims != _bundle.BUNDLED_DIMENSION:
            raise UserError(f"{self.model_name} gives {_bundle.BUNDLED_DIMENSION}-d vectors, not {dims}")
        tokens = 0
        vectors: list[Any] = []
        if texts:
            runtime = await anyio.to_thread.run_sync(load_runtime, self._threads)
            array, tokens = await anyio.to_thread.run_sync(
                encode_sorted, runtime, texts, self._batch_size, self._batch_tokens
            )
            vectors = array.tolist()
        return EmbeddingResult(
            embeddings=vectors,
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
            usage=RequestUsage(input_tokens=tokens),
        )

    async def max_input_tokens(self) -> int | None:
        """Longer inputs are truncated to this many tokens."""
        return _bundle.BUNDLED_MAX_TOKENS

    async def count_tokens(self, text: str) -> int:
        """Tokens in `text` before truncation, [CLS] and [SEP] included."""
        return _bundle.count_tokens(text)

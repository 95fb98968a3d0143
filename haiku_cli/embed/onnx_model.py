"""The bundled all-MiniLM-L6-v2 (int8 ONNX) as a pydantic-ai embedding model, run on the CPU."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.exceptions import UserError
from pydantic_ai.usage import RequestUsage

from haiku_cli.embed import _bundle
from haiku_cli.errors import ModelError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

DEFAULT_BATCH_SIZE = 32
# Padded tokens per onnxruntime call. Measured on CISI: paragraphs (~200 tokens) run ~30% faster
# per CPU-second in batches of 1-2 than of 32 (activations stay in cache), while short titles
# still get batches of ~30. Smaller batches also make int8 results depend less on batch mates.
DEFAULT_BATCH_TOKENS = 512


def _cpu_count() -> int:
    # The affinity mask respects container/taskset limits that os.cpu_count() ignores.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class _Runtime:
    session: onnxruntime.InferenceSession
    tokenizer: Tokenizer
    input_names: frozenset[str]


_runtime_lock = threading.Lock()
_runtimes: dict[int, _Runtime] = {}  # keyed by thread count; model instances share a session


def _load_runtime(threads: int) -> _Runtime:
    """Create (once per process) the onnxruntime session and tokenizer for the bundled model."""
    with _runtime_lock:
        if threads in _runtimes:
            return _runtimes[threads]
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle workers sleep instead of spinning: haiku converts and writes on other threads while it
        # embeds, and on a busy 2-CPU machine spinning halved throughput in measurements.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(
                str(_bundle.bundled_file("model.onnx")), options, providers=["CPUExecutionProvider"]
            )
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"cannot load the bundled embedder model: {exc}") from exc
        runtime = _Runtime(
            session=session,
            tokenizer=_bundle.load_tokenizer(truncate=True),
            input_names=frozenset(i.name for i in session.get_inputs()),
        )
        _runtimes[threads] = runtime
        return runtime


def _batches(lengths: Sequence[int], max_items: int, max_tokens: int) -> list[list[int]]:
    """Group indices, shortest first, into batches under both an item and a padded-token budget."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # Sorted ascending, so the newest item sets the padded width of the whole batch.
        if current and (len(current) >= max_items or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _encode_sorted(
    runtime: _Runtime, texts: Sequence[str], max_items: int, max_tokens: int
) -> tuple[np.ndarray, int]:
    """Embed `texts` in length-sorted batches (little padding); return vectors in input order, token total."""
    encodings = runtime.tokenizer.encode_batch(list(texts))
    lengths = [len(e.ids) for e in encodings]
    out = np.empty((len(texts), _bundle.BUNDLED_DIMENSION), dtype=np.float32)
    for idx in _batches(lengths, max_items, max_tokens):
        width = max(lengths[i] for i in idx)
        ids = np.zeros((len(idx), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            ids[row, : lengths[i]] = encodings[i].ids
            mask[row, : lengths[i]] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = {k: v for k, v in feed.items() if k in runtime.input_names}
        hidden = runtime.session.run(None, feed)[0]
        out[idx] = _mean_pool_normalise(hidden, mask)
    return out, sum(lengths)


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average token vectors over real (unpadded) tokens, then scale each row to unit length."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, 1e-12)


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
        self._threads = threads or _cpu_count()

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
        _load_runtime(self._threads)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed synchronously (blocking) into a float32 array [len(texts), 384] in input order."""
        if not texts:
            return np.empty((0, _bundle.BUNDLED_DIMENSION), dtype=np.float32)
        return _encode_sorted(_load_runtime(self._threads), texts, self._batch_size, self._batch_tokens)[0]

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
            runtime = await anyio.to_thread.run_sync(_load_runtime, self._threads)
            array, tokens = await anyio.to_thread.run_sync(
                _encode_sorted, runtime, texts, self._batch_size, self._batch_tokens
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

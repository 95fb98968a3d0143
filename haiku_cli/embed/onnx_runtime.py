"""The bundled all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime: no pydantic-ai, so search starts fast."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from haiku_cli.embed import _bundle
from haiku_cli.errors import ModelError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

# One text per onnxruntime call. Dynamic int8 quantisation scales activations over the whole batch,
# so a text batched with others gets a slightly different vector (cosine ~0.98-0.99 to itself alone);
# embedding each text alone makes a document's vector independent of its batch mates and consistent
# with its query embedding. Paragraphs also run ~30% faster per CPU-second in batches of one or two
# than of 32 here (activations stay in cache).
DEFAULT_BATCH_SIZE = 1
DEFAULT_BATCH_TOKENS = 512


def cpu_count() -> int:
    # The affinity mask respects container/taskset limits that os.cpu_count() ignores.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Runtime:
    session: onnxruntime.InferenceSession
    tokenizer: Tokenizer
    input_names: frozenset[str]


_runtime_lock = threading.Lock()
_runtimes: dict[int, Runtime] = {}  # keyed by thread count; model instances share a session


def load_runtime(threads: int) -> Runtime:
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
        runtime = Runtime(
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


def encode_sorted(
    runtime: Runtime, texts: Sequence[str], max_items: int, max_tokens: int
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

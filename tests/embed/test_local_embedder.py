"""The bundled all-MiniLM-L6-v2 ONNX embedder, run for real."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pytest

from haiku_cli.embed import DEFAULT_EMBEDDER_NAME, Embedder, LocalOnnxEmbeddingModel, bundled_model_dir


def embed_docs(embedder: Embedder, texts: list[str], **kwargs) -> np.ndarray:
    return asyncio.run(embedder.embed_documents(texts, **kwargs))


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    return asyncio.run(embedder.embed_query(text))


def test_identity_and_shape(embedder: Embedder) -> None:
    assert embedder.name == DEFAULT_EMBEDDER_NAME == "haiku:all-minilm-l6-v2"
    assert embedder.dimension == 384
    assert embedder.max_tokens == 256
    vectors = embed_docs(embedder, ["one", "two words"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    query = embed_query(embedder, "a question?")
    assert query.shape == (384,)
    assert query.dtype == np.float32


def test_vectors_are_unit_length(embedder: Embedder) -> None:
    vectors = embed_docs(embedder, ["short", "a somewhat longer sentence about libraries", "x" * 500])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(embed_query(embedder, "hello")) == pytest.approx(1.0, abs=1e-5)


def test_similar_sentences_score_higher_than_unrelated(embedder: Embedder) -> None:
    a, b, c = embed_docs(
        embedder,
        [
            "A man is playing a guitar on stage.",
            "Someone performs a song with a guitar.",
            "The central bank raised interest rates again.",
        ],
    )
    assert a @ b > a @ c + 0.3
    query = embed_query(embedder, "How do libraries classify books?")
    docs = embed_docs(
        embedder,
        ["The Dewey Decimal Classification organises library collections.", "Recipe for a chocolate cake."],
    )
    assert docs[0] @ query > docs[1] @ query


def test_order_is_preserved_across_mixed_length_batches(embedder: Embedder) -> None:
    # Lengths interleaved so the length sort really reorders, and more than one batch of 32.
    texts = [f"Sentence {i} about topic {i % 7}." + " filler words" * ((i * 37) % 50) for i in range(75)]
    together = embed_docs(embedder, texts)
    alone = np.stack([embed_query(embedder, t) for t in texts])
    sims = together @ alone.T
    # Each row must match its own text best, and closely (int8 results shift a little with batch mates).
    assert (sims.argmax(axis=1) == np.arange(len(texts))).all()
    assert np.diag(sims).min() > 0.97


def test_progress_reports_every_text(embedder: Embedder) -> None:
    calls: list[int] = []
    embed_docs(embedder, [f"text {i}" for i in range(70)], on_progress=calls.append)
    assert sum(calls) == 70
    assert len(calls) == 3  # batches of 32, 32 and 6


def test_long_text_is_truncated_not_rejected(embedder: Embedder) -> None:
    words = [f"word{i % 50}" for i in range(5000)]
    long_text = " ".join(words)
    assert embedder.count_tokens(long_text) > 10 * embedder.max_tokens
    # Anything past the first 256 tokens is cut, so a much shorter prefix (still over 256) embeds the same.
    prefix = " ".join(words[:400])
    assert embedder.count_tokens(prefix) > embedder.max_tokens
    np.testing.assert_allclose(embed_query(embedder, long_text), embed_query(embedder, prefix), atol=1e-5)


def test_empty_inputs(embedder: Embedder) -> None:
    assert embed_docs(embedder, []).shape == (0, 384)
    vector = embed_query(embedder, "")  # only [CLS] [SEP]: still a valid unit vector
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_count_tokens(embedder: Embedder) -> None:
    assert embedder.count_tokens("") == 2  # [CLS] and [SEP]
    assert embedder.count_tokens("hello world") == 4
    assert embedder.count_tokens("Hello, world!") == 6
    text = "tokenisation " * 300
    assert embedder.count_tokens(text) > 256  # counts are not truncated


def test_is_a_pydantic_ai_embedding_model() -> None:
    from pydantic_ai import Embedder as PydanticEmbedder

    model = LocalOnnxEmbeddingModel()
    assert (model.system, model.model_name) == ("haiku", "all-minilm-l6-v2")
    result = asyncio.run(PydanticEmbedder(model).embed_documents(["first", "second text"]))
    assert len(result.embeddings) == 2
    assert len(result.embeddings[0]) == 384
    assert result.usage.input_tokens == 3 + 4
    assert asyncio.run(model.max_input_tokens()) == 256
    assert asyncio.run(model.count_tokens("hello world")) == 4


def test_bundle_files_and_notice() -> None:
    folder = bundled_model_dir()
    assert (folder / "model.onnx").stat().st_size < 30_000_000
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
    assert "sentence-transformers/all-MiniLM-L6-v2" in (folder / "NOTICE").read_text(encoding="utf-8")


def test_package_import_is_light() -> None:
    code = (
        "import sys, haiku_cli.embed\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'pydantic_ai', 'numpy') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

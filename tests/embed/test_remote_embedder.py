"""Remote embedders: configuration errors and unreachable servers become one-line ModelErrors."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import numpy as np
import pytest

from haiku_cli.embed import load_embedder
from haiku_cli.errors import ExitCode, ModelError
from tests.support.hash_embedder import serve_embeddings


@pytest.fixture
def closed_port_url() -> str:
    """A local URL nothing listens on (bound then released, so connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_unreachable_server_raises_model_error(closed_port_url: str) -> None:
    embedder = load_embedder("ollama:nomic-embed-text", base_url=closed_port_url)
    assert embedder.name == "ollama:nomic-embed-text"
    with pytest.raises(ModelError) as info:
        asyncio.run(embedder.embed_documents(["some text"]))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot reach the embedding model server at ")
    assert "for 'ollama:nomic-embed-text'" in message
    assert closed_port_url in message
    assert info.value.exit_code == ExitCode.MODEL


def test_dimension_probe_of_unreachable_server_raises_model_error(closed_port_url: str) -> None:
    embedder = load_embedder("openai:text-embedding-3-small", base_url=closed_port_url)
    with pytest.raises(
        ModelError, match=r"cannot reach the embedding model server .* for 'openai:text-embedding-3-small'"
    ):
        _ = embedder.dimension
    with pytest.raises(ModelError, match="cannot reach"):
        asyncio.run(embedder.embed_query("a query"))


def test_remote_count_tokens_uses_bundled_tokenizer(closed_port_url: str) -> None:
    embedder = load_embedder("ollama:nomic-embed-text", base_url=closed_port_url)
    assert embedder.count_tokens("hello world") == 4  # no network needed
    assert embedder.max_tokens > 0


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nosuchprovider:model", "'nosuchprovider' is not a known embedding provider"),
        ("anthropic:claude-sonnet-4-0", "'anthropic' is not a known embedding provider"),  # chat only
        ("no-colon", "must look like provider:model"),
        ("haiku:other-model", "unknown bundled embedding model 'haiku:other-model'"),
        ("openai:text-embedding-3-small", "set the OPENAI_API_KEY environment variable"),
    ],
)
def test_bad_model_strings(spec: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError, match=expected):
        load_embedder(spec)


def test_default_is_the_bundled_model() -> None:
    assert load_embedder().name == "haiku:all-minilm-l6-v2"
    assert load_embedder("haiku:all-minilm-l6-v2").dimension == 384


def test_dimension_probe_inside_running_event_loop(closed_port_url: str) -> None:
    embedder = load_embedder("ollama:nomic-embed-text", base_url=closed_port_url)

    async def ask() -> int:
        return embedder.dimension  # sync property called from async code must not deadlock

    with pytest.raises(ModelError, match="cannot reach"):
        asyncio.run(ask())


@pytest.fixture
def embedding_server() -> Iterator[str]:
    """A tiny OpenAI-compatible /v1/embeddings server on localhost; vectors derive from text length."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[len(t), 1.0, 2.0] for t in texts])  # deliberately not unit length

    with serve_embeddings(embed) as url:
        yield url.removesuffix("/v1")


def test_remote_success_path(embedding_server: str) -> None:
    embedder = load_embedder("ollama:fake-embed", base_url=embedding_server)  # /v1 is added
    assert embedder.dimension == 3  # probed synchronously on a private event loop
    texts = ["ccc", "a", "bbbbbbbb", "dd"] * 20
    vectors = asyncio.run(embedder.embed_documents(texts))
    assert vectors.shape == (80, 3)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array([[len(t), 1.0, 2.0] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)  # input order restored

    async def probe_then_embed() -> np.ndarray:
        fresh = load_embedder("ollama:fake-embed", base_url=embedding_server)
        assert fresh.dimension == 3  # sync probe from inside a running loop
        return await fresh.embed_query("four")

    assert asyncio.run(probe_then_embed()).shape == (3,)

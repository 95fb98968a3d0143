"""`ollama:` and `openai:` embedders run on haiku's own HTTP client, against a real server on 127.0.0.1.

pydantic-ai's OpenAI embedding model (with the openai SDK) served these before; the same server must get
the same answers from both: identical vectors, identical one-line errors. And a command must not load them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from haiku_cli.embed import Embedder, load_embedder
from haiku_cli.errors import ExitCode, ModelError
from tests.support.hash_embedder import Reply, hash_vectors, serve_embeddings, serve_hash_embedder
from tests.support.silent_server import silent_server

TEXTS = ["Owls hunt at night.", "Herons wade", "a", "Swifts sleep on the wing, high above the sea.", "owls"]
QUERY = "which birds hunt at night?"
FAST_RETRY = {"retry-after-ms": "1"}  # both clients honour it: retried statuses cost no backoff here


def _vectors(texts: list[str]) -> np.ndarray:
    # Not unit length, and not representable in few digits: normalisation and float parsing both matter.
    return hash_vectors(texts, 16) * 3.7 + np.float32(0.1)


def _as_floats(body: dict, headers: dict[str, str]) -> Reply:
    """What Ollama does: JSON numbers, even when base64 was asked for."""
    vectors = _vectors(body["input"])
    rows = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
    return Reply(body={"object": "list", "data": rows, "model": body["model"]})


def _reference(spec: str, url: str) -> Embedder:
    """The embedder as haiku built it before: pydantic-ai's OpenAI embedding model and provider."""
    from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
    from pydantic_ai.providers.ollama import OllamaProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    system, _, name = spec.partition(":")
    provider = OllamaProvider(base_url=url) if system == "ollama" else OpenAIProvider(base_url=url)
    return Embedder(OpenAIEmbeddingModel(name, provider=provider), name=spec)


def _embed_all(embedder: Embedder) -> tuple[np.ndarray, np.ndarray, int]:
    async def run() -> tuple[np.ndarray, np.ndarray]:
        return await embedder.embed_documents(TEXTS), await embedder.embed_query(QUERY)

    docs, query = asyncio.run(run())
    return docs, query, embedder.dimension


def _failure(embedder: Embedder) -> str:
    with pytest.raises(ModelError) as info:
        asyncio.run(embedder.embed_documents(TEXTS))
    assert info.value.exit_code == ExitCode.MODEL
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("spec", ["ollama:hash-embed", "openai:text-embedding-3-small"])
@pytest.mark.parametrize("encoding", ["base64", "floats"])
def test_vectors_are_identical_to_pydantic_ai(spec: str, encoding: str) -> None:
    with serve_embeddings(_vectors, _as_floats if encoding == "floats" else None) as url:
        ours = load_embedder(spec, base_url=url)
        docs, query, dimension = _embed_all(ours)
        ref_docs, ref_query, _ = _embed_all(_reference(spec, url))
    assert dimension == 16 and docs.shape == (len(TEXTS), 16) and docs.dtype == np.float32
    np.testing.assert_array_equal(docs, ref_docs)
    np.testing.assert_array_equal(query, ref_query)
    expected = _vectors(TEXTS)
    np.testing.assert_allclose(docs, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)


def test_vectors_follow_each_items_index_not_the_answers_order() -> None:
    def reversed_rows(body: dict, headers: dict[str, str]) -> Reply:
        rows = _as_floats(body, headers).body["data"]  # type: ignore[index]
        return Reply(body={"object": "list", "data": rows[::-1], "model": body["model"]})

    with serve_embeddings(_vectors, reversed_rows) as url:
        docs, _, _ = _embed_all(load_embedder("ollama:m", base_url=url))
    expected = _vectors(TEXTS)
    np.testing.assert_allclose(docs, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)


ERROR = {"error": {"message": "Input is bad. Really.", "type": "invalid_request_error", "code": None}}
NOT_FOUND = {"error": {"message": 'model "m" not found, try pulling it first', "code": None}}
BAD_KEY = {"error": {"message": "Incorrect API key provided.", "type": "x", "code": "invalid_api_key"}}
OVERLOADED = {"error": {"message": "The server is overloaded.", "type": "server_error", "code": None}}

# The server's answer, how many requests the client makes (retries), and the one line a user sees.
SAME_FAILURES = {
    "unknown model": (
        Reply(404, NOT_FOUND),
        1,
        "the embedding model server does not know embedding model '{spec}' (HTTP 404)",
    ),
    "bad key": (
        Reply(401, BAD_KEY),
        1,
        "the embedding model server rejected the credentials for '{spec}' (HTTP 401); check the API key",
    ),
    "forbidden": (
        Reply(403, b"Forbidden", "text/plain"),
        1,
        "the embedding model server rejected the credentials for '{spec}' (HTTP 403); check the API key",
    ),
    "rejected input": (
        Reply(400, ERROR),
        1,
        "the embedding model server answered (HTTP 400) for '{spec}': status_code: 400, model_name: m, "
        "body: {{'message': 'Input is bad.",
    ),
    "overloaded, retried": (
        Reply(503, OVERLOADED, headers=FAST_RETRY),
        3,
        "the embedding model server answered (HTTP 503) for '{spec}': status_code: 503, model_name: m, "
        "body: {{'message': 'The server is overloaded.', 'type': 'server_error', 'code': None}}",
    ),
    "server error page, retried": (
        Reply(502, b"<html>Bad gateway</html>", "text/html", headers=FAST_RETRY),
        3,
        "the embedding model server answered (HTTP 502) for '{spec}': status_code: 502, model_name: m, "
        "body: <html>Bad gateway</html>",
    ),
    "not JSON": (
        Reply(200, b"hello there"),
        1,
        "embedding model '{spec}' failed: Failed to decode response as JSON: "
        "Expecting value: line 1 column 1 (char 0)",
    ),
    "no data": (
        Reply(200, {"object": "list", "data": []}),
        1,
        "embedding model '{spec}' failed: ValueError: No embedding data received",
    ),
    "connection dropped, retried": (
        Reply(drop=True),
        3,
        "cannot reach the embedding model server at {url}/ for '{spec}': Connection error.",
    ),
}


@pytest.fixture
def scripted() -> Iterator[tuple[str, list[Reply], list[dict]]]:
    """A server answering every request with the next test-chosen `Reply`; also records the requests."""
    replies: list[Reply] = []
    requests: list[dict] = []

    def answer(body: dict, headers: dict[str, str]) -> Reply:
        requests.append({"body": body, "headers": {k.lower(): v for k, v in headers.items()}})
        return replies[0]

    with serve_embeddings(_vectors, answer) as url:
        yield url, replies, requests


@pytest.mark.parametrize("case", SAME_FAILURES)
@pytest.mark.parametrize("system", ["ollama", "openai"])
def test_each_failure_is_the_same_one_line_error_as_before(system: str, case: str, scripted) -> None:
    url, replies, requests = scripted
    reply, attempts, expected = SAME_FAILURES[case]
    replies.append(reply)
    spec = f"{system}:m"
    message = _failure(load_embedder(spec, base_url=url))
    assert message.startswith(expected.format(spec=spec, url=url))
    assert len(requests) == attempts
    requests.clear()
    assert _failure(_reference(spec, url)) == message
    assert len(requests) == attempts


NOT_A_LIST = "embedding 0 of the response is not a list of numbers"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([{"index": 0, "embedding": None}], NOT_A_LIST),
        ([{"index": 0}], NOT_A_LIST),
        ([{"index": 0, "embedding": ["a", "b"]}], NOT_A_LIST),
        ([{"index": 0, "embedding": "@@@"}], "embedding 0 is not base64-encoded float32"),
        ([{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}], "the embeddings have different lengths: [1, 2]"),
    ],
)
def test_malformed_embeddings_are_one_line_errors(data: list, problem: str, scripted) -> None:
    # pydantic-ai let these through as tracebacks or, for bad base64, as empty vectors.
    url, replies, _ = scripted
    replies.append(Reply(body={"data": data}))
    message = _failure(load_embedder("ollama:m", base_url=url))
    assert message == f"embedding model 'ollama:m' failed: ValueError: {problem}"


def test_a_server_that_does_not_answer_times_out_once_naming_the_limit() -> None:
    # It accepts the connection and never answers: the request gives up after the configured timeout,
    # and is not retried (a stalled server would otherwise hold the command for three timeouts).
    with silent_server() as server:
        message = _failure(load_embedder("ollama:slow", base_url=server.url, timeout=0.5))
    assert message == (
        f"the embedding model server at {server.url}/ did not answer within 0.5 s for 'ollama:slow'; "
        "check the server, or raise [embedder] timeout_seconds (HAIKU_EMBEDDER_TIMEOUT)"
    )
    assert server.connections == 1


def test_a_server_that_answers_a_byte_at_a_time_is_bounded_by_the_same_timeout() -> None:
    # Each byte comes well within the timeout, so only a bound on the whole answer ends the request.
    with silent_server(drip=0.1) as server:
        message = _failure(load_embedder("ollama:slow", base_url=server.url, timeout=1))
    assert message.startswith(f"the embedding model server at {server.url}/ did not answer within 1 s")


def test_a_pydantic_ai_embedding_model_is_bounded_by_the_timeout_too() -> None:
    # Providers other than ollama and openai are pydantic-ai's models: the Embedder bounds each call.
    from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with silent_server() as server:
        model = OpenAIEmbeddingModel("m", provider=OpenAIProvider(base_url=server.url, api_key="x"))
        message = _failure(Embedder(model, name="other:m", timeout=0.5))
    assert message.startswith(f"the embedding model server at {server.url}/ did not answer within 0.5 s")


def test_requests_and_credentials_match_pydantic_ai(scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    url, replies, requests = scripted
    replies.append(Reply(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-secret")
    for spec in ("ollama:m", "openai:m"):
        for embedder in (load_embedder(spec, base_url=url), _reference(spec, url)):
            asyncio.run(embedder.embed_query("one"))
    ours_ollama, ref_ollama, ours_openai, ref_openai = requests
    for ours, ref in ((ours_ollama, ref_ollama), (ours_openai, ref_openai)):
        assert ours["body"] == ref["body"] == {"model": "m", "input": ["one"], "encoding_format": "base64"}
        for header in ("authorization", "openai-project", "openai-organization"):
            assert ours["headers"].get(header) == ref["headers"].get(header), header
    assert ours_ollama["headers"]["authorization"] == "Bearer ollama-secret"
    assert ours_openai["headers"]["authorization"] == "Bearer sk-test"
    assert ours_openai["headers"]["openai-project"] == "proj-1"


def test_server_addresses_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_embeddings(_vectors) as url:
        monkeypatch.setenv("OLLAMA_BASE_URL", url.removesuffix("/v1"))  # the bare address gets /v1 added
        assert load_embedder("ollama:m").dimension == 16
        monkeypatch.setenv("OPENAI_BASE_URL", url)  # a local OpenAI-compatible server needs no key
        openai = load_embedder("openai:m")
        assert openai.dimension == 16
        assert openai.max_tokens == 512  # a custom server's limit is unknown; OpenAI's own is 8192
        assert openai.model.base_url == url + "/"


def _haiku(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `haiku ARGS` in a fresh interpreter; also returns which model libraries it had loaded."""
    loaded = tmp_path / "loaded.json"
    code = (
        "import atexit, json, sys\n"
        "def report():\n"
        "    names = [m for m in ('pydantic_ai', 'openai') if m in sys.modules]\n"
        f"    open({str(loaded)!r}, 'w').write(json.dumps(names))\n"
        "atexit.register(report)\n"
        f"sys.argv = ['haiku', *{list(args)!r}]\n"
        "from haiku_cli.cli.app import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return done, json.loads(loaded.read_text())


def test_add_and_vector_search_load_neither_pydantic_ai_nor_openai(write_config, tmp_path: Path) -> None:
    with serve_hash_embedder(dimension=32) as url:
        write_config(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n')
        added, loaded = _haiku(tmp_path, "add", "Owls hunt at night.")
        assert added.returncode == 0, added.stderr
        assert loaded == []
        found, loaded = _haiku(tmp_path, "search", "--type", "vector", "owls at night", "--json")
        assert found.returncode == 0, found.stderr
        assert loaded == []
    assert [hit["content"] for hit in json.loads(found.stdout)["hits"]] == ["Owls hunt at night."]

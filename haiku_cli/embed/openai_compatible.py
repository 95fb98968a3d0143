"""A small async client for OpenAI-compatible `/embeddings` APIs (OpenAI, Ollama, vLLM, llama.cpp, ...).

haiku needs one request from these servers; speaking it over httpx spares every command of a user with
an `ollama:` or `openai:` embedder the import of pydantic-ai and the openai SDK (about a second of CPU).
Requests, retries, timeouts and environment variables follow what the openai SDK did for haiku before.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import httpx
    import numpy as np

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
NO_KEY = "api-key-not-set"  # what keyless local servers were sent before; some proxies insist on a header
CONNECT_TIMEOUT = 5.0
DEFAULT_TIMEOUT = 120.0  # [embedder] timeout_seconds: a batch of 32 long texts on a slow CPU server
MAX_RETRIES = 2
MAX_RETRY_AFTER = 60.0  # a server asking for a longer wait gets an error now rather than a hung command


class ServerUnreachable(Exception):
    """The request got no HTTP answer: connection refused or dropped, DNS failure, or a timeout."""

    def __init__(self, *, timeout: bool, seconds: float = DEFAULT_TIMEOUT) -> None:
        """`timeout` tells a server that took too long (`seconds`, the limit) from one not reached."""
        super().__init__("Request timed out." if timeout else "Connection error.")
        self.timeout = timeout
        self.seconds = seconds


class ServerRejected(Exception):
    """The server answered the request with an HTTP error status."""

    def __init__(self, status_code: int, model_name: str, body: object) -> None:
        """`body` is the decoded JSON error body, or its text when it is not JSON."""
        # OpenAI-style servers wrap the useful part in {"error": {...}}; others send a bare string or object.
        detail = body.get("error", body) if isinstance(body, dict) else body
        super().__init__(f"status_code: {status_code}, model_name: {model_name}, body: {detail}")
        self.status_code = status_code
        self.code = detail.get("code") if isinstance(detail, dict) else None


class UndecodableResponse(Exception):
    """A successful status whose body is not JSON (a gateway's error page, a truncated answer)."""


@dataclass(frozen=True)
class EmbeddingResult:
    """What one request returned: one float32 row per input text, in input order."""

    embeddings: np.ndarray


class OpenAICompatibleEmbeddingModel:
    """Embeds texts through POST {base_url}/embeddings; one HTTP connection pool per event loop."""

    def __init__(
        self,
        system: str,
        model_name: str,
        base_url: str,
        api_key: str,
        headers: dict[str, str] | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Talk to `base_url` (ending in /v1 or wherever the API lives) about `model_name`.

        `timeout` bounds each request (connecting is bounded by at most 5 s of it); one that times out is
        not retried, so a server that accepts and never answers fails the call after `timeout` seconds.
        """
        self._system = system
        self._timeout = timeout
        self._model_name = model_name
        self._base_url = base_url.rstrip("/") + "/"
        self._headers = {"Authorization": f"Bearer {api_key}", **(headers or {})}
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbeddingModel({self._system}:{self._model_name} at {self._base_url})"

    @property
    def system(self) -> str:
        """The provider name haiku uses in model strings ("ollama", "openai")."""
        return self._system

    @property
    def model_name(self) -> str:
        """The model as the server names it."""
        return self._model_name

    @property
    def base_url(self) -> str:
        """The API's base URL, with a trailing slash (as error messages show it)."""
        return self._base_url

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: Literal["query", "document"]
    ) -> EmbeddingResult:
        """Embed `inputs` in one request; `input_type` is accepted for interface parity and not sent."""
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        # base64 float32 is a third of the size of JSON numbers and decodes to the same values.
        payload = {"model": self._model_name, "input": texts, "encoding_format": "base64"}
        return EmbeddingResult(_vectors(await self._post("embeddings", payload)))

    async def aclose(self) -> None:
        """Close the connections of the current event loop's client."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> OpenAICompatibleEmbeddingModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _post(self, path: str, payload: dict[str, Any]) -> object:
        import anyio
        import httpx

        client = self._client_for_this_loop()
        for attempt in range(MAX_RETRIES + 1):
            try:
                # httpx's timeouts bound each wait for bytes; this bounds the whole answer, so a server
                # that sends a byte now and then cannot hold the command either.
                with anyio.fail_after(self._timeout):
                    response = await client.post(self._base_url + path, json=payload, headers=self._headers)
            except (httpx.RequestError, TimeoutError) as exc:  # refused or dropped: retried like the SDK did
                timed_out = isinstance(exc, httpx.TimeoutException | TimeoutError)
                failure: Exception = ServerUnreachable(timeout=timed_out, seconds=self._timeout)
                failure.__cause__ = exc
                # A server that let a whole timeout pass is stalled, not blipping: waiting again would
                # only multiply the time a user looks at a silent terminal.
                wait: float | None = None if timed_out else 0.0
            else:
                if response.status_code < 400:
                    return _decode(response.content)
                failure = ServerRejected(response.status_code, self._model_name, _error_body(response))
                wait = _retry_wait(response)
            if wait is None or attempt == MAX_RETRIES:
                raise failure
            await anyio.sleep(wait or _backoff(attempt))
        raise AssertionError("unreachable")  # the loop either returns or raises

    def _client_for_this_loop(self) -> httpx.AsyncClient:
        # An httpx client's pooled connections belong to the loop that opened them; a later asyncio.run
        # (the sync dimension probe, a second command in one process) gets a pool of its own.
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            timeout = httpx.Timeout(self._timeout, connect=min(CONNECT_TIMEOUT, self._timeout))
            self._client, self._loop = httpx.AsyncClient(timeout=timeout), loop
        return self._client


def openai_headers(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Extra request headers the openai SDK took from the environment, for both providers it served."""
    headers: dict[str, str] = {}
    for name, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
        if environ.get(name):
            headers[header] = environ[name]
    # OPENAI_CUSTOM_HEADERS holds "Name: value" lines (a gateway's routing or auth header).
    for line in environ.get("OPENAI_CUSTOM_HEADERS", "").splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers[name.strip()] = value.strip()
    return headers


def _decode(content: bytes) -> object:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UndecodableResponse(f"Failed to decode response as JSON: {exc}") from exc


def _error_body(response: httpx.Response) -> object:
    text = response.text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _retry_wait(response: httpx.Response) -> float | None:
    """Seconds to wait before retrying `response` (0: the default backoff), or None to give up now."""
    after = _retry_after(response.headers)
    if after is not None and after > MAX_RETRY_AFTER:
        return None
    hint = response.headers.get("x-should-retry")  # not standard, but OpenAI's servers set it
    status = response.status_code
    if hint == "false" or (hint != "true" and status not in (408, 409, 429) and status < 500):
        return None
    return after if after is not None and after > 0 else 0.0


def _retry_after(headers: httpx.Headers) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(headers[name]) * scale
        except (KeyError, ValueError):
            continue
    return None


def _backoff(attempt: int) -> float:
    # 0.5 s, then 1 s, less up to a quarter at random so parallel clients do not retry in step.
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


def _vectors(body: object) -> np.ndarray:
    """The float32 rows of an embeddings response, ordered by each item's `index` when all have one."""
    import numpy as np

    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data:
        raise ValueError("No embedding data received")
    indexes = [item.get("index") if isinstance(item, dict) else None for item in data]
    if sorted(i for i in indexes if isinstance(i, int)) == list(range(len(data))):
        data = [data[indexes.index(i)] for i in range(len(data))]
    rows = [_row(item, i) for i, item in enumerate(data)]
    if len({len(row) for row in rows}) > 1:
        raise ValueError(f"the embeddings have different lengths: {sorted({len(row) for row in rows})}")
    return np.stack(rows)


def _row(item: object, i: int) -> np.ndarray:
    import numpy as np

    embedding = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if not raw or len(raw) % 4:
            raise ValueError(f"embedding {i} is not base64-encoded float32")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if isinstance(embedding, list) and embedding:
        try:
            row = np.asarray(embedding, dtype=np.float32)
        except (TypeError, ValueError):
            row = None
        if row is not None and row.ndim == 1:
            return row
    raise ValueError(f"embedding {i} of the response is not a list of numbers")

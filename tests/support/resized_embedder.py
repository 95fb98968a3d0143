"""The real embedder with another chunk size, as a configured embedder of another max_tokens would be."""

from __future__ import annotations

from typing import Any


class Resized:
    """`real`, but documents are chunked to `max_tokens` (embedding and counting tokens are `real`'s)."""

    def __init__(self, real: Any, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.name, self.dimension, self.count_tokens = real.name, real.dimension, real.count_tokens
        self.embed_documents, self.resolve_dimension = real.embed_documents, real.resolve_dimension

"""Text embedding for haiku: the bundled all-MiniLM-L6-v2 (ONNX, CPU, offline) or any pydantic-ai model.

Importing this package is cheap; numpy, onnxruntime, tokenizers and pydantic-ai load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from haiku_cli.embed._bundle import (
    BUNDLED_DIMENSION,
    BUNDLED_MAX_TOKENS,
    DEFAULT_EMBEDDER_NAME,
    bundled_model_dir,
)

if TYPE_CHECKING:
    from haiku_cli.embed.embedder import Embedder
    from haiku_cli.embed.loading import load_embedder
    from haiku_cli.embed.onnx_model import LocalOnnxEmbeddingModel

__all__ = [
    "BUNDLED_DIMENSION",
    "BUNDLED_MAX_TOKENS",
    "DEFAULT_EMBEDDER_NAME",
    "Embedder",
    "LocalOnnxEmbeddingModel",
    "bundled_model_dir",
    "load_embedder",
]

# Attribute -> module; resolved on first access (PEP 562) so `import haiku_cli.embed` stays light.
_LAZY = {
    "Embedder": "haiku_cli.embed.embedder",
    "LocalOnnxEmbeddingModel": "haiku_cli.embed.onnx_model",
    "load_embedder": "haiku_cli.embed.loading",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

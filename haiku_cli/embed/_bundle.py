"""Where the bundled all-MiniLM-L6-v2 files live, its constants, and its tokenizers."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from haiku_cli.errors import ModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

BUNDLED_MODEL_ID = "all-minilm-l6-v2"
DEFAULT_EMBEDDER_NAME = f"haiku:{BUNDLED_MODEL_ID}"
BUNDLED_DIMENSION = 384
BUNDLED_MAX_TOKENS = 256  # word pieces including [CLS]/[SEP]; the model was trained at this length


def bundled_model_dir() -> Path:
    """Return the folder holding the bundled model.onnx, tokenizer.json and licence files."""
    return Path(__file__).resolve().parent / "models" / BUNDLED_MODEL_ID


def bundled_file(name: str) -> Path:
    """Return the path of one bundled file, or raise ModelError if the install lacks it."""
    path = bundled_model_dir() / name
    if not path.is_file():
        raise ModelError(f"the bundled embedder file {path} is missing; reinstall haiku")
    return path


def load_tokenizer(*, truncate: bool) -> Tokenizer:
    """Load a fresh bundled tokenizer without padding; truncated at 256 tokens when `truncate`."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundled_file("tokenizer.json")))
    # Padding is done by the caller per batch, so encode_batch never pads to a global longest.
    tok.no_padding()
    if truncate:
        tok.enable_truncation(max_length=BUNDLED_MAX_TOKENS)
    else:
        tok.no_truncation()
    return tok


@functools.cache
def counting_tokenizer() -> Tokenizer:
    """The shared untruncated tokenizer used to count tokens (loaded once per process)."""
    return load_tokenizer(truncate=False)


def count_tokens(text: str) -> int:
    """Count word pieces of `text` as the bundled model sees them, [CLS] and [SEP] included."""
    return len(counting_tokenizer().encode(text).ids)

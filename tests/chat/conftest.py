"""The capability tests' real databases (`notes`, `papers`), shared with the chat tests."""

from tests.capabilities.conftest import kb, kb_template

__all__ = ["kb", "kb_template"]

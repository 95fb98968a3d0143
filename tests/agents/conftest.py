"""The capability tests' real databases, shared with the agent tests."""

from tests.capabilities.conftest import kb, kb_template

__all__ = ["kb", "kb_template"]

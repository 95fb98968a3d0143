"""The capability tests' real databases, shared with the agent tests."""

from tests.capabilities.conftest import kb

__all__ = ["kb"]

"""haiku: local-first retrieval-augmented generation for the terminal."""

__version__ = "0.1.0"

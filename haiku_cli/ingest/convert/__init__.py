"""Source conversion: files, bytes, URLs and raw text to ConvertedDocument (heavy libraries load lazily)."""

from __future__ import annotations

from haiku_cli.ingest.convert.dispatch import SUPPORTED_SUFFIXES, convert_bytes, convert_file, convert_text
from haiku_cli.ingest.convert.url import fetch_url

__all__ = ["SUPPORTED_SUFFIXES", "convert_bytes", "convert_file", "convert_text", "fetch_url"]

"""Formats are chosen from one registry: registering a converter is all a new format needs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from haiku_cli.ingest.convert import convert_bytes, convert_file, registry
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment
from haiku_cli.ingest.source_walk import iter_source_files


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations made by a test are undone after it."""
    for table in ("_BY_NAME", "_BY_SUFFIX", "_BY_MEDIA_TYPE"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    yield


def _read_shouting(raw: RawDocument) -> ConvertedDocument:
    body = raw.data.removeprefix(b"SHOUT\n").decode()
    if not body.strip():
        raise ConversionError(f"{raw.label}: nothing to shout")
    return ConvertedDocument(uri=raw.uri, title=raw.fallback_title, segments=[Segment(body.upper())])


_SHOUTING = Converter(
    name="shouting",
    read=_read_shouting,
    suffixes=(".shout",),
    media_types=("text/x-shout",),
    sniff=lambda data: data.startswith(b"SHOUT\n"),
)


@pytest.mark.usefixtures("scratch_registry")
def test_a_registered_format_is_read_by_suffix_media_type_and_its_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    path = folder / "notes.SHOUT"
    path.write_bytes(b"SHOUT\nhello there\n")
    assert [(o.why, o.detail) for o in iter_source_files(folder)] == [("unsupported", ".shout")]  # type: ignore[union-attr]
    registry.register(_SHOUTING)
    assert list(iter_source_files(folder)) == [path]
    assert convert_file(path).text == "HELLO THERE"
    assert convert_bytes(b"quiet", uri="https://example.com/a", content_type="text/x-shout").text == "QUIET"
    sniffed = convert_bytes(b"SHOUT\nsniffed", uri="https://example.com/a", content_type=None)
    assert sniffed.text == "SNIFFED"


@pytest.mark.usefixtures("scratch_registry")
def test_a_suffix_or_media_type_is_read_by_one_converter_only() -> None:
    registry.register(_SHOUTING)
    with pytest.raises(ValueError, match=r"\.md is already read by the 'markdown' converter"):
        registry.register(Converter(name="other", read=_read_shouting, suffixes=(".md",)))
    with pytest.raises(ValueError, match="text/x-shout"):
        registry.register(Converter(name="other", read=_read_shouting, media_types=("text/x-shout",)))
    assert registry.by_suffix("a.md") is registry.converter("markdown")


def test_every_built_in_format_is_registered() -> None:
    names = {registry.by_suffix(f"a{s}").name for s in registry.suffixes()}  # type: ignore[union-attr]
    assert {
        "text",
        "markdown",
        "html",
        "pdf",
        "docx",
        "pptx",
        "xlsx",
        "csv",
        "epub",
        "eml",
        "mbox",
        "code",
        "typescript",
        "image",  # with the ocr extra, which the test extra installs
    } <= names


@pytest.mark.usefixtures("scratch_registry")
def test_a_format_needing_a_missing_extra_is_unsupported_and_says_what_to_install(tmp_path: Path) -> None:
    installed = False
    registry.register(
        Converter(
            name="shouting",
            read=_read_shouting,
            suffixes=(".shout",),
            media_types=("application/x-shout",),
            available=lambda: installed,
            hint="pip install 'haiku-cli[shout]'",
        )
    )
    path = tmp_path / "a.shout"
    path.write_bytes(b"SHOUT\nhey\n")
    with pytest.raises(
        ConversionError,
        match=r"a\.shout: unsupported file type \.shout \(pip install 'haiku-cli\[shout\]'\)$",
    ):
        convert_file(path)
    with pytest.raises(ConversionError, match="unsupported content type application/x-shout"):
        convert_bytes(b"x", uri="https://example.com/a", content_type="application/x-shout")
    installed = True
    assert convert_file(path).text == "HEY"

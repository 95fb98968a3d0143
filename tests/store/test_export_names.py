"""The names of deferred modules, kept per file version in the user cache (store/export_names.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.store.export_names import CACHE_ENV, ExportCache


def _counting(found: dict[str, str], calls: list[int]):
    def parse() -> dict[str, str]:
        calls.append(1)
        return found

    return parse


def test_names_are_read_once_per_version_of_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    module = tmp_path / "m.py"
    module.write_text("def a():\n    pass\n", encoding="utf-8")
    calls: list[int] = []
    first = ExportCache()
    assert first.names("m", str(module), _counting({"a": "m"}, calls)) == {"a": "m"}
    first.save()
    # Another process: the kept names, the source not read.
    assert ExportCache().names("m", str(module), _counting({"wrong": "m"}, calls)) == {"a": "m"}
    assert len(calls) == 1
    module.write_text("def a():\n    pass\n\n\ndef b():\n    pass\n", encoding="utf-8")
    both = {"a": "m", "b": "m"}
    assert ExportCache().names("m", str(module), _counting(both, calls)) == both
    assert len(calls) == 2


def test_a_damaged_or_unwritable_cache_means_reading_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "exports.json").write_text('{"format": 1, "modules": {"m:', encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(folder))
    module = tmp_path / "m.py"
    module.write_text("x = 1\n", encoding="utf-8")
    calls: list[int] = []
    kept = ExportCache()
    assert kept.names("m", str(module), _counting({"x": "m"}, calls)) == {"x": "m"}
    kept.save()
    assert ExportCache().names("m", str(module), _counting({}, calls)) == {"x": "m"}  # repaired
    monkeypatch.setenv(CACHE_ENV, str(module / "not-a-folder"))
    kept = ExportCache()
    assert kept.names("m", str(module), _counting({"x": "m"}, calls)) == {"x": "m"}
    kept.save()  # nothing raised
    assert len(calls) == 2

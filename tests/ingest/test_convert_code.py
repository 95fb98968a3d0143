"""Source code: first-class documents cut at function and class boundaries, with their line ranges."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import anyio
import pytest

from haiku_cli.ingest import pipeline
from haiku_cli.ingest.chunking import chunk_document
from haiku_cli.ingest.convert import code, convert_file
from haiku_cli.ingest.document import ConversionError
from haiku_cli.ingest.source_walk import iter_source_files
from haiku_cli.ingest.stored import from_stored, stored_content
from tests.ingest.support import new_db

PYTHON = '''"""Lanterns."""

import os


# The flame's size.
def light(wick: int) -> int:
    """Light a wick."""
    return wick * 2


class Lantern:
    def __init__(self) -> None:
        self.lit = False

    def toggle(self) -> None:
        self.lit = not self.lit


LIMIT = 3
'''


def _chunks(path: Path, embedder):
    doc = convert_file(path)
    return doc, chunk_document(doc, embedder.count_tokens, max_tokens=embedder.max_tokens)


def test_python_is_cut_at_its_definitions_with_their_lines(tmp_path: Path, embedder) -> None:
    path = tmp_path / "lantern.py"
    path.write_text(PYTHON, encoding="utf-8")
    doc, chunks = _chunks(path, embedder)
    assert doc.title == "lantern.py"
    assert doc.text == PYTHON.strip("\n")  # stored as the file's own lines
    lines = PYTHON.split("\n")
    found = [(c.heading_path, c.span.first_line, c.span.last_line) for c in chunks]  # type: ignore[union-attr]
    assert found == [
        ([], 1, 3),
        (["def light(wick: int) -> int"], 6, 9),  # with the comment right above it
        (["class Lantern"], 12, 17),
        ([], 20, 20),
    ]
    for c in chunks:
        assert c.text == "\n".join(lines[c.span.first_line - 1 : c.span.last_line])  # type: ignore[union-attr]
    # A rebuild reads the stored text and cuts it the same way.
    again = from_stored(doc.uri, doc.title, stored_content(doc), lines_skipped=0)
    assert chunk_document(again, embedder.count_tokens, max_tokens=embedder.max_tokens) == chunks


def test_a_long_class_is_cut_at_its_methods(tmp_path: Path, embedder) -> None:
    methods = "\n\n".join(
        f"    def m{i}(self) -> int:\n" + "        x = 1\n" * 8 + "        return x" for i in range(8)
    )
    path = tmp_path / "big.py"
    path.write_text(f"class Big:\n    '''Many methods.'''\n\n{methods}\n", encoding="utf-8")
    _, chunks = _chunks(path, embedder)
    paths = [c.heading_path for c in chunks]
    assert paths[0] == ["class Big"] and chunks[0].text == "class Big:\n    '''Many methods.'''"
    assert paths[1:] == [["class Big", f"def m{i}(self) -> int"] for i in range(8)]
    assert chunks[1].span.first_line == 4  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "source", "paths"),
    [
        (
            "a.js",
            "const x = 1;\n\nfunction f() {\n  return x;\n}\n\nclass C {\n  m() {}\n}\n",
            [[], ["function f()"], ["class C"]],
        ),
        (
            "a.ts",
            "interface P { x: number }\n\nexport function g(p: P): number {\n  return p.x;\n}\n",
            [["interface P { x: number }"], ["export function g(p: P): number"]],
        ),
        (
            "a.go",
            "package main\n\nfunc main() {\n}\n\ntype T struct {\n  A int\n}\n",
            [[], ["func main()"], ["type T struct"]],
        ),
        (
            "a.rs",
            "use std::io;\n\nfn main() {\n}\n\nimpl T {\n    fn a() {}\n}\n",
            [[], ["fn main()"], ["impl T"]],
        ),
        ("A.java", "class A {\n  void m() {}\n}\n", [["class A"]]),
        ("a.c", "#include <stdio.h>\n\nint main(void) {\n  return 0;\n}\n", [[], ["int main(void)"]]),
        ("a.cpp", "namespace n {\nint f() { return 1; }\n}\n", [["namespace n"]]),
        ("a.rb", "class A\n  def m\n  end\nend\n\ndef top\nend\n", [["class A"], ["def top"]]),
        ("a.sh", "set -e\n\ngreet() {\n  echo hi\n}\n", [[], ["greet()"]]),
    ],
)
def test_each_language_is_cut_at_its_definitions(
    tmp_path: Path, embedder, name: str, source: str, paths
) -> None:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    _, chunks = _chunks(path, embedder)
    assert [c.heading_path for c in chunks] == paths


def test_without_the_grammar_code_is_cut_into_line_windows(tmp_path: Path, embedder, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter_python", None)  # what an install without the extra sees
    code._parser.cache_clear()
    try:
        path = tmp_path / "long.py"
        path.write_text("\n".join(f"value_{i} = compute_something({i}, factor={i * 3})" for i in range(300)))
        _, chunks = _chunks(path, embedder)
    finally:
        code._parser.cache_clear()
    assert len(chunks) > 3 and all(c.heading_path == [] for c in chunks)
    spans = [c.span for c in chunks]
    assert spans[0].first_line == 1 and spans[-1].last_line == 300  # type: ignore[union-attr]
    assert all(a.last_line >= b.first_line - 1 for a, b in itertools.pairwise(spans))  # type: ignore[union-attr]


def test_code_is_added_with_a_folder_and_a_malformed_file_is_refused(tmp_path: Path, embedder) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "good.py").write_text(PYTHON, encoding="utf-8")
    (folder / "bad.py").write_bytes(b"\x00\x01\x02binary")
    assert sorted(p.name for p in iter_source_files(folder)) == ["bad.py", "good.py"]  # type: ignore[union-attr]
    db = new_db(tmp_path, embedder)
    report = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    assert sorted((Path(o.source).name, o.status) for o in report.outcomes) == [
        ("bad.py", "failed"),
        ("good.py", "added"),
    ]
    failed = next(o for o in report.outcomes if o.status == "failed")
    assert failed.error == f"{folder / 'bad.py'}: binary data, not text"


def _transport_stream(packets: int) -> bytes:
    """MPEG transport stream packets as a video file holds them: 188 bytes, each opening with 0x47."""
    return b"".join(b"\x47\x40\x00\x10" + bytes([i % 256]) * 184 for i in range(packets))


def test_a_ts_file_is_typescript_unless_its_bytes_are_video(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "app.ts").write_text(
        "export function add(a: number, b: number): number {\n  return a + b;\n}\n"
    )
    (folder / "clip.ts").write_bytes(_transport_stream(20))
    (folder / "noise.ts").write_bytes(bytes(range(256)) * 8)
    found = list(iter_source_files(folder))
    assert found[0] == folder / "app.ts"
    assert [(Path(o.source).name, o.why, o.detail) for o in found[1:]] == [  # type: ignore[union-attr]
        ("clip.ts", "unsupported", ".ts (an MPEG transport stream (video), not TypeScript)"),
        ("noise.ts", "unsupported", ".ts (binary data, not TypeScript)"),
    ]
    doc = convert_file(folder / "app.ts")
    assert doc.title == "app.ts" and "return a + b;" in doc.text
    # Named by itself, the video is refused with one line rather than read as garbage.
    with pytest.raises(
        ConversionError, match=r"clip\.ts: unsupported: an MPEG transport stream \(video\), not TypeScript$"
    ):
        convert_file(folder / "clip.ts")

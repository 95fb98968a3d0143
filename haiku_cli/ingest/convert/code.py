"""Source code: stored as the file's own lines, so every chunk knows its line range; cut at function and
class boundaries by a tree-sitter grammar when the `code` extra is installed, else into line windows.

Grammars come pre-compiled in one wheel per language (`tree-sitter-python`, ...): nothing is built or
downloaded at run time.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from haiku_cli.ingest.convert.registry import SNIFF_BYTES, Converter, RawDocument, named_file
from haiku_cli.ingest.convert.text import convert_plain, decode_text, looks_binary
from haiku_cli.ingest.document import ConversionError, ConvertedDocument

# Suffix -> (grammar module, the function in it returning the language).
GRAMMARS: dict[str, tuple[str, str]] = {
    ".py": ("tree_sitter_python", "language"),
    ".pyi": ("tree_sitter_python", "language"),
    ".js": ("tree_sitter_javascript", "language"),
    ".mjs": ("tree_sitter_javascript", "language"),
    ".cjs": ("tree_sitter_javascript", "language"),
    ".jsx": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"),
    ".mts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
    ".java": ("tree_sitter_java", "language"),
    ".c": ("tree_sitter_c", "language"),
    ".h": ("tree_sitter_c", "language"),
    ".cpp": ("tree_sitter_cpp", "language"),
    ".cc": ("tree_sitter_cpp", "language"),
    ".cxx": ("tree_sitter_cpp", "language"),
    ".hpp": ("tree_sitter_cpp", "language"),
    ".hh": ("tree_sitter_cpp", "language"),
    ".rb": ("tree_sitter_ruby", "language"),
    ".sh": ("tree_sitter_bash", "language"),
    ".bash": ("tree_sitter_bash", "language"),
}
# Nodes that define something, across the grammars above: each is cut as a unit of its own.
_DEFINITIONS = frozenset(
    {
        "function_definition",
        "class_definition",
        "decorated_definition",
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "method_definition",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "export_statement",
        "method_declaration",
        "type_declaration",
        "function_item",
        "impl_item",
        "struct_item",
        "enum_item",
        "trait_item",
        "mod_item",
        "macro_definition",
        "constructor_declaration",
        "record_declaration",
        "class_specifier",
        "struct_specifier",
        "namespace_definition",
        "template_declaration",
        "method",
        "class",
        "module",
        "singleton_method",
    }
)
# A definition longer than this many lines is cut at the definitions inside it (a class at its methods).
SPLIT_LINES = 60
_LABEL_CHARS = 80


@dataclass(frozen=True)
class Definition:
    """Rows [first, last] (0-based, inclusive) of a unit of code and the definitions it sits in."""

    first: int
    last: int
    path: tuple[str, ...]


def read_code(raw: RawDocument) -> ConvertedDocument:
    """The file's text as it is, titled by its file name (suffix included: `app.py`, not `app`)."""
    notes: list[str] = []
    text = decode_text(raw.data, raw.label, raw.charset, notes)
    name = named_file(raw.uri).name if raw.uri else ""
    doc = convert_plain(text, uri=raw.uri, title=name or raw.fallback_title)
    return ConvertedDocument(uri=doc.uri, title=doc.title, segments=doc.segments, notes=tuple(notes))


def is_code(uri: str) -> bool:
    """Whether a document's uri names a source code file (by its suffix)."""
    return named_file(uri).suffix.lower() in GRAMMARS


def definitions(text: str, uri: str) -> list[Definition] | None:
    """The units `text` is cut into at its definitions, in order; None without the grammar (the `code`
    extra not installed), when the caller cuts line windows instead."""
    parser = _parser(named_file(uri).suffix.lower())
    if parser is None:
        return None
    lines = text.split("\n")
    tree = parser.parse(text.encode("utf-8"))
    return _units(tree.root_node.named_children, lines, ())


@cache
def _parser(suffix: str) -> Any:
    grammar = GRAMMARS.get(suffix)
    if grammar is None:
        return None
    try:
        import tree_sitter

        module = importlib.import_module(grammar[0])
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, grammar[1])()))


def _units(nodes: list[Any], lines: list[str], path: tuple[str, ...]) -> list[Definition]:
    """Each definition among `nodes` a unit (with the comments right above it); the rest in runs."""
    units: list[Definition] = []
    pending: list[Any] = []  # comments that may belong to the definition below them
    for node in nodes:
        if node.type == "comment":
            pending.append(node)
            continue
        first, last = _rows(node)
        leading = [c for c in pending if _touches(c, pending, node)]
        for comment in pending[: len(pending) - len(leading)]:
            units.append(Definition(*_rows(comment), path))
        pending = []
        if node.type not in _DEFINITIONS:
            units.append(Definition(first, last, path))
            continue
        start = _rows(leading[0])[0] if leading else first
        label = _label(lines, first, last)
        inner = _inner_definitions(node) if last - first + 1 > SPLIT_LINES else []
        if not inner:
            units.append(Definition(start, last, (*path, label)))
            continue
        head_end = _rows(inner[0])[0] - 1
        units.append(Definition(start, head_end, (*path, label)))
        units += _units(inner, lines, (*path, label))
        tail = _rows(inner[-1])[1] + 1
        if tail <= last:
            units.append(Definition(tail, last, (*path, label)))
    units += [Definition(*_rows(comment), path) for comment in pending]
    return [u for u in units if u.first <= u.last]


def _touches(comment: Any, comments: list[Any], node: Any) -> bool:
    """Whether `comment` is in the unbroken run of comment lines ending right above `node`."""
    below = node
    for other in reversed(comments):
        if _rows(other)[1] + 1 < _rows(below)[0]:
            return False
        if other is comment:
            return True
        below = other
    return False


def _inner_definitions(node: Any, depth: int = 3) -> list[Any]:
    """The definitions (and comments between them) in a definition's body, a few levels down."""
    found: list[Any] = []
    for child in node.named_children:  # a keyword (Python's `class`) shares its name with Ruby's node
        if child.type in _DEFINITIONS or (child.type == "comment" and found):
            found.append(child)
        elif depth > 1 and not found:
            found = _inner_definitions(child, depth - 1)
    while found and found[-1].type == "comment":
        found.pop()
    return found if any(n.type in _DEFINITIONS for n in found) else []


def _rows(node: Any) -> tuple[int, int]:
    first, last = node.start_point[0], node.end_point[0]
    if node.end_point[1] == 0 and last > first:
        last -= 1  # a node ending with its line break ends on the line before
    return first, last


def _label(lines: list[str], first: int, last: int) -> str:
    """The line that names a definition (past decorators and attributes), without its opening brace."""
    for line in lines[first : last + 1]:
        stripped = line.strip()
        if stripped and not stripped.startswith(("@", "#[", "//", "/*", "*", "#")):
            label = stripped.rstrip("{:( ").strip()
            return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1].rstrip() + "…"
    return lines[first].strip()[:_LABEL_CHARS]


def _not_typescript(head: bytes) -> str | None:
    """What a `.ts` file holds when it is not TypeScript: an MPEG transport stream (video) or other bytes."""
    # A transport stream is 188-byte packets, each opening with the sync byte 0x47.
    packets = head[: _PACKET * 3 : _PACKET]
    if head[:1] == b"\x47" and len(head) > _PACKET and packets == b"\x47" * len(packets):
        return "an MPEG transport stream (video), not TypeScript"
    return "binary data, not TypeScript" if looks_binary(head) else None


def _read_typescript(raw: RawDocument) -> ConvertedDocument:
    other = _not_typescript(raw.data[:SNIFF_BYTES])
    if other is not None:
        raise ConversionError(f"{raw.label}: unsupported: {other}")
    return read_code(raw)


_PACKET = 188
# Suffixes video shares with TypeScript (MPEG transport streams, AVCHD): their files are sniffed first.
_SHARED_WITH_VIDEO = (".ts", ".mts")

CONVERTER = Converter(
    name="code",
    read=read_code,
    suffixes=tuple(s for s in GRAMMARS if s not in _SHARED_WITH_VIDEO),
    media_types=(
        "text/x-python",
        "text/javascript",
        "application/javascript",
        "text/x-go",
        "text/x-rust",
        "text/x-java",
        "text/x-c",
        "text/x-c++",
        "text/x-ruby",
        "application/x-sh",
        "text/x-shellscript",
    ),
    text=True,
)
TYPESCRIPT = Converter(
    name="typescript",
    read=_read_typescript,
    suffixes=_SHARED_WITH_VIDEO,
    media_types=("application/typescript",),
    text=True,
    mistaken=_not_typescript,
)

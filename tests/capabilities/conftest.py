"""Real databases for capability, agent and ask tests: `notes` and `papers`, configured by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from haiku_cli.config.settings import Settings
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store.location import Location
from tests.conftest import fill

NOTES = [
    {"text": "The capital of France is Paris. It lies on the river Seine.", "title": "France"},
    {"text": "Basil grows best in warm weather with at least six hours of sun.", "title": "Gardening"},
]
PAPERS = [
    {"text": "Photosynthesis converts light energy into chemical energy in chloroplasts.", "title": "Plants"},
    {"text": "The mitochondrion is the powerhouse of the cell, producing ATP.", "title": "Cells"},
]


@pytest.fixture(scope="session")
def kb_template(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """`notes` and `papers` built once per session with the real embedder; tests get copies."""
    root = tmp_path_factory.mktemp("kb")
    ws = Workspace(Settings(), embedder=embedder)
    for name, docs in (("notes", NOTES), ("papers", PAPERS)):
        fill(ws, Location(name, str(root / f"{name}.lancedb")), docs)
    return root


@pytest.fixture
def kb(kb_template: Path, tmp_path: Path, write_config, workspace) -> Workspace:
    """A workspace whose config lists private copies of the two real databases."""
    lines = ["[databases]"]
    for name in ("notes", "papers"):
        target = tmp_path / f"{name}.lancedb"
        shutil.copytree(kb_template / f"{name}.lancedb", target)
        lines.append(f'{name} = "{target}"')
    write_config("\n".join(lines) + "\n")
    return workspace()

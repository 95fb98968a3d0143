"""The MCP picture tool: a document's pictures as image content, each after its label; scope unchanged."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.mcp_server.server import build_server
from haiku_cli.mcp_server.tools import ServerScope
from tests.support.pictures import png


@pytest.fixture
def served(tmp_path: Path, write_config, workspace) -> tuple[Workspace, str]:
    """`figs` (a document with a picture) in scope and `other` (the same) configured but not served."""
    write_config(
        f'[databases]\nfigs = "{tmp_path / "figs.lancedb"}"\nother = "{tmp_path / "other.lancedb"}"\n'
    )
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "chart.md").write_text("# Chart\n\nRevenue by quarter.\n\n![Revenue bars](chart.png)\n")
    (folder / "chart.png").write_bytes(png(64, 48))
    ws = workspace()
    ids = []
    for name in ("figs", "other"):
        report = anyio.run(
            lambda name=name: operations.add_sources(
                ws, ws.select_one([name]), [str(folder)], title=None, metadata={}
            )
        )
        ids.append(report.outcomes[0].document_id)
    return ws, ids[0]


def call(ws: Workspace, *calls: tuple[str, dict]) -> list:
    async def go() -> list:
        async with Client(build_server(ServerScope(ws, ws.select_many(["figs"])))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_get_pictures_returns_each_picture_as_image_content_after_its_label(served) -> None:
    ws, doc_id = served
    got, document, outside, unknown = call(
        ws,
        ("get_pictures", {"database": "figs", "document_id": doc_id}),
        ("get_document", {"database": "figs", "document_id": doc_id}),
        ("get_pictures", {"database": "other", "document_id": doc_id}),
        ("get_pictures", {"database": "figs", "document_id": doc_id, "references": ["image-9"]}),
    )
    assert not got.is_error
    label, image = got.content
    assert label.type == "text" and "Revenue bars" in label.text and 'reference="image-1"' in label.text
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == png(64, 48)
    assert got.structured_content is None  # the bytes are sent once, as the image
    listed = document.structured_content["pictures"]
    assert [(p["reference"], p["caption"]) for p in listed] == [("image-1", "Revenue bars")]
    assert outside.is_error and "unknown database 'other'" in outside.content[0].text
    assert unknown.is_error and "no picture image-9" in unknown.content[0].text
    assert json.dumps(listed)  # metadata only in get_document

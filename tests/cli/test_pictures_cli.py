"""Pictures for users: `get` lists them, `pictures --out` writes them, `visualize` draws a chunk's page,
`ask` sends them to the model and lists those of its citations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from haiku_cli.errors import ExitCode
from tests.cli.openai_stub import answer, tool_call
from tests.cli.test_ask_command import openai_env
from tests.support.pictures import pdf_with_images

__all__ = ["openai_env"]  # a fixture: a scripted OpenAI-compatible server

PAGES = [
    "Measuring recall of hybrid retrieval.\n\n\n\n\n\n\n\n\nFigure 1: Recall by method",
    "Latency grows with the candidate pool size.",
]


@pytest.fixture
def paper(cli, tmp_path: Path) -> str:
    """A PDF with a figure on each page, added to the default database; its document id."""
    path = tmp_path / "paper.pdf"
    path.write_bytes(pdf_with_images(PAGES, [(0, (72, 610, 120, 80), "red"), (1, (72, 400, 64, 64), "blue")]))
    added = cli("add-src", str(path), "--json")
    assert added.exit_code == 0, added.stderr
    return json.loads(added.stdout)["outcomes"][0]["document_id"]


def test_search_shows_the_pictures_a_hit_covers(cli, paper: str) -> None:
    found = cli("search", "recall by method")
    assert "picture p1-1: Figure 1: Recall by method" in found.stdout
    hits = json.loads(cli("search", "recall by method", "--json").stdout)["hits"]
    assert {"reference": "p1-1", "caption": "Figure 1: Recall by method"} in hits[0]["pictures"]


def test_get_lists_a_documents_pictures(cli, paper: str) -> None:
    shown = cli("get", paper)
    assert shown.exit_code == 0, shown.stderr
    assert "pictures: 2" in shown.stdout
    assert "p1-1  p. 1  120x80 png" in shown.stdout and "Figure 1: Recall by method" in shown.stdout
    listed = json.loads(cli("get", paper, "--json").stdout)["pictures"]
    assert [(p["reference"], p["page"], p["box"]) for p in listed] == [
        ("p1-1", 1, [72.0, 610.0, 192.0, 690.0]),
        ("p2-1", 2, [72.0, 400.0, 136.0, 464.0]),
    ]
    assert "data" not in listed[0]
    info = json.loads(cli("info", "--json").stdout)
    assert info["pictures"] == 2 and "pictures" in info["versions"]
    assert "pictures" in cli("info").stdout


def test_pictures_writes_them_to_a_folder(cli, paper: str, tmp_path: Path) -> None:
    out = tmp_path / "figs"
    written = cli("pictures", paper, "--out", str(out))
    assert written.exit_code == 0, written.stderr
    assert sorted(p.name for p in out.iterdir()) == ["p1-1.png", "p2-1.png"]
    assert Image.open(out / "p1-1.png").size == (120, 80)
    assert f"{out / 'p1-1.png'}  Figure 1: Recall by method" in written.stdout
    as_json = json.loads(cli("pictures", paper, "--out", str(out), "--json").stdout)
    assert [p["path"] for p in as_json["pictures"]] == [str(out / "p1-1.png"), str(out / "p2-1.png")]
    (tmp_path / "a-file").write_text("x")
    refused = cli("pictures", paper, "--out", str(tmp_path / "a-file"))
    assert refused.exit_code == ExitCode.INPUT and "is a file" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_visualize_draws_the_chunks_page_with_its_text_highlighted(cli, paper: str, tmp_path: Path) -> None:
    chunks = json.loads(cli("get", paper, "--json").stdout)["chunks"]
    first = next(c for c in chunks if 1 in c["pages"])
    out = tmp_path / "drawn"
    drawn = cli("visualize", first["id"], "--out", str(out))
    assert drawn.exit_code == 0, drawn.stderr
    path = out / f"{first['id'][:8]}-p1.png"
    assert str(path) in drawn.stdout and " of the chunk's " in drawn.stdout  # not the page's lines
    image = Image.open(path).convert("RGB")
    assert image.size == (1224, 1584)  # US letter at 144 dpi
    # The first line of text sits at 720 pt from the bottom: its box is yellow now, the margin still white.
    y = (792 - 724) * 2
    row = [image.getpixel((x, y)) for x in range(150, 400)]
    assert any(r > 200 and g > 180 and b < 150 for r, g, b in row)
    assert image.getpixel((20, 20)) == (255, 255, 255)
    as_json = json.loads(cli("visualize", first["id"], "--out", str(out), "--json").stdout)
    assert as_json["pages"][0]["page"] == 1 and as_json["pages"][0]["lines_found"] >= 1


def test_visualize_refuses_a_chunk_that_is_not_from_a_pdf(cli, tmp_path: Path) -> None:
    added = json.loads(cli("add", "Plain text without pages.", "--json").stdout)
    chunk = json.loads(cli("get", added["outcomes"][0]["document_id"], "--json").stdout)["chunks"][0]
    refused = cli("visualize", chunk["id"], "--out", str(tmp_path))
    assert refused.exit_code == ExitCode.INPUT
    assert "only chunks of PDFs added from a local file can be drawn" in refused.stderr
    missing = cli("visualize", "not-a-chunk")
    assert missing.exit_code == ExitCode.INPUT
    assert "no chunk with id or id prefix 'not-a-chunk'" in missing.stderr


def _figure_question(body: dict) -> tuple[int, dict]:
    """Search for the figure, cite the first result, answer."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turn == 0:
        return tool_call("search", {"query": "recall by method figure"})
    if turn == 1:
        tool = next(m for m in body["messages"] if m["role"] == "tool")
        text = tool["content"] if isinstance(tool["content"], str) else json.dumps(tool["content"])
        return tool_call("cite", {"chunk_ids": re.findall(r"\[([0-9a-f-]{36})\]", text)[:1]}, "call_2")
    return answer("Figure 1 shows recall by method [1].")


def test_ask_sends_the_figure_to_the_model_and_lists_it_with_its_citation(
    cli, paper: str, openai_env
) -> None:
    stub = openai_env(_figure_question)
    result = cli("ask", "What does figure 1 show?", "--model", "openai-chat:test", "--json")
    assert result.exit_code == 0, result.stderr
    [citation] = json.loads(result.stdout)["citations"]
    assert {"reference": "p1-1", "caption": "Figure 1: Recall by method"} in citation["pictures"]
    # On the wire (OpenAI chat completions): the tagged label in the tool result, the image as a data URL.
    wire = json.dumps(stub.requests[1]["messages"])
    assert "haiku-picture database=" in wire and "data:image/png;base64," in wire
    shown = cli("ask", "What does figure 1 show?", "--model", "openai-chat:test")
    assert "picture p1-1: Figure 1: Recall by method" in shown.stdout


def test_alt_text_is_searchable(cli, tmp_path: Path) -> None:
    from tests.support.pictures import png

    (tmp_path / "bird.png").write_bytes(png())
    (tmp_path / "notes.md").write_text(
        "# Garden notes\n\nWe saw a visitor today.\n\n![A kookaburra on the fence](bird.png)\n"
    )
    assert cli("add-src", str(tmp_path / "notes.md")).exit_code == 0
    hits = json.loads(cli("search", "kookaburra", "--type", "fts", "--json").stdout)["hits"]
    assert [h["document_title"] for h in hits] == ["Garden notes"]
    assert hits[0]["pictures"] == [{"reference": "image-1", "caption": "A kookaburra on the fence"}]


def test_an_image_a_markdown_file_shows_is_not_counted_as_left_out(cli, tmp_path: Path) -> None:
    from tests.support.pictures import gif

    folder = tmp_path / "garden"
    (folder / "img").mkdir(parents=True)
    # GIF: not a document of its own (PNG and JPEG files are, read by OCR).
    (folder / "img" / "bird one.gif").write_bytes(gif())
    (folder / "photo.gif").write_bytes(gif())  # shown by no document: still left out
    (folder / "notes.md").write_text("# Garden notes\n\n![A kookaburra](img/bird%20one.gif)\n")
    for status in ("added", "unchanged"):  # a re-add reads the pictures the unchanged document stored
        result = cli("add-src", str(folder), "--json")
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert [o["status"] for o in report["outcomes"]] == [status]
        assert [o["source"] for o in report["left_out"]] == [str(folder / "photo.gif")]
    assert "left out: 1 unsupported (.gif 1)" in cli("add-src", str(folder)).stderr

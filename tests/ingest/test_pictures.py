"""Pictures found while converting: PDF image objects and scanned pages, DOCX, Markdown and HTML links."""

from __future__ import annotations

import base64
from pathlib import Path

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.store.markers import picture_refs
from tests.support.pictures import docx_with_image, pdf_with_images, png, png_bomb


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def test_pdf_images_keep_their_page_and_box_and_sit_before_their_caption(tmp_path: Path) -> None:
    pages = ["Results in prose.\n\n\n\n\n\n\n\n\n\nFigure 1: Recall against latency", "Second page text."]
    data = pdf_with_images(pages, [(0, (72, 560, 120, 80), "red"), (1, (72, 400, 64, 64), "green")])
    doc = convert_file(write(tmp_path, "paper.pdf", data))
    first, second = doc.pictures
    assert (first.reference, first.page, first.box) == ("p1-1", 1, (72.0, 560.0, 192.0, 640.0))
    assert (first.width, first.height, first.format) == (120, 80, "png")
    assert first.caption == "Figure 1: Recall against latency"  # the caption line right after it
    assert second.page == 2 and second.caption == ""
    page_one = doc.segments[0].text
    # The marker sits between the prose above the image and the caption below it, so they share a chunk.
    assert (
        page_one.index("Results in prose.") < page_one.index("(picture:p1-1)") < page_one.rindex("Figure 1")
    )
    assert picture_refs(doc.segments[1].text) == ["p2-1"]
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(first.data)).getpixel((100, 70)) == (255, 0, 0)


def test_a_page_without_text_is_kept_as_a_render_and_a_scanned_pdf_is_added(tmp_path: Path) -> None:
    data = pdf_with_images(["Typed page.", ""], [(1, (0, 0, 612, 792), "gray")])
    doc = convert_file(write(tmp_path, "mixed.pdf", data))
    assert [(p.reference, p.source) for p in doc.pictures] == [("p2-scan", "page render")]
    assert "which has no text layer](picture:p2-scan)" in doc.segments[1].text
    # A PDF of scans alone used to be refused ("no text layer"): its pages are kept as pictures now.
    scanned = convert_file(
        write(tmp_path, "scan.pdf", pdf_with_images([""], [(0, (0, 0, 612, 792), "gray")]))
    )
    assert [p.reference for p in scanned.pictures] == ["p1-scan"]


def test_docx_inline_images_with_their_alt_text(tmp_path: Path) -> None:
    doc = convert_file(write(tmp_path, "report.docx", docx_with_image(png(), "Pipeline diagram")))
    (picture,) = doc.pictures
    assert (picture.reference, picture.caption, picture.format) == ("image-1", "Pipeline diagram", "png")
    assert doc.text.endswith("![Pipeline diagram](picture:image-1)")


def test_markdown_images_beside_the_file_and_data_uris_are_stored(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    write(tmp_path, "img/chart.png", png(80, 60))
    inline = base64.b64encode(png(40, 40, "green")).decode()
    text = (
        "# Notes\n\nThe chart: ![Sales chart](img/chart.png)\n\n![gone](img/missing.png)\n\n"
        "```\n![in code](img/chart.png)\n```\n\n"
        f"![Inline dot](data:image/png;base64,{inline})\n\n![broken](data:image/png;base64,AAAA)\n"
    )
    doc = convert_file(write(tmp_path, "notes.md", text))
    assert [(p.reference, p.caption, p.source) for p in doc.pictures] == [
        ("image-1", "Sales chart", "img/chart.png"),
        ("image-3", "Inline dot", "data: URI"),
    ]
    assert "![Sales chart](picture:image-1)" in doc.text
    assert "![in code](img/chart.png)" in doc.text  # code is left alone
    assert "base64" not in doc.text and "broken" in doc.text  # an unreadable data: image leaves its alt text
    assert any("image-2 skipped" in n and "no such file" in n for n in doc.notes)
    assert any("image-4 skipped" in n for n in doc.notes)


def test_html_images_of_a_local_page(tmp_path: Path) -> None:
    write(tmp_path, "fig.png", png())
    inline = base64.b64encode(png(32, 32, "green")).decode()
    html = (
        '<title>Page</title><p>Intro.</p><img src="fig.png" alt="Figure">'
        f'<img src="data:image/png;base64,{inline}">'
    )
    doc = convert_file(write(tmp_path, "page.html", html))
    assert [p.reference for p in doc.pictures] == ["image-1", "image-2"]
    assert "base64" not in doc.text


def test_limits_corrupt_and_bomb_images_are_skipped_with_a_note_and_the_document_kept(tmp_path: Path) -> None:
    for i in range(3):
        write(tmp_path, f"p{i}.png", png(40, 40))
    write(tmp_path, "bomb.png", png_bomb(60_000, 60_000))  # 10 GB of pixels once decoded
    write(tmp_path, "bad.png", b"\x89PNG\r\n\x1a\n garbage")
    write(tmp_path, "big.png", png(400, 300))
    text = "# Doc\n\n" + " ".join(f"![]({n}.png)" for n in ("bomb", "bad", "big", "p0", "p1", "p2"))
    limits = IngestSettings(max_pictures=3, max_picture_pixels=30_000)
    doc = convert_file(write(tmp_path, "many.md", text), limits)
    assert [p.reference for p in doc.pictures] == ["image-3", "image-4", "image-5"]
    big = doc.pictures[0]
    assert big.width * big.height <= 30_000 and big.width / big.height == 400 / 300  # scaled, same shape
    notes = "\n".join(doc.notes)
    assert "image-1 skipped: declares" in notes and "too many pixels" in notes
    assert "image-2 skipped" in notes
    assert "1 more picture(s) not stored, over the limit of 3" in notes


def test_pictures_off_by_limit(tmp_path: Path) -> None:
    data = pdf_with_images(["Text."], [(0, (72, 500, 100, 100), "red")])
    doc = convert_bytes(data, uri="", content_type="application/pdf", limits=IngestSettings(max_pictures=0))
    assert doc.pictures == () and "picture:" not in doc.text


def test_tiles_and_repeated_logos_do_not_crowd_out_a_real_figure(tmp_path: Path) -> None:
    # As some PDFs paint a page: many 16x16 tiles first (more than max_pictures), a figure after them.
    tiles = [(0, (10 + 8 * (i % 60), 10 + 8 * (i // 60), 16, 16), "red") for i in range(150)]
    logos = [(page, (500, 740, 40, 40), "green") for page in range(3)]
    figure = [(1, (72, 400, 120, 80), "blue")]
    data = pdf_with_images(["Tiles.", "Figure 1: Throughput", "Last page."], tiles + logos + figure)
    doc = convert_file(write(tmp_path, "tiled.pdf", data), IngestSettings(max_pictures=100))
    assert [(p.reference, p.width, p.height) for p in doc.pictures] == [("p1-151", 40, 40), ("p2-2", 120, 80)]
    notes = "\n".join(doc.notes)
    assert "150 small and 2 repeated image(s) skipped" in notes
    assert "over the limit" not in notes

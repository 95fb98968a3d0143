"""E-books and mail, on files the tests write with zipfile and the email library."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from haiku_cli.ingest.convert import convert_bytes, convert_file
from haiku_cli.ingest.document import ConversionError


def _epub(chapters: list[tuple[str, str]], title: str = "The Lantern Book") -> bytes:
    """An EPUB whose spine lists (file name, body HTML) chapters in the given order; the manifest lists
    them reversed, so only the spine gives the reading order."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?>'
            '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items = "".join(
            f'<item id="c{i}" href="text/{name}" media-type="application/xhtml+xml"/>'
            for i, (name, _) in reversed(list(enumerate(chapters)))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        book.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for name, body in chapters:
            book.writestr(
                f"OEBPS/text/{name}", f"<html><head><title>{name}</title></head><body>{body}</body></html>"
            )
    return out.getvalue()


def test_chapters_are_sections_in_spine_order(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    path.write_bytes(
        _epub(
            [
                ("one.xhtml", "<h1>Lighting</h1><p>Wicks burn slowly.</p>"),
                ("two.xhtml", "<p>A chapter without a heading.</p>"),
                ("three.xhtml", "<h1>Oil</h1><p>Whale oil was common.</p>"),
            ]
        )
    )
    doc = convert_file(path)
    assert doc.title == "The Lantern Book"
    assert doc.text == (
        "# Lighting\n\nWicks burn slowly.\n\n"
        "# two.xhtml\n\nA chapter without a heading.\n\n"
        "# Oil\n\nWhale oil was common."
    )


def test_a_broken_epub_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
    path.write_bytes(out.getvalue())
    with pytest.raises(ConversionError, match=r"book\.epub: corrupt EPUB \(KeyError\)$"):
        convert_file(path)


def _message(subject: str, body: str, attachments: list[tuple[str, bytes]] = ()) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "Ada <ada@example.com>"
    message["To"] = "grace@example.com"
    message["Date"] = "Mon, 01 Jun 2026 10:00:00 +0000"
    message.set_content(body)
    for name, data in attachments:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message


def test_a_message_is_titled_by_its_subject_with_its_headers_body_and_attachments(tmp_path: Path) -> None:
    path = tmp_path / "note.eml"
    attachments = [("minutes.md", b"# Minutes\n\nWe agreed on oil."), ("photo.bin", b"\x00\x01")]
    path.write_bytes(_message("Lantern budget", "Please see the minutes.", attachments).as_bytes())
    doc = convert_file(path)
    assert doc.title == "Lantern budget"
    assert doc.text == (
        "# Lantern budget\n\n"
        "From: Ada <ada@example.com>  \nTo: grace@example.com  \nDate: Mon, 01 Jun 2026 10:00:00 +0000\n\n"
        "Please see the minutes.\n\n"
        "Attachments: minutes.md, photo.bin"
    )
    assert doc.metadata == {
        "from": "Ada <ada@example.com>",
        "to": "grace@example.com",
        "date": "2026-06-01T10:00:00+00:00",
    }
    (minutes,) = doc.children
    assert (minutes.uri, minutes.title, minutes.text) == (
        f"{path.as_uri()}#attachment/minutes.md",
        "Minutes",
        "# Minutes\n\nWe agreed on oil.",
    )
    assert doc.notes == (f"{path}: 1 attachment left out, not in a format haiku reads: photo.bin",)


def test_an_html_mail_body_is_read_as_text() -> None:
    message = _message("Hello", "plain fallback")
    message.add_alternative("<p>Rich <b>hello</b></p>", subtype="html")
    message.replace_header("Subject", "Hi")
    doc = convert_bytes(message.as_bytes(), uri="file:///m.eml", content_type="message/rfc822")
    assert "plain fallback" in doc.text  # plain text is preferred when both are sent


def test_a_mailbox_lists_its_messages_each_a_document_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "inbox.mbox"
    first = _message("First", "From the start.\n\nFrom here on it is quoted.").as_bytes()
    second = _message("Second", "Another one.").as_bytes()
    quoted = first.replace(b"\nFrom here", b"\n>From here")
    path.write_bytes(
        b"From ada@example.com Mon Jun  1 10:00:00 2026\n"
        + quoted
        + b"\n"
        + b"From x Mon Jun  1 11:00:00 2026\n"
        + second
    )
    doc = convert_file(path)
    assert doc.title == "inbox"
    assert "1. First · Ada <ada@example.com> · 2026-06-01T10:00:00+00:00" in doc.text
    assert [(c.uri.rpartition("#")[2], c.title) for c in doc.children] == [
        ("message/1", "First"),
        ("message/2", "Second"),
    ]
    assert "From the start.\n\nFrom here on it is quoted." in doc.children[0].text


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("junk.eml", b"just some words, no headers at all\n", "not an e-mail message"),
        ("junk.mbox", b"Subject: no separator\n\nbody\n", "not an mbox mailbox"),
    ],
)
def test_malformed_mail_is_refused_with_one_line(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ConversionError) as caught:
        convert_file(path)
    assert str(caught.value).startswith(f"{path}: {reason}") and "\n" not in str(caught.value)


def test_attached_code_and_duplicate_names_are_documents_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "review.eml"
    code = b"def add(a, b):\n    return a + b\n"
    attachments = [("tool.py", code), ("notes.md", b"# One\n\nfirst"), ("notes.md", b"# Two\n\nsecond")]
    path.write_bytes(_message("Review", "Two versions of the notes.", attachments).as_bytes())
    doc = convert_file(path)
    assert [(c.uri.rpartition("#")[2], c.title) for c in doc.children] == [
        ("attachment/tool.py", "tool.py"),  # code is titled by its file name, as a file of its own is
        ("attachment/notes.md", "One"),
        ("attachment/3-notes.md", "Two"),
    ]

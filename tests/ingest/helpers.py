"""Builders for small, valid test documents (PDF written by hand, DOCX through python-docx)."""

from __future__ import annotations

import io
import zlib


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("cp1252") + b")"


def make_pdf(
    pages: list[str],
    *,
    title: str | None = None,
    bookmarks: list[tuple[str, int]] | None = None,
    sizes: dict[tuple[int, int], float] | None = None,
    padding: int = 0,
    font: bytes = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
) -> bytes:
    """A PDF with one page per string (lines set in Helvetica), an optional title and top-level bookmarks.

    `bookmarks` are (title, 0-based page index) pairs; `sizes` maps (page, line) indexes to a font size
    other than the 12 points every other line is set in. `padding`: that many spaces end each page's
    content, which is then Flate-compressed (a stream that inflates to far more than it takes).
    `font`: the dictionary of the one font every line is set in.
    """
    objects: dict[int, bytes] = {}
    font_id, info, outlines = 3, 4, 5
    next_id = 6
    page_ids = []
    for page_index, text in enumerate(pages):
        page_id, content_id = next_id, next_id + 1
        next_id += 2
        page_ids.append(page_id)
        ops = [b"BT 72 740 Td"]
        for i, line in enumerate(text.split("\n")):
            size = (sizes or {}).get((page_index, i), 12)
            ops.append(b"/F1 %g Tf %g TL T* " % (size, size * 1.2) + _pdf_string(line) + b" Tj")
        ops.append(b"ET")
        stream = b"\n".join(ops) if text else b""
        if padding:
            packer = zlib.compressobj(9)
            packed = [packer.compress(stream)]
            for _ in range(padding // (1 << 20)):
                packed.append(packer.compress(b" " * (1 << 20)))
            packed += [packer.compress(b" " * (padding % (1 << 20))), packer.flush()]
            stream = b"".join(packed)
            head = b"<< /Length %d /Filter /FlateDecode >>" % len(stream)
        else:
            head = b"<< /Length %d >>" % len(stream)
        objects[content_id] = head + b"\nstream\n%s\nendstream" % stream
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, content_id)
        )
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    objects[font_id] = font
    objects[info] = b"<< /Title %s /Producer (haiku tests) >>" % _pdf_string(title or "")
    catalog = b"<< /Type /Catalog /Pages 2 0 R"
    if bookmarks:
        item_ids = list(range(next_id, next_id + len(bookmarks)))
        for n, (label, page_index) in enumerate(bookmarks):
            links = b""
            if n > 0:
                links += b" /Prev %d 0 R" % item_ids[n - 1]
            if n + 1 < len(bookmarks):
                links += b" /Next %d 0 R" % item_ids[n + 1]
            objects[item_ids[n]] = b"<< /Title %s /Parent %d 0 R /Dest [%d 0 R /XYZ 0 792 0]%s >>" % (
                _pdf_string(label),
                outlines,
                page_ids[page_index],
                links,
            )
        objects[outlines] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            item_ids[0],
            item_ids[-1],
            len(item_ids),
        )
        catalog += b" /Outlines %d 0 R" % outlines
    else:
        objects[outlines] = b"<< /Type /Outlines /Count 0 >>"
    objects[1] = catalog + b" >>"

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    size = max(objects) + 1
    offsets = [0] * size
    for num in range(1, size):
        offsets[num] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (num, objects[num]))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for num in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[num])
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, info, xref)
    )
    return out.getvalue()


def make_docx(*, title: str | None = None) -> bytes:
    """A DOCX with headings, paragraphs, a bullet list and a table."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.add_heading("Install", level=1)
    document.add_paragraph("Haiku installs with pip.")
    document.add_heading("On Linux", level=2)
    document.add_paragraph("Use a virtual environment.")
    document.add_paragraph("first step", style="List Bullet")
    document.add_paragraph("second step", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "name"
    table.cell(0, 1).text = "value"
    table.cell(1, 0).text = "a|b"
    table.cell(1, 1).text = "2"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def words(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def locked_pdf() -> bytes:
    """A one-page PDF under the standard security handler whose user password is not empty: PDFium
    refuses it with its password error, as any password-protected PDF."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Filter /Standard /V 1 /R 2 /O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> /P -4 >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Encrypt 4 0 R /ID [<%s> <%s>] >>\n" % (
        len(objects) + 1,
        b"33" * 16,
        b"33" * 16,
    )
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)

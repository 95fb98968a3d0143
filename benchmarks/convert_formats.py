"""What converting each format costs: CPU-s per file and MB/CPU-s of made documents, best of rounds.

python benchmarks/convert_formats.py [--files 200] [--rounds 5] [--formats markdown,text,html] [--json]

Writes `--files` small documents of each format into a temporary folder (Markdown, plain text, HTML,
CSV, XLSX, PPTX, EPUB, EML, Python) and converts each set `--rounds` times as `add-src` does
(convert_file). Run it on two checkouts to compare them: the formats both have keep their speed.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
import zipfile
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

from haiku_cli.ingest.convert import convert_file

_PARA = "Lanterns burn oil; the wick is trimmed daily and the glass cleaned of soot. " * 8


def _markdown(i: int) -> bytes:
    return (f"# Doc {i}\n\n" + "\n\n".join(f"## Part {j}\n\n{_PARA}" for j in range(10))).encode()


def _html(i: int) -> bytes:
    body = "".join(f"<h2>Part {j}</h2><p>{_PARA}</p>" for j in range(10))
    return f"<html><head><title>Doc {i}</title></head><body>{body}</body></html>".encode()


def _csv(i: int) -> bytes:
    return (
        "name,role,notes\n" + "".join(f"person {j},role {j % 7},{_PARA[:60]}\n" for j in range(60))
    ).encode()


def _xlsx(i: int) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    for j in range(60):
        book.active.append([f"person {j}", j, _PARA[:60]])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pptx(i: int) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for j in range(10):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {j}"
        slide.placeholders[1].text_frame.text = _PARA
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _epub(i: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="content.opf"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{j}" href="c{j}.xhtml" media-type="application/xhtml+xml"/>' for j in range(10)
        )
        spine = "".join(f'<itemref idref="c{j}"/>' for j in range(10))
        book.writestr(
            "content.opf",
            f'<package xmlns="http://www.idpf.org/2007/opf"><manifest>{items}</manifest><spine>{spine}</spine></package>',
        )
        for j in range(10):
            book.writestr(f"c{j}.xhtml", f"<html><body><h1>Chapter {j}</h1><p>{_PARA}</p></body></html>")
    return out.getvalue()


def _eml(i: int) -> bytes:
    message = EmailMessage()
    message["Subject"], message["From"], message["To"] = f"Note {i}", "a@example.com", "b@example.com"
    message.set_content("\n\n".join([_PARA] * 10))
    return message.as_bytes()


def _python(i: int) -> bytes:
    funcs = "\n\n\n".join(
        f"def f{j}(x: int) -> int:\n    '''{_PARA[:70]}'''\n    return x + {j}" for j in range(20)
    )
    return f"import os\n\n\n{funcs}\n\n\nclass C{i}:\n    pass\n".encode()


FORMATS: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "markdown": (".md", _markdown),
    "text": (".txt", lambda i: _PARA.encode() * 10),
    "html": (".html", _html),
    "csv": (".csv", _csv),
    "xlsx": (".xlsx", _xlsx),
    "pptx": (".pptx", _pptx),
    "epub": (".epub", _epub),
    "eml": (".eml", _eml),
    "python": (".py", _python),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--formats", default=",".join(FORMATS), help="comma-separated (an older checkout: the ones it has)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.formats.split(","):
            suffix, make = FORMATS[name]
            paths = []
            for i in range(args.files):
                path = Path(tmp) / f"{name}{i}{suffix}"
                path.write_bytes(make(i))
                paths.append(path)
            size = sum(p.stat().st_size for p in paths)
            best = float("inf")
            for _ in range(args.rounds):
                start = time.process_time()
                for path in paths:
                    convert_file(path)
                best = min(best, time.process_time() - start)
            result[name] = {
                "ms_per_file": round(1000 * best / len(paths), 3),
                "mb_per_cpu_s": round(size / 2**20 / best, 2),
            }
    if args.json:
        print(json.dumps(result))
    else:
        for name, figures in result.items():
            print(f"{name:9} {figures['ms_per_file']:8.3f} ms/file  {figures['mb_per_cpu_s']:8.2f} MB/CPU-s")


if __name__ == "__main__":
    main()

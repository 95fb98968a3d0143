"""OCR against the text layer, and what reading text-layer PDFs costs with the OCR code in place.

    python benchmarks/ocr.py [--data ../shared/data/pdfs] [--pages 8] [--rounds 3] [--baseline-src DIR]

Recall: pages of real PDFs that carry a good text layer (Latin script, at least 400 characters) are
rendered as the converter renders a scan (200 dpi, at most 2,000 px a side) and read by OCR; a page's
recall is the share of its text-layer words (lower case, letters and digits, two or more characters,
counted with repeats) that OCR found too. CPU-s per page counts every thread of this process (onnxruntime's).

Text layer: every PDF of the folder whose pages all have text is converted `--rounds` times as `add-src`
does; `--baseline-src` runs the same in a subprocess against another source tree (e.g. main's, from
`git archive main | tar -x -C DIR`), for a before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"[^\W_]{2,}")
_MIN_CHARS = 400


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(c.isascii() for c in letters) >= 0.9 * len(letters)


def _text_pages(data: Path, limit: int) -> list[tuple[Path, int, str]]:
    """Up to `limit` pages with a good text layer, at most two from any one PDF, in file order."""
    import pypdfium2 as pdfium

    from haiku_cli.ingest.convert.garbled import unreadable

    found: list[tuple[Path, int, str]] = []
    for path in sorted(data.glob("*.pdf")):
        try:
            pdf = pdfium.PdfDocument(path)
        except pdfium.PdfiumError:
            continue
        taken = 0
        for index in range(len(pdf)):
            textpage = pdf[index].get_textpage()
            text = textpage.get_text_range()
            textpage.close()
            if len(text.strip()) >= _MIN_CHARS and _latin(text) and not unreadable(text):
                found.append((path, index, text))
                taken += 1
            if taken == 2 or len(found) == limit:
                break
        pdf.close()
        if len(found) == limit:
            break
    return found


def recall(data: Path, limit: int) -> dict[str, Any]:
    import pypdfium2 as pdfium

    from haiku_cli.ingest.convert import pdf_scans
    from haiku_cli.ingest.convert.ocr import read_picture

    read_picture(pdf_scans._render(pdfium.PdfDocument(_text_pages(data, 1)[0][0]), 0), 60)  # loads the models
    pages = []
    for path, index, text in _text_pages(data, limit):
        pdf = pdfium.PdfDocument(path)
        image = pdf_scans._render(pdf, index)
        start = time.process_time()
        read = read_picture(image, 600)
        cpu = time.process_time() - start
        pdf.close()
        want, got = _words(text), _words("\n".join(read.lines))
        found = sum(min(n, got[w]) for w, n in want.items())
        total = sum(want.values())
        pages.append(
            {
                "pdf": path.name,
                "page": index + 1,
                "words": total,
                "recall": round(found / total, 4),
                "cpu_s": round(cpu, 2),
                "pixels": f"{image.width}x{image.height}",
            }
        )
    words = sum(p["words"] for p in pages)
    return {
        "pages": pages,
        "word_recall": round(sum(p["recall"] * p["words"] for p in pages) / words, 4),
        "page_recall_min": min(p["recall"] for p in pages),
        "cpu_s_per_page": round(sum(p["cpu_s"] for p in pages) / len(pages), 2),
    }


def text_layer(data: Path, rounds: int) -> dict[str, Any]:
    """CPU-s to convert the PDFs whose every page has text, `rounds` times."""
    import pypdfium2 as pdfium

    from haiku_cli.ingest.convert import convert_file
    from haiku_cli.ingest.document import ConversionError

    paths = []
    for path in sorted(data.glob("*.pdf")):
        try:
            pdf = pdfium.PdfDocument(path)
        except pdfium.PdfiumError:
            continue
        if all(pdf[i].get_textpage().get_text_range().strip() for i in range(len(pdf))):
            paths.append(path)
        pdf.close()
    pages = 0
    start = time.process_time()
    for _ in range(rounds):
        for path in paths:
            try:
                pages += len(convert_file(path).segments)
            except ConversionError:
                continue
    cpu = time.process_time() - start
    return {
        "pdfs": len(paths),
        "pages": pages // rounds,
        "rounds": rounds,
        "cpu_s": round(cpu, 3),
        "pages_per_cpu_s": round(pages / cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "pdfs")
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, help="another source tree to time text-layer reading in")
    parser.add_argument("--text-layer-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.text_layer_only:
        print(json.dumps(text_layer(args.data, args.rounds)))
        return
    sys.path.insert(0, str(REPO))
    result: dict[str, Any] = {
        "recall": recall(args.data, args.pages),
        "text_layer": text_layer(args.data, args.rounds),
    }
    if args.baseline_src is not None:
        env = {**os.environ, "PYTHONPATH": str(args.baseline_src)}
        # This script again, reading with the other tree's haiku_cli (first on the path).
        command = [sys.executable, __file__, "--text-layer-only", "--data", str(args.data.resolve())]
        done = subprocess.run(
            [*command, "--rounds", str(args.rounds)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=args.baseline_src,
        )
        result["text_layer_baseline"] = json.loads(done.stdout)
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()

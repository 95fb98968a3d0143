"""What reading PDFs with title picking and garbled-page checks costs: pages/s with and without them.

python benchmarks/pdf_reading.py [--data ../shared/data/pdfs] [--rounds 3] [--json]

Writes the area's table to benchmarks/results/pdf.json.

Converts every readable PDF of the folder `--rounds` times as `add-src` does (convert_file), then again
with the two checks switched off (the metadata title taken as it is, no page judged garbled), and prints
pages/s of each and their ratio, with the titles each way.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import DEFAULT_PDFS, result

from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert import pdf as pdf_module
from haiku_cli.ingest.document import ConversionError


def _read_all(paths: list[Path], rounds: int) -> tuple[float, int, dict[str, str | None]]:
    pages, titles = 0, {}
    start = time.process_time()
    for _ in range(rounds):
        for path in paths:
            try:
                doc = convert_file(path)
            except ConversionError:
                continue
            pages += len(doc.segments)
            titles[path.name] = doc.title
    return time.process_time() - start, pages, titles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = sorted(args.data.glob("*.pdf"))
    if not paths:
        raise SystemExit(f"no PDFs in {args.data}")
    with result("pdf", "Reading PDFs") as table:
        found = _measure(paths, args.rounds)
        table.add(
            "PDF reading with title picking and garbled-page checks",
            f"{found['pages_per_cpu_s_checked']} pages/s",
            f"without the checks: {found['pages_per_cpu_s_plain']} pages/s",
            f"{found['cost_ratio']:.2f}x the CPU",
        )
        pages = f"{found['pdfs']} real PDFs, {found['pages']} pages"
        table.notes = f"{pages}, CPU time of the conversion (pictures included)."
    if args.json:
        print(json.dumps(found, ensure_ascii=False))
        return
    _print(found, args.rounds)


def _measure(paths: list[Path], rounds: int) -> dict:
    checked_cpu, pages, checked = _read_all(paths, rounds)
    # The same reads without the checks: metadata title as given, every page read as text.
    pdf_module.unreadable = lambda text: False
    pdf_module.pick_title = lambda metadata, first_page, font_title: metadata or None
    pdf_module._largest_type = lambda pdf, index: None
    plain_cpu, _, plain = _read_all(paths, rounds)
    return {
        "pdfs": len(checked),
        "pages": pages // rounds,
        "rounds": rounds,
        "pages_per_cpu_s_checked": round(pages / checked_cpu, 1),
        "pages_per_cpu_s_plain": round(pages / plain_cpu, 1),
        "cost_ratio": round(checked_cpu / plain_cpu, 3),
        "titles": {name: {"checked": checked[name], "metadata": plain.get(name)} for name in checked},
    }


def _print(result: dict, rounds: int) -> None:
    print(f"{result['pdfs']} PDFs, {result['pages']} pages, {rounds} rounds (CPU time)")
    print(f"  with title picking and garbled-page checks: {result['pages_per_cpu_s_checked']} pages/s")
    print(f"  without:                                     {result['pages_per_cpu_s_plain']} pages/s")
    print(f"  cost ratio: {result['cost_ratio']}")
    for name, t in result["titles"].items():
        print(f"  {name}: {t['checked']!r}  (metadata: {t['metadata']!r})")


if __name__ == "__main__":
    main()

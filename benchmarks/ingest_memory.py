"""Peak memory of one `haiku add-src` process on big and hostile single files.

Each case runs `python -m haiku_cli add-src FILE --db DIR --json` in a fresh process and reads its peak
resident set size from the kernel (os.wait4), with its wall time and exit code:
(a) plain text files of a few MB (within the limits) to show how memory grows with what is indexed;
(b) a 200 MB text file at the default limits (refused before it is read);
(c) DOCX decompression bombs (a few hundred KB on disk, tens of MB of XML inside), refused by the limits,
    and each converted alone (no embedding) with the limits raised, to show what the limit saves.

    python benchmarks/ingest_memory.py [--text-mb 1,4] [--big-mb 200] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

WORDS = [
    *("the", "of", "and", "to", "in", "library", "retrieval", "index", "search", "query", "document"),
    *("system", "user", "information", "term", "weight", "catalog", "subject", "relevance", "recall"),
    *("precision", "evaluation", "classification", "citation", "journal", "abstract"),
]


def write_text(path: Path, megabytes: float, seed: int = 0) -> None:
    """Prose-like lines of random words, written in pieces so this script stays small itself."""
    rng = random.Random(seed)
    target = int(megabytes * 2**20)
    with path.open("w", encoding="utf-8") as f:
        written = 0
        while written < target:
            lines = [" ".join(rng.choices(WORDS, k=14)).capitalize() + "." for _ in range(2000)]
            block = "\n".join(lines) + "\n\n"
            f.write(block)
            written += len(block)


def docx_bomb(path: Path, xml_mb: int) -> None:
    """A valid DOCX whose document.xml decompresses to about `xml_mb` MB of tiny paragraphs."""
    import docx

    seed = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("seed")
    document.save(seed)
    source = zipfile.ZipFile(seed)
    para = b"<w:p><w:r><w:t>aaaa</w:t></w:r></w:p>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + para * (xml_mb * 2**20 // len(para)), 1)
            out.writestr(info.filename, data)


def _measured(args: list[str], env: dict[str, str]) -> tuple[int, float, float, bytes]:
    """Run a process to its end: exit code, peak RSS in MB (from the kernel), wall seconds, stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, wall, out.read()


def run_add(source: Path, work: Path, config: Path) -> dict:
    """One add-src process: peak RSS (MB), wall seconds, exit code and the failure line, if any."""
    db = work / f"{source.stem}.lancedb"
    env = {**os.environ, "HAIKU_CONFIG": str(config), "HAIKU_DATA_DIR": str(work / "data")}
    args = [sys.executable, "-m", "haiku_cli", "add-src", str(source), "--db", str(db), "--json"]
    code, rss, wall, out = _measured(args, env)
    outcome = (json.loads(out or b"{}").get("outcomes") or [{}])[0]
    return _row(source, code, rss, wall, outcome.get("status"), outcome.get("chunks"), outcome.get("error"))


_CONVERT = """
import sys
from pathlib import Path
from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import convert_file
doc = convert_file(Path(sys.argv[1]), IngestSettings(max_file_mb=10_000, max_docx_xml_mb=10_000))
print(len(doc.text))
"""


def run_convert_unlimited(source: Path) -> dict:
    """Converting one file alone with the limits out of the way: what a limit saves."""
    code, rss, wall, out = _measured([sys.executable, "-c", _CONVERT, str(source)], dict(os.environ))
    status = f"converted, {int(out or 0) / 2**20:.1f} MB of text" if code == 0 else "failed"
    return _row(source, code, rss, wall, status, None, None)


def _row(
    source: Path,
    code: int,
    rss: float,
    wall: float,
    status: str | None,
    chunks: int | None,
    error: str | None,
) -> dict:
    """One result row, the same keys for every case."""
    return {
        "file": source.name,
        "file_mb": round(source.stat().st_size / 2**20, 2),
        "peak_rss_mb": round(rss, 1),
        "wall_s": round(wall, 1),
        "exit": code,
        "status": status,
        "chunks": chunks,
        "error": error,
    }


def main() -> None:
    """Build the files, run each case, print a table (or JSON)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--text-mb", default="1,4", help="sizes of the text files within the limits")
    parser.add_argument("--big-mb", type=float, default=200)
    parser.add_argument("--bombs-mb", default="30,80", help="XML sizes of the DOCX bombs")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    work = opts.work or Path(tempfile.mkdtemp(prefix="haiku-ingest-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    defaults = work / "config.toml"
    defaults.write_text("")

    results = []
    for mb in (float(x) for x in opts.text_mb.split(",") if x):
        path = work / f"text-{mb:g}mb.txt"
        write_text(path, mb)
        results.append({"case": "text within limits", **run_add(path, work, defaults)})
    big = work / f"big-{opts.big_mb:g}mb.txt"
    if opts.big_mb:
        write_text(big, opts.big_mb)
        results.append({"case": "big text, default limits", **run_add(big, work, defaults)})
        big.unlink()
    for mb in (int(x) for x in opts.bombs_mb.split(",") if x):
        bomb = work / f"bomb-{mb}mb.docx"
        docx_bomb(bomb, mb)
        results.append({"case": "DOCX bomb, default limits", **run_add(bomb, work, defaults)})
        results.append({"case": "DOCX bomb, convert unlimited", **run_convert_unlimited(bomb)})

    if opts.json:
        print(json.dumps({"work": str(work), "results": results}, indent=2))
        return
    print(f"{'case':28} {'file':22} {'MB':>7} {'peak RSS MB':>11} {'wall s':>7} {'exit':>4}  outcome")
    for r in results:
        outcome = r["status"] if not r["error"] else r["error"].split(": ", 1)[-1][:70]
        print(
            f"{r['case']:28} {r['file']:22} {r['file_mb']:>7} {r['peak_rss_mb']:>11} {r['wall_s']:>7} "
            f"{r['exit']:>4}  {outcome}" + (f" ({r['chunks']} chunks)" if r["chunks"] else "")
        )


if __name__ == "__main__":
    main()

"""Shared benchmark plumbing: the CISI data, building databases with `haiku add-src`, running `haiku`."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
# The shared data sits beside the checkout, or beside the folder of worktrees it is one of.
SHARED = next(
    (d / "shared" / "data" for d in (REPO.parent, REPO.parent.parent) if (d / "shared" / "data").is_dir()),
    REPO.parent / "shared" / "data",
)
DEFAULT_DATA = SHARED / "cisi"
DEFAULT_PDFS = SHARED / "pdfs"
# Where the tables are written: `run_all.py` renders every JSON file here into benchmarks/README.md
# (HAIKU_BENCH_RESULTS names another folder, e.g. for a trial run).
RESULTS = REPO / "benchmarks" / "results"
COLUMNS = ("figure", "value", "compared against", "ratio")
# Options that say where things are on this machine, not what is measured: left out of the command shown.
LOCAL_OPTIONS = ("--data", "--work", "--out", "--pdfs")
T = TypeVar("T")


def load_beir(data: Path) -> tuple[dict[str, dict], dict[str, str], dict[str, set[str]]]:
    """Corpus {id: {title, text}}, queries {id: text} and qrels {query id: relevant doc ids}."""
    corpus = {}
    for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = {"title": row.get("title", ""), "text": row["text"]}
    queries = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if float(score) > 0:
            qrels[qid].add(did)
    return corpus, {q: t for q, t in queries.items() if q in qrels}, dict(qrels)


def write_corpus_files(corpus: dict[str, dict], folder: Path) -> None:
    """One Markdown file per document, named by its corpus id (so results map back by uri)."""
    folder.mkdir(parents=True, exist_ok=True)
    for did, doc in corpus.items():
        (folder / f"{did}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")


def haiku(args: list[str], config: Path, *, check: bool = True) -> subprocess.CompletedProcess:
    """Run the haiku CLI in a subprocess with a given config file."""
    env = {**os.environ, "HAIKU_CONFIG": str(config)}
    return subprocess.run(
        [sys.executable, "-m", "haiku_cli", *args], env=env, capture_output=True, text=True, check=check
    )


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """(result, seconds) of a call."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


@dataclass
class Table:
    """One area's table in the common shape every script writes (see benchmarks/README.md's header).

    `rows` are lists of cells in `columns` order; `comparison` says what the ratios are against when one
    thing is, else a column does. Machine, load and the command are filled in by `result()`.
    """

    area: str
    title: str
    comparison: str = ""
    columns: Sequence[str] = COLUMNS
    rows: list[list[str]] = field(default_factory=list)
    notes: str = ""

    def add(self, *cells: object) -> None:
        """A row; missing trailing cells are empty."""
        row = ["" if c is None else str(c) for c in cells]
        self.rows.append(row + [""] * (len(self.columns) - len(row)))


def ratio(a: float, b: float, suffix: str = "x") -> str:
    return f"{a / b:.2f}{suffix}" if b else ""


def machine() -> str:
    """What the figures were taken on, measured."""
    return (
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python {platform.python_version()}"
    )


def command(argv: Sequence[str] | None = None) -> str:
    """The command that reproduces this run, without the options that only say where files are."""
    argv = list(sys.argv if argv is None else argv)
    kept, skip = [], False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word in LOCAL_OPTIONS:
            skip = True
        elif not word.startswith(tuple(f"{o}=" for o in LOCAL_OPTIONS)):
            kept.append(word)
    return shlex.join(["python", f"benchmarks/{Path(argv[0]).name}", *kept])


@contextmanager
def result(area: str, title: str, **fields: object) -> Iterator[Table]:
    """Measure inside the block, fill the yielded table's rows; on leaving, write `RESULTS/AREA.json` with
    the machine, the 1-minute load average at start and end, the command and the seconds taken. Nothing
    is written when the block raises or adds no row."""
    table = Table(area, title, **fields)  # type: ignore[arg-type]
    load, started = os.getloadavg()[0], time.monotonic()
    yield table
    if not table.rows:  # a run that measured none of the table's figures leaves the last ones
        return
    end = os.getloadavg()[0]
    out = {
        "area": table.area,
        "title": table.title,
        "comparison": table.comparison,
        "machine": machine(),
        "load": f"load average {load:.1f} at start, {end:.1f} at end (1 minute)",
        "command": command(),
        "seconds": round(time.monotonic() - started, 1),
        "columns": list(table.columns),
        "rows": table.rows,
        "notes": table.notes or previous_notes(area),
    }
    folder = results_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{area}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{area}: wrote {path}", file=sys.stderr)


def results_folder() -> Path:
    return Path(os.environ.get("HAIKU_BENCH_RESULTS", RESULTS))


def previous_notes(area: str) -> str:
    """What the README says under an area beside its figures (prose kept across runs)."""
    path = results_folder() / f"{area}.json"
    return json.loads(path.read_text(encoding="utf-8")).get("notes", "") if path.exists() else ""

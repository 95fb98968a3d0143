"""Where one `haiku add-src` of a folder reaches its peak memory: reading and embedding, or the upkeep after.

A folder of N generated Markdown documents (about 5 chunks each) is added in this process by the CLI's
own entry point, with the hashing embedder served on 127.0.0.1 (384 dimensions, as the bundled model's),
while a thread samples the resident set size every 20 ms and files each sample under the step running
then: the add itself (`ingest`), and each step of the index upkeep after it (`after_write`). Run it at
two sizes to see which step grows with the folder. `process_peak_mb` is the kernel's peak for the process
(what `/usr/bin/time -v` prints); `--heap-as-is` leaves glibc's allocator as it is (haiku_cli/store/heap.py
switched off), the before of that change.

    python benchmarks/add_memory_phases.py --docs 400,2000,4000 [--work DIR] [--heap-as-is] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import result  # noqa: E402
from benchmarks.rebuild_memory import write_docs  # noqa: E402
from haiku_cli.ingest import engine, ingestor, pipeline  # noqa: E402
from haiku_cli.store import heap, indexes, maintenance  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

_UPKEEP_STEPS = {
    indexes: ("_fold_new_rows", "_bound_text_segments", "_compact_if_fragmented", "_refresh_vector_index"),
    maintenance: ("refresh_keys", "cleanup_superseded", "_store_corpus_totals"),
}


def _rss_mb(kind: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith(kind))


class Phases:
    """Peak RSS (MB) per named step, sampled from a thread."""

    def __init__(self) -> None:
        self.current = "start"
        self.peaks: dict[str, int] = {}
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peaks[self.current] = max(self.peaks.get(self.current, 0), _rss_mb())
            time.sleep(0.02)

    def wrap(self, owner: Any, name: str, *, is_async: bool = False, then: str | None = None) -> None:
        """Count the samples taken while `owner.name` runs under its name (and after it, under `then`)."""
        fn: Callable = getattr(owner, name)

        def step(*args: Any, **kwargs: Any) -> Any:
            before, self.current = self.current, name
            try:
                return fn(*args, **kwargs)
            finally:
                self.current = then or before

        async def async_step(*args: Any, **kwargs: Any) -> Any:
            self.current = name  # the add runs until the upkeep starts
            return await fn(*args, **kwargs)

        setattr(owner, name, async_step if is_async else step)


def measure(docs: int, work: Path) -> dict:
    """Add a folder of `docs` documents to a new database; peak RSS per step."""
    folder, db = work / f"docs-{docs}", work / f"db-{docs}.lancedb"
    shutil.rmtree(db, ignore_errors=True)
    if not folder.exists():
        write_docs(folder, docs)
    phases = Phases()
    phases.wrap(engine.InProcess, "write", is_async=True)  # the add, until the upkeep starts
    phases.wrap(pipeline, "after_write", then="done")
    for module, names in _UPKEEP_STEPS.items():
        for name in names:
            phases.wrap(module, name)
    from haiku_cli.cli.app import main

    sys.argv = ["haiku", "add-src", str(folder), "--db", str(db), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main()
    time.sleep(0.1)
    chunks = int(open_chunks(db))
    process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    # At the end, how much of the resident set is file pages (the two Lance engines' code, onnxruntime's,
    # the model), which the kernel can drop, and how much is memory haiku and its libraries allocated.
    resident = {"anonymous": _rss_mb("RssAnon"), "file": _rss_mb("RssFile")}
    return {
        "docs": docs,
        "chunks": chunks,
        "process_peak_mb": process_peak,
        "resident_at_end_mb": resident,
        "peak_mb_by_step": phases.peaks,
    }


def heap_as_is() -> None:
    """Switch off haiku's handling of glibc's heap, wherever it is called from."""
    for module in (heap, indexes, maintenance, ingestor):
        for name in ("return_large_buffers", "release_freed"):
            if hasattr(module, name):
                setattr(module, name, lambda: None)


def open_chunks(db: Path) -> int:
    from haiku_cli.store import Location, open_database

    return open_database(Location("m", str(db))).chunks.count_rows()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="400,4000", help="folder sizes in documents, comma-separated")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "haiku-add-memory")
    parser.add_argument("--heap-as-is", action="store_true", help="without haiku_cli/store/heap.py")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one-size", action="store_true", help=argparse.SUPPRESS)  # a child: no table
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.one_size:
        measure_here(args)
        return
    with result("ingest", "Ingest throughput and memory") as table:
        table.columns = ("documents (chunks)", "process peak RSS", "peak by step", "resident at end")
        table.comparison = "the other sizes: what grows with the folder"
        as_is = ["--heap-as-is"] if args.heap_as_is else []
        # One process per size: a process's memory does not shrink back between them.
        for n in (int(n) for n in args.docs.split(",")):
            child = [
                sys.executable,
                __file__,
                "--docs",
                str(n),
                "--work",
                str(args.work),
                "--one-size",
                *as_is,
            ]
            out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
            report = json.loads(out.strip().splitlines()[-1])
            print(json.dumps(report) if args.json else json.dumps(report, indent=1), flush=True)
            steps = ", ".join(f"{k} {v} MB" for k, v in report["peak_mb_by_step"].items())
            resident = report["resident_at_end_mb"]
            table.add(
                f"{report['docs']:,} ({report['chunks']:,})",
                f"{report['process_peak_mb']} MB",
                steps,
                f"{resident['anonymous']} MB anonymous, {resident['file']} MB file",
            )


def measure_here(args: argparse.Namespace) -> None:
    sizes = [int(n) for n in args.docs.split(",")]
    if args.heap_as_is:
        heap_as_is()
    with serve_hash_embedder(384) as url:
        config = args.work / "config.toml"
        config.write_text(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n', encoding="utf-8")
        os.environ["HAIKU_CONFIG"], os.environ["HAIKU_DATA_DIR"] = str(config), str(args.work / "data")
        report = measure(sizes[0], args.work)
    report["heap"] = "as is" if args.heap_as_is else "large buffers returned, freed memory released"
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()

"""Peak memory of one `haiku rebuild` process as the database grows, for this code or another checkout.

A database of N generated documents (about 10 chunks each) is added with a fast hashing embedder served
on 127.0.0.1 (tests/support/hash_embedder.py); then `python -m haiku_cli rebuild` runs in a fresh process
and its peak resident set size is read from the kernel (os.wait4), with its CPU time (user + sys).
`--code DIR` runs the rebuild from another checkout (e.g. `git worktree add /tmp/old COMMIT`) instead,
so the two are measured interleaved on the same databases.

    python benchmarks/rebuild_memory.py [--docs 500,2000] [--rounds 2] [--code DIR] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

DIMENSION = 384  # as the bundled model's: what a rebuild holds per chunk is what a user's would
WORDS = ["library", "retrieval", "index", "search", "query", "document", "system", "user", "term", "weight"]


def write_docs(folder: Path, count: int) -> None:
    """`count` Markdown files of ten paragraphs each (a chunk or so per paragraph)."""
    rng = random.Random(count)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        paragraphs = [" ".join(rng.choices(WORDS, k=180)).capitalize() + "." for _ in range(10)]
        (folder / f"d{i:05d}.md").write_text(
            f"# Document {i}\n\n" + "\n\n".join(paragraphs), encoding="utf-8"
        )


def measured(args: list[str], env: dict[str, str], cwd: Path) -> tuple[dict, str]:
    """Run a process to its end: its exit code, peak RSS (MB), CPU seconds (user + sys), wall seconds and
    last stderr line; and its stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Run from `cwd`, not from a checkout: `python -m` imports from its working folder first.
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        errors = err.read().decode("utf-8", "replace").strip().splitlines()
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "wall_s": round(wall, 2),
        "error": errors[-1] if errors else "",
    }, stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="500,2000", help="database sizes in documents, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="rebuilds per size and code, interleaved")
    parser.add_argument("--code", type=Path, help="another checkout to compare with (its haiku_cli)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "haiku-rebuild-memory")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    codes = {"this": str(REPO)} | ({"other": str(args.code.resolve())} if args.code else {})
    results = []
    with serve_hash_embedder(DIMENSION) as url:
        config = args.work / "config.toml"
        config.write_text(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n', encoding="utf-8")
        base = {**os.environ, "HAIKU_CONFIG": str(config), "HAIKU_DATA_DIR": str(args.work / "data")}
        for count in (int(n) for n in args.docs.split(",")):
            folder, db = args.work / f"docs-{count}", args.work / f"db-{count}.lancedb"
            if not db.exists():
                write_docs(folder, count)
                add = [sys.executable, "-m", "haiku_cli", "add-src", str(folder), "--db", str(db), "--json"]
                added, _ = measured(add, {**base, "PYTHONPATH": str(REPO)}, args.work)
                if added["exit"] != 0:
                    sys.exit(f"add-src failed: {added['error']}")
            for round_ in range(args.rounds):
                for name, code in codes.items():
                    rebuild = [sys.executable, "-m", "haiku_cli", "rebuild", "--db", str(db), "--json"]
                    run, stdout = measured(rebuild, {**base, "PYTHONPATH": code}, args.work)
                    chunks = json.loads(stdout)["chunks"] if run["exit"] == 0 else None
                    results.append({"docs": count, "chunks": chunks, "code": name, "round": round_, **run})
                    if not args.json:
                        print(
                            f"{count:>6} docs {chunks or '?':>7} chunks {name:<5} peak {run['peak_mb']:>7} MB"
                            f"  cpu {run['cpu_s']:>6} s  wall {run['wall_s']:>6} s  exit {run['exit']}"
                        )
    if args.json:
        print(json.dumps({"dimension": DIMENSION, "results": results}, indent=2))


if __name__ == "__main__":
    main()

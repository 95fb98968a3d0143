"""CPU of re-adding a changed 50-chunk document (`haiku add-src`, status "updated"), this code or another.

Three changes per round, each one `add-src` process with the bundled embedder: a new `--title`, then
new `--meta` only, then one paragraph edited. Chunks that come out identical keep their ids; where their
embedded text is unchanged too (same title, same embedder) their stored vectors are reused instead of
embedded again. `--code DIR` runs the same adds from another checkout (e.g. `git worktree add --detach
/tmp/old COMMIT`) on its own copy of the database, interleaved change by change, so load from other
processes hits both alike.

    python benchmarks/readd_update.py [--rounds 3] [--code DIR] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from rebuild_memory import WORDS, measured

REPO = Path(__file__).resolve().parent.parent
CHANGES = ("title", "meta", "paragraph")
PARAGRAPHS = 50  # one chunk each: a paragraph of 150 words fits the bundled model's chunk size


def document(edit: int) -> str:
    """The Markdown document; `edit` changes one word of paragraph 25 (so each edit differs from the last)."""
    rng = random.Random(50)
    paragraphs = [" ".join(rng.choices(WORDS, k=150)).capitalize() + "." for _ in range(PARAGRAPHS)]
    paragraphs[25] += f" Edit {edit}."
    return "# Updates\n\n" + "\n\n".join(paragraphs) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="adds per change and code, interleaved")
    parser.add_argument("--code", type=Path, help="another checkout to compare with (its haiku_cli)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "haiku-readd-update")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    codes = {"this": str(REPO)} | ({"other": str(args.code.resolve())} if args.code else {})
    (args.work / "config.toml").write_text("", encoding="utf-8")  # the defaults: the bundled embedder
    base = {**os.environ, "HAIKU_CONFIG": str(args.work / "config.toml"), "HAIKU_DATA_DIR": str(args.work)}
    source = args.work / "updates.md"
    haiku_add = [sys.executable, "-m", "haiku_cli", "add-src"]
    results = []
    for name, code in codes.items():
        source.write_text(document(0), encoding="utf-8")
        add = [*haiku_add, str(source), "--db", str(args.work / name)]
        first, _ = measured(add, {**base, "PYTHONPATH": code}, args.work)
        if first["exit"] != 0:
            sys.exit(f"add-src failed: {first['error']}")
    edits = 0
    for round_ in range(args.rounds):
        for change in CHANGES:
            edits += change == "paragraph"
            for name, code in codes.items():
                source.write_text(document(edits), encoding="utf-8")
                # Each round gives a new title first; the other changes keep it (so they change no title).
                given = [
                    "--title",
                    f"Updates {round_}",
                    *(["--meta", f"r={round_}"] if change == "meta" else []),
                ]
                add = [*haiku_add, str(source), "--db", str(args.work / name), *given, "--json"]
                run, stdout = measured(add, {**base, "PYTHONPATH": code}, args.work)
                outcome = json.loads(stdout)["outcomes"][0] if run["exit"] == 0 else {}
                results.append(
                    {
                        "change": change,
                        "code": name,
                        "round": round_,
                        "status": outcome.get("status"),
                        "chunks": outcome.get("chunks"),
                        "kept_chunk_ids": outcome.get("kept_chunk_ids"),
                        **run,
                    }
                )
                if not args.json:
                    r = results[-1]
                    print(
                        f"{change:<9} {name:<5} round {round_}  {r['status']} {r['chunks']} chunks, "
                        f"kept {r['kept_chunk_ids']}  cpu {run['cpu_s']:>5} s  wall {run['wall_s']:>5} s"
                    )
    medians = {
        f"{change}/{name}": statistics.median(
            r["cpu_s"] for r in results if (r["change"], r["code"]) == (change, name)
        )
        for change in CHANGES
        for name in codes
    }
    if args.json:
        print(json.dumps({"results": results, "median_cpu_s": medians}, indent=2))
    else:
        for key, value in medians.items():
            print(f"median cpu {key}: {value} s")


if __name__ == "__main__":
    main()

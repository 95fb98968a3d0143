"""Fan-out as a user meets it: whole `haiku search` processes, one database against the same corpus split.

On the databases `benchmarks/scale.py` leaves (`SIZE/one.lancedb` and `SIZE/part0..3.lancedb`), each search
type runs as a fresh `haiku search --json` process, alternating one database and the split (configured as
four databases, all searched), with query vectors from the hashing embedder served on 127.0.0.1 that built
them. Every process opens its databases cold, concurrently, so the split's cost over one database is its
extra opens and queries, beside the fixed cost of starting a process. Reports the median wall time per
type and the split / one ratio. `query_path.py` measures the warm in-process query alone.

    python benchmarks/fanout_cli.py --work /tmp/haiku-scale --size 100000 [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, EMBEDDER, QUERIES, SPLIT, Corpus  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

# Fresh processes are what is timed: no command goes to, or starts, a background daemon (haiku help daemon).
os.environ.setdefault("HAIKU_NO_DAEMON", "1")

LAUNCH = "import sys; from haiku_cli.cli.app import main; sys.argv[0] = 'haiku'; sys.exit(main())"


def _configs(folder: Path, work: Path, url: str) -> dict[str, Path]:
    embedder = f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n'
    sets = {"one": {"one": folder / "one.lancedb"}}
    sets["split"] = {f"part{i}": folder / f"part{i}.lancedb" for i in range(SPLIT)}
    paths = {}
    for name, databases in sets.items():
        lines = "".join(f'{db} = "{path}"\n' for db, path in databases.items())
        paths[name] = work / f"{name}.toml"
        paths[name].write_text(f"{embedder}\n[databases]\n{lines}", encoding="utf-8")
    return paths


def measure(folder: Path, runs: int, types: list[str]) -> dict:
    """Median wall time of `runs` fresh processes per search type, one database and the split."""
    rng = np.random.default_rng(int(folder.name))  # the queries scale.py and query_path.py ask
    corpus = Corpus()
    queries = [corpus.query(rng, int(folder.name) // CHUNKS_PER_DOC) for _ in range(QUERIES)]
    report: dict = {}
    with serve_hash_embedder(DIMENSION) as url, tempfile.TemporaryDirectory() as tmp:
        configs = _configs(folder, Path(tmp), url)
        times: dict[str, dict[str, list[float]]] = {t: {"one": [], "split": []} for t in types}
        for i in range(runs):
            for search_type in types:
                for name, config in configs.items():
                    env = {**os.environ, "HAIKU_CONFIG": str(config), "PYTHONPATH": str(REPO)}
                    argv = [sys.executable, "-c", LAUNCH, "search", "--type", search_type, "--json"]
                    start = time.perf_counter()
                    done = subprocess.run([*argv, queries[i % len(queries)]], env=env, capture_output=True)
                    times[search_type][name].append(time.perf_counter() - start)
                    if done.returncode != 0:
                        raise SystemExit(f"{name} {search_type}: {done.stderr.decode().strip()}")
        for search_type, by_set in times.items():
            one, split = statistics.median(by_set["one"]), statistics.median(by_set["split"])
            report[search_type] = {
                "one_s": round(one, 3),
                "split_s": round(split, 3),
                "split_over_one": round(split / one, 2),
            }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-scale"), help="scale.py's --work")
    parser.add_argument("--size", type=int, default=100_000, help="a chunk count already built there")
    parser.add_argument("--runs", type=int, default=15, help="processes per type and set")
    parser.add_argument("--types", default="fts,vector,hybrid")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = {
        "chunks": args.size,
        "load_average": round(os.getloadavg()[0], 2),
        **measure(args.work / str(args.size), args.runs, args.types.split(",")),
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

"""Whole `haiku` processes with a remote (`ollama:`) embedder served on 127.0.0.1: vector search, add, fts.

A user with an Ollama or OpenAI embedder pays for loading its client in every command. This builds a
200-note database through `add-src` with the hashing embedder served as an OpenAI-compatible
`/v1/embeddings` (tests/support/hash_embedder.py), then times fresh processes of `search --type vector`,
`add` and (for reference, no embedder) `search --type fts`: wall by `perf_counter`, CPU (user + system, all
threads) from `wait4`, medians. With `--before TREE` (another checkout of haiku, run with this Python) the
same commands run from both trees, alternating order each round, and the ratio before / after is printed.

    python benchmarks/remote_embedder.py [--rounds 9] [--before /tmp/haiku-before] [--json]
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

# Fresh processes are what is timed: no command goes to, or starts, a background daemon (haiku help daemon).
os.environ.setdefault("HAIKU_NO_DAEMON", "1")

LAUNCH = "import sys; from haiku_cli.cli.app import main; sys.argv[0] = 'haiku'; sys.exit(main())"
NOTES = 200


def _run(tree: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """Wall and CPU seconds of one `haiku` process run from `tree`."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args],
        env={**env, "PYTHONPATH": str(tree)},
        cwd=tempfile.gettempdir(),  # the working folder must not shadow PYTHONPATH's haiku_cli
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"haiku {' '.join(args)} from {tree} failed: {err.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(trees: dict[str, Path], rounds: int) -> dict:
    """Median wall and CPU of each command from each tree."""
    with tempfile.TemporaryDirectory() as tmp, serve_hash_embedder(64) as url:
        work = Path(tmp)
        docs = work / "docs"
        docs.mkdir()
        for i in range(NOTES):
            text = f"# Note {i}\n\nowl{i} heron{i % 17} swift{i % 5} notes about birds at dusk, number {i}.\n"
            (docs / f"n{i}.md").write_text(text, encoding="utf-8")
        (work / "config.toml").write_text(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "HAIKU"))}
        env.update(HAIKU_CONFIG=str(work / "config.toml"), HAIKU_DATA_DIR=str(work / "data"))
        _run(REPO, env, "add-src", str(docs))
        commands = {
            "search --type vector": ("search", "--type", "vector", "owl{r} at dusk"),
            "add": ("add", "a note {r}"),
            "search --type fts": ("search", "--type", "fts", "owl{r} at dusk"),
        }
        times: dict[tuple[str, str], list[tuple[float, float]]] = {
            (name, cmd): [] for name in trees for cmd in commands
        }
        for r in range(rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for cmd, args in commands.items():
                for name in order:
                    times[name, cmd].append(_run(trees[name], env, *(a.format(r=r) for a in args)))
    out: dict = {}
    for (name, cmd), rows in times.items():
        out.setdefault(cmd, {})[name] = {
            "wall_s": round(statistics.median(w for w, _ in rows), 3),
            "cpu_s": round(statistics.median(c for _, c in rows), 3),
        }
    if "before" in trees:
        for by_tree in out.values():
            ratio = by_tree["before"]["cpu_s"] / by_tree["after"]["cpu_s"]
            by_tree["before_over_after_cpu"] = round(ratio, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--before", type=Path, help="another haiku checkout to compare with this one")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    trees = {"before": args.before, "after": REPO} if args.before else {"after": REPO}
    report = {"load_average": round(os.getloadavg()[0], 2), **measure(trees, args.rounds)}
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

"""A fresh `haiku search --type fts` in its own process, against another source tree and against the second
search of a shell, which the daemon the first one started answers: CPU and wall, interleaved in one run.

Every round times, one after the other (so machine load hits each alike):
  - `fresh`: this tree's search in a new process with no daemon (HAIKU_NO_DAEMON=1);
  - `fresh (before)`: the same from the tree given by --before (e.g. `git archive main | tar -x -C DIR`);
  - `second, daemon`: the same command line with the daemon on (the default), once a first search has
    started it: what every command after a shell's first one costs.
The first search, which starts the daemon and answers itself, is timed separately (`first, starts daemon`,
its own process only: the daemon it leaves runs in a session of its own). `-X importtime` figures for
each tree are medians of a few runs: all imports' time, haiku's own modules' share, typer's adapters.

    python benchmarks/fresh_read.py [--before TREE] [--docs 300] [--rounds 15] [--out result.json]

Writes the area's table to benchmarks/results/fresh_read.json (the raw figures: --out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import LAUNCH, REPO, Case, measure
from common import Table
from common import result as table_result

QUERY = "library classification of documents"
_WORDS = [
    "library",
    "catalogue",
    "index",
    "retrieval",
    "query",
    "document",
    "citation",
    "journal",
    "abstract",
    "term",
    "subject",
    "thesaurus",
    "classification",
    "relevance",
    "user",
    "search",
    "system",
    "information",
    "science",
    "author",
    "title",
    "record",
    "report",
]


def _corpus(folder: Path, count: int) -> None:
    """`count` Markdown files of a few paragraphs each, deterministic."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        words = [_WORDS[(i * 7 + j * 3 + j * j) % len(_WORDS)] for j in range(240)]
        body = "\n\n".join(" ".join(words[k : k + 60]) + "." for k in range(0, 240, 60))
        (folder / f"{i}.md").write_text(f"# Report {i}\n\n{body}\n", encoding="utf-8")


def _tree_env(tree: Path, base: dict[str, str]) -> dict[str, str]:
    return {**base, "PYTHONPATH": str(tree)}


def _check_tree(tree: Path, env: dict[str, str], cwd: Path) -> None:
    found = subprocess.run(
        [sys.executable, "-c", "import haiku_cli; print(haiku_cli.__file__)"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found).resolve().is_relative_to(tree.resolve()), f"{tree} is shadowed by {found}"


def _importtimes(envs: dict[str, dict[str, str]], cwd: Path, runs: int = 5) -> dict[str, dict[str, float]]:
    """Per tree, medians over `runs` (the trees alternating) of all imports' own time, haiku's modules'
    own time and count, and typer's adapter module with what it imported (0: not imported)."""
    rows: dict[str, list[dict[str, float]]] = {label: [] for label in envs}
    for _ in range(runs):
        for label, env in envs.items():
            rows[label].append(_one_importtime(env, cwd))
    return {
        label: {k: round(statistics.median(r[k] for r in found), 1) for k in found[0]}
        for label, found in rows.items()
    }


def _one_importtime(env: dict[str, str], cwd: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", LAUNCH, "search", "--type", "fts", QUERY],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    total = own = adapters = 0
    modules = 0
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        self_us, cumulative, name = int(m[1]), int(m[2]), m[4]
        total += self_us
        if name.startswith("haiku_cli"):
            own += self_us
            modules += 1
        if name == "typer._adapters":
            adapters = cumulative
    return {
        "all_imports_ms": total / 1000,
        "haiku_own_ms": own / 1000,
        "typer_adapters_ms": adapters / 1000,
        "haiku_modules": modules,
    }


def _daemon_pid(sock: Path) -> int | None:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(sock))
        creds = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[0])
    except OSError:
        return None
    finally:
        probe.close()


def _wait_for(condition, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for the daemon")
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")


def _stop(sock: Path) -> None:
    pid = _daemon_pid(sock)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        _wait_for(lambda: _gone(pid))


def _summary(samples: dict[str, list[tuple[float, float]]]) -> dict[str, dict]:
    return {
        k: {
            "wall_s": round(statistics.median(w for w, _ in v), 4),
            "cpu_s": round(statistics.median(c for _, c in v), 4),
            "wall_samples_s": [round(w, 4) for w, _ in v],
            "cpu_samples_s": [round(c, 4) for _, c in v],
        }
        for k, v in samples.items()
    }


def run(before: Path | None, docs: int, rounds: int, work: Path) -> dict:
    config, runtime = work / "config.toml", work / "rt"
    config.write_text("", encoding="utf-8")
    base = {**os.environ, "HAIKU_CONFIG": str(config), "HAIKU_DATA_DIR": str(work / "data")}
    base["HAIKU_RUNTIME_DIR"] = str(runtime)
    base.pop("HAIKU_NO_DAEMON", None)
    off = {"HAIKU_NO_DAEMON": "1"}
    after_env = _tree_env(REPO, base)
    _check_tree(REPO, after_env, work)
    if not (work / "data").exists():
        _corpus(work / "corpus", docs)
        subprocess.run(
            [sys.executable, "-c", LAUNCH, "add-src", str(work / "corpus")],
            env={**after_env, **off},
            cwd=work,
            check=True,
            capture_output=True,
        )
    argv = [sys.executable, "-c", LAUNCH, "search", "--type", "fts", QUERY]
    cases = {"fresh": Case(argv, {**after_env, **off})}
    trees = {"after": {**after_env, **off}}
    if before is not None:
        before_env = _tree_env(before, base)
        _check_tree(before, before_env, work)
        cases["fresh (before)"] = Case(argv, {**before_env, **off})
        trees["before"] = {**before_env, **off}
    importtime = _importtimes(trees, work)
    sock = runtime / "daemon.sock"
    daemon = Case(argv, after_env)
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in (*cases, "second, daemon")}
    first: list[tuple[float, float]] = []
    loads = [os.getloadavg()[0]]
    try:
        for i in range(rounds):
            if i < 3:  # a shell's first search: it starts the daemon (its own cost only)
                _stop(sock)
                first.append(measure(daemon, work))
                _wait_for(lambda: _daemon_pid(sock) is not None)
            for key, case in cases.items():
                samples[key].append(measure(case, work))
            samples["second, daemon"].append(measure(daemon, work))
            loads.append(os.getloadavg()[0])
    finally:
        _stop(sock)
    rows = _summary({**samples, "first, starts daemon": first})
    fresh = rows["fresh"]
    for row in rows.values():
        row["cpu_x_fresh"] = round(row["cpu_s"] / fresh["cpu_s"], 3)
        row["wall_x_fresh"] = round(row["wall_s"] / fresh["wall_s"], 3)
    return {
        "query": QUERY,
        "documents": docs,
        "rounds": rounds,
        "rows": rows,
        "importtime_ms": importtime,
        "loadavg_1min": [round(x, 2) for x in loads],
        "target": "second, daemon <= 0.35x fresh (cpu and wall)",
    }


COMPARED = "a fresh search of this tree (`HAIKU_NO_DAEMON=1`), same rounds"
CASES = {
    "fresh": "fresh search, this tree (`HAIKU_NO_DAEMON=1`)",
    "fresh (before)": "fresh search, the tree given by `--before`",
    "second, daemon": "second search, answered by the daemon the first started",
    "first, starts daemon": "first search, which starts the daemon (its own process)",
}


def fresh_read_rows(table: Table, raw: dict) -> None:
    """Medians of the interleaved rounds per case, and each over the fresh search."""
    table.columns = ("case", "wall s", "CPU s", "CPU x fresh", "wall x fresh")
    for case, got in raw["rows"].items():
        table.add(
            CASES.get(case, case),
            f"{got['wall_s']:.3f}",
            f"{got['cpu_s']:.3f}",
            f"{got['cpu_x_fresh']:.2f}",
            f"{got['wall_x_fresh']:.2f}",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another source tree to time beside this one")
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--work", type=Path, help="keep the database here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args()
    title = "Fresh reads and the daemon started by the first one"
    with table_result("fresh_read", title, comparison=COMPARED) as table:
        with tempfile.TemporaryDirectory(prefix="fr-", dir="/tmp") as tmp:
            work = args.work or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            result = run(args.before, args.docs, args.rounds, work)
        fresh_read_rows(table, result)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

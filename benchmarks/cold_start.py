"""Cold start of the `haiku` CLI: fresh processes, wall and CPU time, against baselines and haiku.rag.

Run through `benchmarks/latency.py --parts cold` (see its options `--haiku`, `--before`, `--haiku-rag`).
Every command and baseline runs as a fresh process, all of them alternating, so a change in machine load
hits every row alike. CPU time is user + system of the process and all its threads, from `wait4`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# Fresh processes are what is timed: no command goes to, or starts, a background daemon (haiku help daemon).
os.environ.setdefault("HAIKU_NO_DAEMON", "1")

REPO = Path(__file__).resolve().parent.parent

COLD_QUERY = "the use of computers in libraries"
# What a console script runs; used to start haiku from a source tree given by PYTHONPATH.
LAUNCH = "import sys; from haiku_cli.cli.app import main; sys.argv[0] = 'haiku'; sys.exit(main())"
# The LanceDB import deferral switched off: the import every command paid before it.
PLAIN_IMPORT = {"HAIKU_LANCE_IMPORT": "plain"}


@dataclass(frozen=True)
class Case:
    """One command line to time: its argv and extra environment."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def measure(case: Case, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, all threads) of one process; fails loudly on a non-zero exit.

    It runs in `cwd`, a folder without Python packages: `python -c` puts its working folder first on
    sys.path, where a checkout would shadow the tree or install being timed.
    """
    env = {**os.environ, **case.env}
    start = time.perf_counter()
    proc = subprocess.Popen(case.argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    stderr = proc.stderr.read()  # small: one line on failure
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(case.argv)} exited {proc.returncode}: {stderr.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def haiku_cases(haiku: list[str], config: Path, env: dict[str, str], label: str = "") -> dict[str, Case]:
    """The haiku commands timed, each started as `haiku` (argv prefix) with `env`."""
    env = {"HAIKU_CONFIG": str(config), **env}
    commands = {
        "haiku --help": ["--help"],
        "haiku search --type fts QUERY": ["search", "--type", "fts", COLD_QUERY],
        "haiku search QUERY (hybrid)": ["search", COLD_QUERY],
        "haiku list": ["list", "--limit", "10"],
        "haiku info": ["info"],
        # A document by the path it was added from (latency.py's small database holds CISI doc 1).
        "haiku get PATH": ["get", str(config.parent / "small-docs" / "1.md")],
    }
    cases = {f"{k}{label}": Case([*haiku, *args], env) for k, args in commands.items()}
    cases[f"haiku search --type fts QUERY, deferral off{label}"] = Case(
        [*haiku, *commands["haiku search --type fts QUERY"]], {**env, **PLAIN_IMPORT}
    )
    return cases


def source_tree_launcher(python: str, tree: Path) -> tuple[list[str], dict[str, str]]:
    """How to start haiku from source tree `tree` with `python` (PYTHONPATH shadows the install)."""
    return [python, "-c", LAUNCH], {"PYTHONPATH": str(tree)}


HAIKU_RAG_COMMANDS = {
    "haiku.rag search --search-type fts QUERY": ["search", "--search-type", "fts", COLD_QUERY],
    "haiku.rag list": ["list"],
    "haiku.rag info": ["info"],
}
# Which haiku row each haiku.rag row is compared with.
HAIKU_RAG_PAIRS = {
    "haiku.rag search --search-type fts QUERY": "haiku search --type fts QUERY",
    "haiku.rag list": "haiku list",
    "haiku.rag info": "haiku info",
}


def build_haiku_rag_db(binary: Path, docs: Path, work: Path) -> tuple[Path, Path]:
    """haiku.rag's database of the same Markdown files (reused when present): its config and database path.

    haiku.rag's defaults need Ollama and a Hugging Face tokenizer; offline, its documents are embedded by
    the hashing embedder served on 127.0.0.1 (OpenAI-compatible) and chunked by docling's hierarchical
    chunker, which needs no tokenizer. Its full-text search embeds nothing, so neither is used when timed.
    """
    sys.path.insert(0, str(REPO))
    from tests.support.hash_embedder import serve_hash_embedder

    config, db = work / "haiku-rag.yaml", work / "haiku-rag.lancedb"
    if db.exists() and config.exists():
        return config, db
    shutil.rmtree(db, ignore_errors=True)
    with serve_hash_embedder(64) as url:
        config.write_text(
            f"""environment: production
storage:
  data_dir: {work / "haiku-rag-data"}
  auto_vacuum: false
embeddings:
  model:
    provider: openai
    name: hash
    vector_dim: 64
    base_url: {url}
    api_key: none
processing:
  chunker_type: hierarchical
  auto_title: false
""",
            encoding="utf-8",
        )
        base = [str(binary), "--config", str(config)]
        for args in (["init", "--db", str(db)], ["add-src", str(docs), "--db", str(db)]):
            subprocess.run([*base, *args], check=True, capture_output=True, timeout=1800)
    return config, db


def haiku_rag_cases(binary: Path, config: Path, db: Path) -> dict[str, Case]:
    """haiku.rag's equivalents of the timed haiku commands, on its database of the same documents."""
    return {
        k: Case([str(binary), "--config", str(config), *args, "--db", str(db)])
        for k, args in HAIKU_RAG_COMMANDS.items()
    }


def run_cold(cases: dict[str, Case], repeats: int, cwd: Path) -> dict[str, dict]:
    """Medians of wall and CPU per case over `repeats` alternating rounds, each process started in `cwd`."""
    walls: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for key, case in cases.items():
            wall, cpu = measure(case, cwd)
            walls[key].append(wall)
            cpus[key].append(cpu)
        loads.append(os.getloadavg()[0])
    rows = {
        k: {
            "wall_s": round(statistics.median(walls[k]), 3),
            "cpu_s": round(statistics.median(cpus[k]), 3),
            "wall_samples_s": [round(x, 3) for x in walls[k]],
            "cpu_samples_s": [round(x, 3) for x in cpus[k]],
        }
        for k in cases
    }
    bare, lance = rows["python -c pass"], rows["python -c 'import lancedb'"]
    for row in rows.values():
        row["wall_x_pass"] = round(row["wall_s"] / bare["wall_s"], 2)
        row["wall_x_import_lancedb"] = round(row["wall_s"] / lance["wall_s"], 2)
        row["cpu_x_import_lancedb"] = round(row["cpu_s"] / lance["cpu_s"], 2)
    for theirs, ours in HAIKU_RAG_PAIRS.items():
        if theirs in rows and ours in rows:
            rows[theirs]["wall_x_haiku"] = round(rows[theirs]["wall_s"] / rows[ours]["wall_s"], 2)
            rows[theirs]["cpu_x_haiku"] = round(rows[theirs]["cpu_s"] / rows[ours]["cpu_s"], 2)
    return {"rows": rows, "repeats": repeats, "loadavg_1min": [round(x, 2) for x in loads]}


def cold_start(
    config: Path,
    repeats: int,
    haiku: Path | None = None,
    before: Path | None = None,
    haiku_rag: Path | None = None,
    docs: Path | None = None,
    *,
    work: Path,
) -> dict:
    """Time haiku's commands (and `before`'s, and haiku.rag's) against `python -c pass` and `import lancedb`.

    `haiku` is the console script to time (default: the one beside this interpreter); the baselines run
    with the interpreter beside it, so a separate venv with a regular install is measured as installed.
    """
    script = haiku or Path(sys.executable).parent / "haiku"
    python = str(script.parent / "python") if (script.parent / "python").exists() else sys.executable
    cases: dict[str, Case] = {
        "python -c pass": Case([python, "-c", "pass"]),
        "python -c 'import lancedb'": Case([python, "-c", "import lancedb"]),
    }
    if before is not None:  # both trees started the same way, from source, in this interpreter's venv
        argv, env = source_tree_launcher(python, REPO)
        cases.update(haiku_cases(argv, config, env))
        argv, env = source_tree_launcher(python, before)
        cases.update(haiku_cases(argv, config, env, " (before)"))
    else:
        cases.update(haiku_cases([str(script)], config, {}))
    if haiku_rag is not None:
        assert docs is not None
        hr_config, hr_db = build_haiku_rag_db(haiku_rag, docs, work)
        cases.update(haiku_rag_cases(haiku_rag, hr_config, hr_db))
    result = run_cold(cases, repeats, work)
    result["haiku"] = " ".join(cases["haiku --help"].argv[:-1])
    result["python"] = python
    return result


def report(cold: dict) -> None:
    """The human-readable table."""
    print(f"(c) cold start, medians of {cold['repeats']} alternating runs ({cold['haiku']}):")
    print(f"      {'':52} {'wall':>7} {'cpu':>7} {'wall x pass':>11} {'x lancedb wall':>14} {'cpu':>5}")
    for k, s in cold["rows"].items():
        print(
            f"      {k:52} {s['wall_s']:6.3f}s {s['cpu_s']:6.3f}s {s['wall_x_pass']:11.1f}"
            f" {s['wall_x_import_lancedb']:14.2f} {s['cpu_x_import_lancedb']:5.2f}"
        )
    for theirs, ours in HAIKU_RAG_PAIRS.items():
        if "wall_x_haiku" in cold["rows"].get(theirs, {}):
            s = cold["rows"][theirs]
            print(f"      {theirs} / {ours}: wall {s['wall_x_haiku']:.2f}x, cpu {s['cpu_x_haiku']:.2f}x")
    print(f"      load average (1 min) per round: {', '.join(f'{x:.2f}' for x in cold['loadavg_1min'])}")

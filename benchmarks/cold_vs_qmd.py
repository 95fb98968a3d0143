"""A `haiku search` as users start it: a fresh process, a reused `haiku daemon`, and qmd's BM25 search.

    python benchmarks/cold_vs_qmd.py --data ../shared/data/cisi --work /tmp/haiku-cold --runs 20 \
        [--install VENV] [--qmd PATH] [--json]

Every row is a whole process started by this script, all rows alternating round by round, so a change in
machine load hits each alike. Wall time is from spawn to exit; CPU is the process's user + system (all
threads, from `wait4`). A reused row also counts the CPU the daemon spent on that command (its
/proc/PID/stat before and after), shown apart. Before timing, each reused search's output is checked to be
byte for byte the fresh process's. With --install, the `haiku` timed is this checkout installed as users
install it, `pip install .` into the virtualenv VENV (made when missing): bytecode compiled at install, no
editable-install finder; the `haiku` of the running Python (an editable checkout) then gets a fresh row of
its own, labelled so. qmd (https://github.com/tobi/qmd) indexes the same Markdown files
(`qmd collection add`), and `qmd search` is its BM25 full-text search; pass its binary with --qmd.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DEFAULT_DATA, Table, load_beir, result, write_corpus_files

QUERY = "the use of computers in libraries"
FTS_ROW = "haiku search --type fts"
QMD_ROW = "qmd search (BM25)"
TICKS = os.sysconf("SC_CLK_TCK")


def daemon_cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one process, and its stdout; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    chunks: list[bytes] = []
    errs: list[bytes] = []
    streams = {proc.stdout: chunks, proc.stderr: errs}
    while streams:
        ready, _, _ = select.select(list(streams), [], [])
        for stream in ready:
            data = os.read(stream.fileno(), 1 << 16)
            if data:
                streams[stream].append(data)
            else:
                del streams[stream]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {b''.join(errs).decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, b"".join(chunks)


def build(work: Path, data: Path, docs: int, haiku: list[str], env: dict[str, str]) -> Path:
    """CISI's first `docs` abstracts as Markdown files, and a haiku database of them (reused when there)."""
    folder = work / "docs"
    if not folder.exists():
        corpus, _, _ = load_beir(data)
        ids = sorted(corpus, key=int)[:docs]
        write_corpus_files({i: corpus[i] for i in ids}, folder)
    config = work / "config.toml"
    config.write_text('[databases]\ncisi = "cisi.lancedb"\n', encoding="utf-8")
    if not (work / "cisi.lancedb").exists():
        subprocess.run([*haiku, "add-src", str(folder)], env=env, check=True, capture_output=True)
    return config


def install(venv: Path) -> Path:
    """This checkout installed into `venv` as the README installs it (`pip install .`); its `haiku`."""
    root = Path(__file__).resolve().parent.parent
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", str(root)], check=True)
    else:  # dependencies are there: only haiku itself again, from the checkout as it is now
        pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--force-reinstall", "--no-deps", str(root)]
        subprocess.run(pip, check=True)
    return venv / "bin" / "haiku"


def start_daemon(haiku: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """`haiku daemon`, once it says it answers."""
    proc = subprocess.Popen(
        [*haiku, "daemon"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    said = b""
    while b"daemon answering" not in said:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError(f"the daemon did not start: {said.decode()}")
        said += line
    return proc


def qmd_setup(qmd: str, work: Path) -> dict[str, str]:
    """qmd's index of the same files, in its own home under `work`; its environment."""
    home = work / "qmd-home"
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    if not home.exists():
        home.mkdir(parents=True)
        subprocess.run(
            [qmd, "collection", "add", str(work / "docs"), "--name", "cisi"],
            env=env,
            check=True,
            capture_output=True,
            cwd=work,
        )
    return env


def main() -> None:
    with result("daemon", "Repeated commands through `haiku daemon`") as table:
        daemon_rows(table, run())


def daemon_rows(table: Table, found: dict) -> None:
    """Each command's whole process, fresh and through the daemon (and qmd's when given)."""
    table.columns = ("command", "wall p50 s", "wall p95 s", "CPU p50 s", "the daemon's CPU, mean s")
    table.comparison = (
        f"the same search as a fresh process (`HAIKU_NO_DAEMON=1`), in turn with it: medians of "
        f"{found['runs']} rounds over {found['docs']} CISI documents"
    )
    for case, got in found["rows"].items():
        daemon = got.get("daemon_cpu_mean_s")
        table.add(
            f"`{case}`",
            f"{got['wall_p50_s']:.3f}",
            f"{got['wall_p95_s']:.3f}",
            f"{got['cpu_p50_s']:.3f}",
            "" if daemon is None else f"{daemon:.3f}",
        )
    table.notes = against_qmd(found)


def against_qmd(found: dict) -> str:
    """The ratios to qmd's BM25 search in the same rounds, and how the timed haiku was installed."""
    rows = found["rows"]
    qmd = rows.get(QMD_ROW)
    installed = (
        "haiku installed as the README installs it: `pip install .` into a fresh virtualenv (bytecode "
        "compiled at install, no editable-install finder)"
        if found.get("installed")
        else "haiku run from the benchmark's own environment"
    )
    if qmd is None:
        return f"{installed}."
    reused, fresh = rows[f"{FTS_ROW}, daemon reused"], rows[f"{FTS_ROW}, fresh process"]
    both = reused["cpu_p50_s"] + reused["daemon_cpu_mean_s"]
    text = (
        f"Against qmd's BM25 `search` in the same rounds: an fts search through the daemon costs "
        f"{both / qmd['cpu_p50_s']:.2f}x its CPU ({reused['cpu_p50_s']:.3f} s in the client + "
        f"{reused['daemon_cpu_mean_s']:.3f} s in the daemon, against {qmd['cpu_p50_s']:.3f} s) and "
        f"{reused['wall_p50_s'] / qmd['wall_p50_s']:.2f}x its wall time; as a fresh process, "
        f"{fresh['cpu_p50_s'] / qmd['cpu_p50_s']:.2f}x its CPU. {installed}."
    )
    editable = rows.get(f"{FTS_ROW}, fresh process, editable install")
    compiles = (
        "; with PYTHONDONTWRITEBYTECODE=1, as here, each run compiles haiku's modules from source"
        if found.get("dont_write_bytecode")
        else ""
    )
    if editable is not None:
        text += (
            " The same checkout as an editable install (`pip install -e .`, as a developer runs it"
            f"{compiles}): "
            f"{editable['cpu_p50_s'] / qmd['cpu_p50_s']:.2f}x qmd's CPU."
        )
    return (
        text
        + " VENV: a virtualenv the script makes (or reuses, reinstalling haiku from the checkout). qmd is "
        "the npm package `@tobilu/qmd`, run by `bun` (`npm i @tobilu/qmd bun`, its `node_modules/.bin` on "
        "PATH)."
    )


def run() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-cold"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the CISI folder (BEIR layout)")
    parser.add_argument("--docs", type=int, default=200, help="CISI abstracts indexed")
    parser.add_argument("--runs", type=int, default=20, help="rounds; every row runs once per round")
    parser.add_argument("--haiku", type=Path, default=Path(sys.executable).parent / "haiku")
    parser.add_argument("--qmd", help="qmd's binary (its `search` is timed on the same files)")
    parser.add_argument(
        "--install", type=Path, help="a virtualenv to `pip install .` this checkout into and time"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    editable = str(args.haiku)
    if args.install:
        args.haiku = install(args.install.resolve())
    haiku = [str(args.haiku)]
    base = {k: v for k, v in os.environ.items() if k != "HAIKU_NO_DAEMON"}
    base |= {"HAIKU_CONFIG": str(work / "config.toml"), "HAIKU_RUNTIME_DIR": str(work / "run")}
    fresh = {**base, "HAIKU_NO_DAEMON": "1"}
    build(work, args.data, args.docs, haiku, fresh)
    python = str(args.haiku.parent / "python") if (args.haiku.parent / "python").exists() else sys.executable

    fts, hybrid = ["search", "--type", "fts", QUERY], ["search", QUERY]
    rows: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([python, "-c", "pass"], base),
        f"{FTS_ROW}, fresh process": ([*haiku, *fts], fresh),
        "haiku search (hybrid), fresh process": ([*haiku, *hybrid], fresh),
        f"{FTS_ROW}, daemon reused": ([*haiku, *fts], base),
        "haiku search (hybrid), daemon reused": ([*haiku, *hybrid], base),
    }
    if args.install and Path(editable).exists():
        rows[f"{FTS_ROW}, fresh process, editable install"] = ([editable, *fts], fresh)
    if args.qmd:
        qenv = qmd_setup(args.qmd, work)
        rows[QMD_ROW] = ([args.qmd, "search", QUERY], qenv)

    daemon = start_daemon(haiku, base, work)
    try:
        for kind, line in (("fts", fts), ("hybrid", hybrid)):
            theirs = timed([*haiku, *line], base, work)[2]
            ours = timed([*haiku, *line], fresh, work)[2]
            assert theirs == ours, f"{kind}: the daemon's output differs from a fresh process's"
        walls: dict[str, list[float]] = {k: [] for k in rows}
        cpus: dict[str, list[float]] = {k: [] for k in rows}
        served: dict[str, list[float]] = {k: [] for k in rows if "reused" in k}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for key, (argv, env) in rows.items():
                before = daemon_cpu(daemon.pid) if key in served else 0.0
                wall, cpu, _ = timed(argv, env, work)
                if key in served:
                    served[key].append(daemon_cpu(daemon.pid) - before)
                walls[key].append(wall)
                cpus[key].append(cpu)
            loads.append(os.getloadavg()[0])
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)

    def q(xs: list[float], p: float) -> float:
        return round(statistics.quantiles(xs, n=100, method="inclusive")[p - 1], 4) if len(xs) > 1 else xs[0]

    found = {
        "runs": args.runs,
        "docs": args.docs,
        "query": QUERY,
        "installed": bool(args.install),
        "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
        "loadavg_1min": [round(x, 2) for x in loads],
        "cpus": os.cpu_count(),
        "rows": {
            k: {
                "wall_p50_s": q(walls[k], 50),
                "wall_p95_s": q(walls[k], 95),
                "cpu_p50_s": q(cpus[k], 50),
                # /proc counts in clock ticks (10 ms): the mean over every command is the finer figure.
                **({"daemon_cpu_mean_s": round(sum(served[k]) / len(served[k]), 4)} if k in served else {}),
            }
            for k in rows
        },
    }
    if args.json:
        print(json.dumps(found, indent=2))
        return found
    print(f"{args.runs} alternating rounds, {args.docs} CISI documents, query {QUERY!r}")
    print(f"{'':42} {'wall p50':>9} {'wall p95':>9} {'cpu p50':>8} {'daemon cpu (mean)':>17}")
    for k, r in found["rows"].items():
        extra = f"{r['daemon_cpu_mean_s']:10.3f}" if "daemon_cpu_mean_s" in r else ""
        print(f"{k:42} {r['wall_p50_s']:9.3f} {r['wall_p95_s']:9.3f} {r['cpu_p50_s']:8.3f} {extra}")
    print("load average (1 min) per round:", ", ".join(f"{x:.1f}" for x in loads))
    return found


if __name__ == "__main__":
    main()

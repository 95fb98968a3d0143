"""Run the benchmarks that fit a 2-core machine, then regenerate benchmarks/README.md from their JSON.

Every benchmark script writes its table to `benchmarks/results/AREA.json` in one shape (`common.result`,
described in benchmarks/README.md's header); this renders every such file, with no knowledge of any area.

    python benchmarks/run_all.py --quick          # the quick set (under 15 minutes on 2 cores), then render
    python benchmarks/run_all.py --only embedder  # one area's script, then render
    python benchmarks/run_all.py --render         # only regenerate the README's tables from the JSON

CISI and the PDFs are read from the shared data folder beside the checkout (`--data`); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
sys.path.insert(0, str(HERE))
from common import DEFAULT_DATA, Table, result  # noqa: E402

# The fields of a results file; `columns` name the cells of each of `rows`.
SHAPE = ("area", "title", "comparison", "machine", "load", "command", "columns", "rows", "notes")


@dataclass(frozen=True)
class Area:
    """A script that writes one table: its arguments, and whether the quick set runs it."""

    key: str
    script: str
    args: tuple[str, ...] = ()
    quick: bool = False
    work: bool = False  # takes `--work DIR`: the conversation scripts share one 300-document database
    cisi: bool = False  # takes `--data DIR`: the CISI folder

    def command(self) -> str:
        return " ".join(["python", f"benchmarks/{self.script}", *self.args])


# The README's order. A results file of an area not listed here is rendered after these, by area key.
AREAS: tuple[Area, ...] = (
    Area("quick_set", "run_all.py", ("--quick",)),
    Area("quality", "retrieval_quality.py", ("--weights", "0.2,0.3,0.4,0.6,0.7,0.8"), quick=True, cisi=True),
    Area("embedder", "embedder_throughput.py", ("--n", "300"), quick=True, cisi=True),
    Area("cold", "latency.py", ("--parts", "cold", "--cold-repeats", "7")),
    Area("daemon", "cold_vs_qmd.py"),
    Area("fresh_read", "fresh_read.py", ("--rounds", "15")),
    Area("query", "query_path.py", ("--sizes", "100000", "--rounds", "3")),
    Area("fanout", "fanout_floor.py", ("--size", "100000", "--parts", "1,2,4,8")),
    Area("ingest", "add_memory_phases.py", ("--docs", "20000")),
    Area("upkeep", "index_upkeep.py", ("keys", "--sizes", "100000,400000", "--writes", "12")),
    Area("conversation", "compaction.py", ("--docs", "300"), quick=True, work=True, cisi=True),
    Area("chat", "chat_requests.py", ("--docs", "300"), quick=True, work=True, cisi=True),
    Area("deferred", "deferred.py", ("--docs", "300"), quick=True, work=True, cisi=True),
    Area("context", "hit_context.py", ("--docs", "300"), quick=True, work=True, cisi=True),
    Area("pictures", "pictures.py"),
    Area("publish", "publish_cost.py", ("--documents", "200", "--added", "10"), quick=True),
    Area("freshness", "sync_watch.py"),
    Area("source_state", "source_freshness.py", ("--rounds", "200"), quick=True),
    Area("serve", "serve.py", ("--passes", "20")),
    Area(
        "server_memory",
        "server_memory.py",
        ("--rounds", "5", "--max-open", "2", "--out", "benchmarks/results/raw/server_memory.json"),
    ),
    Area("pdf", "pdf_reading.py", ("--rounds", "3")),
    Area("ray", "ray_ingest.py", ("--driver-only", "--copies", "3")),
    Area("reliability", "reliability.py", ("stress", "--seconds", "60")),
    Area("crash_soak", "crash_soak.py", ("--minutes", "10")),
)


def run_area(area: Area, data: Path, work: Path) -> float:
    """Run one area's script (it writes its own JSON); the seconds it took."""
    extra = ["--data", str(data)] if area.cisi else []
    if area.work:
        extra += ["--work", str(work / "cisi-300")]
    print(f"{area.key}: {area.command()}", file=sys.stderr, flush=True)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, str(HERE / area.script), *area.args, *extra],
        check=True,
        cwd=HERE.parent,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    return time.monotonic() - started


def run_quick(chosen: list[Area], data: Path) -> None:
    """Run the areas, then write the quick set's own table: what each took, end to end."""
    with result("quick_set", "The quick set, end to end", comparison="the 15-minute budget") as table:
        table.columns = ("area", "script", "seconds")
        with tempfile.TemporaryDirectory(prefix="haiku-bench-") as work:
            for area in chosen:
                table.add(area.key, f"`{area.command()}`", f"{run_area(area, data, Path(work)):.0f}")
        _total(table)


def _total(table: Table) -> None:
    seconds = sum(float(row[2]) for row in table.rows)
    table.add("**all**", f"{len(table.rows)} scripts", f"**{seconds:.0f}** ({seconds / 60:.1f} minutes)")


def cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_table(found: dict) -> str:
    """One area's section of the README, from a file of the common shape."""
    columns = found["columns"]
    lines = [f"## {found['title']}", ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in found["rows"]]
    lines.append("")
    if found.get("comparison"):
        lines += [f"Compared against: {found['comparison']}.", ""]
    lines.append(f"Machine: {found['machine']}; {found['load']}. Reproduce: `{found['command']}`.")
    if found.get("notes"):
        lines += ["", found["notes"]]
    return "\n".join(lines) + "\n"


def load_results(results: Path = RESULTS) -> list[dict]:
    """Every results file, in the README's order; one missing a field of the shape is refused by name."""
    order = {a.key: i for i, a in enumerate(AREAS)}
    found = []
    for path in sorted(results.glob("*.json")):
        got = json.loads(path.read_text(encoding="utf-8"))
        missing = [k for k in SHAPE if k not in got]
        if missing or got["area"] != path.stem:
            sys.exit(f"{path}: not the common shape (missing {missing or 'area == file name'}); see README")
        found.append(got)
    return sorted(found, key=lambda r: (order.get(r["area"], len(order)), r["area"]))


BEGIN = "<!-- --8<-- [start:tables] -->"
END = "<!-- --8<-- [end:tables] -->"


def render(readme: Path = README, results: Path = RESULTS) -> str:
    """The README with its tables regenerated from the JSON."""
    tables = "\n".join(render_table(r) for r in load_results(results))
    text = readme.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n\n{tables}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="run the quick set, then render")
    mode.add_argument("--only", action="append", help="run this area's script, then render (repeatable)")
    mode.add_argument("--render", action="store_true", help="only regenerate the README from the JSON")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CISI in BEIR layout")
    args = parser.parse_args()
    if args.quick:
        run_quick([a for a in AREAS if a.quick], args.data)
    elif args.only:
        known = {a.key: a for a in AREAS}
        if unknown := [k for k in args.only if k not in known]:
            sys.exit(f"no area {', '.join(unknown)}; areas: {', '.join(known)}")
        with tempfile.TemporaryDirectory(prefix="haiku-bench-") as work:
            for key in args.only:
                run_area(known[key], args.data, Path(work))
    README.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()

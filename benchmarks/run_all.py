"""Run the benchmarks that fit a 2-core machine, then regenerate benchmarks/README.md from their JSON.

Each area's current figures live in `benchmarks/results/AREA.json` (committed): its rows (figure, value,
what it is compared against, the ratio), the machine and load they were taken at, and the command that
reproduces them. A run of an area's script replaces its file; areas not run keep their last figures.

    python benchmarks/run_all.py                 # the quick set (under 15 minutes on 2 cores), then render
    python benchmarks/run_all.py --only embedder # one area, then render
    python benchmarks/run_all.py --render-only   # only regenerate the README's tables from the JSON

The data sets are read from `--data` (CISI, BEIR layout) and `--pdfs`; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "cisi"

Row = dict[str, str]


@dataclass(frozen=True)
class Area:
    """One table of the README: the script that measures it and how its JSON becomes rows."""

    key: str
    title: str
    script: str
    args: tuple[str, ...]
    quick: bool = False  # part of the set `run_all.py` runs by default
    extract: Callable[[Any], list[Row]] | None = None
    needs: tuple[str, ...] = field(default=())  # "data" (CISI), "pdfs"

    def command(self) -> str:
        return " ".join(["python", f"benchmarks/{self.script}", *self.args])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else ""


def _embedder(raw: dict) -> list[Row]:
    return [
        {
            "figure": "bundled embedder, one text per call",
            "value": f"{raw['paragraphs_per_s']} paragraphs/s ({raw['paragraphs_per_cpu_s']} per CPU-s)",
            "against": f"{raw['paragraphs']} CISI abstracts, mean {raw['mean_tokens']} tokens",
            "ratio": "",
        },
        {"figure": "model load", "value": f"{raw['load_s']} s", "against": "", "ratio": ""},
    ]


def _quality(raw: dict) -> list[Row]:
    rows = []
    for layout, label in (("single", "one database"), ("split3", "split 3 ways")):
        for kind in ("fts", "vector", "hybrid"):
            m = raw[f"{layout}/{kind}"]
            single = raw[f"single/{kind}"]["ndcg@10"]
            rows.append(
                {
                    "figure": f"{label}, {kind}: nDCG@10 / recall@100 / MRR@10",
                    "value": f"{m['ndcg@10']:.4f} / {m['recall@100']:.4f} / {m['mrr@10']:.4f}",
                    "against": "one database, same type" if layout == "split3" else "",
                    "ratio": _ratio(m["ndcg@10"], single) if layout == "split3" else "",
                }
            )
    return rows


def _compaction(raw: dict) -> list[Row]:
    plain, compacted = raw["plain"][-1], raw["compacted"][-1]
    turns = len(raw["plain"])
    return [
        {
            "figure": f"largest request of turn {turns}, with evidence compaction",
            "value": f"{compacted['largest_chars']:,} chars ({compacted['largest_tokens']:,} tokens)",
            "against": f"without: {plain['largest_chars']:,} chars ({plain['largest_tokens']:,} tokens)",
            "ratio": _ratio(compacted["largest_chars"], plain["largest_chars"]),
        }
    ]


AREAS: tuple[Area, ...] = (
    Area(
        "quality",
        "Retrieval quality (CISI, 76 judged queries)",
        "retrieval_quality.py",
        ("--json",),
        quick=True,
        extract=_quality,
        needs=("data",),
    ),
    Area(
        "embedder",
        "Bundled embedder",
        "embedder_throughput.py",
        ("--n", "300", "--json"),
        quick=True,
        extract=_embedder,
        needs=("data",),
    ),
    Area("cold", "Cold commands", "latency.py", ("--parts", "cold", "--cold-repeats", "7")),
    Area("daemon", "Repeated commands through `haiku daemon`", "cold_vs_qmd.py", ()),
    Area(
        "query",
        "Query latency at 100k and 1M chunks",
        "query_path.py",
        ("--sizes", "100000", "--rounds", "3"),
    ),
    Area(
        "fanout", "Fan-out over several databases", "fanout_wall.py", ("--size", "100000", "--parts", "2,4,8")
    ),
    Area("ingest", "Ingest throughput and memory", "add_memory_phases.py", ("--docs", "20000")),
    Area("upkeep", "Index upkeep per write", "index_upkeep.py", ()),
    Area(
        "conversation",
        "Request size in conversations",
        "compaction.py",
        ("--docs", "300", "--json"),
        quick=True,
        extract=_compaction,
        needs=("data",),
    ),
    Area("context", "Context around hits, deferred loading, pictures", "hit_context.py", ("--docs", "300")),
    Area("freshness", "Keeping sources fresh: `sync` and `watch`", "sync_watch.py", ()),
    Area("serve", "`haiku serve` and `haiku mcp`", "serve.py", ("--passes", "20")),
    Area("pdf", "Reading PDFs and big inputs", "pdf_reading.py", ("--rounds", "3")),
    Area("ray", "Ingest on Ray", "ray_ingest.py", ("--driver-only", "--copies", "3")),
    Area(
        "reliability",
        "Reliability under concurrent writers and kills",
        "reliability.py",
        ("stress", "--seconds", "60"),
    ),
)


def machine() -> str:
    """What the figures were taken on, as a reader of the table needs it."""
    return (
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python {platform.python_version()}"
    )


def parse_output(stdout: str) -> Any:
    """A script's JSON: the whole output, else its last line that is a JSON object."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        last = [line for line in stdout.splitlines() if line.startswith("{")]
        return json.loads(last[-1])


def run_area(area: Area, data: Path, pdfs: Path | None) -> dict:
    """Run one area's script and turn its JSON into the area's result."""
    assert area.extract is not None
    extra: list[str] = []
    if "data" in area.needs:
        extra += ["--data", str(data)] if area.script != "embedder_throughput.py" else [str(data)]
    if "pdfs" in area.needs and pdfs is not None:
        extra += ["--data", str(pdfs)]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(HERE / area.script), *area.args, *extra],
        capture_output=True,
        text=True,
        check=True,
        cwd=HERE.parent,
    )
    seconds = time.monotonic() - started
    load = f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    return {
        "key": area.key,
        "title": area.title,
        "command": area.command(),
        "machine": machine(),
        "load": load,
        "run_seconds": round(seconds, 1),
        "rows": area.extract(parse_output(out.stdout)),
        "raw": parse_output(out.stdout),
    }


def render_table(result: dict) -> str:
    """One area's section of the README."""
    lines = [f"## {result['title']}", ""]
    lines += ["| figure | value | compared against | ratio |", "| --- | --- | --- | --- |"]
    for row in result["rows"]:
        lines.append(
            f"| {row['figure']} | {row['value']} | {row.get('against', '')} | {row.get('ratio', '')} |"
        )
    lines += ["", f"Machine: {result['machine']}; {result['load']}. Reproduce: `{result['command']}`."]
    if result.get("notes"):
        lines += ["", result["notes"]]
    return "\n".join(lines) + "\n"


BEGIN = "<!-- --8<-- [start:tables] -->"
END = "<!-- --8<-- [end:tables] -->"


def render(readme: Path = README, results: Path = RESULTS) -> str:
    """The README with its tables regenerated from the JSON, in the areas' order."""
    order = {a.key: i for i, a in enumerate(AREAS)}
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(results.glob("*.json"))]
    found.sort(key=lambda r: order.get(r["key"], len(order)))
    tables = "\n".join(render_table(r) for r in found)
    text = readme.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n\n{tables}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render-only", action="store_true", help="only regenerate the README from the JSON")
    parser.add_argument("--only", action="append", default=[], help="run this area (repeatable)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CISI in BEIR layout")
    parser.add_argument("--pdfs", type=Path, default=None, help="a folder of real PDFs")
    args = parser.parse_args()
    if not args.render_only:
        chosen = [a for a in AREAS if (a.key in args.only if args.only else a.quick)]
        for area in chosen:
            if area.extract is None:
                sys.exit(f"{area.key}: not in the quick set; run `{area.command()}` and edit its JSON")
            print(f"{area.key}: {area.command()}", file=sys.stderr, flush=True)
            result = run_area(area, args.data, args.pdfs)
            (RESULTS / f"{area.key}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    README.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()

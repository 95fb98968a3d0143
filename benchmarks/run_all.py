"""Run the benchmarks that fit a 2-core machine, then regenerate benchmarks/README.md from their JSON.

Each area's current figures live in `benchmarks/results/AREA.json` (committed): its rows (figure, value,
what it is compared against, the ratio), the machine and load they were taken at, and the command that
reproduces them. A run of an area's script replaces its file; areas not run keep their last figures.

    python benchmarks/run_all.py                 # the quick set (under 15 minutes on 2 cores), then render
    python benchmarks/run_all.py --only embedder # one area, then render
    python benchmarks/run_all.py --render-only   # only regenerate the README's tables from the JSON

CISI is read from `--data` (BEIR layout); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
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
    needs: tuple[str, ...] = field(default=())  # "data": the CISI folder

    def command(self) -> str:
        return " ".join(["python", f"benchmarks/{self.script}", *self.args])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else ""


def _row(figure: str, value: str, against: str = "", ratio: str = "") -> Row:
    return {"figure": figure, "value": value, "against": against, "ratio": ratio}


def _source_state(raw: dict) -> list[Row]:
    rows = []
    for kind, name in (("fts", "full text"), ("hybrid", "hybrid")):
        for measure in ("wall", "cpu"):
            got = raw[kind][measure]
            rows.append(
                _row(
                    f"warm 10-hit {name} search, {raw['files']} local files, {measure} p50, sources checked",
                    f"{got['checked']['p50_ms']} ms (+{got['overhead_pct']}%)",
                    f"unchecked {got['unchecked']['p50_ms']} ms (goal: <= 5% more)",
                    _ratio(got["checked"]["p50_ms"], got["unchecked"]["p50_ms"]),
                )
            )
    alone = raw["check_only"]
    rows.append(_row(f"the check alone, {alone['documents']} documents", f"{alone['cpu_ms']} ms CPU"))
    return rows


def _embedder(raw: dict) -> list[Row]:
    return [
        _row(
            "bundled embedder (all-MiniLM-L6-v2, ONNX, int8), one text per call",
            f"{raw['paragraphs_per_s']} paragraphs/s ({raw['paragraphs_per_cpu_s']} per CPU-s)",
            f"{raw['paragraphs']} CISI abstracts, mean {raw['mean_tokens']} tokens",
        ),
        _row("model load (onnxruntime import, session, tokenizer)", f"{raw['load_s']} s"),
    ]


def _quality(raw: dict) -> list[Row]:
    rows = []
    for layout, label in (("single", "one database"), ("split3", "split 3 ways")):
        for kind in ("fts", "vector", "hybrid"):
            m = raw[f"{layout}/{kind}"]
            split = layout == "split3"
            rows.append(
                _row(
                    f"{label}, {kind}: nDCG@10 / recall@100 / MRR@10",
                    f"{m['ndcg@10']:.4f} / {m['recall@100']:.4f} / {m['mrr@10']:.4f}",
                    "one database, same type" if split else "",
                    _ratio(m["ndcg@10"], raw[f"single/{kind}"]["ndcg@10"]) if split else "",
                )
            )
    hybrid, vector, fts = (raw[f"single/{k}"]["ndcg@10"] for k in ("hybrid", "vector", "fts"))
    rows.append(
        _row("hybrid nDCG@10 over vector / over fts", "", "", f"{hybrid / vector:.3f}x / {hybrid / fts:.3f}x")
    )
    weights = sorted((float(k.split("=")[1]), v["ndcg@10"]) for k, v in raw.items() if "@w=" in k)
    if weights:
        rows.append(
            _row(
                "hybrid nDCG@10 by vector weight " + " / ".join(f"{w:g}" for w, _ in weights),
                " / ".join(f"{n:.4f}" for _, n in weights),
                f"default 0.5: {hybrid:.4f}; vector alone {vector:.4f}",
            )
        )
    return rows


def _turn(label: str, mine: dict, other: dict, other_label: str) -> list[Row]:
    return [
        _row(
            f"{label}: largest request of the last question",
            f"{mine['largest_chars']:,} chars ({mine['largest_tokens']:,} tokens)",
            f"{other_label}: {other['largest_chars']:,} chars ({other['largest_tokens']:,} tokens)",
            _ratio(mine["largest_chars"], other["largest_chars"]),
        ),
        _row(
            f"{label}: first request of the last question (the carried history)",
            f"{mine['first_chars']:,} chars",
            f"{other_label}: {other['first_chars']:,} chars",
            _ratio(mine["first_chars"], other["first_chars"]),
        ),
    ]


def _compaction(raw: dict) -> list[Row]:
    label = f"{len(raw['plain'])}-question conversation with evidence compaction"
    return _turn(label, raw["compacted"][-1], raw["plain"][-1], "without")


def _chat(raw: dict) -> list[Row]:
    label = f"`haiku chat`, {len(raw['chat'])} questions"
    return _turn(label, raw["chat"][-1], raw["no_compaction"][-1], "compaction left out")


def _deferred(raw: dict) -> list[Row]:
    def mean(rows: list[dict], key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    out = []
    for kind in ("ask", "analyze", "chat"):
        eager = raw[kind]["eager"]
        for name, late in raw[kind].items():
            if name == "eager":
                continue
            out.append(
                _row(
                    f"{kind}, {name}: characters sent per question (requests)",
                    f"{mean(late, 'chars'):,.0f} ({mean(late, 'requests'):.1f})",
                    f"loaded up front: {mean(eager, 'chars'):,.0f} ({mean(eager, 'requests'):.1f})",
                    _ratio(mean(late, "chars"), mean(eager, "chars")),
                )
            )
    return out


def _context(raw: dict) -> list[Row]:
    bounds, twice = raw["bounds"], raw["two_searches"]
    rows = [
        _row(
            f"one search, `[search] context_chars` {bound}: characters per question",
            f"{b['chars_per_question']:,.0f} (largest {b['max_chars']:,})",
            f"chunks alone: {bounds['0']['chars_per_question']:,.0f}",
            f"{b['ratio_to_chunks_alone']:.2f}x",
        )
        for bound, b in bounds.items()
        if bound != "0"
    ]
    rows += [
        _row(
            f"two searches of one question, context_chars {bound}: each text sent once",
            f"{w['sent_once_chars_per_question']:,.0f} chars",
            f"resent: {w['resent_chars_per_question']:,.0f}",
            f"{w['ratio']:.2f}x",
        )
        for bound, w in twice.items()
    ]
    return rows


def _server_memory(raw: dict) -> list[Row]:
    each = raw["chunks"] // raw["databases"]
    cold = raw["startup"]["cold fts search"]["cpu_s_p50"]
    rows = [
        _row(
            f"{case}: CPU from start, p50",
            f"{got['cpu_s_p50']} CPU-s",
            f"a cold `haiku search --type fts`: {cold} CPU-s (goal: <= 1.0x)",
            f"{got['x_cold_search']:.2f}x",
        )
        for case, got in raw["startup"].items()
        if case != "cold fts search"
    ]
    for limit, run in raw["memory"].items():
        label = (
            f"`haiku mcp` RSS, {run['searches']:,} searches, {raw['databases']} databases of {each:,} chunks"
        )
        label += "" if limit == "default" else f", {limit}"
        curve = " / ".join(f"{mb:.0f}" for n, mb in run["curve"] if n % 100 == 0)
        rows += [
            _row(
                f"{label}: start / warm / peak / final",
                " / ".join(f"{run[k]:.0f}" for k in ("start_mb", "warm_mb", "peak_mb", "final_mb")) + " MB",
            ),
            _row(f"{label}: every 100 searches", f"{curve} MB"),
            _row(
                f"{label}: growth over the last half",
                f"{run['last_half_slope_mb_per_1000']:+.1f} MB per 1,000 searches",
                "goal: flat after warm-up",
            ),
        ]
    return rows


CISI = ("data",)
AREAS: tuple[Area, ...] = (
    Area(
        "quality",
        "Retrieval quality (CISI, 76 judged queries)",
        "retrieval_quality.py",
        ("--weights", "0.2,0.3,0.4,0.6,0.7,0.8", "--json"),
        quick=True,
        extract=_quality,
        needs=CISI,
    ),
    Area(
        "embedder",
        "Bundled embedder",
        "embedder_throughput.py",
        ("--n", "300", "--json"),
        quick=True,
        extract=_embedder,
        needs=CISI,
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
        "fanout",
        "Fan-out over several databases",
        "fanout_floor.py",
        ("--size", "100000", "--parts", "1,2,4,8"),
    ),
    Area("ingest", "Ingest throughput and memory", "add_memory_phases.py", ("--docs", "20000")),
    Area("upkeep", "Index upkeep per write", "index_upkeep.py", ()),
    Area(
        "conversation",
        "Request size in a conversation: evidence compaction",
        "compaction.py",
        ("--docs", "300", "--json"),
        quick=True,
        extract=_compaction,
        needs=CISI,
    ),
    Area(
        "chat",
        "Request size in `haiku chat`",
        "chat_requests.py",
        ("--docs", "300", "--json"),
        quick=True,
        extract=_chat,
        needs=CISI,
    ),
    Area(
        "deferred",
        "Deferred capabilities: what a question sends",
        "deferred.py",
        ("--docs", "300", "--json"),
        quick=True,
        extract=_deferred,
        needs=CISI,
    ),
    Area(
        "context",
        "Context around hits",
        "hit_context.py",
        ("--docs", "300", "--json"),
        quick=True,
        extract=_context,
        needs=CISI,
    ),
    Area("pictures", "Pictures: ingest cost", "pictures.py", ()),
    Area(
        "publish",
        "Publishing a database: requests and bytes",
        "publish_cost.py",
        ("--documents", "200", "--added", "10", "--json"),
    ),
    Area("freshness", "Keeping sources fresh: `sync` and `watch`", "sync_watch.py", ()),
    Area(
        "source_state",
        "Each hit's source checked (`source_state`): the cost on a warm search",
        "source_freshness.py",
        ("--rounds", "200"),
        extract=_source_state,
    ),
    Area("serve", "`haiku serve` and `haiku mcp`", "serve.py", ("--passes", "20")),
    Area(
        "server_memory",
        "Long-lived servers: start-up CPU and memory over 1,000 searches",
        "server_memory.py",
        ("--rounds", "5", "--max-open", "2", "--out", "benchmarks/results/raw/server_memory.json"),
        extract=_server_memory,
    ),
    Area("pdf", "Reading PDFs", "pdf_reading.py", ("--rounds", "3")),
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


def run_area(area: Area, data: Path, work: Path) -> dict:
    """Run one area's script and turn its JSON into the area's result."""
    assert area.extract is not None
    extra: list[str] = []
    if "data" in area.needs:
        extra += ["--data", str(data)] if area.script != "embedder_throughput.py" else [str(data)]
    if "--docs" in area.args:  # the conversation scripts build (or reuse) one 300-document database
        extra += ["--work", str(work / "cisi-300")]
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
        "notes": previous_notes(area.key),
    }


def previous_notes(key: str) -> str:
    """What the README says under an area beside its figures, kept across runs."""
    path = RESULTS / f"{key}.json"
    return json.loads(path.read_text(encoding="utf-8")).get("notes", "") if path.exists() else ""


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
    args = parser.parse_args()
    if not args.render_only:
        chosen = [a for a in AREAS if (a.key in args.only if args.only else a.quick)]
        with tempfile.TemporaryDirectory(prefix="haiku-bench-") as work:
            for area in chosen:
                if area.extract is None:
                    sys.exit(f"{area.key}: not in the quick set; run `{area.command()}` and edit its JSON")
                print(f"{area.key}: {area.command()}", file=sys.stderr, flush=True)
                result = run_area(area, args.data, Path(work))
                text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
                (RESULTS / f"{area.key}.json").write_text(text, encoding="utf-8")
    README.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()

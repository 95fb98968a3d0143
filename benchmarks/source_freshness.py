"""What checking each hit's source costs a warm 10-hit search over local files (goal: <= 5%).

A folder of small text files is added with `add-src`; then the same warm search (one pool, the query's
vector computed once) runs with and without the per-hit source check (`check_sources`), interleaved and
the order alternating, so both see the same load. Wall and CPU (`process_time`, all threads) per search,
median and p95, for full-text and hybrid search; the overhead is the difference of the medians over the
unchecked median.

Then what `search --sync` costs before each search when nothing changed (`sync_changed`), over a folder
of `--folder-files` files in `--folder-dirs` directories synced once: with the look for new or removed
files (a `stat` per directory the last sync listed) and without it (only the remembered files stat'ed),
interleaved; and what syncing one new note costs against a whole `haiku sync` of the folder.

    python benchmarks/source_freshness.py [--files 300] [--rounds 200] [--folder-files 2000]
        [--folder-dirs 100] [--out results.json]

Writes the area's table to benchmarks/results/source_state.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Table, ratio, result

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WORDS = [
    "heron",
    "owl",
    "swift",
    "tide",
    "moon",
    "reed",
    "marsh",
    "dawn",
    "dusk",
    "wind",
    "salt",
    "stone",
    "river",
    "delta",
    "fog",
    "gull",
]
QUERIES = ["heron at dawn", "owl over the marsh", "tide and moon", "salt wind on the delta"]


def _corpus(folder: Path, files: int) -> None:
    folder.mkdir(parents=True)
    for n in range(files):
        words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(60)]
        (folder / f"note{n:04d}.txt").write_text(" ".join(words) + f" note {n}.\n", encoding="utf-8")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
    }


async def _measure(
    work: Path, files: int, rounds: int, folder_files: int, folder_dirs: int
) -> dict[str, object]:
    os.environ["HAIKU_CONFIG_DIR"] = str(work / "config")
    os.environ["HAIKU_DATA_DIR"] = str(work / "data")
    (work / "config").mkdir()
    (work / "config" / "config.toml").write_text("", encoding="utf-8")
    from haiku_cli.databases import fanout, operations
    from haiku_cli.databases.selection import Selection
    from haiku_cli.databases.workspace import Workspace

    _corpus(work / "notes", files)
    ws = Workspace.load()
    location = ws.locations["default"]
    await operations.add_sources(ws, location, [str(work / "notes")], title=None, metadata={})
    selection = Selection((location,))
    vectors = {q: await ws.embed_query(q) for q in QUERIES}
    out: dict[str, object] = {"files": files, "rounds": rounds}
    for kind in ("fts", "hybrid"):
        samples: dict[bool, dict[str, list[float]]] = {c: {"wall": [], "cpu": []} for c in (False, True)}
        for i in range(rounds + 10):  # the first 10 warm the pool, the caches and the stat cache
            query = QUERIES[i % len(QUERIES)]

            async def embed(q: str) -> object:
                return vectors[q]

            for check in (i % 2 == 0, i % 2 != 0):
                w, c = time.perf_counter(), time.process_time()
                hits = await fanout.search_set(
                    ws.pool,
                    selection,
                    query,
                    embed_query=embed,
                    search_type=kind,
                    limit=10,
                    check_sources=check,
                )
                wall, cpu = time.perf_counter() - w, time.process_time() - c
                assert len(hits) == 10 and (hits[0].source_state == "fresh") == check
                if i >= 10:
                    samples[check]["wall"].append(wall)
                    samples[check]["cpu"].append(cpu)
        result: dict[str, object] = {}
        for measure in ("wall", "cpu"):
            off, on = _stats(samples[False][measure]), _stats(samples[True][measure])
            overhead = (on["p50_ms"] - off["p50_ms"]) / off["p50_ms"] * 100
            result[measure] = {"unchecked": off, "checked": on, "overhead_pct": round(overhead, 2)}
        out[kind] = result
    # The check alone, for the documents of one 10-hit search, repeated: what the difference above is
    # made of, without the noise of a whole search on a shared machine.
    from haiku_cli.databases.freshness import check_documents

    db = (await ws.pool.clients_covering(selection))[0]
    shown = [
        h.document_id for h in await operations.search_hits(ws, selection, QUERIES[0], search_type="fts")
    ]
    w, c = time.perf_counter(), time.process_time()
    for _ in range(rounds * 10):
        await check_documents(db, shown)
    runs = rounds * 10
    out["check_only"] = {
        "documents": len(shown),
        "wall_ms": round((time.perf_counter() - w) / runs * 1000, 4),
        "cpu_ms": round((time.process_time() - c) / runs * 1000, 4),
    }
    out["sync_first"] = await _sync_first(ws, work / "tree", folder_files, folder_dirs, rounds)
    out["load_average"] = os.getloadavg()
    return out


async def _sync_first(ws: object, tree: Path, files: int, dirs: int, rounds: int) -> dict[str, object]:
    """`sync_changed` on an all-fresh folder, with and without the look at its directories."""
    from haiku_cli.databases import freshness, operations, refreshing
    from haiku_cli.databases.selection import Selection

    for n in range(files):
        folder = tree / f"d{n % dirs:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{n:05d}.txt").write_text(f"note {n} of the {WORDS[n % len(WORDS)]}.\n", encoding="utf-8")
    location = ws.locations["default"]  # type: ignore[attr-defined]
    selection = Selection((location,))
    await operations.add_sources(ws, location, [str(tree)], title=None, metadata={})  # type: ignore[arg-type]
    for top in (tree, tree.parent / "notes"):
        for directory, _, _ in os.walk(top):  # as a folder left alone a while is
            os.utime(directory, ns=(0, 1_000_000_000_000_000_000))
    whole = []
    for _ in range(3):
        w = time.perf_counter()
        await operations.sync(ws, [location])  # type: ignore[arg-type]
        whole.append(time.perf_counter() - w)
    looking = freshness.folder_changes

    def without(db: object) -> dict[str, object]:
        return {}

    samples: dict[bool, dict[str, list[float]]] = {c: {"wall": [], "cpu": []} for c in (False, True)}
    for i in range(rounds + 10):
        for look in (i % 2 == 0, i % 2 != 0):
            refreshing.folder_changes = looking if look else without  # type: ignore[assignment]
            w, c = time.perf_counter(), time.process_time()
            assert await refreshing.sync_changed(ws, selection) == []  # type: ignore[arg-type]
            if i >= 10:
                samples[look]["wall"].append(time.perf_counter() - w)
                samples[look]["cpu"].append(time.process_time() - c)
    refreshing.folder_changes = looking
    # One new note at a time: found by the look at the directories, or by a whole `haiku sync`.
    one_new, whole_new = [], []
    for n in range(5):
        (tree / f"d{(n * 7) % dirs:03d}" / f"new{n}.txt").write_text(f"New note {n}.\n", encoding="utf-8")
        w = time.perf_counter()
        (done,) = await refreshing.sync_changed(ws, selection)  # type: ignore[arg-type]
        one_new.append(time.perf_counter() - w)
        assert done[1].added == 1
        (tree / f"d{(n * 11) % dirs:03d}" / f"other{n}.txt").write_text(f"Other {n}.\n", encoding="utf-8")
        w = time.perf_counter()
        await operations.sync(ws, [location])  # type: ignore[arg-type]
        whole_new.append(time.perf_counter() - w)
    return {
        "files": files,
        "directories": dirs + 1,
        "without_directories": {m: _stats(samples[False][m]) for m in ("wall", "cpu")},
        "with_directories": {m: _stats(samples[True][m]) for m in ("wall", "cpu")},
        "one_new_note_s": round(statistics.median(one_new), 3),
        "whole_sync_s": round(statistics.median(whole_new), 3),
        "whole_sync_nothing_changed_s": round(statistics.median(whole), 3),
    }


def source_state_rows(table: Table, raw: dict, files: int) -> None:
    for kind, name in (("fts", "full text"), ("hybrid", "hybrid")):
        for measure in ("wall", "cpu"):
            got = raw[kind][measure]
            table.add(
                f"warm 10-hit {name} search, {files} local files, {measure} p50, sources checked",
                f"{got['checked']['p50_ms']} ms (+{got['overhead_pct']}%)",
                f"unchecked {got['unchecked']['p50_ms']} ms (goal: <= 5% more)",
                ratio(got["checked"]["p50_ms"], got["unchecked"]["p50_ms"]),
            )
    alone = raw["check_only"]
    table.add(f"the check alone, {alone['documents']} documents", f"{alone['cpu_ms']} ms CPU")
    first = raw.get("sync_first")
    if first is None:
        return
    where = f"{first['files']} files in {first['directories']} directories"
    for measure in ("wall", "cpu"):
        on, off = (
            first["with_directories"][measure]["p50_ms"],
            first["without_directories"][measure]["p50_ms"],
        )
        table.add(
            f"search --sync with nothing changed, {where}, {measure} p50, new files looked for",
            f"{on} ms",
            f"remembered files only {off} ms",
            ratio(on, off),
        )
    table.add(
        f"search --sync after one new note, {where}, median of 5",
        f"{first['one_new_note_s']} s",
        f"haiku sync of the folder after one new note {first['whole_sync_s']} s",
        ratio(first["one_new_note_s"], first["whole_sync_s"]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--folder-files", type=int, default=2000)
    parser.add_argument("--folder-dirs", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    args = parser.parse_args()
    title = "Each hit's source checked (`source_state`): the cost on a warm search"
    with result("source_state", title) as table, tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(_measure(Path(tmp), args.files, args.rounds, args.folder_files, args.folder_dirs))
        source_state_rows(table, found, args.files)
    text = json.dumps(found, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""The crash-and-interrupt matrix run for minutes instead of seconds, with fresh draws each batch.

The same hypothesis state machines as tests/databases/test_write_matrix.py (tests/support/write_matrix.py):
random sequences of add, add-src, sync, forget-src, delete, rebuild, vacuum and tag create/restore against
a real local database (and, one batch in four, an `s3://` one on a moto server on 127.0.0.1), each
command perhaps interrupted by Ctrl-C, a failure, `kill -9` or SIGINT of a real `haiku` process at a
checkpoint the code declares, or a full disk. After every step the invariants are checked: every
acknowledged write present, nothing unacknowledged visible, no chunk without its document or document
without chunks, what a Ctrl-C line claims is what is stored, no journal left after the next writer.
A violation is printed with hypothesis's shrunk example and counted (goal: 0).

    python benchmarks/crash_soak.py --minutes 10           # writes results/crash_soak.json and raw/
    python benchmarks/crash_soak.py --minutes 1 --no-s3 --json

The bundled embedder is loaded once (the children `haiku` processes load it too).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result, results_folder  # noqa: E402

_KINDS = ["ctrl-c", "fault", "kill", "sigint", "disk-full"]
_NOTES = (
    "Random sequences of write commands (add, add-src, sync, forget-src, delete, rebuild, vacuum, tag "
    "create/restore), each perhaps interrupted by Ctrl-C, a failure, `kill -9` or SIGINT of a real `haiku` "
    "process at a checkpoint the code declares, or a full disk; every step checked against what was "
    "acknowledged and what a Ctrl-C line claimed. CI runs the same machines derandomized "
    "(tests/databases/test_write_matrix.py); what each promise is and which test holds it: "
    "docs/reliability.md."
)


def _isolate(work: Path) -> None:
    """An empty config and data folder of the soak's own; no daemon."""
    (work / "config.toml").touch()
    os.environ.update(
        HAIKU_CONFIG=str(work / "config.toml"),
        HAIKU_DATA_DIR=str(work / "data"),
        HAIKU_NO_DAEMON="1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
    )


def _s3_endpoint() -> tuple[Any, str]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lab")
    return server, endpoint


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def soak(minutes: float, *, s3: bool, examples: int, steps: int) -> dict[str, Any]:
    """Run batches of the machines until `minutes` have passed; the figures of the run."""
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from haiku_cli.embed import load_embedder
    from haiku_cli.store.database import quiet_lance_logs
    from tests.support import interrupting
    from tests.support.write_matrix import S3WriteMatrix, WriteMatrix, interruptions_of

    quiet_lance_logs()
    embedder = load_embedder()
    kinds = _KINDS if interrupting.namespaces_work() else [k for k in _KINDS if k != "disk-full"]
    local = type(
        "LocalMatrix", (WriteMatrix,), {"embedder": embedder, "interruptions": interruptions_of(kinds)}
    )
    server, endpoint = _s3_endpoint() if s3 else (None, "")
    remote = type("RemoteMatrix", (S3WriteMatrix,), {"embedder": embedder, "endpoint": endpoint})
    chosen = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    by_store: dict[str, Counter[str]] = {"local": Counter(), "s3": Counter()}
    violations: list[str] = []
    started, cpu_before = time.monotonic(), _cpu()
    deadline = started + minutes * 60
    batch = 0
    try:
        while time.monotonic() < deadline:
            store = "s3" if s3 and batch % 4 == 3 else "local"
            batch += 1
            before = Counter(WriteMatrix.counts)
            try:
                run_state_machine_as_test(local if store == "local" else remote, settings=chosen)
            except Exception:  # an invariant broken: hypothesis has shrunk it to a short sequence
                violations.append(traceback.format_exc(limit=3))
                print(violations[-1], file=sys.stderr, flush=True)
            by_store[store] += WriteMatrix.counts - before
            print(f"batch {batch} ({store}): {dict(WriteMatrix.counts)}", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.stop()
    total = by_store["local"] + by_store["s3"]
    return {
        "minutes": minutes,
        "batches": batch,
        "examples": {k: c["examples"] for k, c in by_store.items()},
        "steps": {k: c["steps"] for k, c in by_store.items()},
        "interruptions": {k: total[k] for k in ["whole", *_KINDS]},
        "violations": len(violations),
        "violation_traces": violations,
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(_cpu() - cpu_before, 1),
        "disk_full": "disk-full" in kinds,
    }


def soak_rows(table: Table, raw: dict[str, Any]) -> None:
    """The soak's table: violations first (the goal is 0), then how much was run and interrupted."""
    kinds = ", ".join(f"{k} {n:,}" for k, n in raw["interruptions"].items() if k != "whole")
    table.add("invariant violations found", f"**{raw['violations']}**")
    table.add(
        "state machines run (local / `s3://` on moto)",
        f"{raw['examples']['local']:,} / {raw['examples']['s3']:,}",
    )
    table.add("write commands run (local / `s3://`)", f"{raw['steps']['local']:,} / {raw['steps']['s3']:,}")
    table.add("commands interrupted, by kind", kinds)
    table.add("commands run whole", f"{raw['interruptions']['whole']:,}")
    table.add(
        "wall / CPU (this process and its `haiku` children)",
        f"{raw['wall_s']:,.0f} s / {raw['cpu_s']:,.0f} s",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument("--no-s3", action="store_true", help="local databases only")
    parser.add_argument("--examples", type=int, default=5, help="state machines per batch")
    parser.add_argument("--steps", type=int, default=12, help="most commands per state machine")
    parser.add_argument("--json", action="store_true", help="print the raw figures; write no results")
    args = parser.parse_args()
    # Stopped with SIGTERM (a CI timeout, `kill`), unwind as for Ctrl-C: every child paused at a checkpoint
    # is killed and reaped on the way out (tests/support/children.reaped) instead of being left behind.
    # A stopped run writes no results (hypothesis passes KeyboardInterrupt through; it may keep SystemExit).
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="haiku-soak-") as work:
            _isolate(Path(work))
            return soak(args.minutes, s3=not args.no_s3, examples=args.examples, steps=args.steps)

    if args.json:
        print(json.dumps(run(), indent=1))
        return
    with result("crash_soak", "Crash-and-interrupt soak", notes=_NOTES) as table:
        raw = run()
        soak_rows(table, raw)
    raw_file = results_folder() / "raw" / "crash_soak.json"
    raw_file.parent.mkdir(parents=True, exist_ok=True)
    raw_file.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
    for row in table.rows:
        print(f"{row[0]}: {row[1]}")
    if raw["violations"]:
        sys.exit(1)


if __name__ == "__main__":
    main()

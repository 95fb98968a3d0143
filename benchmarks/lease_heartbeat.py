"""How late an object-store lease's heartbeat renews while its writer works, on this (loaded) machine.

A writer holds the lease of a database on a local S3-compatible server (moto, behind a latency proxy)
for `--seconds`, writing small documents and searching them all along; its heartbeat renews every
sixth of `--lease` seconds. For each renewal it records how long the conditional commit took and how
old the previous renewal was when it landed (the holder stops writing once that age reaches half the
lease). A renewal is *missed* when that age reaches the holder's limit; the figures tell how much of
the default 60 s lease (renewed every 10 s, held for 30 s) a renewal uses.

    PYTHONPATH=. python benchmarks/lease_heartbeat.py --seconds 120 --lease 6 --rtt-ms 50 [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from datetime import UTC, datetime

import numpy as np

from benchmarks.latency_proxy import S3WithLatency
from haiku_cli.store import (
    DocumentRecord,
    DocumentWrite,
    EmbedderSpec,
    Location,
    NewChunk,
    open_database,
    reads,
)
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import new_id, write_documents
from haiku_cli.store.writer_lock import WaitPolicy, exclusive

DIM = 16


def _document(rng: np.random.Generator, n: int) -> DocumentWrite:
    now = datetime.now(UTC)
    doc = DocumentRecord(
        id=new_id(),
        uri=None,
        title=f"d{n}",
        content=f"d{n}",
        content_hash=f"d{n}",
        created_at=now,
        updated_at=now,
    )
    chunks = [
        NewChunk(order=i, text=f"document {n} part {i}", vector=rng.standard_normal(DIM).tolist())
        for i in range(4)
    ]
    return DocumentWrite(document=doc, chunks=chunks)


def measure(seconds: float, lease: float, rtt_ms: float) -> dict:
    """Hold a lease for `seconds` while writing and reading; the renewals' durations and ages."""
    rng = np.random.default_rng(0)
    with S3WithLatency(rtt_ms=rtt_ms, buckets=("bench",)) as s3:
        loc = Location(
            "bench", f"s3://bench/lease-{time.time_ns()}.lancedb", storage_options=s3.storage_options()
        )
        db = open_database(loc, create_with=EmbedderSpec("bench:e", DIM), writable=True)
        writes = reads_done = 0
        with exclusive(db, WaitPolicy(0, lease_seconds=lease)):
            lease_lock = db.writer_lock
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                write_documents(db, [_document(rng, writes)])
                writes += 1
                wait(reads.list_documents(db, limit=20))
                reads_done += 1
            renewals, failed = list(lease_lock.renewals), lease_lock.failed_renewals
            held_for = lease_lock.held_for
    took = [landed - stamp for stamp, landed in renewals]
    ages = [landed - previous for (previous, _), (_, landed) in itertools.pairwise(renewals)]
    return {
        "seconds": seconds,
        "lease_seconds": lease,
        "renew_every_seconds": lease / 6,
        "held_for_seconds": held_for,
        "rtt_ms": rtt_ms,
        "writes": writes,
        "reads": reads_done,
        "renewals": len(renewals),
        "failed_renewals": failed,
        "renewal_seconds_median": statistics.median(took) if took else None,
        "renewal_seconds_max": max(took, default=None),
        "age_at_renewal_median": statistics.median(ages) if ages else None,
        "age_at_renewal_p99": sorted(ages)[int(0.99 * (len(ages) - 1))] if ages else None,
        "age_at_renewal_max": max(ages, default=None),
        "missed": sum(a >= held_for for a in ages),
        "max_age_share_of_hold": max(ages) / held_for if ages else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--lease", type=float, default=6.0, help="lease seconds (renewed every sixth)")
    parser.add_argument("--rtt-ms", type=float, default=50.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.seconds, args.lease, args.rtt_ms)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>24}: {value:.3f}" if isinstance(value, float) else f"{key:>24}: {value}")


if __name__ == "__main__":
    main()

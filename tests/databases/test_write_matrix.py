"""The crash-and-interrupt matrix (tests/support/write_matrix.py) in CI: random short sequences of write
commands (add, add-src, sync, forget-src, delete, rebuild, vacuum, tag create/restore) against a real
database, each perhaps interrupted by Ctrl-C, a failure, `kill -9` or SIGINT of a real `haiku` process at
a checkpoint the code declares, or a full disk; after each step the database holds exactly what was
acknowledged and what a Ctrl-C line said it kept. Derandomized: each run draws the same sequences.
`benchmarks/crash_soak.py` runs the same machines for longer with fresh draws."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.support import interrupting
from tests.support.write_matrix import KINDS, S3WriteMatrix, WriteMatrix, interruptions_of

pytestmark = pytest.mark.slow


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )


def test_random_writes_interrupted_at_every_checkpoint_keep_the_database_whole(embedder) -> None:
    kinds = KINDS if interrupting.namespaces_work() else [k for k in KINDS if k != "disk-full"]
    local = type(
        "LocalMatrix", (WriteMatrix,), {"embedder": embedder, "interruptions": interruptions_of(kinds)}
    )
    before = Counter(WriteMatrix.counts)
    run_state_machine_as_test(local, settings=_settings(10, 8))
    ran = WriteMatrix.counts - before
    assert [k for k in kinds if not ran[k]] == []  # every kind of interruption was drawn


def test_random_writes_to_object_storage_interrupted_keep_the_database_whole(
    embedder, s3_server: str
) -> None:
    remote = type("RemoteMatrix", (S3WriteMatrix,), {"embedder": embedder, "endpoint": s3_server})
    run_state_machine_as_test(remote, settings=_settings(3, 6))

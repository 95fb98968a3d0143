"""The crash-and-interrupt matrix (tests/support/write_matrix.py) in CI: random short sequences of write
commands (add, add-src, sync, forget-src, delete, rebuild, vacuum, tag create/restore) against a real
database, each perhaps interrupted by Ctrl-C, a failure, `kill -9` or SIGINT of a real `haiku` process at
a checkpoint the code declares, or a full disk; after each step the database holds exactly what was
acknowledged and what a Ctrl-C line said it kept. Drawn from a fixed seed: each run draws the same
sequences, few enough to keep the suite quick, from a seed whose local draw holds every kind of
interruption (the test checks it drew each; `HAIKU_MATRIX_SEED` and `HAIKU_MATRIX_LOCAL` try others).
`HAIKU_FULL_MATRIX=1` runs the larger matrix; `benchmarks/crash_soak.py` runs the same machines for
longer with fresh draws."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import get_state_machine_test, run_state_machine_as_test

from tests.support import interrupting
from tests.support.write_matrix import KINDS, S3WriteMatrix, WriteMatrix, interruptions_of

pytestmark = pytest.mark.slow

FULL = os.environ.get("HAIKU_FULL_MATRIX") == "1"
LOCAL_EXAMPLES = int(os.environ.get("HAIKU_MATRIX_LOCAL", "5"))
SEED = int(os.environ.get("HAIKU_MATRIX_SEED", "4"))


def _settings(examples: int, steps: int, derandomize: bool = False) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
        database=None,
    )


def _run(machine: type, examples: int, steps: int) -> None:
    """Run the machine's `examples` sequences of up to `steps` commands, drawn from a fixed seed."""
    seed(SEED)(get_state_machine_test(machine, settings=_settings(examples, steps)))()


def test_random_writes_interrupted_at_every_checkpoint_keep_the_database_whole(embedder) -> None:
    kinds = KINDS if interrupting.namespaces_work() else [k for k in KINDS if k != "disk-full"]
    local = type(
        "LocalMatrix", (WriteMatrix,), {"embedder": embedder, "interruptions": interruptions_of(kinds)}
    )
    before = Counter(WriteMatrix.counts)
    _run(local, *((10, 8) if FULL else (LOCAL_EXAMPLES, 8)))
    ran = WriteMatrix.counts - before
    assert [k for k in kinds if not ran[k]] == [], ran  # every kind of interruption was drawn


def test_random_writes_to_object_storage_interrupted_keep_the_database_whole(
    embedder, s3_server: str
) -> None:
    remote = type("RemoteMatrix", (S3WriteMatrix,), {"embedder": embedder, "endpoint": s3_server})
    run_state_machine_as_test(remote, settings=_settings(3, 6, derandomize=True))

"""Reliability under load and under faults: concurrent writers, `kill -9` mid-command, failing storage.

Three parts, each printing a table (and JSON with --json):

- `stress`: 2 writer processes + 4 reader processes on one database for 60 s (configurable). Writers
  add texts, add folders of 3 files, delete some of their own documents and vacuum, through the
  library API on one long-lived workspace each; readers search, list and read info. Reports
  acknowledged writes against stored documents (lost writes, goal 0), documents without chunks,
  documents stored although their write failed, and reader errors. `--s3` runs it on a database on
  a real S3-compatible server (moto) on 127.0.0.1.
- `kills`: `haiku add-src`, `rebuild`, `delete` and `vacuum` killed with SIGKILL at a random moment of
  their run (40 kills by default), each followed by a check that the database reads, that every
  document has chunks, that the killed write is all there or not at all, and that the next writer
  goes ahead.
- `faults`: storage and I/O faults (read-only mount, full tiny file system, a disk full to the last byte,
  a database folder without read permission, S3 server stopped, stalled or refusing connections, closed
  pipe, /dev/full, invalid UTF-8 or too much text on stdin, blank text), embedders and models on
  127.0.0.1 that never answer, send NaN, vectors of another size or no choices, one-line inputs (7 MB of
  words, 2 MB of dots), a file name with a newline and `haiku mcp --http --host 0.0.0.0`, each against
  its documented exit code, with the time each took to end.

Vectors come from the hashing embedding server in tests/support on 127.0.0.1 (the bundled model's
speed is not what is measured here). Usage:

    python benchmarks/reliability.py [stress|kills|faults|all] [--seconds 60] [--kills 40] [--s3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result  # noqa: E402
from haiku_cli.store.writer_lock import LOCK_FILE  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

# Fresh processes are what is timed: no command goes to, or starts, a background daemon (haiku help daemon).
os.environ.setdefault("HAIKU_NO_DAEMON", "1")

EMBEDDER = "ollama:hash"
DIMENSION = 64
WORDS = [
    *("falcon", "heron", "kestrel", "owl", "swift", "wren", "plover", "curlew", "osprey", "harrier"),
    *("merlin", "hobby", "egret", "ibis", "stork", "crane", "bittern", "grebe", "diver", "petrel"),
    *("shearwater", "gannet", "cormorant", "shag", "fulmar", "tern", "skua", "auk", "puffin"),
]


def _text(seed: str, n: int = 60) -> str:
    rng = random.Random(seed)
    return f"{seed}. " + " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def _write_config(work: Path, url: str, s3: str | None, stem: str = "", file: str = "config.toml") -> Path:
    config = work / file
    body = f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n\n[databases]\n'
    body += f'notes = "{work / "notes.lancedb"}"\n'
    if s3:
        body += (
            f'\n[databases.remote]\nuri = "s3://lab/{work.name}{stem}.lancedb"\n'
            f'storage_options = {{ endpoint = "{s3}", allow_http = true, region = "us-east-1" }}\n'
        )
    config.write_text(body, encoding="utf-8")
    return config


@contextlib.contextmanager
def _moto() -> Iterator[str]:
    """A real S3-compatible server on 127.0.0.1 with a bucket `lab` (credentials in the environment)."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lab")
    try:
        yield endpoint
    finally:
        server.stop()


def _env(config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HAIKU_TEST_PAUSE"}
    return {**env, "HAIKU_CONFIG": str(config), "NO_COLOR": "1", **extra}


def _haiku(config: Path, *args: str, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "haiku_cli", *args],
        env=_env(config, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---------------------------------------------------------------------------------------------- state


def _state(config: Path, name: str) -> dict:
    """What a reader sees now: document ids, chunk counts per document, and whether a write is unfinished."""
    from haiku_cli.databases.workspace import Workspace
    from haiku_cli.store.database import PENDING_WRITE, open_database

    ws = Workspace.load(config)
    db = open_database(ws.lookup(name))
    ids = db.documents.to_arrow().column("id").to_pylist()
    chunk_docs = Counter(db.chunks.to_arrow().column("document_id").to_pylist())
    return {
        "ids": set(ids),
        "chunks": sum(chunk_docs.values()),
        "without_chunks": sum(1 for i in ids if chunk_docs[i] == 0),
        "orphan_chunks": sum(n for d, n in chunk_docs.items() if d not in set(ids)),
        "pending": PENDING_WRITE in db.meta,
    }


# --------------------------------------------------------------------------------------------- stress


async def _warm_up(ws, location, log: Path) -> None:
    """Import and open everything once, then wait for the start signal: the clock runs only on work."""
    import haiku_cli.ingest.pipeline  # noqa: F401  (what the first write would import)
    from haiku_cli import api

    await ws.embed_query("warm up")
    await api.info(ws, location)
    log.with_suffix(".ready").touch()
    while not (log.parent / "go").exists():
        await asyncio.sleep(0.05)


async def _writer_loop(config: Path, name: str, index: int, seconds: float, log: Path) -> None:
    from haiku_cli import api

    folder = log.parent / f"src-{index}"
    ws = api.Workspace.load(config)
    location = ws.lookup(name)
    await _warm_up(ws, location, log)
    mine: list[str] = []
    deadline = time.monotonic() + seconds
    i = 0
    with log.open("a", encoding="utf-8") as out:

        def record(**row: object) -> None:
            out.write(json.dumps(row) + "\n")
            out.flush()

        while time.monotonic() < deadline:
            i += 1
            op = "add"
            try:
                if i % 4 == 0:
                    op = "add-src"
                    batch = folder / f"b{i}"
                    batch.mkdir(parents=True)
                    for k in range(3):
                        (batch / f"w{index}-{i}-{k}.md").write_text(_text(f"w{index}-{i}-{k}"), "utf-8")
                    report = await api.add_sources(ws, location, [str(batch)], title=None, metadata={})
                    ids = [o.document_id for o in report.outcomes if o.document_id]
                    if len(ids) != 3:
                        raise RuntimeError(f"add-src stored {len(ids)} of 3")
                elif i % 6 == 0 and mine:
                    op = "delete"
                    victim = mine.pop(0)
                    await api.delete_document(ws, location, victim)
                    record(op=op, ok=True, ids=[victim])
                    continue
                elif index == 0 and i % 10 == 0:
                    op = "vacuum"
                    await api.vacuum(ws, location)
                    record(op=op, ok=True, ids=[])
                    continue
                else:
                    report = await api.add_text(ws, location, _text(f"w{index}-{i}"), title=None, metadata={})
                    ids = [o.document_id for o in report.outcomes if o.document_id]
                mine.extend(ids)
                record(op=op, ok=True, ids=ids)
            except Exception as exc:  # a refused write is data for the report, not the end of the run
                record(op=op, ok=False, error=str(exc).splitlines()[0][:200] if str(exc) else repr(exc))


async def _reader_loop(config: Path, name: str, index: int, seconds: float, log: Path) -> None:
    from haiku_cli import api

    ws = api.Workspace.load(config)
    location = ws.lookup(name)
    selection = ws.select_many([name])
    await _warm_up(ws, location, log)
    deadline = time.monotonic() + seconds
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    i = 0
    while time.monotonic() < deadline:
        i += 1
        kind = ("search", "list", "info", "fts")[i % 4]
        try:
            if kind == "search":
                await api.search(ws, selection, random.choice(WORDS), search_type="hybrid", limit=5)
            elif kind == "fts":
                await api.search(ws, selection, random.choice(WORDS), search_type="fts", limit=5)
            elif kind == "list":
                await api.list_documents(ws, location, limit=50)
            else:
                await api.info(ws, location)
            counts[kind] += 1
        except Exception as exc:
            errors[(str(exc).splitlines() or [repr(exc)])[0][:200]] += 1
    log.write_text(json.dumps({"reads": sum(counts.values()), "errors": dict(errors)}), encoding="utf-8")


def stress(seconds: float, writers: int, readers: int, s3: bool) -> dict:
    """Run writers and readers together, then compare acknowledged writes with what is stored."""
    name = "remote" if s3 else "notes"
    with tempfile.TemporaryDirectory(prefix="haiku-rel-") as tmp, serve_hash_embedder(DIMENSION) as url:
        work = Path(tmp)
        with _moto() if s3 else contextlib.nullcontext(None) as endpoint:
            config = _write_config(work, url, endpoint)
            first = _haiku(config, "add", _text("seed"), "-d", name)
            if first.returncode != 0:
                raise SystemExit(f"could not create the database: {first.stderr}")
            seed_ids = _state(config, name)["ids"]
            procs = []
            for role, count in (("writer", writers), ("reader", readers)):
                for k in range(count):
                    log = work / f"{role}-{k}.log"
                    args = [__file__, f"_{role}", str(config), name, str(k), str(seconds), str(log)]
                    procs.append((role, log, subprocess.Popen([sys.executable, *args], env=_env(config))))
            while sum(1 for _ in work.glob("*.ready")) < len(procs):
                if any(p.poll() is not None for _, _, p in procs):
                    raise SystemExit("a worker ended before the start")
                time.sleep(0.1)
            (work / "go").touch()
            for _, _, proc in procs:
                proc.wait(timeout=seconds + 600)
            acked: set[str] = set()
            deleted: set[str] = set()
            ops: Counter[str] = Counter()
            refused: Counter[str] = Counter()
            failed_ops = 0
            for role, log, _ in procs:
                if role != "writer" or not log.exists():
                    continue
                for line in log.read_text(encoding="utf-8").splitlines():
                    row = json.loads(line)
                    if not row["ok"]:
                        failed_ops += 1
                        refused[row["error"]] += 1
                    elif row["op"] == "delete":
                        deleted.update(row["ids"])
                        ops["delete"] += 1
                    else:
                        acked.update(row["ids"])
                        ops[row["op"]] += 1
            reads = 0
            reader_errors: Counter[str] = Counter()
            for role, log, proc in procs:
                if role == "reader":
                    if log.exists():
                        got = json.loads(log.read_text(encoding="utf-8"))
                        reads += got["reads"]
                        reader_errors.update(got["errors"])
                    else:
                        reader_errors[f"reader exited {proc.returncode} without a report"] += 1
            state = _state(config, name)
    expected = (acked - deleted) | seed_ids
    return {
        "database": "s3 (moto on 127.0.0.1)" if s3 else "local",
        "seconds": seconds,
        "writers": writers,
        "readers": readers,
        "acknowledged_writes": sum(ops.values()),
        "acknowledged_by_op": dict(ops),
        "acknowledged_documents": len(acked),
        "acknowledged_deletes": len(deleted),
        "stored_documents": len(state["ids"]),
        "expected_documents": len(expected),
        "lost_writes": len(expected - state["ids"]),
        "deleted_but_present": len(deleted & state["ids"]),
        "stored_without_acknowledgement": len(state["ids"] - expected - deleted),
        "documents_without_chunks": state["without_chunks"],
        "orphan_chunks": state["orphan_chunks"],
        "unfinished_write_left": state["pending"],
        "failed_writes": failed_ops,
        "failed_write_reasons": dict(refused.most_common(5)),
        "reads": reads,
        "reader_errors": sum(reader_errors.values()),
        "reader_error_reasons": dict(reader_errors.most_common(5)),
    }


# ---------------------------------------------------------------------------------------------- kills

_KILL_OPS = ("add-src", "rebuild", "delete", "vacuum")


def _kill_command(op: str, work: Path, round_: int, ids: list[str]) -> tuple[list[str], int]:
    """The command for one kill round and how the document count changes if it completes."""
    if op == "add-src":
        batch = work / "incoming" / f"r{round_}"
        batch.mkdir(parents=True)
        for k in range(8):
            (batch / f"r{round_}-{k}.md").write_text(_text(f"r{round_}-{k}", 400), encoding="utf-8")
        return ["add-src", str(batch), "-d", "notes"], 8
    if op == "delete":
        return ["delete", random.choice(sorted(ids)), "-d", "notes"], -1
    return [op, "-d", "notes"], 0


def _meta_version(db: Path) -> int:
    """The latest committed version of the meta table, read off its manifest file names."""
    versions = [0]
    with contextlib.suppress(OSError):
        for f in (db / "meta.lance" / "_versions").glob("*.manifest"):
            v = int(f.stem)
            versions.append((1 << 64) - 1 - v if v >= 1 << 63 else v)  # newer Lance names count down
    return max(versions)


def _until(proc: subprocess.Popen, reached) -> bool:
    """Wait until `reached()` or the command ends; True if reached while it runs."""
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            if reached():
                return True
        time.sleep(0.01)
    return False


def _spawn_writer(config: Path, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", *args],
        env=_env(config),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def kills(count: int, seed: int) -> dict:
    """Kill writer commands at random moments; check the database after each kill.

    Half the kills land anywhere while the command holds the writer lock, half while its journal is
    committed (between the meta commit that opens the write and the one that closes it), which is
    where a kill leaves an unfinished write for the next writer to undo.
    """
    rng = random.Random(seed)
    random.seed(seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="haiku-kill-") as tmp, serve_hash_embedder(DIMENSION) as url:
        work = Path(tmp)
        config = _write_config(work, url, None)
        initial = work / "initial"
        initial.mkdir()
        for k in range(30):
            (initial / f"d{k}.md").write_text(_text(f"d{k}", 400), encoding="utf-8")
        done = _haiku(config, "add-src", str(initial), "-d", "notes")
        if done.returncode != 0:
            raise SystemExit(f"could not create the database: {done.stderr}")
        db = work / "notes.lancedb"
        lock = db / LOCK_FILE

        def locked() -> bool:
            return lock.stat().st_size > 0

        # How long each command holds the lock, and its journal, un-killed: kills land inside those.
        windows: dict[str, tuple[float, float]] = {}
        for op in _KILL_OPS:
            args, _ = _kill_command(op, work, -1 - len(windows), sorted(_state(config, "notes")["ids"]))
            v0 = _meta_version(db)
            proc = _spawn_writer(config, args)
            _until(proc, locked)
            start = time.monotonic()
            journal = None
            if _until(proc, lambda v0=v0: _meta_version(db) > v0):
                journal_start = time.monotonic()
                _until(proc, lambda v0=v0: _meta_version(db) > v0 + 1)
                journal = time.monotonic() - journal_start
            _, err = proc.communicate()
            windows[op] = (time.monotonic() - start, journal or 0.0)
            if proc.returncode != 0:
                raise SystemExit(f"{op} failed before any kill: {err}")
        for round_ in range(count):
            op = _KILL_OPS[round_ % len(_KILL_OPS)]
            before = _state(config, "notes")
            args, delta = _kill_command(op, work, round_, sorted(before["ids"]))
            in_journal = (round_ // len(_KILL_OPS)) % 2 == 1 and windows[op][1] > 0
            v0 = _meta_version(db)
            proc = _spawn_writer(config, args)
            if in_journal:
                _until(proc, lambda v0=v0: _meta_version(db) > v0)
                time.sleep(rng.uniform(0.0, 1.0) * windows[op][1])
            else:
                _until(proc, locked)
                time.sleep(rng.uniform(0.0, 1.0) * windows[op][0])
            killed = proc.poll() is None
            if killed:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
            problems = []
            try:
                after = _state(config, "notes")
                n_before, n_after = len(before["ids"]), len(after["ids"])
                if n_after not in (n_before, n_before + delta):
                    problems.append(f"{n_after} documents, expected {n_before} or {n_before + delta}")
                if after["without_chunks"]:
                    problems.append(f"{after['without_chunks']} documents without chunks")
                if after["orphan_chunks"]:
                    problems.append(f"{after['orphan_chunks']} chunks without a document")
                unfinished = after["pending"]
            except Exception as exc:
                problems.append(f"unreadable: {exc}")
                unfinished = None
            rows.append({"op": op, "killed": killed, "unfinished_write": unfinished, "problems": problems})
        # The next writer goes ahead and undoes whatever write the last kill left unfinished.
        last = _haiku(config, "add", _text("after the kills"), "-d", "notes")
        final = _state(config, "notes")
        next_writer_ok = last.returncode == 0 and not final["pending"] and not final["without_chunks"]
    killed_rows = [r for r in rows if r["killed"]]
    return {
        "rounds": count,
        "killed": len(killed_rows),
        "killed_mid_write": sum(1 for r in killed_rows if r["unfinished_write"]),
        "consistent_after_kill": sum(1 for r in killed_rows if not r["problems"]),
        "by_op": {
            op: f"{sum(1 for r in killed_rows if r['op'] == op and not r['problems'])}/"
            f"{sum(1 for r in killed_rows if r['op'] == op)}"
            for op in _KILL_OPS
        },
        "next_writer_recovers": next_writer_ok,
        "problems": [f"{r['op']}: {'; '.join(r['problems'])}" for r in rows if r["problems"]],
        "seconds_holding_lock_and_journal": {
            op: (round(a, 2), round(b, 2)) for op, (a, b) in windows.items()
        },
    }


# --------------------------------------------------------------------------------------------- faults


def _namespace_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


def _in_namespace(config: Path, setup: str, args: list[str], after: str = "") -> tuple[int, str, float]:
    """One haiku command after `setup` (mount commands) in a private mount namespace; `after` runs next."""
    import shlex

    run = shlex.join([sys.executable, "-m", "haiku_cli", *args])
    start = time.monotonic()
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"set -e\n{setup}\nset +e\n{run}\nrc=$?\n{after}\nexit $rc"],
        capture_output=True,
        text=True,
        env=_env(config),
        timeout=600,
    )
    return proc.returncode, proc.stderr, time.monotonic() - start


def _timed(config: Path, *args: str, **extra: str) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = _haiku(config, *args, **extra)
    return proc.returncode, proc.stderr, time.monotonic() - start


def _closed_pipe(config: Path) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "list", "-d", "notes", "--limit", "1000"],
        env=_env(config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -n1`
    err = proc.stderr.read().decode()
    return proc.wait(), err, time.monotonic() - start


def _dev_full(config: Path) -> tuple[int, str, float]:
    start = time.monotonic()
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "haiku_cli", "list", "-d", "notes", "--json"],
            env=_env(config),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    return proc.returncode, proc.stderr, time.monotonic() - start


def _bad_stdin(config: Path) -> tuple[int, str, float]:
    return _stdin(config, b"caf\xe9 \xff\xfe owls")


def _stdin(config: Path, data: bytes, **extra: str) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "haiku_cli", "add", "-", "-d", "notes"],
        env=_env(config, **extra),
        input=data,
        capture_output=True,
    )
    return proc.returncode, proc.stderr.decode(), time.monotonic() - start


def _mcp_on_every_address(config: Path) -> tuple[int, str, float]:
    """`haiku mcp --http --host 0.0.0.0`: the URL it prints must pass its own Host check (HTTP 200)."""
    import httpx

    from tests.mcp_server.test_transports import INITIALIZE

    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "mcp", "--http", "--host", "0.0.0.0", "--port", "0"],
        env=_env(config, HAIKU_MCP_TOKEN="a-token-of-sixteen-chars"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": "Bearer a-token-of-sixteen-chars",
        }
        with httpx.stream("POST", url, json=INITIALIZE, headers=headers, timeout=60) as response:
            status = response.status_code
    except (httpx.HTTPError, ValueError) as exc:
        return 1, f"{url!r}: {exc}", time.monotonic() - start
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return (0 if status == 200 else status), f"{url} answered {status}", time.monotonic() - start


def faults(s3: bool = True) -> dict:
    """Each fault against its documented exit code; one line on stderr, no traceback."""
    from tests.support.stall_proxy import StallingProxy

    rows: list[dict] = []

    def check(fault: str, command: str, expected: int, got: tuple[int, str, float], extra_ok: bool = True):
        code, err, seconds = got
        lines = [line for line in err.splitlines() if line.strip()]
        one_line = len(lines) <= 1 and "Traceback" not in err
        rows.append(
            {
                "fault": fault,
                "command": command,
                "expected_exit": expected,
                "exit": code,
                "one_line": one_line,
                "seconds": round(seconds, 1),
                "ok": code == expected and one_line and extra_ok,
                "stderr": lines[0][:160] if lines else "",
            }
        )
        print(f"  ... {fault}: {command} exited {code} in {seconds:.1f} s", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="haiku-fault-") as tmp, serve_hash_embedder(DIMENSION) as url:
        work = Path(tmp)
        config = _write_config(work, url, None)
        db = work / "notes.lancedb"
        for k in range(2):
            if _haiku(config, "add", _text(f"f{k}"), "-d", "notes").returncode != 0:
                raise SystemExit("could not create the database")
        big = work / "big.txt"
        big.write_text(" ".join(f"word{i} falcon{i % 977} heron{i % 313}" for i in range(6_000)))
        if _namespace_available():
            ro = f"mount --bind {work} {work} && mount -o remount,ro,bind {work}"
            check(
                "read-only file system", "add", 3, _in_namespace(config, ro, ["add", "Owls.", "-d", "notes"])
            )
            check("read-only file system", "vacuum", 3, _in_namespace(config, ro, ["vacuum", "-d", "notes"]))
            check(
                "read-only file system",
                "search (reads work)",
                0,
                _in_namespace(config, ro, ["search", "falcon", "-d", "notes", "--type", "fts"]),
            )
            tiny = work / "tiny"
            tiny.mkdir()
            fill = (
                f"mount -t tmpfs -o size=1m tmpfs {tiny} && cp -r {db} {tiny}/ && "
                f"avail=$(df -k --output=avail {tiny} | tail -1) && "
                f"head -c $(( (avail - 8) * 1024 )) /dev/zero > {tiny}/filler"
            )
            check(
                "full disk (1 MB tmpfs)",
                "add-src",
                3,
                _in_namespace(config, fill, ["add-src", str(big), "--db", str(tiny / "notes.lancedb")]),
            )
            _full_to_the_last_byte(config, work, check)
        else:
            rows.append({"fault": "read-only / full file system", "ok": None, "stderr": "no user namespaces"})
        _unreadable_folder(config, work, check)
        _servers_that_fail(work, url, check)
        _one_line_inputs(config, work, check)
        check("MCP on 0.0.0.0: printed URL accepted", "mcp --http", 0, _mcp_on_every_address(config))
        check("closed pipe (| head -n1)", "list", 0, _closed_pipe(config))
        check("/dev/full", "list --json", 74, _dev_full(config))
        check("invalid UTF-8 on stdin", "add -", 1, _bad_stdin(config))
        fresh = work / "never.lancedb"
        check(
            "blank text", "add '   '", 1, _timed(config, "add", "   ", "--db", str(fresh)), not fresh.exists()
        )
        if s3:
            with _moto() as endpoint:
                port = int(endpoint.rsplit(":", 1)[1])
                with StallingProxy(port) as proxy:
                    config = _write_config(work, url, proxy.endpoint)
                    assert _haiku(config, "add", _text("remote"), "-d", "remote").returncode == 0
                    proxy.stall()
                    check(
                        "S3 stalled (timeout 3 s)",
                        "search",
                        3,
                        _timed(
                            config,
                            "search",
                            "falcon",
                            "-d",
                            "remote",
                            "--type",
                            "fts",
                            HAIKU_STORAGE_TIMEOUT="3",
                        ),
                    )
                    check(
                        "S3 stalled (timeout 3 s)",
                        "add",
                        3,
                        _timed(config, "add", "Owls.", "-d", "remote", HAIKU_STORAGE_TIMEOUT="3"),
                    )
                    proxy.resume()
                with StallingProxy(port, delay=0.5) as slow:
                    # Every request answered after 0.5 s, within the 3 s each may take: a slow store is read.
                    config = _write_config(work, url, slow.endpoint)
                    reads = {
                        "search": ("search", "falcon", "-d", "remote"),
                        "search (fan-out)": ("search", "falcon"),
                        "list": ("list", "-d", "remote"),
                    }
                    for command, args in reads.items():
                        check(
                            "S3 slow, each request answered in time (0.5 s each, timeout 3 s)",
                            command,
                            0,
                            _timed(config, *args, HAIKU_STORAGE_TIMEOUT="3"),
                        )
                for mode in ("stalled", "stopped"):
                    rows.append(_failing_mid_write(work, url, port, mode))
            refused = _write_config(work, url, "http://127.0.0.1:9", stem="refused", file="refused.toml")
            code, err, seconds = _timed(refused, "list", "-d", "remote", HAIKU_STORAGE_TIMEOUT="3")
            check(
                "S3 endpoint refuses connections",
                "list",
                3,
                (code, err, seconds),
                "refused" in err and "in time" not in err,
            )
            # The server is gone now: nothing listens on its port.
            check(
                "S3 server stopped",
                "search",
                3,
                _timed(
                    config, "search", "falcon", "-d", "remote", "--type", "fts", HAIKU_STORAGE_TIMEOUT="3"
                ),
            )
            check(
                "S3 server stopped",
                "add",
                3,
                _timed(config, "add", "Owls.", "-d", "remote", HAIKU_STORAGE_TIMEOUT="3"),
            )
    return {
        "faults": rows,
        "handled": sum(1 for r in rows if r["ok"]),
        "checked": sum(1 for r in rows if r["ok"] is not None),
    }


def _full_to_the_last_byte(config: Path, work: Path, check) -> None:
    """No room even for the writer lock's owner record: each writing command names the database (3)."""
    full = work / "full"
    full.mkdir()
    db = work / "notes.lancedb"
    doc_id = sorted(_state(config, "notes")["ids"])[0]
    fill = (
        f"mount -t tmpfs -o size=2m tmpfs {full} && cp -r {db} {full}/ && "
        f"(head -c 100000000 /dev/zero > {full}/filler 2>/dev/null || true)"
    )
    there = str(full / "notes.lancedb")
    for command, args in (
        ("add", ["add", "Owls.", "--db", there]),
        ("delete", ["delete", doc_id, "--db", there]),
        ("vacuum", ["vacuum", "--db", there]),
        ("rebuild", ["rebuild", "--db", there]),
    ):
        code, err, seconds = _in_namespace(config, fill, args)
        check("disk full to the last byte", command, 3, (code, err, seconds), "the disk is full" in err)
    new = full / "new.lancedb"
    code, err, seconds = _in_namespace(
        config, fill, ["add", "Owls.", "--db", str(new)], after=f"test ! -e {new} || echo LEFT >&2"
    )
    check("disk full to the last byte", "add (new database)", 3, (code, err, seconds), "LEFT" not in err)


def _unreadable_folder(config: Path, work: Path, check) -> None:
    """A database folder without read permission: one exit-3 line (root's bypass dropped with setpriv)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            return
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    locked = work / "locked.lancedb"
    if _haiku(config, "add", _text("locked"), "--db", str(locked)).returncode != 0:
        raise SystemExit("could not create the database to lock")
    locked.chmod(0)
    try:
        for args in (["search", "falcon"], ["list"], ["add", "Owls."]):
            start = time.monotonic()
            proc = subprocess.run(
                [*prefix, sys.executable, "-m", "haiku_cli", *args, "--db", str(locked)],
                env=_env(config),
                capture_output=True,
                text=True,
                timeout=600,
            )
            got = (proc.returncode, proc.stderr, time.monotonic() - start)
            check("database folder not readable", args[0], 3, got, "permission denied" in proc.stderr)
    finally:
        locked.chmod(0o755)


def _servers_that_fail(work: Path, url: str, check) -> None:
    """Embedders and models on 127.0.0.1 that hang, send NaN, vectors of another size, or no choices."""
    import numpy as np

    from tests.cli.openai_stub import answer, serve
    from tests.support.hash_embedder import serve_embeddings, serve_hash_embedder
    from tests.support.silent_server import silent_server

    def at(embedder_url: str, name: str) -> Path:
        return _write_config(work, embedder_url, None, file=f"{name}.toml")

    search = ("search", "falcon", "-d", "notes")
    with silent_server() as silent:
        config = at(silent.url, "silent")
        for command, args in (("add", ("add", "Owls.", "-d", "notes")), ("search", search)):
            got = _timed(config, *args, HAIKU_EMBEDDER_TIMEOUT="2")
            check("embedder never answers (2 s limit)", command, 4, got, "within 2 s" in got[1])
        model = {"OPENAI_BASE_URL": silent.url, "OPENAI_API_KEY": "x", "HAIKU_MODEL_TIMEOUT": "2"}
        got = _timed(at(url, "model"), "ask", "Which birds?", "-m", "openai-chat:test", **model)
        check("model never answers (2 s limit)", "ask", 4, got, "within 2 s" in got[1])
    nan = serve_embeddings(lambda texts: np.full((len(texts), DIMENSION), np.nan, dtype=np.float32))
    with nan as nan_url:
        config = at(nan_url, "nan")
        before = len(_state(config, "notes")["ids"])
        for command, args in (("add", ("add", "Owls.", "-d", "notes")), ("search", search)):
            got = _timed(config, *args)
            kept = len(_state(config, "notes")["ids"]) == before
            check("embedder sends NaN", command, 4, got, "NaN" in got[1] and kept)
    with serve_hash_embedder(DIMENSION // 2) as small:
        got = _timed(at(small, "small"), *search)
        check("embedder changes vector size", "search", 4, got, "returned 32-dimensional" in got[1])
    status, reply = answer("unused")
    with serve(lambda body: (status, {**reply, "choices": []})) as stub:
        env = {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "x"}
        got = _timed(at(url, "model"), "ask", "Which birds?", "-m", "openai-chat:test", **env)
        check("model sends no choices", "ask", 4, got)


def _one_line_inputs(config: Path, work: Path, check) -> None:
    """Files that are one line: chunking is linear, so these end (7 MB of words, 2 MB of dots)."""
    words = work / "one-line-words.txt"
    rng = random.Random(7)
    with words.open("w", encoding="utf-8") as f:
        for _ in range(7 * 2**20 // 4096):
            f.write(" ".join(rng.choice(WORDS) for _ in range(560))[:4095] + " ")
    dots = work / "one-line-dots.txt"
    dots.write_text("." * 2 * 2**20, encoding="utf-8")
    for name, path in (("7 MB one-line text", words), ("2 MB of dots, one line", dots)):
        got = _timed(config, "add-src", str(path), "--db", str(work / f"{path.stem}.lancedb"))
        check(name, "add-src", 0, (got[0], "", got[2]))
    code, err, seconds = _stdin(config, b"x" * (2 * 2**20), HAIKU_CONFIG=str(_limited(config)))
    check("add - over [ingest] max_text_mb", "add -", 1, (code, err, seconds), "max_text_mb" in err)
    named = work / "odd names"
    named.mkdir()
    (named / "owls\nadded     forged.md").write_text("Owls hunt at night.\n", encoding="utf-8")
    start = time.monotonic()
    proc = _haiku(config, "add-src", str(named), "--db", str(work / "names.lancedb"))
    lines = proc.stdout.splitlines()
    one_line = len(lines) == 1 and "\\n" in lines[0]
    got = (proc.returncode, proc.stderr.splitlines()[-1:][0] if proc.stderr else "", time.monotonic() - start)
    check("file name with a newline", "add-src", 0, got, one_line)


def _limited(config: Path) -> Path:
    limited = config.with_name("limited.toml")
    limited.write_text(config.read_text(encoding="utf-8") + "\n[ingest]\nmax_text_mb = 0.25\n", "utf-8")
    return limited


def _failing_mid_write(work: Path, url: str, port: int, mode: str) -> dict:
    """A writer whose store stalls or goes away after its data is written, with a 3 s timeout.

    Expected: exit 3 with one line, within a few timeouts, and readers see the database as it was.
    """
    from tests.support.stall_proxy import StallingProxy

    row = {"fault": f"S3 {mode} mid-write (timeout 3 s)", "command": "add", "expected_exit": 3}
    direct = _write_config(work, url, f"http://127.0.0.1:{port}", stem=mode, file=f"{mode}-direct.toml")
    assert _haiku(direct, "add", _text("before"), "-d", "remote").returncode == 0
    gate = Path(tempfile.mkdtemp(prefix="haiku-gate-"))
    with StallingProxy(port) as proxy:
        config = _write_config(work, url, proxy.endpoint, stem=mode, file=f"{mode}-proxy.toml")
        env = _env(config, HAIKU_TEST_PAUSE=f"data-written:{gate}", HAIKU_STORAGE_TIMEOUT="3")
        proc = subprocess.Popen(
            [sys.executable, "-m", "haiku_cli", "add", _text("mid"), "-d", "remote"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not any(gate.glob("*.reached")):
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                failed = {"exit": proc.returncode, "one_line": False, "seconds": 0.0, "ok": False}
                return {**row, **failed, "stderr": f"ended before writing: {err}"[:300]}
            time.sleep(0.05)
        if mode == "stalled":
            proxy.stall()
        else:
            proxy.__exit__(None, None, None)  # connections cut, new ones refused
        start = time.monotonic()
        (gate / "data-written.go").touch()
        _, err = proc.communicate(timeout=900)
        seconds = time.monotonic() - start
        proxy.resume()
    shutil.rmtree(gate, ignore_errors=True)
    listed = _haiku(direct, "list", "-d", "remote", "--json")
    titles = [d["title"] for d in json.loads(listed.stdout)["documents"]] if listed.returncode == 0 else None
    unchanged = titles is not None and len(titles) == 1
    lines = [line for line in err.splitlines() if line.strip()]
    one_line = len(lines) <= 1 and "Traceback" not in err
    # Named as what happened: a stall with the limit and its setting (it was "cannot connect"), a
    # stopped server as refusing connections (it was "did not answer within 3 s").
    stalled = "did not answer within 3 s" in err and "timeout_seconds" in err
    named = stalled if mode == "stalled" else "connection was refused" in err
    return {
        **row,
        "exit": proc.returncode,
        "one_line": one_line,
        "seconds": round(seconds, 1),
        "ok": proc.returncode == 3 and one_line and unchanged and named,
        "stderr": (lines[0][:140] if lines else "") + ("" if unchanged else f" | readers see {titles}"),
    }


# ------------------------------------------------------------------------------------------------ main


def _print_stress(r: dict) -> None:
    print(
        f"\nstress: {r['writers']} writers + {r['readers']} readers for {r['seconds']:.0f} s, {r['database']}"
    )
    print(f"  acknowledged writes      {r['acknowledged_writes']}  {r['acknowledged_by_op']}")
    print(
        f"  acknowledged documents   {r['acknowledged_documents']} "
        f"(deleted again: {r['acknowledged_deletes']})"
    )
    print(f"  stored documents         {r['stored_documents']} (expected {r['expected_documents']})")
    print(f"  lost writes              {r['lost_writes']}")
    print(f"  deleted but present      {r['deleted_but_present']}")
    print(f"  stored, not acknowledged {r['stored_without_acknowledgement']}")
    print(f"  documents without chunks {r['documents_without_chunks']}  (orphan chunks {r['orphan_chunks']})")
    print(f"  failed writes            {r['failed_writes']}  {r['failed_write_reasons']}")
    print(f"  reads / reader errors    {r['reads']} / {r['reader_errors']}  {r['reader_error_reasons']}")


def _print_kills(r: dict) -> None:
    print(
        f"\nkill -9: {r['killed']} of {r['rounds']} commands killed mid-run "
        f"({r['killed_mid_write']} mid-write)"
    )
    print(f"  consistent afterwards    {r['consistent_after_kill']}/{r['killed']}  {r['by_op']}")
    print(f"  next writer recovers     {r['next_writer_recovers']}")
    print(f"  lock, journal time (s)   {r['seconds_holding_lock_and_journal']}")
    for p in r["problems"]:
        print(f"  PROBLEM {p}")


def _print_faults(r: dict) -> None:
    print(f"\nfaults: {r['handled']}/{r['checked']} with the documented exit code and one line")
    for row in r["faults"]:
        if row["ok"] is None:
            print(f"  skipped  {row['fault']}: {row['stderr']}")
            continue
        mark = "ok  " if row["ok"] else "FAIL"
        print(
            f"  {mark} {row['fault']:<36} {row['command']:<20} exit {row['exit']:>3} "
            f"(want {row['expected_exit']}) {row['seconds']:>6.1f} s  {row['stderr'][:70]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all", choices=["stress", "kills", "faults", "all"])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the stress run")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=40, help="how many commands to kill")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--s3", action="store_true", help="also stress a database on a local S3 server")
    parser.add_argument("--no-s3-faults", action="store_true", help="skip the S3 rows of the fault table")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args()
    from haiku_cli.store.database import quiet_lance_logs

    quiet_lance_logs()
    with result("reliability", "Reliability under concurrent writers and kills") as table:
        reliability_rows(table, run(args))


def reliability_rows(table: Table, out: dict) -> None:
    """What was lost or left broken: acknowledged writes, reads, kills mid-command, faults' exit codes."""
    for r in out.get("stress", []):
        table.add(
            f"acknowledged writes lost, {r['writers']} writers, {r['readers']} readers, {r['database']}",
            f"**{r['lost_writes']} of {r['acknowledged_writes']:,}**",
        )
        table.add(
            f"reads failed during that ({r['database']})",
            f"{r['reader_errors']} of {r['reads']:,}",
        )
        table.add(
            f"documents without chunks, orphan chunks ({r['database']})",
            f"{r['documents_without_chunks']}, {r['orphan_chunks']}",
        )
    if k := out.get("kills"):
        table.add(
            "`kill -9` mid-command, database consistent after",
            f"{k['consistent_after_kill']} of {k['killed']}",
        )
    if f := out.get("faults"):
        table.add("faults answered with the documented exit code", f"{f['handled']} of {f['checked']}")


def run(args: argparse.Namespace) -> dict:
    out: dict = {"load_average": os.getloadavg()[0]}
    if args.part in ("stress", "all"):
        out["stress"] = [stress(args.seconds, args.writers, args.readers, s3=False)]
        if args.s3:
            out["stress"].append(stress(args.seconds, args.writers, args.readers, s3=True))
        if not args.json:
            for r in out["stress"]:
                _print_stress(r)
    if args.part in ("kills", "all"):
        out["kills"] = kills(args.kills, args.seed)
        if not args.json:
            _print_kills(out["kills"])
    if args.part in ("faults", "all"):
        out["faults"] = faults(s3=not args.no_s3_faults)
        if not args.json:
            _print_faults(out["faults"])
    out["load_average_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out, indent=2, default=sorted))
    else:
        print(
            f"\n(load average {out['load_average']:.1f} before, {out['load_average_after']:.1f} after: "
            "figures taken on a shared, loaded machine)"
        )
    return out


def _worker() -> None:
    role, config, name, index, seconds, log = sys.argv[1:7]
    from haiku_cli.store.database import quiet_lance_logs

    quiet_lance_logs()
    loop = _writer_loop if role == "_writer" else _reader_loop
    asyncio.run(loop(Path(config), name, int(index), float(seconds), Path(log)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("_writer", "_reader"):
        _worker()
    else:
        main()

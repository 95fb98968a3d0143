"""`add-src --engine ray` on a real local Ray cluster (two worker CPUs, started once for the module), into
a local and an S3-compatible (moto on 127.0.0.1) database, against a single-process add of the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from haiku_cli.errors import ExitCode
from haiku_cli.store import Location, open_database
from tests.support.children import ctrl_c_preexec, reaped

# One worker runs them all: the cluster starts once, not once on each.
pytestmark = pytest.mark.xdist_group("ray-cluster")


@pytest.fixture(scope="module")
def cluster(s3_server: str) -> Iterator[None]:
    """A local Ray cluster of two CPUs; started after the S3 server, so its workers hold its credentials."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _config(write_config, tmp_path: Path, endpoint: str, extra: str = "[ray]\nmin_mb = 0\n") -> None:
    options = f'{{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}'
    write_config(
        f"""
[databases]
local_ray = "{tmp_path}/local_ray.lancedb"
local_one = "{tmp_path}/local_one.lancedb"
[databases.s3_ray]
uri = "s3://lab/ray-{tmp_path.name}.lancedb"
storage_options = {options}
[databases.s3_one]
uri = "s3://lab/one-{tmp_path.name}.lancedb"
storage_options = {options}
[sources."s3://lab/"]
storage_options = {options}
{extra}
"""
    )


def _folder(tmp_path: Path) -> Path:
    """Documents of one and of several chunks, a subfolder, and one file that cannot be read."""
    folder = tmp_path / "corpus"
    (folder / "birds").mkdir(parents=True)
    (folder / "kestrels.md").write_text("# Kestrels\n\nKestrels hover over fields hunting voles.\n")
    (folder / "birds" / "falcons.txt").write_text("Peregrine falcons stoop at great speed onto prey.\n")
    long = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"Owls of kind {i} call at night, sentence {j}." for j in range(40))
        for i in range(6)
    )
    (folder / "birds" / "owls.md").write_text("# Owls\n\n" + long)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    return folder


def _outcomes(stdout: str) -> list[tuple[str, str, int | None]]:
    return [(o["source"], o["status"], o.get("chunks")) for o in json.loads(stdout)["outcomes"]]


def _stored(location: Location) -> tuple[dict, dict, np.ndarray]:
    """Documents by uri, chunks by (uri, order) without their ids, and the vectors in that order."""
    db = open_database(location)
    docs = db.documents.to_arrow().to_pylist()
    by_id = {d["id"]: d["uri"] for d in docs}
    documents = {d["uri"]: (d["title"], d["content"], d["content_hash"], d["metadata"]) for d in docs}
    rows = sorted(db.chunks.to_arrow().to_pylist(), key=lambda r: (r["document_uri"], r["order"]))
    assert all(by_id[r["document_id"]] == r["document_uri"] for r in rows)  # ids by the usual rules
    assert len({r["id"] for r in rows}) == len(rows)
    fields = (
        "document_title",
        "document_metadata",
        "text",
        "search_text",
        "search_tokens",
        "search_terms",
        "heading_path",
        "pages",
        "char_start",
        "char_end",
        "line_start",
        "line_end",
    )
    chunks = {(r["document_uri"], r["order"]): tuple(str(r[f]) for f in fields) for r in rows}
    return documents, chunks, np.array([r["vector"] for r in rows], dtype=np.float32)


def _same_database(a: Location, b: Location) -> None:
    docs_a, chunks_a, vectors_a = _stored(a)
    docs_b, chunks_b, vectors_b = _stored(b)
    assert docs_a == docs_b
    assert chunks_a == chunks_b
    np.testing.assert_allclose(vectors_a, vectors_b, atol=1e-5)


async def _cannot_embed(self, texts, input_type):
    raise AssertionError("embedded in the driver, not on the cluster")


def _cannot_list(self, uri, choice=None):
    raise AssertionError("listed in the driver, not on the cluster")


def _no_chunk_rows(writes):
    """`make_chunk_rows` for a driver whose workers write every new chunk as fragments."""
    made = writes.make_chunk_rows

    def rows(chunks, new):
        assert not new, "chunk rows made in the driver, not by the cluster's workers"
        return made(chunks, new)

    return rows


def _unnamed_chunk_files(location: Location) -> list[str]:
    """Data files in the chunks table's folder that no version of the table names (stray fragments)."""
    import lance
    from lance.file import LanceFileSession

    options = location.storage_options or None
    uri = open_database(location).chunks.to_lance().uri
    named = set()
    for version in lance.dataset(uri, storage_options=options).versions():
        at = lance.dataset(uri, version=version["version"], storage_options=options)
        named |= {f"data/{f.path}" for fragment in at.get_fragments() for f in fragment.data_files()}
    return sorted(set(LanceFileSession(uri, storage_options=options).list("data")) - named)


def _location(cli, name: str) -> Location:
    from haiku_cli.databases.workspace import Workspace

    return Workspace.load().lookup(name)


@pytest.mark.slow
def test_a_ray_add_stores_what_a_single_process_add_does(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.embed.embedder import BundledEmbedder

    _config(write_config, tmp_path, s3_server)
    folder = _folder(tmp_path)
    one = cli("add-src", str(folder), "-d", "local_one", "--meta", "team=birds", "--json")
    assert one.exit_code == ExitCode.PARTIAL, one.stderr  # broken.pdf
    # From here on this process cannot embed: every vector stored below was made by the cluster's workers.
    embed = BundledEmbedder._embed
    monkeypatch.setattr(BundledEmbedder, "_embed", _cannot_embed)
    # Nor does it make new documents' chunk rows: the workers write them as fragments it commits.
    from haiku_cli.store import document_writes

    monkeypatch.setattr(document_writes, "make_chunk_rows", _no_chunk_rows(document_writes))
    args = ("--meta", "team=birds", "--engine", "ray", "--json")
    ray_add = cli("add-src", str(folder), "-d", "local_ray", *args)
    assert ray_add.exit_code == ExitCode.PARTIAL, ray_add.stderr
    assert _outcomes(ray_add.stdout) == _outcomes(one.stdout)
    assert ("owls", "added") in {(Path(s).stem, st) for s, st, _ in _outcomes(ray_add.stdout)}
    _same_database(_location(cli, "local_ray"), _location(cli, "local_one"))
    # The committed fragments are indexed as any add's rows are (full text, chunk and document keys).
    indexes = json.loads(cli("info", "-d", "local_ray", "--json").stdout)["indexes"]
    assert {i["name"] for i in indexes} >= {"text_idx", "id_idx", "document_id_idx"}
    assert all(i["unindexed_rows"] == 0 for i in indexes), indexes
    # The sources are remembered as by any add: a rerun finds everything unchanged, and so does a sync.
    again = cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray", "--json")
    assert {st for _, st, _ in _outcomes(again.stdout)} == {"unchanged", "failed"}
    (synced,) = json.loads(cli("sync", "-d", "local_ray", "--json").stdout)["databases"]
    assert synced["sources"][0]["unchanged"] == 3
    monkeypatch.setattr(BundledEmbedder, "_embed", embed)  # a search embeds its query here
    hit = json.loads(cli("search", "hovering kestrels", "-d", "local_ray", "--json").stdout)["hits"][0]
    assert hit["document_uri"].endswith("kestrels.md")


@pytest.mark.slow
def test_a_ray_add_of_an_s3_prefix_into_an_s3_database_equals_a_single_process_one(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    from haiku_cli.ingest.objects import ObjectStore

    _config(write_config, tmp_path, s3_server)
    bucket = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    top = f"corpus-{tmp_path.name}"
    for path in _folder(tmp_path).rglob("*"):
        if path.is_file():
            rel = path.relative_to(tmp_path / "corpus").as_posix()
            bucket.put_object(Bucket="lab", Key=f"{top}/{rel}", Body=path.read_bytes())
    prefix, missing = f"s3://lab/{top}/", f"s3://lab/missing-{top}/"
    one = cli("add-src", prefix, missing, "-d", "s3_one", "--json")
    # The prefixes are listed by a task on the running cluster, not by this process.
    with monkeypatch.context() as patched:
        patched.setattr(ObjectStore, "listing", _cannot_list)
        ray_add = cli("add-src", prefix, missing, "-d", "s3_ray", "--engine", "ray", "--json")
    assert ray_add.exit_code == one.exit_code == ExitCode.PARTIAL, ray_add.stderr
    assert _outcomes(ray_add.stdout) == _outcomes(one.stdout)
    assert (missing, "failed", 0) in _outcomes(ray_add.stdout)  # "no such object or prefix", as here
    _same_database(_location(cli, "s3_ray"), _location(cli, "s3_one"))
    (source,) = json.loads(cli("sources", "-d", "s3_ray", "--json").stdout)["sources"]
    assert (source["source"], source["documents"]) == (prefix, 3)  # the missing prefix is not remembered
    assert _unnamed_chunk_files(_location(cli, "s3_ray")) == []


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced_and_its_task_run_again(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(write_config, tmp_path, s3_server)
    folder = _folder(tmp_path)
    died = tmp_path / "died"
    monkeypatch.setenv("HAIKU_TEST_RAY_DIE", str(died))
    ray_add = cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray", "--json")
    assert died.exists()  # a worker process ended once its task had written its fragments
    assert ray_add.exit_code == ExitCode.PARTIAL, ray_add.stderr
    assert _unnamed_chunk_files(_location(cli, "local_ray")) == []  # the dead task's, never committed
    monkeypatch.delenv("HAIKU_TEST_RAY_DIE")
    assert cli("add-src", str(folder), "-d", "local_one").exit_code == ExitCode.PARTIAL
    _same_database(_location(cli, "local_ray"), _location(cli, "local_one"))


@pytest.mark.slow
def test_a_failing_ray_add_leaves_the_database_as_it_was(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(write_config, tmp_path, s3_server, "[ray]\nmin_mb = 0\nmax_retries = 0\n")
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "local_ray").exit_code == 0
    before = _stored(_location(cli, "local_ray"))
    monkeypatch.setenv("HAIKU_TEST_RAY_DIE", str(tmp_path / "died"))  # not run again: the add fails
    failed = cli("add-src", str(_folder(tmp_path)), "-d", "local_ray", "--engine", "ray")
    assert failed.exit_code == ExitCode.MODEL
    assert failed.stderr.startswith("haiku: the Ray cluster failed") and len(failed.stderr.splitlines()) == 1
    after = _stored(_location(cli, "local_ray"))
    assert after[:2] == before[:2]
    assert _unnamed_chunk_files(_location(cli, "local_ray")) == []  # the failed task wrote its fragments
    (report,) = json.loads(cli("doctor", "-d", "local_ray", "--json").stdout)["databases"]
    assert report["ok"], report


@pytest.mark.slow
def test_a_ray_add_of_mail_stores_its_parts_as_a_single_process_add_does_embedding_them_on_the_cluster(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mailbox
    from email.message import EmailMessage

    from haiku_cli.embed.embedder import BundledEmbedder
    from haiku_cli.store import document_writes

    _config(write_config, tmp_path, s3_server)
    folder = tmp_path / "mail"
    folder.mkdir()
    message = EmailMessage()
    message["Subject"], message["From"], message["Date"] = "Owl census", "ada@example.com", "1 Jun 2026"
    message.set_content("The counts are attached.")
    message.add_attachment(
        b"# Counts\n\nTawny owls: 12.", maintype="text", subtype="markdown", filename="counts.md"
    )
    (folder / "census.eml").write_bytes(message.as_bytes())
    box = mailbox.mbox(folder / "field.mbox")
    for i, bird in enumerate(("Kestrels hover over the meadow.", "Harriers quarter the marsh.")):
        note = EmailMessage()
        note["Subject"], note["From"], note["Message-ID"] = f"Sighting {i}", "bo@example.com", f"<s{i}@x>"
        note.set_content(bird)
        box.add(note)
    box.flush()
    (folder / "kestrels.md").write_text("# Kestrels\n\nKestrels hover over fields hunting voles.\n")
    one = cli("add-src", str(folder), "-d", "local_one", "--json")
    # From here on this process neither embeds nor makes new chunk rows: the parts too are the workers'.
    monkeypatch.setattr(BundledEmbedder, "_embed", _cannot_embed)
    monkeypatch.setattr(document_writes, "make_chunk_rows", _no_chunk_rows(document_writes))
    ray_add = cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray", "--json")
    assert ray_add.exit_code == 0, ray_add.stderr
    assert _outcomes(ray_add.stdout) == _outcomes(one.stdout)
    mail = folder / "census.eml"
    added = [(s, st) for s, st, _ in _outcomes(ray_add.stdout)]
    assert added[:2] == [(str(mail), "added"), (f"{mail}#attachment/counts.md", "added")]
    assert [st for s, st in added if "field.mbox#message/" in s] == ["added", "added"]
    _same_database(_location(cli, "local_ray"), _location(cli, "local_one"))
    # The parts' stored hashes go to the workers too: a second add finds every part unchanged.
    again = cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray", "--json")
    assert again.exit_code == 0, again.stderr
    assert {st for _, st, _ in _outcomes(again.stdout)} == {"unchanged"}
    assert len(_outcomes(again.stdout)) == len(added)


def test_a_small_add_says_so_and_runs_in_this_process(cli, write_config, tmp_path, s3_server) -> None:
    pytest.importorskip("ray")
    _config(write_config, tmp_path, s3_server, extra="")  # [ray] min_mb at its default
    added = cli("add-src", str(_folder(tmp_path)), "-d", "local_ray", "--engine", "ray", "--json")
    assert added.exit_code == ExitCode.PARTIAL
    assert "under [ray] min_mb = 16 MB: adding in this process" in added.stderr
    assert [st for _, st, _ in _outcomes(added.stdout)].count("added") == 3


def test_without_ray_installed_the_engine_is_one_line_naming_the_extra(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where it is not installed
    (tmp_path / "a.md").write_text("# A\n\nSome text.\n")
    out = cli("add-src", str(tmp_path / "a.md"), "--db", str(tmp_path / "x.lancedb"), "--engine", "ray")
    assert out.exit_code == ExitCode.INPUT
    assert (
        out.stderr == "haiku: --engine ray needs Ray, which is not installed: pip install 'haiku-cli[ray]'\n"
    )
    assert not os.path.exists(tmp_path / "x.lancedb")


@pytest.mark.slow
def test_ctrl_c_ends_the_cluster_work_and_leaves_the_database_as_it_was(
    cluster, cli, write_config, tmp_path: Path, s3_server: str
) -> None:
    import signal

    _config(write_config, tmp_path, s3_server)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "local_ray").exit_code == 0
    before = _stored(_location(cli, "local_ray"))
    add, reached = _ray_add_held_at("ray-task", tmp_path)
    workers = [int(p.name.split(".")[1]) for p in reached]
    with reaped(add):
        add.send_signal(signal.SIGINT)  # the tasks are held until ray-task.go exists, which it never does
        assert add.wait(60) == ExitCode.INTERRUPTED
    assert add.stderr is not None
    assert add.stderr.read().splitlines() == [
        "haiku: interrupted: an add on the Ray cluster commits its chunks at its end, so none of it is "
        "kept; run the same add-src again"
    ]
    _wait_for(lambda: not any(_alive(pid) for pid in workers), "the held tasks' workers to end")
    assert _stored(_location(cli, "local_ray"))[:2] == before[:2]
    (report,) = json.loads(cli("doctor", "-d", "local_ray", "--json").stdout)["databases"]
    assert report["ok"], report


def _ray_add_held_at(point: str, tmp_path: Path) -> tuple[subprocess.Popen[str], list[Path]]:
    """A second driver adding `_folder` to local_ray on this module's cluster, held at the test pause
    `point` (HAIKU_TEST_PAUSE) once reached, and the marker files of the processes that reached it."""
    import ray

    gate = tmp_path / "gate"
    gate.mkdir()
    address = ray.get_runtime_context().gcs_address
    args = ["add-src", str(_folder(tmp_path)), "-d", "local_ray", "--engine", "ray", "--ray-address", address]
    add = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", *args],
        env={**os.environ, "HAIKU_TEST_PAUSE": f"{point}:{gate}"},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_preexec(),
    )
    try:
        _wait_for(lambda: any(gate.glob("*.reached")), f"the add to reach {point}")
    except BaseException:
        with reaped(add):
            raise
    return add, list(gate.glob("*.reached"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(done, what: str, seconds: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def test_a_local_cluster_that_does_not_start_is_one_line_and_exit_4(
    write_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ray's session folder cannot be made (a file squats its place): the start fails within seconds, as
    # one that timed out does, with an exception Ray raises as it is (not one haiku knew of: exit 70).
    pytest.importorskip("ray")
    squat = tmp_path / "squat"
    squat.write_text("")
    monkeypatch.setenv("RAY_TMPDIR", str(squat))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    write_config("[ray]\nmin_mb = 0\n")
    (tmp_path / "a.md").write_text("# A\n\nSome text.\n")
    # In a process of its own: one that already joined a cluster (an earlier test's) would use it.
    args = ["add-src", str(tmp_path / "a.md"), "--db", str(tmp_path / "x.lancedb"), "--engine", "ray"]
    command = [sys.executable, "-m", "haiku_cli", *args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == ExitCode.MODEL, out.stderr
    assert out.stderr == (
        f"haiku: a local Ray cluster did not start: [Errno 20] Not a directory: '{squat}/ray'; start one "
        "yourself (ray start --head) and name it with --ray-address, or add without --engine ray\n"
    )


def test_a_cluster_address_that_does_not_answer_stops_before_any_database_is_made(
    cli, tmp_path: Path
) -> None:
    import socket

    pytest.importorskip("ray")
    with socket.socket() as sock:  # a port bound but not listening: connections to it are refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        (tmp_path / "a.md").write_text("# A\n\nSome text.\n")
        db = tmp_path / "x.lancedb"
        args = ["--engine", "ray", "--ray-address", f"127.0.0.1:{port}"]
        out = cli("add-src", str(tmp_path / "a.md"), "--db", str(db), *args)
    assert out.exit_code == ExitCode.INPUT
    assert out.stderr.startswith(f"haiku: the Ray cluster at 127.0.0.1:{port} cannot be reached")
    assert len(out.stderr.splitlines()) == 1 and not db.exists()
    usage = cli("add-src", str(tmp_path / "a.md"), "--db", str(db), "--ray-address", f"127.0.0.1:{port}")
    assert usage.exit_code == ExitCode.USAGE and "--ray-address needs --engine ray" in usage.stderr


@pytest.mark.slow
def test_a_task_does_not_embed_a_document_whose_content_is_stored_under_its_uri(
    cluster, tmp_path: Path
) -> None:
    import ray

    from haiku_cli.config.settings import EmbedderSettings, IngestSettings
    from haiku_cli.ingest.cluster_tasks import Job as _Job
    from haiku_cli.ingest.cluster_tasks import prepare_items as _prepare
    from haiku_cli.ingest.convert.dispatch import file_uri
    from haiku_cli.ingest.stored import content_hash, stored_content

    path = _folder(tmp_path) / "kestrels.md"
    job = _Job(IngestSettings(), None, EmbedderSettings(), None)
    task = ray.remote(_prepare)
    (fresh,), fragment_rows, _ = ray.get(task.remote([(0, path)], job, {}))
    assert fresh.chunks and fresh.vectors is not None and fresh.vectors.shape[0] == len(fresh.chunks)
    assert fresh.document is not None and fresh.document.uri == file_uri(path) and fragment_rows == []
    stored = {file_uri(path): content_hash(stored_content(fresh.document))}
    (again,), _, _ = ray.get(task.remote([(0, path)], job, stored))
    assert again.document == fresh.document and again.chunks is None and again.vectors is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["local_ray", "s3_ray"])
def test_a_fragment_commit_that_fails_leaves_the_database_as_it_was_and_no_fragment_files(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    import lance

    # Workers write their fragments, then the commit of them fails: a store that refuses it.
    _config(write_config, tmp_path, s3_server)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", name).exit_code == 0
    before = _stored(_location(cli, name))

    def refused(*args, **kwargs):
        raise OSError("the store refused the commit")

    with monkeypatch.context() as patched:
        patched.setattr(lance.LanceDataset, "commit", staticmethod(refused))
        failed = cli("add-src", str(_folder(tmp_path)), "-d", name, "--engine", "ray")
    assert failed.exit_code == ExitCode.DATABASE, failed.stderr
    assert "the store refused the commit" in failed.stderr and len(failed.stderr.splitlines()) == 1
    assert _stored(_location(cli, name))[:2] == before[:2]
    assert _unnamed_chunk_files(_location(cli, name)) == []
    (report,) = json.loads(cli("doctor", "-d", name, "--json").stdout)["databases"]
    assert report["ok"], report


@pytest.mark.slow
def test_fragments_of_an_add_killed_before_its_commit_are_removed_by_the_next_writer(
    cluster, cli, write_config, tmp_path: Path, s3_server: str
) -> None:
    import signal

    _config(write_config, tmp_path, s3_server)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "local_ray").exit_code == 0
    add, _ = _ray_add_held_at("fragments-commit", tmp_path)
    with reaped(add):
        assert _unnamed_chunk_files(_location(cli, "local_ray"))  # written by the workers, not committed
        add.send_signal(signal.SIGKILL)
        add.wait(60)
    # The next writer undoes the dead add, fragments included.
    assert cli("add", "Falcons stoop.", "-d", "local_ray").exit_code == 0
    assert _unnamed_chunk_files(_location(cli, "local_ray")) == []
    db = open_database(_location(cli, "local_ray"))
    texts = sorted(db.chunks.to_arrow().column("text").to_pylist())
    assert texts == ["Falcons stoop.", "Kestrels hover over fields hunting voles."]
    assert db.documents.count_rows() == 2


@pytest.mark.slow
def test_with_fragments_off_the_workers_send_their_rows_to_the_driver(
    cluster, cli, write_config, tmp_path: Path, s3_server: str
) -> None:
    _config(write_config, tmp_path, s3_server, "[ray]\nmin_mb = 0\nfragments = false\n")
    folder = _folder(tmp_path)
    assert cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray").exit_code == ExitCode.PARTIAL
    assert cli("add-src", str(folder), "-d", "local_one").exit_code == ExitCode.PARTIAL
    _same_database(_location(cli, "local_ray"), _location(cli, "local_one"))


@pytest.mark.slow
def test_a_ray_sync_stores_what_a_single_process_sync_does(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.embed.embedder import BundledEmbedder

    _config(write_config, tmp_path, s3_server)
    folder = _folder(tmp_path)
    for name in ("local_ray", "local_one"):
        assert cli("add-src", str(folder), "-d", name).exit_code == ExitCode.PARTIAL
    kestrels = open_database(_location(cli, "local_ray")).documents.search().where("uri LIKE '%kestrels%'")
    (kestrels_id,) = kestrels.to_arrow().column("id").to_pylist()
    # A changed file, a new one, and a moved one (whose document keeps its id, chunks and vectors).
    (folder / "birds" / "falcons.txt").write_text("Peregrine falcons stoop at great speed onto pigeons.\n")
    (folder / "harriers.md").write_text("# Harriers\n\nHarriers quarter low over marshes and reeds.\n")
    (folder / "kestrels.md").rename(folder / "birds" / "kestrels.md")
    one = json.loads(cli("sync", "-d", "local_one", "--json").stdout)["databases"][0]["sources"][0]
    monkeypatch.setattr(BundledEmbedder, "_embed", _cannot_embed)  # the cluster embeds what changed
    synced = cli("sync", "-d", "local_ray", "--engine", "ray", "--json")
    assert synced.exit_code == ExitCode.PARTIAL, synced.stderr  # broken.pdf
    ray_sync = json.loads(synced.stdout)["databases"][0]["sources"][0]
    counts = ("added", "updated", "deleted", "unchanged", "failed")
    assert [ray_sync[c] for c in counts] == [one[c] for c in counts] == [1, 2, 0, 1, 1]
    _same_database(_location(cli, "local_ray"), _location(cli, "local_one"))
    moved = open_database(_location(cli, "local_ray")).documents.search().where("uri LIKE '%kestrels%'")
    assert moved.to_arrow().column("id").to_pylist() == [kestrels_id]
    assert _unnamed_chunk_files(_location(cli, "local_ray")) == []


@pytest.mark.slow
def test_an_actor_holds_its_rows_over_many_calls_and_writes_few_fragments(
    cluster, cli, write_config, tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lance

    _config(write_config, tmp_path, s3_server)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(100):  # seven calls of up to 16 items, over the cluster's two actors
        (folder / f"note{i:03}.md").write_text(f"# Note {i}\n\nKestrel sighting number {i} over the field.\n")
    # The first actor to write its fragment dies then: a new one makes the rows of its four calls again.
    died = tmp_path / "died"
    monkeypatch.setenv("HAIKU_TEST_RAY_DIE", str(died))
    added = cli("add-src", str(folder), "-d", "local_ray", "--engine", "ray", "--json")
    assert added.exit_code == ExitCode.OK, added.stderr
    assert died.exists()
    documents, chunks, _ = _stored(_location(cli, "local_ray"))  # every chunk under its document's id
    assert len(documents) == len(chunks) == 100
    uri = open_database(_location(cli, "local_ray")).chunks.to_lance().uri
    dataset = lance.dataset(uri)
    counts = [len(dataset.checkout_version(v["version"]).get_fragments()) for v in dataset.versions()]
    appended = max(b - a for a, b in zip([0, *counts], counts, strict=False))
    assert appended <= 2  # one per actor (a task each wrote one per call: 7)
    assert dataset.count_rows() == 100
    assert _unnamed_chunk_files(_location(cli, "local_ray")) == []


@pytest.mark.slow
def test_a_ray_sync_sends_a_changed_url_to_the_worker_rather_than_download_it_again(
    cluster, cli, write_config, tmp_path: Path, s3_server: str
) -> None:
    from tests.support.etag_server import serve_page

    _config(write_config, tmp_path, s3_server)
    with serve_page(b"<title>Kestrels</title><p>Kestrels hover over fields.</p>") as page:
        assert cli("add-src", page.url, "-d", "local_ray").exit_code == ExitCode.OK
        page.body = b"<title>Kestrels</title><p>Kestrels hover over fields, then stoop onto voles.</p>"
        synced = cli("sync", "-d", "local_ray", "--engine", "ray", "--json")
        assert synced.exit_code == ExitCode.OK, synced.stderr
        assert page.statuses == [200, 200]  # the add's download and the sync's, which asked with the ETag
    (source,) = json.loads(synced.stdout)["databases"][0]["sources"]
    assert source["updated"] == 1
    texts = open_database(_location(cli, "local_ray")).chunks.to_arrow().column("text").to_pylist()
    assert any("stoop onto voles" in text for text in texts)


@pytest.mark.slow
def test_calls_in_flight_to_an_actor_that_dies_go_to_a_new_one_in_their_order(
    cluster, tmp_path: Path
) -> None:
    import asyncio

    import ray

    from haiku_cli.config.settings import EmbedderSettings, IngestSettings
    from haiku_cli.ingest.cluster import ClusterWork, _nothing, _results
    from haiku_cli.ingest.cluster_pool import Pool as _Pool
    from haiku_cli.ingest.cluster_tasks import Job as _Job

    folder = tmp_path / "notes"
    folder.mkdir()
    items: list = []
    for i in range(40):  # three calls: the first and third to one actor, the second to the other
        (path := folder / f"note{i:02}.md").write_text(f"# Note {i}\n\nKestrel sighting {i}.\n")
        items.append((i, path))
    gate = tmp_path / "gate"
    gate.mkdir()
    job = _Job(IngestSettings(), None, EmbedderSettings(), None, pause=f"ray-task:{gate}")
    pool = _Pool(ray.put(job), 2, max_retries=1)

    async def run() -> list:
        taken = _results(items, {}, {}, pool, ClusterWork(_nothing()))
        got = asyncio.ensure_future(_all(taken))
        while len(list(gate.glob("*.reached"))) < 2:  # each actor holds its first call
            await asyncio.sleep(0.05)
        ray.kill(pool.actors[1], no_restart=True)
        (gate / "ray-task.go").touch()
        return await got

    try:
        prepared = asyncio.run(run())
    finally:
        pool.stop()
    assert len(pool._gone) == 1  # the killed actor, replaced
    assert [p.position for p in prepared] == list(range(40))
    assert all(p.error is None and p.chunks for p in prepared)


async def _all(iterator) -> list:
    return [one async for one in iterator]

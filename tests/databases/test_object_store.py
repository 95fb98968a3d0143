"""A database behind s3:// on a real S3-compatible server (moto) on 127.0.0.1, beside a local one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.support.stall_proxy import StallingProxy


def _config(write_config, endpoint: str, tmp_path: Path) -> None:
    write_config(
        f"""
[databases]
notes = "{tmp_path}/notes.lancedb"
[databases.papers]
uri = "s3://lab/papers-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}
"""
    )


@contextmanager
def _through_proxy(s3_server: str, write_config, tmp_path: Path, delay: float = 0) -> Iterator[StallingProxy]:
    """A stalling proxy in front of the S3 server, the test's `papers` database configured through it."""
    with StallingProxy(int(s3_server.rsplit(":", 1)[1]), delay) as proxy:
        _config(write_config, proxy.endpoint, tmp_path)
        yield proxy


def test_create_add_search_and_fan_out_with_s3(cli, write_config, s3_server: str, tmp_path: Path) -> None:
    _config(write_config, s3_server, tmp_path)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "notes").exit_code == 0
    added = cli("add", "Peregrine falcons stoop at great speed onto prey.", "-d", "papers")
    assert added.exit_code == 0, added.stderr
    info = json.loads(cli("info", "-d", "papers", "--json").stdout)
    assert info["kind"] == "object store" and info["documents"] == 1 and info["size_bytes"] is None
    hits = json.loads(cli("search", "birds of prey hunting", "--json").stdout)["hits"]
    assert {h["database"] for h in hits} == {"notes", "papers"}
    only = json.loads(cli("search", "falcons", "-d", "papers", "--json").stdout)["hits"]
    assert {h["database"] for h in only} == {"papers"}
    listed = json.loads(cli("databases", "--json").stdout)
    assert [(d["database"], d["kind"], d["exists"]) for d in listed] == [
        ("notes", "local", True),
        ("papers", "object store", True),
    ]
    # The location is never printed except where asked for.
    assert "s3://" not in cli("search", "falcons").stdout


def test_unreachable_object_store_fails_naming_the_database(
    cli, write_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        f"""
[databases]
notes = "{tmp_path}/notes.lancedb"
[databases.remote]
uri = "s3://lab/x.lancedb"
storage_options = {{ endpoint = "http://127.0.0.1:9", allow_http = true, region = "us-east-1" }}
"""
    )
    cli("add", "Kestrels hover.", "-d", "notes")
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    result = cli("search", "kestrel")
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        "haiku: database 'remote' cannot be reached: no AWS credentials were found; "
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE\n",
    )
    # Nothing listens at the endpoint: a refused connection, not a store that "did not answer in time".
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    result = cli("search", "kestrel")
    assert result.exit_code == ExitCode.DATABASE
    refused = "haiku: database 'remote' cannot be reached: the connection was refused; check the endpoint\n"
    assert result.stderr == refused
    assert result.stdout == ""
    # Also when the client's retries outlast the storage timeout.
    monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "0.5")
    result = cli("list", "-d", "remote")
    assert (result.exit_code, result.stderr) == (ExitCode.DATABASE, refused)


def test_stalled_object_store_in_a_set_is_named_within_the_timeout(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "notes").exit_code == 0
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.stall()
        # The short timeout only for the search of a store that never answers: its outcome is the same
        # however loaded the machine (the writes above and the search below keep the default timeout).
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        result = cli("search", "falcons", "--type", "fts")
        assert result.exit_code == ExitCode.DATABASE
        assert result.stderr.strip() == (
            "haiku: database 'papers' cannot be reached: the storage did not answer within 1 s; "
            "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)"
        )
        monkeypatch.delenv("HAIKU_STORAGE_TIMEOUT")
        proxy.resume()
        assert cli("search", "falcons", "--type", "fts").exit_code == 0


def _writer_paused_after_its_data(cli, tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path]:
    """A second `add` to 'papers' (the first stored through the configured store), in its own process,
    paused once its data is written; touch the returned path to let it commit."""
    from tests.store.test_writer_lock import _wait_for

    assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
    gate = tmp_path / "gate"
    gate.mkdir()
    writer = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "add", "Owls hunt at night.", "-d", "papers"],
        env={**os.environ, "HAIKU_TEST_PAUSE": f"data-written:{gate}", **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: any(gate.glob("*.reached")), "the writer to pause after writing its data")
    return writer, gate / "data-written.go"


def test_object_store_failing_mid_write_is_one_line_and_undone(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        writer, go = _writer_paused_after_its_data(cli, tmp_path, HAIKU_LEASE_SECONDS="600")
        # The store refuses access before the write is committed: a failure no client retries, so the
        # outcome (and how soon it comes) does not depend on timeouts or on how loaded the machine is.
        # (A lease that needs no renewal meanwhile: the requests counted are the write's alone.)
        proxy.forbid()
        asked = proxy.requests
        go.touch()
        _, stderr = writer.communicate(timeout=300)
        asked = proxy.requests - asked
        assert writer.returncode == ExitCode.DATABASE, stderr
        assert stderr.startswith("haiku: database 'papers' cannot be ") and len(stderr.splitlines()) == 1
        # A refusal is the store's answer that the commit did not land: nobody asks whether it did (16
        # requests measured: the commit's and the lease given back; 40 when it was asked 4 times).
        assert asked <= 20, asked
        _config(write_config, s3_server, tmp_path)  # the same store, reached directly
        # Readers see the state before the failed write. (The next writer undoes it once the failed
        # writer's lease lapses: the same recovery as tests/store/test_writer_lock.py, after a minute.)
        listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
        assert [d["title"] for d in listed] == ["Peregrine falcons stoop onto prey."]
        info = json.loads(cli("info", "-d", "papers", "--json").stdout)
        assert (info["documents"], info["chunks"]) == (1, 1)


def test_a_failed_first_add_leaves_no_database_in_the_object_store(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    _config(write_config, s3_server, tmp_path)
    (tmp_path / "empty.md").write_text("")
    assert cli("add-src", str(tmp_path / "empty.md"), "-d", "papers").exit_code == ExitCode.INPUT
    listed = cli("list", "-d", "papers")
    assert listed.exit_code == ExitCode.DATABASE and "'papers' does not exist yet" in listed.stderr
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    left = s3.list_objects_v2(Bucket="lab", Prefix=f"papers-{tmp_path.name}.lancedb/")
    assert left.get("KeyCount", 0) == 0
    assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
    assert json.loads(cli("info", "-d", "papers", "--json").stdout)["documents"] == 1


def test_pictures_are_stored_listed_and_written_out_from_s3(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    from tests.support.pictures import pdf_with_images

    _config(write_config, s3_server, tmp_path)
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(pdf_with_images(["A page of text above a figure."], [(0, (72, 400, 100, 80), "red")]))
    added = cli("add-src", str(paper), "-d", "papers", "--json")
    assert added.exit_code == 0, added.stderr
    doc_id = json.loads(added.stdout)["outcomes"][0]["document_id"]
    listed = json.loads(cli("get", doc_id, "-d", "papers", "--json").stdout)["pictures"]
    assert [(p["reference"], p["width"], p["height"]) for p in listed] == [("p1-1", 100, 80)]
    written = cli("pictures", doc_id, "-d", "papers", "--out", str(tmp_path / "figs"))
    assert written.exit_code == 0, written.stderr
    assert (tmp_path / "figs" / "p1-1.png").read_bytes().startswith(b"\x89PNG")
    assert cli("delete", doc_id, "-d", "papers").exit_code == 0
    again = cli("add-src", str(paper), "-d", "papers", "--json")
    new_id = json.loads(again.stdout)["outcomes"][0]["document_id"]
    assert len(json.loads(cli("get", new_id, "-d", "papers", "--json").stdout)["pictures"]) == 1


def test_a_stalled_store_names_the_timeout_in_force_for_a_write_and_a_read(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.stall()
        hint = "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)"
        # A write (its store client's own request timeout ends it) and a read of every database, each
        # naming the timeout in force for it. (Each takes ~8 s against a stalled store at 0.5 or 1 s, 14 s
        # at 2 s: two cover both paths and two values.)
        for seconds, args in (("0.5", ("add", "Owls hunt at night.", "-d", "papers")), ("1", ("databases",))):
            monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", seconds)
            result = cli(*args)
            assert result.stderr.startswith("haiku: database 'papers' "), result.stderr
            assert (
                result.stderr.endswith(f"did not answer within {seconds} s; {hint}\n")
                and len(result.stderr.splitlines()) == 1
            ), result.stderr
        proxy.resume()
        monkeypatch.delenv("HAIKU_STORAGE_TIMEOUT")
        assert cli("add", "Owls hunt at night.", "-d", "papers").exit_code == 0


def test_a_store_stalled_mid_write_is_named_as_stalled_not_unreachable(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        # LanceDB's exit hook would log, at warn, that it waited out its 5 s for the asks given up on.
        writer, go = _writer_paused_after_its_data(
            cli, tmp_path, HAIKU_STORAGE_TIMEOUT="2", HAIKU_LEASE_SECONDS="600", LANCEDB_LOG="warn"
        )
        # The store keeps accepting connections but answers nothing: each request waits out its 2 s.
        proxy.stall()
        asked = proxy.requests
        go.touch()
        _, stderr = writer.communicate(timeout=300)
        asked = proxy.requests - asked
        proxy.resume()
        assert writer.returncode == ExitCode.DATABASE, stderr
        # The commit got no answer: it may have landed, and the message says so.
        assert stderr == (
            "haiku: database 'papers': this write's commit may or may not have landed (check it with "
            "haiku list): the storage did not answer within 2 s; check the store, or raise [storage] "
            "timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n"
        )
        # Whether the commit landed is asked for three limits (6 s) with no pause between asks that
        # waited theirs out, and the lease is left to lapse: 14 requests measured, the asks given up on
        # cancelled at exit (21 while LanceDB's exit hook waited 5 s for them; 40, and 35 s, when it was
        # asked 4 times 2 s apart and the lease given back, each waiting out the limit again).
        assert asked < 30, asked
        listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
        assert [d["title"] for d in listed] == ["Peregrine falcons stoop onto prey."]


def test_a_slow_store_that_answers_every_request_in_time_is_read(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    _config(write_config, s3_server, tmp_path)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "notes").exit_code == 0
    assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
    # Every request waits a quarter of a second, well within the 3 s each may take; but opening the
    # database and searching it are dozens of requests in a row, together longer than one request's limit.
    with _through_proxy(s3_server, write_config, tmp_path, delay=0.25) as proxy:
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "3")
        one = cli("search", "falcons", "-d", "papers", "--json")
        assert one.exit_code == 0, one.stderr
        assert [h["database"] for h in json.loads(one.stdout)["hits"]] == ["papers"]
        both = cli("search", "birds of prey hunting", "--json")
        assert both.exit_code == 0, both.stderr
        assert {h["database"] for h in json.loads(both.stdout)["hits"]} == {"notes", "papers"}
        listed = cli("list", "-d", "papers", "--json")
        assert listed.exit_code == 0, listed.stderr
        assert len(json.loads(listed.stdout)["documents"]) == 1
        # Stalled, the limit ends the read with the value and the setting named. (A shorter one here: a
        # store that never answers fails the same way however loaded the machine; at 3 s this took 20 s.)
        proxy.stall()
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        stalled = cli("list", "-d", "papers")
        proxy.resume()
        assert stalled.exit_code == ExitCode.DATABASE
        assert stalled.stderr == (
            "haiku: database 'papers' cannot be reached: the storage did not answer within 1 s; "
            "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n"
        )


def test_a_stalled_store_is_named_before_lancedb_has_listed_it_six_times(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.stall()
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        asked = proxy.requests
        result = cli("list", "-d", "papers")
        asked = proxy.requests - asked
        proxy.resume()
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        "haiku: database 'papers' cannot be reached: the storage did not answer within 1 s; "
        "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n",
    )
    # Connecting, LanceDB lists a stalled store six times, each waiting out the timeout; the connect is
    # given up on after three timeouts (and a second), so the command ends having asked at most four.
    assert 1 <= asked <= 4, asked


@pytest.mark.slow
def test_a_command_that_gave_up_on_a_stalled_store_exits_with_its_message(
    write_config, s3_server: str, tmp_path: Path, cli
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.stall()
        # The connect is given up on after three 2 s limits and a second; LanceDB's call goes on listing
        # the store (six lists, 2 s each), longer than the 5 s LanceDB's exit hook waits for calls in
        # flight: that hook logs, at warn, when it waited its 5 s out.
        env = {**os.environ, "HAIKU_STORAGE_TIMEOUT": "2", "LANCEDB_LOG": "warn"}
        reader = subprocess.Popen(
            [sys.executable, "-m", "haiku_cli", "list", "-d", "papers"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert reader.stderr is not None
        said = reader.stderr.readline()
        told = time.monotonic()
        rest = reader.stderr.read()
        reader.wait(timeout=60)
        after = time.monotonic() - told
        proxy.resume()
    assert (reader.returncode, said, rest) == (
        ExitCode.DATABASE,
        "haiku: database 'papers' cannot be reached: the storage did not answer within 2 s; "
        "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n",
        "",
    )
    # The call given up on is cancelled at exit, so LanceDB's hook finds nothing in flight (measured
    # 0.03 s from the message to the exit; 5.0 s, and the hook's warning, when it waited). A loose bound
    # besides the warning, in case a LanceDB release words it differently.
    assert after < 3, after


@pytest.mark.slow
def test_a_command_that_gave_up_on_a_stalled_store_exits_with_its_code_while_a_read_comes_back(
    write_config, s3_server: str, tmp_path: Path
) -> None:
    # A read given up on stays in its thread, in native code (LanceDB's synchronous reads run inside
    # pyarrow's C++). Had the interpreter shut down after the message, such a read coming back then
    # would abort the process: exit -6 with "Fatal Python error: PyGILState_Release" here, with
    # "terminate called without an active exception" once in CI (a lease renewal's read). The thread
    # here comes back only once a shutdown has begun, so it always would.
    from tests.support.native_at_exit import command

    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        proxy.stall()
        run = subprocess.run(
            [sys.executable, "-c", command("list", "-d", "papers")],
            env={**os.environ, "HAIKU_STORAGE_TIMEOUT": "1"},
            cwd=Path(__file__).resolve().parents[2],  # where `tests` is imported from
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == ExitCode.DATABASE, run.stderr
    assert run.stderr == (
        "haiku: database 'papers' cannot be reached: the storage did not answer within 1 s; "
        "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n"
    )


# Where a first add's store stalls, once the add created the database: the request that last reaches
# it (and the one that must pass before it), and what the add says it could not do.
_CUT_OFF = {
    # Its documents' first commit: the commit waits out its limit; removing the database waited one more
    # to count the documents, then failed, leaving it anyway.
    "commit": ((b"PUT ", b"documents.lance/_transactions/1-"), (), "cannot be written"),
    # Its lease's commit: asking whether another writer removed the database meanwhile waited out three
    # more, and then said it "cannot be reached" instead.
    "lease": ((b"PUT ", b"meta.lance/_transactions/1-"), (), "cannot be locked for writing"),
    # Reading the tables' latest versions once the lease is taken: giving the lease back waited out more.
    "catch-up": (
        (b"GET ", b"documents.lance%2F_versions%2F"),
        (b"PUT ", b"meta.lance/_transactions/1-"),
        "cannot be read",
    ),
    # Listing the tables, for the versions before the write: this failed as an internal error.
    "tables": ((b"GET ", b"delimiter=%2F"), (b"PUT ", b"meta.lance/_transactions/1-"), "cannot be read"),
    # Looking, once the lock is held, whether another writer removed the database meanwhile (its first
    # connect lists the store's manifest): this did not say the database was left.
    "removed?": ((b"GET ", b"__manifest"), (b"PUT ", b"meta.lance/_transactions/1-"), "cannot be reached"),
    # The analyzer reading the full-text index's settings, once the journal is written: this failed as
    # an internal error (LanceDB says the index "does not include tokenizer details").
    "analyzer": ((b"GET ", b"chunks.lance/_indices/", b"metadata.lance"), (), "cannot be read"),
}


@pytest.mark.slow
@pytest.mark.parametrize("cut", list(_CUT_OFF))
def test_a_first_add_cut_off_by_a_stalled_store_leaves_its_new_database_and_says_so(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch, cut: str
) -> None:
    markers, after, failed = _CUT_OFF[cut]
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        proxy.stall_after(*markers, after=after)
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        monkeypatch.setenv("HAIKU_LEASE_SECONDS", "600")  # no renewal meanwhile: the requests are the add's
        result = cli("add", "Owls hunt at night.", "-d", "papers")
        since = proxy.heads[proxy.stalled_at :]
    assert proxy.stalled_at > 0, cut
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        f"haiku: database 'papers' {failed}: the storage did not answer within 1 s; check the store, or "
        "raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT); the new database is left in place, as "
        "removing it would wait on the store again\n",
    )
    # Nothing after the stall asks about the lease or the database's other tables: the requests given up
    # on are the one that stalled and LanceDB's asking it again.
    assert not [head for head in since if b"meta.lance" in head], since
    monkeypatch.delenv("HAIKU_STORAGE_TIMEOUT")
    _config(write_config, s3_server, tmp_path)  # the same store, reached directly
    listed = json.loads(cli("databases", "--json").stdout)
    assert [(d["database"], d["exists"]) for d in listed] == [("notes", False), ("papers", True)]
    assert json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"] == []


@pytest.mark.slow
def test_a_store_stalling_once_an_add_wrote_its_journal_is_named_as_stalled(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        start = len(proxy.heads)
        # Once its journal is written, the add's analyzer reads the full-text index's settings, and
        # LanceDB tells that read's failure only as an index that "does not include tokenizer details".
        proxy.stall_after(b"GET ", b"chunks.lance/_indices/", b"metadata.lance")
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        monkeypatch.setenv("HAIKU_LEASE_SECONDS", "600")  # no renewal meanwhile: the requests are the add's
        result = cli("add", "Owls hunt at night.", "-d", "papers")
        before = proxy.heads[start : proxy.stalled_at]
        since = proxy.heads[proxy.stalled_at :]
    assert proxy.stalled_at > 0
    # The lease's commit and the journal's came before the stall.
    commits = [head for head in before if head.startswith(b"PUT ") and b"meta.lance/_transactions/" in head]
    assert len(commits) == 2, before
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        "haiku: database 'papers' cannot be read: the storage did not answer within 1 s; check the store, "
        "or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n",
    )
    # Neither the write is undone nor the lease given back, each of which would wait on the store again.
    assert not [head for head in since if b"meta.lance" in head], since
    monkeypatch.delenv("HAIKU_STORAGE_TIMEOUT")
    _config(write_config, s3_server, tmp_path)  # the same store, reached directly
    listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
    assert [d["title"] for d in listed] == ["Peregrine falcons stoop onto prey."]


# Where taking the write lease finds the store stalled: the request it stalls at, and the one that must
# pass before it.
_LEASE_READS = {
    # Listing the meta table's versions, before any commit (the database was just opened).
    "first look": ((b"GET ", b"meta.lance%2F_versions"), (b"GET ", b"chunks.lance/_versions/")),
    # The same listing once the lease's commit landed, to see whether this writer's row came first.
    "after its commit": ((b"GET ", b"meta.lance%2F_versions"), (b"PUT ", b"meta.lance/_versions/")),
}


@pytest.mark.parametrize("read", list(_LEASE_READS))
def test_taking_the_lease_of_a_stalled_store_gives_up_before_lancedb_has_listed_it_six_times(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch, read: str
) -> None:
    markers, after = _LEASE_READS[read]
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.stall_after(*markers, after=after)
        monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "1")
        monkeypatch.setenv("HAIKU_LEASE_SECONDS", "600")  # no renewal meanwhile: the requests are the add's
        result = cli("add", "Owls hunt at night.", "-d", "papers")
        asked = proxy.heads[proxy.stalled_at - 1 :]
    assert proxy.stalled_at > 0
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        "haiku: database 'papers' cannot be locked for writing: the storage did not answer within 1 s; "
        "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)\n",
    )
    # LanceDB lists a stalled store six times over, each waiting out the limit; the read is given up on
    # after two limits and a second, by which it can have started three (six when it was waited for).
    assert 1 <= len(asked) <= 4 and all(b"meta.lance%2F_versions" in head for head in asked), asked
    monkeypatch.delenv("HAIKU_STORAGE_TIMEOUT")
    _config(write_config, s3_server, tmp_path)  # the same store, reached directly
    listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
    assert [d["title"] for d in listed] == ["Peregrine falcons stoop onto prey."]


def _listing_papers_fails(cli, why: str) -> None:
    """`haiku list -d papers` fails with one line: the database cannot be reached, and `why`."""
    result = cli("list", "-d", "papers")
    assert (result.exit_code, result.stderr) == (
        ExitCode.DATABASE,
        f"haiku: database 'papers' cannot be reached: {why}\n",
    )


def test_a_store_that_answers_with_an_error_or_drops_the_line_is_named_by_what_happened(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    # Both fail at once, whatever the timeouts (the client's retry report names its retry_timeout either
    # way): an answer and a cut line are not a store that stopped answering.
    with _through_proxy(s3_server, write_config, tmp_path) as proxy:
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        proxy.fail_with(500, "Internal Server Error")
        _listing_papers_fails(
            cli,
            "the storage answered with an error (HTTP 500 Internal Server Error); "
            "check the store, then try again",
        )
        proxy.forbidding.clear()
        proxy.cut()
        _listing_papers_fails(
            cli,
            "the connection to the storage was dropped before it answered; "
            "check the network and the store, then try again",
        )
        proxy.cutting.clear()
        listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
        assert [d["title"] for d in listed] == ["Peregrine falcons stoop onto prey."]

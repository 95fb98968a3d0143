"""The error boundary around every command: pipes, full disks, undecodable input, bad limits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from haiku_cli.api import Location, Workspace
from haiku_cli.errors import ExitCode
from tests.conftest import fill


def _haiku() -> list[str]:
    exe = shutil.which("haiku")
    return [exe] if exe else [sys.executable, "-m", "haiku_cli"]


@pytest.fixture(scope="module")
def owls_once(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """The owls database, embedded once for the module (the bundled model takes seconds per build)."""
    folder = tmp_path_factory.mktemp("owls")
    (folder / "config.toml").touch()
    location = Location("owls", str(folder / "owls.lancedb"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HAIKU_CONFIG", str(folder / "config.toml"))
        env.setenv("HAIKU_DATA_DIR", str(folder / "data"))
        fill(
            Workspace.load(embedder=embedder),
            location,
            [f"Owl number {i} hunts voles at night." for i in range(30)],
        )
    return Path(location.uri)


@pytest.fixture
def owls(owls_once: Path, tmp_path: Path) -> Path:
    """A copy of it for each test, which may change it."""
    return Path(shutil.copytree(owls_once, tmp_path / "owls.lancedb"))


@pytest.mark.slow
def test_a_reader_that_stops_early_is_not_an_error(owls: Path) -> None:
    # The read end is closed before haiku writes: the write fails with EPIPE, as under `| head -n1`.
    proc = subprocess.Popen(
        [*_haiku(), "search", "owl", "--type", "fts", "--db", str(owls), "-n", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert stderr == ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_for_the_output_is_one_line(owls: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*_haiku(), "list", "--db", str(owls), "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
            timeout=120,
        )
    assert done.returncode == ExitCode.OUTPUT
    assert done.stderr.startswith("haiku: cannot write the output: No space left on device")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [("search", "owl"), ("add", "Barn owls nest in towers.")])
def test_a_closed_standard_output_is_one_line_before_any_work(owls: Path, command: tuple[str, ...]) -> None:
    # `haiku search owl >&-`: Python starts without sys.stdout; before, a traceback from building consoles.
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *_haiku(), *command, "--db", str(owls)],
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        ExitCode.OUTPUT,
        "haiku: cannot write the output: standard output is closed\n",
    )
    listed = subprocess.run([*_haiku(), "list", "--db", str(owls), "--json"], capture_output=True, text=True)
    assert len(json.loads(listed.stdout)["documents"]) == 30  # the add was not made unseen


def test_stdin_that_is_not_utf8_is_bad_input(cli, isolated: Path) -> None:
    result = cli("add", "-", input="caf\xe9".encode("latin-1"))
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.startswith("haiku: standard input is not UTF-8 text")
    assert result.stderr.count("\n") == 1
    assert not (isolated / "data" / "default.lancedb").exists()


def test_stdin_text_is_added(cli) -> None:
    added = cli("add", "-", "--json", input="Piped in from another program.\n")
    assert added.exit_code == 0
    assert json.loads(added.stdout)["outcomes"][0]["status"] == "added"


@pytest.mark.parametrize(
    ("args", "text", "says"),
    [
        (("add", "-"), "x" * 5000, "the text to add from standard input is over the limit of 0.001 MB"),
        (("add", "-"), "é" * 1500, "the text to add is 1 KB, over the limit of 0.001 MB"),
        (("add", "y" * 1500), None, "the text to add is 1 KB, over the limit of 0.001 MB"),
    ],
)
def test_text_over_the_limit_is_refused_before_a_database_is_created(
    cli, isolated: Path, write_config, args: tuple[str, ...], text: str | None, says: str
) -> None:
    # 0.001 MB is 1,048 characters; the first input is refused before it is read whole (over 4 bytes a
    # character), the others (under that in bytes) by their length in characters, as a file's text is.
    write_config("[ingest]\nmax_text_mb = 0.001\n")
    result = cli(*args, input=text)
    assert result.exit_code == ExitCode.INPUT, result.stderr
    assert result.stderr == f"haiku: {says}; raise [ingest] max_text_mb in the config file to add it\n"
    assert not (isolated / "data" / "default.lancedb").exists()
    assert cli("add", "-", input="x" * 1000).exit_code == 0  # under the limit


def test_blank_text_is_refused_before_a_database_is_created(cli, isolated: Path) -> None:
    result = cli("add", "   ")
    assert result.exit_code == ExitCode.INPUT and "the text to add is empty" in result.stderr
    assert not (isolated / "data" / "default.lancedb").exists()


def test_missing_sources_are_refused_before_a_database_is_created(cli, isolated: Path) -> None:
    result = cli("add-src", str(isolated / "nope.md"), str(isolated / "gone.txt"))
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.count("no such file or directory") == 2
    assert not (isolated / "data" / "default.lancedb").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("search", "owl", "--limit", "0"),
        ("search", "owl", "-n", "-3"),
        ("search", "owl", "--limit", "99999999999999999999"),
        ("search", "owl", "--type", "fts", "--limit", "9999999999"),
        ("search", "owl", "--type", "vector", "--limit", "10001"),
        ("list", "--limit", "0"),
        ("list", "--offset", "-1"),
    ],
)
def test_bad_limits_are_bad_input_everywhere(cli, owls: Path, args: tuple[str, ...]) -> None:
    result = cli(*args, "--db", str(owls))
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.startswith("haiku: --") and result.stderr.count("\n") == 1


def test_search_from_stdin(cli, owls: Path) -> None:
    queries = '{"id": "a", "query": "voles"}\nnight hunting\n'
    result = cli("search", "--from", "-", "--db", str(owls), "--json", "-n", "1", input=queries)
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(row["id"], row["query"], row["databases"]) for row in lines] == [
        ("a", "voles", ["owls"]),
        ("2", "night hunting", ["owls"]),
    ]
    assert all(len(row["hits"]) == 1 for row in lines)


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (("search", "owl", "--type", "fuzzy"), None, ExitCode.INPUT),
        (("search", "owl", "--limit", "0"), None, ExitCode.INPUT),
        (("search", "owl", "--limit", "abc"), None, ExitCode.USAGE),
        (("search", "owl", "--database", "nope"), None, ExitCode.INPUT),
        (("list", "--database", "nope"), None, ExitCode.INPUT),
        (("add-src", "nope.md"), None, ExitCode.INPUT),
        (("add", "-"), "", ExitCode.INPUT),
        (("search", "--from", "-"), "", ExitCode.INPUT),
        (("search", "--from", "-"), "\n  \n", ExitCode.INPUT),
        (("list",), "broken TOML", ExitCode.INPUT),
    ],
)
def test_common_mistakes_exit_as_the_readme_table_says(
    cli, write_config, args: tuple[str, ...], stdin: str | None, code: ExitCode
) -> None:
    if stdin == "broken TOML":
        write_config("[databases\n")
        stdin = None
    result = cli(*args, input=stdin)
    assert result.exit_code == code, result.stderr
    assert "Input should" not in result.stderr  # pydantic's wording, not ours
    if code == ExitCode.INPUT:
        assert result.stderr.startswith("haiku: ") and result.stderr.count("\n") == 1, result.stderr


def test_a_missing_query_file_is_one_line(cli, tmp_path: Path) -> None:
    result = cli("search", "--from", str(tmp_path / "none.txt"))
    assert result.exit_code == ExitCode.INPUT
    assert "cannot read queries from" in result.stderr and result.stderr.count("\n") == 1


def test_an_unexpected_failure_is_an_internal_error_without_traceback(cli, owls: Path, monkeypatch) -> None:
    from haiku_cli import api

    def broken(*args, **kwargs):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(api, "info", broken)
    result = cli("info", "--db", str(owls))
    assert result.exit_code == ExitCode.INTERNAL
    assert "internal error: RuntimeError: something inside broke" in result.stderr
    assert "Traceback" not in result.stderr


def test_typer_usage_errors_inside_a_command_stay_usage_errors() -> None:
    from typer.testing import CliRunner

    from haiku_cli.cli.running import add_command

    app = typer.Typer()

    def strict(level: int = 1) -> None:
        if level > 3:
            raise typer.BadParameter("at most 3", param_hint="--level")
        if level == 0:
            raise typer.Abort()

    add_command(app, "strict", strict)
    add_command(app, "other", lambda: None)  # two commands: `strict` is a subcommand, as in haiku
    result = CliRunner().invoke(app, ["strict", "--level", "5"])
    assert result.exit_code == ExitCode.USAGE
    assert "at most 3" in result.output and "internal error" not in result.output
    result = CliRunner().invoke(app, ["strict", "--level", "0"])
    assert result.exit_code == 1 and "Aborted" in result.output


def test_the_cli_loads_no_click_package_of_its_own() -> None:
    # typer 0.29 runs on its own copy of click; naming exceptions must not import the click package too.
    code = (
        "import sys, typer\nbefore = 'click' in sys.modules\n"
        "import haiku_cli.cli.app\nprint(before, 'click' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    typer_needs_click, loaded = done.stdout.split()
    assert loaded == typer_needs_click, done.stderr


@pytest.mark.parametrize("args", [("search",), ("search", "owl", "--from", "queries.txt")])
def test_search_without_exactly_one_query_source_is_a_malformed_command_line(cli, args) -> None:
    result = cli(*args)
    assert result.exit_code == ExitCode.USAGE
    assert "Usage: " in result.stderr and "give a QUERY" in result.stderr and "Traceback" not in result.stderr

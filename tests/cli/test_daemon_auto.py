"""The fast path by default: a read command that finds no daemon starts one, which later commands use and
which exits by itself once idle."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from haiku_cli.cli import daemon_client as wire
from haiku_cli.cli import daemon_start
from tests.cli.test_daemon import START_TIMEOUT_S, haiku, runtime  # noqa: F401 (runtime: a fixture)


def _daemon_pid(sock: Path) -> int | None:
    """The pid of the process listening on `sock`, None when nothing does."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(sock))
        return wire.peer_ids(probe)[0]
    except OSError:
        return None
    finally:
        probe.close()


def _until(condition, what: str, timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    """Ended (a zombie left for its new parent to reap counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.slow
def test_a_read_command_starts_a_daemon_the_next_one_uses_and_it_exits_when_idle(
    runtime: Path,  # noqa: F811
    cli,
    tmp_path: Path,
) -> None:
    assert cli("add", "Barn owls hunt at dusk over open fields, by sound.", "--title", "Owls").exit_code == 0
    Path(os.environ["HAIKU_CONFIG"]).write_text("[daemon]\nidle_minutes = 0.05\n", encoding="utf-8")
    sock = runtime / wire.SOCKET_NAME
    pid = None
    try:
        out, _, code, who = haiku("search", "--type", "fts", "owls", tmp=tmp_path)
        assert (code, who) == (0, "in-process") and b"Owls" in out  # this one answered itself
        _until(lambda: _daemon_pid(sock) is not None, "no daemon was started")
        pid = _daemon_pid(sock)
        assert pid is not None
        out_then, _, code, who = haiku("search", "--type", "fts", "owls", tmp=tmp_path)
        assert (code, who, out_then) == (0, "daemon", out)
        # Idle for 3 s (0.05 minutes): it leaves, taking its socket.
        _until(lambda: _gone(pid) and not sock.exists(), "the daemon did not exit when idle", timeout=120)
    finally:
        if pid is not None and not _gone(pid):
            os.kill(pid, signal.SIGTERM)
            _until(lambda: _gone(pid), "the daemon did not stop", timeout=60)


def test_no_daemon_is_started_when_switched_off(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    config = Path(os.environ["HAIKU_CONFIG"])
    assert config.read_text(encoding="utf-8") == "[daemon]\nauto = false\n"  # the runtime fixture's
    assert daemon_start.start_if_absent(["haiku", "search", "owls"]) is None
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv(wire.OFF_ENV, "1")
    assert daemon_start.start_if_absent(["haiku", "search", "owls"]) is None
    assert daemon_start.auto_enabled(None)  # on by default: only HAIKU_NO_DAEMON stopped it
    assert not (runtime / wire.SOCKET_NAME).exists()


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("", True),
        ("[daemon]\nauto = true\n", True),
        ("[daemon]\nauto = false\n", False),
        ("[daemon]\nauto = 'no'\n", False),  # not a boolean: the command itself says so, nothing starts
        ("[daemon\n", False),
    ],
)
def test_the_config_decides_before_anything_is_imported(tmp_path: Path, text: str, wanted: bool) -> None:
    config = tmp_path / "other.toml"
    config.write_text(text, encoding="utf-8")
    assert daemon_start.auto_enabled(config) is wanted


def test_write_commands_start_no_daemon(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    Path(os.environ["HAIKU_CONFIG"]).write_text("", encoding="utf-8")
    monkeypatch.delenv(wire.OFF_ENV, raising=False)
    for argv in (["haiku", "add", "text"], ["haiku", "search", "--help"], ["haiku", "daemon"]):
        assert daemon_start.start_if_absent(argv) is None

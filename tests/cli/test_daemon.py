"""`haiku daemon`: read commands answered by a running process print exactly what a fresh one prints."""

from __future__ import annotations

import json
import os
import platform
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from haiku_cli.cli import daemon_client as wire
from tests.support.children import ctrl_c_preexec, reaped

# `haiku` from this tree; HAIKU_TEST_PROBE names a file told who answered: this process or a daemon.
LAUNCH = (
    "import os, sys\n"
    "from haiku_cli.cli.app import main\n"
    "sys.argv[0] = 'haiku'\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    probe = os.environ.get('HAIKU_TEST_PROBE')\n"
    "    if probe:\n"
    "        open(probe, 'w').write('in-process' if 'typer' in sys.modules else 'daemon')\n"
)
START_TIMEOUT_S = 240
NO_AUTO_START = "[daemon]\nauto = false\n"


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime folder short enough for a unix socket's path (at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="hd-", dir="/tmp"))
    monkeypatch.setenv(wire.RUNTIME_ENV, str(folder / "haiku"))
    monkeypatch.delenv(wire.OFF_ENV, raising=False)
    # The daemons here are started by the tests; a command finding none starts none (test_daemon_auto).
    Path(os.environ["HAIKU_CONFIG"]).write_text(NO_AUTO_START, encoding="utf-8")
    yield folder / "haiku"
    shutil.rmtree(folder, ignore_errors=True)


def start_daemon(runtime: Path) -> subprocess.Popen:
    """`haiku daemon` in a subprocess, once it says it answers (its socket is in place by then)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "daemon"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    said = b""
    while b"daemon answering" not in said:
        ready, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
        line = proc.stderr.readline() if ready else b""
        if not line:
            proc.kill()
            raise AssertionError(f"the daemon did not start: {said.decode()}")
        said += line
    assert (runtime / wire.SOCKET_NAME).exists()
    return proc


@pytest.fixture
def daemon(runtime: Path, cli) -> Iterator[subprocess.Popen]:
    """A daemon over the test's config, whose default database holds three documents."""
    for title, text in (
        ("Tides", "The moon's gravity raises two tidal bulges on the oceans."),
        ("Owls", "Barn owls hunt at dusk over open fields, by sound."),
        ("Bread", "A sourdough starter needs flour, water and a warm kitchen."),
    ):
        assert cli("add", text, "--title", title).exit_code == 0
    proc = start_daemon(runtime)
    with reaped(proc):
        yield proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def haiku(*args: str, tmp: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> tuple:
    """(stdout bytes, stderr bytes, exit code, who answered) of a `haiku` process."""
    probe = tmp / "probe"
    probe.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, *args],
        input=stdin.encode() if stdin is not None else None,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, "HAIKU_TEST_PROBE": str(probe), **(env or {})},
        timeout=300,
    )
    return done.stdout, done.stderr, done.returncode, probe.read_text()


def in_process(*args: str, tmp: Path, stdin: str | None = None) -> tuple:
    """The same command line run by a fresh process, never a daemon."""
    return haiku(*args, tmp=tmp, env={wire.OFF_ENV: "1"}, stdin=stdin)


def served_alike(*args: str, tmp: Path, stdin: str | None = None) -> tuple:
    """Run through the daemon and in-process; both answers, which must match byte for byte."""
    *theirs, who = haiku(*args, tmp=tmp, stdin=stdin)
    *ours, fresh = in_process(*args, tmp=tmp, stdin=stdin)
    assert (who, fresh) == ("daemon", "in-process"), theirs
    assert theirs == ours, args
    return tuple(theirs)


@pytest.mark.slow
def test_read_commands_through_the_daemon_print_what_a_fresh_process_prints(daemon, tmp_path, cli) -> None:
    out, _, code = served_alike("search", "--type", "fts", "moon tides", tmp=tmp_path)
    assert code == 0 and b"Tides" in out
    assert b"Owls" in served_alike("search", "owls hunting at night", tmp=tmp_path)[0]  # hybrid
    served_alike("search", "bread", "--json", "--limit", "2", tmp=tmp_path)
    served_alike("search", "bread", "--files", "--config", str(tmp_path / "config.toml"), tmp=tmp_path)
    out, _, _ = served_alike("--config", str(tmp_path / "config.toml"), "list", "--json", tmp=tmp_path)
    served_alike("list", tmp=tmp_path)
    served_alike("info", tmp=tmp_path)
    document_id = json.loads(out)["documents"][0]["id"]
    assert served_alike("get", document_id[:8], tmp=tmp_path)[2] == 0
    assert served_alike("search", "--type", "fts", "--from", "-", tmp=tmp_path, stdin="tides\nowls\n")[2] == 0
    # Errors, on stderr with their exit codes: a usage error, an unknown id, an unknown database.
    assert served_alike("search", tmp=tmp_path)[2] == 2
    assert served_alike("get", "nope", tmp=tmp_path)[2] == 1
    assert served_alike("search", "x", "--database", "nope", tmp=tmp_path)[2] == 1
    # A write by another process after the daemon started: the next read sees the new version.
    assert cli("add", "Glaciers carve valleys into a U shape.", "--title", "Glaciers").exit_code == 0
    out, _, _ = served_alike("search", "--type", "fts", "glaciers valleys", tmp=tmp_path)
    assert b"Glaciers" in out


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() != "x86_64", reason="reads the syscall a thread waits in by number")
def test_ctrl_c_interrupts_the_command_in_the_daemon_as_in_process(daemon, tmp_path) -> None:
    probe = tmp_path / "probe"
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "search", "--from", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "HAIKU_TEST_PROBE": str(probe)},
        preexec_fn=ctrl_c_preexec(),
    )
    with reaped(proc):
        # The daemon's command waits reading the caller's standard input (read(0, ...) is syscall 0).
        deadline = time.monotonic() + 120
        while not Path(f"/proc/{daemon.pid}/syscall").read_text().startswith("0 0x0 "):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        assert proc.stderr is not None and proc.stderr.read() == b"haiku: interrupted\n"
        assert probe.read_text() == "daemon"
        assert proc.stdin is not None
        proc.stdin.close()
    assert haiku("info", tmp=tmp_path)[2:] == (0, "daemon")  # the daemon serves on


@pytest.mark.slow
def test_a_changed_config_is_not_served_and_the_daemon_stops(daemon, runtime, tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[search]\n{NO_AUTO_START}", encoding="utf-8")
    *theirs, who = haiku("search", "--type", "fts", "moon tides", tmp=tmp_path)
    assert who == "in-process" and theirs == list(
        in_process("search", "--type", "fts", "moon tides", tmp=tmp_path)[:3]
    )
    assert daemon.wait(timeout=60) == 0
    assert not (runtime / wire.SOCKET_NAME).exists()


@pytest.fixture
def code_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the daemon counts as its code (set before it starts): edited as haiku's own would be."""
    from haiku_cli.cli.daemon_server import CODE_STAMP_ENV

    stamp = tmp_path / "stamp.py"
    stamp.write_text("")
    monkeypatch.setenv(CODE_STAMP_ENV, str(stamp))
    return stamp


@pytest.mark.slow
def test_a_daemon_whose_code_changed_stops_whoever_asks(code_stamp, daemon, runtime, tmp_path) -> None:
    # An upgrade or edit of haiku's files after the daemon started: it must not answer with the old code,
    # also when the caller would be declined for another reason (here its hash seed).
    before = code_stamp.stat()
    os.utime(code_stamp, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert haiku("info", tmp=tmp_path, env={"PYTHONHASHSEED": "7"})[3] == "in-process"
    assert daemon.wait(timeout=60) == 0
    assert not (runtime / wire.SOCKET_NAME).exists()


@pytest.mark.slow
def test_another_config_file_is_not_served_and_the_daemon_stays(daemon, tmp_path) -> None:
    other = tmp_path / "other.toml"
    other.touch()
    assert haiku("info", tmp=tmp_path, env={"HAIKU_CONFIG": str(other)})[3] == "in-process"
    assert haiku("--config", str(other), "info", tmp=tmp_path)[3] == "in-process"
    assert haiku("info", "--config", str(other), tmp=tmp_path)[3] == "in-process"
    assert haiku("info", tmp=tmp_path)[3] == "daemon"
    # Read once at start (locale, Python's own settings): another value cannot be served either.
    assert haiku("info", tmp=tmp_path, env={"PYTHONHASHSEED": "7"})[3] == "in-process"
    assert haiku("info", tmp=tmp_path, env={"FORCE_COLOR": "1"})[3] == "in-process"  # typer reads it once
    # Object-store credentials other than the daemon's: a store it keeps open would not use them.
    assert haiku("info", tmp=tmp_path, env={"AWS_ACCESS_KEY_ID": "someone-else"})[3] == "in-process"


@pytest.mark.slow
def test_a_socket_others_could_reach_is_refused(daemon, runtime, tmp_path) -> None:
    sock = runtime / wire.SOCKET_NAME
    sock.chmod(0o666)
    assert haiku("info", tmp=tmp_path)[3] == "in-process"
    sock.chmod(0o600)
    runtime.chmod(0o755)
    assert haiku("info", tmp=tmp_path)[3] == "in-process"
    runtime.chmod(0o700)
    assert haiku("info", tmp=tmp_path)[3] == "daemon"
    if os.geteuid() == 0:
        os.chown(sock, 65534, -1)
        assert haiku("info", tmp=tmp_path)[3] == "in-process"
        os.chown(sock, 0, -1)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a server of another user needs root to start")
@pytest.mark.filterwarnings("ignore:lance is not fork-safe")  # the forked server only uses a socket
def test_a_server_of_another_user_is_not_sent_a_request(runtime, tmp_path) -> None:
    # The socket file is ours and private (as root could make it), but another user listens on it.
    runtime.mkdir(mode=0o700)
    shared = Path(tempfile.mkdtemp(prefix="hd-other-", dir="/tmp"))
    shared.chmod(0o777)
    ready_r, ready_w = os.pipe()
    said_r, said_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other user's server: says hello, then reports what the client sent
        try:
            os.setuid(65534)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(shared / "other.sock"))
            server.listen(1)
            os.write(ready_w, b"ready")
            conn, _ = server.accept()
            conn.settimeout(20)
            data = b""
            try:
                wire.send_frame(conn, {"protocol": wire.PROTOCOL})
                data = conn.recv(100)
            except OSError:
                pass  # the client hung up first
            os.write(said_w, b"received:" + data)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(said_w)
    try:
        assert os.read(ready_r, 10) == b"ready"
        path = runtime / wire.SOCKET_NAME
        os.rename(shared / "other.sock", path)
        os.chown(path, 0, 0)
        path.chmod(0o600)
        assert haiku("info", tmp=tmp_path)[3] == "in-process"
        assert os.read(said_r, 200) == b"received:"  # connected, then left without a word
    finally:
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(said_r)
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.slow
def test_a_killed_daemon_leaves_nothing_in_the_way(daemon, runtime, tmp_path) -> None:
    sock = runtime / wire.SOCKET_NAME
    daemon.kill()
    daemon.wait(timeout=60)
    assert sock.exists()  # SIGKILL: no cleanup
    *theirs, who = haiku("search", "--type", "fts", "moon tides", tmp=tmp_path)
    assert who == "in-process" and theirs[2] == 0 and b"Tides" in theirs[0]
    assert not sock.exists()  # the client removed the dead daemon's socket
    # A daemon started over another dead one's socket takes its place.
    again = start_daemon(runtime)
    again.kill()
    again.wait(timeout=60)
    assert sock.exists()
    replacement = start_daemon(runtime)
    with reaped(replacement):
        assert haiku("info", tmp=tmp_path)[3] == "daemon"
        replacement.send_signal(signal.SIGTERM)
        assert replacement.wait(timeout=60) == 0
        assert not sock.exists()


@pytest.mark.slow
def test_one_daemon_at_a_time_and_stop_ends_it(daemon, runtime, tmp_path) -> None:
    _, err, code, _ = haiku("daemon", tmp=tmp_path)
    assert code == 1 and b"already answers" in err and b"Traceback" not in err
    _, err, code, _ = haiku("daemon", "--stop", tmp=tmp_path)
    assert code == 0, err
    assert daemon.wait(timeout=60) == 0
    assert not (runtime / wire.SOCKET_NAME).exists()
    _, err, code, _ = haiku("daemon", "--stop", tmp=tmp_path)
    assert code == 1 and err == b"haiku: no haiku daemon is running\n"


@pytest.mark.slow
def test_the_daemon_says_a_hit_changed_as_soon_as_its_file_is_edited(runtime, tmp_path, cli) -> None:
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn.\n", encoding="utf-8")
    assert cli("add-src", str(path)).exit_code == 0

    def state() -> str:
        out, err, code, who = haiku("search", "herons", "--type", "fts", "--json", tmp=tmp_path)
        assert (code, who) == (0, "daemon"), err
        (hit,) = json.loads(out)["hits"]
        return hit["source_state"]

    proc = start_daemon(runtime)
    with reaped(proc):
        seen = [state()]
        path.write_text("Herons wade at dusk.\n", encoding="utf-8")
        seen.append(state())
        path.write_text("Herons wade at dawn.\n", encoding="utf-8")  # as indexed again
        seen.append(state())
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert seen == ["fresh", "changed", "fresh"]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["haiku", "search", "tides"], "search"),
        (["haiku", "--config", "c.toml", "list"], "list"),
        (["haiku", "--config=c.toml", "info"], "info"),
        (["haiku", "get", "3f2b"], "get"),
        (["haiku", "add", "text"], None),
        (["haiku", "search", "--help"], None),
        (["haiku", "--debug", "search", "x"], None),
        (["haiku", "search", "x", "--debug"], None),
        (["haiku", "--version"], None),
        (["haiku"], None),
        (["haiku", "--unknown", "search"], None),
    ],
)
def test_only_read_commands_are_handed_over(argv: list[str], command: str | None) -> None:
    assert wire.command_of(argv) == command


def test_without_a_socket_nothing_is_handed_over(runtime) -> None:
    assert wire.forward(["haiku", "search", "tides"]) is None


@pytest.mark.slow
def test_a_socket_path_too_long_is_one_clear_line(runtime, tmp_path) -> None:
    deep = runtime / ("d" * 120)
    _, err, code, _ = haiku("daemon", tmp=tmp_path, env={wire.RUNTIME_ENV: str(deep)})
    assert code == 1 and err.startswith(b"haiku: cannot listen on ") and err.count(b"\n") == 1


def test_a_runtime_folder_squatted_by_a_file_or_a_link_is_one_clear_line(runtime, tmp_path) -> None:
    runtime.parent.mkdir(parents=True, exist_ok=True)
    runtime.write_text("")  # a file where the folder goes
    for where, why in (
        (runtime, "cannot be made (File exists)"),
        (runtime / "x", "cannot be made (Not a directory)"),
    ):
        _, err, code, _ = haiku("daemon", tmp=tmp_path, env={wire.RUNTIME_ENV: str(where)})
        assert (code, err.decode()) == (
            1,
            f"haiku: cannot serve: the runtime folder {where} {why}; remove what is in its way, or name "
            f"another folder with {wire.RUNTIME_ENV}\n",
        )
    # A link leads where whoever made it chose: its target is never made private (chmod) or served from.
    runtime.unlink()
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    runtime.symlink_to(target)
    _, err, code, _ = haiku("daemon", tmp=tmp_path, env={wire.RUNTIME_ENV: str(runtime)})
    assert (code, err.decode()) == (
        1,
        f"haiku: cannot serve: the runtime folder {runtime} is not a folder; remove it, or name another "
        f"folder with {wire.RUNTIME_ENV}\n",
    )
    assert target.stat().st_mode & 0o777 == 0o755 and not any(target.iterdir())


def _send_raw(path: Path, frame: bytes, fds: bool = True) -> dict | None:
    """Connect as a client would, read the daemon's hello, send `frame` (with three descriptors) and
    return what the daemon answers before it closes the connection (None: it said nothing)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        hello, _ = wire.recv_frame(sock)
        assert hello is not None and hello["protocol"] == wire.PROTOCOL
        try:
            if fds:
                with open(os.devnull, "rb") as null:
                    socket.send_fds(sock, [frame[:4]], [null.fileno()] * 3)
                sock.sendall(frame[4:])
            else:
                sock.sendall(frame)
            sock.shutdown(socket.SHUT_WR)
            answer, _ = wire.recv_frame(sock)
        except OSError:  # the daemon hung up on it
            return None
        return answer


def _frame(body: bytes, length: int | None = None) -> bytes:
    return (len(body) if length is None else length).to_bytes(4, "big") + body


@pytest.mark.slow
def test_the_daemon_survives_any_frame_and_answers_the_next(daemon, runtime, tmp_path) -> None:
    path = runtime / wire.SOCKET_NAME
    good = {
        "argv": ["haiku", "list"],
        "prog": "haiku",
        "cwd": str(tmp_path),
        "env": {},
        "umask": 0o022,
        "streams": wire.stream_specs(),
        "identity": wire.identity(),
        "startup_env": wire.startup_env(dict(os.environ)),
    }
    frames = [
        _frame(b"{{{{{"),  # malformed JSON (the frame that ended it)
        _frame(b"\xff\xfe"),  # not UTF-8
        _frame(b"[1, 2]"),  # JSON, but not an object
        _frame(b"{}", length=100),  # truncated: the caller went away mid-message
        _frame(b"", length=(64 << 20) + 1),  # oversized
        _frame(b"{}"),  # an object without any field
    ]
    declined = {"run": False, "why": "a malformed request"}
    for frame in frames:
        answer = _send_raw(path, frame)
        assert answer is None or answer["run"] is False, (frame[:60], answer)
        assert daemon.poll() is None, frame[:60]
    # From this client, with fields of the wrong kinds: declined as malformed, the caller runs it itself.
    for frame in (
        _frame(json.dumps({**good, key: value}).encode())
        for key, value in (
            ("argv", "haiku list"),
            ("argv", []),
            ("argv", [1]),
            ("env", ["A=1"]),
            ("env", {"A": 1}),
            ("cwd", 5),
            ("umask", "022"),
            ("prog", None),
            ("streams", {"stdin": 1}),
            (
                "streams",
                {
                    n: {
                        "encoding": "nope",
                        "errors": "strict",
                        "line_buffering": False,
                        "write_through": False,
                    }
                    for n in ("stdin", "stdout", "stderr")
                },
            ),
        )
    ):
        assert _send_raw(path, frame) == declined, frame[:60]
        assert daemon.poll() is None, frame[:60]
    # Still there, still its socket, and it answers the next caller.
    assert path.exists()
    assert haiku("list", tmp=tmp_path)[2:] == (0, "daemon")

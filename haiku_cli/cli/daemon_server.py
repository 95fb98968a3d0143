"""The serving side of `haiku daemon`: one warm process runs read commands as their callers would.

Each request runs the real command line through the same typer application, on the caller's own
standard streams (received over the socket and put in place as fds 0-2), in the caller's folder, with
the caller's environment and umask. Nothing of one command is kept for the next but imported modules and
the bundled embedder's loaded model: the config is read and every database opened again, so a command
sees the latest version of each table, exactly as a fresh `haiku` process would.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import os
import select
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from haiku_cli.cli import daemon_client as wire
from haiku_cli.cli import output
from haiku_cli.cli.daemon_start import hold_lock
from haiku_cli.config.paths import config_path, read_config_bytes
from haiku_cli.errors import HaikuError


@dataclass(frozen=True)
class ConfigFile:
    """A config file as the daemon found it: its path and a digest of its bytes (None: no file)."""

    path: str
    digest: str | None

    @classmethod
    def read(cls, path: Path) -> ConfigFile:
        """The file at `path` now."""
        try:
            digest: str | None = hashlib.sha256(read_config_bytes(path)).hexdigest()
        except FileNotFoundError:
            digest = None
        except (OSError, HaikuError):  # a fresh process says what is wrong with it
            digest = "unreadable"
        return cls(str(path), digest)


class Declined(Exception):
    """A request this daemon must not answer; `stale` when no later request can be answered either."""

    def __init__(self, why: str, *, stale: bool = False) -> None:
        super().__init__(why)
        self.stale = stale


CODE_STAMP_ENV = "HAIKU_TEST_CODE_STAMP"


def code_fingerprint() -> tuple[tuple[str, int, int], ...]:
    """haiku's own source files and the folders packages are installed in, by path, mtime and size: an
    upgrade or an edit since the daemon started means it runs other code than a fresh process would."""
    found = _python_files(wire.identity()["package"])
    found += [os.path.normpath(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    # A test changes a file of its own here, not haiku's: a change to haiku's files would stop every other
    # daemon running at the time too (another test's).
    found += [os.path.normpath(p) for p in os.environ.get(CODE_STAMP_ENV, "").split(os.pathsep) if p]
    marks = []
    for path in sorted(found):
        with contextlib.suppress(OSError):
            st = os.stat(path)
            marks.append((path, st.st_mtime_ns, st.st_size))
    return tuple(marks)


def _python_files(folder: str) -> list[str]:
    """Every `*.py` file under `folder`. Checked before every request: with `os.scandir` and plain strings
    this costs a fifth of `Path.rglob`'s CPU."""
    found: list[str] = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                found += _python_files(entry.path)
            elif entry.name.endswith(".py"):
                found.append(entry.path)
    return found


def _text_stream(fd: int, spec: dict[str, Any], *, reading: bool) -> TextIO:
    """A standard stream over `fd` made as the caller's Python made its own (encoding, buffering)."""
    raw = io.FileIO(fd, "r" if reading else "w", closefd=False)
    buffer: Any
    if reading:
        buffer = io.BufferedReader(raw)
    elif spec["write_through"]:
        buffer = raw  # unbuffered (-u, PYTHONUNBUFFERED): every write goes straight out
    else:
        buffer = io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffer,
        encoding=spec["encoding"],
        errors=spec["errors"],
        newline="\n",
        line_buffering=spec["line_buffering"],
        write_through=spec["write_through"],
    )


class Daemon:
    """A socket that answers read commands with the typer application `group` (a click command)."""

    def __init__(self, group: Any, config: ConfigFile, path: str) -> None:
        """`config` is the file this daemon serves; `path` the socket it listens on."""
        self.group = group
        self.config = config
        self.path = path
        self.identity = wire.identity()
        self.startup_env = wire.startup_env(wire.STARTUP_ENV)
        self.code = code_fingerprint()
        self.env = dict(os.environ)
        # What haiku's imports added to the environment (LanceDB's log level): a fresh process adds it too.
        self.added_env = {k: v for k, v in self.env.items() if k not in wire.STARTUP_ENV}
        self.cwd = os.getcwd()
        self.stopping = False
        self._client_interrupt = False
        self._mark = (0, 0)
        self._last_request = time.monotonic()

    # -- listening -----------------------------------------------------------------------------------

    def listen(self) -> socket.socket:
        """Bind the socket privately (folder 0700, socket 0600) and put it in place once it listens."""
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.lstat(folder)
        except OSError as exc:  # a file, or a folder that cannot be made, where the runtime folder goes
            raise HaikuError(
                f"cannot serve: the runtime folder {folder} cannot be made ({exc.strerror or exc}); "
                f"remove what is in its way, or name another folder with {wire.RUNTIME_ENV}"
            ) from None
        if not stat.S_ISDIR(st.st_mode):  # a symbolic link, say: whoever made it chooses where it leads
            raise HaikuError(
                f"cannot serve: the runtime folder {folder} is not a folder; remove it, or name another "
                f"folder with {wire.RUNTIME_ENV}"
            )
        if st.st_uid != os.geteuid():
            raise HaikuError(f"cannot serve: {folder} belongs to another user")
        if st.st_mode & 0o077:
            os.chmod(folder, 0o700)  # ours, but others could reach it: make it private first
        self._refuse_live_daemon()
        if hold_lock(folder) is None:
            raise HaikuError(f"cannot serve: another haiku daemon is starting in {folder}")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = os.path.join(folder, f".daemon-{os.getpid()}.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        umask = os.umask(0o177)  # the socket is made 0600: no moment when another user could connect
        try:
            sock.bind(temporary)
            sock.listen(16)
            # Renamed into place only once it listens: a refused connection at `path` means a dead daemon.
            os.rename(temporary, self.path)
        except OSError as exc:  # e.g. a runtime dir whose path is too long for a socket (107 bytes)
            sock.close()
            raise HaikuError(f"cannot listen on {self.path}: {exc.strerror or exc}") from None
        finally:
            os.umask(umask)
        self._mark = _mark(self.path)
        return sock

    def _refuse_live_daemon(self) -> None:
        try:
            mark = wire.check_private(self.path)
        except FileNotFoundError:
            return
        except wire.NotPrivate as exc:
            raise HaikuError(f"cannot serve: {exc}; remove it first") from None
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(2)
        try:
            probe.connect(self.path)
            pid, _uid, _gid = wire.peer_ids(probe)
        except OSError:
            if _mark(self.path) == mark:
                os.unlink(self.path)  # a daemon that died without cleaning up
            return
        finally:
            probe.close()
        raise HaikuError(f"a haiku daemon already answers on {self.path} (pid {pid})")

    def close(self, sock: socket.socket) -> None:
        """Stop listening and remove the socket, unless another daemon's has replaced it."""
        sock.close()
        with contextlib.suppress(OSError):
            if _mark(self.path) == self._mark:
                os.unlink(self.path)

    def serve(self, sock: socket.socket, idle_seconds: float | None = None) -> None:
        """Answer connections one at a time until stopped (SIGINT, SIGTERM) or stale; with `idle_seconds`,
        also once that long passed without a request, or once its code or config changed unasked."""
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        # A daemon started in the background of a terminal must not be stopped by reading or writing it.
        signal.signal(signal.SIGTTIN, signal.SIG_IGN)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        # What the imports built lives as long as the daemon: later collections need not walk it.
        gc.collect()
        gc.freeze()
        while not self.stopping:
            # A stop signal may land anywhere in here (`stopping` then says so); a caller's Ctrl-C that
            # lands after its command ended only ends this round.
            try:
                conn = self._next(sock, idle_seconds)
                if conn is None:
                    continue
                try:
                    self.handle(conn)
                except OSError:
                    pass  # the caller went away, or sent what is not a message
                except Exception as exc:  # one caller's request must never end the daemon for the next
                    self._note(f"a request failed: {type(exc).__name__}")
                finally:
                    conn.close()
                gc.collect()
            except KeyboardInterrupt:
                continue

    def _next(self, sock: socket.socket, idle_seconds: float | None) -> socket.socket | None:
        """The next connection; None when a wait for it ended (`stopping` says whether to go on)."""
        if idle_seconds is None:
            return sock.accept()[0]
        # Woken at least every minute to look at its code and config, so a stale daemon does not linger.
        sock.settimeout(min(idle_seconds, _LOOK_AGAIN_S))
        try:
            conn = sock.accept()[0]
        except TimeoutError:
            stale = code_fingerprint() != self.code or ConfigFile.read(Path(self.config.path)) != self.config
            self.stopping = stale or time.monotonic() - self._last_request >= idle_seconds
            return None
        self._last_request = time.monotonic()
        return conn

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self._client_interrupt:
            self.stopping = True
        self._client_interrupt = False
        raise KeyboardInterrupt

    def warm_up(self, commands: list[list[str]]) -> None:
        """Run each command line once against the served config, its output thrown away, so that what
        it imports and loads (LanceDB, the bundled embedder) is ready for the first caller."""
        umask = os.umask(0o022)
        os.umask(umask)
        for args in commands:
            fds = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
            request = {
                "argv": ["haiku", "--config", self.config.path, *args],
                "prog": "haiku",
                "cwd": self.cwd,
                "env": dict(wire.STARTUP_ENV),
                "umask": umask,
                "streams": wire.stream_specs(),
            }
            try:
                with self._caller(request, fds):
                    self._run(request)
            finally:
                for fd in fds:
                    os.close(fd)

    # -- one request ---------------------------------------------------------------------------------

    def handle(self, conn: socket.socket) -> None:
        """Answer one connection: check who asks and what, run the command, send its exit code."""
        _pid, uid, _gid = wire.peer_ids(conn)
        if uid != os.geteuid():
            return
        conn.settimeout(10)
        wire.send_frame(conn, {"protocol": wire.PROTOCOL, "pid": os.getpid()})
        request, fds = wire.recv_frame(conn, fds=3)
        try:
            if request is None or len(fds) != 3:
                return
            conn.settimeout(None)
            try:
                self._check(request)
                if not wire.well_formed(request):
                    raise Declined("a malformed request")
                with self._caller(request, fds):
                    self._check_config(request)
                    wire.send_frame(conn, {"run": True})
                    code = self._run_watched(request, conn)
            except Declined as declined:
                wire.send_frame(conn, {"run": False, "why": str(declined)})
                if declined.stale:
                    self._note(f"stopping: {declined}")
                    self.stopping = True
                return
            wire.send_frame(conn, {"exit": code})
        finally:
            for fd in fds:
                os.close(fd)

    def _check(self, request: dict[str, Any]) -> None:
        # Stale first: whoever asks, a daemon running replaced code stops.
        if code_fingerprint() != self.code:
            raise Declined("haiku or its packages changed since the daemon started", stale=True)
        if request.get("identity") != self.identity:
            raise Declined("another haiku or Python than this daemon's")
        if request.get("startup_env") != self.startup_env:
            raise Declined("an environment read at start differs (PYTHON*, locale, LANCE*, ...)")

    def _check_config(self, request: dict[str, Any]) -> None:
        # Under the caller's environment and folder: the file a fresh process would read.
        wanted = config_path(self._explicit_config(request))
        if str(wanted) != self.config.path:
            raise Declined(f"another config file ({wanted})")
        if ConfigFile.read(wanted) != self.config:
            raise Declined(f"{wanted} changed since the daemon started", stale=True)

    def _explicit_config(self, request: dict[str, Any]) -> Path | None:
        """`--config FILE` as typer parses the command line (before or after the command's name)."""
        args = list(request["argv"][1:])
        try:
            ctx = self.group.make_context(request["prog"], args, resilient_parsing=True)
            config = ctx.params.get("config")
            rest = [*ctx._protected_args, *ctx.args]
            if rest:
                name, command, sub_args = self.group.resolve_command(ctx, rest)
                if command is not None:
                    sub = command.make_context(name, sub_args, parent=ctx, resilient_parsing=True)
                    config = sub.params.get("config_after") or config
        except BaseException as exc:  # any surprise: let the caller run it in-process
            raise Declined(f"cannot read the command line here ({type(exc).__name__})") from None
        return Path(config) if config is not None else None

    @contextlib.contextmanager
    def _caller(self, request: dict[str, Any], fds: list[int]) -> Iterator[None]:
        """The caller's streams as fds 0-2 (so terminal size and colours are its terminal's), its
        environment, folder, umask and argv, for the length of one command; the daemon's own after."""
        streams = request.get("streams") or {}
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        saved_streams = sys.stdin, sys.stdout, sys.stderr
        saved_argv = sys.argv
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        umask = os.umask(int(request.get("umask", 0o022)))
        try:
            _replace_env({**self.added_env, **request["env"]})
            try:
                os.chdir(request["cwd"])
            except OSError as exc:
                raise Declined(f"cannot enter {request['cwd']}") from exc
            sys.stdin = _text_stream(0, streams["stdin"], reading=True)
            sys.stdout = _text_stream(1, streams["stdout"], reading=False)
            sys.stderr = _text_stream(2, streams["stderr"], reading=False)
            sys.argv = list(request["argv"])
            output.reset_consoles()
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            sys.argv = saved_argv
            for target, fd in enumerate(saved):
                os.dup2(fd, target)
                os.close(fd)
            os.umask(umask)
            os.chdir(self.cwd)
            _replace_env(self.env)
            output.reset_consoles()

    def _run_watched(self, request: dict[str, Any], conn: socket.socket) -> int:
        """Run the command; a caller's Ctrl-C (or its going away) interrupts it as SIGINT would."""
        wake_r, wake_w = os.pipe()
        lock = threading.Lock()
        running = [True]

        def watch() -> None:
            ready, _, _ = select.select([conn.fileno(), wake_r], [], [])
            if wake_r in ready:
                return
            with lock:
                if running[0]:
                    self._client_interrupt = True
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

        watcher = threading.Thread(target=watch, name="haiku-daemon-interrupt", daemon=True)
        watcher.start()
        try:
            try:
                return self._run(request)
            finally:
                with lock:
                    running[0] = False
                os.write(wake_w, b"x")
                watcher.join()
                os.close(wake_r)
                os.close(wake_w)
        except KeyboardInterrupt:
            return 130

    def _run(self, request: dict[str, Any]) -> int:
        try:
            self.group.main(args=list(request["argv"][1:]), prog_name=request["prog"], standalone_mode=True)
        except SystemExit as exc:
            return _exit_code(exc.code)
        except KeyboardInterrupt:
            raise
        except BaseException:  # what would end a fresh process with a traceback
            import traceback

            traceback.print_exc()
            return 1
        return 0

    def _note(self, message: str) -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"haiku: daemon: {message}\n".encode())


_LOOK_AGAIN_S = 60.0


def _mark(path: str) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_ino, st.st_ctime_ns


def _exit_code(code: object) -> int:
    """The status Python gives `sys.exit(code)`: None is 0, a number itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _replace_env(target: dict[str, str]) -> None:
    # Only what differs is set or removed: each change reaches the C environment too (putenv).
    for key in [k for k in os.environ if k not in target]:
        del os.environ[key]
    for key, value in target.items():
        if os.environ.get(key) != value:
            os.environ[key] = value

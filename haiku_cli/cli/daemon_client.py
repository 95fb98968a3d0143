"""The thin side of `haiku daemon`: hand a read command to a running haiku process over a unix socket.

`haiku`'s entry point imports this before typer, rich, pydantic or LanceDB, so it uses the standard
library and platformdirs only. The caller's standard streams travel with the request (SCM_RIGHTS): the
daemon writes to them itself, and the exit code comes back. Anything unexpected means "run it here".
"""

from __future__ import annotations

import codecs
import json
import os
import socket
import stat
import struct
import sys
from typing import Any

import haiku_cli

# Commands that only read, answered by a daemon when one runs (everything else runs in its own process).
READ_COMMANDS = frozenset({"search", "list", "info", "get"})
# Options that make a command line run in-process: help and version are cheap there and print through
# typer's help formatter; `--debug` tracebacks would name the daemon's frames.
IN_PROCESS_OPTIONS = frozenset({"--help", "-h", "--version", "--debug"})
RUNTIME_ENV = "HAIKU_RUNTIME_DIR"  # where the socket lives instead of the user runtime dir (tests)
OFF_ENV = "HAIKU_NO_DAEMON"  # set (to anything but "" or "0"): never hand a command to a daemon
SOCKET_NAME = "daemon.sock"
PROTOCOL = 1
# How long a client waits for a daemon busy with another command before running its own.
BUSY_WAIT_S = 0.5
# Read once when a process starts (by Python, the C library's locale, typer, LanceDB's Rust runtime,
# onnxruntime, BLAS), or kept once used: a daemon started with other values cannot answer as a fresh
# process would.
STARTUP_ENV_PREFIXES = (
    "PYTHON",
    "LC_",
    "LANG",
    "TZ",
    "TYPER_",
    "_TYPER_",
    "TERMINAL_WIDTH",  # typer's help and error panels: these three as typer imports them
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "HAIKU_LANCE_IMPORT",
    "LANCE",
    "RUST_",
    "OMP_",
    "ORT_",
    "OPENBLAS",
    "MKL_",
    "ARROW_",
    "LD_",
    "MALLOC",
    # Object-store credentials: Lance may keep a store it opened, with the credentials it opened it with.
    "AWS_",
    "AZURE_",
    "GOOGLE_",
)
# The environment this process started with, before any import could add to it (LanceDB's log level).
STARTUP_ENV = dict(os.environ)

_LENGTH = struct.Struct("!I")
_MAX_FRAME = 64 << 20  # a request carries argv and the environment: far below this


class NotPrivate(Exception):
    """The socket or its folder could be reached or replaced by another user."""


def runtime_dir() -> str:
    """The folder holding the socket: `HAIKU_RUNTIME_DIR`, else the platform's user runtime dir."""
    if env := os.environ.get(RUNTIME_ENV):
        return os.path.abspath(os.path.expanduser(env))
    import warnings

    import platformdirs

    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR it warns and names a folder under /tmp, which `check_private` vets.
        warnings.simplefilter("ignore")
        return platformdirs.user_runtime_dir("haiku")


def socket_path() -> str:
    """Where a daemon listens."""
    return os.path.join(runtime_dir(), SOCKET_NAME)


def startup_env(env: dict[str, str]) -> dict[str, str]:
    """The part of an environment a process reads as it starts (see STARTUP_ENV_PREFIXES)."""
    return {k: v for k, v in env.items() if k.startswith(STARTUP_ENV_PREFIXES)}


def identity() -> dict[str, str]:
    """What a client and the daemon must share: haiku's version and code, and the Python running it."""
    return {
        "version": haiku_cli.__version__,
        "package": os.path.dirname(os.path.abspath(haiku_cli.__file__)),
        # `python` and `python3` in one virtualenv are one interpreter: the file it runs, and the prefix
        # that says which environment's packages it imports.
        "python": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "python_version": sys.version,
    }


def check_private(path: str) -> tuple[int, int]:
    """Refuse a socket another user owns or may reach: it and its folder are ours, and no one else's mode.

    Returns the socket's inode and change time, which name this socket file rather than whichever is at
    `path` later (an inode number alone may be reused by the next file).
    """
    me = os.geteuid()
    folder = os.lstat(os.path.dirname(path))
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != me or folder.st_mode & 0o077:
        raise NotPrivate(f"{os.path.dirname(path)} is not a folder only this user can reach")
    found = os.lstat(path)
    if not stat.S_ISSOCK(found.st_mode) or found.st_uid != me or found.st_mode & 0o077:
        raise NotPrivate(f"{path} is not a socket only this user can use")
    return found.st_ino, found.st_ctime_ns


def peer_ids(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end, as the kernel reports it (Linux SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return pid, uid, gid


def supported() -> bool:
    """Unix sockets that carry file descriptors and name their peer's user: Linux."""
    return hasattr(socket, "SO_PEERCRED") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")


def send_frame(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message, with file descriptors attached when given."""
    data = json.dumps(message).encode()
    frame = _LENGTH.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], fds)
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def recv_frame(sock: socket.socket, *, fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """The next message and the file descriptors that came with it; None at the end of the stream."""
    received: list[int] = []
    head = b""
    while len(head) < _LENGTH.size:
        if fds and not received:
            chunk, got, _flags, _addr = socket.recv_fds(sock, _LENGTH.size - len(head), fds)
            received += got
        else:
            chunk = sock.recv(_LENGTH.size - len(head))
        if not chunk:
            _close_all(received)
            return None, []
        head += chunk
    (size,) = _LENGTH.unpack(head)
    if size > _MAX_FRAME:
        _close_all(received)
        raise OSError(f"a message of {size} bytes is too large")
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 20))
        if not chunk:
            _close_all(received)
            return None, []
        body += chunk
    try:
        message = json.loads(body)
    except ValueError:  # not JSON, or not UTF-8: a peer that does not speak the protocol
        message = None
    if not isinstance(message, dict):
        _close_all(received)
        raise OSError(f"a malformed message of {size} bytes")
    return message, received


_STREAM_FIELDS = {"encoding": str, "errors": str, "line_buffering": bool, "write_through": bool}


def well_formed(request: dict[str, Any]) -> bool:
    """Whether a request's fields are of the kinds `forward` sends (checked before the daemon uses any)."""
    argv, env, streams = request.get("argv"), request.get("env"), request.get("streams")
    fine = (
        isinstance(argv, list)
        and len(argv) >= 1
        and all(isinstance(a, str) for a in argv)
        and isinstance(request.get("prog"), str)
        and isinstance(request.get("cwd"), str)
        and isinstance(env, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        and type(request.get("umask", 0)) is int
        and 0 <= request.get("umask", 0) <= 0o777
        and (streams is None or _streams_fine(streams))
    )
    return fine


def _streams_fine(streams: object) -> bool:
    if not isinstance(streams, dict) or set(streams) != {"stdin", "stdout", "stderr"}:
        return False
    for spec in streams.values():
        if not isinstance(spec, dict) or set(spec) != set(_STREAM_FIELDS):
            return False
        if not all(type(spec[k]) is kind for k, kind in _STREAM_FIELDS.items()):
            return False
    try:
        for spec in streams.values():
            codecs.lookup(spec["encoding"])
            codecs.lookup_error(spec["errors"])
    except LookupError:
        return False
    return True


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def command_of(argv: list[str]) -> str | None:
    """The command a command line runs when it is one a daemon may answer, else None."""
    args = argv[1:]
    if any(a in IN_PROCESS_OPTIONS for a in args):
        return None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--config":
            i += 2
        elif arg.startswith("--config="):
            i += 1
        elif arg.startswith("-"):
            return None  # an option typer would refuse before any command: let it say so
        else:
            return arg if arg in READ_COMMANDS else None
    return None


def program_name(argv0: str) -> str:
    """The name usage lines show, as click derives it for this process (`haiku`, `python -m haiku_cli`)."""
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    if not package:
        return os.path.basename(argv0)
    name = os.path.splitext(os.path.basename(argv0))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _reads_terminal(argv: list[str]) -> bool:
    # `--from -` typed at a terminal: a daemon in another session cannot read that terminal.
    return "-" in argv[1:] and os.isatty(0)


def forward(argv: list[str]) -> int | None:
    """Run `argv` in a daemon and return its exit code; None when no daemon can (run it in-process).

    Nothing is written to the caller's streams before the daemon has agreed to run the command, so a
    None always leaves them untouched.
    """
    if os.environ.get(OFF_ENV, "") not in ("", "0") or not supported():
        return None
    if command_of(argv) is None or _reads_terminal(argv):
        return None
    if any(key.endswith("_COMPLETE") for key in os.environ):  # shell completion runs in-process
        return None
    try:
        path = socket_path()
        mark = check_private(path)
    except (OSError, NotPrivate):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        return _ask(sock, path, mark, argv)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def _ask(sock: socket.socket, path: str, mark: tuple[int, int], argv: list[str]) -> int | None:
    sock.settimeout(BUSY_WAIT_S)
    try:
        sock.connect(path)
    except ConnectionRefusedError:
        _remove_stale(path, mark)
        return None
    _pid, uid, _gid = peer_ids(sock)
    if uid != os.geteuid():
        return None
    hello, _ = recv_frame(sock)  # a daemon busy with another command says nothing: run it here
    if hello is None or hello.get("protocol") != PROTOCOL:
        return None
    streams = stream_specs()
    if streams is None:
        return None
    sock.settimeout(None)
    umask = os.umask(0o022)
    os.umask(umask)
    request = {
        "argv": argv,
        "prog": program_name(argv[0]),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "startup_env": startup_env(STARTUP_ENV),
        "umask": umask,
        "streams": streams,
        "identity": identity(),
    }
    send_frame(sock, request, [0, 1, 2])
    answer, _ = recv_frame(sock)
    if answer is None or not answer.get("run"):
        return None
    return _wait(sock)


def stream_specs() -> dict[str, dict[str, Any]] | None:
    """How this Python set up its standard streams, for the daemon to set up its copies alike."""
    specs = {}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            specs[name] = {
                "encoding": stream.encoding,
                "errors": stream.errors,
                "line_buffering": stream.line_buffering,
                "write_through": stream.write_through,
            }
        except AttributeError:  # closed at start (None) or replaced: nothing the daemon can mirror
            return None
    return specs


def _wait(sock: socket.socket) -> int:
    """The daemon's exit code; Ctrl-C here interrupts the command there, as it would in-process."""
    interrupted = False
    while True:
        try:
            done, _ = recv_frame(sock)
        except KeyboardInterrupt:
            if interrupted:
                return 130
            interrupted = True
            send_frame(sock, {"interrupt": True})
            continue
        except OSError:
            done = None
        if done is None:
            # The command had started: running it again here could repeat its output.
            os.write(2, b"haiku: the haiku daemon stopped during the command\n")
            return 70
        return int(done.get("exit", 70))


def _remove_stale(path: str, mark: tuple[int, int]) -> None:
    # Nothing listens: the daemon that made it died without cleaning up. A live daemon renames its
    # socket into place only once it listens, so a refused connection means no one will answer; a
    # socket that replaced it since is left alone.
    try:
        if check_private(path) == mark:
            os.unlink(path)
    except (OSError, NotPrivate):
        pass

"""Running a `haiku` command as a process of its own and interrupting it where a write command can be
interrupted: `kill -9` or Ctrl-C (SIGINT) at a checkpoint, or a disk that fills up under it.

The write matrix (tests/support/write_matrix.py) and the crash soak (benchmarks/crash_soak.py) use these.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.children import ctrl_c_preexec, reaped

_LIMIT = 600.0  # a command of the matrix takes seconds; this bounds one stuck beside a busy machine
FULL = "the disk is full; free some space on it, then run the command again"
_FULL_LINE = re.compile(
    rf"^haiku: database '\w+' cannot be (written|created|rebuilt|restored): {re.escape(FULL)}$"
)
# A write that committed before the disk filled: only the index upkeep after it is left undone.
_STORED_LINE = re.compile(
    rf"^haiku: database '\w+': the write was stored, but the index upkeep after it failed: "
    rf"{re.escape(FULL)}; "
)


@dataclass(frozen=True)
class Ended:
    """How a command run as a process ended: whether it reached the checkpoint, its code and stderr."""

    reached: bool
    code: int
    stderr: str = ""

    @property
    def last_line(self) -> str:
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else ""


def _haiku(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "haiku_cli", *args]


def _reached(gate: Path, point: str) -> bool:
    return any(gate.glob(f"{point}.*.reached"))


def _until_reached(proc: subprocess.Popen, gate: Path, point: str) -> bool:
    """Wait until the command reaches `point` (True) or ends without reaching it (False)."""
    deadline = time.monotonic() + _LIMIT
    while not _reached(gate, point):
        if proc.poll() is not None:
            return _reached(gate, point)
        assert time.monotonic() < deadline, f"haiku neither ended nor reached {point}"
        time.sleep(0.02)
    return True


def killed(args: list[str], point: str, gate: Path, env: dict[str, str]) -> Ended:
    """Run `haiku ARGS`, killed with SIGKILL once it reaches `point` (if it does before it ends)."""
    gate.mkdir()
    env = {**env, "HAIKU_TEST_PAUSE": f"{point}:{gate}"}
    proc = subprocess.Popen(_haiku(args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with reaped(proc):
        reached = _until_reached(proc, gate, point)
        proc.kill()
        proc.wait()
    return Ended(reached, proc.returncode)


def interrupted(args: list[str], point: str, gate: Path, env: dict[str, str]) -> Ended:
    """Run `haiku ARGS`; once it reaches `point`, press Ctrl-C (SIGINT, taken by the process) and let it
    go on from there, as a user's Ctrl-C would find it."""
    gate.mkdir()
    env = {**env, "HAIKU_TEST_PAUSE": f"{point}:{gate}"}
    proc = subprocess.Popen(
        _haiku(args),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_preexec(),
    )
    with reaped(proc):
        reached = _until_reached(proc, gate, point)
        if reached and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            taken(proc.pid, signal.SIGINT)
        (gate / f"{point}.go").touch()
        _, err = proc.communicate(timeout=_LIMIT)
    return Ended(reached, proc.returncode, err)


def taken(pid: int, signum: int) -> None:
    """Wait until the signal is no longer pending: the process took it (its handler wakes the loop)."""
    deadline = time.monotonic() + _LIMIT
    bit = 1 << (signum - 1)
    while True:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return  # it ended
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if "SigPnd" not in fields or not any(int(fields[k], 16) & bit for k in ("SigPnd", "ShdPnd")):
            return
        assert time.monotonic() < deadline, "the signal was never taken"
        time.sleep(0.01)


def namespaces_work() -> bool:
    """Whether this machine lets a test mount a tiny file system of its own (`unshare -rm`)."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


def on_full_disk(args: list[str], db: Path, room_kib: int, env: dict[str, str]) -> Ended:
    """Run `haiku ARGS --db TINY` against a copy of the database `db` on a tiny file system filled up to
    its last `room_kib` kilobytes, then put what it left back at `db`.

    The file system is a tmpfs in a private mount namespace (as tests/store/test_storage_failures.py
    makes one); the copy is taken back whole after the command ended, as the disk would hold it.
    """
    tiny = db.parent / f"tiny-{os.getpid()}"
    tiny.mkdir(exist_ok=True)
    here = tiny / db.name
    # $1 the database, $2 the tiny file system's folder, $3 the database's copy there
    script = f"""set -e
mount -t tmpfs -o size=$(( $(du -sk "$1" 2>/dev/null | cut -f1 || echo 0) + 4096 ))k tmpfs "$2"
if [ -e "$1" ]; then cp -a "$1" "$2"/; fi
avail=$(df -k --output=avail "$2" | tail -1)
head -c $(( (avail - {room_kib}) * 1024 )) /dev/zero > "$2"/filler 2>/dev/null || true
set +e
{shlex.join(_haiku([*args, "--db", str(here)]))}
code=$?
set -e
rm -rf "$1"
if [ -e "$3" ]; then cp -a "$3" "$(dirname "$1")"/; fi
exit "$code"
"""
    command = ["unshare", "-rm", "sh", "-c", script, "sh", str(db), str(tiny), str(here)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=_LIMIT)
    shutil.rmtree(tiny, ignore_errors=True)
    return Ended(True, proc.returncode, proc.stderr)


def stored_on_full_disk(ended: Ended) -> bool:
    """Whether a command on a full disk stored its write: it ended well, or said the disk filled only
    after its commit. Any other end must be the one line of a full disk (exit 3)."""
    if ended.code == 0:
        return True
    assert ended.code == 3, ended.stderr
    if _STORED_LINE.match(ended.last_line):
        return True
    assert _FULL_LINE.match(ended.last_line), ended.stderr
    return False

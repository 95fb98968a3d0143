"""Large buffers go back to the system when freed, where the C library is glibc; elsewhere nothing happens."""

from __future__ import annotations

import subprocess
import sys

import pytest

from haiku_cli.store import heap


def test_a_large_buffer_is_mapped_alone_even_after_a_larger_one_was_freed() -> None:
    if heap._glibc() is None or not hasattr(heap._glibc(), "mallinfo2"):
        pytest.skip("glibc 2.33 or later only")

    # Each in a new process (glibc maps a buffer only when no freed heap memory can hold it, and a test
    # process has plenty freed by then), importing the module alone: the package would take a second.
    def served(*fixed: str) -> str:
        command = [sys.executable, "-c", _MAPPED, heap.__file__, *fixed]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    assert served() == "heap"
    assert served("fixed") == "mapped"  # mapped alone: unmapped again when freed


_MAPPED = """
import ctypes
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("heap", sys.argv[1])
heap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heap)

MB = 1 << 20
fields = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in fields.split()]


libc = heap._glibc()
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Mallinfo2


libc.free(libc.malloc(8 * MB))  # glibc alone now serves buffers up to 8 MB from its heap
if sys.argv[2:] == ["fixed"]:
    heap.return_large_buffers()
mapped = libc.mallinfo2().hblkhd
libc.malloc(MB)
print("mapped" if libc.mallinfo2().hblkhd - mapped >= MB else "heap")
"""


def test_elsewhere_both_are_no_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    heap._glibc.cache_clear()
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    try:
        assert heap._glibc() is None
        heap.return_large_buffers.__wrapped__()
        heap.release_freed()
    finally:
        heap._glibc.cache_clear()

"""Large buffers go back to the system when freed, where the C library is glibc; elsewhere nothing happens."""

from __future__ import annotations

import ctypes

import pytest

from haiku_cli.store import heap

MB = 1 << 20
_MALLINFO2_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")
_MALLINFO2_FIELDS += ("fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS]


def test_a_large_buffer_is_mapped_alone_even_after_a_larger_one_was_freed() -> None:
    libc = heap._glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc 2.33 or later only")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = _Mallinfo2
    libc.free(libc.malloc(8 * MB))  # glibc alone would now serve buffers up to 8 MB from its heap
    heap.return_large_buffers.__wrapped__()
    mapped = libc.mallinfo2().hblkhd
    buffer = libc.malloc(MB)
    try:
        assert libc.mallinfo2().hblkhd - mapped >= MB  # mapped alone: unmapped again when freed
    finally:
        libc.free(buffer)
    heap.release_freed()


def test_elsewhere_both_are_no_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    heap._glibc.cache_clear()
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    try:
        assert heap._glibc() is None
        heap.return_large_buffers.__wrapped__()
        heap.release_freed()
    finally:
        heap._glibc.cache_clear()

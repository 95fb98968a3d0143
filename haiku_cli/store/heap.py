"""Handing the memory a large write frees back to the system, so its steps do not add up.

glibc's malloc keeps what is freed for reuse, and after a large buffer is freed it raises its mmap
threshold (up to 32 MB), so later large buffers come from the heap too and their pages stay resident
once freed. A large add's steps each leave their buffers so (embedding and writing the batches,
folding the rows into the indexes, compacting, the first vector index build), and a large `add-src`
then peaked above what any of its steps alone needs (benchmarks/add_memory_phases.py).
Elsewhere (macOS, musl) these are no-ops.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from functools import cache
from typing import Any

# glibc's starting threshold, fixed: buffers this large or larger are mapped alone and unmapped when
# freed. On a large add a higher threshold only raised the peak memory, for the same CPU time.
LARGE_BUFFER = 128 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


@cache
def _glibc() -> Any:
    """The process's glibc, or None where the C library is another (or not found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl lacks it, and malloc_trim)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


@cache
def return_large_buffers() -> None:
    """From now on, have large buffers go back to the system when freed (once per process: a write
    command's; a few more system calls per large buffer, no CPU measurable on a 20k-chunk add)."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BUFFER)


def release_freed() -> None:
    """Give back what the last step freed (malloc's free pages, Arrow's unused pool), before the next."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


_settled = False


def freeze_long_lived() -> None:
    """Once per process: collect, then leave every object alive now out of later collections.

    What a server built to answer its first request (pydantic, numpy, pyarrow, LanceDB: a few hundred
    thousand objects) lives as long as it does; without this every full collection walks it all again,
    about 7 ms each, every few dozen searches. Frozen objects are still freed by reference counting.
    """
    global _settled
    if _settled:
        return
    _settled = True
    gc.collect()
    gc.freeze()

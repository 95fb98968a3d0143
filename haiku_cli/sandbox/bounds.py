"""What a host call may hand to sandboxed code: a value that fits well within the sandbox's memory."""

from __future__ import annotations

from typing import Any

# A value costs more on the sandbox's heap than its text, and the program needs room to work on it.
SHARE_OF_MEMORY = 4
_ITEM_BYTES = 64  # a rough per-object overhead for containers and scalars


def result_budget(memory_mb: int) -> int:
    """The bytes one host call may return into a sandbox with `memory_mb` of memory."""
    return memory_mb * 2**20 // SHARE_OF_MEMORY


def check_result_size(name: str, value: Any, memory_mb: int) -> None:
    """Raise MemoryError, naming the call and the limit, when `value` would not fit the sandbox.

    The size is estimated by walking the value and stops as soon as it passes the budget, so a huge
    value costs no more to refuse than the budget.
    """
    budget = result_budget(memory_mb)
    if _size_over(value, budget):
        raise MemoryError(
            f"{name}() would return more than {budget / 2**20:g} MB, over its share of the sandbox's "
            f"{memory_mb} MB of memory; ask for less at a time (e.g. a smaller limit, or one document "
            "at a time) and keep only what you need"
        )


def _size_over(value: Any, budget: int) -> bool:
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        size += _ITEM_BYTES
        if isinstance(item, str | bytes | bytearray):
            size += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        if size > budget:
            return True
    return False

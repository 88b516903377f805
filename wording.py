"""Words shared by every message: counts with their nouns. Standard library only, so every
layer (the allocator, the passes, the drivers) may use it."""

from __future__ import annotations


def counted(number: int, noun: str) -> str:
    """`1 buffer`, `2 buffers`, `0 buffers`: the number and the noun, plural unless one."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"

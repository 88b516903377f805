"""The columns of a generated trace under construction, and the small helpers every family
uses (size rounding, log-uniform draws, the count check).

A family appends buffers to a ``TraceBuilder`` (plain lists: appends are cheap, and a
buffer's end can be extended once its last reader is known) until it holds exactly the
number asked for, then turns it into a ``tracegen.Trace``. Alignments are either given per
buffer or drawn at the end by the default policy: big tensors (4 KiB or more) ask for 64
bytes (one in ten for 256), small ones for 16 bytes or none, as compilers pad tensors.
"""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.generators.tracegen import Trace

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


class TraceBuilder:
    """Columns under construction: at most ``limit`` buffers."""

    def __init__(self, limit: int):
        self.limit = limit
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.sizes: list[int] = []
        self.alignments: list[int] = []  # 0: drawn by the default policy in ``trace``

    def __len__(self) -> int:
        return len(self.sizes)

    def full(self) -> bool:
        return len(self.sizes) >= self.limit

    def left(self) -> int:
        """How many buffers may still be added."""
        return self.limit - len(self.sizes)

    def add(self, start: int, end: int, size: int, alignment: int = 0) -> int:
        """Append a buffer live in [start, end) (at least one point) unless full; its index or -1."""
        if len(self.sizes) >= self.limit:
            return -1
        self.starts.append(int(start))
        self.ends.append(int(max(end, start + 1)))
        self.sizes.append(int(max(size, 1)))
        self.alignments.append(int(alignment))
        return len(self.sizes) - 1

    def extend(self, index: int, end: int) -> None:
        """Let buffer ``index`` (-1: none) live until ``end`` at least."""
        if index >= 0 and end > self.ends[index]:
            self.ends[index] = int(end)

    def trace(self, rng: np.random.Generator) -> Trace:
        """The finished trace; buffers without an alignment get the default policy's (the
        draws are made for every buffer, so given alignments do not shift the others')."""
        sizes = np.array(self.sizes, dtype=np.int64)
        draw = rng.random(len(sizes))
        drawn = np.where(sizes >= 4 * KIB, np.where(draw < 0.1, 256, 64), np.where(draw < 0.5, 16, 1)).astype(np.int64)
        given = np.array(self.alignments, dtype=np.int64)
        alignments = np.where(given > 0, given, drawn)
        return Trace(np.array(self.starts, dtype=np.int64), np.array(self.ends, dtype=np.int64), sizes, alignments)


def round_size(size: float, quantum: int = 256) -> int:
    """``size`` rounded down to a multiple of ``quantum``, at least one quantum."""
    return max(quantum, int(size) // quantum * quantum)


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    """A draw whose logarithm is uniform between those of ``low`` and ``high``."""
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def check_count(buffers: int) -> None:
    """ValueError unless ``buffers`` is a count (>= 0)."""
    if buffers < 0:
        raise ValueError(f"buffers '{buffers}' must be >= 0")


def columns_trace(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, alignments: np.ndarray) -> Trace:
    """A trace from whole columns (vectorized families): int64, every lifetime at least one point."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.maximum(np.asarray(ends, dtype=np.int64), starts + 1)
    return Trace(starts, ends, np.maximum(np.asarray(sizes, dtype=np.int64), 1), np.asarray(alignments, dtype=np.int64))

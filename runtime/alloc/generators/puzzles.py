"""Problems built to defeat exact allocators: for tests and demonstrations of time limits,
cancellation, portfolios and batch runs, which need a search that cannot finish.

``subset_sum_problem(buffers, seed)``: ``buffers`` free buffers live over ``[1, 2)`` and
one buffer ``pin``, live over ``[0, 2)`` and pinned at offset ``target``. The capacity is
exactly the bytes live at time 1 (the LOAD), so that point is a perfect packing: the free
buffers below ``pin`` fill ``[0, target)`` without a gap, and their sizes add up to exactly
``target``. Sizes are random 54-bit numbers and ``target`` is drawn until no subset of them
adds up to it (checked by meet-in-the-middle over both halves), so the problem is
INFEASIBLE at its capacity, while every lower bound based on bytes (LOAD, per-section
floors) says it fits. An exact search has to refute the subsets one by one: with sizes this
large no pseudo-polynomial (dynamic programming) argument applies, so about 2^(buffers - 1)
partial layouts stand between it and the proof. A greedy or heuristic layout needs
``peak > capacity``.

Deterministic: the same (buffers, seed) gives the same problem. Limits: 2..40 free
buffers (the check enumerates 2^(buffers/2) sums per half).
"""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.problem import Buffer, Problem

SIZE_BITS = 54  # sizes in [2^54, 2^55): 40 of them stay below 2^61, far from the 64-bit limit
MAX_BUFFERS = 40


def subset_sums(sizes: np.ndarray) -> np.ndarray:
    """Every sum of a subset of ``sizes`` (2^len entries, the empty subset's 0 first)."""
    sums = np.zeros(1, dtype=np.int64)
    for size in sizes.tolist():
        sums = np.concatenate((sums, sums + size))
    return sums


def some_subset_adds_up_to(sizes: np.ndarray, target: int) -> bool:
    """Whether a subset of ``sizes`` adds up to exactly ``target`` (meet in the middle)."""
    half = len(sizes) // 2
    left = subset_sums(sizes[:half])
    right = np.sort(subset_sums(sizes[half:]))
    wanted = target - left
    positions = np.searchsorted(right, wanted)
    positions = np.minimum(positions, len(right) - 1)
    return bool(np.any(right[positions] == wanted))


def subset_sum_problem(buffers: int = 32, seed: int = 0) -> Problem:
    """An infeasible problem (capacity = LOAD) that exact search cannot refute quickly; see
    the module docstring. Buffer ids: ``b0`` .. ``b<buffers-1>`` and ``pin``."""
    if not 2 <= buffers <= MAX_BUFFERS:
        raise ValueError(f"buffers '{buffers}' must be between 2 and {MAX_BUFFERS}")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1 << SIZE_BITS, 1 << (SIZE_BITS + 1), buffers, dtype=np.int64)
    total = int(sizes.sum())
    while True:
        target = int(rng.integers(total // 3, 2 * total // 3))
        if not some_subset_adds_up_to(sizes, target):
            break
    pin_size = 1 << SIZE_BITS
    free = [Buffer(f"b{index}", 1, 2, size) for index, size in enumerate(sizes.tolist())]
    return Problem(free + [Buffer("pin", 0, 2, pin_size, offset=target)], capacity=total + pin_size)

"""Window re-placement: the buffers living in a window of program points around the highest
buffer unplaced and placed again by a few of the planner's orderings, everything else
pinned (``ReplacementConfig``).

Why: an ordering places each buffer once, knowing only the buffers before it; placed again
with everything around them fixed, the buffers near the highest point often fit lower. Where
the highest buffer sits on a long-lived one that reaches nearly as high, no window around
its start can lower it: the windows around the lifetime of that buffer below (``holding``)
can. Its limit: the orderings are heuristics, so a window that could be lowered may not be.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.instance import Budget, Instance
from telamalloc.runtime.alloc.large.orderings import index_of
from telamalloc.runtime.alloc.large.windows import window_problem


@dataclass
class ReplacementStats:
    """What the window re-placements of one lane did (counted over every call with it)."""

    taken: int = 0  # windows taken (each lowered the highest buffer)
    runs: int = 0  # orderings run on windows
    work: int = 0  # buffers placed by those runs, pins included


def replace_windows(instance: Instance, budget: Budget, offsets: np.ndarray, fixed: np.ndarray, goal: int,
                    stop: float | None, stats: ReplacementStats) -> np.ndarray:
    """Window re-placement on a layout (live offsets, changed in place; ``fixed``: the pins
    the layout was made with); returns it.

    Round after round, take the highest buffer (the lowest index at the peak) and windows
    around its start: from ``widths[0] / 2`` starts before it to as many after it (to the
    end of the program when there are fewer), then the wider ones of ``widths``, then
    (``holding``) the windows of ``holding_widths`` around the lifetime of the buffer below
    it (the highest other movable buffer live at its start) that hold at most twice the
    widest's starts. Unplace the movable buffers living inside a window and re-place them
    with each of ``orderings``, every other buffer meeting the window pinned where it is
    (merged as for the exact kernel with ``merge_pins``). The first window with a layout
    under the peak is taken, with its lowest layout (ties: the first ordering); a window
    whose pinned buffers reach the peak is passed over, and so is one tried before for
    this buffer. Stops when no window lowers the highest buffer, at ``goal``, after
    ``rounds`` windows taken or ``work_per_buffer`` x buffers of work, at ``stop`` (a
    time.monotonic() value) and on the cancel flag, taking the best window found by then;
    only those two depend on time. Every layout taken is valid: a freed buffer meets only
    buffers that meet the window, and each of those is in the planner's problem, pinned or
    placed (merged: the same bytes over the freed buffers' span).
    """
    config = instance.params.large.replacement
    starts, sizes = instance.starts, instance.sizes
    count = len(starts)
    if count == 0 or budget.spent(stop):
        return offsets  # (sorting the starts alone takes a while at 10^6 buffers)
    tops = offsets + sizes
    movable = fixed < 0
    sorted_starts = np.sort(starts)
    work_budget = config.work_per_buffer * count
    while stats.taken < config.rounds:
        peak = int(tops.max())
        if peak <= goal:
            break
        best, out = _best_window(instance, budget, offsets, tops, movable, sorted_starts, peak, stop, stats, work_budget)
        if best is not None:
            _, members, placed = best
            offsets[members] = placed
            tops[members] = placed + sizes[members]
            stats.taken += 1
            budget.publish_best(int(tops.max()))
        if best is None or out:
            break
    return offsets


def _windows(instance: Instance, tops: np.ndarray, movable: np.ndarray, sorted_starts: np.ndarray):
    """The windows to try around the highest buffer, as (first start, last start, width)."""
    config = instance.params.large.replacement
    starts, ends = instance.starts, instance.ends
    highest = int(np.argmax(tops))
    point = int(starts[highest])
    windows = [(point, point, width) for width in config.widths]
    if config.holding:  # then around the buffer below it: the highest other one live at its start
        live = np.flatnonzero((starts <= point) & (ends > point) & movable)
        live = live[live != highest]
        if len(live):
            below = int(live[np.argmax(tops[live])])
            windows += [(int(starts[below]), int(ends[below]) - 1, width) for width in config.holding_widths]
    return windows


def _best_window(instance: Instance, budget: Budget, offsets: np.ndarray, tops: np.ndarray, movable: np.ndarray,
                 sorted_starts: np.ndarray, peak: int, stop: float | None, stats: ReplacementStats, work_budget: int):
    """The first window whose re-placement lowers the highest buffer: ((its peak, the moved
    buffers, their offsets) or None, whether a budget, the time or the cancel flag ran out)."""
    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it

    config = instance.params.large.replacement
    starts, ends, sizes, aligns = instance.starts, instance.ends, instance.sizes, instance.aligns
    count = len(starts)
    last = int(ends.max())  # a window holding the last start reaches the end of the program
    best = None
    tried = set()
    for first, final, width in _windows(instance, tops, movable, sorted_starts):
        low_rank = max(0, int(np.searchsorted(sorted_starts, first)) - width // 2)
        high_rank = min(count, int(np.searchsorted(sorted_starts, final)) + width // 2)
        if high_rank - low_rank > 2 * config.widths[-1]:
            continue  # a long-lived anchor: too wide
        low = int(sorted_starts[low_rank])
        high = int(sorted_starts[high_rank]) + 1 if high_rank < count else last
        if (low, high) in tried:
            continue  # a window already tried (one reaching both ends of the program, say)
        tried.add((low, high))
        members = np.flatnonzero((starts < high) & (ends > low))
        free = (starts[members] >= low) & (ends[members] <= high) & movable[members]
        if not free.any() or int(np.where(free, 0, tops[members]).max()) >= peak:
            continue  # nothing to move, or a pinned buffer holds the peak
        moved, window = window_problem(members, free, config.merge_pins, starts, ends, sizes, aligns, offsets)
        made = planner(*window, config=instance.params.large.placement)
        for name in config.orderings:
            if stats.work >= work_budget or budget.spent(stop):
                return best, True
            left = None if stop is None else stop - time.monotonic()
            placed, result = made.run(orderings=1, first=index_of(name), seed=instance.params.seed,
                                      time_limit=0.0 if left is None else max(left, 1e-6),
                                      cancel=budget.cancel, slots=False)
            stats.runs += 1
            stats.work += len(window[0])
            if placed is not None and result["peak"] < peak and (best is None or result["peak"] < best[0]):
                best = (int(result["peak"]), moved, placed[:len(moved)])
        if best is not None:
            return best, False
    return best, False

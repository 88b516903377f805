"""The large-neighbourhood search: the exact kernel re-places the buffers of a window of
program points around the highest buffer of a large planner layout, everything crossing the
window pinned where it is (``WindowSearchConfig``).

Where it helps: a spike of short buffers above a tight long-lived layer, or windows whose
buffers a greedy ordering stacked needlessly (unet, tracegen, transformer reach LOAD this
way). Its limit: where the long-lived buffers crossing every window hold the holes
(deepnet), each window around the peak is infeasible or runs out of nodes, so the search
lowers nothing there; re-placing wider windows with the planner's orderings does
(``replace.py``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.instance import Budget, Instance


@dataclass
class WindowStats:
    """What the window searches of one lane did."""

    windows: int = 0  # exact window searches run
    improved: int = 0  # of which lowered the layout
    timed_out: int = 0  # kernel nodes spent in window searches that ran out of nodes
    work: int = 0  # nodes x window buffers of every window search
    stuck: bool = False  # the highest buffer's window could not be lowered (or grew too large)

    def plus(self, other: WindowStats) -> WindowStats:
        """Both searches' counts (two lanes): the sums, stuck when both were."""
        counts = {field.name: getattr(self, field.name) + getattr(other, field.name)
                  for field in dataclasses.fields(self) if field.name != "stuck"}
        return WindowStats(**counts, stuck=self.stuck and other.stuck)


def window_load(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> int:
    """LOAD of a few buffers (numpy sweep: ends before starts at the same point)."""
    if len(starts) == 0:
        return 0
    times = np.concatenate((ends, starts))
    deltas = np.concatenate((-sizes, sizes))
    order = np.lexsort((deltas, times))
    return int(np.cumsum(deltas[order]).max())


def window_search(instance: Instance, budget: Budget, offsets: np.ndarray, fixed: np.ndarray, lower: int,
                  stop: float | None, stats: WindowStats) -> np.ndarray:
    """The large-neighbourhood search on a layout (live offsets, changed in place; ``fixed``:
    the pins the layout was made with); returns it.

    Round after round: take the highest buffer (the lowest index at the peak) and the window
    of program points of its lifetime, widened until no buffer reaching the peak crosses the
    window's ends. Unplace the buffers living inside it and re-place them with the exact
    kernel, the pins merged (``window_pins``): at the lowest useful capacity first (the
    height of everything else, or the window's LOAD if higher), then halfway towards the
    peak while the kernel proves a capacity INFEASIBLE or (``looser``) runs out of nodes.
    A window that gave no layout grows: doubled, with twice the nodes, and (``level_step``)
    widened until no movable buffer crossing its ends tops above a lower level, within the
    limits (``free_buffers``, ``buffers`` or ``share``); when even that fails the peak cannot
    be lowered this way and the search stops (``stats.stuck``). It also stops within
    ``close`` of ``lower``, after ``rounds`` window searches, the patience and work budgets,
    at ``stop`` (a time.monotonic() value) and on the cancel flag: only those two depend on
    time. Every accepted layout is valid: the free buffers are placed clear of the pinned
    ones and of each other, and nothing outside the window overlaps a free buffer in time.
    """
    config = instance.params.large.windows
    starts = instance.starts
    if budget.spent(stop):
        return offsets  # (sorting the starts and ends alone takes a while at 10^6 buffers)
    tops = offsets + instance.sizes
    patience = min(config.patience_nodes, max(config.nodes, int(config.patience_nodes_per_buffer * len(starts))))
    limits = (patience, config.work_per_buffer * len(starts), max(config.buffers, len(starts) // config.share))
    spans = (starts, instance.ends, np.sort(starts), np.sort(instance.ends))  # sorted: buffers meeting a window, O(log n)
    movable = fixed < 0
    while len(tops):
        peak = int(tops.max())
        if peak <= lower or peak - lower <= lower * config.close:
            break
        lowered = _lower_highest(instance, budget, offsets, tops, movable, spans, peak, lower, stop, stats, limits)
        if lowered is None:
            return offsets  # a budget or the time is spent
        if not lowered:
            stats.stuck = not budget.cancelled() and (stop is None or time.monotonic() < stop)
            break
        budget.publish_best(int(tops.max()))
    return offsets


def _lower_highest(instance: Instance, budget: Budget, offsets: np.ndarray, tops: np.ndarray, movable: np.ndarray,
                   spans: tuple, peak: int, lower: int, stop: float | None, stats: WindowStats,
                   limits: tuple) -> bool | None:
    """Grow windows around the highest buffer until one lowers it: True (``offsets`` and
    ``tops`` changed), False (no window can), None (a budget or the time is spent)."""
    config = instance.params.large.windows
    starts, ends = instance.starts, instance.ends
    window_cap = limits[2]
    highest = int(np.argmax(tops))
    low, high = int(starts[highest]), int(ends[highest])
    nodes = config.nodes
    for growth in range(config.growths):
        low, high, inside, crossing = widened(spans, tops, movable, peak, low, high, peak)
        if growth and config.level_step:  # also clear of the movable buffers above a lower level, if it fits
            level = int(peak * max(0.0, 1.0 - config.level_step * growth))
            wide = widened(spans, tops, movable, peak, low, high, level, window_cap)
            if wide is not None and np.count_nonzero(wide[2] & movable) <= config.free_buffers:
                low, high, inside, crossing = wide
        free = inside & movable
        count = int(np.count_nonzero(free))
        if not count or count > config.free_buffers:
            return False
        members = np.flatnonzero(inside | crossing)
        if len(members) > window_cap:
            return False
        answer = _search_window(instance, budget, offsets, tops, members, free, peak, lower, nodes, stop, stats, limits)
        if answer is not False:
            return answer
        width = high - low
        low, high = low - width // 2 - 1, high + width // 2 + 1
        nodes *= 2
    return False


def _search_window(instance: Instance, budget: Budget, offsets: np.ndarray, tops: np.ndarray, members: np.ndarray,
                   free: np.ndarray, peak: int, lower: int, nodes: int, stop: float | None, stats: WindowStats,
                   limits: tuple) -> bool | None:
    """The kernel on one window at the lowest useful capacity, then closer to the peak:
    True when a layout under the peak was taken, False when none, None when out of budget."""
    from telamalloc.runtime.alloc.exact._search import STATUS_INFEASIBLE, STATUS_OK, search  # only this path needs it

    config = instance.params.large.windows
    patience, work_budget, _ = limits
    starts, ends, sizes, aligns = instance.starts, instance.ends, instance.sizes, instance.aligns
    freed, window = window_problem(members, free[members], True, starts, ends, sizes, aligns, offsets)
    rest = np.where(free, 0, tops)
    floor = max(int(rest.max()), window_load(starts[members], ends[members], sizes[members]), lower)
    capacity = min(floor, peak - 1)
    for _ in range(config.bisections + 1):
        if (stats.windows >= config.rounds or stats.timed_out >= patience or stats.work >= work_budget
                or budget.spent(stop)):
            return None
        remaining = None if stop is None else stop - time.monotonic()
        stats.windows += 1
        limit = 0.0 if remaining is None else max(remaining, 1e-6)  # 0.0: no time limit
        if config.capped:  # the work left, in nodes of this window
            nodes = min(nodes, max(1, (work_budget - stats.work) // len(window[0])))
        result = search(*window, capacity, instance.params, limit, budget.cancel, budget.progress, None, nodes)
        budget.counters.add(result)
        stats.work += int(result.nodes) * len(window[0])
        if result.status == STATUS_OK:
            offsets[freed] = result.offsets[:len(freed)]
            tops[freed] = offsets[freed] + sizes[freed]
            stats.improved += 1
            return True
        if result.status != STATUS_INFEASIBLE:  # ran out of nodes: unknown
            stats.timed_out += result.nodes
            if not config.looser:
                return False  # a wider window instead
        if capacity + 1 >= peak:
            return False
        capacity += 1 + (peak - 2 - capacity) // 2  # halfway to just under the peak
    return False


def window_problem(members: np.ndarray, free: np.ndarray, merge: bool, starts: np.ndarray, ends: np.ndarray,
                   sizes: np.ndarray, aligns: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, tuple]:
    """The problem of a window (``members``, sorted; ``free``: which of them move), for the
    exact kernel or the planner: (the buffers whose offsets come first in it, the problem's
    columns). ``merge``: the freed buffers, then the others as merged pins
    (``window_pins``); else every member, the others pinned where they are."""
    if merge:
        freed = members[free]
        return freed, window_pins(freed, members[~free], starts, ends, sizes, aligns, offsets)
    return members, (starts[members], ends[members], sizes[members], aligns[members], np.where(free, -1, offsets[members]))


def window_pins(freed: np.ndarray, pinned: np.ndarray, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray,
                aligns: np.ndarray, offsets: np.ndarray) -> tuple:
    """The problem of a window with its pins merged: the ``freed`` buffers first (free), then
    the ``pinned`` ones as the obstacles they are to them. Only the span of the freed
    buffers' lifetimes [first start, last end) matters: a pin is cut to it, and the pins
    covering all of it become the union of their byte ranges, one pin per run of touching
    ranges (the layout is valid, so the runs are disjoint from each other and from the cut
    pins). The kernel takes each pin as a node of its search, so under many long-lived
    buffers this cuts a window's nodes and time several times over."""
    low, high = int(starts[freed].min()), int(ends[freed].max())
    pinned = pinned[(starts[pinned] < high) & (ends[pinned] > low)]
    whole = (starts[pinned] <= low) & (ends[pinned] >= high)
    cut, covering = pinned[~whole], pinned[whole]
    covering = covering[np.argsort(offsets[covering], kind="stable")]
    bottoms, tops = offsets[covering], offsets[covering] + sizes[covering]
    reach = np.maximum.accumulate(tops) if len(tops) else tops
    first = np.ones(len(covering), dtype=bool)
    first[1:] = bottoms[1:] > reach[:-1]  # a new run: clear of every range below it
    heads = np.flatnonzero(first)
    run_bottoms = bottoms[heads]
    run_tops = np.append(reach[heads[1:] - 1], reach[-1:]) if len(heads) else bottoms[:0]
    runs = len(heads)
    return (np.concatenate((starts[freed], np.maximum(starts[cut], low), np.full(runs, low, dtype=np.int64))),
            np.concatenate((ends[freed], np.minimum(ends[cut], high), np.full(runs, high, dtype=np.int64))),
            np.concatenate((sizes[freed], sizes[cut], run_tops - run_bottoms)),
            np.concatenate((aligns[freed], aligns[cut], np.ones(runs, dtype=np.int64))),
            np.concatenate((np.full(len(freed), -1, dtype=np.int64), offsets[cut], run_bottoms)))


def widened(spans: tuple, tops: np.ndarray, movable: np.ndarray, peak: int, low: int, high: int, level: int,
            cap: int | None = None):
    """The window [low, high) widened until no movable buffer with a top at or above
    ``level`` and no buffer at the ``peak`` crosses its ends: (low, high, the mask of the
    buffers inside, the mask of those crossing), or None once more than ``cap`` buffers
    would meet it. ``spans``: (starts, ends, sorted starts, sorted ends)."""
    starts, ends, sorted_starts, sorted_ends = spans
    blockers = np.flatnonzero((tops >= level) & (movable | (tops >= peak)))
    block_starts, block_ends = starts[blockers], ends[blockers]
    while True:
        if cap is not None and (np.searchsorted(sorted_starts, high, "left")
                                - np.searchsorted(sorted_ends, low, "right")) > cap:
            return None
        blocking = (block_starts < high) & (block_ends > low) & ((block_starts < low) | (block_ends > high))
        if not blocking.any():
            break
        low, high = min(low, int(block_starts[blocking].min())), max(high, int(block_ends[blocking].max()))
    inside = (starts >= low) & (ends <= high)
    return low, high, inside, (starts < high) & (ends > low) & ~inside

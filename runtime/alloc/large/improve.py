"""Steps that improve a large planner layout: gravity rounds, re-sweeps, and the
improvement schedule that interleaves them with the window search and re-placement."""

from __future__ import annotations

import time

import numpy as np

from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.instance import Budget, Instance
from telamalloc.runtime.alloc.large.info import LargeInfo
from telamalloc.runtime.alloc.large.orderings import index_of
from telamalloc.runtime.alloc.large.replace import replace_windows
from telamalloc.runtime.alloc.large.windows import window_search


def gravity_rounds(made, config: LargeConfig, offsets: np.ndarray, count: int, first: int, goal: int,
                   stop: float | None, cancel, info: LargeInfo) -> tuple[np.ndarray, int, int]:
    """``count`` gravity rounds (``_Planner.settle``) from round ``first``, counted in
    ``info``; return the layout, its peak and the rounds run. Above ``eager_buffers``
    buffers only the top of the layout moves (``gravity_shares_high``)."""
    shares = config.gravity_shares_high if len(offsets) > config.eager_buffers else config.gravity_shares
    settled_offsets, settled = made.settle(offsets, count, shares, first=first, target=goal, deadline=stop,
                                           cancel=cancel)
    info.gravity += settled["rounds"]
    info.settled += settled["improved"]
    return settled_offsets, settled["peak"], settled["rounds"]


def resweeps(instance: Instance, budget: Budget, made, name: str, offsets: np.ndarray, peak: int, rounds: int,
             goal: int, stop: float | None, info: LargeInfo, done=None) -> tuple[np.ndarray, int, int, bool]:
    """The sweep ordering ``name``'s layout ``offsets`` (after ``rounds`` gravity rounds, its
    peak ``peak``) or a lower one from up to ``LargeConfig.resweeps`` re-sweeps: the sweep
    run again on ``made`` with the buffers living at least ``1 / resweep_divisor`` of the
    span that are live at the highest point of the last layout swept with the long-lived
    ones (they add up from one re-sweep to the next), then ``gravity_first`` gravity rounds.
    Returns (layout, peak, rounds, whether a re-sweep gave it); stops when no buffer is
    added, at the goal, the time limit, the cancel flag or ``done()``; a run cut short is
    dropped. Counted in ``info.resweeps``.

    Why: the long-lived layer swept alone is tight at the highest point, but the buffers
    of medium lifetime crossing that point must clear the layer's top over all their
    lifetime, higher elsewhere; the holes under them hold the peak. Swept with the layer,
    they interleave with it."""
    config = instance.params.large
    starts, ends, sizes = instance.starts, instance.ends, instance.sizes
    span = int(ends.max()) - int(starts.min())
    eligible = (ends - starts) >= -(-span // config.resweep_divisor)
    swept = np.zeros(len(starts), dtype=bool)
    best = (offsets, peak, rounds, False)
    current = offsets
    for _ in range(config.resweeps):
        left = None if stop is None else stop - time.monotonic()
        if best[1] <= goal or budget.cancelled() or (done is not None and done()) or (left is not None and left <= 0):
            break
        tops = current + sizes
        point = int(starts[tops == tops.max()].min())  # the first point at the layout's peak
        added = eligible & (starts <= point) & (ends > point) & ~swept
        if not added.any():
            break
        swept |= added
        current, result = made.run(orderings=1, first=index_of(name), swept=swept,
                                   time_limit=0.0 if left is None else left, seed=instance.params.seed,
                                   cancel=budget.cancel)
        if result["stopped"]:  # cut short: dropped
            break
        info.resweeps += 1
        current, current_peak, ran = gravity_rounds(made, config, current, min(config.gravity_first, config.gravity_rounds),
                                                    0, goal, stop, budget.cancel, info)
        if current_peak < best[1]:
            best = (current, current_peak, ran, True)
    return best


def improved(instance: Instance, budget: Budget, made, offsets: np.ndarray, fixed: np.ndarray, goal: int,
             stop: float | None, info: LargeInfo, done: int) -> tuple[np.ndarray, int]:
    """A layout improved by gravity rounds, the window search and window re-placements;
    return it and its peak: up to ``gravity_first`` rounds (``done`` of them already ran on
    it; none above ``eager_buffers`` buffers), the search, the re-placements, then the other
    rounds one by one, ``gravity_rounds`` in all, the re-placements again after each round
    that lowered the layout (a round moves the buffers the windows then take). All stop at
    ``stop``."""
    config = instance.params.large
    cancel = budget.cancel
    peak = int((offsets + instance.sizes).max())
    if len(offsets) <= config.eager_buffers and done < config.gravity_first:
        offsets, peak, ran = gravity_rounds(made, config, offsets, min(config.gravity_first, config.gravity_rounds) - done,
                                            done, goal, stop, cancel, info)
        done += ran
    if peak > goal:
        offsets = window_search(instance, budget, offsets, fixed, max(goal, 0), stop, info.windows)
        peak = int((offsets + instance.sizes).max())
    lowered = True  # the window re-placements follow each round that lowered the layout
    while peak > goal:
        if lowered:
            offsets = replace_windows(instance, budget, offsets, fixed, goal, stop, info.replacement)
            peak = int((offsets + instance.sizes).max())
        if peak <= goal or done >= config.gravity_rounds:
            break
        before = peak
        offsets, peak, ran = gravity_rounds(made, config, offsets, 1, done, goal, stop, cancel, info)  # (stops at ``stop`` itself)
        if not ran:
            break
        done += ran
        lowered = peak < before
    return offsets, peak

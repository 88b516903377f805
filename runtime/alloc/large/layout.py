"""The large planner as ``solve`` calls it: algorithm "large", and minimize mode with algorithm
"telamalloc" above ``LargeConfig.threshold`` buffers, where the exact search is hopeless.

A fixed schedule of steps: the orderings of ``orderings.orderings_without_limit`` one by one
(each a whole layout; the better one kept), then with ``anytime`` gravity rounds, the window
search and window re-placements on the best layout (``improve.improved``). Without a time
limit that is the whole budget; with one, the first ``eager_orderings`` orderings run back
to back, then every ordering that improves is followed by the improvement at once, and the
schedule goes on with further orderings (seeded random ones after the schedule) until the
time runs out. A limit shorter than the first ordering cuts that one short (the rest
stacked where each one lives or in slots); after it the time only cuts the schedule short,
so a longer limit never gives a worse layout. Every step's budget counts work, not seconds:
without a limit the layout is the same on every machine.

Like greedy it proves nothing: fit mode answers OK when its peak fits, else TIMEOUT with
its layout as the fallback; minimize proves a lower bound before it (``bounds``: LOAD, or a
subset's exact optimum above it) with a certificate, and stops at it.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from telamalloc.runtime.alloc.bounds import base_bound, prove_bound
from telamalloc.runtime.alloc.instance import Budget, Instance, Outcome, validated
from telamalloc.runtime.alloc.large.heavy import BOTH, NESTED, rolling_set
from telamalloc.runtime.alloc.large.info import LargeInfo, note
from telamalloc.runtime.alloc.large.lane import Lane, Planning
from telamalloc.runtime.alloc.large.lanes import RUNNING, SecondLane, lane_count, second_schedule
from telamalloc.runtime.alloc.large.orderings import floor_for, floor_middle, orderings_without_limit
from telamalloc.runtime.alloc.problem import Status


def large_layout(instance: Instance, budget: Budget, target: int | None,
                 anytime: bool, prove=None) -> tuple[tuple[int, ...], int, LargeInfo]:
    """The large planner's best layout (all buffers), its peak and what it did. Stops early
    at ``target`` (a peak at most this); ``anytime``: the improvement steps after the
    orderings, and under a time limit further orderings until it. The time limit and the
    cancel flag cut it short, always with a whole layout (an ordering cut short has its
    rest stacked above the placed buffers). Under a time limit a second lane may run
    beside the first (``lanes``). ``prove`` (``Planning.prove``): a lower bound run after
    the floor, which raises the target to what it proves."""
    with RUNNING.call():
        return _large_layout(instance, budget, target, anytime, prove)


def _large_layout(instance: Instance, budget: Budget, target: int | None,
                  anytime: bool, prove=None) -> tuple[tuple[int, ...], int, LargeInfo]:
    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it

    config = instance.params.large
    count = instance.count
    stop = None
    remaining = budget.remaining()
    if remaining is not None:  # leave time for the independent check of the layout
        reserve = max(config.check_seconds_per_buffer * instance.problem.buffer_count,
                      config.check_setup_factor * budget.setup_seconds)
        remaining -= min(0.5 * remaining, reserve)
        stop = time.monotonic() + remaining
    fixed = lifted(instance)
    arrays = (instance.starts, instance.ends, instance.sizes, instance.aligns, fixed)
    planning = Planning(instance, budget, -1 if target is None else target, stop, anytime, prove)
    second = None
    if anytime and stop is not None and lane_count(count, config) > 1:
        # where heavy first's rolling fit applies, the second lane runs it before its floor
        # with all of its time
        second = SecondLane(planning, arrays, second_schedule(count, config), floor=floor_middle(count, config),
                            rolling=rolling_set(instance, fixed, planning.goal) is not None)
        if prove is not None:  # the second lane may run when the bound is proved: its goal rises too
            planning.prove = lambda left: _shared(second, prove(left))
    try:
        missed = None
        if second is not None and count > config.huge_buffers:  # at once, governed
            second.begin()
            second.govern(threading.get_ident())
            missed = second.settle  # the first ordering complete: the lanes stay as they are
        elif second is not None:
            missed = second.begin  # once the first ordering misses the goal
        made = planner(*arrays, config=config.placement)  # indexed once for all of this lane's orderings
        lane = Lane(planning, made, fixed, orderings_without_limit(count, config),
                    floor=floor_for(count, config, limited=stop is not None),
                    skipped=second if second is not None else (),  # its orderings while it runs them
                    done=None if second is None else (lambda: second.at_goal), missed=missed, heavy=True,
                    # under a limit the first lane solves the heavy buffers as one problem: the
                    # rolling fit, cut short in its share, would leave that solve too little
                    # time (docs/decisions.md, "The rolling fit of the heavy buffers")
                    heavy_how=BOTH if stop is None else NESTED)
        best, best_peak, info = lane.plan()
    finally:
        if second is not None:
            second.finish()
    if second is not None:
        best, best_peak, info = second.merged(budget, best, best_peak, info)
    if budget.cancelled():
        budget.counters.cancelled = True
    offsets = instance.full_offsets(best)
    peak = best_peak if count else 0
    if len(instance.live) < len(offsets):  # zero-size buffers count at their offset
        zero = np.setdiff1d(np.arange(len(offsets)), instance.live)
        peak = max(peak, max(offsets[index] for index in zero.tolist()))
    budget.publish_best(peak)
    return offsets, peak, info


def _shared(second: SecondLane, goal: int) -> int:
    """``goal`` (proved by the first lane), given to the second lane too."""
    second.raise_goal(goal)
    return goal


def lifted(instance: Instance) -> np.ndarray:
    """The pins the large planner works with: the user's, and when no buffer is pinned, the
    buffers live at every point of the program ("global": weights, constants) stacked at
    the bottom (``stacked``). They take the same bytes at every point, so stacking them
    below everything loses nothing (alignment aside), and no search has to move them: on
    top of a layout they make the peak a window as long as the program."""
    starts, ends, sizes, aligns, fixed = instance.arrays
    if len(starts) < 2 or np.any(fixed >= 0):
        return fixed
    everywhere = np.flatnonzero((starts <= starts.min()) & (ends >= ends.max()))
    if len(everywhere) == 0 or len(everywhere) == len(starts):
        return fixed
    pins = fixed.copy()
    for index, offset in stacked(everywhere, sizes, aligns):
        pins[index] = offset
    return pins


def stacked(members: np.ndarray, sizes: np.ndarray, aligns: np.ndarray) -> list[tuple[int, int]]:
    """Offsets stacking ``members`` from 0 with little alignment padding: at each step the
    largest buffer of the largest alignment that needs no padding at the current top (each
    alignment's buffers largest first), else the one needing the least. Deterministic
    (ties by index); stacking by size alone leaves padding between mixed alignments."""
    queues: dict[int, list[int]] = {}
    for index in members[np.lexsort((members, -sizes[members]))].tolist():
        queues.setdefault(int(aligns[index]), []).append(index)
    heads = dict.fromkeys(queues, 0)
    order = sorted(queues, reverse=True)
    top = 0
    placed = []
    while order:
        fitting = [align for align in order if top % align == 0]
        align = fitting[0] if fitting else min(order, key=lambda a: (-top) % a)
        index = queues[align][heads[align]]
        heads[align] += 1
        if heads[align] == len(queues[align]):
            order.remove(align)
        top = (top + align - 1) // align * align
        placed.append((index, top))
        top += int(sizes[index])
    return placed


def fit_large(instance: Instance, budget: Budget, capacity: int) -> Outcome:
    """Fit mode with algorithm "large": its layout when it fits, else TIMEOUT with it."""
    offsets, peak, info = large_layout(instance, budget, capacity, anytime=False)
    if peak <= capacity:
        return Outcome(Status.OK, validated(instance, offsets, capacity, "the large planner"), message=note(info),
                       capacity=capacity, peak=peak)
    return Outcome(
        Status.TIMEOUT,
        offsets,
        message=f"{note(info)}: no layout within capacity '{capacity}' (peak '{peak}'); the large planner proves nothing, try algorithm 'telamalloc'",
        fallback=True,
        capacity=capacity,
        peak=peak,
    )


def minimize_large(instance: Instance, budget: Budget, capacity: int | None, load: tuple, algorithm: str) -> Outcome:
    """Minimize with the large planner alone (algorithm "large", or a large problem): the
    lower bound (``bounds.prove_bound``, LargeConfig.bounds: its own work budget) and the
    planner, which stops once it reaches the bound. Without a time limit the bound comes
    first; under one it runs after the floor, with its share of the time left then: the
    floor's cheap layouts are never starved by it (on a starved CPU the bound's start-up
    took the time the start sweep needed), and the floor stops at LOAD as before.
    ``load``: compute_load's (bytes, time, ids)."""
    config = instance.params.large.bounds
    certificate = base_bound(instance, load)

    def prove(left: float | None = None) -> int:
        nonlocal certificate
        within = budget if left is None else budget.within(config.share * left)
        certificate = prove_bound(instance, certificate, None, within, config)
        if budget.progress is not None and len(budget.progress) > 3:  # a progress display shows the proved bound
            budget.progress[3] = certificate.bound
        return certificate.bound

    deferred = config.subsets > 0 and budget.remaining() is not None
    if config.subsets > 0 and not deferred:
        prove()
    elif budget.progress is not None and len(budget.progress) > 3:
        budget.progress[3] = certificate.bound
    offsets, peak, info = large_layout(instance, budget, certificate.bound, anytime=True,
                                       prove=prove if deferred else None)
    lower = certificate.bound
    if capacity is not None and peak > capacity:
        return Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{note(info)}: no layout within capacity '{capacity}' (peak '{peak}'); the large planner proves nothing, try algorithm 'telamalloc' on a smaller problem",
            fallback=True,
            capacity=capacity,
            peak=peak,
        )
    optimal = peak <= lower
    detail = (f", optimal ({certificate.describe()})" if optimal else
              f", lower bound '{lower}' ({certificate.describe()}), gap {100 * (peak - lower) / max(lower, 1):.2f}%")
    threshold = instance.params.large.threshold
    switched = "" if algorithm == "large" else f" ({instance.count} buffers > {threshold}: exact search skipped)"
    return Outcome(Status.OK, validated(instance, offsets, capacity, "the large planner"), optimal=optimal, peak=peak,
                   capacity=peak if optimal else capacity, message=f"{note(info)}{switched}: peak '{peak}'{detail}",
                   lower_bound=lower, certificate=certificate)

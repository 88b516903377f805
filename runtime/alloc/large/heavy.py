"""Heavy first: where a few large buffers hold nearly all of the bytes (caches reallocated
larger among thousands of small temporaries), those buffers alone are a problem that the
exact search packs far tighter than any ordering of the whole does, and the small ones then
fit in the gaps around them (growing at 10^4 buffers: 307 buffers hold 99% of the area).

``heavy_members`` picks them: the largest buffers (ties: the lower index) holding
``HeavyConfig.cover`` of the area (bytes times lifetime), with every pinned buffer; none
when they are more than ``max_share`` of the buffers (then they are the problem again).
``heavy_layout`` solves them alone with our own ``solve`` (minimize: the exact path up to
its threshold, the large planner above, without heavy first again and without CP-SAT),
under a time limit with ``time_share`` of the time left, else within ``work`` times the
effort (search nodes times heavy buffers: the same layout on every run and machine); then
``placed_around`` pins them there and places the rest with the pinned planner's
``orderings``, the lowest layout kept (``bench/truegap --heavy`` uses it after an exact fit
of the heavy buffers instead of their minimize).

Up to ``rolling_buffers`` heavy buffers (with every buffer of at least ``rolling_large`` of
the goal), ``rolling_layout`` packs them first: window by window outward from their most
contended point, each window fitted by the exact search at the highest top kept so far
(never below the goal), with the buffers kept before pinned, so the tight windows near the
peak are packed first and the ones with room after them. Where the heavy buffers' solve as
one problem runs out of nodes far above LOAD (growing-10000-s0: 1.0751 in 2 s), windows of
90 of them fit at LOAD in a fraction of a second each. Its limit: a window kept early is
never moved again, so a later one may not fit at the level and lifts it (its minimize then
decides). Without a time limit it runs first (``BOTH``); under one, the planner's second
lane runs it and the first lane keeps the solve of them all (``large/layout.py``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from telamalloc.runtime.alloc.bounds import load_profile, subset_problem
from telamalloc.runtime.alloc.config import HeavyConfig
from telamalloc.runtime.alloc.instance import Budget, Counters, Instance
from telamalloc.runtime.alloc.large.orderings import index_of

HEAVY = "heavy-first"  # the name its layout wins under in the message
BOTH, ROLLING, NESTED = "both", "rolling", "nested"  # how ``heavy_layout`` packs the heavy buffers


def heavy_members(instance: Instance, fixed: np.ndarray, config: HeavyConfig) -> np.ndarray | None:
    """The heavy buffers and the pinned ones (``fixed`` >= 0), as sorted positions into the
    instance's arrays, or None when they would be more than ``max_share`` of the buffers."""
    starts, ends, sizes = instance.starts, instance.ends, instance.sizes
    count = len(sizes)
    most = int(config.max_share * count)
    if count < 2 or most < 1:
        return None
    # float64 sums (products reach 2^60): np.cumsum adds in order, the same bits on every machine
    areas = sizes.astype(np.float64) * (ends - starts)
    wanted = config.cover * np.cumsum(areas)[-1]
    # first in O(n): when even every buffer as large as the ``most``-th largest does not hold
    # the cover, the heavy buffers are too many (a full sort costs 0.7 s at 10^6 buffers)
    candidates = np.flatnonzero(sizes >= np.partition(sizes, count - most)[count - most])
    if np.cumsum(areas[candidates])[-1] < wanted:
        return None
    # the order by size (ties: the lower index) lists these candidates first, and they hold the
    # cover, so the heavy buffers are a prefix of theirs: only they are sorted
    order = candidates[np.lexsort((candidates, -sizes[candidates]))]
    heavy = int(np.searchsorted(np.cumsum(areas[order]), wanted)) + 1
    if heavy > len(order):  # their sum in this order fell short by rounding: every buffer in order
        order = np.lexsort((np.arange(count), -sizes))
        heavy = int(np.searchsorted(np.cumsum(areas[order]), wanted)) + 1
    members = np.union1d(order[:heavy], np.flatnonzero(fixed >= 0))
    if len(members) > config.max_share * count:
        return None
    return members


def heavy_layout(instance: Instance, budget: Budget, fixed: np.ndarray, stop: float | None, goal: int = -1,
                 how: str = BOTH):
    """The heavy buffers solved alone and pinned, the rest placed around them: (offsets,
    peak), or None (no heavy buffers to speak of, the solve cut short without a layout, no
    memory for it, or no complete placement of the rest within the stop). ``goal``: the
    planner's (its lower bound; -1: none), the rolling fit's first level. ``how``: ``BOTH``,
    the rolling fit where it applies (``rolling_set``) with ``time_share`` of the time left,
    and when it does not apply or is cut short, the solve of the heavy buffers as one
    problem with the time left; ``ROLLING``, the rolling fit alone, with all of the time
    (the second lane's: ``lanes.SecondLane``); ``NESTED``, their solve alone."""
    from telamalloc.runtime.alloc.api import solve  # imported here: the solve imports this planner

    params = instance.params
    config = params.large.heavy
    members = heavy_members(instance, fixed, config)
    if members is None:
        return None
    rolled = None if how == NESTED else rolling_members(instance, members, goal, config)
    if rolled is not None:
        share = 1.0 if how == ROLLING else config.time_share
        offsets = rolling_layout(instance, budget, rolled, fixed, goal,
                                 None if stop is None else time.monotonic() + share * (stop - time.monotonic()))
        if budget.cancelled():
            return None
        if offsets is not None:
            try:
                return placed_around(instance, fixed, rolled, offsets, stop, budget.cancel)
            except MemoryError:
                return None
    if how == ROLLING:
        return None
    sub = subset_problem(instance, members, fixed)
    # without a limit effort scales the work, from the same start: on the exact path the
    # nested solve runs at effort 1 (its first layout, on the large planner, is then the same
    # at every effort), so a larger effort runs a longer prefix of the same schedule; above
    # the exact path's threshold the nested solve is the large planner itself, which the node
    # budget does not bound, and it runs at the caller's effort (above 1: its whole-problem
    # search, docs/decisions.md "Heavy first's solve with two lanes")
    effort = max(params.large.effort, 1)
    planner_solve = stop is None and np.count_nonzero(instance.sizes[members]) > params.large.threshold
    sub_params = dataclasses.replace(
        params, cpsat=False,
        node_limit=max(effort * config.work // len(members), 1) if stop is None else params.node_limit,
        large=dataclasses.replace(params.large, effort=effort if planner_solve else 1,
                                  heavy=dataclasses.replace(config, max_share=0.0)))
    left = None if stop is None else stop - time.monotonic()
    if left is not None and left <= 0:
        return None
    try:  # no room for a second planner (or for the solve's): the lane goes on without
        solution = solve(sub, mode="minimize", time_limit=None if left is None else config.time_share * left,
                         params=sub_params, cancel=budget.cancel)
        _count(budget, solution)
        if solution.offsets is None or budget.cancelled():
            return None
        return placed_around(instance, fixed, members, np.asarray(solution.offsets, dtype=np.int64), stop,
                             budget.cancel)
    except MemoryError:
        return None


def _count(budget: Budget, solution) -> None:
    """A nested solve's search is this solve's work too (its Solution.stats, counted)."""
    stats = solution.stats
    budget.counters.absorb(Counters(stats.nodes, stats.backtracks, stats.restarts))


def placed_around(instance: Instance, fixed: np.ndarray, members: np.ndarray, offsets: np.ndarray,
                  stop: float | None, cancel=None):
    """The buffers ``members`` pinned at ``offsets`` (with the pins ``fixed``), the rest placed
    around them by each of ``HeavyConfig.orderings``, the lowest layout kept: (offsets, peak),
    or None when no ordering completes before ``stop``. Raises MemoryError when there is no
    room for the planner."""
    from telamalloc.runtime.alloc.large._large import planner

    params = instance.params
    pins = fixed.copy()
    pins[members] = offsets
    made = planner(instance.starts, instance.ends, instance.sizes, instance.aligns, pins,
                   config=params.large.placement)
    best, best_peak = None, None
    for name in params.large.heavy.orderings:
        left = None if stop is None else stop - time.monotonic()
        if left is not None and left <= 0:
            break
        placed, result = made.run(orderings=1, first=index_of(name), time_limit=0.0 if left is None else left,
                                  seed=params.seed, cancel=cancel, slots=False)
        if placed is None or result["stopped"]:
            break
        if best is None or result["peak"] < best_peak:
            best, best_peak = placed, int(result["peak"])
    if best is None:
        return None
    return best, best_peak


def rolling_set(instance: Instance, fixed: np.ndarray, goal: int) -> np.ndarray | None:
    """The buffers the rolling fit would pack with the pins ``fixed`` (``rolling_members`` of
    the heavy ones), None when it does not apply. Asked with a share of at most
    ``rolling_buffers`` buffers, ``heavy_members`` answers in linear time where the heavy
    buffers are more (no sort of its candidates)."""
    config = instance.params.large.heavy
    share = min(config.max_share, config.rolling_buffers / max(instance.count, 1))
    members = heavy_members(instance, fixed, dataclasses.replace(config, max_share=share))
    return None if members is None else rolling_members(instance, members, goal, config)


def rolling_members(instance: Instance, members: np.ndarray, goal: int, config: HeavyConfig) -> np.ndarray | None:
    """The buffers the rolling fit packs: ``members`` (the heavy ones) and every buffer of at
    least ``rolling_large`` x ``goal`` bytes (with no goal, of the largest bytes live at
    once), as sorted positions; None when they are more than ``rolling_buffers``."""
    if len(members) > config.rolling_buffers:
        return None
    if goal < 0:
        goal = int(load_profile(instance.starts, instance.ends, instance.sizes)[1].max())
    large = np.flatnonzero(instance.sizes >= max(config.rolling_large * goal, 1))
    rolled = np.union1d(members, large)
    return rolled if len(rolled) <= config.rolling_buffers else None


def rolling_layout(instance: Instance, budget: Budget, members: np.ndarray, fixed: np.ndarray, goal: int,
                   stop: float | None) -> np.ndarray | None:
    """The offsets of ``members`` (sorted positions; the pinned ones at their pins) packed by
    the rolling fit, or None when ``stop`` or the cancel flag cuts it short.

    The free members go in order of their distance in time from the point where the members'
    bytes live at once are most (the lower position first among equals), ``rolling_window``
    at a time: each window with the next ``rolling_ahead`` buffers and the members kept so
    far that meet them in time (pinned) is fitted at the level (the highest top kept so far,
    at least ``goal`` and the members' LOAD) by the exact search, greedy first, within
    ``rolling_nodes`` nodes; when that finds no layout, its minimize (the same nodes)
    decides, and the level rises to the tops kept. Only the window's own buffers are kept:
    the ones after them were placed to show that room is left for them. The same layout on
    every run without a time limit (node budgets only)."""
    from telamalloc.runtime.alloc.api import solve  # imported here: the solve imports this planner
    from telamalloc.runtime.alloc.problem import Problem, Status

    params = instance.params
    config = params.large.heavy
    starts, ends = instance.starts[members], instance.ends[members]
    sizes, aligns = instance.sizes[members], instance.aligns[members]
    offsets = fixed[members].copy()
    times, live = load_profile(starts, ends, sizes)
    point = int(times[int(np.argmax(live))])
    distance = np.maximum(0, np.maximum(starts - point, point - (ends - 1)))
    order = np.lexsort((np.arange(len(members)), distance))
    free = order[offsets[order] < 0]
    pinned = offsets >= 0
    level = max(goal, int(live.max()), int((offsets[pinned] + sizes[pinned]).max()) if pinned.any() else 0)
    sub_params = dataclasses.replace(params, cpsat=False,
                                     node_limit=config.rolling_nodes * max(params.large.effort, 1),
                                     large=dataclasses.replace(params.large, heavy=dataclasses.replace(config, max_share=0.0)))
    window = max(config.rolling_window, 1)
    for first in range(0, len(free), window):
        if budget.cancelled() or (stop is not None and time.monotonic() >= stop):
            return None
        fitted = free[first:first + window + max(config.rolling_ahead, 0)]
        low, high = int(starts[fitted].min()), int(ends[fitted].max())
        kept = np.flatnonzero((offsets >= 0) & (starts < high) & (ends > low))
        together = np.concatenate([kept, fitted])
        problem = Problem.from_columns(list(range(len(together))), starts[together], ends[together],
                                       sizes[together], aligns[together], offsets[together])
        solution = None
        for mode in ("fit", "minimize"):
            left = None if stop is None else stop - time.monotonic()
            if left is not None and left <= 0:
                return None
            solution = solve(problem, capacity=level if mode == "fit" else None, mode=mode, time_limit=left,
                             params=sub_params, cancel=budget.cancel)
            _count(budget, solution)
            if solution.status is Status.OK:
                break
        if solution.offsets is None or budget.cancelled():
            return None
        window_members = fitted[:window]
        offsets[window_members] = np.asarray(solution.offsets, dtype=np.int64)[len(kept):len(kept) + len(window_members)]
        level = max(level, int((offsets[window_members] + sizes[window_members]).max()))
    return offsets

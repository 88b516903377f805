"""The Python API: ``solve(problem, ...) -> Solution``.

Data flows one way: check the input (user errors raise ``ProblemError``: ``checks``), turn
persistent buffers and aliases into plain buffers (``marks``: every path honours them), solve
buffers that hold less than their rectangle (in-place groups) as whole rectangles and then
place them over what they hold (``linked``), drop
zero-size buffers (``instance``), prove the easy infeasibilities (pins, LOAD: ``proofs``),
run the mode with the chosen algorithm (``modes``: the exact path in ``exact/``, the large
planner in ``large/``, the greedy baselines in ``baselines``), check every layout claimed
valid with the independent validator, and summarize. The design of each path is in
``docs/design/``; its tuning in ``config`` (``Params.exact``, ``Params.large``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable

import numpy as np

from telamalloc.runtime.alloc import checks, linked, modes
from telamalloc.runtime.alloc.baselines import Baselines
from telamalloc.runtime.alloc.bounds import base_bound, sub_ids
from telamalloc.runtime.alloc.checks import ALGORITHMS
from telamalloc.runtime.alloc.instance import Budget, Instance, Outcome, make_instance, peak_of, validated
from telamalloc.runtime.alloc.marks import has_marks, marked_solution, normalize
from telamalloc.runtime.alloc.problem import (
    Certificate,
    Mode,
    Params,
    Problem,
    ProblemError,
    Solution,
    Stats,
    Status,
    buffer_ids,
)
from telamalloc.runtime.alloc.proofs import pin_conflict
from telamalloc.runtime.alloc.validate import compute_load, validate

__all__ = ["ALGORITHMS", "solve"]


def solve(
    problem: Problem,
    capacity: int | None = None,
    mode: str | Mode = "fit",
    time_limit: float | None = None,
    algorithm: str = "telamalloc",
    params: Params | None = None,
    cancel: np.ndarray | None = None,
    greedy_first: bool = True,
    progress: np.ndarray | None = None,
) -> Solution:
    """Place every buffer of ``problem``.

    ``capacity`` defaults to ``problem.capacity`` (required in fit mode; an upper bound in
    minimize mode). ``mode``: "fit" (any layout within the capacity) or "minimize" (the
    smallest peak, proved optimal when the search completes). ``time_limit`` is in seconds
    for the whole call (None: no limit). ``algorithm``: "telamalloc" (exact search),
    "best-fit" and "first-fit" (the greedy baselines), "large" (the large-problem planner).
    ``params``: the exact search's switches and the tuning records (``Params``).
    ``cancel`` is a numpy uint8 array of length 1; setting it non-zero from another thread
    or a signal handler stops the search, which then returns like a timeout.
    ``greedy_first`` (fit mode, algorithm telamalloc): try the greedy baselines before the
    exact search and return their layout when it fits; False: search only.
    ``progress``: None, or a numpy int64 array of length 3 or 4 that the call resets and
    keeps up to date while it runs, for a display polled from another thread: search nodes
    and backtracks so far, in minimize mode the best peak found so far (-1 before any) and
    (length 4) the proved lower bound.
    Raises ProblemError for problems that cannot be solved as stated.
    """
    started = time.perf_counter()
    began = time.monotonic()  # the time limit covers the whole call: checks, LOAD, validation
    mode = checks.check_mode(mode)
    checks.check_algorithm(algorithm)
    params = checks.check_params(params)
    time_limit = checks.check_time_limit(time_limit)
    cancel = checks.check_cancel(cancel)
    progress = checks.check_progress(progress)
    if isinstance(problem, Problem) and has_marks(problem):  # solved as the plain problem it normalizes to
        checks.check_problem(problem)
        marks = normalize(problem)
        solution = solve(marks.problem, capacity, mode, time_limit, algorithm, params, cancel, greedy_first, progress)
        return marked_solution(marks, solution, problem)
    if isinstance(problem, Problem) and linked.has_occupancy(problem):
        return _solve_linked(problem, capacity, mode, time_limit, algorithm, params, cancel, greedy_first, progress)
    columns = checks.fast_columns(problem) if isinstance(problem, Problem) else None
    if columns is None:
        checks.check_problem(problem)
    capacity = checks.check_capacity(problem.capacity if capacity is None else capacity)
    if mode is Mode.FIT and capacity is None:
        raise ProblemError("fit mode needs a capacity; pass capacity=... or use mode='minimize'")

    deadline = None if time_limit is None else began + time_limit
    instance = make_instance(problem, params, columns)
    load = compute_load(problem)
    budget = Budget(deadline, cancel, progress, node_limit=params.node_limit, setup_seconds=time.monotonic() - began)
    if mode is Mode.FIT:
        outcome = modes.fit(instance, budget, capacity, algorithm, load, greedy_first)
    else:
        outcome = modes.minimize(instance, budget, capacity, algorithm, load)
    return _solution(instance, budget, outcome, load, algorithm, mode, time.perf_counter() - started, capacity)


def _solve_linked(problem: Problem, capacity: int | None, mode: Mode, time_limit: float | None, algorithm: str,
                  params: Params, cancel: np.ndarray | None, greedy_first: bool, progress: np.ndarray | None) -> Solution:
    """``solve`` of a problem whose buffers hold less than their rectangles (``linked``): in
    fit mode the linked placements first (``greedy_first``: returned when one fits, no
    search); else the whole rectangles solved (minimize without the capacity: the hulls
    may need more than the rectangles), then placed over what they hold (``linked.improve``)."""
    started = time.perf_counter()
    checks.check_problem(problem)
    capacity = checks.check_capacity(problem.capacity if capacity is None else capacity)
    load = compute_load(problem)
    if mode is Mode.FIT and greedy_first and capacity is not None:
        unsolved = Solution(Status.TIMEOUT, None, None, load[0], capacity, algorithm, mode,
                            Stats(seconds=time.perf_counter() - started), ids=buffer_ids(problem))
        placed = linked.improve(problem, unsolved, capacity, load, _summary, validate)
        if placed.ok:
            return placed
    solution = solve(linked.hull(problem), capacity if mode is Mode.FIT else None, mode, time_limit, algorithm, params,
                     cancel, greedy_first, progress)
    solution = dataclasses.replace(solution, capacity=capacity,
                                   stats=dataclasses.replace(solution.stats, seconds=time.perf_counter() - started))
    return linked.improve(problem, solution, capacity, load, _summary, validate)


def _solution(instance: Instance, budget: Budget, outcome: Outcome, load: tuple, algorithm: str, mode: Mode,
              seconds: float, capacity: int | None) -> Solution:
    """The public result. ``capacity`` is the one given (None: minimize without a bound);
    ``load``: compute_load's (bytes, time, ids)."""
    lower_bound, certificate = _bound(instance, outcome, load, capacity)
    load = load[0]
    counters = budget.counters
    stats = Stats(counters.nodes, counters.backtracks, seconds, counters.restarts, counters.cancelled)
    peak = outcome.peak if outcome.peak is not None else None if outcome.offsets is None else peak_of(instance.problem, outcome.offsets)
    summary = _summary(outcome.status, peak, load, seconds, algorithm)
    return Solution(
        status=outcome.status,
        offsets=outcome.offsets,
        peak=peak,
        load=load,
        capacity=capacity,
        algorithm=algorithm,
        mode=mode,
        stats=stats,
        optimal=outcome.optimal,
        fallback=outcome.fallback,
        overload=outcome.overload,
        core=outcome.core,
        core_offsets=None if outcome.core is None else _core_layout(instance.problem, outcome.core),
        lower_bound=lower_bound,
        certificate=certificate,
        message=summary if not outcome.message else f"{summary}: {outcome.message}",
        optimum=peak if mode is Mode.MINIMIZE and outcome.optimal and outcome.status is Status.OK else None,
        ids=buffer_ids(instance.problem),
    )


def _bound(instance: Instance, outcome: Outcome, load: tuple, capacity: int | None) -> tuple[int, Certificate]:
    """The Solution's lower bound and its certificate: the path's own when it proved one,
    else the one that needs no search (LOAD or the pins); an INFEASIBLE fit below LOAD
    with a core: the core does not fit in the capacity."""
    base = base_bound(instance, load)
    if outcome.certificate is not None:
        return outcome.certificate.bound, outcome.certificate
    if outcome.status is Status.INFEASIBLE and outcome.core is not None and capacity is not None:
        if capacity + 1 > base.bound:
            return capacity + 1, Certificate("subset", capacity + 1, tuple(outcome.core), prover="exact search")
    bound = outcome.lower_bound
    if bound is None or bound <= base.bound:
        return base.bound, base
    return bound, Certificate("subset", bound, buffer_ids(instance.problem) if len(instance.live) == instance.problem.buffer_count
                              else tuple(sub_ids(instance, np.arange(instance.count))), prover="exact search")


def _core_layout(problem: Problem, core: tuple[Hashable, ...]) -> tuple[int, ...] | None:
    """The core's buffers placed best-fit without a capacity: a layout whose peak shows by
    how much they miss the capacity (None when their pins conflict)."""
    by_id = {b.id: b for b in problem.buffers}
    core_problem = Problem([by_id[buffer_id] for buffer_id in core])
    instance = make_instance(core_problem, Params(), checks.fast_columns(core_problem))
    if pin_conflict(instance, None) is not None:
        return None
    offsets, _ = Baselines(instance).best(["best-fit"])
    return validated(instance, offsets, None, "greedy placement")


def _summary(status: Status, peak: int | None, load: int, seconds: float, algorithm: str) -> str:
    if status is Status.INFEASIBLE:
        return f"INFEASIBLE ({algorithm}, {seconds:.3f} s)"
    fragmentation = "" if peak is None or load == 0 else f", fragmentation {100 * (peak - load) / load:.2f}%"
    return f"{status.value}: peak '{peak}', LOAD '{load}'{fragmentation} ({algorithm}, {seconds:.3f} s)"

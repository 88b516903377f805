"""The two modes, each dispatching on the algorithm: fit (any layout within the capacity)
and minimize (the smallest peak).

Algorithms: "telamalloc" (the exact path, after a cheap heuristic step: in fit mode, when
best-fit or first-fit already fits no search runs; minimize starts from the better of the
greedy and large planner peaks), "best-fit" and "first-fit" (the greedy baselines: they
prove nothing, so a layout above the capacity is a TIMEOUT with the layout as the fallback),
"large" (the large planner: a heuristic too). INFEASIBLE without search comes from the
proofs that need none: LOAD above the capacity, or pins that conflict.
"""

from __future__ import annotations

import time

from telamalloc.runtime.alloc.baselines import GREEDY_ALGORITHMS, Baselines, is_large, producer
from telamalloc.runtime.alloc.exact.fit import fit_search
from telamalloc.runtime.alloc.exact.groups import Groups
from telamalloc.runtime.alloc.exact.minimize import minimize as minimize_exact
from telamalloc.runtime.alloc.exact.race import ExactRun
from telamalloc.runtime.alloc.instance import Budget, Instance, Outcome, peak_of, validated
from telamalloc.runtime.alloc.large.layout import fit_large, large_layout, minimize_large
from telamalloc.runtime.alloc.problem import Status
from telamalloc.runtime.alloc.proofs import overload, pin_conflict, pinned_top


def fit(instance: Instance, budget: Budget, capacity: int, algorithm: str, load: tuple, greedy_first: bool) -> Outcome:
    pins = pin_conflict(instance, capacity)
    if pins is not None:
        return pins
    if load[0] > capacity:
        return overload(load, capacity)
    baselines = Baselines(instance)
    if algorithm in GREEDY_ALGORITHMS:
        return _greedy_outcome(instance, baselines, algorithm, capacity, lower=None)
    if algorithm == "large":
        return fit_large(instance, budget, capacity)
    run = ExactRun(instance, budget, Groups(instance))
    if greedy_first:
        offsets, name = baselines.heuristic(budget, capacity)
        if peak_of(instance.problem, offsets) <= capacity:
            return Outcome(Status.OK, validated(instance, offsets, capacity, producer(name)),
                           message=f"{name} fits, no search needed", capacity=capacity)
        run.groups.remember_layout(offsets)  # the groups where it fits need no search
    outcome = fit_search(run, capacity, load)
    if outcome.status is not Status.TIMEOUT:
        return outcome
    return baselines.fallback(budget, capacity, budget.why_stopped())


def minimize(instance: Instance, budget: Budget, capacity: int | None, algorithm: str, load: tuple) -> Outcome:
    problem = instance.problem
    pins = pin_conflict(instance, capacity)
    if pins is not None:
        return pins
    lower = max(load[0], pinned_top(problem))
    if capacity is not None and load[0] > capacity:
        return overload(load, capacity)
    if algorithm == "large" or (algorithm == "telamalloc" and is_large(instance)):
        return minimize_large(instance, budget, capacity, load, algorithm)
    baselines = Baselines(instance)
    if algorithm in GREEDY_ALGORITHMS:
        return _greedy_outcome(instance, baselines, algorithm, capacity, lower)
    best, _ = baselines.best(GREEDY_ALGORITHMS)
    best_peak = peak_of(problem, best)
    if best_peak > lower:  # anytime: a better start than greedy, for a few milliseconds
        large_offsets, large_peak, _ = large_layout(instance, budget, lower, anytime=False)
        if large_peak < best_peak:
            best, best_peak = validated(instance, large_offsets, None, "the large planner"), large_peak
    run = ExactRun(instance, budget, Groups(instance))
    run.groups.remember_layout(best)
    if capacity is not None and best_peak > capacity:
        outcome = fit_search(run, capacity, load)
        if outcome.status is Status.INFEASIBLE:
            return outcome
        if outcome.status is Status.TIMEOUT:
            return baselines.fallback(budget, capacity, budget.why_stopped())
        best = outcome.offsets
    # under a time limit the kernel's steps are its own (CP-SAT works beside them, never
    # taking their time: see exact/minimize.py); without one CP-SAT races inside the steps
    run.race_steps = budget.deadline is None
    return minimize_exact(run, best, lower, load[0], capacity, improve=_planner_steps(instance, budget, lower))


def _planner_steps(instance: Instance, budget: Budget, lower: int):
    """Under a time limit on at least ``ExactConfig.planner_buffers`` buffers: a call that
    runs the large planner with its improvement steps within ``planner_share`` of the time
    left and at most ``planner_seconds`` (stopping at ``lower``) and returns its layout, for
    the exact minimize to start its descent from where LOAD's scout runs out of work (on
    thousands of buffers the planner's steps lower a layout faster than the kernel's fits).
    None otherwise: without a limit the answer depends on work budgets only."""
    config = instance.params.exact
    if budget.deadline is None or instance.count < config.planner_buffers or config.planner_share <= 0:
        return None

    def steps() -> tuple[int, ...]:
        seconds = min(config.planner_share * max(budget.remaining(), 0.0), config.planner_seconds)
        share = Budget(time.monotonic() + seconds, budget.cancel)
        offsets, _, _ = large_layout(instance, share, lower, anytime=True)
        budget.counters.absorb(share.counters)
        return validated(instance, offsets, None, "the large planner")

    return steps


def _greedy_outcome(instance: Instance, baselines: Baselines, algorithm: str, capacity: int | None,
                    lower: int | None) -> Outcome:
    """Algorithm "best-fit" or "first-fit": its layout; ``lower`` (minimize): the proved
    lower bound, to say whether the layout is optimal."""
    offsets, _ = baselines.best([algorithm])
    peak = peak_of(instance.problem, offsets)
    if capacity is not None and peak > capacity:
        return Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{algorithm} found no layout within capacity '{capacity}' (peak '{peak}'); greedy proves nothing, try algorithm 'telamalloc'",
            fallback=True,
            capacity=capacity,
        )
    if lower is None:
        return Outcome(Status.OK, validated(instance, offsets, capacity, "greedy placement"), capacity=capacity)
    optimal = peak == lower
    return Outcome(Status.OK, validated(instance, offsets, capacity, "greedy placement"), optimal=optimal,
                   capacity=peak if optimal else capacity,
                   message="" if optimal else f"greedy peak '{peak}', lower bound '{lower}' (greedy proves no optimality)")
